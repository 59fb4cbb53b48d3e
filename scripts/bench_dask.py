#!/usr/bin/env python
"""Time an audit on this machine's forked pool and on a Dask ``LocalCluster`` (the README's
"On a cluster" figures).

    python scripts/bench_dask.py [SRC] [--family moe] [--workers 2]

SRC is a flashinfer install as ``audit`` takes it (default flashinfer-python==0.7.2.post1,
fetched once into the user cache). Runs ``api.audit(SRC, family=..., use_cache=False)`` on
the local pool (``--workers`` jobs), then on a ``LocalCluster`` of ``--workers`` processes of
one thread, and prints for each the wall time, the worker CPU seconds of the parses and of
the fix search, the kernels laid out, and whether the two JSON documents are the same.
Needs the ``dask`` extra.
"""

from __future__ import annotations

import argparse
import json
import time

from cutlass_layout import api


def _run(src: str, family: str | None, jobs: int | None, executor: str) -> tuple[dict, str]:
    t = time.perf_counter()
    res = api.audit(src, family=family, jobs=jobs, use_cache=False, executor=executor)
    wall = time.perf_counter() - t
    s = res.stats
    print(
        f"{executor}: {wall:6.1f} s wall, {len(res.tactics)} kernels, {s['batches']} batches, "
        f"parses {s['parse_cpu_seconds']} s CPU ({s['parse_cpu_seconds'] / max(1, len(res.tactics)):.2f} s "
        f"per kernel), fixes {s['fix_cpu_seconds']} s CPU"
    )
    return s, json.dumps(res.to_dict(), indent=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="?", default="flashinfer-python==0.7.2.post1")
    ap.add_argument("--family", default="moe")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from distributed import LocalCluster

    _, local = _run(args.src, args.family, args.workers, "local")
    t = time.perf_counter()
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        print(f"LocalCluster of {args.workers} started in {time.perf_counter() - t:.1f} s")
        _, remote = _run(args.src, args.family, None, cluster.scheduler_address)
    print("the same JSON" if local == remote else "the JSON differs")


if __name__ == "__main__":
    main()
