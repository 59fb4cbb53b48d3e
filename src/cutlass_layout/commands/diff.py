"""Diff the shared-memory layouts of two CUTLASS trees: what the headers say, and what it costs.

Two views, both keyed by the *content* of the trees (their tree hashes), never by the
version numbers in ``version.h``:

* **structural** (tree-sitter, no compiler): the storage structs (``*Storage``) and the
  TMA-bytes / stage / capacity constants of every header whose bytes differ between the two
  trees, matched by path relative to the include root (:func:`structural_diff`). Reported:
  structs added, removed or moved to another file; fields added, removed, renamed, retyped,
  re-aligned (``alignas``), reordered or put under another ``#if``; member aliases changed;
  constants added, removed or with a changed expression. Both sides' ``file:line`` are
  given. A struct whose only change is its line number is not a difference.
* **numeric** (the exact libclang engine, :func:`cutlass_layout.engine.loop.layouts`): for each
  config of a grid, stages, the kernel / mainloop / epilogue ``SharedStorage`` sizes, the
  TMA transaction bytes, every kernel member's offset and size, and the capacity verdict,
  on both trees (:func:`numeric_records`, :func:`compare`). This catches what the struct
  text does not show (a type alias or a builder that changed: CUTLASS 4.5.0's SFB padding
  changes sizes with the struct text unchanged).

From Python::

    from cutlass_layout import diff
    res = diff("flashinfer-python==0.6.8", "flashinfer-python==0.7.2.post1", tile="128x{32,64}x256")
    res.has_differences, res.numeric[0].changed, res.to_dict()

Identical trees (same tree hash) are reported identical at once: nothing is scanned or
computed. Otherwise both sides come from the one results cache
(:class:`cutlass_layout.core.cache.ResultCache`) where it holds them: the structural result per
pair of tree hashes, and each config's layout as the engine caches it (so a config that
``layout`` or ``sweep`` laid out on a tree is not laid out again here).

The result is a :class:`~cutlass_layout.model.DiffResult`; its ``to_dict()`` is the JSON
(schema :data:`SCHEMA`, ``cutlass-layout/diff/1``)::

    {"schema": "cutlass-layout/diff/1",
     "old": {"source", "provenance": {cutlass_root, cutlass_version, tree_hash, origin,
             [libclang_version, cuda_path, cuda_source, flags]}},
     "new": {...same...},
     "identical": bool, "has_differences": bool,
     "grid_source": "default" | "flags" | "file" | "python" | "none",
     "grid": [config, ...],
     "notes": [str, ...],
     "structural": null | [{change, struct, field, old, new,
                            old_file, old_line, new_file, new_line, specialization}],
     "files_compared": int | null,
     "structural_arch": null | [arch, ...], "structural_others": {family: count},
     "numeric": null | [{config, label, old: record | null, new: record | null,
                         changed: [name, ...],
                         members: [{name, old: {offset, size} | null, new: ...}]}],
     "audit": null | {arch, family, kind: "flashinfer" | "cutlass_library", selection,
                      old_tactics, new_tactics, notes,
                      summary: {verdict, numbers, renamed, added, removed, same,
                                verdict_changes: [{old, new, count}]},
                      tactics: [{id, family, name, change, changed, members, old, new,
                                 kinds, old_id, new_id, rename: null | {old, new},
                                 paired_by, config, kernel_bytes_delta}]}}

    record = {verdict: "fits" | "over_capacity" | "does_not_compile", error: str | null,
              stages, kernel_bytes, mainloop_bytes, epilogue_bytes, capacity_bytes,
              headroom_bytes, tma_bytes: {mk, nk, total},
              members: {"tensors.mainloop.smem_A": {offset, size}, ...}}

``structural``/``numeric`` are ``null`` when that side was not asked for; with an ``arch``
``structural`` holds the changes that concern its family only (:func:`keep_arch`) and
``structural_others`` counts the others. ``changed`` names
``verdict``, ``stages``, ``kernel_bytes``, ``mainloop_bytes``, ``epilogue_bytes``,
``capacity_bytes``, ``tma_bytes.mk|nk|total`` and ``kernel.<member>`` (offset or size
changed, or member only on one side); ``members`` lists the changed members only. Rows come
verdict changes first, then other changes, then unchanged rows. Bytes throughout. The
readable report is :func:`cutlass_layout.reports.diff.render_text`.

The audit's ``tactics`` pair the two installs' tactics by configuration
(:func:`tactic_configuration`: family, arch, A/B/out, tile, cluster, schedule, fusion,
swap_ab, kernel kind), not by id. ``change`` is one of ``verdict``, ``numbers``, ``renamed``
(ids differ, numbers the same), ``added``, ``removed``, ``same``; a renamed pair whose numbers
differ too keeps ``verdict``/``numbers`` there and lists every kind in ``kinds``
(``["renamed", "numbers"]``). ``id`` is the new side's id (the old side's for ``removed``);
``old_id``/``new_id`` are each side's (null where absent); ``rename`` the differing part of the
two ids, widened to words (``{"old": "1SM", "new": "1SMfalse"}``), null when they are equal;
``paired_by`` ``id`` | ``configuration`` | ``name`` (see :func:`pair_tactics`), null for
added/removed; ``config`` the configuration; ``kernel_bytes_delta`` new minus old kernel
SharedStorage bytes (null where a side is missing or does not compile). Two CUTLASS kernel
libraries' kernels (``kind`` ``cutlass_library``; ``selection`` the library's filters given)
are paired by procedural name instead (:func:`pair_library_kernels`: ``paired_by`` ``id``, or
``core_name`` for a pre-4.x name and the one 4.x gives the kernel). ``summary`` counts the
rows of each ``change`` and the verdict changes by old and new verdict.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, fields
from pathlib import Path

from ..errors import BadInput
from ..model import DIFF_SCHEMA as SCHEMA
from ..model import (
    NUMERIC_KEYS,
    AuditDiff,
    DiffResult,
    Field,
    MemberChange,
    NumericRecord,
    NumericRow,
    Provenance,
    ScanResult,
    Side,
    StructuralChange,
    TacticChange,
    Verdict,
)
from ..core.cache import KINDS
from ..core.pool import check_jobs, default_jobs
from ..engine.schedule import Schedule
from ..subjects.config import Config


#: Default grid families: (kernel flag value, the collective header that must exist in both trees).
FAMILY_FILES = {
    "grouped": "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp",
    "dense": "cutlass/gemm/collective/sm120_blockscaled_mma_tma.hpp",
}

#: Default grid values (besides the kernel families): tiles M in {128, 256}, N in
#: {32, 64, 128, 256}, K in {128, 256}; NVFP4; flashinfer flavour; stages auto.
DEFAULT_GRID = {"a": "nvfp4", "tile": "{128,256}x{32,64,128,256}x{128,256}",
                "preset": "flashinfer", "stages": "auto"}


# ============================================================================================
# sides


def resolve_side(src, which: str):
    """Resolve one side of a diff; a bad source says which side it is (``old (SRC): ...``)."""
    from ..sources.trees import resolve_cutlass

    try:
        return resolve_cutlass(src)
    except BadInput as exc:
        raise BadInput(f"{which} ({src}): {exc}") from None


def _provenance(tree, tgt) -> Provenance:
    if tgt is not None:
        return tgt.provenance("sm120")
    return Provenance(cutlass_root=str(tree.include_root), cutlass_version=tree.version,
                      tree_hash=tree.tree_hash, origin=tree.origin)


def _describe(src) -> str:
    return str(getattr(src, "origin", None) or src)


# ============================================================================================
# structural diff


def _header_digests(root) -> dict[str, bytes]:
    """Relative path -> SHA-256 of the bytes, for every header of the tree at ``root``."""
    from ..sources.trees import file_digests, is_header

    return {rel: h for rel, h in file_digests(root).items() if is_header(rel)}


def _scan_files(root: Path, rels: list[str]) -> ScanResult:
    """Scan the given headers of one tree (sorted by file and line)."""
    from .scan import scan_files

    return scan_files(root, sorted(rels)) if rels else ScanResult(str(root))


_WS = re.compile(r"\s+")


def _norm(text) -> str:
    return _WS.sub("", text or "")


def _spec(enclosing) -> str | None:
    """Abbreviated template args of the innermost specialized enclosing class."""
    for e in reversed(enclosing or []):
        if e.template_args:
            try:
                return e.short_name
            except Exception:  # pragma: no cover - cosmetic only
                return e.name + e.template_args
    return None


def _scope_sig(enclosing) -> str:
    return "::".join(e.name + _norm(e.template_args) for e in enclosing or [])


def _pair(olds: list, news: list, keys) -> tuple[list[tuple], list, list]:
    """Pair items of ``olds`` and ``news`` by each key function in turn, in order.

    Returns (pairs, unpaired olds, unpaired news); the order within each list is kept.
    """
    pairs: list[tuple] = []
    rest_o, rest_n = list(olds), list(news)
    for key in keys:
        index: dict = {}
        for i, n in enumerate(rest_n):
            index.setdefault(key(n), []).append(i)
        used_n: set[int] = set()
        keep_o = []
        for o in rest_o:
            cands = index.get(key(o))
            if cands:
                i = cands.pop(0)
                used_n.add(i)
                pairs.append((o, rest_n[i]))
            else:
                keep_o.append(o)
        rest_o = keep_o
        rest_n = [n for i, n in enumerate(rest_n) if i not in used_n]
    return pairs, rest_o, rest_n


@dataclass(frozen=True)
class _Member:
    """A field or alias of a struct, with the file it is declared in and its place among
    its siblings (what a :class:`StructuralChange` reports)."""

    decl: Field
    file: str
    i: int = 0

    @property
    def line(self) -> int:
        return self.decl.line


def _align_text(a) -> str:
    return f"alignas({a})" if a else "no alignas"


def _type_text(f: Field) -> str:
    return (f.type or "") + (f"[{f.extent}]" if f.extent is not None else "")


class _Structural:
    """Accumulates :class:`StructuralChange`s for one pair of scans. Items compared are the
    scans' :class:`~cutlass_layout.model.Struct` and
    :class:`~cutlass_layout.model.ScanConstant` records, and :class:`_Member`."""

    def __init__(self):
        self.changes: list[StructuralChange] = []

    def add(self, change, o, n, *, struct: str, spec=None, field=None, old=None, new=None):
        self.changes.append(StructuralChange(
            change=change, struct=struct, field=field, old=old, new=new,
            old_file=o.file if o else None, old_line=o.line if o else None,
            new_file=n.file if n else None, new_line=n.line if n else None,
            specialization=spec))

    # -- structs ----------------------------------------------------------------------------
    @staticmethod
    def _struct_keys():
        return (lambda s: (s.qualified_name, _scope_sig(s.enclosing), s.name),
                lambda s: (s.qualified_name, s.name))

    def structs(self, olds: list, news: list) -> tuple[list, list]:
        """Compare matched structs; return the unmatched (removed, added) ones."""
        pairs, rem, add = _pair(olds, news, self._struct_keys())
        for o, n in pairs:
            self.struct(o, n)
        return rem, add

    def struct(self, o, n) -> None:
        name = n.qualified_name or n.name or "(anonymous)"
        ctx = {"struct": name, "spec": _spec(n.enclosing)}
        if _norm(o.alignas) != _norm(n.alignas):
            self.add("struct_realigned", o, n, **ctx, old=_align_text(o.alignas),
                     new=_align_text(n.alignas))
        if [_norm(b) for b in o.bases] != [_norm(b) for b in n.bases]:
            self.add("struct_bases_changed", o, n, **ctx, old=", ".join(o.bases) or None,
                     new=", ".join(n.bases) or None)
        if o.kind != n.kind:
            self.add("struct_kind_changed", o, n, **ctx, old=o.kind, new=n.kind)
        if _norm(o.condition) != _norm(n.condition):
            self.add("struct_condition_changed", o, n, **ctx, old=o.condition, new=n.condition)
        self.fields(o, n, ctx)
        self.aliases(o, n, ctx)
        rem, add = self.structs(o.children, n.children)
        for c in rem:
            self.add("struct_removed", c, None, struct=c.qualified_name or name,
                     spec=_spec(c.enclosing), old=c.name or "(anonymous)")
        for c in add:
            self.add("struct_added", None, c, struct=c.qualified_name or name,
                     spec=_spec(c.enclosing), new=c.name or "(anonymous)")

    def fields(self, o, n, ctx: dict) -> None:
        of = [_Member(f, o.file, i) for i, f in enumerate(o.fields)]
        nf = [_Member(f, n.file, i) for i, f in enumerate(n.fields)]
        pairs, rem, add = _pair(of, nf, (lambda m: (m.decl.name, _norm(m.decl.condition)),
                                         lambda m: m.decl.name))
        sig = (lambda m: (_norm(m.decl.type), _norm(m.decl.alignas),
                          _norm(m.decl.extent), _norm(m.decl.condition)))
        renames, rem, add = _pair(rem, add, (sig,))
        for a, b in pairs:
            fa, fb = a.decl, b.decl
            if _norm(_type_text(fa)) != _norm(_type_text(fb)):
                self.add("field_retyped", a, b, **ctx, field=fb.name, old=_type_text(fa),
                         new=_type_text(fb))
            if _norm(fa.alignas) != _norm(fb.alignas):
                self.add("field_realigned", a, b, **ctx, field=fb.name,
                         old=_align_text(fa.alignas), new=_align_text(fb.alignas))
            if _norm(fa.condition) != _norm(fb.condition):
                self.add("field_condition_changed", a, b, **ctx, field=fb.name,
                         old=fa.condition, new=fb.condition)
        for a, b in renames:
            self.add("field_renamed", a, b, **ctx, field=b.decl.name, old=a.decl.name, new=b.decl.name)
        for a in rem:
            self.add("field_removed", a, None, **ctx, field=a.decl.name, old=_type_text(a.decl))
        for b in add:
            self.add("field_added", None, b, **ctx, field=b.decl.name, new=_type_text(b.decl))
        both = sorted(pairs + renames, key=lambda p: p[1].i)
        old_order = [a.i for a, _ in both]
        if old_order != sorted(old_order):
            self.add("fields_reordered", o, n, **ctx,
                     old=", ".join(a.decl.name for a, _ in sorted(both, key=lambda p: p[0].i)),
                     new=", ".join(b.decl.name for _, b in both))

    def aliases(self, o, n, ctx: dict) -> None:
        oa = [_Member(a, o.file) for a in o.aliases]
        na = [_Member(a, n.file) for a in n.aliases]
        pairs, rem, add = _pair(oa, na, (lambda m: (m.decl.name, _norm(m.decl.condition)),
                                         lambda m: m.decl.name))
        for a, b in pairs:
            if _norm(a.decl.type) != _norm(b.decl.type):
                self.add("alias_changed", a, b, **ctx, field=b.decl.name, old=a.decl.type,
                         new=b.decl.type)
        for a in rem:
            self.add("alias_removed", a, None, **ctx, field=a.decl.name, old=a.decl.type)
        for b in add:
            self.add("alias_added", None, b, **ctx, field=b.decl.name, new=b.decl.type)

    # -- constants --------------------------------------------------------------------------
    def constants(self, olds: list, news: list) -> tuple[list, list]:
        keys = (lambda c: (c.file, _scope_sig(c.enclosing), c.name),
                lambda c: (c.file, c.qualified_name))
        pairs, rem, add = _pair(olds, news, keys)
        for a, b in pairs:
            self.constant(a, b)
        return rem, add

    def constant(self, a, b) -> None:
        ctx = {"struct": _constant_scope(b), "spec": _spec(b.enclosing), "field": b.name}
        if _norm(a.expression) != _norm(b.expression):
            self.add("constant_changed", a, b, **ctx, old=a.expression, new=b.expression)
        if _norm(a.type) != _norm(b.type):
            self.add("constant_retyped", a, b, **ctx, old=a.type, new=b.type)


def _unique_moves(removed: list, added: list, key) -> tuple[list[tuple], list, list]:
    """Pair removed and added items whose ``key`` occurs exactly once on each side (a move
    between files); returns (moves, still removed, still added), unpaired items last."""
    count_o: dict = {}
    count_n: dict = {}
    for x in removed:
        count_o[key(x)] = count_o.get(key(x), 0) + 1
    for x in added:
        count_n[key(x)] = count_n.get(key(x), 0) + 1
    unique = {k for k, n in count_o.items() if n == 1 and count_n.get(k) == 1}
    moves, rem, add = _pair([x for x in removed if key(x) in unique],
                            [x for x in added if key(x) in unique], (key,))
    return (moves, rem + [x for x in removed if key(x) not in unique],
            add + [x for x in added if key(x) not in unique])


def _constant_scope(c) -> str:
    q = c.qualified_name
    return q.rsplit("::", 1)[0] if "::" in q else "(global scope)"


def _structural(old_tree, new_tree) -> tuple[list[StructuralChange], int]:
    """The structural changes between two trees, and how many headers differ."""
    oh, nh = _header_digests(old_tree.include_root), _header_digests(new_tree.include_root)
    differing = sorted(r for r in set(oh) | set(nh) if oh.get(r) != nh.get(r))
    old_scan = _scan_files(old_tree.include_root, [r for r in differing if r in oh])
    new_scan = _scan_files(new_tree.include_root, [r for r in differing if r in nh])
    acc = _Structural()

    # structs: within each file first, then moves between files
    by_file_o: dict[str, list] = {}
    by_file_n: dict[str, list] = {}
    for s in old_scan.structs:
        by_file_o.setdefault(s.file, []).append(s)
    for s in new_scan.structs:
        by_file_n.setdefault(s.file, []).append(s)
    removed, added = [], []
    for f in sorted(set(by_file_o) | set(by_file_n)):
        rem, add = acc.structs(by_file_o.get(f, []), by_file_n.get(f, []))
        removed += rem
        added += add
    move_key = _Structural._struct_keys()[0]
    real_moves, removed, added = _unique_moves(removed, added, move_key)
    for o, n in real_moves:
        acc.add("struct_moved", o, n, struct=n.qualified_name, spec=_spec(n.enclosing),
                old=o.file, new=n.file)
        acc.struct(o, n)
    for s in sorted(removed, key=lambda s: (s.file, s.line)):
        acc.add("struct_removed", s, None, struct=s.qualified_name, spec=_spec(s.enclosing),
                old=s.name or "(anonymous)")
    for s in sorted(added, key=lambda s: (s.file, s.line)):
        acc.add("struct_added", None, s, struct=s.qualified_name, spec=_spec(s.enclosing),
                new=s.name or "(anonymous)")

    # constants: same file first, then moves (same scope and name, unique)
    crem, cadd = acc.constants(old_scan.constants, new_scan.constants)
    ckey = (lambda c: (_scope_sig(c.enclosing), c.name))
    cmoves, crem, cadd = _unique_moves(crem, cadd, ckey)
    for a, b in cmoves:
        acc.add("constant_moved", a, b, struct=_constant_scope(b), spec=_spec(b.enclosing),
                field=b.name, old=a.file, new=b.file)
        acc.constant(a, b)
    for c in crem:
        acc.add("constant_removed", c, None, struct=_constant_scope(c), spec=_spec(c.enclosing),
                field=c.name, old=c.expression)
    for c in cadd:
        acc.add("constant_added", None, c, struct=_constant_scope(c), spec=_spec(c.enclosing),
                field=c.name, new=c.expression)

    def order(c: StructuralChange):
        return (c.new_file or c.old_file or "", c.new_line or c.old_line or 0, c.change, c.field or "")

    return sorted(acc.changes, key=order), len(differing)


def structural_diff(old_tree, new_tree, *, use_cache: bool = True) -> tuple[list[StructuralChange], int]:
    """Structural changes between two resolved trees (:class:`~cutlass_layout.sources.trees.CutlassTree`).

    Only headers whose bytes differ are scanned (an unchanged header cannot hold a change).
    Returns ``(changes, number of differing headers)``; cached per pair of tree hashes (and
    this code's fingerprint) in the results cache: ``use_cache=False`` recomputes (and
    stores the result).
    """
    if old_tree.tree_hash == new_tree.tree_hash:
        return [], 0
    from ..model import SCAN_SCHEMA

    kind = KINDS["structural"]

    def load(d):
        return [StructuralChange(**c) for c in d["changes"]], d["files_compared"]

    changes, n = kind.memo(kind.key(subject=[SCAN_SCHEMA], target=[old_tree.tree_hash, new_tree.tree_hash]),
                           lambda: _structural(old_tree, new_tree), load=load, use_cache=use_cache,
                           dump=lambda r: {"changes": [c.to_dict() for c in r[0]], "files_compared": r[1]})
    return changes, n


# ============================================================================================
# numeric diff


def record(rep) -> NumericRecord:
    """The numbers of one :class:`~cutlass_layout.model.LayoutReport` that the diff compares
    (:meth:`NumericRecord.from_report <cutlass_layout.model.NumericRecord.from_report>`)."""
    return NumericRecord.from_report(rep)


def _get(rec: NumericRecord | None, key: str):
    return None if rec is None else rec.get(key)


def changes(old: NumericRecord | None, new: NumericRecord | None) -> tuple[list[str], list[MemberChange]]:
    """What differs between two records: the :data:`NUMERIC_KEYS` that differ (and
    ``kernel.<member>`` for each kernel member that moved or changed size), and those members.
    Where a side does not compile, the verdict and the error say it all (no members)."""
    changed = [k for k in NUMERIC_KEYS if _get(old, k) != _get(new, k)]
    members: list[MemberChange] = []
    if Verdict.DOES_NOT_COMPILE in (_get(old, "verdict"), _get(new, "verdict")):
        return changed, members
    om = old.members if old is not None else {}
    nm = new.members if new is not None else {}
    for name in list(om) + [n for n in nm if n not in om]:
        if om.get(name) != nm.get(name):
            members.append(MemberChange(name, om.get(name), nm.get(name)))
            changed.append(f"kernel.{name}")
    return changed, members


def compare(cfg: Config, old: NumericRecord | None, new: NumericRecord | None) -> NumericRow:
    """A :class:`~cutlass_layout.model.NumericRow` for one config from its two records."""
    changed, members = changes(old, new)
    return NumericRow(config=cfg, label=cfg.label(), old=old, new=new, changed=changed,
                      members=members)


# ============================================================================================
# audit diff: the kernels two installs build

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
    return {k: cfg[k] for k in ("family", "arch", "a", "b", "out", "tile", "cluster", "schedule",
                                "fusion", "swap_ab", "kernel")}


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
        scored = sorted(((-SequenceMatcher(None, olds[i].id, news[j].id, autojunk=False).ratio(), i, j)
                         for i in os_ for j in ns))
        used_o: set[int] = set()
        used_n: set[int] = set()
        for _, i, j in scored:
            if i in used_o or j in used_n:
                continue
            used_o.add(i)
            used_n.add(j)
            paired[i] = (j, "id" if olds[i].id == news[j].id else "name")
    out = [(olds[i], news[j], by) for i, (j, by) in sorted(paired.items())]
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
    pairs, rest_o, rest_n = _pair(olds, news, (lambda t: t.id,))
    out = [(o, n, "id") for o, n in pairs]
    renamed, rest_o, rest_n = _unique_moves(rest_o, rest_n, lambda t: library_name(t.id))
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
    pairs = (pair_library_kernels(old_audit.tactics, new_audit.tactics) if library
             else pair_tactics(old_audit.tactics, new_audit.tactics, arch))
    rows = []
    for o, n, by in pairs:
        t = n or o
        cfg = tactic_configuration(t, arch)
        ids = {"old_id": None if o is None else o.id, "new_id": None if n is None else n.id}
        if o is None or n is None:
            rows.append(TacticChange(t.id, t.family, t.name, "added" if o is None else "removed",
                                     old=o, new=n, config=cfg, **ids))
            continue
        # the members too: both audits were laid out here (their tactics have reports, not JSON rows)
        changed, members = changes(NumericRecord.from_report(o.report), NumericRecord.from_report(n.report))
        if o.verdict != n.verdict and "verdict" not in changed:
            changed.insert(0, "verdict")  # fits <-> exact fit
        rename = None if o.id == n.id else Rename(*renamed_part(o.id, n.id))
        kind = ("verdict" if "verdict" in changed else "numbers" if changed
                else "renamed" if rename else "same")
        delta = (None if o.kernel_bytes is None or n.kernel_bytes is None
                 else n.kernel_bytes - o.kernel_bytes)
        rows.append(TacticChange(t.id, t.family, t.name, kind, old=o, new=n, changed=changed,
                                 members=members, rename=rename, paired_by=by, config=cfg,
                                 kernel_bytes_delta=delta, **ids))
    rows.sort(key=lambda r: (AUDIT_ORDER.index(r.change),
                             VERDICT_ORDER.index(r.new.verdict) if r.change == "verdict" else 0))
    sel = old_audit.provenance.get("selection") if library else None
    return AuditDiff(arch=arch, family=None, rows=rows, old_tactics=len(old_audit.tactics),
                     new_tactics=len(new_audit.tactics),
                     notes=([f"{'both' if x in new_audit.notes else 'old'}: {x}" for x in old_audit.notes]
                            + [f"new: {x}" for x in new_audit.notes if x not in old_audit.notes]),
                     kind="cutlass_library" if library else "flashinfer",
                     selection={k: v for k, v in (sel or {}).items() if v})


def _compute_records(job) -> list[NumericRecord]:
    """Lay out ``configs`` on one target (also run in a worker process): their records."""
    from ..engine.loop import layouts

    tgt, configs = job
    return [record(r) for r in layouts(configs, tgt, use_cache=False)]


def numeric_records(targets: list, configs: list[Config], *, use_cache: bool = True,
                    jobs: int | None = None) -> list[list[NumericRecord]]:
    """Records (see :func:`record`) of every config on each :class:`~cutlass_layout.engine.loop.Target`.

    Layouts come from the engine's results cache where it has them (written by ``layout``,
    ``sweep`` or an earlier diff; see :mod:`cutlass_layout.engine.loop`); the others are laid out,
    one target per worker process when two have configs left (``jobs`` 1: in this process),
    and stored. ``use_cache=False`` lays out every config again.
    """
    from ..engine.loop import cached

    out = []
    work = []
    for tgt in targets:
        reps = cached(configs, tgt) if use_cache else [None] * len(configs)
        recs = [None if r is None else record(r) for r in reps]
        todo = [i for i, r in enumerate(recs) if r is None]
        out.append(recs)
        if todo:
            work.append((len(out) - 1, todo, (tgt, [configs[i] for i in todo])))
    if work:
        n = min(len(work), default_jobs(jobs))
        configs_left = sum(len(t) for _, t, _ in work)
        with Schedule(n, parallel=n > 1,
                      spinner=f"laying out {configs_left} config(s) on {len(work)} tree(s) with libclang") as s:
            done = {i: recs for i, recs in s.run((i, _compute_records, (job,)) for i, (_, _, job) in enumerate(work))}
        for j, (side, todo, _) in enumerate(work):
            for i, rec in zip(todo, done[j]):
                out[side][i] = rec
    return out


def _sort_rows(rows: list[NumericRow]) -> list[NumericRow]:
    return sorted(rows, key=lambda r: (0 if r.verdict_changed else 1 if r.changed else 2))


# ============================================================================================
# grid


def supported_families(tree) -> list[str]:
    """The default-grid kernel families (``grouped``, ``dense``) whose SM120 block-scaled
    collective header exists in ``tree`` (see :data:`FAMILY_FILES`)."""
    return [k for k, rel in FAMILY_FILES.items() if (Path(tree.include_root) / rel).is_file()]


def default_grid(old_tree, new_tree) -> tuple[list[Config], list[str]]:
    """The default grid for two trees and notes explaining it.

    For each family both trees support (:func:`supported_families`): SM120 NVFP4, tiles
    ``{128,256}x{32,64,128,256}x{128,256}``, flashinfer flavour, stages auto.
    """
    from ..subjects.grid import grid_configs

    fo, fn = supported_families(old_tree), supported_families(new_tree)
    both = [k for k in FAMILY_FILES if k in fo and k in fn]
    notes = []
    for k in FAMILY_FILES:
        if k not in both:
            missing = [side for side, fam in (("old", fo), ("new", fn)) if k not in fam]
            notes.append(f"no SM120 block-scaled {k} family in the {' and '.join(missing)} tree "
                         f"({FAMILY_FILES[k]} missing): not in the default grid")
    if not both:
        notes.append("default grid is empty: the numeric diff has nothing to compare")
        return [], notes
    return grid_configs(dict(DEFAULT_GRID, kernel=both)), notes


def grid_from_values(values: dict, old_tree, new_tree) -> list[Config]:
    """The numeric grid from some grid values (``arch``, ``tile``, ``kernel``, ``a``, ``b``,
    ``preset``, ``stages``, ... every config key: each a value or a list, braces allowed, as
    for a sweep), the others from :data:`DEFAULT_GRID`; without ``kernel``, the SM120
    families both trees have (both kinds for another arch). With ``arch`` the element
    defaults to that arch's (bf16 on SM90), not NVFP4."""
    from ..subjects.config import FAMILY
    from ..subjects.grid import grid_configs

    defaults = dict(DEFAULT_GRID)
    archs = values.get("arch")
    archs = [archs] if isinstance(archs, str) else list(archs or [])
    if archs:
        defaults.pop("a")  # each arch's own default element (config_from_flags)
    merged = dict(defaults, **values)
    if "kernel" not in values:
        sm120 = all(FAMILY.get(str(a).lower()) == "sm120" for a in archs)
        fams = [k for k in FAMILY_FILES
                if k in supported_families(old_tree) and k in supported_families(new_tree)]
        merged["kernel"] = (fams or list(FAMILY_FILES)) if sm120 else list(FAMILY_FILES)
    return grid_configs(merged)


