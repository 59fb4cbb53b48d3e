#!/usr/bin/env python
"""Time ``cutlass-layout diff``, each run in a fresh ``python`` process (what a user waits for).

    python scripts/bench_diff.py [OLD NEW] [--runs 3] [--cold]

OLD/NEW default to flashinfer-python==0.6.8 and flashinfer-python==0.7.2.post1 (fetched once
into the user cache). Prints the median wall time over ``--runs`` runs of

* identical trees (NEW against itself): no scan, no layout;
* OLD vs NEW with the default grid (32 configs) on a warm diff cache;
* OLD vs NEW structural only, ignoring the diff cache (scan of the headers that differ);
* with ``--cold``: OLD vs NEW with the default grid ignoring the diff cache (libclang lays
  out 32 configs on each tree, the two trees in parallel; the precompiled headers of the
  engine's own cache are used when present).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CODE = """
import sys
from cutlass_layout.diff import diff
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
    subprocess.run([sys.executable, "-c", CODE, old, new, mode], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", nargs="?", default="flashinfer-python==0.6.8")
    ap.add_argument("new", nargs="?", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also time a diff that ignores the diff cache")
    args = ap.parse_args()

    _run(args.old, args.new, "warm")  # fetch, unpack, fill the diff cache
    cases = [("identical trees (NEW vs NEW)", args.new, args.new, "warm"),
             ("default grid, warm diff cache", args.old, args.new, "warm"),
             ("structural only, no diff cache", args.old, args.new, "structural")]
    if args.cold:
        cases.append(("default grid + structural, no diff cache", args.old, args.new, "cold"))
    print(f"OLD {args.old}  NEW {args.new}  ({args.runs} runs, fresh process each)")
    for label, old, new, mode in cases:
        times = [_run(old, new, mode) for _ in range(args.runs if mode != "cold" else 1)]
        print(f"  {label:45s} median {statistics.median(times):6.2f} s  "
              f"(runs: {', '.join(f'{t:.2f}' for t in times)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
