#!/usr/bin/env python
"""Write docs/findings.md from real runs: what is over capacity and what does not compile, per
family, each block with the command that reproduces it.

    CUTLASS_LAYOUT_CACHE=<cache> python scripts/findings.py [--cutlass-470 CHECKOUT]
        [--flashinfer-nightly CHECKOUT] [--out FILE]

The runs, through the Python API (``cutlass_layout.audit``, ``cutlass_layout.diff``):

* flashinfer-python 0.7.4, every arch its builders target (``audit(..., "all")``);
* nvidia-cutlass 4.2.0.0's kernel library, SM120;
* a CUTLASS 4.7.0 checkout's kernel library, SM120 (``--cutlass-470``: the checkout's path;
  without it, or where it is absent, the block says "not run");
* the release gate of ``diff nvidia-cutlass==4.2.0.0 <4.7.0 checkout> --audit --arch sm120``
  (likewise);
* a flashinfer checkout of the 0.6.18 nightly line (``--flashinfer-nightly``: tag
  nightly-v0.6.18-20260819 with its ``3rdparty/cutlass`` submodule at b46b16d), SM120
  (without it: "not run").

Installs are named by distribution and version, never by a local path: the checkout is "CUTLASS
4.7.0 checkout (v4.7.0)", and its commands name it as the git URL of that tag, which audits the
same tree. A warm results cache (``CUTLASS_LAYOUT_CACHE``) makes the flashinfer block quick; a
cold 4.7.0 library takes minutes (610 kernels). The page is the template
``scripts/findings.md.j2`` filled in by :func:`page`, from the plain summaries of
:func:`summarize_audit` and :func:`summarize_gate` (tests/test_findings_script.py runs both on
a small fake result). The hand-written notes at the end of the template name their tests.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "findings.md.j2"
FLASHINFER = "flashinfer-python==0.7.4"
NVIDIA_CUTLASS = "nvidia-cutlass==4.2.0.0"
#: How the page names the 4.7.0 checkout, and the source its commands give for it (the same tag)
CHECKOUT_NAME = "CUTLASS 4.7.0 checkout (v4.7.0)"
CHECKOUT_SOURCE = "git+https://github.com/NVIDIA/cutlass@v4.7.0"
#: The flashinfer nightly checkout, likewise (its CUTLASS submodule's commit in the name)
NIGHTLY_NAME = "flashinfer nightly-v0.6.18-20260819 checkout (CUTLASS b46b16d)"
NIGHTLY_SOURCE = "git+https://github.com/flashinfer-ai/flashinfer@nightly-v0.6.18-20260819"


@dataclass
class Family:
    """One arch's family: how many kernels of each verdict (``laid_out``: those with numbers)."""

    arch: str
    family: str
    kernels: int = 0
    fits: int = 0
    exact_fit: int = 0
    over_capacity: int = 0
    does_not_compile: int = 0

    @property
    def laid_out(self) -> int:
        return self.fits + self.exact_fit + self.over_capacity


@dataclass
class Over:
    """A kernel over capacity: ``sizeof`` of its SharedStorage, its stages, the capacity, and
    its headroom (the capacity minus the bytes it launches with, as the audit computes it)."""

    arch: str
    family: str
    id: str
    kernel_bytes: int | None
    stages: int | None
    capacity_bytes: int | None
    headroom_bytes: int | None

    @property
    def over_by(self) -> int | None:
        return None if self.headroom_bytes is None else -self.headroom_bytes


@dataclass
class ErrorGroup:
    """The kernels of one family that do not compile with one first error (its message and
    file:line, as the audit reports it): how many, and the first of them."""

    arch: str
    family: str
    error: str
    count: int
    example: str


@dataclass
class AuditBlock:
    """One arch's audit: per family counts, the kernels over capacity, the errors grouped."""

    arch: str
    families: list[Family] = field(default_factory=list)
    over: list[Over] = field(default_factory=list)
    errors: list[ErrorGroup] = field(default_factory=list)

    def total(self, what: str) -> int:
        return sum(getattr(f, what) for f in self.families)


@dataclass
class GateBlock:
    """The release gate of a diff --audit: its counts, the kernels newly over capacity, the
    newly failing ones grouped by error, and the stage or byte changes (``id: old -> new``)."""

    counts: dict
    newly_over: list[Over] = field(default_factory=list)
    newly_broken: list[ErrorGroup] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


def _error_text(t) -> str:
    """A kernel's first error as the audit reports it, without ``does not compile: ``."""
    if t.error is None:
        return "not laid out"
    return t.error.one_line().removeprefix("does not compile: ")


def _group_errors(arch: str, tactics) -> list[ErrorGroup]:
    groups: dict[tuple[str, str], ErrorGroup] = {}
    for t in tactics:
        key = (t.family, _error_text(t))
        if key in groups:
            groups[key].count += 1
        else:
            groups[key] = ErrorGroup(arch, t.family, key[1], 1, t.id)
    return sorted(groups.values(), key=lambda g: (g.family, -g.count, g.error))


def _over(arch: str, t) -> Over:
    return Over(arch, t.family, t.id, t.kernel_bytes, t.stages, t.capacity_bytes, t.headroom_bytes)


