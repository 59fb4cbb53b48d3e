"""Diff the shared-memory layouts of two CUTLASS trees: what the headers say, and what it costs.

Two views, both keyed by the *content* of the trees (their tree hashes), never by the
version numbers in ``version.h``:

* **structural** (tree-sitter, no compiler): the storage structs (``*Storage``) and the
  TMA-bytes / stage / capacity constants of every header whose bytes differ between the two trees,
  matched by path relative to the include root
  (:func:`~cutlass_layout.commands.diff_structural.structural_diff`). Reported: structs added,
  removed or moved to another file; fields added, removed, renamed, retyped, re-aligned
  (``alignas``), reordered or put under another ``#if``; member aliases changed; constants added,
  removed or with a changed expression. Both sides' ``file:line`` are given. A struct whose only
  change is its line number is not a difference.
* **numeric** (the exact libclang engine, :func:`cutlass_layout.engine.loop.layouts`): for each
  config of a grid, stages, the kernel / mainloop / epilogue ``SharedStorage`` sizes, the TMA
  transaction bytes, every kernel member's offset and size, and the capacity verdict, on both trees
  (:func:`~cutlass_layout.commands.diff_numeric.numeric_records`,
  :func:`~cutlass_layout.commands.diff_numeric.compare`). This catches what the struct text does not
  show (a type alias or a builder that changed: CUTLASS 4.5.0's SFB padding changes sizes with the
  struct text unchanged).

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
``structural`` holds the changes that concern its family only
(:func:`~cutlass_layout.commands.diff_structural.keep_arch`) and ``structural_others`` counts the
others. ``changed`` names ``verdict``, ``stages``, ``kernel_bytes``, ``mainloop_bytes``,
``epilogue_bytes``, ``capacity_bytes``, ``tma_bytes.mk|nk|total`` and ``kernel.<member>`` (offset or
size changed, or member only on one side); ``members`` lists the changed members only. Rows come
verdict changes first, then other changes, then unchanged rows. Bytes throughout. The readable
report is :func:`cutlass_layout.reports.diff.render_text`.

The audit's ``tactics`` pair the two installs' tactics by configuration
(:func:`~cutlass_layout.commands.diff_audit.tactic_configuration`: family, arch, A/B/out, tile,
cluster, schedule, fusion, swap_ab, kernel kind), not by id. ``change`` is one of ``verdict``,
``numbers``, ``renamed`` (ids differ, numbers the same), ``added``, ``removed``, ``same``; a renamed
pair whose numbers differ too keeps ``verdict``/``numbers`` there and lists every kind in ``kinds``
(``["renamed", "numbers"]``). ``id`` is the new side's id (the old side's for ``removed``);
``old_id``/``new_id`` are each side's (null where absent); ``rename`` the differing part of the two
ids, widened to words (``{"old": "1SM", "new": "1SMfalse"}``), null when they are equal;
``paired_by`` ``id`` | ``configuration`` | ``name`` (see
:func:`~cutlass_layout.commands.diff_audit.pair_tactics`), null for added/removed; ``config`` the
configuration; ``kernel_bytes_delta`` new minus old kernel SharedStorage bytes (null where a side is
missing or does not compile). Two CUTLASS kernel libraries' kernels (``kind`` ``cutlass_library``;
``selection`` the library's filters given) are paired by procedural name instead
(:func:`~cutlass_layout.commands.diff_audit.pair_library_kernels`: ``paired_by`` ``id``, or
``core_name`` for a pre-4.x name and the one 4.x gives the kernel). ``summary`` counts the rows of
each ``change`` and the verdict changes by old and new verdict.

This module holds the command (:func:`diff`) and its sides; the views are
:mod:`cutlass_layout.commands.diff_structural`, :mod:`cutlass_layout.commands.diff_numeric` (with
the default grid) and :mod:`cutlass_layout.commands.diff_audit`.
"""

from __future__ import annotations

import time
from dataclasses import fields

from ..errors import BadInput
from ..model import DIFF_SCHEMA as SCHEMA
from ..model import AuditDiff, AuditResult, DiffResult, Provenance, Side
from ..core.pool import check_jobs
from .diff_audit import audit_diff
from .diff_numeric import compare, default_grid, grid_from_values, numeric_records, sort_rows
from .diff_structural import keep_arch, structural_diff


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
    return Provenance(
        cutlass_root=str(tree.include_root), cutlass_version=tree.version, tree_hash=tree.tree_hash, origin=tree.origin
    )


def _describe(src) -> str:
    return str(getattr(src, "origin", None) or src)


# ============================================================================================
# the diff


