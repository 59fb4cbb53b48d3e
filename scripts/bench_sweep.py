#!/usr/bin/env python3
"""Benchmark `cutlass-layout sweep` on a 64-config SM120 grid, and nvcc on the same configs.

Grid: kernel {grouped, dense} x A=B {nvfp4, mxfp8} x preset {flashinfer, trtllm-moe} x tile
128x{32,64,128,256}x{128,256} = 64 configs, stages auto (some do not compile: their stage
budget is below 2). Modes:

* ``cold``: ``sweep(..., use_cache=False)`` in a fresh process, precompiled header already
  cached: every config laid out, plus the stage-count search (``max_stages_that_fit``);
  ``parse CPU s`` is the CPU time of all layouts (all workers), independent of machine load;
* ``warm``: the same sweep again in a fresh process, every record read from the result cache;
* ``nvcc``: the configs that compile, through nvcc (host + device pass) in TUs of 16 (``--tu``),
  two TUs at a time (2 cores), with the probe's ``main()`` run to print the sizes; the
  sizes are compared with the sweep's. nvcc computes only the 64 auto layouts, not the search.

``--moe`` sweeps the MoE grid of issue 5 instead (72 configs, 46 of which do not compile).

Usage: python scripts/bench_sweep.py [--runs 2] [--cutlass SRC] [--jobs N] [--no-nvcc] [--moe]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

GRID = {
    "kernel": ["grouped", "dense"],
    "a": ["nvfp4", "mxfp8"],
    "preset": ["flashinfer", "trtllm-moe"],
    "tile": ["128x{32,64,128,256}x{128,256}"],
}
#: ``--moe``: the MoE tuning grid of issue 5 (72 configs, most of which do not compile:
#: N 8 and 16 fail the epilogue's static_assert, MXFP8 with K 64 a hard error in cute).
MOE_GRID = {
    "kernel": ["grouped"],
    "a": ["nvfp4", "mxfp8"],
    "tile": ["{128,256}x{8,16,32,64,128,256}x{64,128,256}"],
}

# Runs in a fresh process: prints the sweep's JSON plus its stats.
CHILD = r"""
import json, sys, time
from cutlass_layout.commands.sweep import sweep
grid, src, jobs, cached = json.loads(sys.argv[1])
t = time.perf_counter()
r = sweep(grid, src, jobs=jobs, use_cache=cached)
wall = time.perf_counter() - t
print(json.dumps({"wall": wall, "stats": r.stats, "result": r.to_dict()}))
"""

MEASURE = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "dt = time.perf_counter() - t\n"
    "sys.stderr.write(p.stderr)\n"
    "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
)


def child(grid: dict, src: str, jobs: int | None, cached: bool) -> tuple[float, float, dict]:
    """(process wall seconds, sweep() seconds, parsed output) of one sweep in a fresh process."""
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([grid, src, jobs, cached])], capture_output=True, text=True, check=True
    ).stdout
    return time.perf_counter() - t, *(lambda d: (d["wall"], d))(json.loads(out))


def nvcc_run(nvcc: str, root: str, work: Path, i: int, configs) -> tuple[float, float, str]:
    from cutlass_layout.subjects import probe

    src = work / f"tu{i}.cu"
    exe = work / f"tu{i}"
    src.write_text(probe.render(configs, with_main=True))
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            MEASURE,
            nvcc,
            "-std=c++17",
            "-arch=sm_120a",
            "-w",
            f"-I{root}",
            str(src),
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if out[2] != "0":
        raise SystemExit(f"nvcc failed on TU {i}")
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return float(out[0]), int(out[1]) / 1024, printed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=2, help="cold runs (warm: 5)")
    ap.add_argument("--cutlass", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--tu", type=int, default=16, help="configs per nvcc translation unit")
    ap.add_argument("--no-nvcc", action="store_true")
    ap.add_argument("--moe", action="store_true", help="sweep the MoE grid of issue 5")
    args = ap.parse_args()
    grid = MOE_GRID if args.moe else GRID

    from cutlass_layout import Config, target
    from cutlass_layout.commands.sweep import sweep
    from cutlass_layout.subjects.grid import grid_configs

    tgt = target(args.cutlass)
    src = str(tgt.tree.include_root)
    sweep([Config()], tgt, use_cache=False)  # unpack the tree, build the precompiled header
    configs = grid_configs(grid)
    n = len(configs)

    cold = [child(grid, src, args.jobs, False) for _ in range(args.runs)]
    warm = [child(grid, src, args.jobs, True) for _ in range(5)]
    stats = cold[-1][2]["stats"]
    results = cold[-1][2]["result"]["results"]
    assert all(w[2]["result"]["results"] == results for w in warm), "warm records differ"

    print(
        f"CUTLASS {tgt.tree.version} ({tgt.tree.origin}); {n} configs; jobs "
        f"{args.jobs or os.cpu_count()}; {os.cpu_count()} CPUs"
    )
    verdicts = {v: sum(r["verdict"] == v for r in results) for v in ("fits", "over_capacity", "does_not_compile")}
    print(
        f"verdicts: {verdicts}; layouts computed in a cold sweep: {stats['laid_out']} "
        f"(in {stats['chunks']} translation units)"
    )
    print(
        f"{'mode':<6} {'runs':>4} {'median s':>9} {'sweep() s':>9} {'s/config':>9} {'s/layout':>9} "
        f"{'parse CPU s':>11} {'peak MB/worker':>15}"
    )
    for name, rs in (("cold", cold), ("warm", warm)):
        wall = statistics.median(r[0] for r in rs)
        inner = statistics.median(r[1] for r in rs)
        lay = rs[-1][2]["stats"]["laid_out"]
        peak = max(r[2]["stats"]["worker_peak_rss_mb"] for r in rs)
        cpu = statistics.median(r[2]["stats"]["parse_cpu_seconds"] for r in rs)
        print(
            f"{name:<6} {len(rs):>4} {wall:>9.2f} {inner:>9.3f} {inner / n:>9.3f} "
            f"{(inner / lay) if lay else 0:>9.3f} {cpu:>11.1f} {peak:>15.0f}"
        )
    print(f"(load average while measuring: {', '.join(f'{x:.2f}' for x in os.getloadavg())})")

    nvcc = shutil.which("nvcc")
    if nvcc and not args.no_nvcc:
        ok = [c for c, r in zip(configs, results) if r["verdict"] != "does_not_compile"]
        want = {i: r for i, r in enumerate(r for r in results if r["verdict"] != "does_not_compile")}
        tus = [ok[i : i + args.tu] for i in range(0, len(ok), args.tu)]
        work = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
        t = time.perf_counter()
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as ex:
            outs = list(ex.map(lambda a: nvcc_run(nvcc, src, work, *a), enumerate(tus)))
        wall = time.perf_counter() - t
        shutil.rmtree(work, ignore_errors=True)
        mismatches = 0
        for k, (_, _, printed) in enumerate(outs):
            for line in printed.splitlines():
                _, i, kern, main_, epi, st = line.split()
                r = want[k * args.tu + int(i)]
                got = (r["kernel_bytes"], r["mainloop_bytes"], r["epilogue_bytes"], r["stages"])
                mismatches += got != (int(kern), int(main_), int(epi), int(st))
        print(
            f"nvcc   {len(tus)} TUs of <= {args.tu} ({len(ok)} configs that compile), "
            f"{os.cpu_count()} at a time: {wall:.1f} s wall, {wall / len(ok):.2f} s/config; "
            f"TU times {', '.join(f'{o[0]:.0f}' for o in outs)} s; peak "
            f"{max(o[1] for o in outs):.0f} MB; size mismatches vs sweep: {mismatches}"
        )


if __name__ == "__main__":
    main()
