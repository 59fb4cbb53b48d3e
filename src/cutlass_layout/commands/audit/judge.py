"""What a generated source instantiates (read from its text without a parse), and why one
gives no kernel: each source entry's ``instantiations``, ``kernels``, ``reason`` and ``error``
(:func:`judge_sources`), and the one line for an install that gives no kernel for an arch
(:func:`nothing_found`)."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet

from ...cpp.brackets import blank_comments
from ...cpp.declarations import declared_functions, explicit_instantiations, kernel_aliases
from ...cpp.macros import macro_calls


def source_facts(text: str) -> dict:
    """What a source's text says it instantiates and uses, read without a parse
    (:mod:`cutlass_layout.cpp.text`): ``explicit`` (``(name, arguments, line)`` of each
    explicit instantiation of a function template), ``defined`` (the functions it defines at
    namespace scope), ``calls`` (the functions it declares without defining them and names
    again: what another source defines or instantiates), ``aliases`` (``(alias, line)`` of
    each kernel alias it writes itself) and ``macro_calls`` (``(name, line)`` of each upper-case
    macro call starting a line: which of them are launchers, a parse says)."""
    clean = blank_comments(text)
    declared = declared_functions(text)
    defined = sorted({n for n, _, d in declared if d})
    calls = []
    for name in dict.fromkeys(n for n, _, d in declared if not d and n not in defined):
        times = sum(1 for n, _, _ in declared if n == name)
        if len(re.findall(rf"\b{re.escape(name)}\b", clean)) > times:
            calls.append(name)
    return {
        "explicit": explicit_instantiations(text),
        "defined": defined,
        "calls": calls,
        "aliases": kernel_aliases(text),
        "macro_calls": macro_calls(text),
    }


def _counted(names: list[str]) -> str:
    """``a (x3), b``: distinct names in order, with how often each occurs where more than once."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{n} (x{c})" if c > 1 else n for n, c in counts.items())


def _files(files: list[str]) -> str:
    return files[0] + (f" and {len(files) - 1} more" if len(files) > 1 else "")


def judge_source(
    entry: dict, facts: dict | None, payload: dict | None, module_facts: dict, launchers: AbstractSet[str] = frozenset()
) -> None:
    """Set ``instantiations``, ``kernels``, ``reason`` and ``error`` of a source's entry
    (:attr:`~cutlass_layout.model.AuditResult.sources`) from its text's ``facts``
    (:func:`source_facts`) and its laid-out ``payload`` (None for a source skipped or not read).

    ``instantiations``: the explicit instantiations of function templates and the calls of
    ``launchers`` (the launcher macros of the audit: those any source's parse found a kernel
    alias in, ``launcher_macros`` of the payloads) it holds; None for a source skipped. Each
    is matched with the kernels found at its line (for a source read without error);
    one without a kernel makes ``error`` ``"instantiates N launcher(s) whose kernel this
    reader cannot see: NAME (xK)"``. A source read without error that gives no kernel has a
    ``reason``: ``"calls kernels defined elsewhere: NAME (instantiated in FILE and N more)"``
    (the functions it declares and names, found in the other sources of its module,
    ``module_facts``: file -> facts, with ``owners``, what the kernels found there are
    declared in) or ``"instantiates no kernel: ..."``; or, where it writes
    a kernel alias itself, the ``error`` ``"declares N kernel type(s) this reader found no
    kernel of: ..."``."""
    entry.setdefault("instantiations", None)
    entry.setdefault("reason", None)
    if facts is None:
        return
    seen = [(f"{name}<...>", line) for name, _, line in facts["explicit"]]
    seen += [(name, line) for name, line in facts["macro_calls"] if name in launchers]
    seen.sort(key=lambda x: x[1])
    entry["instantiations"] = len(seen)
    if payload is None:
        return
    found = payload["kernels"]
    entry["kernels"] = len(found)
    if payload.get("error") is not None:
        entry["error"] = payload["error"]
        return
    lines = {item["found"].get("line") for item in found}
    unseen = [name for name, line in seen if line not in lines]
    if unseen:
        laid = f" (its other {len(seen) - len(unseen)} laid out)" if len(unseen) < len(seen) else ""
        entry["error"] = (
            f"instantiates {len(unseen)} launcher(s) whose kernel this reader cannot see{laid}: {_counted(unseen)}"
        )
        return
    if found:
        return
    if facts["aliases"]:
        shown = ", ".join(f"{a} (line {ln})" for a, ln in facts["aliases"][:4])
        more = f" and {len(facts['aliases']) - 4} more" if len(facts["aliases"]) > 4 else ""
        entry["error"] = (
            f"declares {len(facts['aliases'])} kernel type(s) this reader found no kernel of: {shown}{more}"
        )
        return
    if facts["calls"]:
        said = []
        for name in facts["calls"]:
            # instantiated there explicitly, or a kernel there is declared in what it names
            # (a launcher macro's struct, ``NAME_128_32_128_false_...``)
            inst = [
                f
                for f, x in module_facts.items()
                if f != entry["file"]
                and (
                    any(n == name for n, _, _ in x["explicit"])
                    or any(re.match(rf"{re.escape(name)}\b|{re.escape(name)}_", o) for o in x.get("owners", ()))
                )
            ]
            defs = [f for f, x in module_facts.items() if f != entry["file"] and name in x["defined"]]
            where = (
                f"instantiated in {_files(inst)}"
                if inst
                else f"defined in {_files(defs)}"
                if defs
                else "in none of the module's sources"
            )
            said.append(f"{name} ({where})")
        entry["reason"] = "calls kernels defined elsewhere: " + ", ".join(said)
        return
    entry["reason"] = "instantiates no kernel: no launcher macro call, explicit instantiation or kernel type in it"


