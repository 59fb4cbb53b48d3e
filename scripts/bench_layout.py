#!/usr/bin/env python3
"""Benchmark one `cutlass-layout layout` call: medians of wall time and peak memory.

Modes, each run as a fresh process (what a user waits for), on a CUTLASS tree already
unpacked in the cache (default: flashinfer-python 0.7.2.post1's):

* ``no-pch``: libclang parses all CUTLASS headers every time (``CUTLASS_LAYOUT_NO_PCH=1``);
* ``pch``: with the cached precompiled header of the tree (built once before timing); the
  default config is the header's warm-up config (already instantiated in it);
* ``pch-other``: with the header, a config whose element kind and tile it did not
  instantiate (grouped MXFP4 128x64x256), what most ``layout`` calls cost;
* ``nvcc``: the same probe compiled by nvcc (host and device pass) and run, the way
  people check ``sizeof(SharedStorage)`` today.

Usage: python scripts/bench_layout.py [--runs 5] [--cutlass SRC] [--no-nvcc]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from cutlass_layout import Config, target
from cutlass_layout.subjects import probe

MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "dt = time.perf_counter() - t\n"
    "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
)


def run(cmd: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one command in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    if out[2] != "0":
        raise SystemExit(f"command failed: {' '.join(cmd)}")
    return float(out[0]), int(out[1]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cutlass", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--no-nvcc", action="store_true")
    args = ap.parse_args()

    tgt = target(args.cutlass)  # unpack once, outside the timing
    root = str(tgt.tree.include_root)
    layout_cmd = [sys.executable, "-m", "cutlass_layout.cli", "layout", "--cutlass", root, "--json"]
    subprocess.run(layout_cmd, stdout=subprocess.DEVNULL, check=True)  # builds the PCH

    results = {}
    env = dict(os.environ, CUTLASS_LAYOUT_NO_PCH="1")
    results["no-pch"] = [run(layout_cmd, env) for _ in range(args.runs)]
    results["pch"] = [run(layout_cmd) for _ in range(args.runs)]
    other = layout_cmd + ["--a", "mxfp4", "--tile", "128x64x256"]
    results["pch-other"] = [run(other) for _ in range(args.runs)]

    nvcc = shutil.which("nvcc")
    if nvcc and not args.no_nvcc:
        work = Path(tempfile.mkdtemp(prefix="bench-layout-"))
        src = work / "probe.cu"
        src.write_text(probe.render([Config()], with_main=True))
        cmd = [nvcc, "-std=c++17", "-arch=sm_120a", "-w", f"-I{root}", str(src), "-o", str(work / "probe")]
        results["nvcc"] = [run(cmd) for _ in range(max(2, args.runs // 2))]
        shutil.rmtree(work, ignore_errors=True)

    print(f"CUTLASS {tgt.tree.version} ({tgt.tree.origin}); config: {Config().label()}")
    print(f"{'mode':<8} {'runs':>4} {'median s':>9} {'min s':>7} {'peak MB':>8}")
    for mode, rs in results.items():
        walls = [w for w, _ in rs]
        print(
            f"{mode:<8} {len(rs):>4} {statistics.median(walls):>9.2f} {min(walls):>7.2f} {max(m for _, m in rs):>8.0f}"
        )


if __name__ == "__main__":
    main()
