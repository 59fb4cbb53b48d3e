"""The tactics of an audit's laid-out sources: each kernel kept for the arch family named as
the install names it (:func:`~cutlass_layout.installs.naming.tactic_of`, remembered per run of
sources: ``audit-names``), in the whole audit's order (:func:`name_tactics`); each kept tactic
handed to ``on_tactic`` as its source comes in (:class:`Streamer`); and what a long audit
shows as it finds it (:func:`over_so_far`)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable

from ...core.cache import KINDS
from ...core.pool import gc_paused
from ...installs.dense_runners import DENSE, dense_configs
from ...installs.kernels import FoundKernel, kernel_arch
from ...installs.naming import tactic_of
from ...model import LayoutReport, Provenance, Tactic, Verdict
from .filters import kept_by

#: The remembered names of a run's kernels (:func:`load_names`); its row's code is what naming a kernel
#: (:func:`~cutlass_layout.installs.naming.tactic_of`) reads: this module, the naming rules, the kernel's
#: spelling as :mod:`~cutlass_layout.installs.kernels` reads it, the :class:`~cutlass_layout.model.Tactic`.
#: Names are made whether or not they are cached (the tactics with them): got and put, not memoized.
_NAMES = KINDS["audit-names"]
#: The :class:`~cutlass_layout.model.Tactic` fields :func:`~cutlass_layout.installs.naming.tactic_of` gives (all but the
#: report and what the audit adds: the runtime candidate, the fix, the runtime guard).
NAMED_FIELDS = (
    "family",
    "name",
    "a",
    "b",
    "out",
    "fusion",
    "swap_ab",
    "tile",
    "cluster",
    "kernel",
    "schedule",
    "file",
    "line",
    "launcher",
    "launcher_file",
    "launcher_line",
    "mma_sms",
    "dynamic_cluster",
    "epilogue_schedule",
    "mma_tile",
    "sm_version",
)


def over_so_far(arch: str, file: str, payload: dict, arch_fam: str) -> list[str]:
    """A line for each kernel over capacity in a source's freshly laid-out ``payload`` (its
    file and line, launcher (template arguments left out) and alias, ``sizeof`` of its
    SharedStorage and the bytes over): what a long audit shows on its progress display as
    each source comes in, before the table (``audit sm90: found: F:10 L<...>::GemmKernel:
    331776 B, 99328 B over capacity``)."""
    out = []
    for j, _ in _kept(payload["kernels"], arch_fam):
        k, rep = payload["kernels"][j]["found"], payload["kernels"][j]["report"]
        # a cached report's JSON (the layout schema's verdict)
        if rep.get("verdict") == Verdict.OVER_CAPACITY and rep.get("headroom_bytes") is not None:
            owner = re.sub(r"<.*", "<...>", re.sub(r"\(.*", "", k.get("owner") or ""))
            name = f"{owner}::{k['alias']}" if owner else k["alias"]
            size = (rep.get("kernel") or rep.get("storage") or {}).get("size")
            out.append(
                f"audit {arch}: found: {file}:{k.get('line')} {name}: {size} B, "
                f"{-rep['headroom_bytes']} B over capacity"
            )
    return out


def _kept(kernels: list[dict], arch_fam: str) -> list[tuple[int, None]]:
    """``(index, None)`` of each of a source's kernels that runs on ``arch_fam`` (an SM103
    build compiles SM100's kernels too; a kernel whose policy names no arch runs on the
    build's)."""
    return [
        (j, None) for j, item in enumerate(kernels) if (kernel_arch(item["found"]["spelling"]) or arch_fam) == arch_fam
    ]


def load_names(lines: list[list]) -> Callable:
    """The loader of remembered names: one list per source (whose kernels are found at
    ``lines[i]`` now) of ``[index, fields]`` of each kernel kept, ``fields`` as :data:`NAMED_FIELDS`
    (its ``line`` that of the kernel at ``index``); raises for anything else (a miss)."""

    def load(payload):
        if not (isinstance(payload, list) and len(payload) == len(lines)):
            raise ValueError("names of other sources")
        for per, found in zip(payload, lines):
            for j, fields in per:
                if not (
                    isinstance(j, int)
                    and 0 <= j < len(found)
                    and isinstance(fields, dict)
                    and fields.keys() == set(NAMED_FIELDS)
                    and fields["line"] == found[j]
                ):
                    raise ValueError("not names of these kernels")
        return payload

    return load


def found_from(d: dict) -> FoundKernel:
    """The :class:`~cutlass_layout.installs.kernels.FoundKernel` of a payload's ``found`` dict."""
    d = dict(d)
    if d.get("macro") is not None:
        d["macro"] = (d["macro"][0], list(d["macro"][1]))
    return FoundKernel(**d)


