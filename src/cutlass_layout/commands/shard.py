"""audit --shard I/N and --merge: one audit laid out in N parts (N CI jobs, N machines), and
the parts joined back into the audit of the whole.

``shard_of(weights, (i, n))`` is the split: the units of an audit (a flashinfer install's
generated sources and its ``moe_sm80`` family, :func:`cutlass_layout.commands.audit.audit`;
CUTLASS's library's kernels by procedural name,
:func:`cutlass_layout.commands.library_audit.audit_library`), in the audit's own order, cut
into ``n`` runs of about equal weight. It is a function of the weights alone, which every
machine computes alike from the same install, arch and filters, so every shard knows its part
without asking the others.

``merge(docs, mergers)`` joins the shards' ``audit --json`` (each holds a ``shard`` object,
:class:`~cutlass_layout.model.AuditShard`): it refuses documents that are not shards of one
audit (another install, arch or filters, a shard twice or missing) and hands each arch's
shards to the merger of its kind, which finishes them as the audit of the whole does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..errors import BadInput
from ..model import AUDIT_SCHEMA, AuditResult, AuditSet, AuditShard, Constant, Tactic

#: What a shard is named by, as typed: ``I/N``.
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def check_shard(shard) -> tuple[int, int]:
    """``shard`` as ``(index, count)``: two integers, 1 <= index <= count.

    Raises:
        BadInput: anything else (the message names the value).
    """
    try:
        index, count = (int(x) for x in shard)
    except (TypeError, ValueError):
        raise BadInput(f"shard {shard!r}: give (I, N), shard I of N, 1 <= I <= N") from None
    if count < 1 or not 1 <= index <= count:
        raise BadInput(f"shard {index}/{count}: give I/N with N >= 1 and 1 <= I <= N")
    return index, count


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)`` (:func:`check_shard`).

    Raises:
        BadInput: not ``I/N`` of integers with 1 <= I <= N.
    """
    m = _SHARD.fullmatch(str(text))
    if m is None:
        raise BadInput(f"shard {text}: give I/N, shard I of N (1/2, 2/2)")
    return check_shard((m.group(1), m.group(2)))


def shard_of(weights: Sequence[int], shard: tuple[int, int]) -> list[int]:
    """The positions (ascending) of the units that shard ``(i, n)`` takes: the units in their
    order cut into ``n`` runs of about equal weight (``weights``, one per unit, 0 or more), each
    unit in the run its weight's midpoint falls in (shard ``s`` takes those whose midpoint lies
    in ``[(s-1) T/n, s T/n)``, ``T`` the total weight), so the shards' weights differ by a
    unit's at most and the units that follow each other (one folder's sources, which share a
    translation unit) stay together. A unit of weight 0 goes with its neighbours; with no weight
    at all, the units are cut by count. Every unit is in exactly one shard; a shard may have
    none (more shards than units).

    Raises:
        BadInput: a bad ``shard`` (:func:`check_shard`); ValueError: a negative weight.
    """
    index, count = check_shard(shard)
    if any(w < 0 for w in weights):
        raise ValueError("shard_of: a negative weight")
    total = sum(weights)
    out, before = [], 0
    for pos, w in enumerate(weights):
        mid = (count * (2 * before + w)) // (2 * total) if total else count * pos // len(weights)
        if min(count - 1, mid) == index - 1:
            out.append(pos)
        before += w
    return out