# ============================================================================================
# keeping what concerns one arch

#: What the headers and structs of an arch family are named with. SM120/SM121 GEMMs are built
#: on SM90's kernels (``sm90_gemm_*``), epilogues (``sm90_epilogue_*``) and pipelines, so
#: the SM120 family keeps those too.
#: SM101/SM103/SM110 run SM100's kernels (arch tag ``Sm100``), so they keep the SM100 family's.
_SM120_WORDS = ("sm120", "sm121", "sm12x", "sm90")
_SM100_WORDS = ("sm100", "sm101", "sm103", "sm110", "sm10x", "sm11x")
ARCH_WORDS = {"sm120": _SM120_WORDS, "sm121": _SM120_WORDS, "sm90": ("sm90",),
              **{a: _SM100_WORDS for a in ("sm100", "sm101", "sm103", "sm110")}}
#: ``sm100_umma_builder.inl``, ``arch::Sm100``, ``MainloopSm100TmaUmma...``, ``SM90``
_ARCH_TOKEN = re.compile(r"(?:(?<![A-Za-z0-9])sm|Sm|SM)_?(\d+[a-z]?)")


def _token_family(token: str) -> str:
    """``100`` / ``103a`` / ``10x`` -> ``sm100``; ``120`` -> ``sm120``; ``90`` -> ``sm90``."""
    digits = re.match(r"\d+", token).group()
    if token[len(digits):].startswith("x"):  # sm10x, sm12x
        digits += "0"
    if len(digits) == 3 and digits[:2] in ("10", "11", "12"):
        return "sm" + digits[:2] + "0"
    return "sm" + digits


