"""The audit view of a diff: the kernels two installs build, paired and compared.

Two flashinfer installs' tactics are paired by configuration (:func:`tactic_configuration`,
:func:`pair_tactics`), renamed ones shown as such (:func:`renamed_part`); two CUTLASS kernel
libraries' kernels by procedural name (:func:`pair_library_kernels`; CUTLASS 4.x's
``GemmOperation.core_name`` in ``python/cutlass_library/gemm_operation.py`` leaves out what
3.x names carried: :func:`library_name`). Each pair's numbers are compared as the numeric
view compares configs (:func:`audit_diff`). The diff as a whole:
:mod:`cutlass_layout.commands.diff`.
"""

from __future__ import annotations

import re
from typing import Any

from ..model import AuditDiff, NumericRecord, TacticChange
from .diff_numeric import changes
from .diff_structural import pair, unique_moves


#: Order of the audit diff's rows (:attr:`TacticChange.change <cutlass_layout.model.TacticChange.change>`).
AUDIT_ORDER = ("verdict", "numbers", "renamed", "added", "removed", "same")

#: The :class:`~cutlass_layout.model.Tactic` fields that say what a kernel is (with the arch of
#: the audit): the configuration two installs' tactics are paired by.
CONFIG_FIELDS = ("family", "a", "b", "out", "tile", "cluster", "schedule", "fusion", "swap_ab", "kernel")


def tactic_configuration(tactic, arch: str) -> dict:
    """What ``tactic`` (a :class:`~cutlass_layout.model.Tactic`) is, for pairing the tactics of
    two installs: ``{family, arch, a, b, out, tile, cluster, schedule, fusion, swap_ab, kernel}``
    (:data:`CONFIG_FIELDS` and the audit's ``arch``; tile and cluster as lists, K in elements).

    The id is not used: it is built from the install's own spelling (the launcher struct and
    kernel alias, TensorRT-LLM's tile enum), which a release may change with the kernel
    unchanged: flashinfer 0.7.2 appended the new ``SWAP_AB_`` macro argument to its dense FP4
    GEMM structs (``..._1SM`` -> ``..._1SMfalse``). ``swap_ab`` None (the source has no such
    choice, as 0.6.8's dense FP4 GEMM) counts as False: such a source builds the kernel that
    is not swapped."""
    cfg = {k: getattr(tactic, k) for k in CONFIG_FIELDS}
    cfg["arch"] = arch
    cfg["swap_ab"] = bool(cfg["swap_ab"])
    for k in ("tile", "cluster"):
        cfg[k] = None if cfg[k] is None else list(cfg[k])
    return {
        k: cfg[k]
        for k in ("family", "arch", "a", "b", "out", "tile", "cluster", "schedule", "fusion", "swap_ab", "kernel")
    }


def _config_key(cfg: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in cfg.values())


def _word(c: str) -> bool:
    return c.isalnum()


def common_affixes(a: str, b: str) -> tuple[int, int]:
    """``(prefix, suffix)``: how many characters two texts share at their start and, after
    that prefix, at their end."""
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    return pre, suf


def renamed_part(old: str, new: str) -> tuple[str, str]:
    """The parts of two ids that differ, each widened to whole words (runs of letters and
    digits): ``(…_1SM::GemmKernelDefault…, …_1SMfalse::GemmKernelDefault…)`` ->
    ``("1SM", "1SMfalse")``. Equal texts give ``("", "")``."""
    if old == new:
        return "", ""
    pre, suf = common_affixes(old, new)
    start = pre
    while start > 0 and _word(old[start - 1]):
        start -= 1

    def cut(t: str) -> str:
        end = len(t) - suf
        while end < len(t) and _word(t[end]):
            end += 1
        return t[start:end]

    return cut(old), cut(new)