def read_shards(paths: Sequence) -> list[tuple[str, dict]]:
    """``(path, JSON)`` of each file of ``paths`` (regular files only; no size limit: an audit's
    JSON of thousands of kernels is tens of MB).

    Raises:
        BadInput: no path, a file that cannot be read, or that is not JSON.
    """
    from ..core.files import read_text

    if not paths:
        raise BadInput("no audit JSON to merge: give every shard's file (audit --shard I/N --json)")
    out = []
    for path in paths:
        text = read_text(path, what="audit JSON", limit=False)
        try:
            out.append((str(path), json.loads(text)))
        except json.JSONDecodeError as exc:
            raise BadInput(f"audit JSON {path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    return out


def _audits(path: str, doc) -> tuple[bool, list[AuditResult]]:
    """(several arches, each audit) of one shard's document, each read back as written."""
    several = isinstance(doc, dict) and isinstance(doc.get("audits"), list)
    items = doc["audits"] if several else [doc]
    if not items or not all(isinstance(a, dict) and a.get("schema") == AUDIT_SCHEMA for a in items):
        raise BadInput(
            f"{path}: not the JSON of cutlass-layout audit (schema {AUDIT_SCHEMA}, or "
            '{"audits": [...]} of several arches)'
        )
    out = []
    for a in items:
        if not isinstance(a.get("shard"), dict):
            raise BadInput(
                f'{path}: the audit of {a.get("arch")} is not a shard\'s (no "shard" object: '
                "audit --shard I/N --json writes one)"
            )
        try:
            res = AuditResult.from_dict(a)
            same = res.to_dict() == {k: v for k, v in a.items() if k != "verification"}
        except (KeyError, TypeError, ValueError, AttributeError):
            same = False
        if not same:
            raise BadInput(
                f"{path}: its {a.get('arch')} audit does not read back as written (edited, or "
                "written by another version of cutlass-layout)"
            )
        out.append(res)
    return several, out


def _install(res: AuditResult) -> str:
    p = res.provenance
    return f"{p.get('library')} {p.get('version')} (fingerprint {p.get('fingerprint')})"


def _one_audit(given: list[tuple[str, AuditResult]]) -> list[AuditResult]:
    """The shards of one arch's audit, by index, checked to be every shard of one audit.

    Raises:
        BadInput: another install, arch, filters or count than the first file's; a shard given
            twice; a shard missing (each named).
    """
    path0, first = given[0]
    for path, res in given[1:]:
        if res.provenance.get("fingerprint") != first.provenance.get("fingerprint") or res.provenance.get(
            "library"
        ) != first.provenance.get("library"):
            raise BadInput(
                f"{path} audits {_install(res)}, {path0} {_install(first)}: the shards of one "
                "audit come from one install"
            )
        if res.arch != first.arch:
            raise BadInput(f"{path} audits {res.arch}, {path0} {first.arch}: the shards of one audit are of one arch")
        if part_of(res).asked != part_of(first).asked:
            diff = sorted(
                k
                for k in set(part_of(res).asked) | set(part_of(first).asked)
                if part_of(res).asked.get(k) != part_of(first).asked.get(k)
            )
            raise BadInput(
                f"{path} was asked other {', '.join(diff)} than {path0} "
                f"({json.dumps({k: part_of(res).asked.get(k) for k in diff})} and "
                f"{json.dumps({k: part_of(first).asked.get(k) for k in diff})}): the shards of one "
                "audit are asked alike"
            )
        if part_of(res).count != part_of(first).count:
            raise BadInput(
                f"{path} is shard {part_of(res).index}/{part_of(res).count}, {path0} shard "
                f"{part_of(first).index}/{part_of(first).count}: the shards of one audit are cut alike"
            )
    count = part_of(first).count
    seen: dict[int, str] = {}
    for path, res in given:
        if part_of(res).index in seen:
            raise BadInput(
                f"shard {part_of(res).index}/{count} ({first.arch}) given twice: {seen[part_of(res).index]} and {path}"
            )
        seen[part_of(res).index] = path
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        what = "shard " + missing[0] if len(missing) == 1 else "shards " + ", ".join(missing)
        raise BadInput(
            f"{what} of the {first.arch} audit missing (given: "
            f"{', '.join(f'{i}/{count} in {p}' for i, p in sorted(seen.items()))})"
        )
    return [res for _, res in sorted(given, key=lambda x: part_of(x[1]).index)]


def part_of(res: AuditResult) -> AuditShard:
    """The :class:`~cutlass_layout.model.AuditShard` of a shard's result (a merge reads only
    those: :func:`merge` checks)."""
    assert res.shard is not None
    return res.shard


def ranked_tactics(shards: list[AuditResult]) -> list[tuple[list, Tactic]]:
    """``(rank, tactic)`` of every tactic the shards laid out, kept or dropped by the filters, in
    the order of the whole audit before sorting (:attr:`~cutlass_layout.model.AuditShard.ranks`)."""
    out = []
    for res in shards:
        out += list(zip(part_of(res).ranks, res.tactics)) + list(part_of(res).dropped)
    return sorted(out, key=lambda x: x[0])


def shard_capacities(shards: list[AuditResult]) -> dict[int, Constant]:
    """``id(tactic) -> capacity constant`` of the tactic each shard's capacity was read from (its
    :attr:`~cutlass_layout.model.AuditShard.capacity_rank`), among the tactics of
    :func:`ranked_tactics`: a row holds the capacity's value alone, and the first tactic of the
    whole (by rank) that has a capacity is the first of its shard, so :func:`first_capacity`
    of the merge's tactics gives the capacity the audit of the whole gives."""
    out = {}
    for res in shards:
        sh = part_of(res)
        for rank, t in list(zip(sh.ranks, res.tactics)) + list(sh.dropped):
            if sh.capacity_rank is not None and rank == sh.capacity_rank and res.capacity is not None:
                out[id(t)] = res.capacity
    return out


def first_capacity(tactics, capacities: dict[int, Constant] | None = None) -> Constant | None:
    """The capacity constant of the first of ``tactics`` that has one: with ``capacities`` (a
    merge, :func:`shard_capacities`) the one given for it, else its report's (a tactic read
    back from JSON has none)."""
    for t in tactics:
        if capacities is not None:
            c = capacities.get(id(t))
        else:
            c = None if t.report is None else t.report.capacity
        if c is not None:
            return c
    return None


def merge(docs: list[tuple[str, dict]], mergers: dict) -> AuditResult | AuditSet:
    """The audit of the whole from every shard's ``audit --json`` (``docs``: ``(path, JSON)``):
    per arch, its shards are checked (:func:`_one_audit`) and given to ``mergers[library]``
    (``library`` the provenance's: ``flashinfer-python``, ``cutlass_library``), a function of
    the shards (by index) that returns the whole's :class:`~cutlass_layout.model.AuditResult`.

    Returns:
        What the audit without ``--shard`` returns: an ``AuditResult``, or for documents of
        several arches (``{"audits": [...]}``) an :class:`~cutlass_layout.model.AuditSet` in
        their order, less an arch that ``all`` brought in and whose whole gives nothing
        (named in its ``notes``, as :func:`cutlass_layout.commands.audit.audit_archs` does).

    Raises:
        BadInput: a document that is not a shard's audit JSON (or does not read back as
            written), documents of other arches, installs or filters, a shard given twice or
            missing; what the merger raises (the whole gives no kernel: ``NothingForArch``).
    """
    from ..errors import NothingForArch

    read = [(path, *_audits(path, doc)) for path, doc in docs]
    path0, several, first = read[0]
    for path, sev, audits in read[1:]:  # (one arch's audit: its arch is checked with its shards')
        if sev != several or several and [a.arch for a in audits] != [a.arch for a in first]:
            raise BadInput(
                f"{path} holds the audits of {', '.join(a.arch for a in audits)}, {path0} of "
                f"{', '.join(a.arch for a in first)}: the shards of one audit hold the same arches"
            )
    results, left, notes = [], [], []
    for k, res0 in enumerate(first):
        shards = _one_audit([(path, audits[k]) for path, _, audits in read])
        library = res0.provenance.get("library")
        if library not in mergers:
            raise BadInput(f"{path0}: an audit of {library!r}, which this version does not merge")
        try:
            results.append(mergers[library](shards))
        except NothingForArch as exc:
            named = [a for a in part_of(res0).asked.get("archs", [res0.arch]) if a != "all"]
            if not several or res0.arch in named:
                raise
            left.append(exc)
            notes.append(f"all: {res0.arch} not audited: {exc}")
    if not several:
        return results[0]
    if not results:
        raise left[0]
    return AuditSet(results=results, notes=notes)


__all__ = [
    "check_shard",
    "first_capacity",
    "merge",
    "parse_shard",
    "ranked_tactics",
    "read_shards",
    "shard_capacities",
    "shard_of",
]
