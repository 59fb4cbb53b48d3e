"""Check the engine against nvcc: compile the same probe with nvcc, run it, compare.

The probe (:func:`cutlass_layout.probe.render` with ``with_main``) prints ``sizeof`` of the
three SharedStorage structs, the stage count, and ``offsetof``/``sizeof`` of every member
path that C++ can name (public members, not base-class subobjects). This module compiles
it with nvcc (host and device pass, ``-arch=sm_XXXa``) and reads those numbers back.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import probe
from .config import ARCHS
from .errors import BadInput
from .model import LayoutReport, StructLayout
from .runner import step

_ALIASES = (("KernelStorage", "kernel"), ("MainloopStorage", "mainloop"), ("EpilogueStorage", "epilogue"))


def member_paths(struct: StructLayout) -> list[tuple[str, int, int]]:
    """``(dotted path, offset, size)`` of every member ``offsetof`` can name (bytes)."""
    out = []

    def visit(fields, prefix):
        for f in fields:
            if "<" in f.name or f.access != "public":
                continue
            name = f"{prefix}.{f.name}" if prefix else f.name
            out.append((name, f.offset, f.size))
            visit(f.fields, name)

    visit(struct.fields, "")
    return out


@dataclass
class Verification:
    """The outcome of :func:`verify_with_nvcc`.

    Attributes:
        sizes: struct sizes and stage counts compared.
        fields: member (offset, size) pairs compared.
        mismatches: one line per difference (empty when nvcc agrees on everything).
    """

    sizes: int = 0
    fields: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        if self.agree:
            return f"nvcc agrees: {self.sizes} sizes and stage counts, {self.fields} member offsets and sizes"
        return f"nvcc DISAGREES on {len(self.mismatches)} of {self.sizes + self.fields} numbers: " + \
            "; ".join(self.mismatches[:5])


def nvcc_numbers(subjects: list, include_root: Path, arch: str, *, nvcc: str | None = None,
                 paths: list[list[tuple[str, str]]] | None = None, workdir: Path | None = None):
    """Compile and run the probe of ``subjects`` (all of one ``arch``) with nvcc.

    Returns ``(sizes, fields)``: ``sizes[i] = (kernel, mainloop, epilogue, stages)`` (a
    missing part prints as 1, a missing stage count as 0) and ``fields[(i, alias, path)] =
    (offset, size)`` for each ``(alias, path)`` of ``paths[i]``, and ``fields[(i, "Stages",
    "B"|"E")] = (N, 0)`` for a sparse mainloop's ``StagesB``/``StagesE``. Bytes. User types
    (:class:`~cutlass_layout.probe.UserType`) bring their ``-I``/``-D`` flags; put types whose
    ``STAGES`` differ in separate calls (a header is read once per translation unit).

    Raises:
        BadInput: nvcc is not on PATH, or it failed (its last lines are in the message).
    """
    nvcc = nvcc or shutil.which("nvcc")
    if not nvcc:
        raise BadInput("verifying with nvcc needs nvcc, and it is not on PATH")
    work = Path(workdir or tempfile.mkdtemp(prefix="cutlass-layout-nvcc-"))
    src = work / "probe.cu"
    src.write_text(probe.render(subjects, with_main=True, offsets=paths))
    exe = work / "probe"
    extra = list(dict.fromkeys(f for s in subjects if isinstance(s, probe.UserType)
                               for f in s.extra_flags()))
    cmd = [nvcc, "-std=c++17", f"-arch={ARCHS[arch]}", "-w", *extra, f"-I{include_root}", str(src),
           "-o", str(exe)]
    with step(f"compiling the probe of {len(subjects)} config(s) with nvcc for {ARCHS[arch]} "
              "(host and device pass, about 30 s)"):
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = " | ".join(ln.strip() for ln in proc.stderr.splitlines() if "error" in ln)[:400]
        raise BadInput(f"nvcc failed on the probe: {tail or proc.stderr[-400:]}")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    sizes, fields = {}, {}
    for line in out.splitlines():
        kind, i, *rest = line.split()
        if kind == "size":
            sizes[int(i)] = tuple(int(x) for x in rest)
        else:
            alias, path, off, size = rest
            fields[(int(i), alias, path)] = (int(off), int(size))
    if workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return sizes, fields


def verify_with_nvcc(subjects: list, reports: list[LayoutReport], include_root: Path, *,
                     nvcc: str | None = None) -> Verification:
    """Compare the engine's ``reports`` for ``subjects`` with what nvcc computes.

    Every struct size, stage count, and member offset and size that C++ can name is
    compared. Configs that did not compile are left out. One nvcc run per arch.

    Raises:
        BadInput: nvcc missing or failing.
    """
    result = Verification()
    by_arch: dict[tuple, list[int]] = {}
    for i, (s, r) in enumerate(zip(subjects, reports)):
        if r.error is None:  # a user type's arch may come from its tag: the report has it
            unit = s.unit_key() if isinstance(s, probe.UserType) else None
            by_arch.setdefault((r.config.get("arch") or s.arch, unit), []).append(i)
    for (arch, _), idxs in by_arch.items():
        paths, want = [], {}
        for k, i in enumerate(idxs):
            mine = []
            for alias, attr in _ALIASES:
                s = getattr(reports[i], attr)
                if s is None:
                    continue
                for path, off, size in member_paths(s):
                    mine.append((alias, path))
                    want[(k, alias, path)] = (off, size)
            paths.append(mine)
        sizes, fields = nvcc_numbers([subjects[i] for i in idxs], include_root, arch, nvcc=nvcc, paths=paths)
        for k, i in enumerate(idxs):
            r = reports[i]
            got = sizes.get(k)
            mine = (r.kernel and r.kernel.size or 1, r.mainloop and r.mainloop.size or 1,
                    r.epilogue and r.epilogue.size or 1, r.stages or 0)
            result.sizes += 4
            if got != mine:
                result.mismatches.append(f"{subjects[i].label()}: sizes {mine} vs nvcc {got}")
            for which, n in (r.stage_counts or {}).items():
                if which != "A":
                    result.sizes += 1
                    theirs = fields.get((k, "Stages", which), (None,))[0]
                    if theirs != (0 if n is None else n):
                        result.mismatches.append(f"{subjects[i].label()}: Stages{which} {n} vs nvcc {theirs}")
        for key, val in want.items():
            result.fields += 1
            if fields.get(key) != val:
                result.mismatches.append(f"{key[1]}.{key[2]}: {val} vs nvcc {fields.get(key)}")
    return result
