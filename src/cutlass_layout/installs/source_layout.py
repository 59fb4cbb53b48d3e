"""Lay out the kernels a real source file instantiates: the install's own code, not a probe.

An install's kernels are declared in its own sources, often where no name reaches them: the
TensorRT-LLM MoE launchers (``moe_gemm_tma_ws_launcher.inl``) declare the whole type chain
as local typedefs inside macro-generated function bodies, flashinfer's dense GEMMs inside
macro-generated structs, its groupwise GEMMs in function templates. :func:`lay_out_source`
reads them with the install's flags and a precompiled header of the source's leading
``#include`` lines (built with function bodies skipped, so the headers' templates cost no
body instantiation):

0. **prelude** (:mod:`cutlass_layout.installs.preludes`): the source parsed without bodies:
   the launcher macros it expands and the function templates it instantiates explicitly;
   :mod:`cutlass_layout.cpp.text` cuts each macro down after its last kernel alias, with a
   probe block after each alias (:func:`cutlass_layout.subjects.aliases.subject_block`), and
   re-hosts each function template as a class template (one that only forwards to another
   through the one it calls). The result is an ``-include`` file of the next parses.
1. **find** (and lay out; :func:`cutlass_layout.installs.kernels.find_kernels`): the source
   parsed *with* bodies: every type alias in it (function bodies, structs, namespaces)
   naming a ``cutlass::gemm::kernel::GemmUniversal<...>`` (or a kernel wrapping one) is a
   kernel the source builds. Errors are tied to the function or struct they occur in (its
   extent, or the outermost instantiation note inside it); an error tied to none marks every
   kernel of the source. Where the unit has no error, the in-place probe blocks give each
   kernel's layout; a cut-down source with an error is parsed again as written (no probes),
   so an error is always the install's own.
2. **lay out** what has no in-place probe (re-hosted kernels, sources as written): the source
   without bodies, followed by one probe block per kernel that names it by its alias where
   namespace scope reaches it, else by its canonical spelling, through the engine's one
   layout loop (:func:`cutlass_layout.engine.loop.lay_out`): numbers only come from a parse
   without errors, and each error is tied to its block.

:func:`lay_out_sources` runs these passes once for several sources of one folder, flags and
includes, their texts one after another in one translation unit (what their kernels
instantiate alike is instantiated once); a unit with an error falls back to each source
alone.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.files import read_text
from ..errors import BadInput
from ..model import CompileError, LayoutReport, Provenance
from ..subjects import aliases
from ..subjects.archs import capacity_of  # the arch table's (one definition)
from .kernels import (
    CAPACITY,
    REHOSTED,
    FoundKernel,
    Source,
    find_kernels,
    kernel_arch,
    pch_preamble,
    segment,
    split_preamble,
)
from .preludes import (
    Prelude,
    instantiations_of,
    prelude,
    prelude_key,
    share_prelude,
    shared_prelude,
    source_instantiations,
)

if TYPE_CHECKING:
    from ..cpp.clang import ProbeUnit


@dataclass
class SourceLayout:
    """What :func:`lay_out_source` found in one source: each kernel with its report (a
    :class:`LayoutReport` whose ``error`` is set when it does not compile), and an error that
    kept the source from being read at all (then ``kernels`` is empty)."""

    kernels: list[tuple[FoundKernel, LayoutReport]] = field(default_factory=list)
    error: str | None = None
    #: the error is the source's own (it does not compile with these flags and headers), so
    #: the same inputs give it again and it may be cached; unreadable files and refused
    #: precompiled headers may not
    lasting: bool = False
    #: wall seconds of the two passes (``find``, ``lay_out``), and parses of pass 2
    seconds: dict = field(default_factory=dict)
    #: the launcher macros the source expands: those whose active definition declares a
    #: kernel alias (pass 0's :attr:`~cutlass_layout.installs.preludes.Prelude.origins`) and those a kernel was found in,
    #: sorted; None where the source was not read that far
    launcher_macros: list[str] | None = None


def _parse(source: Source, text: str, pch: Path | None, bodies: bool, include: Path | None = None):
    from ..cpp.clang import ProbeUnit

    flags = list(source.flags) + (["-include-pch", str(pch)] if pch else [])
    flags += ["-iquote", str(source.path.parent)]  # the source's quoted includes, from the prelude too
    flags += ["-include", str(include)] if include else []
    return ProbeUnit(text, flags, source.include_root, filename=str(source.path), skip_bodies=not bodies)


def lay_out_source(
    source: Source, provenance: Provenance, *, pch: Path | None = None, trim: bool = True
) -> SourceLayout:
    """Find and lay out every kernel ``source`` instantiates (the module docstring's passes).

    Args:
        source: the file and its flags.
        provenance: put in each report.
        pch: a precompiled header of :func:`~cutlass_layout.installs.kernels.pch_preamble` of the source's includes, built
            with :func:`~cutlass_layout.cpp.clang.ensure_pch` and the same flags
            (without it the includes are parsed in the source, bodies and all: much slower).
        trim: cut launcher macros after their kernel alias (:func:`~cutlass_layout.installs.preludes.prelude`); a cut-down
            source that does not compile is parsed again as written.

    Returns:
        A :class:`SourceLayout`; bytes throughout. Never raises for a source that does not
        compile (its kernels carry the error); a source that cannot be read or parsed at all
        gives ``SourceLayout(error=...)``.
    """

    try:
        original = read_text(source.path, what="source", limit=False)
    except BadInput as exc:
        return SourceLayout(error=str(exc))
    includes, text = split_preamble(original)
    return _lay_out_text(source, original, includes, original if pch is None else text, provenance, pch, trim)


def _lay_out_text(
    source: Source,
    original: str,
    includes: list[str],
    text: str,
    provenance: Provenance,
    pch: Path | None,
    trim: bool,
    segments: list[int] | None = None,
) -> SourceLayout:
    """:func:`lay_out_source` of a source's text (``original`` as written, ``text`` as parsed:
    its leading includes blanked where ``pch`` holds them); ``segments``: see
    :func:`~cutlass_layout.installs.kernels.find_kernels`."""
    t0 = time.perf_counter()
    # one call's tuple, unpacked at once: nothing else holds the unit once it is deleted
    failed, unit, pre, trimmed, probes = _parse_with_prelude(source, original, includes, text, pch, trim)
    if failed is not None:
        return failed
    if unit.pch_rejected():
        return SourceLayout(error="the precompiled header was refused")
    found, loose = find_kernels(unit, original, pre, probes, segments)
    launchers = sorted(set(pre.origins) | set(pre.expanded) | {k.macro[0] for k in found if k.macro})
    if not found and loose:  # nothing to lay out, and the source does not compile
        return SourceLayout(error=loose[0].one_line(), lasting=True, launcher_macros=launchers)
    out = SourceLayout(
        seconds={
            "find": round(time.perf_counter() - t0, 2),
            "parses": 0,
            "trimmed": trimmed,
            "rehosted": len(pre.hosted),
        },
        launcher_macros=launchers,
    )
    reports = _read_in_place(unit, found, probes, provenance)
    del unit
    t1 = time.perf_counter()
    try:
        _lay_out_rest(source, text, pch, pre, found, provenance, reports, out.seconds)
    except BadInput as exc:
        return SourceLayout(error=str(exc))
    for k in found:
        rep = _failed(provenance, k.error) if k.error is not None else reports[k.spelling]
        out.kernels.append((k, rep))
    out.seconds["lay_out"] = round(time.perf_counter() - t1, 2)
    return out


def _parse_with_prelude(
    source: Source, original: str, includes: list[str], text: str, pch: Path | None, trim: bool
) -> tuple:
    """Passes 0 and 1's parse: the prelude (shared by an earlier source with the same launcher
    calls, else read from a parse without bodies), then the source parsed with bodies after
    it; again as written (no cut-down launchers, no probes) where that parse has an error.

    ``(None, unit, prelude, trimmed, probes)``: ``probes`` the dict :func:`find_kernels` fills
    (None when parsed as written); ``(SourceLayout(error=...), None, None, None, None)`` for a
    missing header (lasting) or a cache that cannot be written."""
    capacity = capacity_of(source.arch)  # an SM103 build's kernels too are laid out in place
    probes: dict | None = {}
    try:
        key = prelude_key(source, original, pch, capacity)
        pre = shared_prelude(key)
        if pre is None:
            head = _parse(source, text, pch, bodies=False)
            first = next(iter(head.errors()), None)
            if first is not None and first.message.endswith("file not found"):
                # a missing header stops clang: parsing with bodies would give the same error
                included = first.file not in (None, head.rel(str(source.path)))
                return (
                    SourceLayout(error=first.one_line(), lasting=True, seconds={"missing_header": included}),
                    None,
                    None,
                    None,
                    None,
                )
            pre = prelude(head, original, capacity, instantiations=instantiations_of(source, original))
            del head
            share_prelude(key, pre)
        if pch is None:  # the includes are not in a header before the prelude: put them first
            pre.head = pch_preamble(includes)
        trimmed = trim and bool(pre.macros)
        unit = _parse(source, text, pch, bodies=True, include=pre.write(trimmed))
        if (trimmed or pre.rehost_probes) and unit.errors():
            # the cut-down launchers or the probes do not compile: the source as written
            trimmed = False
            unit = _parse(source, text, pch, bodies=True, include=pre.write(False, probes=False))
            probes = None
    except BadInput as exc:
        return SourceLayout(error=str(exc)), None, None, None, None
    return None, unit, pre, trimmed, probes


def _read_in_place(
    unit, found: list[FoundKernel], probes: dict | None, provenance: Provenance
) -> dict[str, LayoutReport]:
    """The reports of the kernels laid out in place (their probe blocks, in a unit without
    errors): no second parse. By spelling."""
    from ..engine.numbers import read_subject

    reports: dict[str, LayoutReport] = {}
    if probes and not unit.errors():
        for k in found:
            names = probes.get((k.owner, k.spelling)) or probes.get((REHOSTED, k.spelling))
            if names is not None and k.spelling not in reports:
                reports[k.spelling] = read_subject(unit, names, _Subject(k.spelling), provenance)
    return reports


def _lay_out_rest(
    source: Source,
    text: str,
    pch: Path | None,
    pre: Prelude,
    found: list[FoundKernel],
    provenance: Provenance,
    reports: dict[str, LayoutReport],
    seconds: dict,
) -> None:
    """Pass 2: the kernels without an error and not in ``reports`` laid out through the
    engine's loop (the source without bodies, one probe block per kernel), into ``reports``;
    each parse counted in ``seconds["parses"]``. Raises :class:`BadInput` as the loop does."""
    from ..engine.loop import Batch, lay_out
    from ..engine.numbers import read_report

    spellings = list(dict.fromkeys(k.spelling for k in found if k.error is None and k.spelling not in reports))
    # what names each kernel in pass 2: its alias where namespace scope reaches it (a
    # canonical spelling does not always parse again), else that spelling
    names: dict[str | None, str | None] = {}
    for k in found:
        if k.error is None and (names.get(k.spelling) is None or k.qualified):
            names[k.spelling] = k.qualified or names.get(k.spelling)

    def block(spelling: str, index: int, _budget: bool) -> tuple[str, str]:
        arch = kernel_arch(spelling)
        cap = (CAPACITY.get(arch) if arch is not None else None) or capacity_of(source.arch)
        return (
            f"\nnamespace {aliases.NAMESPACE}{index} {{\n"
            f"{aliases.subject_block(names.get(spelling) or spelling, cap)}}}"
            f"  // namespace {aliases.NAMESPACE}{index}\n"
        ), ""

    def parse(body: str, _members) -> "ProbeUnit":
        seconds["parses"] += 1
        return _parse(source, body, pch, bodies=False, include=pre.path)

    batch = Batch(
        head=text,
        parse=parse,
        block=block,
        read=lambda unit, s, i: read_report(unit, _Subject(s), i, provenance),
        failed=lambda _s, err: _failed(provenance, err),
        where=f"source {source.path}",
    )
    for s, rep in zip(spellings, lay_out(batch, spellings)):
        reports[s] = rep


_REHOSTED_RE = re.compile(r"cl_rehosted_(\d+)(?:_p\d+)?$")


def lay_out_sources(
    sources: list[Source], provenance: Provenance, *, pch: Path | None = None, trim: bool = True
) -> list[SourceLayout]:
    """:func:`lay_out_source` of each of ``sources`` (the same flags, folder and leading
    includes, so the same ``pch``), from as few parses as their errors allow: their texts
    follow each other in one translation unit, whose kernels share what they instantiate
    alike (a mainloop for two output types, cute's layouts for every tile), so sources laid out
    together cost a fraction of the CPU they cost apart (measured: docs/performance.md). Each
    source's kernels
    are named by its own lines and file. Where that unit has any error (or a kernel it
    cannot tie to one source), each source is laid out alone, so an error is always the
    source's own.

    Returns:
        One :class:`SourceLayout` per source, in order, as :func:`lay_out_source` gives it.
    """
    if len(sources) < 2:
        return [lay_out_source(s, provenance, pch=pch, trim=trim) for s in sources]
    originals: list[str] = []
    texts: list[str] = []
    includes: list[str] | None = None
    for s in sources:
        try:
            original = read_text(s.path, what="source", limit=False)
        except BadInput:
            return [lay_out_source(s, provenance, pch=pch, trim=trim) for s in sources]
        inc, text = split_preamble(original)
        if includes is None:
            includes = inc
        if inc != includes or s.flags != sources[0].flags or s.path.parent != sources[0].path.parent:
            raise ValueError("lay_out_sources: sources with other flags, folders or includes")
        originals.append(original)
        texts.append(original if pch is None else text)
    segments, line = [], 1
    for original in originals:
        segments.append(line)
        line += original.count("\n") + 1
    assert includes is not None  # two sources or more, read
    combined = _lay_out_text(
        sources[0], "\n".join(originals), includes, "\n".join(texts), provenance, pch, trim, segments
    )
    if combined.seconds.get("missing_header"):
        # a header their common includes include is missing: each source alone stops there too
        return [SourceLayout(error=combined.error, lasting=True) for _ in sources]
    if combined.error is not None or any(rep.error is not None or k.line is None for k, rep in combined.kernels):
        return [lay_out_source(s, provenance, pch=pch, trim=trim) for s in sources]
    # re-hosted templates are numbered through the whole unit: name them as alone
    rehosted_before = [0]
    for s, original in zip(sources[:-1], originals[:-1]):
        rehosted_before.append(rehosted_before[-1] + len(source_instantiations(s, original)))
    own = str(sources[0].path)
    out = [
        SourceLayout(seconds=dict(combined.seconds, batched=len(sources)), launcher_macros=combined.launcher_macros)
        for _ in sources
    ]
    for k, rep in combined.kernels:
        assert k.line is not None  # checked above
        i = segment(segments, k.line)
        first = segments[i]
        if k.decl_file == own and k.decl_line is not None:  # declared in the source itself
            k.decl_file, k.decl_line = str(sources[i].path), k.decl_line - (first - 1)
        k.line -= first - 1
        m = _REHOSTED_RE.search(k.qualified or "")
        if m and k.qualified:  # (m: a qualified name)
            k.qualified = f"{k.qualified[: m.start(1)]}{int(m.group(1)) - rehosted_before[i]}{k.qualified[m.end(1) :]}"
        out[i].kernels.append((k, rep))
    return out


class _Subject:
    """What :func:`cutlass_layout.engine.numbers.read_report` needs of a subject: its config dict."""

    def __init__(self, spelling: str):
        self.spelling = spelling

    def to_dict(self) -> dict:
        return {"type": self.spelling}


def _failed(provenance: Provenance, err: CompileError) -> LayoutReport:
    return LayoutReport(config={}, provenance=provenance, error=err)