def pair_tactics(olds: list, news: list, arch: str) -> list[tuple]:
    """Pair two installs' tactics (:class:`~cutlass_layout.model.Tactic`) by configuration
    (:func:`tactic_configuration`). Returns ``(old, new, paired_by)`` triples: the pairs, in the
    old side's order, each with ``paired_by`` ``id`` (same id), ``configuration`` (the only
    tactic of its configuration on each side) or ``name``; then ``(old, None, None)`` for the
    old tactics left unpaired and ``(None, new, None)`` for the new ones, each in its side's
    order. No tactic is dropped.

    Where several tactics of a side share a configuration (its struct name carries a parameter
    that is no Tactic field: the tile scheduler of flashinfer's dense FP4 GEMM, whose
    ``GemmKernelDefault`` and ``GemmKernelStreamK`` differ in nothing else; a cluster shape
    given at run time), they are paired by the rest of the name: of all old-new pairs within
    the configuration, the one whose ids are most alike (:class:`difflib.SequenceMatcher`
    ratio; equal ids first, ties by the order of the audits) is taken, then the next among
    those left, and so on; what is left over on the larger side is added or removed."""
    from difflib import SequenceMatcher

    groups: dict[tuple, tuple[list, list]] = {}
    for side, tactics in ((0, olds), (1, news)):
        for i, t in enumerate(tactics):
            groups.setdefault(_config_key(tactic_configuration(t, arch)), ([], []))[side].append(i)
    paired: dict[int, tuple[int, str]] = {}
    for os_, ns in groups.values():
        if not os_ or not ns:
            continue
        if len(os_) == len(ns) == 1:
            i, j = os_[0], ns[0]
            paired[i] = (j, "id" if olds[i].id == news[j].id else "configuration")
            continue
        scored = sorted(
            ((-SequenceMatcher(None, olds[i].id, news[j].id, autojunk=False).ratio(), i, j) for i in os_ for j in ns)
        )
        used_o: set[int] = set()
        used_n: set[int] = set()
        for _, i, j in scored:
            if i in used_o or j in used_n:
                continue
            used_o.add(i)
            used_n.add(j)
            paired[i] = (j, "id" if olds[i].id == news[j].id else "name")
    out: list[tuple[Any, Any, str | None]] = [(olds[i], news[j], by) for i, (j, by) in sorted(paired.items())]
    used = {j for j, _ in paired.values()}
    out += [(o, None, None) for i, o in enumerate(olds) if i not in paired]
    out += [(None, n, None) for j, n in enumerate(news) if j not in used]
    return out


#: A CUTLASS 3.x kernel's procedural name as CUTLASS's library spelled it before 4.x: the
#: accumulator's short type name and the MMA instruction shape lead its core name
#: (``gemm_operation.py``'s ``core_name``: 3.8.0 ``cutlass3x_sm90_tensorop_s64x128x16gemm_f16_...``;
#: 4.2.0 leaves both out for 3.x kernels, ``cutlass3x_sm90_tensorop_gemm_f16_...``)
_PRE_4X_CORE = re.compile(r"^(cutlass3x_sm\d+_[a-z_]*?op)_[a-z]*\d+x\d+x\d+(?=[a-z0-9]*gemm)")


def library_name(name: str) -> str:
    """The procedural name CUTLASS's kernel library 4.x gives the 3.x kernel an older library
    named ``name``: ``cutlass3x_sm90_tensorop_s64x128x16gemm_f16_...`` ->
    ``cutlass3x_sm90_tensorop_gemm_f16_...`` (the accumulator letter and the MMA instruction
    shape left out, as 4.2.0's ``GemmOperation.core_name`` leaves them out where 3.8.0's has
    them: ``short_math_name()`` and ``inst_shape``, ``python/cutlass_library/gemm_operation.py``);
    any other name as it is (4.x names, 2.x kernels' names: ``cutlass_sm90_tensorop_d1684gemm_...``)."""
    return _PRE_4X_CORE.sub(r"\1_", name)


def pair_library_kernels(olds: list, news: list) -> list[tuple]:
    """Pair two CUTLASS kernel libraries' kernels (:class:`~cutlass_layout.model.LibraryTactic`)
    by procedural name, what ``cutlass_profiler --kernels`` takes: ``(old, new, paired_by)``
    triples, as :func:`pair_tactics` returns them. ``paired_by`` is ``id`` where the two names
    are equal, ``core_name`` where they are equal as CUTLASS 4.x spells them
    (:func:`library_name`: a library before 4.x named a 3.x kernel with its MMA instruction
    shape), and only where that name is one kernel's on each side; the others are added or
    removed. No kernel is paired by its configuration: of two libraries' kernels the name is
    what the profiler, and a user's ``--kernels``, select by."""
    pairs, rest_o, rest_n = pair(olds, news, (lambda t: t.id,))
    out: list[tuple[Any, Any, str | None]] = [(o, n, "id") for o, n in pairs]
    renamed, rest_o, rest_n = unique_moves(rest_o, rest_n, lambda t: library_name(t.id))
    out += [(o, n, "core_name") for o, n in renamed]
    order = {id(o): i for i, o in enumerate(olds)}
    out.sort(key=lambda p: order[id(p[0])])
    keep_o = {id(o) for o in rest_o}
    keep_n = {id(n) for n in rest_n}
    out += [(o, None, None) for o in olds if id(o) in keep_o]
    out += [(None, n, None) for n in news if id(n) in keep_n]
    return out