def judge_sources(sources: list[dict], facts: list[dict | None], parsed: dict[int, dict]) -> None:
    """:func:`judge_source` of every entry of ``sources`` (an audit's, in its order), from
    ``facts`` (each source's :func:`source_facts`, None for one not read) and ``parsed`` (the
    payloads of the sources laid out, by position in ``sources``: each its kernels, each
    ``{"found": {"line", "owner", ...}}``, its ``error`` and ``launcher_macros``; a source not
    among them was not laid out). The launcher macros are those of every payload, and the
    other sources a source's kernels may be defined in those of its module that were read
    (with the owners of their kernels where laid out): a source is judged by all of them."""
    launchers = {m for payload in parsed.values() for m in payload.get("launcher_macros") or ()}
    module_facts: dict[str, dict] = {}  # module -> {file: facts, with owners}
    for i, (entry, f) in enumerate(zip(sources, facts)):
        if f is not None:
            owners = (
                sorted({item["found"]["owner"] for item in parsed[i]["kernels"] if item["found"].get("owner")})
                if i in parsed
                else []
            )
            module_facts.setdefault(entry["module"], {})[entry["file"]] = {**f, "owners": owners}
    for i, (entry, f) in enumerate(zip(sources, facts)):
        if i in parsed:
            judge_source(entry, f, parsed[i], module_facts.get(entry["module"], {}), launchers)
        else:  # skipped, not readable, or laid out by another shard
            judge_source(entry, None if entry["skipped"] else f, None, {}, launchers)


def slim(payload: dict) -> dict:
    """What :func:`judge_sources` reads of a source's payload: its error, launcher macros and
    each kernel's line and owner (a shard's ``parts``: the merge judges the sources again)."""
    return {
        "error": payload.get("error"),
        "launcher_macros": payload.get("launcher_macros"),
        "kernels": [
            {"found": {"line": item["found"].get("line"), "owner": item["found"].get("owner")}}
            for item in payload["kernels"]
        ],
    }


def nothing_found(version: str, arch: str, modules: list[tuple[str, str]], sources: list[dict], failed: dict) -> str:
    """The one line for an install whose builders give no kernel for ``arch``: the modules
    (``(name, builder)``) that generate no source, what the sources of the others are
    (skipped, not read, without a kernel: one group per reason, the location of an error left
    out, with a file each and how many more), and which builders failed."""
    parts = []
    have = {e["module"] for e in sources}
    empty = [f"{name} ({builder.rsplit('.', 1)[-1]})" for name, builder in modules if name not in have]
    if empty:
        parts.append(f"{', '.join(empty)} generate{'s' if len(empty) == 1 else ''} no source")
    if sources:
        groups: dict[str, list[str]] = {}
        for e in sources:
            what = e.get("skipped") or e.get("error") or e.get("reason") or "no kernel"
            what = re.sub(r" \(/[^()]*:\d+\)$", "", what)  # in the source itself: one per file
            groups.setdefault(what, []).append(e["file"].rsplit("/", 1)[-1])
        mods = sorted(have)
        said = [
            f"{len(files)} ({_files(files)}): {what}"
            for what, files in sorted(groups.items(), key=lambda kv: -len(kv[1]))
        ]
        parts.append(f"of the {len(sources)} source(s) of {', '.join(mods)}: " + "; ".join(said))
    if not modules:
        parts.append("no module builder for it ran")
    if failed:
        parts.append("builders that failed: " + "; ".join(f"{b}: {e}" for b, e in failed.items()))
    return f"flashinfer {version} builds no kernel this reader can lay out for {arch}: " + "; ".join(parts)


__all__ = ["judge_source", "judge_sources", "nothing_found", "slim", "source_facts"]
