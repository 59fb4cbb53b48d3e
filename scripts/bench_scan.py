#!/usr/bin/env python
"""Time ``cutlass-layout scan`` over a whole CUTLASS include tree.

    python scripts/bench_scan.py [SOURCE] [--runs 5]

SOURCE is anything ``scan`` accepts (default: flashinfer-python==0.7.2.post1, fetched once
into the user cache). Prints the median wall time over ``--runs`` runs of

* ``scan(include_root)`` in this process (process pool of 2 workers),
* a fresh ``python`` process calling ``cutlass_layout.cli.run_scan_cli(include_root, json_out=True)`` (what a
  user waits for, interpreter start-up and JSON output included),
* ``scan()`` of one header (the single-file path, no pool).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from cutlass_layout.commands.scan import scan
from cutlass_layout.sources.trees import resolve_cutlass

ONE_HEADER = "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"


def _median(fn, runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", nargs="?", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()

    tree = resolve_cutlass(args.source)  # not timed: fetch/unpack happens once
    root = tree.include_root
    first = scan(root)
    print(f"tree: {root} (CUTLASS {tree.version})")
    print(
        f"{first.files_scanned} headers, {first.files_parsed} parsed, {len(first.structs)} "
        f"storage structs, {len(first.constants)} constants, {len(first.diagnostics)} diagnostics"
    )
    print(f"cpus: {os.cpu_count()}, load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    med, times = _median(lambda: scan(root), args.runs)
    print(f"scan() in process:      median {med:.3f} s  ({', '.join(f'{t:.3f}' for t in times)})")

    code = (
        f"import sys; from cutlass_layout.cli import run_scan_cli; sys.exit(run_scan_cli({str(root)!r}, json_out=True))"
    )
    cmd = [sys.executable, "-c", code]
    med, times = _median(lambda: subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True), args.runs)
    print(f"fresh process + JSON:   median {med:.3f} s  ({', '.join(f'{t:.3f}' for t in times)})")

    one = root / ONE_HEADER
    if one.is_file():
        med, times = _median(lambda: scan(one), args.runs)
        print(f"one header ({one.name}): median {med * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