def change_family(change: StructuralChange, arch: str) -> str | None:
    """None when ``change`` concerns ``arch`` (its header and struct name that arch's family,
    or no arch at all: ``cutlass/arch/arch.h``, the pipelines); else the family it belongs to
    (``sm100``, or ``conv`` for the convolution headers)."""
    file = (change.new_file or change.old_file or "").lower()
    if file.startswith("cutlass/conv/") or "/conv/" in file:
        return "conv"
    words = ARCH_WORDS.get(arch, (arch,))
    text = " ".join(x for x in (file, change.struct, change.specialization) if x)
    tokens = ["sm" + t.lower() for t in _ARCH_TOKEN.findall(text)]
    tokens = [t if not t.endswith(("a", "f")) else t[:-1] for t in tokens]
    if not tokens or any(t in words for t in tokens):
        return None
    return _token_family(tokens[0][2:])


def keep_arch(changes: list[StructuralChange], archs: list[str]) -> tuple[list[StructuralChange], dict[str, int]]:
    """The changes that concern one of ``archs`` (see :func:`change_family`), and the others
    counted per family (``{"sm100": 18, "conv": 3}``, largest first)."""
    kept, others = [], {}
    for c in changes:
        fams = [change_family(c, a) for a in archs]
        if any(f is None for f in fams):
            kept.append(c)
        else:
            others[fams[0]] = others.get(fams[0], 0) + 1
    return kept, dict(sorted(others.items(), key=lambda kv: (-kv[1], kv[0])))


