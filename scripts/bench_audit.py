#!/usr/bin/env python3
"""Benchmark `cutlass-layout audit` of flashinfer's SM120 kernels, and nvcc on one generated file.

Modes, each in a fresh process:

* ``cold``: the whole SM120 audit with an empty cache (a private ``CUTLASS_LAYOUT_CACHE``; the
  flashinfer wheel is copied in, so nothing is downloaded): unpacking the wheel, running the
  install's JIT builders, building the precompiled headers, laying out every source in
  parallel, reading the runtime candidate list. Wall time, parse CPU seconds (all workers,
  independent of machine load), sources parsed, tactics, peak memory of a worker;
* ``warm``: the same audit again, everything from the results cache (median of ``--runs``);
* ``nvcc``: one generated MoE source (8 launchers) through nvcc's host pass (``gcc -E`` and
  ``cudafe++``, as tests/test_audit_nvcc.py runs it), and, with ``--nvcc-full``, a full
  ``nvcc -c`` of it (host and device code, as flashinfer's JIT builds it).

Usage: python scripts/bench_audit.py [--spec flashinfer-python==0.7.2.post1] [--runs 3]
       [--jobs N] [--family F] [--arch A [--arch B] | --arch all] [--no-nvcc] [--nvcc-full]
       [--keep DIR]
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
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from cutlass_layout import audit
spec, jobs, family, arch = json.loads(sys.argv[1])
t = time.perf_counter()
r = audit(spec, arch[0] if len(arch) == 1 else arch, jobs=jobs, family=family)
wall = time.perf_counter() - t
results = getattr(r, "results", [r])
cpu = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                           resource.getrusage(resource.RUSAGE_CHILDREN)))
stats = {"parse_cpu_seconds": sum(x.stats.get("parse_cpu_seconds", 0) for x in results),
         "batches": sum(x.stats.get("batches", 0) for x in results),
         "parsed": sum(x.stats.get("parsed", 0) for x in results),
         "worker_peak_rss_mb": max(x.stats.get("worker_peak_rss_mb", 0) for x in results),
         "main_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
         "pch_seconds": sum(x.stats.get("pch_seconds", 0) for x in results),
         "fix_cpu_seconds": sum(x.stats.get("fix_cpu_seconds", 0) for x in results),
         "jit_seconds": sum(x.stats.get("jit_seconds", 0) for x in results),
         "cached": sum(x.stats.get("cached", 0) for x in results)}
tactics = [x for res in results for x in res.tactics]
per_arch = {res.arch: len(res.tactics) for res in results}
print(json.dumps({"wall": wall, "cpu": cpu, "stats": stats, "tactics": len(tactics), "per_arch": per_arch,
                  "moe": sum(1 for x in tactics if x.family == "moe"),
                  "over": [f"{res.arch}:{x.id}" for res in results for x in res.tactics
                           if x.verdict == "over_capacity"]}))
"""

MEASURE = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stdout.write(p.stdout)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, file=sys.stderr)\n"
)


