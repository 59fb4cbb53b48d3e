"""Diff the shared-memory layouts of two CUTLASS trees: what the headers say, and what it costs.

Two views, both keyed by the *content* of the trees (their tree hashes), never by the
version numbers in ``version.h``:

* **structural** (tree-sitter, no compiler): the storage structs (``*Storage``) and the
  TMA-bytes / stage / capacity constants of every header whose bytes differ between the two
  trees, matched by path relative to the include root. Reported: structs added, removed or
  moved to another file; fields added, removed, renamed, retyped, re-aligned (``alignas``),
  reordered or put under another ``#if``; member aliases changed; constants added, removed
  or with a changed expression. Both sides' ``file:line`` are given. A struct whose only
  change is its line number is not a difference.
* **numeric** (the exact libclang engine, :func:`cutlass_layout.engine.layouts`): for each
  config of a grid, stages, the kernel / mainloop / epilogue ``SharedStorage`` sizes, the
  TMA transaction bytes, every kernel member's offset and size, and the capacity verdict,
  on both trees. This catches what the struct text does not show (a type alias or a builder
  that changed: CUTLASS 4.5.0's SFB padding changes sizes with the struct text unchanged).

From Python::

    from cutlass_layout.diff import diff
    res = diff("flashinfer-python==0.6.8", "flashinfer-python==0.7.2.post1")
    res.has_differences, res.to_dict()["numeric"][0]["changed"]

Identical trees (same tree hash) are reported identical at once: nothing is scanned or
computed. Otherwise both sides come from the one results cache
(:class:`cutlass_layout.cache.ResultCache`) where it holds them: the structural result per
pair of tree hashes, and each config's layout as the engine caches it (so a config that
``layout`` or ``sweep`` laid out on a tree is not laid out again here).

JSON schema :data:`SCHEMA` (``cutlass-layout/diff/1``)::

    {"schema": "cutlass-layout/diff/1",
     "old": {"source", "provenance": {cutlass_root, cutlass_version, tree_hash, origin,
             [libclang_version, cuda_path, cuda_source, flags]}},
     "new": {...same...},
     "identical": bool, "has_differences": bool,
     "grid_source": "default" | "flags" | "file" | "python" | "none",
     "grid": [config, ...],
     "notes": [str, ...],
     "structural": null | [{change, struct, specialization, field, old, new,
                            old_file, old_line, new_file, new_line}],
     "files_compared": int | null,
     "numeric": null | [{config, label, changed: [name, ...],
                         old: record | null, new: record | null,
                         members: [{name, old: {offset, size} | null, new: ...}]}]}

    record = {verdict: "fits" | "over_capacity" | "does_not_compile", stages,
              kernel_bytes, mainloop_bytes, epilogue_bytes, capacity_bytes, headroom_bytes,
              tma_bytes: {mk, nk, total}, error: str | null,
              members: {"tensors.mainloop.smem_A": {offset, size}, ...}}

``structural``/``numeric`` are ``null`` when that side was not asked for. ``changed`` names
``verdict``, ``stages``, ``kernel_bytes``, ``mainloop_bytes``, ``epilogue_bytes``,
``capacity_bytes``, ``tma_bytes.mk|nk|total`` and ``kernel.<member>`` (offset or size
changed, or member only on one side); ``members`` lists the changed members only. Rows come
verdict changes first, then other changes, then unchanged rows. Bytes throughout.
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click

from .cache import ResultCache, code_fingerprint, result_key
from .config import Config
from .errors import BadInput
from .options import cuda_path_option
from .runner import Pool, default_jobs

#: Version of the ``diff --json`` schema.
SCHEMA = "cutlass-layout/diff/1"

#: Bumped whenever the cached structural results change shape or meaning beyond what the
#: fingerprint of :data:`_STRUCTURAL_SOURCES` covers.
_CACHE_VERSION = "3"
#: The code whose every change invalidates cached structural diffs.
_STRUCTURAL_SOURCES = ("diff.py", "scan.py", "model.py", "sources.py", "frontends/treesitter.py")
_STRUCTURAL = ResultCache("structural")

#: Default grid families: (kernel flag value, the collective header that must exist in both trees).
FAMILY_FILES = {
    "grouped": "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp",
    "dense": "cutlass/gemm/collective/sm120_blockscaled_mma_tma.hpp",
}

#: Default grid values (besides the kernel families): tiles M in {128, 256}, N in
#: {32, 64, 128, 256}, K in {128, 256}; NVFP4; flashinfer flavour; stages auto.
DEFAULT_GRID = {"a": "nvfp4", "tile": "{128,256}x{32,64,128,256}x{128,256}",
                "preset": "flashinfer", "stages": "auto"}

#: Record keys compared for every config, in report order.
NUMERIC_KEYS = ("verdict", "stages", "kernel_bytes", "mainloop_bytes", "epilogue_bytes",
                "tma_bytes.mk", "tma_bytes.nk", "tma_bytes.total", "capacity_bytes")



# ============================================================================================
# result model


@dataclass
class StructuralChange:
    """One difference in what the headers say.

    Attributes:
        change: ``struct_added``, ``struct_removed``, ``struct_moved``, ``struct_realigned``
            (the struct's own ``alignas``), ``struct_bases_changed``, ``struct_kind_changed``,
            ``struct_condition_changed``, ``field_added``, ``field_removed``,
            ``field_renamed``, ``field_retyped`` (type or array extent), ``field_realigned``
            (``alignas``), ``field_condition_changed``, ``fields_reordered``,
            ``alias_added``, ``alias_removed``, ``alias_changed``, ``constant_added``,
            ``constant_removed``, ``constant_changed`` (expression), ``constant_retyped``,
            ``constant_moved``.
        struct: qualified name of the struct (for a constant: of its enclosing scope).
        specialization: template arguments of the innermost enclosing class specialization,
            abbreviated (``<MainloopSm120ArrayTmaWarpSpecializedBlockScaled<…>, …>``), or None.
        field: the field, alias or constant name (None for a struct-level change).
        old, new: the text before and after (type, ``alignas(16)``, expression, field order,
            field name), None on the side where it does not exist.
        old_file, old_line, new_file, new_line: where, on each side (paths relative to the
            include root, 1-based lines; None on the side where it does not exist).
    """

    change: str
    struct: str
    field: str | None = None
    old: str | None = None
    new: str | None = None
    old_file: str | None = None
    old_line: int | None = None
    new_file: str | None = None
    new_line: int | None = None
    specialization: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class NumericRow:
    """One config on both trees.

    Attributes:
        config: the config (:meth:`Config.to_dict`).
        label: :meth:`Config.label`.
        old, new: records (see the module docstring): verdict, stages, sizes in bytes, TMA
            bytes, member offsets/sizes; for a config that does not compile, only
            ``verdict`` and ``error``.
        changed: names of what differs (see :data:`NUMERIC_KEYS`, plus ``kernel.<member>``).
        members: the kernel members that differ: ``{name, old: {offset, size} | None, new}``.
    """

    config: dict
    label: str
    old: dict | None
    new: dict | None
    changed: list[str] = field(default_factory=list)
    members: list[dict] = field(default_factory=list)

    @property
    def verdict_changed(self) -> bool:
        return "verdict" in self.changed

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Side:
    """One side of the diff: what the user named and what it resolved to."""

    source: str
    provenance: dict

    @property
    def tree_hash(self) -> str:
        return self.provenance["tree_hash"]


@dataclass
class DiffResult:
    """The diff of two CUTLASS trees.

    Attributes:
        old, new: the two sides (source and provenance).
        identical: the two trees have the same content hash (nothing was computed).
        grid: the configs of the numeric diff.
        grid_source: ``default``, ``flags``, ``file``, ``python`` or ``none``.
        structural: the structural changes, or None when not asked for.
        files_compared: headers whose bytes differ between the trees (the ones scanned).
        numeric: one row per config, verdict changes first, or None when not asked for.
        notes: plain-language remarks (e.g. why the default grid is empty).
        seconds: wall time of :func:`diff`.
    """

    old: Side
    new: Side
    identical: bool
    grid: list[Config] = field(default_factory=list)
    grid_source: str = "none"
    structural: list[StructuralChange] | None = None
    files_compared: int | None = None
    numeric: list[NumericRow] | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def numeric_changes(self) -> list[NumericRow]:
        """The rows with a difference."""
        return [r for r in (self.numeric or []) if r.changed]

    @property
    def has_differences(self) -> bool:
        """Any structural change, or any config whose numbers or verdict differ."""
        return bool(self.structural) or bool(self.numeric_changes)

    def to_dict(self) -> dict:
        """The documented JSON object (schema :data:`SCHEMA`)."""
        return {
            "schema": SCHEMA,
            "old": {"source": self.old.source, "provenance": self.old.provenance},
            "new": {"source": self.new.source, "provenance": self.new.provenance},
            "identical": self.identical,
            "has_differences": self.has_differences,
            "grid_source": self.grid_source,
            "grid": [c.to_dict() for c in self.grid],
            "notes": list(self.notes),
            "structural": None if self.structural is None else [c.to_dict() for c in self.structural],
            "files_compared": self.files_compared,
            "numeric": None if self.numeric is None else [r.to_dict() for r in self.numeric],
        }


# ============================================================================================
# sides


def _resolve(src, which: str):
    from .sources import resolve_cutlass

    try:
        return resolve_cutlass(src)
    except BadInput as exc:
        raise BadInput(f"{which} ({src}): {exc}") from None


def _provenance(tree, tgt) -> dict:
    if tgt is not None:
        return asdict(tgt.provenance("sm120"))
    return {"cutlass_root": str(tree.include_root), "cutlass_version": tree.version,
            "tree_hash": tree.tree_hash, "origin": tree.origin}


def _describe(src) -> str:
    return str(getattr(src, "origin", None) or src)


# ============================================================================================
# structural diff


def _header_digests(root) -> dict[str, bytes]:
    """Relative path -> SHA-256 of the bytes, for every header of the tree at ``root``."""
    from .sources import file_digests, is_header

    return {rel: h for rel, h in file_digests(root).items() if is_header(rel)}


def _scan_files(root: Path, rels: list[str]) -> dict:
    """Scan the given headers of one tree: the ``cutlass-layout/scan/1`` JSON dict."""
    from .scan import scan_files

    if not rels:
        return {"structs": [], "constants": []}
    return scan_files(root, sorted(rels)).to_dict()


_WS = re.compile(r"\s+")


def _norm(text) -> str:
    return _WS.sub("", text or "")


def _spec(enclosing: list[dict]) -> str | None:
    """Abbreviated template args of the innermost specialized enclosing class."""
    from .scan import _abbrev_args

    for e in reversed(enclosing or []):
        if e.get("template_args"):
            try:
                return e["name"] + _abbrev_args(e["template_args"])
            except Exception:  # pragma: no cover - cosmetic only
                return e["name"] + e["template_args"]
    return None


def _scope_sig(enclosing: list[dict]) -> str:
    return "::".join(e["name"] + _norm(e.get("template_args")) for e in enclosing or [])


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


def _align_text(a) -> str:
    return f"alignas({a})" if a else "no alignas"


def _type_text(f: dict) -> str:
    return (f.get("type") or "") + (f"[{f['extent']}]" if f.get("extent") is not None else "")


class _Structural:
    """Accumulates :class:`StructuralChange`s for one pair of scans."""

    def __init__(self):
        self.changes: list[StructuralChange] = []

    def add(self, change, o: dict | None, n: dict | None, *, struct: str, spec=None, field=None,
            old=None, new=None, o_line=None, n_line=None):
        self.changes.append(StructuralChange(
            change=change, struct=struct, field=field, old=old, new=new,
            old_file=o["file"] if o else None,
            old_line=(o_line if o_line is not None else o["line"]) if o else None,
            new_file=n["file"] if n else None,
            new_line=(n_line if n_line is not None else n["line"]) if n else None,
            specialization=spec))

    # -- structs ----------------------------------------------------------------------------
    @staticmethod
    def _struct_keys():
        return (lambda s: (s["qualified_name"], _scope_sig(s["enclosing"]), s["name"]),
                lambda s: (s["qualified_name"], s["name"]))

    def structs(self, olds: list[dict], news: list[dict]) -> tuple[list[dict], list[dict]]:
        """Compare matched structs; return the unmatched (removed, added) ones."""
        pairs, rem, add = _pair(olds, news, self._struct_keys())
        for o, n in pairs:
            self.struct(o, n)
        return rem, add

    def struct(self, o: dict, n: dict) -> None:
        name = n["qualified_name"] or n["name"] or "(anonymous)"
        spec = _spec(n["enclosing"])
        ctx = {"struct": name, "spec": spec}
        if _norm(o.get("alignas")) != _norm(n.get("alignas")):
            self.add("struct_realigned", o, n, **ctx, old=_align_text(o.get("alignas")),
                     new=_align_text(n.get("alignas")))
        if [_norm(b) for b in o.get("bases", [])] != [_norm(b) for b in n.get("bases", [])]:
            self.add("struct_bases_changed", o, n, **ctx, old=", ".join(o.get("bases", [])) or None,
                     new=", ".join(n.get("bases", [])) or None)
        if o.get("kind") != n.get("kind"):
            self.add("struct_kind_changed", o, n, **ctx, old=o.get("kind"), new=n.get("kind"))
        if _norm(o.get("condition")) != _norm(n.get("condition")):
            self.add("struct_condition_changed", o, n, **ctx, old=o.get("condition"),
                     new=n.get("condition"))
        self.fields(o, n, ctx)
        self.aliases(o, n, ctx)
        rem, add = self.structs(o.get("children", []), n.get("children", []))
        for c in rem:
            self.add("struct_removed", c, None, struct=c["qualified_name"] or name,
                     spec=_spec(c["enclosing"]), old=c.get("name") or "(anonymous)")
        for c in add:
            self.add("struct_added", None, c, struct=c["qualified_name"] or name,
                     spec=_spec(c["enclosing"]), new=c.get("name") or "(anonymous)")

    def fields(self, o: dict, n: dict, ctx: dict) -> None:
        of = [dict(f, _i=i, file=o["file"]) for i, f in enumerate(o.get("fields", []))]
        nf = [dict(f, _i=i, file=n["file"]) for i, f in enumerate(n.get("fields", []))]
        pairs, rem, add = _pair(of, nf, (lambda f: (f["name"], _norm(f.get("condition"))),
                                         lambda f: f["name"]))
        sig = (lambda f: (_norm(f.get("type")), _norm(f.get("alignas")),
                          _norm(f.get("extent")), _norm(f.get("condition"))))
        renames, rem, add = _pair(rem, add, (sig,))
        for a, b in pairs:
            if _norm(_type_text(a)) != _norm(_type_text(b)):
                self.add("field_retyped", a, b, **ctx, field=b["name"], old=_type_text(a),
                         new=_type_text(b))
            if _norm(a.get("alignas")) != _norm(b.get("alignas")):
                self.add("field_realigned", a, b, **ctx, field=b["name"],
                         old=_align_text(a.get("alignas")), new=_align_text(b.get("alignas")))
            if _norm(a.get("condition")) != _norm(b.get("condition")):
                self.add("field_condition_changed", a, b, **ctx, field=b["name"],
                         old=a.get("condition"), new=b.get("condition"))
        for a, b in renames:
            self.add("field_renamed", a, b, **ctx, field=b["name"], old=a["name"], new=b["name"])
        for a in rem:
            self.add("field_removed", a, None, **ctx, field=a["name"], old=_type_text(a))
        for b in add:
            self.add("field_added", None, b, **ctx, field=b["name"], new=_type_text(b))
        both = sorted(pairs + renames, key=lambda p: p[1]["_i"])
        old_order = [a["_i"] for a, _ in both]
        if old_order != sorted(old_order):
            self.add("fields_reordered", o, n, **ctx,
                     old=", ".join(a["name"] for a, _ in sorted(both, key=lambda p: p[0]["_i"])),
                     new=", ".join(b["name"] for _, b in both))

    def aliases(self, o: dict, n: dict, ctx: dict) -> None:
        oa = [dict(a, file=o["file"]) for a in o.get("aliases", [])]
        na = [dict(a, file=n["file"]) for a in n.get("aliases", [])]
        pairs, rem, add = _pair(oa, na, (lambda a: (a["name"], _norm(a.get("condition"))),
                                         lambda a: a["name"]))
        for a, b in pairs:
            if _norm(a.get("type")) != _norm(b.get("type")):
                self.add("alias_changed", a, b, **ctx, field=b["name"], old=a.get("type"),
                         new=b.get("type"))
        for a in rem:
            self.add("alias_removed", a, None, **ctx, field=a["name"], old=a.get("type"))
        for b in add:
            self.add("alias_added", None, b, **ctx, field=b["name"], new=b.get("type"))

    # -- constants --------------------------------------------------------------------------
    def constants(self, olds: list[dict], news: list[dict]) -> tuple[list[dict], list[dict]]:
        keys = (lambda c: (c["file"], _scope_sig(c["enclosing"]), c["name"]),
                lambda c: (c["file"], c["qualified_name"]))
        pairs, rem, add = _pair(olds, news, keys)
        for a, b in pairs:
            self.constant(a, b)
        return rem, add

    def constant(self, a: dict, b: dict) -> None:
        scope = b["qualified_name"].rsplit("::", 1)[0] if "::" in b["qualified_name"] else "(global scope)"
        ctx = {"struct": scope, "spec": _spec(b["enclosing"]), "field": b["name"]}
        if _norm(a.get("expression")) != _norm(b.get("expression")):
            self.add("constant_changed", a, b, **ctx, old=a.get("expression"), new=b.get("expression"))
        if _norm(a.get("type")) != _norm(b.get("type")):
            self.add("constant_retyped", a, b, **ctx, old=a.get("type"), new=b.get("type"))


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


def _constant_scope(c: dict) -> str:
    q = c["qualified_name"]
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
    for s in old_scan["structs"]:
        by_file_o.setdefault(s["file"], []).append(s)
    for s in new_scan["structs"]:
        by_file_n.setdefault(s["file"], []).append(s)
    removed, added = [], []
    for f in sorted(set(by_file_o) | set(by_file_n)):
        rem, add = acc.structs(by_file_o.get(f, []), by_file_n.get(f, []))
        removed += rem
        added += add
    move_key = _Structural._struct_keys()[0]
    real_moves, removed, added = _unique_moves(removed, added, move_key)
    for o, n in real_moves:
        acc.add("struct_moved", o, n, struct=n["qualified_name"], spec=_spec(n["enclosing"]),
                old=o["file"], new=n["file"])
        acc.struct(o, n)
    for s in sorted(removed, key=lambda s: (s["file"], s["line"])):
        acc.add("struct_removed", s, None, struct=s["qualified_name"], spec=_spec(s["enclosing"]),
                old=s["name"] or "(anonymous)")
    for s in sorted(added, key=lambda s: (s["file"], s["line"])):
        acc.add("struct_added", None, s, struct=s["qualified_name"], spec=_spec(s["enclosing"]),
                new=s["name"] or "(anonymous)")

    # constants: same file first, then moves (same scope and name, unique)
    crem, cadd = acc.constants(old_scan["constants"], new_scan["constants"])
    ckey = (lambda c: (_scope_sig(c["enclosing"]), c["name"]))
    cmoves, crem, cadd = _unique_moves(crem, cadd, ckey)
    for a, b in cmoves:
        acc.add("constant_moved", a, b, struct=_constant_scope(b), spec=_spec(b["enclosing"]),
                field=b["name"], old=a["file"], new=b["file"])
        acc.constant(a, b)
    for c in crem:
        acc.add("constant_removed", c, None, struct=_constant_scope(c), spec=_spec(c["enclosing"]),
                field=c["name"], old=c.get("expression"))
    for c in cadd:
        acc.add("constant_added", None, c, struct=_constant_scope(c), spec=_spec(c["enclosing"]),
                field=c["name"], new=c.get("expression"))

    def order(c: StructuralChange):
        return (c.new_file or c.old_file or "", c.new_line or c.old_line or 0, c.change, c.field or "")

    return sorted(acc.changes, key=order), len(differing)


def structural_diff(old_tree, new_tree, *, use_cache: bool = True) -> tuple[list[StructuralChange], int]:
    """Structural changes between two resolved trees (:class:`~cutlass_layout.sources.CutlassTree`).

    Only headers whose bytes differ are scanned (an unchanged header cannot hold a change).
    Returns ``(changes, number of differing headers)``; cached per pair of tree hashes (and
    this code's fingerprint) in the results cache: ``use_cache=False`` recomputes (and
    stores the result).
    """
    if old_tree.tree_hash == new_tree.tree_hash:
        return [], 0
    from .scan import SCHEMA as SCAN_SCHEMA

    key = result_key(_CACHE_VERSION, old_tree.tree_hash, new_tree.tree_hash, SCAN_SCHEMA,
                     code_fingerprint(*_STRUCTURAL_SOURCES))
    data = _STRUCTURAL.get(key) if use_cache else None
    if data is not None:
        try:
            return [StructuralChange(**c) for c in data["changes"]], data["files_compared"]
        except (KeyError, TypeError):  # written by another version: compute again
            pass
    changes, n = _structural(old_tree, new_tree)
    _STRUCTURAL.put(key, {"changes": [c.to_dict() for c in changes], "files_compared": n})
    return changes, n


# ============================================================================================
# numeric diff


def record(rep) -> dict:
    """The numbers of one :class:`~cutlass_layout.model.LayoutReport` that the diff compares.

    Returns a dict (bytes throughout): ``verdict``, ``stages``, ``kernel_bytes``,
    ``mainloop_bytes``, ``epilogue_bytes``, ``capacity_bytes``, ``headroom_bytes``,
    ``tma_bytes`` ``{mk, nk, total}``, ``error`` (one line, or None) and ``members``
    (kernel member dotted name -> ``{offset, size}``). A config that does not compile has
    only ``verdict`` and ``error`` set.
    """
    out = {"verdict": rep.verdict, "error": rep.error.one_line() if rep.error is not None else None,
           "stages": None, "kernel_bytes": None, "mainloop_bytes": None, "epilogue_bytes": None,
           "capacity_bytes": None, "headroom_bytes": None,
           "tma_bytes": {"mk": None, "nk": None, "total": None}, "members": {}}
    if rep.error is not None or rep.kernel is None:
        return out
    tma = rep.tma_transaction_bytes

    def val(c):
        return None if c is None else c.value

    out.update(
        stages=rep.stages, kernel_bytes=rep.kernel.size,
        mainloop_bytes=rep.mainloop.size if rep.mainloop else None,
        epilogue_bytes=rep.epilogue.size if rep.epilogue else None,
        capacity_bytes=rep.capacity_bytes, headroom_bytes=rep.headroom_bytes,
        tma_bytes={"mk": val(tma.mk), "nk": val(tma.nk), "total": val(tma.total)} if tma else
        {"mk": None, "nk": None, "total": None},
        members={name: {"offset": f.offset, "size": f.size} for name, f in rep.kernel.walk()},
    )
    return out


def _get(rec: dict | None, key: str):
    if rec is None:
        return None
    if key.startswith("tma_bytes."):
        return (rec.get("tma_bytes") or {}).get(key.split(".", 1)[1])
    return rec.get(key)


def compare(cfg: Config, old: dict | None, new: dict | None) -> NumericRow:
    """A :class:`NumericRow` for one config from its two records."""
    changed = [k for k in NUMERIC_KEYS if _get(old, k) != _get(new, k)]
    members: list[dict] = []
    if _get(old, "verdict") == "does_not_compile" or _get(new, "verdict") == "does_not_compile":
        # no layout on one side: the verdict (and the error) says it all
        return NumericRow(config=cfg.to_dict(), label=cfg.label(), old=old, new=new,
                          changed=changed, members=members)
    om, nm = (old or {}).get("members", {}), (new or {}).get("members", {})
    names = list(om) + [n for n in nm if n not in om]
    for name in names:
        if om.get(name) != nm.get(name):
            members.append({"name": name, "old": om.get(name), "new": nm.get(name)})
            changed.append(f"kernel.{name}")
    return NumericRow(config=cfg.to_dict(), label=cfg.label(), old=old, new=new,
                      changed=changed, members=members)


def _compute_records(job) -> list[dict]:
    """Lay out ``configs`` on one target (also run in a worker process): their records."""
    from .engine import layouts

    tgt, configs = job
    return [record(r) for r in layouts(configs, tgt, use_cache=False)]


def numeric_records(targets: list, configs: list[Config], *, use_cache: bool = True,
                    jobs: int | None = None) -> list[list[dict]]:
    """Records (see :func:`record`) of every config on each :class:`~cutlass_layout.engine.Target`.

    Layouts come from the engine's results cache where it has them (written by ``layout``,
    ``sweep`` or an earlier diff; see :mod:`cutlass_layout.engine`); the others are laid out,
    one target per worker process when two have configs left (``jobs`` 1: in this process),
    and stored. ``use_cache=False`` lays out every config again.
    """
    from .engine import cached

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
        with Pool(n, parallel=n > 1) as pool:
            done = {id(job): recs for job, recs in pool.map(_compute_records, [j for _, _, j in work])}
        for side, todo, job in work:
            for i, rec in zip(todo, done[id(job)]):
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
    from .grid import grid_configs

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


def describe_grid(configs: list[Config]) -> str:
    """One line summarising a grid: the values of each config attribute that varies."""
    if not configs:
        return "(empty)"
    parts = []
    for attr in ("arch", "kernel", "a", "b", "preset", "stages", "c", "d"):
        seen = []
        for c in configs:
            v = c.to_dict()[attr]
            if v not in seen:
                seen.append(v)
        parts.append(f"{attr} {','.join(map(str, seen))}")
    tiles = []
    for c in configs:
        t = "x".join(map(str, c.tile))
        if t not in tiles:
            tiles.append(t)
    parts.append(f"tiles {' '.join(tiles)}")
    return f"{len(configs)} configs: " + "; ".join(parts)


# ============================================================================================
# the diff


def diff(old, new, grid=None, *, structural: bool = True, numeric: bool = True,
         cuda_path=None, use_cache: bool = True, jobs: int | None = None,
         grid_source: str | None = None) -> DiffResult:
    """Diff the shared-memory layouts of two CUTLASS trees.

    Args:
        old, new: anything :func:`cutlass_layout.sources.resolve_cutlass` accepts (include
            dir, checkout, site-packages dir, ``.whl``, installed distribution,
            ``flashinfer-python==0.6.8``), or a resolved ``CutlassTree``.
        grid: the numeric diff's configs: a list of :class:`Config`, a dict of grid values
            (:func:`cutlass_layout.grid.grid_configs`), or None for :func:`default_grid`.
        structural, numeric: which sides to compute.
        cuda_path: CUDA headers for the engine (see :func:`cutlass_layout.cuda.find_cuda`).
        use_cache: read results cached earlier: the structural diff of the two trees, and
            each config's layout (shared with ``layout`` and ``sweep``). Fresh results are
            stored either way.
        jobs: worker processes for the numeric side (one tree each; default: the CPUs).
        grid_source: how the grid was given, for the report (default: ``python``, or
            ``default`` when ``grid`` is None).

    Returns:
        A :class:`DiffResult` (bytes throughout). Identical trees (same content hash) give
        no differences without scanning or computing anything.

    Raises:
        BadInput: a side is missing, has no CUTLASS tree, names an unknown or source-only
            version, or the grid has a bad value; unusable CUDA headers (numeric side).
    """
    t0 = time.perf_counter()
    if not structural and not numeric:
        raise BadInput("nothing to diff: both the structural and the numeric side are off")
    old_tree = _resolve(old, "old")
    new_tree = _resolve(new, "new")
    from .engine import target

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
            from .grid import grid_configs

            grid = grid_configs(grid)
        res.grid = list(grid)
        res.grid_source = grid_source or "python"
    if res.identical:
        res.notes.append(f"the trees are identical (tree hash {old_tree.tree_hash}): "
                         "nothing to compare, nothing computed")

    if structural:
        res.structural, res.files_compared = structural_diff(old_tree, new_tree, use_cache=use_cache)
    if numeric:
        if res.identical or not res.grid:
            res.numeric = []
        else:
            old_recs, new_recs = numeric_records(tgts, res.grid, use_cache=use_cache, jobs=jobs)
            res.numeric = _sort_rows([compare(c, o, n) for c, o, n in zip(res.grid, old_recs, new_recs)])
    res.seconds = time.perf_counter() - t0
    return res


# ============================================================================================
# text report


def _verdict_text(v) -> str:
    return {"fits": "fits", "over_capacity": "over capacity",
            "does_not_compile": "does not compile"}.get(v, str(v))


def _cell(row: NumericRow, key: str) -> str:
    a, b = _get(row.old, key), _get(row.new, key)
    fmt = _verdict_text if key == "verdict" else (lambda x: "-" if x is None else str(x))
    return fmt(a) if a == b else f"{fmt(a)} -> {fmt(b)}"


def _side_line(name: str, side: Side) -> str:
    p = side.provenance
    return (f"{name}: {side.source}  CUTLASS {p['cutlass_version']} (version.h), "
            f"tree {p['tree_hash']}, {p['cutlass_root']}")


_CHANGE_WORDS = {
    "struct_added": "struct added", "struct_removed": "struct removed",
    "struct_moved": "struct moved", "struct_realigned": "struct alignas changed",
    "struct_bases_changed": "bases changed", "struct_kind_changed": "kind changed",
    "struct_condition_changed": "#if changed", "field_added": "field added",
    "field_removed": "field removed", "field_renamed": "field renamed",
    "field_retyped": "field retyped", "field_realigned": "alignas changed",
    "field_condition_changed": "field #if changed", "fields_reordered": "fields reordered",
    "alias_added": "alias added", "alias_removed": "alias removed",
    "alias_changed": "alias changed", "constant_added": "constant added",
    "constant_removed": "constant removed", "constant_changed": "constant changed",
    "constant_retyped": "constant type changed", "constant_moved": "constant moved",
}


def _short(text: str | None, width: int = 160) -> str:
    if text is None:
        return "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def _excerpt(a: str, b: str, width: int = 150) -> tuple[str, str]:
    """Both texts, shortened around where they differ when they are long."""
    if len(a) <= width and len(b) <= width:
        return a, b
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    start = max(0, pre - 40)

    def cut(t: str) -> str:
        end = min(len(t), max(len(t) - suf + 40, start + 60))
        core = t[start:end]
        if len(core) > width:
            core = core[: width - 1] + "…"
        return ("…" if start > 0 else "") + core + ("…" if end < len(t) else "")

    return cut(a), cut(b)


def _member_text(x) -> str:
    return "absent" if x is None else f"{x['size']} B @ {x['offset']}"


def render_text(res: DiffResult, member_lines: int = 8) -> str:
    """The readable report: sides, structural changes by file, then the numeric table with
    the rows that differ flagged ``*`` (verdict changes first, flagged ``!``). Under each
    changed row: the kernel members whose size changed (at most ``member_lines``; ``offset``
    in bytes from the start of the kernel's SharedStorage) and how many only moved."""
    out = [_side_line("old", res.old), _side_line("new", res.new)]
    out += [f"note: {n}" for n in res.notes]
    if res.structural is not None:
        out.append("")
        if not res.structural:
            what = "identical trees" if res.identical else f"{res.files_compared} headers differ"
            out.append(f"Structural (tree-sitter scan): no changes to storage structs or "
                       f"constants ({what})")
        else:
            out.append(f"Structural (tree-sitter scan of the {res.files_compared} headers that "
                       f"differ): {len(res.structural)} changes")
            counts: dict[str, int] = {}
            for c in res.structural:
                counts[c.change] = counts.get(c.change, 0) + 1
            out.append("  " + ", ".join(f"{_CHANGE_WORDS.get(k, k)} {v}" for k, v in counts.items()))
            last_file = None
            for c in res.structural:
                f = c.new_file or c.old_file
                if f != last_file:
                    out.append(f"  {f}")
                    last_file = f
                if c.old_file and c.new_file and c.old_file == c.new_file:
                    where = f" line {c.old_line} -> {c.new_line}"
                else:
                    where = " " + (f"{c.old_file}:{c.old_line}" if c.old_file else "(none)") + \
                        " -> " + (f"{c.new_file}:{c.new_line}" if c.new_file else "(none)")
                what = c.struct + (f"::{c.field}" if c.field and c.change.startswith("constant")
                                   else f".{c.field}" if c.field else "")
                spec = f"  [{c.specialization}]" if c.specialization else ""
                out.append(f"    {_CHANGE_WORDS.get(c.change, c.change)}: {what}{spec}")
                if c.change not in ("struct_moved", "constant_moved"):
                    if c.old is not None and c.new is not None:
                        a, b = _excerpt(c.old, c.new)
                        out.append(f"        old: {a}")
                        out.append(f"        new: {b}")
                    elif c.change.endswith(("_added", "_removed")) and (c.old or c.new) \
                            and not c.change.startswith("struct"):
                        out.append(f"        {'old' if c.old else 'new'}: {_short(c.old or c.new)}")
                out.append(f"       {where}")
    if res.numeric is not None:
        out.append("")
        src = {"default": "default grid", "flags": "grid from flags", "file": "grid file",
               "python": "grid"}.get(res.grid_source, "grid")
        out.append(f"Numeric (exact engine, libclang), {src}: {describe_grid(res.grid)}")
        if not res.numeric:
            out.append("  nothing computed" + (" (identical trees)" if res.identical else
                                              " (empty grid)"))
        else:
            nchg = len(res.numeric_changes)
            out.append(f"  {nchg} of {len(res.numeric)} configs differ "
                       f"({sum(r.verdict_changed for r in res.numeric)} verdict changes)")
            cols = ["verdict", "stages", "kernel_bytes", "mainloop_bytes", "epilogue_bytes",
                    "tma_bytes.mk", "tma_bytes.nk", "tma_bytes.total"]
            heads = ["", "config", "verdict", "stages", "kernel", "mainloop", "epilogue",
                     "TMA MK", "TMA NK", "TMA total"]
            table = []
            for r in res.numeric:
                c = r.config
                flag = "!" if r.verdict_changed else "*" if r.changed else ""
                name = f"{c['kernel']} {c['a']} {'x'.join(map(str, c['tile']))}"
                if c["stages"] != "auto":
                    name += f" st{c['stages']}"
                if c["preset"] != "flashinfer":
                    name += f" {c['preset']}"
                table.append([flag, name] + [_cell(r, k) for k in cols])
            widths = [max(len(str(x)) for x in col) for col in zip(heads, *table)]
            out.append("  " + "  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip())
            for row, r in zip(table, res.numeric):
                out.append("  " + "  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip())
                if "capacity_bytes" in r.changed:
                    out.append(f"        capacity: {_cell(r, 'capacity_bytes')} B")
                resized = [m for m in r.members if m["old"] is None or m["new"] is None
                           or m["old"]["size"] != m["new"]["size"]]
                shifted = len(r.members) - len(resized)
                names = [m["name"] for m in resized]
                # leaves (smem_SFB) before the containers that grow with them (tensors)
                resized.sort(key=lambda m: any(n.startswith(m["name"] + ".") for n in names))
                for m in resized[:member_lines]:
                    out.append(f"        {m['name']}: {_member_text(m['old'])} -> {_member_text(m['new'])}")
                if len(resized) > member_lines:
                    out.append(f"        ... {len(resized) - member_lines} more members change size")
                if shifted:
                    out.append(f"        ({shifted} more members only move: same size, new offset)")
                for side in ("old", "new"):
                    rec = getattr(r, side)
                    if r.verdict_changed and rec and rec.get("error"):
                        out.append(f"        {side}: {rec['error']}")
    out.append("")
    out.append("differences found" if res.has_differences else "no differences")
    return "\n".join(out) + "\n"


# ============================================================================================
# command line


def _grid_from_flags(tile, kernel, a, preset, stages, grid_file, old_tree=None, new_tree=None):
    """(configs or None for the default grid, grid_source)."""
    from .grid import grid_configs, load_grid_file

    flags = {k: list(v) for k, v in (("tile", tile), ("kernel", kernel), ("a", a),
                                      ("preset", preset), ("stages", stages)) if v}
    if grid_file:
        if flags:
            raise BadInput("--grid FILE cannot be combined with --tile/--kernel/--a/--preset/--stages")
        return load_grid_file(grid_file), "file"
    if not flags:
        return None, "default"
    values = dict(DEFAULT_GRID)
    values.update(flags)
    if "kernel" not in flags:
        fams = [k for k in FAMILY_FILES
                if k in supported_families(old_tree) and k in supported_families(new_tree)]
        values["kernel"] = fams or list(FAMILY_FILES)
    return grid_configs(values), "flags"


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help=f"Print JSON (schema {SCHEMA}).")
@click.option("--exit-code", is_flag=True, help="Exit 1 when there are differences (like git diff --exit-code).")
@click.option("--tile", multiple=True, help="Tile(s) MxNxK, braces allowed (quote them): '128x{32,64}x256'. Repeatable.")
@click.option("--kernel", multiple=True, help="dense and/or grouped (default: the families both trees have).")
@click.option("--a", "a", multiple=True, help="A element kind(s) (default nvfp4).")
@click.option("--preset", multiple=True, help="flashinfer and/or trtllm-moe (default flashinfer).")
@click.option("--stages", multiple=True, help="auto and/or N (default auto).")
@click.option("--grid", "grid_file", default=None, metavar="FILE", help="TOML/JSON grid file (as for sweeps).")
@click.option("--structural-only", is_flag=True, help="Only the tree-sitter diff of storage structs and constants.")
@click.option("--numeric-only", is_flag=True, help="Only the exact layouts of the config grid.")
@cuda_path_option
def command(old, new, as_json, exit_code, tile, kernel, a, preset, stages, grid_file,
            structural_only, numeric_only, cuda_path):
    """Diff the shared-memory layouts of two CUTLASS trees (OLD -> NEW).

    OLD and NEW are anything --cutlass accepts (include dir, checkout, wheel, installed
    distribution, NAME==VERSION such as flashinfer-python==0.6.8). Shows storage structs and
    constants that changed in the headers (structural), and, for a grid of configs, stages,
    SharedStorage sizes, TMA bytes, member offsets and the capacity verdict on both
    (numeric). Default grid: SM120 NVFP4 grouped and dense (those both trees have), tiles
    {128,256}x{32,64,128,256}x{128,256}, flashinfer flavour, stages auto.

    Exit 0 (with or without differences; 1 with --exit-code when there are any), 2 bad input.
    """
    if structural_only and numeric_only:
        raise BadInput("--structural-only and --numeric-only exclude each other")
    old_tree = _resolve(old, "old")
    new_tree = _resolve(new, "new")
    configs, source = _grid_from_flags(tile, kernel, a, preset, stages, grid_file, old_tree, new_tree)
    if structural_only and source != "default":
        raise BadInput("--structural-only takes no grid flags")
    res = diff(old_tree, new_tree, configs, structural=not numeric_only,
               numeric=not structural_only, cuda_path=cuda_path, grid_source=source)
    res.old.source, res.new.source = old, new
    if as_json:
        click.echo(json.dumps(res.to_dict(), indent=2))
    else:
        click.echo(render_text(res), nl=False)
    if exit_code and res.has_differences:
        sys.exit(1)


__all__ = ["SCHEMA", "DiffResult", "StructuralChange", "NumericRow", "Side", "diff",
           "structural_diff", "numeric_records", "default_grid", "supported_families",
           "describe_grid", "render_text", "record", "compare", "command"]
