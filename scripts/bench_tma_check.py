#!/usr/bin/env python3
"""Benchmark what the TMA transaction-bytes check (issue 44 item 3) costs an audit: the same
audit with the check and with it skipped, alternating, each in a fresh process and a fresh
results cache, CPU seconds (the process and its workers: ``RUSAGE_SELF + RUSAGE_CHILDREN``,
independent of the machine's load) and the audit's parse CPU.

Skipped means: the probe blocks leave out the aliases only the check reads (the transaction
count parts, the policy, the element and slot bits, the conversion mode, the buffers' bytes of
elements: :func:`cutlass_layout.subjects.aliases.subject_block`'s lines for them) and
:func:`cutlass_layout.engine.numbers.tma_check` is not called; the patch is made before the
audit's worker pool forks, so the workers have it too.

Each run copies ``--base`` (a cache an audit of the same install already filled) without its
``results`` and ``preludes`` (what the probe's code makes): the install's unpacked trees, the
JIT module sources and the precompiled headers (which hold the detection helpers, the same in
both variants) are kept, so both variants lay out every source again and nothing else.

Usage: python scripts/bench_tma_check.py --base CACHE [--spec flashinfer-python==0.7.4]
       [--arch sm90] [--family moe] [--runs 2] [--jobs N]
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
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
variant, spec, arch, family, jobs = json.loads(sys.argv[1])
if variant == "skip":
    from cutlass_layout.engine import numbers
    from cutlass_layout.subjects import aliases
    drop = {*aliases.TMA_PARTS, *aliases.TMA_DATA, "StagesSF", "TmaAtomThr", "MainloopPolicy",
            "TmaBitsA", "TmaBitsB", "SlotBitsA", "SlotBitsB", "TmaMode"}
    block = aliases.subject_block
    def subject_block(*a, **k):
        p = k.get("prefix", "")
        return "".join(line for line in block(*a, **k).splitlines(True)
                       if not any(line.startswith(f"using {p}{d} =") for d in drop))
    aliases.subject_block = subject_block
    numbers.tma_check = lambda *a, **k: None
from cutlass_layout import audit
t = time.perf_counter()
r = audit(spec, arch, jobs=jobs, family=family)
wall = time.perf_counter() - t
cpu = sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                           resource.getrusage(resource.RUSAGE_CHILDREN)))
checks = {}
for x in r.tactics:
    c = x.report.tma_check if x.report is not None else None
    key = c.status if c is not None else "none"
    checks[key] = checks.get(key, 0) + 1
print(json.dumps({"wall": wall, "cpu": cpu, "parse_cpu": r.stats.get("parse_cpu_seconds", 0),
                  "parsed": r.stats.get("parsed", 0), "tactics": len(r.tactics), "checks": checks}))
"""

_KEEP = ("trees", "wheels", "pch", "flashinfer-jit", "generator-runs", "locks")


def fresh_cache(base: Path) -> Path:
    """A copy of ``base`` (hard links) with only :data:`_KEEP`: no results, no preludes."""
    dest = Path(tempfile.mkdtemp(prefix="cutlass-layout-bench-tma-"))
    for name in _KEEP:
        if (base / name).exists():
            shutil.copytree(base / name, dest / name, copy_function=os.link)
    return dest


def run(variant: str, args, base: Path) -> dict:
    cache = fresh_cache(base)
    try:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps([variant, args.spec, args.arch, args.family, args.jobs])],
            env={**os.environ, "CUTLASS_LAYOUT_CACHE": str(cache)},
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="a cache an audit of the same install filled")
    ap.add_argument("--spec", default="flashinfer-python==0.7.4")
    ap.add_argument("--arch", default="sm90")
    ap.add_argument("--family", default="moe")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    got: dict[str, list[dict]] = {"check": [], "skip": []}
    for i in range(args.runs):
        for variant in ("check", "skip") if i % 2 == 0 else ("skip", "check"):
            r = run(variant, args, Path(args.base))
            got[variant].append(r)
            print(
                f"{variant}: CPU {r['cpu']:.1f} s, parse CPU {r['parse_cpu']:.1f} s, wall {r['wall']:.1f} s, "
                f"{r['tactics']} tactics, {r['parsed']} parsed, checks {r['checks']}",
                flush=True,
            )
    cpu = {v: statistics.median(x["cpu"] for x in rs) for v, rs in got.items()}
    parse = {v: statistics.median(x["parse_cpu"] for x in rs) for v, rs in got.items()}
    print(
        f"median CPU: with the check {cpu['check']:.1f} s, skipped {cpu['skip']:.1f} s "
        f"({100 * (cpu['check'] / cpu['skip'] - 1):+.1f}%); parse CPU {parse['check']:.1f} s vs "
        f"{parse['skip']:.1f} s ({100 * (parse['check'] / parse['skip'] - 1):+.1f}%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