# ============================================================================================
# the diff


def diff(old, new, grid=None, *, structural: bool | None = None, numeric: bool | None = None,
         audit: bool = False, arch: str | list[str] | None = None, family: str | None = None,
         selection=None, cuda_path=None, use_cache: bool = True, jobs: int | None = None,
         grid_source: str | None = None, **grid_values) -> DiffResult:
    """Diff the shared-memory layouts of two CUTLASS trees.

    Args:
        old, new: anything :func:`cutlass_layout.sources.trees.resolve_cutlass` accepts (include
            dir, checkout, site-packages dir, ``.whl``, installed distribution,
            ``flashinfer-python==0.6.8``), or a resolved ``CutlassTree``.
        grid: the numeric diff's configs: a list of :class:`Config`, a dict of grid values
            (:func:`cutlass_layout.subjects.grid.grid_configs`), or None for :func:`default_grid`.
        structural, numeric: which sides to compute (default: both; neither with ``audit``).
        audit: also compare the kernels the two installs build: each side is a flashinfer
            install (:func:`cutlass_layout.commands.audit.audit`, from the results cache
            where it has run), its tactics paired by configuration, renamed ones shown as
            such (:func:`audit_diff`); or both sides are CUTLASS kernel libraries
            (``nvidia-cutlass==VERSION``, its wheel, a ``cutlass_library`` folder, a CUTLASS
            checkout: :func:`cutlass_layout.commands.library_audit.audit_library`), their
            kernels paired by procedural name (:func:`pair_library_kernels`);
            ``arch`` (one; default ``sm120``) and ``family`` as in ``audit``.
        selection: with ``audit`` of two kernel libraries, the library's own filters
            (:class:`~cutlass_layout.installs.kernel_library.Selection`: ``--kernels`` and the like),
            the same on both sides; None: its default set.
        arch: an arch (any of :data:`cutlass_layout.subjects.config.ARCHS`) or several: the structural view keeps
            the headers and structs of their families (:func:`keep_arch`; the others are
            counted in ``structural_others`` and are not differences), and, without a
            ``grid``, the numeric grid is of that arch.
        cuda_path: CUDA headers for the engine (see :func:`cutlass_layout.sources.cuda.find_cuda`).
        use_cache: read results cached earlier: the structural diff of the two trees, and
            each config's layout (shared with ``layout`` and ``sweep``). Fresh results are
            stored either way.
        jobs: worker processes for the numeric side (one tree each; default: the CPUs).
        grid_source: how the grid was given, for the report (default: ``python``, or
            ``default`` when there is no grid).
        grid_values: instead of ``grid``, the values the command line's grid flags take
            (``tile="128x{32,64}x256"``, ``kernel``, ``a``, ``preset``, ``stages``; see
            :func:`grid_from_values`).

    Returns:
        A :class:`~cutlass_layout.model.DiffResult` (bytes throughout). Identical trees
        (same content hash) give no differences without scanning or computing anything.

    Raises:
        BadInput: a side is missing, has no CUTLASS tree, names an unknown or source-only
            version, or the grid has a bad value; unusable CUDA headers (numeric side); with
            ``audit``, one side a kernel library and the other a flashinfer install, a
            ``selection`` for flashinfer installs, a selection neither library keeps a kernel
            of (both sides' reasons).
    """
    t0 = time.perf_counter()
    structural = (not audit) if structural is None else structural
    numeric = (not audit) if numeric is None else numeric
    if not structural and not numeric and not audit:
        raise BadInput("nothing to diff: both the structural and the numeric side are off")
    if audit:
        audit_arch = _one_arch(arch)
        if not structural and not numeric:
            return _audit_only(old, new, audit_arch, family, selection, cuda_path, use_cache, jobs, t0)
    if grid is not None and grid_values:
        raise BadInput("give either a grid or grid values, not both")
    check_jobs(jobs)
    archs = None
    if arch is not None:
        from ..subjects.config import ARCHS

        archs = [arch] if isinstance(arch, str) else list(arch)
        archs = [a.lower() if isinstance(a, str) else a for a in archs]
        for a in archs:
            if a not in ARCHS:
                raise BadInput(f"unknown arch {a!r}: choose {', '.join(ARCHS)}")
    old_tree = resolve_side(old, "old")
    new_tree = resolve_side(new, "new")
    if archs and grid is None and numeric:
        grid_values = {"arch": archs, **grid_values}
    if grid_values:
        grid = grid_from_values(grid_values, old_tree, new_tree)
    from ..engine.loop import target

    tgts = [target(old_tree, cuda_path), target(new_tree, cuda_path)] if numeric else [None, None]
    res = DiffResult(old=Side(_describe(old), _provenance(old_tree, tgts[0])),
                     new=Side(_describe(new), _provenance(new_tree, tgts[1])),
                     identical=old_tree.tree_hash == new_tree.tree_hash)

    if grid is None:
        if numeric:
            res.grid, notes = default_grid(old_tree, new_tree)
            res.notes += notes
        res.grid_source = "default" if numeric else "none"
    else:
        if isinstance(grid, dict):
            from ..subjects.grid import grid_configs

            grid = grid_configs(grid)
        res.grid = list(grid)
        res.grid_source = grid_source or "python"
    if res.identical:
        res.notes.append(f"the trees are identical (tree hash {old_tree.tree_hash}): "
                         "nothing to compare, nothing computed")

    if structural:
        res.structural, res.files_compared = structural_diff(old_tree, new_tree, use_cache=use_cache)
        if archs:
            res.structural_arch = archs
            res.structural, res.structural_others = keep_arch(res.structural, archs)
    if numeric:
        if res.identical or not res.grid:
            res.numeric = []
        else:
            old_recs, new_recs = numeric_records(tgts, res.grid, use_cache=use_cache, jobs=jobs)
            res.numeric = _sort_rows([compare(c, o, n) for c, o, n in zip(res.grid, old_recs, new_recs)])
    if audit:
        res.audit = _audits(old, new, audit_arch, family, selection, cuda_path, use_cache, jobs)[0]
    res.seconds = time.perf_counter() - t0
    return res


