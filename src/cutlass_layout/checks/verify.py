"""Check the engine against nvcc: give nvcc the same probe, read its numbers, compare.

The probe (:func:`cutlass_layout.subjects.probe.render` with ``shown``) names ``sizeof`` of the
three SharedStorage structs, the stage count, and ``offsetof``/``sizeof`` of every member
path that C++ can name (public members, not base-class subobjects). nvcc's front end
(``-arch=sm_XXXa``, host pass) reports each number in an error message; this module reads
them back (:func:`nvcc_numbers`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..model import LayoutReport, StructLayout
from ..core.progress import step
from ..subjects import probe, user_type
from ..subjects.config import ARCHS

_ALIASES = (
    ("KernelStorage", "kernel"),
    ("MainloopStorage", "mainloop"),
    ("EpilogueStorage", "epilogue"),
    ("Storage", "storage"),
)


def member_paths(struct: StructLayout) -> list[tuple[str, int, int]]:
    """``(dotted path, offset, size)`` of every member ``offsetof`` can name (bytes): the
    members of an anonymous union or struct by the enclosing one's path, as C++ names them."""
    out = []

    def visit(fields, prefix):
        for f in fields:
            if f.access != "public":
                continue
            if f.name == "<anonymous>":
                visit(f.fields, prefix)
                continue
            if "<" in f.name:
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
        """Whether nvcc agreed on every number compared (no :attr:`mismatches`)."""
        return not self.mismatches

    def summary(self) -> str:
        """One line: ``nvcc agrees: N sizes and stage counts, M member offsets and sizes``, or
        ``nvcc DISAGREES on K of N numbers: ...`` with the first five mismatches."""
        if self.agree:
            return f"nvcc agrees: {self.sizes} sizes and stage counts, {self.fields} member offsets and sizes"
        return f"nvcc DISAGREES on {len(self.mismatches)} of {self.sizes + self.fields} numbers: " + "; ".join(
            self.mismatches[:5]
        )


def nvcc_numbers(
    subjects: list,
    include_root: Path,
    arch: str,
    *,
    nvcc: str | None = None,
    paths: list[list[tuple[str, str]]] | None = None,
    workdir: Path | None = None,
    run: bool = False,
):
    """What nvcc computes for the probe of ``subjects`` (all of one ``arch``).

    By default from nvcc's front end: the probe (:func:`cutlass_layout.subjects.probe.render` with
    ``shown``) names each number in an incomplete ``cl_show::Show<j, value...>`` in host
    code; nvcc (``-arch=sm_XXXa``, the front end that computes the host pass's ``sizeof``
    and ``offsetof``) reports each as ``error: incomplete type "cl_show::Show<jL, ...>" is
    not allowed`` and stops there: no device pass, no host compile, no link, no run (about a
    tenth of building and running the same probe; the same numbers, checked against a built
    probe in tests/test_nvcc.py). With ``run`` the probe is built (host and device pass) and
    run instead, for the numbers only a run computes (a direct convolution's
    ``Params::get_smem_size()``).

    Returns ``(sizes, fields)``: ``sizes[i] = (kernel, mainloop, epilogue, stages)`` (a
    missing part counts as 1, a missing stage count as 0) and ``fields[(i, alias, path)] =
    (offset, size)`` for each ``(alias, path)`` of ``paths[i]``, ``fields[(i, "Stages",
    "B"|"E")] = (N, 0)`` for a sparse mainloop's ``StagesB``/``StagesE``, ``fields[(i, "Size",
    "Storage")] = (N, 0)`` for a storage of no GEMM shape, and for a direct convolution
    ``fields[(i, "Launch", "expr")] = (N, 0)``, the probe's launch size (with ``run``, also
    ``(i, "Launch", "params")``: what the kernel's own ``Params`` computes;
    :func:`cutlass_layout.subjects.probe.checks`). Bytes. User types
    (:class:`~cutlass_layout.subjects.user_type.UserType`) bring their ``-I``/``-D`` flags; put types whose
    ``STAGES`` differ in separate calls (a header is read once per translation unit).

    Raises:
        BadInput: nvcc is not on PATH, or it failed on anything but the numbers (its error
            lines are in the message).
    """
    nvcc = nvcc or shutil.which("nvcc")
    if not nvcc:
        raise BadInput("verifying with nvcc needs nvcc, and it is not on PATH")
    work = Path(workdir or tempfile.mkdtemp(prefix="cutlass-layout-nvcc-"))
    extra = list(dict.fromkeys(f for s in subjects if isinstance(s, user_type.UserType) for f in s.extra_flags()))
    cmd = [nvcc, "-std=c++17", f"-arch={ARCHS[arch]}", "-w", *extra, f"-I{include_root}"]
    how = "built (host and device pass) and run" if run else "its front end's numbers: nothing compiled, linked or run"
    try:
        with step(f"nvcc on the probe of {len(subjects)} config(s) for {ARCHS[arch]} ({how})"):
            lines = (_built if run else _shown)(subjects, paths, work, cmd)
    finally:
        if workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    sizes, fields = {}, {}
    for line in lines:
        kind, i, *rest = line.split()
        if kind == "size":
            sizes[int(i)] = tuple(int(x) for x in rest)
        else:
            alias, path, off, size = rest
            fields[(int(i), alias, path)] = (int(off), int(size))
    return sizes, fields


