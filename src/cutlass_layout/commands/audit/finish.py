"""The tail of an audit, of a shard of one and of their merge: the filters applied, notes,
capacity and order (:func:`finish_audit`); a shard's record (:func:`shard_part`) and the merge
of every shard (:func:`merge_shards`); the table's order (:func:`sort_tactics`) and finding a
tactic by id (:func:`find_tactic`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...errors import BadInput, NothingForArch
from ...installs.moe_sm80 import FAMILY as SM80_FAMILY
from ...installs.naming import MOE
from ...model import AuditResult, AuditShard, Constant, Tactic, Verdict
from ..shard import first_capacity, part_of, ranked_tactics, shard_capacities
from .accounts import account_notes, builder_parts, module_accounts
from .filters import filter_tests, haystack, keep_all, tile_spelling_notes, unmatched_filters
from .judge import judge_sources, nothing_found, slim

#: Verdicts in the order the table lists them.
VERDICT_ORDER = (Verdict.OVER_CAPACITY, Verdict.EXACT_FIT, Verdict.DOES_NOT_COMPILE, Verdict.FITS)

#: clang's error for a TVM FFI or dlpack header that is not on the include path
_TVM_FFI_MISSING = re.compile(r"'(?:tvm/ffi|dlpack)/[^']*' file not found")


def finish_audit(
    provenance: dict,
    arch: str,
    sources: list[dict],
    ranked: list[tuple[list, Tactic]],
    asked: dict,
    parts: dict,
    *,
    whole: bool = True,
    capacities: dict[int, Constant] | None = None,
) -> AuditResult:
    """The :class:`~cutlass_layout.model.AuditResult` of what an audit (or a shard of one, or
    the merge of all of them) laid out: the filters applied, notes, capacity, order.

    Args:
        provenance, arch: the audit's. sources: its entries, judged (:func:`judge_sources`).
        ranked: ``(rank, tactic)`` of every tactic laid out, before the filters (rank: its
            source's position and its kernel's; the ``moe_sm80`` family after every source).
        asked: ``family``, ``grep`` and ``filters`` (:func:`asked_of`).
        parts: ``families`` the install builds for the arch, ``modules`` (``[name, builder]``),
            ``failed`` (builder -> error), ``candidates`` (None where no MoE source was laid
            out, else ``{read, note}`` of the runtime's candidate list) and ``sm80`` (the
            ``moe_sm80`` family's notes, None where it was not laid out).
        whole: the whole audit: one without a tactic (besides ``moe_sm80``'s) and without a
            family asked raises; a shard (False) cannot tell.
        capacities: for a merge, the capacity constants of the tactics read back from the
            shards' JSON (:func:`~cutlass_layout.commands.shard.shard_capacities`); None: each
            tactic's report's.

    Notes, in order: the builders that failed, the TVM FFI headers missing, the runtime's
    candidate list, ``moe_sm80``'s, the module builders that give no kernel and why
    (:func:`~cutlass_layout.commands.audit.accounts.account_notes`; the result's ``modules``
    lists every builder: :func:`~cutlass_layout.commands.audit.accounts.module_accounts`;
    both for a whole audit only), the filters that matched nothing (:func:`unmatched_filters`
    over the family's tactics). The capacity is the first tactic's (by rank) that has one,
    before the filters. It is the one tail of :func:`audit` and of its shards' merge
    (:func:`merge_shards`), so that both give the same.

    Raises:
        NothingForArch: with ``whole``, no family asked and no tactic (:func:`nothing_found`).
    """
    family, grep = asked.get("family"), asked.get("grep")
    tests = filter_tests(**asked.get("filters", {}))
    tactics = [t for _, t in sorted(ranked, key=lambda x: x[0])]
    failed = parts.get("failed") or {}
    notes = [f"{b}: {e}" for b, e in failed.items()]
    if whole and family is None and not any(t.family != SM80_FAMILY for t in tactics):
        raise NothingForArch(
            nothing_found(provenance["version"], arch, [tuple(m) for m in parts.get("modules", [])], sources, failed)
        )
    tvm = provenance.get("tvm_ffi") or {}
    wanting = sum(1 for e in sources if e["error"] and _TVM_FFI_MISSING.search(e["error"]))
    if wanting and tvm.get("include") is None:
        notes.append(
            f"{wanting} source(s) include TVM FFI headers (tvm/ffi/*.h, dlpack/) and there are "
            f"none to use: {tvm.get('origin')}"
        )
    cand = parts.get("candidates")
    if not (cand and cand["read"]) and any(t.family == MOE for t in tactics):
        notes.append("runtime candidates: the install's candidate list for the arch could not be read")
    elif cand and cand["read"] and cand["note"]:
        notes.append(cand["note"])
    notes += parts.get("sm80") or []
    # the arch's capacity as its headers give it, read from every kernel laid out, before the
    # filters: a filter that keeps nothing does not make it unknown
    capacity = first_capacity(tactics, capacities)
    if family is not None:
        tactics = [t for t in tactics if t.family == family]
    accounts = module_accounts(parts, sources, family)
    unmatched, told = [], set()
    if family is not None and not tactics and family in parts.get("families", ()):
        n = sum(1 for e in sources if not e["skipped"])
        # a module that generates no source says why; one whose sources give nothing, they say
        empty = [a for a in accounts if a["family"] == family and a["module"] in (parts.get("why_none") or {})]
        why = [f"{a['module']}: {a['reason']}" for a in empty]
        told = {a["module"] for a in empty}
        what = (
            "matched no tactic: " + "; ".join(why)
            if why
            else f"matched no tactic: its {n} source(s) for {arch} gave no kernel"
            if n
            else f"matched no tactic: none of its {len(sources)} source(s) is built for {arch}"
        )
        unmatched.append(
            {"filter": "family", "value": family, "nearest": [], "detail": what, "note": f"family {family!r}: {what}"}
        )
    unmatched += unmatched_filters(tactics, grep, tests)
    notes += tile_spelling_notes(tactics, tests)
    if grep:
        tactics = [t for t in tactics if grep.lower() in haystack(t)]
    keep = keep_all(tests)
    tactics = [t for t in tactics if keep(t)]
    if whole:  # a shard's sources are some of the modules': its merge says
        notes += account_notes(accounts, arch, told, family)
    notes += [u["note"] for u in unmatched]
    return AuditResult(
        provenance=provenance,
        arch=arch,
        capacity=capacity,
        tactics=sort_tactics(tactics),
        sources=sources,
        notes=notes,
        families=list(parts.get("families", [])),
        unmatched=unmatched,
        asked=asked,
        modules=accounts if whole else [],
    )


def shard_part(
    shard: tuple[int, int], asked: dict, ranked: list[tuple[list, Tactic]], result: AuditResult, parts: dict
) -> AuditShard:
    """The :class:`~cutlass_layout.model.AuditShard` of a shard's ``result``: the rank of each
    of its tactics, the tactics laid out that its filters dropped, the rank of the tactic its
    capacity was read from (the first, by rank, whose report has one), and ``parts``."""
    rank = {id(t): r for r, t in ranked}
    kept = {id(t) for t in result.tactics}
    cap = next(
        (
            r
            for r, t in sorted(ranked, key=lambda x: x[0])
            if t.report is not None and t.report.capacity is result.capacity and t.report.capacity is not None
        ),
        None,
    )
    return AuditShard(
        index=shard[0],
        count=shard[1],
        asked=asked,
        ranks=[rank[id(t)] for t in result.tactics],
        dropped=[(r, t) for r, t in ranked if id(t) not in kept],
        capacity_rank=cap,
        parts=parts,
    )


def merge_shards(shards: list[AuditResult]) -> AuditResult:
    """The audit of a flashinfer install from all its shards' results (read from their JSON,
    :meth:`~cutlass_layout.model.AuditResult.from_dict`, by index): their sources put back in
    their places and judged again with every shard's parses (:func:`judge_sources`), their
    tactics, kept and dropped, in the whole's order (:func:`~cutlass_layout.commands.shard.ranked_tactics`),
    finished as :func:`audit` finishes (:func:`finish_audit`).

    Raises:
        BadInput: shards whose sources do not make up the whole once each; NothingForArch:
            as :func:`finish_audit` (the install gives no kernel for the arch).
    """
    first = shards[0]
    parts = part_of(first).parts
    total = parts["sources"]
    sources: list = [None] * total
    facts: list = [None] * total
    parsed: dict[int, dict] = {}
    for res in shards:
        p = part_of(res).parts
        for pos, entry, f, payload in zip(p["positions"], res.sources, p["facts"], p["parsed"]):
            if not 0 <= pos < total or sources[pos] is not None:
                raise BadInput(
                    f"shard {part_of(res).index}/{part_of(res).count} ({res.arch}) lays out a source "
                    "another shard lays out too, or one the audit does not have"
                )
            if payload is not None:  # judged again below, from what it holds
                entry = {**entry, "instantiations": None, "kernels": 0, "reason": None, "error": None}
                parsed[pos] = payload
            sources[pos], facts[pos] = entry, f
    if any(e is None for e in sources):
        raise BadInput(
            f"the {first.arch} shards lay out {sum(e is not None for e in sources)} of the audit's "
            f"{total} sources: were they written by one version of cutlass-layout?"
        )
    judge_sources(sources, facts, parsed)
    whole = {
        **parts,
        "candidates": next(
            (part_of(r).parts["candidates"] for r in shards if part_of(r).parts["candidates"] is not None), None
        ),
        "sm80": next((part_of(r).parts["sm80"] for r in shards if part_of(r).parts["sm80"] is not None), None),
    }
    return finish_audit(
        first.provenance,
        first.arch,
        sources,
        ranked_tactics(shards),
        part_of(first).asked,
        whole,
        capacities=shard_capacities(shards),
    )


def sort_tactics(tactics: Sequence[Tactic]) -> list[Tactic]:
    """Grouped by family (``moe`` first), then over capacity, exact fits, does not compile,
    fits; within a verdict by kernel bytes, largest first, then name."""

    def key(t: Tactic):
        kb = -1 if t.kernel_bytes is None else t.kernel_bytes
        return (
            t.family != MOE,
            t.family,
            VERDICT_ORDER.index(t.verdict),
            -kb,
            str(t.name),
            str(t.out),
            str(t.fusion),
            bool(t.swap_ab),
        )

    return sorted(tactics, key=key)


def find_tactic(result: AuditResult, text: str) -> Tactic:
    """The one tactic whose id equals ``text``, or else contains it (case-insensitive); of
    several that contain it, the one whose id ends with it (``.../finalize`` rather than its
    twin ``.../finalize/swap_ab``).

    Raises:
        BadInput: none or several match (the message lists up to eight ids).
    """
    ids = {t.id: t for t in result.tactics}
    if text in ids:
        return ids[text]
    hits = [i for i in ids if text.lower() in i.lower()]
    if len(hits) > 1:
        ends = [i for i in hits if i.lower().endswith(text.lower())]
        if len(ends) == 1:
            hits = ends
    if len(hits) == 1:
        return ids[hits[0]]
    if not hits:
        raise BadInput(
            f"no tactic matches {text!r}: give an id as `audit` lists them (family/name/AxB/out/fusion[/swap_ab])"
        )
    more = f" and {len(hits) - 8} more" if len(hits) > 8 else ""
    raise BadInput(f"{len(hits)} tactics match {text!r}: {', '.join(hits[:8])}{more}")


def audit_provenance(plan) -> dict:
    """What an audit's result says it read: the install (its version, origin, root and
    fingerprint), the TVM FFI headers, the generated sources' folder, the builders, the
    target's provenance."""
    install, tvm = plan.install, plan.tvm
    return {
        "library": "flashinfer-python",
        "version": install.version,
        "origin": install.origin,
        "root": str(install.root),
        "fingerprint": install.fingerprint,
        "tvm_ffi": {"include": str(tvm.include) if tvm.include else None, "origin": tvm.origin},
        "generated_root": str(plan.gen_root) if plan.gen_root else None,
        "builders": plan.build.builds.builders,
        **plan.prov,
    }


def audit_parts(plan, parsed: dict, cand, sm80_notes: list[str] | None) -> dict:
    """The ``parts`` :func:`finish_audit` reads (and a shard records, :func:`shard_part`): the
    sources laid out here (positions, facts, what was parsed of each, :func:`~cutlass_layout.commands.audit.judge.slim`),
    the families and modules, the builders that failed, the runtime's candidate list and
    ``moe_sm80``'s notes."""
    builds, facts = plan.build.builds, plan.facts
    mine = [i for i in plan.own if i < len(plan.sources)]
    return {
        "sources": len(plan.sources),
        "positions": mine,
        "facts": [facts[i] for i in mine],
        "parsed": [slim(parsed[i]) if i in parsed else None for i in mine],
        "families": plan.build.families,
        "modules": [[m.name, m.builder] for m in builds.modules],
        "failed": dict(builds.failed),
        "candidates": None
        if plan.cand_args is None
        else {"read": cand is not None, "note": None if cand is None else cand.note},
        "sm80": sm80_notes,
        "builders": list(builds.builders),
        **builder_parts(plan.install, plan.arch, builds),
    }


__all__ = [
    "VERDICT_ORDER",
    "audit_parts",
    "audit_provenance",
    "find_tactic",
    "finish_audit",
    "merge_shards",
    "shard_part",
    "sort_tactics",
]