def _one_arch(arch) -> str:
    """The one arch an audit diff is of: ``sm120`` by default; several are bad input."""
    if arch is None:
        return "sm120"
    archs = [arch] if isinstance(arch, str) else list(arch)
    if len(archs) != 1:
        raise BadInput(f"an audit diff compares one arch's kernels; got arch {', '.join(map(str, archs))}")
    return str(archs[0]).lower()


def _audits(old, new, arch, family, selection, cuda_path, use_cache, jobs) -> AuditDiff:
    from ..sources.trees import is_kernel_library
    from .audit.command import audit
    from .audit.filters import unknown_family

    libraries = [is_kernel_library(s) for s in (old, new)]
    if any(libraries):
        return _library_audits(old, new, libraries, arch, family, selection, cuda_path, use_cache, jobs)
    if selection is not None and any(selection.request().values()):
        raise BadInput(f"{selection.words()}: the kernel library's own filters, for two CUTLASS kernel "
                       "libraries (nvidia-cutlass==VERSION, its wheel, a cutlass_library folder or a CUTLASS "
                       "checkout), not flashinfer installs")
    # a family may be built by one install only (added, removed): one neither builds is bad input
    a = audit(old, arch, family=family, cuda_path=cuda_path, jobs=jobs, use_cache=use_cache,
              strict_family=False)
    b = audit(new, arch, family=family, cuda_path=cuda_path, jobs=jobs, use_cache=use_cache,
              strict_family=False)
    if family is not None and family not in a.families + b.families:
        raise BadInput(unknown_family(family, list(dict.fromkeys(a.families + b.families)),
                                      f"{a.provenance['version']} or {b.provenance['version']}", arch))
    out = audit_diff(a, b)
    out.family = family
    return out, a, b


