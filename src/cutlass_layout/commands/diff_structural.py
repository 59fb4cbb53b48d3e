"""The structural view of a diff: the storage structs and constants of two CUTLASS trees'
headers that differ, compared as text (tree-sitter, no compiler), and what of it concerns an
arch.

Every header whose bytes differ is scanned (:func:`cutlass_layout.commands.scan.scan_files`:
CUTLASS's ``*SharedStorage``/``*Storage`` structs, such as ``CollectiveMma::SharedStorage`` in
``cutlass/gemm/collective/sm90_mma_*.hpp``, and the TMA-bytes, stage and capacity constants);
structs are matched by path, scope and name, fields by name, then by position
(:func:`structural_diff`, cached per pair of tree hashes). :func:`keep_arch` keeps the changes
of an arch's family (SM120 GEMMs are built on SM90's kernels, epilogues and pipelines; SM101,
SM103 and SM110 run SM100's). The diff as a whole: :mod:`cutlass_layout.commands.diff`.
"""

from __future__ import annotations

import re
from typing import Any
from dataclasses import dataclass
from pathlib import Path

from ..model import Field, ScanResult, StructuralChange
from ..core.cache import KINDS


def _header_digests(root) -> dict[str, bytes]:
    """Relative path -> SHA-256 of the bytes, for every header of the tree at ``root``."""
    from ..sources.digests import file_digests, is_header

    return {rel: h for rel, h in file_digests(root).items() if is_header(rel)}


def scan_headers(root: Path, rels: list[str]) -> ScanResult:
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


