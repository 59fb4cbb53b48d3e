"""The numeric view of a diff: each config of a grid laid out on both trees by the exact
libclang engine (:func:`cutlass_layout.engine.loop.layouts`, from its results cache where it
has them), the numbers compared (stages, the kernel / mainloop / epilogue ``SharedStorage``
sizes, TMA transaction bytes, every kernel member's offset and size, the capacity verdict),
and the default grid (SM120 block-scaled NVFP4 GEMMs, grouped and dense, where both trees
have the collective: ``cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp``,
``sm120_blockscaled_mma_tma.hpp``). The diff as a whole: :mod:`cutlass_layout.commands.diff`.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from ..model import NUMERIC_KEYS, MemberChange, NumericRecord, NumericRow, Verdict
from ..core.pool import default_jobs
from ..engine.schedule import Schedule
from ..subjects.config import Config


#: Default grid families: (kernel flag value, the collective header that must exist in both trees).
FAMILY_FILES = {
    "grouped": "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp",
    "dense": "cutlass/gemm/collective/sm120_blockscaled_mma_tma.hpp",
}

#: Default grid values (besides the kernel families): tiles M in {128, 256}, N in
#: {32, 64, 128, 256}, K in {128, 256}; NVFP4; flashinfer flavour; stages auto.
DEFAULT_GRID = {"a": "nvfp4", "tile": "{128,256}x{32,64,128,256}x{128,256}", "preset": "flashinfer", "stages": "auto"}


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
    return NumericRow(config=cfg, label=cfg.label(), old=old, new=new, changed=changed, members=members)


def compute_records(job) -> list[NumericRecord]:
    """Lay out ``configs`` on one target (also run in a worker process): their records."""
    from ..engine.loop import layouts

    tgt, configs = job
    return [record(r) for r in layouts(configs, tgt, use_cache=False)]


def numeric_records(
    targets: list, configs: list[Config], *, use_cache: bool = True, jobs: int | None = None
) -> list[list[NumericRecord]]:
    """Records (see :func:`record`) of every config on each :class:`~cutlass_layout.engine.loop.Target`.

    Layouts come from the engine's results cache where it has them (written by ``layout``,
    ``sweep`` or an earlier diff; see :mod:`cutlass_layout.engine.loop`); the others are laid out,
    one target per worker process when two have configs left (``jobs`` 1: in this process),
    and stored. ``use_cache=False`` lays out every config again.
    """
    from ..engine.loop import cached

    out: list[list[NumericRecord | None]] = []
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
        with Schedule(
            n, parallel=n > 1, spinner=f"laying out {configs_left} config(s) on {len(work)} tree(s) with libclang"
        ) as s:
            done = {i: recs for i, recs in s.run((i, compute_records, (job,)) for i, (_, _, job) in enumerate(work))}
        for j, (side, todo, _) in enumerate(work):
            for i, rec in zip(todo, done[j]):
                out[side][i] = rec
    return cast(list[list[NumericRecord]], out)  # each None was a todo, filled in above


def sort_rows(rows: list[NumericRow]) -> list[NumericRow]:
    return sorted(rows, key=lambda r: 0 if r.verdict_changed else 1 if r.changed else 2)


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
            notes.append(
                f"no SM120 block-scaled {k} family in the {' and '.join(missing)} tree "
                f"({FAMILY_FILES[k]} missing): not in the default grid"
            )
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
        fams = [k for k in FAMILY_FILES if k in supported_families(old_tree) and k in supported_families(new_tree)]
        merged["kernel"] = (fams or list(FAMILY_FILES)) if sm120 else list(FAMILY_FILES)
    return grid_configs(merged)


__all__ = [
    "FAMILY_FILES",
    "DEFAULT_GRID",
    "record",
    "changes",
    "compare",
    "numeric_records",
    "sort_rows",
    "supported_families",
    "default_grid",
    "grid_from_values",
]
