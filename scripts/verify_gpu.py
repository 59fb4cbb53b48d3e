#!/usr/bin/env python3
"""Launch a grid of SM90 kernels on a GPU and show the engine's verdicts hold (the README table).

The grid: dense and grouped GEMMs; cooperative and pingpong schedules; TMA and no-smem
epilogues; bf16 and e4m3 operands; each with ``stages`` auto (the builder's count, which fits
by construction) and with one stage more than the largest count that fits (over capacity).
The engine lays each out (``sweep``); :mod:`cutlass_layout.checks.gpu` writes one program per config
that nvcc builds for ``sm_90a`` and that launches the kernel through ``GemmUniversalAdapter``
and checks the product.

Modes:

* ``run``: on a machine with an SM90 GPU and nvcc, with this package installed: lay out, build,
  launch, print the markdown table (``--json FILE`` keeps the results);
* ``write DIR``: lay out here and write the programs, the runner and a copy of the CUTLASS
  include tree into DIR, for a GPU machine that has nvcc and python3 but not this package
  (``python3 DIR/runner.py DIR --include include`` there writes ``DIR/results.json``);
* ``table DIR``: read DIR's ``results.json`` back here and print the markdown table.

Usage: python scripts/verify_gpu.py run|write DIR|table DIR [--cutlass nvidia-cutlass==4.2.0.0]
       [--jobs N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from cutlass_layout.checks.gpu import GpuVerification, preflight, read_checks, verify_on_gpu, write_checks
from cutlass_layout.commands.sweep import sweep
from cutlass_layout.subjects.config import Config

#: (kernel, A, tile, cluster, schedule, epilogue schedule)
BASES = [
    ("dense", "bf16", (128, 128, 64), (1, 1, 1), "cooperative", "tma"),
    ("dense", "bf16", (128, 256, 64), (1, 1, 1), "cooperative", "tma"),
    ("dense", "bf16", (64, 128, 64), (1, 1, 1), "pingpong", "tma"),
    ("dense", "bf16", (128, 128, 64), (1, 1, 1), "pingpong", "nosmem"),
    ("dense", "bf16", (256, 128, 64), (1, 1, 1), "cooperative", "nosmem"),
    ("dense", "bf16", (128, 128, 64), (2, 1, 1), "cooperative", "tma"),
    ("dense", "e4m3", (128, 128, 128), (1, 1, 1), "cooperative", "tma"),
    ("dense", "e4m3", (64, 128, 128), (1, 1, 1), "pingpong", "tma"),
    ("dense", "e4m3", (128, 256, 128), (1, 1, 1), "cooperative", "nosmem"),
    ("grouped", "bf16", (128, 128, 64), (1, 1, 1), "cooperative", "tma"),
    ("grouped", "bf16", (128, 256, 64), (1, 1, 1), "cooperative", "tma"),
    ("grouped", "bf16", (64, 128, 64), (1, 1, 1), "pingpong", "tma"),
    ("grouped", "e4m3", (128, 128, 128), (1, 1, 1), "cooperative", "tma"),
    ("grouped", "e4m3", (64, 128, 128), (1, 1, 1), "pingpong", "tma"),
]


def grid(cutlass: str, jobs: int | None):
    """The configs (auto, and max-fit + 1 stages), their (verdict, bytes), the include root."""
    bases = [
        Config(arch="sm90", kernel=k, a=a, tile=t, cluster=cl, schedule=s, epilogue_schedule=e)
        for k, a, t, cl, s, e in BASES
    ]
    first = sweep(bases, cutlass, jobs=jobs, progress=True)
    over = [
        r.config.with_(stages=r.max_stages_that_fit + 1) for r in first.records if r.max_stages_that_fit is not None
    ]
    second = sweep(over, cutlass, jobs=jobs, progress=True)
    configs, expected = [], []
    for r in first.records + second.records:
        if r.verdict == "does_not_compile":
            print(f"skipped (does not compile): {r.config.label()}: {r.error.one_line()}", file=sys.stderr)
            continue
        configs.append(r.config)
        expected.append((r.verdict, r.kernel_bytes, r.stages))
    return configs, expected, Path(first.provenance.cutlass_root), first.provenance.cutlass_version


def _stages(asked, engine) -> str:
    return f"auto ({engine})" if asked == "auto" and engine is not None else str(asked)


def markdown(v: GpuVerification, version: str = "") -> str:
    """The README table: one row per config."""
    optin = next((r.optin for r in v.runs if r.optin), None)
    out = [
        f"Measured on {v.device.name} (sm_{v.device.cc[0]}{v.device.cc[1]}, opt-in shared memory "
        f"per block {optin} B){', CUTLASS ' + version if version else ''}; "
        f"{sum(r.agree for r in v.runs)} of {len(v.runs)} agree.",
        "",
        "| kernel | A | tile | cluster | schedule | epilogue | stages | engine | engine B | nvcc sizeof | "
        "static B | initialize | run | product | agrees |",
        "| --- | --- | --- | --- | --- | --- | ---: | --- | ---: | ---: | ---: | --- | --- | --- | --- |",
    ]
    for r in v.runs:
        c = r.config
        product = "-" if r.correct is None else ("correct" if r.correct else "wrong")
        run = "-" if r.run in (None, "Error Not Supported") and r.initialize != "Success" else (r.run or "-")
        out.append(
            f"| {c['kernel']} | {c['a']} | {'x'.join(map(str, c['tile']))} | "
            f"{'x'.join(map(str, c['cluster']))} | {c['schedule']} | {c['epilogue_schedule']} | "
            f"{_stages(c['stages'], r.tool_stages)} | {r.tool_verdict.replace('_', ' ')} | {r.tool_bytes} | {r.sizeof} | "
            f"{r.static} | {r.initialize or r.error} | {run} | {product} | {'yes' if r.agree else '**no**'} |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["run", "write", "table"])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--cutlass", default="nvidia-cutlass==4.2.0.0")
    ap.add_argument("--jobs", type=int, default=None, help="layouts (and, with run, builds) at once")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args()
    if args.mode in ("write", "table") and not args.dir:
        ap.error(f"{args.mode} needs DIR")
    if args.mode == "table":
        folder = Path(args.dir)
        v = read_checks(folder)
        meta = json.loads((folder / "build.json").read_text())
        print(markdown(v, meta.get("cutlass_version", "")))
        return 0 if v.agree else 1
    if args.mode == "run":
        device = preflight("sm90")
        configs, expected, root, version = grid(args.cutlass, args.jobs)
        v = verify_on_gpu(configs, expected, root, arch="sm90", jobs=args.jobs, device=device)
        print(markdown(v, version))
        if args.json:
            Path(args.json).write_text(json.dumps(v.to_dict(), indent=1))
        return 0 if v.agree else 1
    folder = Path(args.dir)
    configs, expected, root, version = grid(args.cutlass, args.jobs)
    write_checks(configs, expected, Path("include"), folder, arch="sm90")  # builds: the CPUs there
    meta = json.loads((folder / "build.json").read_text())
    meta["cutlass_version"] = version
    (folder / "build.json").write_text(json.dumps(meta))
    if (folder / "include").exists():
        shutil.rmtree(folder / "include")
    shutil.copytree(root, folder / "include")
    print(
        f"{len(configs)} programs in {folder}; on the GPU machine: python3 {folder}/runner.py {folder}", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