def pair(olds: list, news: list, keys) -> tuple[list[tuple], list, list]:
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
        self.changes.append(
            StructuralChange(
                change=change,
                struct=struct,
                field=field,
                old=old,
                new=new,
                old_file=o.file if o else None,
                old_line=o.line if o else None,
                new_file=n.file if n else None,
                new_line=n.line if n else None,
                specialization=spec,
            )
        )

    # -- structs ----------------------------------------------------------------------------
    @staticmethod
    def _struct_keys():
        return (lambda s: (s.qualified_name, _scope_sig(s.enclosing), s.name), lambda s: (s.qualified_name, s.name))

    def structs(self, olds: list, news: list) -> tuple[list, list]:
        """Compare matched structs; return the unmatched (removed, added) ones."""
        pairs, rem, add = pair(olds, news, self._struct_keys())
        for o, n in pairs:
            self.struct(o, n)
        return rem, add

    def struct(self, o, n) -> None:
        name = n.qualified_name or n.name or "(anonymous)"
        ctx: dict[str, Any] = {"struct": name, "spec": _spec(n.enclosing)}
        if _norm(o.alignas) != _norm(n.alignas):
            self.add("struct_realigned", o, n, **ctx, old=_align_text(o.alignas), new=_align_text(n.alignas))
        if [_norm(b) for b in o.bases] != [_norm(b) for b in n.bases]:
            self.add(
                "struct_bases_changed", o, n, **ctx, old=", ".join(o.bases) or None, new=", ".join(n.bases) or None
            )
        if o.kind != n.kind:
            self.add("struct_kind_changed", o, n, **ctx, old=o.kind, new=n.kind)
        if _norm(o.condition) != _norm(n.condition):
            self.add("struct_condition_changed", o, n, **ctx, old=o.condition, new=n.condition)
        self.fields(o, n, ctx)
        self.aliases(o, n, ctx)
        rem, add = self.structs(o.children, n.children)
        for c in rem:
            self.add(
                "struct_removed",
                c,
                None,
                struct=c.qualified_name or name,
                spec=_spec(c.enclosing),
                old=c.name or "(anonymous)",
            )
        for c in add:
            self.add(
                "struct_added",
                None,
                c,
                struct=c.qualified_name or name,
                spec=_spec(c.enclosing),
                new=c.name or "(anonymous)",
            )

    def fields(self, o, n, ctx: dict) -> None:
        of = [_Member(f, o.file, i) for i, f in enumerate(o.fields)]
        nf = [_Member(f, n.file, i) for i, f in enumerate(n.fields)]
        pairs, rem, add = pair(of, nf, (lambda m: (m.decl.name, _norm(m.decl.condition)), lambda m: m.decl.name))
        sig = lambda m: (_norm(m.decl.type), _norm(m.decl.alignas), _norm(m.decl.extent), _norm(m.decl.condition))
        renames, rem, add = pair(rem, add, (sig,))
        for a, b in pairs:
            fa, fb = a.decl, b.decl
            if _norm(_type_text(fa)) != _norm(_type_text(fb)):
                self.add("field_retyped", a, b, **ctx, field=fb.name, old=_type_text(fa), new=_type_text(fb))
            if _norm(fa.alignas) != _norm(fb.alignas):
                self.add(
                    "field_realigned",
                    a,
                    b,
                    **ctx,
                    field=fb.name,
                    old=_align_text(fa.alignas),
                    new=_align_text(fb.alignas),
                )
            if _norm(fa.condition) != _norm(fb.condition):
                self.add("field_condition_changed", a, b, **ctx, field=fb.name, old=fa.condition, new=fb.condition)
        for a, b in renames:
            self.add("field_renamed", a, b, **ctx, field=b.decl.name, old=a.decl.name, new=b.decl.name)
        for a in rem:
            self.add("field_removed", a, None, **ctx, field=a.decl.name, old=_type_text(a.decl))
        for b in add:
            self.add("field_added", None, b, **ctx, field=b.decl.name, new=_type_text(b.decl))
        both = sorted(pairs + renames, key=lambda p: p[1].i)
        old_order = [a.i for a, _ in both]
        if old_order != sorted(old_order):
            self.add(
                "fields_reordered",
                o,
                n,
                **ctx,
                old=", ".join(a.decl.name for a, _ in sorted(both, key=lambda p: p[0].i)),
                new=", ".join(b.decl.name for _, b in both),
            )

    def aliases(self, o, n, ctx: dict) -> None:
        oa = [_Member(a, o.file) for a in o.aliases]
        na = [_Member(a, n.file) for a in n.aliases]
        pairs, rem, add = pair(oa, na, (lambda m: (m.decl.name, _norm(m.decl.condition)), lambda m: m.decl.name))
        for a, b in pairs:
            if _norm(a.decl.type) != _norm(b.decl.type):
                self.add("alias_changed", a, b, **ctx, field=b.decl.name, old=a.decl.type, new=b.decl.type)
        for a in rem:
            self.add("alias_removed", a, None, **ctx, field=a.decl.name, old=a.decl.type)
        for b in add:
            self.add("alias_added", None, b, **ctx, field=b.decl.name, new=b.decl.type)

    # -- constants --------------------------------------------------------------------------
    def constants(self, olds: list, news: list) -> tuple[list, list]:
        keys = (lambda c: (c.file, _scope_sig(c.enclosing), c.name), lambda c: (c.file, c.qualified_name))
        pairs, rem, add = pair(olds, news, keys)
        for a, b in pairs:
            self.constant(a, b)
        return rem, add

    def constant(self, a, b) -> None:
        ctx = {"struct": _constant_scope(b), "spec": _spec(b.enclosing), "field": b.name}
        if _norm(a.expression) != _norm(b.expression):
            self.add("constant_changed", a, b, **ctx, old=a.expression, new=b.expression)
        if _norm(a.type) != _norm(b.type):
            self.add("constant_retyped", a, b, **ctx, old=a.type, new=b.type)


def unique_moves(removed: list, added: list, key) -> tuple[list[tuple], list, list]:
    """Pair removed and added items whose ``key`` occurs exactly once on each side (a move
    between files); returns (moves, still removed, still added), unpaired items last."""
    count_o: dict = {}
    count_n: dict = {}
    for x in removed:
        count_o[key(x)] = count_o.get(key(x), 0) + 1
    for x in added:
        count_n[key(x)] = count_n.get(key(x), 0) + 1
    unique = {k for k, n in count_o.items() if n == 1 and count_n.get(k) == 1}
    moves, rem, add = pair([x for x in removed if key(x) in unique], [x for x in added if key(x) in unique], (key,))
    return (moves, rem + [x for x in removed if key(x) not in unique], add + [x for x in added if key(x) not in unique])


def _constant_scope(c) -> str:
    q = c.qualified_name
    return q.rsplit("::", 1)[0] if "::" in q else "(global scope)"