def summarize_audit(res) -> AuditBlock:
    """The plain summary of one arch's audit (an :class:`~cutlass_layout.model.AuditResult`, or
    anything with its ``arch`` and ``tactics``: each with ``family``, ``id``, ``verdict``,
    ``kernel_bytes``, ``stages``, ``capacity_bytes``, ``headroom_bytes`` and ``error``)."""
    block = AuditBlock(res.arch)
    fams: dict[str, Family] = {}
    for t in res.tactics:
        f = fams.setdefault(t.family, Family(res.arch, t.family))
        f.kernels += 1
        setattr(f, str(t.verdict), getattr(f, str(t.verdict)) + 1)
    block.families = sorted(fams.values(), key=lambda f: f.family)
    block.over = [_over(res.arch, t) for t in res.tactics if t.verdict == "over_capacity"]
    block.errors = _group_errors(res.arch, [t for t in res.tactics if t.verdict == "does_not_compile"])
    return block


def summarize_gate(res) -> GateBlock:
    """The plain summary of a :class:`~cutlass_layout.model.DiffResult` made with ``audit=True``."""
    a = res.audit
    block = GateBlock(a.gate().to_dict())
    failing = a.newly_failing()
    block.newly_over = [_over(a.arch, r.new) for r in failing if r.new.verdict == "over_capacity"]
    block.newly_broken = _group_errors(a.arch, [r.new for r in failing if r.new.verdict == "does_not_compile"])
    for r in a.rows:
        if {"stages", "bytes"} & set(r.gate) and not r.gate[0].startswith("newly"):
            block.changes.append(
                f"{r.id}: {r.old.kernel_bytes} B, {r.old.stages} stages -> {r.new.kernel_bytes} B, "
                f"{r.new.stages} stages ({r.new.verdict})"
            )
    return block


def page(blocks: dict) -> str:
    """docs/findings.md: the template filled in with ``blocks`` (``flashinfer``, ``cutlass420``,
    ``cutlass470``, ``nightly``: a list of :class:`AuditBlock` or None for "not run"; ``gate``: a
    :class:`GateBlock` or None; ``flashinfer_archs``: the flashinfer command's ``--arch`` flags,
    default ``--arch all``), the sources' names and the commands."""
    blocks = {"flashinfer_archs": "--arch all", "nightly": None, **blocks}
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE.parent),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    names = {
        "flashinfer_spec": FLASHINFER,
        "cutlass420_spec": NVIDIA_CUTLASS,
        "flashinfer_name": FLASHINFER.replace("==", " "),
        "cutlass420_name": NVIDIA_CUTLASS.replace("==", " "),
        "checkout_name": CHECKOUT_NAME,
        "checkout_source": CHECKOUT_SOURCE,
        "nightly_name": NIGHTLY_NAME,
        "nightly_source": NIGHTLY_SOURCE,
    }
    return env.get_template(TEMPLATE.name).render(**blocks, **names)


def collect(
    checkout: Path | None, jobs: int | None, flashinfer_archs: list[str] | None = None, nightly: Path | None = None
) -> dict:
    """Run the audits and the diff (from the results cache where it has them); flashinfer's
    for ``flashinfer_archs`` (None: every arch its builders target)."""
    import cutlass_layout as cl

    fi = cl.audit(FLASHINFER, flashinfer_archs or "all", jobs=jobs)
    out: dict = {
        "flashinfer": [summarize_audit(r) for r in fi.results],
        "flashinfer_archs": " ".join(f"--arch {a}" for a in flashinfer_archs or ["all"]),
        "cutlass420": [summarize_audit(cl.audit(NVIDIA_CUTLASS, "sm120", jobs=jobs))],
        "cutlass470": None,
        "gate": None,
    }
    if checkout is not None and checkout.is_dir():
        out["cutlass470"] = [summarize_audit(cl.audit(str(checkout), "sm120", jobs=jobs))]
        out["gate"] = summarize_gate(cl.diff(NVIDIA_CUTLASS, str(checkout), audit=True, arch="sm120", jobs=jobs))
    if nightly is not None and nightly.is_dir():
        out["nightly"] = [summarize_audit(cl.audit(str(nightly), "sm120", jobs=jobs))]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cutlass-470", type=Path, default=None, metavar="CHECKOUT", help="A CUTLASS v4.7.0 checkout.")
    p.add_argument(
        "--flashinfer-nightly",
        type=Path,
        default=None,
        metavar="CHECKOUT",
        help="A flashinfer checkout at nightly-v0.6.18-20260819 with its 3rdparty/cutlass submodule.",
    )
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "findings.md")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument(
        "--flashinfer-arch", action="append", default=None, metavar="ARCH", help="Only these (default: every arch)."
    )
    args = p.parse_args(argv)
    if args.cutlass_470 is not None and not args.cutlass_470.is_dir():
        print(f"note: {args.cutlass_470} is not a folder: the 4.7.0 blocks say 'not run'", file=sys.stderr)
    if args.flashinfer_nightly is not None and not args.flashinfer_nightly.is_dir():
        print(f"note: {args.flashinfer_nightly} is not a folder: the nightly block says 'not run'", file=sys.stderr)
    blocks = collect(args.cutlass_470, args.jobs, args.flashinfer_arch, args.flashinfer_nightly)
    args.out.write_text(page(blocks))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
