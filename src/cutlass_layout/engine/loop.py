"""The exact engine: configs in, clang's record layouts out.

``layouts(configs, cutlass=...)`` writes one probe translation unit for the configs of each
arch (and user header: :mod:`cutlass_layout.subjects.probe`), parses it with libclang and reads every
config's ``SharedStorage`` layouts, stage count, TMA transaction bytes and capacity
(:mod:`cutlass_layout.engine.numbers`). A translation
unit with any error gives no numbers: each error is tied to the config whose block asked
for the failing type, a config whose error is surely its own gets it, those that may have
had theirs hidden by an earlier failure of their kin are parsed apart, and the others are
parsed again without them (split in halves only where an error cannot be tied to a
config). So one config that does not compile does not take the others' numbers with it,
and each gets the error it gets alone. That loop is
:func:`lay_out` over a :class:`Batch`; the kernels an install builds go through the same
loop (:mod:`cutlass_layout.installs.kernels`), with the source's text before their blocks.

Every report of a :class:`~cutlass_layout.subjects.config.Config` is cached (a
cache kind ``layouts``, :data:`~cutlass_layout.core.cache.KINDS`) under :func:`report_key`:
the tree's content hash, the config's probe block as parsed, the clang flags (the include
root left out: the tree hash stands for it), the libclang version and a fingerprint of the
engine's own code (:meth:`cutlass_layout.core.cache.Kind.key`). An auto-stage config's block reads its
mainloop builder's stage budget in the same parse (:func:`cutlass_layout.subjects.budgets.budgeted`),
so there is one key per config, whichever command laid it out; a layout that also checked
the kernel body has a key of its own. ``layout``, ``sweep`` and ``diff`` all read and write
it, so a config laid out once is not parsed again. A
:class:`~cutlass_layout.subjects.user_type.UserType` is not cached: its header's own includes cannot be
tracked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import BadInput, DoesNotCompile
from ..cpp.clang import FOLLOW_UP_RE, ProbeUnit, clang_flags, clang_only, ensure_pch, libclang_version, msvc_flags
from ..model import BuilderBudget, CompileError, LayoutReport, Provenance, StructLayout, schema_verdict
from ..sources.cuda import CudaHeaders, find_cuda
from ..sources.trees import CutlassTree, resolve_cutlass
from ..subjects import archs, budgets, probe, user_type
from ..subjects.config import ARCHS, Config, config_from
from ..subjects.user_type import UserType
from ..core.cache import KINDS, discard
from ..core.progress import step
from .numbers import read_report


@dataclass
class Target:
    """A resolved CUTLASS tree plus the CUDA headers to parse it with."""

    tree: CutlassTree
    cuda: CudaHeaders
    #: use a cached precompiled header of the CUTLASS includes (``CUTLASS_LAYOUT_NO_PCH=1``
    #: turns it off)
    pch: bool = field(default_factory=lambda: not os.environ.get("CUTLASS_LAYOUT_NO_PCH"))

    _flags: dict = field(default_factory=dict, repr=False, compare=False)

    def flags(self, arch: str) -> list[str]:
        """The clang flags for ``arch`` (computed once per target and arch)."""
        if arch not in self._flags:
            self._flags[arch] = clang_flags(
                self.tree.include_root, self.cuda.path, self.cuda.cccl, ARCHS[arch], self.cuda.version
            )
        return list(self._flags[arch])

    def provenance(self, arch: str) -> Provenance:
        """The :class:`~cutlass_layout.model.Provenance` of a layout for ``arch`` on this
        target: the tree, its version, hash and origin, libclang's version, the CUDA root and
        how it was found, and :meth:`flags`."""
        return Provenance(
            cutlass_root=str(self.tree.include_root),
            cutlass_version=self.tree.version,
            tree_hash=self.tree.tree_hash,
            origin=self.tree.origin,
            libclang_version=libclang_version(),
            cuda_path=str(self.cuda.path),
            cuda_source=self.cuda.source,
            flags=self.flags(arch),
        )


def target(cutlass=None, cuda_path=None) -> Target:
    """Resolve ``cutlass`` (see :func:`cutlass_layout.sources.trees.resolve_cutlass`) and CUDA headers
    (see :func:`cutlass_layout.sources.cuda.find_cuda`). Raises :class:`BadInput` on either."""
    if isinstance(cutlass, Target):
        return cutlass
    return Target(tree=resolve_cutlass(cutlass), cuda=find_cuda(cuda_path))


def parse_arch(subject) -> str:
    """The arch whose clang flags parse ``subject`` (a user type whose arch comes from its
    tag is parsed as sm120: a host pass, whose layouts do not depend on it)."""
    return subject.parse_arch if isinstance(subject, UserType) else subject.arch


def _unit_key(subject) -> tuple:
    """Subjects with the same key share a translation unit: the arch, and for a user type
    its header, ``STAGES`` and flags (a header is read once per unit)."""
    if isinstance(subject, UserType):
        return (subject.parse_arch, subject.unit_key())
    return (subject.arch, None)


def subject_flags(subjects) -> list[str]:
    """The ``-I``/``-D`` flags the user types among ``subjects`` add to a parse, each once."""
    return list(dict.fromkeys(f for s in subjects if isinstance(s, UserType) for f in s.extra_flags()))


def probe_capacities(tgt: Target, subjects) -> tuple[str, ...]:
    """The capacity constants the tree defines, where a user type takes its arch from its tag."""
    if any(isinstance(s, UserType) and s.arch is None for s in subjects):
        return archs.defined_capacities(tgt.tree.include_root)
    return ()


def parse_probe(tgt: Target, configs: list, arch: str, text: str | None = None) -> ProbeUnit:
    """One parse of ``configs``' probe: ``text`` (:func:`lay_out`'s), or
    :func:`cutlass_layout.subjects.probe.render`'s."""
    if text is None:
        text = probe.render(configs, capacities=probe_capacities(tgt, configs))
    return parse_text(tgt, text, arch, subject_flags(configs), warm=any(isinstance(c, Config) for c in configs))