def _library_audits(old, new, libraries, arch, family, selection, cuda_path, use_cache, jobs):
    """:func:`_audits` of two CUTLASS kernel libraries: each side's
    :func:`~cutlass_layout.commands.library_audit.audit_library` with the one ``selection``
    (a side it keeps no kernel of has none: its kernels are all added or removed)."""
    from ..installs.kernel_library import FAMILY, Selection
    from .library_audit import audit_library

    if not all(libraries):
        lib, fi = (old, new) if libraries[0] else (new, old)
        raise BadInput(f"diff --audit compares two flashinfer installs or two CUTLASS kernel libraries, not one "
                       f"of each: {lib} is CUTLASS's kernel library, {fi} a flashinfer install")
    if family is not None and family != FAMILY:
        raise BadInput(f"unknown family {family!r}: CUTLASS's kernel library is one family, {FAMILY}")
    sel = selection if selection is not None else Selection()
    sides = []
    for src, which in ((old, "old"), (new, "new")):
        try:
            sides.append(audit_library(src, arch, selection=sel, cuda_path=cuda_path, jobs=jobs,
                                       use_cache=use_cache, strict=False))
        except BadInput as exc:
            raise BadInput(f"{which} ({src}): {exc}") from None
    a, b = sides
    if not a.tactics and not b.tactics:
        why = "; ".join(f"{w} ({s}): {r.notes[0]}" for w, s, r in (("old", old, a), ("new", new, b)) if r.notes)
        raise BadInput(f"neither library has a CUTLASS 3.x kernel for {arch} to compare with "
                       f"{sel.words()}: {why}")
    out = audit_diff(a, b)
    out.family = family
    return out, a, b