class Streamer:
    """Each kept tactic (:func:`~cutlass_layout.commands.audit.filters.kept_by`) to
    ``on_tactic(arch, tactic)`` as its source comes in, as the table will name it; nothing
    without ``on_tactic``. ``streamed``: the keys of the sources whose tactics went out."""

    def __init__(self, plan, asked: dict, on_tactic: Callable[[str, Tactic], None] | None):
        self.plan, self.on_tactic = plan, on_tactic
        self.keeps: Callable[[Tactic], bool] | None = kept_by(asked) if on_tactic is not None else None
        self.streamed: set[str] = set()

    def source(self, mod, source, key: str, payload: dict) -> None:
        """Each kept tactic of a source's payload."""
        if self.on_tactic is None:
            return
        plan = self.plan
        self.streamed.add(key)
        for j, _ in _kept(payload.get("kernels") or [], plan.arch_fam):
            item = payload["kernels"][j]
            rep = replace(
                item.get("loaded") or LayoutReport.from_dict(item["report"]), provenance=Provenance(**plan.prov)
            )
            t = tactic_of(mod.name, source.path, plan.gen_root, found_from(item["found"]), rep, plan.install.root)
            if self.keeps is not None and self.keeps(t):  # (keeps: set with on_tactic)
                self.on_tactic(plan.arch, t)

    def tactic(self, t: Tactic, key: str | None = None) -> None:
        """``t`` if kept, unless its source's tactics went out already (``key``)."""
        if self.on_tactic is not None and self.keeps is not None and key not in self.streamed and self.keeps(t):
            self.on_tactic(self.plan.arch, t)


def _dense_candidate(plan, t: Tactic, source, use_cache: bool) -> bool | None:
    """Whether a dense runner's config list (:func:`~cutlass_layout.installs.dense_runners.dense_configs`,
    read once per family with the flags of its first source, kept in ``plan.dense``) holds ``t``;
    None where the list was not read."""
    if t.family not in plan.dense:
        plan.dense[t.family] = dense_configs(plan.install, t.family, list(source.flags), use_cache=use_cache)
    configs = plan.dense[t.family]
    ids = configs.ids(t) if configs is not None else None
    return None if ids is None else bool(ids)


def name_tactics(plan, results: dict, cand, stream: Streamer, use_cache: bool) -> tuple[list, dict]:
    """``(ranked, origins)``: ``(rank, tactic)`` of every kernel of the sources laid out that runs
    on the arch family (rank: its source's position and its kernel's index), each with its
    runtime candidate (``cand``, where read), and ``id(tactic) -> (Source, preamble, found
    kernel)`` (what a fix search reads). Names are remembered for these sources' results
    (naming a whole install's kernels again was a visible share of its warm audit:
    docs/performance.md)."""
    work, arch_fam = plan.work, plan.arch_fam
    ranked: list[tuple[list[int], Tactic]] = []  # (rank in the whole audit, tactic), before the filters
    origins: dict[int, tuple] = {}  # id(tactic) -> (source, preamble, found kernel)
    names_key = _NAMES.key(
        subject=[[w[2] for w in work], [w[0].name for w in work]],
        target=[str(plan.gen_root), str(plan.install.root), arch_fam],
    )
    lines = [[item["found"]["line"] for item in results[w[2]]["kernels"]] for w in work]
    named = _NAMES.get(names_key, load_names(lines)) if use_cache else None
    made: list[list] = []
    with gc_paused(freeze=True):  # the tactics and their reports: never scanned again
        for w, (mod, source, key, pre, entry) in enumerate(work):
            made.append([])
            kernels = results[key]["kernels"]
            for j, fields in named[w] if named is not None else _kept(kernels, arch_fam):
                item = kernels[j]
                k = found_from(item["found"])
                rep = item.pop("loaded", None) or LayoutReport.from_dict(item["report"])
                prov = Provenance(**plan.prov)
                if fields is None:
                    t = tactic_of(
                        mod.name, source.path, plan.gen_root, k, replace(rep, provenance=prov), plan.install.root
                    )
                    made[-1].append([j, {f: getattr(t, f) for f in NAMED_FIELDS}])
                else:  # the report made once more, not twice: its provenance and config at once
                    t = Tactic(**fields, report=rep)
                    t.report = replace(rep, provenance=prov, config={"tactic": t.id, **t.identity()})
                # a dense runner's list is its getConfigs; the MoE runners' the candidate lists
                t.runtime_candidate = (
                    _dense_candidate(plan, t, source, use_cache)
                    if t.family in DENSE
                    else cand.get(t)
                    if cand is not None
                    else None
                )
                ranked.append(([plan.position[id(entry)], j], t))
                origins[id(t)] = (source, pre, k)
                stream.tactic(t, key)  # all from the cache: the tactics as they are made
    # remembered only where every source's result is the cached one (a source whose error is
    # passing, not stored, may give other kernels next time under the same key)
    if named is None and all(results[w[2]].get("error") is None or results[w[2]].get("lasting") for w in work):
        _NAMES.put(names_key, made)
    return ranked, origins


__all__ = ["Streamer", "found_from", "name_tactics", "over_so_far"]