def parse_text(
    tgt: Target,
    text: str,
    arch: str,
    extra: list[str] | None = None,
    *,
    warm: bool = True,
    first_error: bool = False,
    msvc: bool = False,
    zc_cplusplus: bool = False,
) -> ProbeUnit:
    """Parse ``text`` with the cached precompiled header when there is one (``extra``: a user
    type's ``-I``/``-D`` flags, which the header is built with too; ``warm``: the header holds
    the family's warm-up configs, :func:`cutlass_layout.subjects.probe.pch_preambles`; user types alone
    take the includes only, cheaper to build for an arch no preset uses; ``first_error``: clang
    stops at the first error, :attr:`Batch.alone`'s parse).

    clang refuses a precompiled header when any file it was built from has a newer mtime
    (a reinstalled venv, a re-unpacked tree with the same content): then the header is
    built again, once, and failing that the probe is parsed without it.

    ``msvc``: parsed on the MSVC x64 host ABI (:func:`cutlass_layout.cpp.clang.msvc_flags`,
    ``zc_cplusplus`` as it takes it), with a precompiled header of its own.
    """
    flags = tgt.flags(arch) + list(extra or ())
    if msvc:
        flags = msvc_flags(flags, zc_cplusplus=zc_cplusplus)
    limit = ["-ferror-limit=1"] if first_error else []  # after clang_flags' own limit: this one holds
    if tgt.pch:
        for _attempt in range(2):
            preambles = probe.pch_preambles(arch) if warm else probe.pch_preambles(arch)[-1:]
            pch = ensure_pch(preambles, flags, tgt.tree.tree_hash, building=step)
            if pch is None:
                break
            try:
                unit = ProbeUnit(text, flags + ["-include-pch", str(pch)] + limit, tgt.tree.include_root)
            except BadInput:
                unit = None
            if unit is not None and not unit.pch_rejected():
                return unit
            discard(pch)  # stale: rebuild it
    return ProbeUnit(text, flags + limit, tgt.tree.include_root)


def _attribute(
    unit: ProbeUnit, ranges: list[tuple[int, int]], kins: list | None = None, lines: dict | None = None
) -> tuple[dict[int, CompileError], set[int]] | None:
    """Map each failing subject (index into ``ranges``, the first and last line of each
    subject's block) to its first error, and say which of those are surely the error the
    subject gets alone; ``None`` when some error cannot be tied to a subject.

    Each error is tied to the subject whose block asked for the failing type: the outermost
    "in instantiation of ..." note inside a block (:meth:`ProbeUnit.errors_with_probe_lines`).
    Whatever the error, a subject with one does not compile alone either: it asked for the
    failing type. But its first error here need not be its own first error: clang reports a
    failed instantiation once, so a subject that instantiates what an earlier one already
    failed on gets no error for it (a function template's failure is silent), or only a
    follow-up such as ``no type named 'X' in 'C'``, and its first error here is a later one.

    Sure are: the unit's first error (nothing failed before it); with ``kins`` (each
    subject's :attr:`Batch.kin`, ``None`` where unknown), a static_assert of a subject no
    earlier failing subject is kin to (kin share the instantiations that fail; CUTLASS
    4.7.0's SM120 library in units of 24, measured against each kernel parsed alone: every
    error sure by this rule is the kernel's own, and each of the 125 kernels whose kin
    failed before them showed another error than its own); a follow-up on a class template that failed on a
    static_assert (``no type named 'X' in 'C'``) becomes that static_assert and counts as one.
    Where a subject's kin is unknown, also any static_assert and an error identical (message,
    file, line) to another subject's first error. ``lines``, where given, gets the probe line
    each failing subject's first error was asked for from.
    """
    failed: dict[int, CompileError] = {}
    sure: set[int] = set()
    firsts: set[tuple] = set()
    current = None
    classes = None
    last = None
    for err, line in unit.errors_with_probe_lines():
        if line is not None:
            current = next((k for k, (a, b) in enumerate(ranges) if a <= line <= b), None)
            last = line
        if current is None:
            return None
        if current in failed:
            continue
        if lines is not None:
            lines[current] = last
        if err.kind != "static_assert":
            m = FOLLOW_UP_RE.match(err.message)
            if m:
                classes = unit.failed_classes() if classes is None else classes
                err = classes.get(m.group(1), err)
        kin = kins[current] if kins is not None else None
        key = (err.message, err.file, err.line)
        if not failed:
            sure.add(current)
        elif kin is not None:
            if err.kind == "static_assert" and all(kins[j] is not None and kins[j] != kin for j in failed):  # type: ignore[index]
                sure.add(current)
        elif err.kind == "static_assert" or key in firsts:
            sure.add(current)
        firsts.add(key)
        failed[current] = err
    return failed, sure


def spread(items: list[int], kin: Callable[[int], Any], size: int) -> list[list[int]]:
    """``items`` in groups of at most ``size`` where no two share a kin (``kin(item)``; an item
    of unknown kin, ``None``, in a group of its own), so that none can hide another's
    failure: as few groups as the largest kin allows, filled in turn."""
    groups: list[list[int]] = []
    kins: list[set] = []
    for i in items:
        k = kin(i)
        if k is None:
            groups.append([i])
            kins.append({None})
            continue
        g = next((j for j, ks in enumerate(kins) if None not in ks and k not in ks and len(groups[j]) < size), None)
        if g is None:
            groups.append([])
            kins.append(set())
            g = len(groups) - 1
        groups[g].append(i)
        kins[g].add(k)
    return groups