def compare_trees(old_tree, new_tree) -> tuple[list[StructuralChange], int]:
    """The structural changes between two trees, and how many headers differ."""
    oh, nh = _header_digests(old_tree.include_root), _header_digests(new_tree.include_root)
    differing = sorted(r for r in set(oh) | set(nh) if oh.get(r) != nh.get(r))
    old_scan = scan_headers(old_tree.include_root, [r for r in differing if r in oh])
    new_scan = scan_headers(new_tree.include_root, [r for r in differing if r in nh])
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
    real_moves, removed, added = unique_moves(removed, added, move_key)
    for o, n in real_moves:
        acc.add("struct_moved", o, n, struct=n.qualified_name, spec=_spec(n.enclosing), old=o.file, new=n.file)
        acc.struct(o, n)
    for s in sorted(removed, key=lambda s: (s.file, s.line)):
        acc.add(
            "struct_removed", s, None, struct=s.qualified_name, spec=_spec(s.enclosing), old=s.name or "(anonymous)"
        )
    for s in sorted(added, key=lambda s: (s.file, s.line)):
        acc.add("struct_added", None, s, struct=s.qualified_name, spec=_spec(s.enclosing), new=s.name or "(anonymous)")

    # constants: same file first, then moves (same scope and name, unique)
    crem, cadd = acc.constants(old_scan.constants, new_scan.constants)
    ckey = lambda c: (_scope_sig(c.enclosing), c.name)
    cmoves, crem, cadd = unique_moves(crem, cadd, ckey)
    for a, b in cmoves:
        acc.add(
            "constant_moved",
            a,
            b,
            struct=_constant_scope(b),
            spec=_spec(b.enclosing),
            field=b.name,
            old=a.file,
            new=b.file,
        )
        acc.constant(a, b)
    for c in crem:
        acc.add(
            "constant_removed",
            c,
            None,
            struct=_constant_scope(c),
            spec=_spec(c.enclosing),
            field=c.name,
            old=c.expression,
        )
    for c in cadd:
        acc.add(
            "constant_added",
            None,
            c,
            struct=_constant_scope(c),
            spec=_spec(c.enclosing),
            field=c.name,
            new=c.expression,
        )

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

    changes, n = kind.memo(
        kind.key(subject=[SCAN_SCHEMA], target=[old_tree.tree_hash, new_tree.tree_hash]),
        lambda: compare_trees(old_tree, new_tree),
        load=load,
        use_cache=use_cache,
        dump=lambda r: {"changes": [c.to_dict() for c in r[0]], "files_compared": r[1]},
    )
    return changes, n


# ============================================================================================
# keeping what concerns one arch

#: What the headers and structs of an arch family are named with. SM120/SM121 GEMMs are built
#: on SM90's kernels (``sm90_gemm_*``), epilogues (``sm90_epilogue_*``) and pipelines, so
#: the SM120 family keeps those too.
#: SM101/SM103/SM110 run SM100's kernels (arch tag ``Sm100``), so they keep the SM100 family's.
_SM120_WORDS = ("sm120", "sm121", "sm12x", "sm90")
_SM100_WORDS = ("sm100", "sm101", "sm103", "sm110", "sm10x", "sm11x")
ARCH_WORDS = {
    "sm120": _SM120_WORDS,
    "sm121": _SM120_WORDS,
    "sm90": ("sm90",),
    **{a: _SM100_WORDS for a in ("sm100", "sm101", "sm103", "sm110")},
}
#: ``sm100_umma_builder.inl``, ``arch::Sm100``, ``MainloopSm100TmaUmma...``, ``SM90``
_ARCH_TOKEN = re.compile(r"(?:(?<![A-Za-z0-9])sm|Sm|SM)_?(\d+[a-z]?)")


def _token_family(token: str) -> str:
    """``100`` / ``103a`` / ``10x`` -> ``sm100``; ``120`` -> ``sm120``; ``90`` -> ``sm90``."""
    m = re.match(r"\d+", token)
    assert m is not None  # an arch token's number (callers pass what follows sm)
    digits = m.group()
    if token[len(digits) :].startswith("x"):  # sm10x, sm12x
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
    kept: list[StructuralChange] = []
    others: dict[str, int] = {}
    for c in changes:
        fams = [change_family(c, a) for a in archs]
        first = fams[0]
        if first is None or any(f is None for f in fams):
            kept.append(c)
        else:
            others[first] = others.get(first, 0) + 1
    return kept, dict(sorted(others.items(), key=lambda kv: (-kv[1], kv[0])))


__all__ = ["pair", "unique_moves", "structural_diff", "ARCH_WORDS", "change_family", "keep_arch"]