def run_child(spec: str, jobs: int | None, cache: str, family: str | None = None, arch: list[str] = ("sm120",)) -> dict:
    env = {**os.environ, "CUTLASS_LAYOUT_CACHE": cache}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps([spec, jobs, family, list(arch)])],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spec", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--no-nvcc", action="store_true")
    ap.add_argument("--nvcc-full", action="store_true")
    ap.add_argument("--family", default=None, help="audit one family (moe, gemm_sm120, ...)")
    ap.add_argument(
        "--keep",
        metavar="DIR",
        default=None,
        help="use DIR (new or empty) as the cache and keep it: warm runs after this one read it",
    )
    ap.add_argument(
        "--arch",
        action="append",
        default=None,
        help="the arch (sm120 by default), repeatable, or all (every arch the install builds)",
    )
    args = ap.parse_args()
    args.arch = args.arch or ["sm120"]

    from cutlass_layout.sources.wheels import fetch_wheel

    wheel = fetch_wheel(args.spec)  # cached in the user cache: the cold run copies it
    if args.keep and Path(args.keep).exists() and any(Path(args.keep).iterdir()):
        ap.error(f"--keep {args.keep}: not empty (the cold run needs an empty cache)")
    cache = args.keep or tempfile.mkdtemp(prefix="cutlass-layout-bench-audit-")
    safe = "".join(c if c.isalnum() or c in "._=-" else "_" for c in args.spec)
    (Path(cache) / "wheels" / safe).mkdir(parents=True)
    shutil.copy(wheel, Path(cache) / "wheels" / safe / wheel.name)
    try:
        cold = run_child(args.spec, args.jobs, cache, args.family, args.arch)
        s = cold["stats"]
        n = max(1, cold["tactics"])
        print(
            f"cold: {cold['wall']:.1f} s wall; CPU {cold['cpu']:.1f} s in all ({cold['cpu'] / n:.2f} s per "
            f"kernel), of which parse {s['parse_cpu_seconds']:.1f} s ({s['parse_cpu_seconds'] / n:.2f} s per "
            f"kernel, {s.get('batches', s['parsed'])} translation units); "
            f"{s['parsed']} sources parsed, {s.get('cached', 0)} read from another build's answers; "
            f"precompiled headers {s.get('pch_seconds', 0):.1f} s, fixes {s.get('fix_cpu_seconds', 0):.1f} s of "
            f"CPU, JIT builders {s.get('jit_seconds', 0):.1f} s; {cold['tactics']} tactics ({cold['moe']} MoE; per arch "
            f"{cold['per_arch']}); worker peak {s['worker_peak_rss_mb']:.0f} MB, main process peak "
            f"{s['main_peak_rss_mb']:.0f} MB; {len(cold['over'])} over capacity: {', '.join(cold['over'])}"
        )
        warm = [run_child(args.spec, args.jobs, cache, args.family, args.arch)["wall"] for _ in range(args.runs)]
        t0 = time.perf_counter()
        env = {**os.environ, "CUTLASS_LAYOUT_CACHE": cache}
        fam = (["--family", args.family] if args.family else []) + [f"--arch={a}" for a in args.arch]
        procs = [
            subprocess.run(
                [sys.executable, "-m", "cutlass_layout.cli", "audit", args.spec, *fam, "--json"],
                env=env,
                capture_output=True,
                text=True,
            )
            for _ in range(args.runs)
        ]
        per_cli = (time.perf_counter() - t0) / args.runs
        print(
            f"warm: audit() {statistics.median(warm):.2f} s (median of {args.runs}: "
            f"{', '.join(f'{w:.2f}' for w in warm)}); `cutlass-layout audit --json` process "
            f"{per_cli:.2f} s (mean of {args.runs}, exit {procs[-1].returncode})"
        )
        if not args.no_nvcc:
            nvcc_bench(args.spec, cache, args.nvcc_full)
    finally:
        if not args.keep:
            shutil.rmtree(cache, ignore_errors=True)
    return 0


def nvcc_bench(spec: str, cache: str, full: bool) -> None:
    os.environ["CUTLASS_LAYOUT_CACHE"] = cache
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from test_audit_nvcc import _nvcc_flags, nvcc_host_pass_sizes

    from cutlass_layout.engine import loop as engine
    from cutlass_layout.sources.flashinfer_jit import jit_modules
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    install = resolve_flashinfer(spec)
    tgt = engine.target(install.tree)
    moe = next(
        m
        for m in jit_modules(install, "sm120", cuda_version=tgt.cuda.version).modules
        if m.name.startswith("fused_moe")
    )
    source = next(p for p in moe.generated if "sm120_M256_BS_group0" in p.name)
    work = Path(tempfile.mkdtemp(prefix="cutlass-layout-bench-nvcc-"))
    try:
        t = time.perf_counter()
        got = nvcc_host_pass_sizes(source, _nvcc_flags(moe, install.tree), work)
        print(f"nvcc host pass of {source.name} ({len(got)} launchers): {time.perf_counter() - t:.1f} s")
        if full:
            cmd = ["nvcc", *_nvcc_flags(moe, install.tree), "-c", "-o", str(work / "x.o"), str(source)]
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True)
            print(
                f"nvcc -c (host and device) of it: {time.perf_counter() - t:.1f} s, exit "
                f"{p.returncode}, peak {p.stderr.strip().splitlines()[-1]} MB"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