def _budget_errors(unit: ProbeUnit, ranges: list[tuple[int, int]], spans: dict[int, tuple[int, int]]) -> set[int]:
    """The subjects (indexes) whose first error lies in their builder-budget block (``spans``:
    its first and last line, per subject that has one): the layout itself may compile without
    it. A subject whose layout fails errs first in its own block (the budget comes after it)."""
    if not spans:
        return set()
    first: dict[int, int] = {}
    for _err, line in unit.errors_with_probe_lines():
        k = next((k for k, (a, b) in enumerate(ranges) if line is not None and a <= line <= b), None)
        if k is not None and line is not None:  # k: a line in a block
            first.setdefault(k, line)
    return {k for k, line in first.items() if k in spans and spans[k][0] <= line <= spans[k][1]}


def _kin(cfg) -> tuple | None:
    """What configs likely to share instantiations have in common: the arch, the kernel,
    the element types and the tile's K (the shared memory atoms and scale-factor layouts
    depend on these, not on M, N or the stage count)."""
    if not isinstance(cfg, Config):
        return None
    return (cfg.arch, cfg.kernel, cfg.a, cfg.b, cfg.mnk[2])


def check_kernel(tgt: Target, subject, arch: str) -> CompileError | None:
    """Instantiate the kernel's device entry point (``cutlass::device_kernel<GemmKernel>``) in
    a CUDA device pass with function bodies, so that asserts inside ``operator()`` (tile
    shape, TMA alignment) fire. Returns the first error that is not clang-only (see
    :func:`check_kernel_diagnostics`), or ``None`` when it compiles.

    Costs a full parse, function bodies and all, without the precompiled header (timings:
    docs/performance.md).
    """
    return check_kernel_diagnostics(tgt, subject, arch)[0]


def check_kernel_diagnostics(
    tgt: Target, subject, arch: str, kind: str | None = "kernel"
) -> tuple[CompileError | None, list[CompileError]]:
    """:func:`check_kernel`'s device pass: ``(first real error or None, clang-only errors)``.

    A clang-only error (:data:`cutlass_layout.cpp.clang.CLANG_ONLY`: clang rejects what
    nvcc's front end accepts) is not a reason to say "does not compile"; clang recovers from
    it (the name is taken as the type it names) and goes on checking the rest.
    """
    text = probe.render([subject], capacities=probe_capacities(tgt, [subject])) + probe.kernel_instantiation(0, kind)
    flags = [f for f in tgt.flags(arch) if f != "--cuda-host-only"] + ["--cuda-device-only"] + subject_flags([subject])
    with step(
        "instantiating the kernel's device entry point with libclang (device pass with function bodies, about 20-80 s)"
    ):
        unit = ProbeUnit(text, flags, tgt.tree.include_root, skip_bodies=False)
    errors = unit.errors()
    real = [e for e in errors if clang_only(e) is None]
    return (real[0] if real else None), [e for e in errors if clang_only(e) is not None]


#: The cache kind of the reports (its version is bumped when what a cached report holds
#: changes in a way the code fingerprint misses).
LAYOUTS = KINDS["layouts"]
#: The code whose every change invalidates the cached reports (the ``layouts`` row's).
ENGINE_SOURCES = LAYOUTS.code


def report_key(tgt: Target, cfg, *, checked: str = "types") -> str | None:
    """The results-cache key of ``cfg``'s report on ``tgt`` (``None`` for a user type): the
    config's probe block as the engine parses it (with its builder budget, where it has one),
    the clang flags (the include root left out: the tree hash stands for it), the tree hash,
    the libclang version and :data:`ENGINE_SOURCES` (:data:`LAYOUTS`' key).

    ``checked`` is ``types`` or ``kernel`` (:func:`check_kernel` ran too).
    """
    if not isinstance(cfg, Config):
        return None
    text = probe.preamble() + probe.block(cfg, 0, budget=True)
    if checked == "kernel":
        text += probe.kernel_instantiation(0)
    root = str(tgt.tree.include_root)
    flags = [f.replace(root, "<cutlass>") for f in tgt.flags(cfg.arch)]
    return LAYOUTS.key(subject=[checked, text, flags], target=[tgt.tree.tree_hash, libclang_version()])