def diff(
    old,
    new,
    grid=None,
    *,
    structural: bool | None = None,
    numeric: bool | None = None,
    audit: bool = False,
    arch: str | list[str] | None = None,
    family: str | None = None,
    selection=None,
    cuda_path=None,
    use_cache: bool = True,
    jobs: int | None = None,
    grid_source: str | None = None,
    **grid_values,
) -> DiffResult:
    """Diff the shared-memory layouts of two CUTLASS trees.

    Args:
        old, new: anything :func:`cutlass_layout.sources.trees.resolve_cutlass` accepts (include
            dir, checkout, site-packages dir, ``.whl``, installed distribution,
            ``flashinfer-python==0.6.8``), or a resolved ``CutlassTree``.
        grid: the numeric diff's configs: a list of :class:`Config`, a dict of grid values
            (:func:`cutlass_layout.subjects.grid.grid_configs`), or None for
            :func:`~cutlass_layout.commands.diff_numeric.default_grid`.
        structural, numeric: which sides to compute (default: both; neither with ``audit``).
        audit: also compare the kernels the two installs build: each side is a flashinfer
            install (:func:`cutlass_layout.commands.audit.audit`, from the results cache where it
            has run), its tactics paired by configuration, renamed ones shown as such
            (:func:`~cutlass_layout.commands.diff_audit.audit_diff`); or both sides are CUTLASS
            kernel libraries (``nvidia-cutlass==VERSION``, its wheel, a ``cutlass_library`` folder,
            a CUTLASS checkout: :func:`cutlass_layout.commands.library_audit.audit_library`), their
            kernels paired by procedural name
            (:func:`~cutlass_layout.commands.diff_audit.pair_library_kernels`); ``arch`` (one;
            default ``sm120``) and ``family`` as in ``audit``.
        selection: with ``audit`` of two kernel libraries, the library's own filters
            (:class:`~cutlass_layout.installs.kernel_library.Selection`: ``--kernels`` and the like),
            the same on both sides; None: its default set.
        arch: an arch (any of :data:`cutlass_layout.subjects.config.ARCHS`) or several: the structural view keeps
            the headers and structs of their families
            (:func:`~cutlass_layout.commands.diff_structural.keep_arch`; the others are counted in
            ``structural_others`` and are not differences), and, without a ``grid``, the numeric
            grid is of that arch.
        cuda_path: CUDA headers for the engine (see :func:`cutlass_layout.sources.cuda.find_cuda`).
        use_cache: read results cached earlier: the structural diff of the two trees, and
            each config's layout (shared with ``layout`` and ``sweep``). Fresh results are
            stored either way.
        jobs: worker processes for the numeric side (one tree each; default: the CPUs).
        grid_source: how the grid was given, for the report (default: ``python``, or
            ``default`` when there is no grid).
        grid_values: instead of ``grid``, the values the command line's grid flags take
            (``tile="128x{32,64}x256"``, ``kernel``, ``a``, ``preset``, ``stages``; see
            :func:`~cutlass_layout.commands.diff_numeric.grid_from_values`).

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
    res = DiffResult(
        old=Side(_describe(old), _provenance(old_tree, tgts[0])),
        new=Side(_describe(new), _provenance(new_tree, tgts[1])),
        identical=old_tree.tree_hash == new_tree.tree_hash,
    )

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
        res.notes.append(
            f"the trees are identical (tree hash {old_tree.tree_hash}): nothing to compare, nothing computed"
        )

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
            res.numeric = sort_rows([compare(c, o, n) for c, o, n in zip(res.grid, old_recs, new_recs)])
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


def _audits(
    old, new, arch, family, selection, cuda_path, use_cache, jobs
) -> tuple[AuditDiff, AuditResult, AuditResult]:
    """``(the diff, old's audit, new's audit)``."""
    from ..sources.library import is_kernel_library
    from .audit.command import audit
    from .audit.filters import unknown_family

    libraries = [is_kernel_library(s) for s in (old, new)]
    if any(libraries):
        return _library_audits(old, new, libraries, arch, family, selection, cuda_path, use_cache, jobs)
    if selection is not None and any(selection.request().values()):
        raise BadInput(
            f"{selection.words()}: the kernel library's own filters, for two CUTLASS kernel "
            "libraries (nvidia-cutlass==VERSION, its wheel, a cutlass_library folder or a CUTLASS "
            "checkout), not flashinfer installs"
        )
    # a family may be built by one install only (added, removed): one neither builds is bad input
    a = audit(old, arch, family=family, cuda_path=cuda_path, jobs=jobs, use_cache=use_cache, strict_family=False)
    b = audit(new, arch, family=family, cuda_path=cuda_path, jobs=jobs, use_cache=use_cache, strict_family=False)
    assert a is not None and b is not None  # None: only for cached_only
    if family is not None and family not in a.families + b.families:
        raise BadInput(
            unknown_family(
                family,
                list(dict.fromkeys(a.families + b.families)),
                f"{a.provenance['version']} or {b.provenance['version']}",
                arch,
            )
        )
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
        raise BadInput(
            f"diff --audit compares two flashinfer installs or two CUTLASS kernel libraries, not one "
            f"of each: {lib} is CUTLASS's kernel library, {fi} a flashinfer install"
        )
    if family is not None and family != FAMILY:
        raise BadInput(f"unknown family {family!r}: CUTLASS's kernel library is one family, {FAMILY}")
    sel = selection if selection is not None else Selection()
    sides = []
    for src, which in ((old, "old"), (new, "new")):
        try:
            sides.append(
                audit_library(
                    src, arch, selection=sel, cuda_path=cuda_path, jobs=jobs, use_cache=use_cache, strict=False
                )
            )
        except BadInput as exc:
            raise BadInput(f"{which} ({src}): {exc}") from None
    a, b = sides
    if not a.tactics and not b.tactics:
        why = "; ".join(f"{w} ({s}): {r.notes[0]}" for w, s, r in (("old", old, a), ("new", new, b)) if r.notes)
        raise BadInput(f"neither library has a CUTLASS 3.x kernel for {arch} to compare with {sel.words()}: {why}")
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

    res = DiffResult(
        old=side(old, a),
        new=side(new, b),
        identical=(
            a.provenance["fingerprint"] == b.provenance["fingerprint"]
            and a.provenance.get("tree_hash") == b.provenance.get("tree_hash")
        ),
        audit=out,
    )
    res.seconds = time.perf_counter() - t0
    return res


__all__ = ["SCHEMA", "diff", "resolve_side"]