def _audit_only(old, new, arch, family, selection, cuda_path, use_cache, jobs, t0) -> DiffResult:
    """``diff --audit`` alone: the two installs' audits compared; the sides are their CUTLASS
    trees' provenance, ``identical`` when the installs have the same content fingerprint (and
    tree hash: a kernel library's fingerprint is its Python code's)."""
    out, a, b = _audits(old, new, arch, family, selection, cuda_path, use_cache, jobs)

    def side(src, res):
        keep = {f.name for f in fields(Provenance)}
        return Side(_describe(src), Provenance(**{k: v for k, v in res.provenance.items() if k in keep}))

    res = DiffResult(old=side(old, a), new=side(new, b),
                     identical=(a.provenance["fingerprint"] == b.provenance["fingerprint"]
                                and a.provenance.get("tree_hash") == b.provenance.get("tree_hash")),
                     audit=out)
    res.seconds = time.perf_counter() - t0
    return res


__all__ = ["SCHEMA", "ARCH_WORDS", "DEFAULT_GRID", "FAMILY_FILES", "audit_diff", "change_family", "pair_tactics", "renamed_part", "tactic_configuration", "changes", "compare",
           "is_library_audit", "library_name", "pair_library_kernels",
           "default_grid", "diff", "grid_from_values", "keep_arch", "numeric_records", "record", "resolve_side", "structural_diff",
           "supported_families"]