def _shown(subjects, paths, work: Path, cmd: list[str]) -> list[str]:
    """The lines a built probe would print, from nvcc's front end (:func:`nvcc_numbers`)."""
    src = work / "probe.cu"
    src.write_text(probe.render(subjects, shown=True, offsets=paths))
    checks = probe.checks(subjects, paths)
    proc = subprocess.run(
        [*cmd, "-Xcudafe", f"--error_limit={len(checks) + 100}", "-c", str(src), "-o", str(work / "probe.o")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    text = proc.stdout + proc.stderr
    shown = {int(m[1]): [int(v) for v in re.findall(r"-?\d+", m[2])] for m in _SHOWN.finditer(text)}
    others = [ln.strip() for ln in text.splitlines() if re.search(r"\berror\b", ln) and probe.SHOW not in ln]
    if others or len(shown) != len(checks):
        tail = " | ".join(others)[:400] or text[-400:]
        raise BadInput(f"nvcc failed on the probe: {tail}")
    return [" ".join([tag, *map(str, shown[j][1:])]) for j, (tag, _, _) in enumerate(checks) if shown[j][0]]


def _built(subjects, paths, work: Path, cmd: list[str]) -> list[str]:
    """The lines the probe prints, built by nvcc (host and device pass) and run."""
    src = work / "probe.cu"
    src.write_text(probe.render(subjects, with_main=True, offsets=paths))
    exe = work / "probe"
    proc = subprocess.run([*cmd, str(src), "-o", str(exe)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = " | ".join(ln.strip() for ln in proc.stderr.splitlines() if "error" in ln)[:400]
        raise BadInput(f"nvcc failed on the probe: {tail or proc.stderr[-400:]}")
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()


#: One reported number: ``incomplete type "cl_show::Show<7L, 218112L, 5L>"`` (the values
#: printed as C++ literals, ``L``/``UL`` suffixed).
_SHOWN = re.compile(r'incomplete type "' + re.escape(probe.SHOW) + r'<(\d+)L((?:, *-?\d+U?L*)*)>"')


def verify_with_nvcc(
    subjects: list, reports: list[LayoutReport], include_root: Path, *, nvcc: str | None = None
) -> Verification:
    """Compare the engine's ``reports`` for ``subjects`` with what nvcc computes.

    Every struct size, stage count, and member offset and size that C++ can name is
    compared, and a direct convolution's launch size twice: with the probe's expression and
    with what the kernel's own ``Params::get_smem_size()`` returns. Configs that did not
    compile are left out. One nvcc run per arch.

    Raises:
        BadInput: nvcc missing or failing.
    """
    result = Verification()
    by_arch: dict[tuple, list[int]] = {}
    for i, (s, r) in enumerate(zip(subjects, reports)):
        if r.error is None:  # a user type's arch may come from its tag: the report has it
            unit = s.unit_key() if isinstance(s, user_type.UserType) else None
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
        # a direct convolution's Params::get_smem_size() is known only to a run
        run = any(reports[i].launch is not None for i in idxs)
        sizes, fields = nvcc_numbers([subjects[i] for i in idxs], include_root, arch, nvcc=nvcc, paths=paths, run=run)
        for k, i in enumerate(idxs):
            r = reports[i]
            got = sizes.get(k)
            ours = (
                r.kernel and r.kernel.size or 1,
                r.mainloop and r.mainloop.size or 1,
                r.epilogue and r.epilogue.size or 1,
                r.stages or 0,
            )
            result.sizes += 4
            if got != ours:
                result.mismatches.append(f"{subjects[i].label()}: sizes {ours} vs nvcc {got}")
            checks = []
            if r.storage is not None:
                checks.append((("Size", "Storage"), r.storage.size, "sizeof(SharedStorage)"))
            if r.launch is not None:
                checks += [
                    (("Launch", "expr"), r.launch.value, "launch size (expression)"),
                    (("Launch", "params"), r.launch.value, "launch size (Params::get_smem_size())"),
                ]
            for (alias, path), n, what in checks:
                result.sizes += 1
                theirs = fields.get((k, alias, path), (None,))[0]
                if theirs != n:
                    result.mismatches.append(f"{subjects[i].label()}: {what} {n} vs nvcc {theirs}")
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