def is_library_audit(result) -> bool:
    """Whether an :class:`~cutlass_layout.model.AuditResult` is of CUTLASS's kernel library
    (:func:`cutlass_layout.commands.library_audit.audit_library`), not of a flashinfer install."""
    return result.provenance.get("library") == "cutlass_library"


def audit_diff(old_audit, new_audit) -> AuditDiff:
    """Compare two :class:`~cutlass_layout.model.AuditResult` of one arch: a flashinfer
    install's tactics paired by configuration (:func:`pair_tactics`), not by id; CUTLASS
    kernel libraries' kernels by procedural name (:func:`pair_library_kernels`). For each
    pair, the verdict (``exact_fit`` counts as its own), stages, the three SharedStorage
    sizes, TMA bytes and every kernel member, as the numeric diff compares configs, and,
    where the ids differ, what the install renamed (:func:`renamed_part`) and the kernel's
    byte change. Rows in :data:`AUDIT_ORDER`; the verdict changes by the new verdict (over
    capacity first, :data:`~cutlass_layout.commands.audit.VERDICT_ORDER`); within a kind the
    old side's order, then the new side's."""
    from ..model import Rename
    from .audit.finish import VERDICT_ORDER

    arch = new_audit.arch
    library = is_library_audit(old_audit) and is_library_audit(new_audit)
    pairs = (
        pair_library_kernels(old_audit.tactics, new_audit.tactics)
        if library
        else pair_tactics(old_audit.tactics, new_audit.tactics, arch)
    )
    rows = []
    for o, n, by in pairs:
        t = n or o
        cfg = tactic_configuration(t, arch)
        ids: dict[str, Any] = {"old_id": None if o is None else o.id, "new_id": None if n is None else n.id}
        if o is None or n is None:
            rows.append(
                TacticChange(
                    t.id, t.family, t.name, "added" if o is None else "removed", old=o, new=n, config=cfg, **ids
                )
            )
            continue
        # the members too: both audits were laid out here (their tactics have reports, not JSON rows)
        changed, members = changes(NumericRecord.from_report(o.report), NumericRecord.from_report(n.report))
        if o.verdict != n.verdict and "verdict" not in changed:
            changed.insert(0, "verdict")  # fits <-> exact fit
        rename = None if o.id == n.id else Rename(*renamed_part(o.id, n.id))
        kind = "verdict" if "verdict" in changed else "numbers" if changed else "renamed" if rename else "same"
        delta = None if o.kernel_bytes is None or n.kernel_bytes is None else n.kernel_bytes - o.kernel_bytes
        rows.append(
            TacticChange(
                t.id,
                t.family,
                t.name,
                kind,
                old=o,
                new=n,
                changed=changed,
                members=members,
                rename=rename,
                paired_by=by,
                config=cfg,
                kernel_bytes_delta=delta,
                **ids,
            )
        )
    rows.sort(
        key=lambda r: (
            AUDIT_ORDER.index(r.change),
            VERDICT_ORDER.index(r.new.verdict) if r.change == "verdict" and r.new is not None else 0,
        )
    )
    sel = old_audit.provenance.get("selection") if library else None
    return AuditDiff(
        arch=arch,
        family=None,
        rows=rows,
        old_tactics=len(old_audit.tactics),
        new_tactics=len(new_audit.tactics),
        notes=(
            [f"{'both' if x in new_audit.notes else 'old'}: {x}" for x in old_audit.notes]
            + [f"new: {x}" for x in new_audit.notes if x not in old_audit.notes]
        ),
        kind="cutlass_library" if library else "flashinfer",
        selection={k: v for k, v in (sel or {}).items() if v},
    )


__all__ = [
    "AUDIT_ORDER",
    "CONFIG_FIELDS",
    "tactic_configuration",
    "common_affixes",
    "renamed_part",
    "pair_tactics",
    "library_name",
    "pair_library_kernels",
    "is_library_audit",
    "audit_diff",
]