def _count(value, what: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{what} {value!r} is not a byte count")
    return value


#: The key lists (in order) of members found to be :class:`~cutlass_layout.model.FieldLayout`'s.
_MEMBER_SHAPES: set[tuple] = set()


def _check_struct(s: StructLayout) -> None:
    """Every member of ``s`` lies inside its parent, sizes and offsets are byte counts. The
    members of a struct read back lazily (:meth:`StructLayout.from_dict`) are checked as the
    plain dicts they still are, keys too (as :meth:`FieldLayout.from_dict` will check them),
    so that making them later cannot fail."""
    from ..model import FIELD_KEYS, FIELD_REQUIRED

    _count(s.size, "size")
    _count(s.align, "align")
    _count(s.tail_padding, "tail padding")

    def inside(members, lo: int, hi: int) -> None:
        for f in members:
            start, size = _count(f.offset, "offset"), _count(f.size, "size")
            if start < lo or start + size > hi:
                raise ValueError(f"{f.name} [{start}, {start + size}) is outside [{lo}, {hi})")
            inside(f.fields, start, start + size)

    def inside_plain(members, lo: int, hi: int) -> None:
        # a whole install's warm audit checks about 300,000 members here: one loop over a
        # stack, each check written out (the same checks as inside() and _count())
        stack = [(members, lo, hi)]
        good = _MEMBER_SHAPES  # the key lists found good (a few shapes for 300,000 members)
        while stack:
            members, lo, hi = stack.pop()
            if type(members) is not list:
                raise TypeError("members are not a list")
            for f in members:
                if type(f) is not dict:
                    raise TypeError("a member is not an object")
                shape = tuple(f)
                if shape not in good:
                    keys = f.keys()
                    if not (keys <= FIELD_KEYS and FIELD_REQUIRED <= keys):
                        raise TypeError(f"a member with keys {sorted(keys)}")
                    good.add(shape)
                start, size = f["offset"], f["size"]
                if type(start) is not int or type(size) is not int or size < 0 or start < lo or start + size > hi:
                    raise ValueError(f"{f['name']} [{start!r}, +{size!r}) is not a byte range inside [{lo}, {hi})")
                sub = f.get("fields")
                if sub:
                    stack.append((sub, start, start + size))

    plain_members = s.__dict__.get("_members")
    if plain_members is not None:
        inside_plain(plain_members, 0, s.size)
    else:
        inside(s.fields, 0, s.size)


def load_report(payload) -> LayoutReport:
    """A cached report's :meth:`~cutlass_layout.model.LayoutReport.to_dict` object, back as a
    :class:`LayoutReport`, if it is whole: the verdict, headroom and TMA values stored beside
    the sizes agree with them, every struct's members lie inside it, and a report with an
    error has no numbers. Anything else raises
    (``KeyError``, ``TypeError``, ``ValueError``, ``AttributeError``): a miss for the cache.
    """
    rep = LayoutReport.from_dict(payload, lazy=True)  # members made when read (most never are)
    tma = payload["tma_transaction_bytes"]
    derived = {
        "verdict": schema_verdict(rep.verdict),
        "fits": rep.fits,
        "headroom_bytes": rep.headroom_bytes,
        "exact_fit": rep.exact_fit,
        "capacity_bytes": rep.capacity_bytes,
    }
    if any(payload[k] != v for k, v in derived.items()) or (
        tma is not None and any(tma[k] != (c["value"] if c else None) for k, c in tma["expressions"].items())
    ):
        raise ValueError("the stored numbers disagree with each other")
    structs = [s for s in (rep.kernel, rep.mainloop, rep.epilogue, rep.storage) if s is not None]
    if rep.error is not None and (structs or rep.stages is not None):
        raise ValueError("a report with an error and numbers")
    for s in structs:
        _check_struct(s)
    if rep.error is None and rep.capacity is not None and _count(rep.capacity.value, "capacity") == 0:
        raise ValueError("capacity 0")
    if rep.stages is not None and _count(rep.stages, "stages") == 0:
        raise ValueError("0 stages")
    return rep


def cached(configs: list, cutlass=None, *, checked: str = "types") -> list[LayoutReport | None]:
    """The cached report of each config (``None`` where there is none), with this target's
    provenance. Starts no libclang."""
    tgt = target(cutlass)
    out: list[LayoutReport | None] = []
    prov: dict[str, Provenance] = {}
    for cfg in configs:
        k = report_key(tgt, cfg, checked=checked)
        rep = LAYOUTS.get(k, load_report) if k else None  # an entry not whole is a miss
        if rep is not None:  # the tree may sit elsewhere, or be named otherwise, now
            if cfg.arch not in prov:
                prov[cfg.arch] = tgt.provenance(cfg.arch)
            rep = replace(rep, config=cfg.to_dict(), provenance=prov[cfg.arch])
        out.append(rep)
    return out


def store_report(tgt: Target, cfg, rep: LayoutReport, *, checked: str = "types") -> None:
    """Cache ``rep``, the layout of ``cfg`` on ``tgt`` (computed here or elsewhere: a Dask
    worker, whose own cache this process does not read), under :func:`report_key`."""
    k = report_key(tgt, cfg, checked=checked)
    if k is not None:
        LAYOUTS.put(k, rep.to_dict())


def subject(value=None, **flags):
    """What to lay out: a :class:`~cutlass_layout.subjects.user_type.UserType` as is, else
    :func:`cutlass_layout.subjects.config.config_from` (a ``Config``, a tile string such as
    ``"128x256x128"``, a dict of config values, or nothing, plus keyword config values as the
    command line takes them). Raises :class:`BadInput`."""
    if isinstance(value, UserType):
        if flags:
            raise BadInput("a user type takes no config values")
        return value
    return config_from(value, **flags)


def layouts(
    configs: list, cutlass=None, *, cuda_path=None, check_kernel_body: bool = False, use_cache: bool = True
) -> list[LayoutReport]:
    """Lay out several configs with as few libclang parses as possible.

    Args:
        configs: :class:`~cutlass_layout.subjects.config.Config` or
            :class:`~cutlass_layout.subjects.user_type.UserType` items, tile strings (``"128x256x128"``)
            or dicts of config values (see :func:`subject`); any mix of archs (one
            translation unit per arch).
        cutlass: anything :func:`cutlass_layout.sources.trees.resolve_cutlass` accepts, or a
            :class:`Target` from :func:`target` to reuse.
        cuda_path: see :func:`cutlass_layout.sources.cuda.find_cuda`.
        check_kernel_body: also instantiate each kernel's device entry point
            (:func:`check_kernel`); a config whose body does not compile gets ``error`` and
            no numbers; the others say ``checked == "kernel"``.
        use_cache: read reports cached earlier (see the module docstring). Fresh reports
            are stored either way.

    Returns:
        One :class:`LayoutReport` per config, in order. A config that does not compile has
        ``error`` set and no numbers.

    Raises:
        BadInput: the CUTLASS source or CUDA headers are unusable.
    """
    if isinstance(configs, (str, Config, UserType, dict)):
        raise BadInput("layouts() takes a list of configs; layout() takes one")
    configs = [subject(c) for c in configs]
    tgt = target(cutlass, cuda_path)
    checked = "kernel" if check_kernel_body else "types"
    out: list[LayoutReport | None] = cached(configs, tgt, checked=checked) if use_cache else [None] * len(configs)
    todo = [i for i, rep in enumerate(out) if rep is None]
    if not todo:
        return out  # type: ignore[return-value]  # every one cached: no None left
    if check_kernel_body:
        reps = layouts([configs[i] for i in todo], tgt, use_cache=use_cache)
        for i, rep in zip(todo, reps):
            out[i] = checked_rep = _check_kernel_body(tgt, configs[i], rep)
            store_report(tgt, configs[i], checked_rep, checked=checked)
    else:

        def done(k: int, rep: LayoutReport) -> None:  # an interrupted run keeps what it computed
            store_report(tgt, configs[todo[k]], rep)

        for i, rep in zip(todo, _compute(tgt, [configs[i] for i in todo], done)):
            out[i] = rep
    return out  # type: ignore[return-value]  # each None filled in above


def _check_stages(subject, rep: LayoutReport) -> None:
    """A user type laid out with ``STAGES=N`` must have N stages: a header that sets its stage
    count itself would otherwise answer for another stage count than asked.

    Raises:
        BadInput: it has another stage count.
    """
    if (
        isinstance(subject, UserType)
        and subject.stages is not None
        and rep.error is None
        and rep.stages is not None
        and rep.stages != subject.stages
    ):
        raise BadInput(
            f"{user_type.STAGES_MACRO}={subject.stages} gave {subject.type} "
            f"{rep.stages} stages: {subject.header.name} does not take its stage count "
            f"from {user_type.STAGES_MACRO} (write #ifndef {user_type.STAGES_MACRO} / #define "
            f"{user_type.STAGES_MACRO} {rep.stages} / #endif and pass {user_type.STAGES_MACRO} on)"
        )


def _check_kernel_body(tgt: Target, cfg, rep: LayoutReport) -> LayoutReport:
    """``rep`` (a types-only report of ``cfg``) after :func:`check_kernel`: a new report that
    says ``checked == "kernel"``, with the pass's clang-only diagnostics; where the body does
    not compile, its error and no kernel, mainloop, epilogue, stages, capacity or TMA bytes."""
    if rep.error is not None:
        return replace(rep, checked="kernel")
    if rep.kernel is None:
        raise BadInput("checking the kernel body needs a kernel type (GemmUniversal), not a collective")
    arch = rep.config.get("arch") or parse_arch(cfg)  # a user type's, found from its tag
    err, only = check_kernel_diagnostics(tgt, cfg, arch, kind=rep.subject_kind)
    if err is None:
        return replace(rep, checked="kernel", clang_only=only)
    return replace(
        rep,
        checked="kernel",
        clang_only=only,
        kernel=None,
        mainloop=None,
        epilogue=None,
        stages=None,
        capacity=None,
        tma_transaction_bytes=None,
        tma_check=None,
        error=err,
    )


@dataclass
class Batch:
    """How subjects that share a translation unit are laid out: what comes before their
    probe blocks, how the unit is parsed, each subject's block, and how a report is read.

    Attributes:
        head: the text before the blocks (the probe's includes and helpers, or a source).
        parse: ``parse(text, subjects) -> ProbeUnit`` (the group's subjects); may raise
            :class:`BadInput`.
        block: ``block(subject, index, budget) -> (block, budget block or "")``: the subject's
            declarations in ``namespace cl_probe_<index>`` (:mod:`cutlass_layout.subjects.probe`).
        read: ``read(unit, subject, index) -> LayoutReport`` of an error-free unit.
        failed: ``failed(subject, error) -> LayoutReport`` for a subject that does not compile.
        where: names the tree in the error for a missing include.
        kin: ``kin(subject)``: what subjects likely to share the instantiations that fail have
            in common (hashable), or ``None`` where unknown (:func:`_attribute`); default
            :func:`_kin`.
        twin: ``twin(subject) -> (key, lines)`` or ``None``: subjects of one key begin their
            blocks with the same declarations, ``lines`` lines of them (the same instantiations:
            a twin's first error asked for from those lines is a subject's own first error,
            found without parsing it); a subject that looks clean beside a failing twin is
            parsed apart, as one whose failure may have gone unreported (any other is parsed
            again with the clean ones, where a failure would show).
        alone: ``alone(text, [subject]) -> ProbeUnit``: a parse of one subject's unit that may
            stop at its first error (a subject's error alone is its first); ``None``: ``parse``.
    """

    # a subject (Any): whatever the batch's own functions take (a config, a fix's candidate)
    head: str
    parse: Callable[[str, list], ProbeUnit]
    block: Callable[[Any, int, bool], tuple[str, str]]
    read: Callable[[ProbeUnit, Any, int], LayoutReport]
    failed: Callable[[Any, CompileError], LayoutReport]
    where: str = ""
    kin: Callable[[Any], Any] | None = None
    twin: Callable[[Any], Any] | None = None
    alone: Callable[[str, list], ProbeUnit] | None = None


#: Subjects in one of :func:`lay_out`'s units of kin apart, at most (each that fails brings a
#: few dozen follow-up errors, and clang stops at ``-ferror-limit``)
SPREAD = 12


def lay_out(batch: Batch, subjects: list, done=None) -> list[LayoutReport]:
    """The one layout loop (:func:`lay_out_deferring`): every subject's report."""
    return lay_out_deferring(batch, subjects, done, defer=False)  # type: ignore[return-value]  # none deferred


def lay_out_deferring(batch: Batch, subjects: list, done=None, *, defer: bool = True) -> list[LayoutReport | None]:
    """The one layout loop: ``subjects`` laid out in as few parses of ``batch`` as the errors
    allow; ``done(i, report)`` is called for each as soon as its parse gives it.

    All subjects go into one translation unit (the head, then one block each). A unit
    without errors gives every subject's numbers. Otherwise each error is tied to the
    subject whose block asked for the failing type (:func:`_attribute`), and a subject whose
    error is surely its own gets it there. The others that fail, and those that look clean
    but are kin (:attr:`Batch.kin`; :attr:`Batch.twin` where given) to one that failed
    (clang reports a failed instantiation once: theirs may have gone unreported), are parsed
    again in units of no two kin (:func:`spread`), where an earlier failure cannot hide
    theirs, or, where the batch has :attr:`Batch.alone`, each alone as far as its first error,
    unless a twin's first error came from the lines they share; the ones left, which look
    clean, are parsed again all together once the rest is settled, since numbers only ever
    come from a unit without errors. An error tied to no subject splits the group in halves.
    An error inside a subject's builder-budget block lays it out again without the budget.
    ``defer``: those left are not parsed again here (``None`` in the list): the caller lays
    them out together with those of its other batches.

    Raises:
        BadInput: an include is missing (an incomplete tree or header, no subject's fault),
            or ``batch.parse`` raised it.
    """
    out: list[LayoutReport | None] = [None] * len(subjects)
    kin_of = batch.kin or _kin

    def give(i: int, rep: LayoutReport) -> None:
        out[i] = rep
        if done is not None:
            done(i, rep)

    no_budget: set[int] = set()  # subjects whose budget block does not compile: laid out without
    pending = [list(range(len(subjects)))] if subjects else []
    clean: list[int] = []  # looked clean in a unit with errors: parsed again together, last
    apart: set[int] = set()  # parsed alone, as far as their first error (Batch.alone)
    twin_of = batch.twin or (lambda _s: None)
    twins_all = [twin_of(x) for x in subjects]
    by_twin: dict = {}  # twin key -> the first error its leading declarations give

    def settle(i: int, err: CompileError, line: int | None, start: int) -> None:
        """Give subject ``i`` its own error (``line``: the probe line it was asked for from,
        ``start``: the block's first line), and remember it for its twins where those lines
        are the ones all twins share."""
        give(i, batch.failed(subjects[i], err))
        t = twins_all[i]
        if t is not None and line is not None and line - start < t[1]:
            by_twin.setdefault(t[0], err)

    while pending or clean:
        if not pending:
            if defer:
                break
            pending, clean = [clean], []
        group = pending.pop()
        if len(group) == 1 and group[0] in apart:
            t = twins_all[group[0]]
            if t is not None and t[0] in by_twin:  # its twin's first error, in the same lines
                give(group[0], batch.failed(subjects[group[0]], by_twin[t[0]]))
                continue
        text, ranges, spans = [batch.head], [], {}
        line = 1 + batch.head.count("\n")
        for k, i in enumerate(group):
            body, budget = batch.block(subjects[i], k, i not in no_budget)
            n_body, n_budget = body.count("\n"), budget.count("\n")
            ranges.append((line, line + n_body + n_budget - 1))
            if n_budget:
                spans[k] = (line + n_body, line + n_body + n_budget - 1)
            line += n_body + n_budget
            text += [body, budget]
        parse = batch.alone if batch.alone is not None and len(group) == 1 and group[0] in apart else batch.parse
        unit = parse("".join(text), [subjects[i] for i in group])
        errors = unit.errors()
        missing = next((e for e in errors if e.message.endswith("file not found")), None)
        if missing is not None:  # an incomplete tree (or header), not a subject's problem
            raise BadInput(
                f"{missing.message} (included from {missing.file}:{missing.line}"
                f"{'; ' + batch.where if batch.where else ''})"
            )
        broken = _budget_errors(unit, ranges, spans) if errors else set()
        if broken:  # the budget's own error, not the layout's: again without those budgets
            no_budget.update(group[k] for k in broken)
            pending.append(group)
            continue
        if not errors:
            for k, i in enumerate(group):
                give(i, batch.read(unit, subjects[i], k))
            continue
        kins = [kin_of(subjects[i]) for i in group]
        lines: dict[int, int | None] = {0: unit.errors_with_probe_lines()[0][1]}
        tied = _attribute(unit, ranges, kins, lines) if len(group) > 1 else ({0: errors[0]}, {0})
        if tied is None:  # cannot tell which subject broke: split and retry
            half = len(group) // 2
            pending += [group[:half], group[half:]]
            continue
        failed, sure = tied
        for k, err in failed.items():
            if k in sure:
                settle(group[k], err, lines.get(k), ranges[k][0])
        # the others that failed, and those kin to one that failed, apart from their kin;
        # those that look clean (numbers only ever come from a unit without errors) later
        twins = kins if batch.twin is None else [(twins_all[i] or (None,))[0] for i in group]
        kin = {twins[k] for k in failed} - {None}
        again = [
            i for k, i in enumerate(group) if (k in failed and k not in sure) or (k not in failed and twins[k] in kin)
        ]
        if batch.alone is None:
            pending += spread(again, lambda i: kin_of(subjects[i]), SPREAD)[::-1]
        else:
            pending += [[i] for i in again[::-1]]
            apart.update(again)
        clean += [i for k, i in enumerate(group) if k not in failed and twins[k] not in kin]
    return out


def probe_batch(tgt: Target, subjects: list, arch: str) -> Batch:
    """The :class:`Batch` of configs and user types of one arch (and, for user types, one
    header: :func:`_unit_key`): :func:`cutlass_layout.subjects.probe.render`'s text, parsed with the
    tree's precompiled header."""
    capacities = probe_capacities(tgt, subjects)
    prov = tgt.provenance(arch)

    def block(subject, index: int, budget: bool) -> tuple[str, str]:
        body = probe.block(subject, index, capacities, budget=False)
        return body, (budgets.budget_block(subject, index) if budget and budgets.budgeted(subject) else "")

    def read(unit: ProbeUnit, subject, index: int) -> LayoutReport:
        rep = read_report(unit, subject, index, prov)
        _check_stages(subject, rep)
        return rep

    return Batch(
        head=probe.render([]),
        block=block,
        read=read,
        parse=lambda text, members: parse_probe(tgt, members, arch, text),
        failed=lambda subject, err: LayoutReport(config=subject.to_dict(), provenance=prov, error=err),
        where=f"CUTLASS tree {tgt.tree.include_root}",
    )


def text_batch(
    tgt: Target,
    arch: str,
    block: Callable[[Any, int], str],
    *,
    head: str = "",
    extra: list[str] | None = None,
    where: str = "",
    kin: Callable[[Any], Any] | None = None,
    twin: Callable[[Any], Any] | None = None,
) -> Batch:
    """The :class:`Batch` of subjects that bring their own C++ (a kernel library's emitted
    instances, :mod:`cutlass_layout.installs.kernel_library`): :func:`cutlass_layout.subjects.probe.render`'s
    includes and helpers, then ``head``; ``block(subject, index)`` is the subject's text in
    ``namespace cl_probe_<index>``, ending with a :func:`cutlass_layout.subjects.aliases.subject_block`;
    parsed with the tree's precompiled header for ``arch`` (``extra``: more ``-I`` flags, the
    header built with them too); a subject's report config is its ``to_dict()``; ``kin``,
    ``twin``: :attr:`Batch.kin`, :attr:`Batch.twin`."""
    prov = tgt.provenance(arch)
    return Batch(
        head=probe.render([]) + head,
        parse=lambda text, _members: parse_text(tgt, text, arch, extra),
        alone=lambda text, _members: parse_text(tgt, text, arch, extra, warm=False, first_error=True),
        block=lambda subject, index, _budget: (block(subject, index), ""),
        read=lambda unit, subject, index: read_report(unit, subject, index, prov),
        failed=lambda subject, err: LayoutReport(config=subject.to_dict(), provenance=prov, error=err),
        where=where or f"CUTLASS tree {tgt.tree.include_root}",
        kin=kin,
        twin=twin,
    )


def _compute(tgt: Target, configs: list, done=None) -> list[LayoutReport]:
    """Types-only reports of ``configs``, parsed (see the module docstring): one
    :func:`lay_out` per arch (and user header); ``done(i, report)`` is called for each as
    soon as its parse gives it (to store it).

    Raises:
        BadInput: a built-in config on a tree without ``cute/tensor.hpp`` (CUTLASS 2.x).
    """
    if any(isinstance(c, Config) for c in configs) and not (tgt.tree.include_root / "cute" / "tensor.hpp").is_file():
        raise BadInput(
            f"CUTLASS {tgt.tree.version} at {tgt.tree.include_root} has no "
            "cute/tensor.hpp (a CUTLASS 2.x tree, or an incomplete one): the built-in "
            "configs are 3.x kernels; lay out a 2.x kernel as a user type (a header "
            "and its type name)"
        )
    out: list[LayoutReport | None] = [None] * len(configs)
    by_unit: dict[tuple, list[int]] = {}
    for i, c in enumerate(configs):
        by_unit.setdefault(_unit_key(c), []).append(i)
    for (arch, _), idxs in by_unit.items():

        def give(k: int, rep: LayoutReport, idxs=idxs) -> None:
            out[idxs[k]] = rep
            if done is not None:
                done(idxs[k], rep)

        members = [configs[i] for i in idxs]
        what = "1 config" if len(members) == 1 else f"{len(members)} configs"
        with step(f"laying out {what} for {arch} with libclang"):
            lay_out(probe_batch(tgt, members, arch), members, give)
    return out  # type: ignore[return-value]  # each None filled in above


def layout(
    config=None,
    cutlass=None,
    *,
    cuda_path=None,
    raise_on_error: bool = False,
    check_kernel_body: bool = False,
    budget: bool = True,
    use_cache: bool = True,
    **flags,
) -> LayoutReport:
    """The exact SharedStorage layout of one kernel config.

    Mirrors what ``sizeof(GemmKernel::SharedStorage)`` gives for
    ``cutlass::gemm::kernel::GemmUniversal`` built from CUTLASS's collective builders
    (``cutlass/gemm/collective/builders/sm120_blockscaled_mma_builder.inl`` and
    ``sm90_gmma_builder.inl``; ``cutlass/epilogue/collective/builders/sm120_builder.inl`` and
    ``sm90_builder.inl``), or for the user type given (for a direct convolution also the
    size it launches with, ``launch``: :func:`cutlass_layout.engine.numbers._launch`).

    Args:
        config: a :class:`~cutlass_layout.subjects.config.Config`, a
            :class:`~cutlass_layout.subjects.user_type.UserType`, or a tile as the command line takes it
            (``"128x256x128"``, ``"128x128x64B"``); default: SM120 grouped NVFP4
            128x128x128, flashinfer flavour, stages auto.
        cutlass: the CUTLASS source (see :func:`cutlass_layout.sources.trees.resolve_cutlass`);
            default: the one installed in this environment, else nvidia-cutlass 4.2.0.0.
        cuda_path: CUDA root, ``"pip"``, or ``None`` to search.
        raise_on_error: raise :class:`DoesNotCompile` instead of returning a report with
            ``error`` set.
        check_kernel_body: see :func:`layouts`.
        budget: also read the mainloop builder's stage budget (``builder_budget``) of an
            auto-stage config, from the same parse (as the command line does by default).
        use_cache: see :func:`layouts`.
        flags: the other config values, as the ``layout`` command's flags take them
            (``preset="trtllm-moe"``, ``kernel="dense"``, ``a="mxfp8"``, ``stages=3``, ...;
            see :func:`cutlass_layout.subjects.config.config_from_flags`).

    Returns:
        A :class:`~cutlass_layout.model.LayoutReport` (bytes throughout).

    Raises:
        BadInput: unusable source, CUDA headers or config; a user type whose launch size is
            computed at run time (:func:`cutlass_layout.engine.numbers._launch`).
        DoesNotCompile: only with ``raise_on_error``.
    """
    config = subject(config, **flags)
    tgt = target(cutlass, cuda_path)
    if budget and isinstance(config, UserType) and not check_kernel_body:
        rep = _user_layout_and_budget(config, tgt)
    else:
        rep = layouts([config], tgt, check_kernel_body=check_kernel_body, use_cache=use_cache)[0]
        if not budget:
            rep = replace(rep, builder_budget=None)
    if raise_on_error and rep.error is not None:
        raise DoesNotCompile(rep.error)
    return rep


def _user_layout_and_budget(user: UserType, tgt: Target) -> LayoutReport:
    """A user type's report with the budget of the mainloop builder its header names, where
    one is found (:func:`user_budget`); one parse for the layout, one for the budget."""
    unit = parse_probe(tgt, [user], user.parse_arch)
    if unit.errors():  # the plain path ties the error to the type (or raises BadInput)
        return layouts([user], tgt)[0]
    rep = read_report(unit, user, 0, tgt.provenance(user.parse_arch))
    _check_stages(user, rep)
    if rep.error is None:
        rep = replace(rep, builder_budget=user_budget(tgt, user, rep, unit))
    return rep


def builder_candidates(unit: ProbeUnit, header: Path) -> list[tuple[tuple[str, ...], str]]:
    """The mainloop ``CollectiveBuilder``s a user's header names at namespace scope, as
    ``(namespaces, builder)``: an alias of a builder specialization (by its qualified name),
    or an alias written ``typename ...gemm::collective::CollectiveBuilder<...>::CollectiveOp``
    (the builder as written, valid in the alias's namespaces)."""
    from ..cpp.cursors import aliased_declaration, file_aliases, written_type

    out: list[tuple[tuple[str, ...], str]] = []
    for ns, c in file_aliases(unit.tu.cursor, header):
        if aliased_declaration(c)[:3] == ["CollectiveBuilder", "collective", "gemm"]:
            out.append((ns, "::" + "::".join(ns + (c.spelling,))))
            continue
        m = _BUILDER_OP_RE.match(written_type(c))
        if m and "epilogue" not in m.group(1):
            out.append((ns, m.group(1)))
    return out


_BUILDER_OP_RE = re.compile(r"^(?:typename\s+)?(.*\bCollectiveBuilder\s*<.*>)\s*::\s*CollectiveOp$", re.S)


def user_budget(tgt: Target, user: UserType, rep: LayoutReport, unit: ProbeUnit) -> BuilderBudget | None:
    """The budget of the mainloop builder that built ``user``'s mainloop (``rep``: its report;
    ``unit``: the parse it came from), as :func:`builder_budget` reads a preset's: found among
    :func:`builder_candidates` by ``std::is_same`` of its ``CollectiveOp`` with the mainloop.
    ``None`` where the header names no such builder, the builder chose no stage count of its
    own (``StageCount<N>``), or the family's stage function is not read
    (:func:`cutlass_layout.subjects.budgets.budget_family`: SM90 and SM120 block-scaled builders)."""
    arch = rep.config.get("arch") or user.arch
    family = archs.ARCHS[arch].family if arch in archs.ARCHS else None
    if family not in budgets.BUDGET_REDUCED or rep.mainloop is None:
        return None
    cands = builder_candidates(unit, user.header)
    if not cands:
        return None
    text = probe.render([user], capacities=probe_capacities(tgt, [user])) + budgets.user_budget_block(family, cands)
    bunit = parse_text(tgt, text, user.parse_arch, subject_flags([user]), warm=False)
    if bunit.errors():
        return None
    for j in range(len(cands)):
        names = bunit.aliases(f"{budgets.BUDGET_NAMESPACE}{j}")
        if ProbeUnit.int_alias(names["BudgetMatch"]) != 2:
            continue
        stages = ProbeUnit.int_alias(names["BudgetStages"]) - 1
        carveout = ProbeUnit.int_alias(names["BudgetCarveout"]) - 2
        if stages <= 0 or carveout < 0:  # forwards to another builder, or StageCount<N>
            return None
        reduced = ProbeUnit.int_alias(names["BudgetReducedCapacity"]) - 1
        capacity = (
            bunit.static_member(names["MainloopBuilder"], budgets.BUDGET_REDUCED[family], reduced)
            if reduced > 0
            else rep.capacity
        )
        assert capacity is not None  # rep: a laid-out mainloop, with its capacity
        return BuilderBudget(
            capacity=capacity,
            carveout_bytes=carveout,
            stage_bytes=ProbeUnit.int_alias(names["BudgetStageBytes1000"]) // 1000,
            stages=stages,
        )
    return None


__all__ = [
    "Batch",
    "Target",
    "cached",
    "lay_out",
    "lay_out_deferring",
    "layout",
    "layouts",
    "load_report",
    "parse_text",
    "probe_batch",
    "probe_capacities",
    "report_key",
    "subject",
    "subject_flags",
    "target",
    "text_batch",
]
