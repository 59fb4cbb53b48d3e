#!/usr/bin/env python
"""Time ``cutlass-layout diff``, each run in a fresh ``python`` process (what a user waits for).

    python scripts/bench_diff.py [OLD NEW] [--runs 3] [--cold] [--after-sweep]

OLD/NEW default to flashinfer-python==0.6.8 and flashinfer-python==0.7.2.post1 (fetched once
into the user cache). Prints the median wall time over ``--runs`` runs of

* identical trees (NEW against itself): no scan, no layout;
* OLD vs NEW with the default grid (32 configs), everything cached;
* OLD vs NEW structural only, ignoring the cache (scan of the headers that differ);
* with ``--cold``: OLD vs NEW with the default grid ignoring the cache (libclang lays
  out 32 configs on each tree, the two trees in parallel; the precompiled headers of the
  engine's own cache are used when present);
* with ``--after-sweep``: a numeric diff of one config (grouped NVFP4 128x32x256), and of
  the default grid, that a sweep of each tree has laid out, after removing what a diff
  caches for itself (``<cache>/diff``, where older versions kept their numbers): the
  layouts must come from the sweep's entries. Set ``CUTLASS_LAYOUT_CACHE`` to a private
  cache for this.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

CODE = """
import sys
from cutlass_layout.commands.diff import diff
from cutlass_layout.reports.diff import render_text
old, new, mode = sys.argv[1:4]
kw = {"structural": mode != "numeric", "numeric": mode != "structural",
      "use_cache": mode != "cold" and mode != "structural"}
if mode == "cold":
    kw["structural"] = True
sys.stdout.write(render_text(diff(old, new, **kw)))
"""


def _run(old: str, new: str, mode: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", CODE, old, new, mode], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


GRIDS = {
    "one config": "[Config(tile=(128, 32, 256))]",
    "default grid": "grid_configs(dict(a='nvfp4', kernel=['grouped', 'dense'], "
    "tile='{128,256}x{32,64,128,256}x{128,256}'))",
}
PRE = "from cutlass_layout import Config\nfrom cutlass_layout.subjects.grid import grid_configs\n"


def _after_sweep(old: str, new: str, runs: int) -> None:
    """Time a numeric diff of configs a sweep of both trees already laid out."""
    cache = os.environ.get("CUTLASS_LAYOUT_CACHE")
    for label, grid in GRIDS.items():
        sweep = (
            PRE + f"from cutlass_layout.commands.sweep import sweep\nfor s in ({old!r}, {new!r}): sweep({grid}, s)\n"
        )
        subprocess.run([sys.executable, "-c", sweep], check=True)
        code = (
            PRE + f"from cutlass_layout.commands.diff import diff\ndiff({old!r}, {new!r}, {grid}, structural=False)\n"
        )
        times = []
        for _ in range(runs):
            if cache:
                shutil.rmtree(os.path.join(cache, "diff"), ignore_errors=True)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - t0)
        print(
            f"  numeric diff of the sweep's configs, {label:13s} median {statistics.median(times):6.2f} s  "
            f"(runs: {', '.join(f'{t:.2f}' for t in times)})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", nargs="?", default="flashinfer-python==0.6.8")
    ap.add_argument("new", nargs="?", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also time a diff that ignores the cache")
    ap.add_argument(
        "--after-sweep", action="store_true", help="also time a numeric diff of configs a sweep laid out (see above)"
    )
    args = ap.parse_args()

    _run(args.old, args.new, "warm")  # fetch, unpack, fill the cache
    cases = [
        ("identical trees (NEW vs NEW)", args.new, args.new, "warm"),
        ("default grid, warm cache", args.old, args.new, "warm"),
        ("structural only, no cache", args.old, args.new, "structural"),
    ]
    if args.cold:
        cases.append(("default grid + structural, no cache", args.old, args.new, "cold"))
    print(f"OLD {args.old}  NEW {args.new}  ({args.runs} runs, fresh process each)")
    for label, old, new, mode in cases:
        times = [_run(old, new, mode) for _ in range(args.runs if mode != "cold" else 1)]
        print(f"  {label:45s} median {statistics.median(times):6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})")
    if args.after_sweep:
        _after_sweep(args.old, args.new, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
