"""Every JIT module builder an install has for the arch, accounted for: laid out (its kernels),
or named with the reason it gives none (:func:`module_accounts`), for the audit's ``modules``
(the JSON's ``modules``) and its notes (:func:`account_notes`)."""

from __future__ import annotations

import re

from ...installs.naming import family_of

#: an error's location in a source (its own path and line): sources that fail alike are one group
_WHERE = re.compile(r" \(/[^()]*:\d+\)$")


def builder_parts(install, arch: str, builds) -> dict:
    """What :func:`module_accounts` needs of the install's builds, as JSON values (a shard's
    ``parts`` keep them): ``unrun`` (``[builder, why]`` of each builder of
    :func:`~cutlass_layout.sources.flashinfer_jit.arch_survey` not run) and ``why_none``
    (module -> why it generates no source, for each that generates none)."""
    from ...sources.flashinfer_jit import arch_survey

    return {
        "unrun": [[f"{m}.{f}", why] for m, f, why in arch_survey(install, arch) if why is not None],
        "why_none": {m.name: m.why_none for m in builds.modules if m.why_none},
    }


def module_accounts(parts: dict, sources: list[dict], family: str | None) -> list[dict]:
    """One entry per JIT module builder the install has for the arch: ``{builder, module,
    family, sources, kernels, reason}``. ``module`` and ``family`` are None for a builder that
    made no module (not run: ``reason`` says why; failed; or no ``gen_jit_spec`` call);
    ``sources`` counts the module's generated sources, ``kernels`` the kernels found in them
    (None: not laid out, as for a module of another family than ``family``, when one is
    asked); ``reason`` is None for a module with a kernel, else why it has none: why it
    generates no source (``parts["why_none"]``), or what its sources are (skipped, an error,
    no kernel: one group per message, with its count). In the order: modules as the builders
    made them, builders without a module, builders not run."""
    out = []
    modules = [tuple(m[:2]) for m in parts.get("modules", [])]
    failed = parts.get("failed") or {}
    why_none = parts.get("why_none") or {}
    for name, builder in modules:
        fam = family_of(name)
        mine = [e for e in sources if e["module"] == name]
        entry = {
            "builder": builder,
            "module": name,
            "family": fam,
            "sources": len(mine),
            "kernels": None,
            "reason": None,
        }
        if family is not None and fam != family:
            entry.update(sources=None, reason=f"not laid out: the audit asked for family {family}")
        else:
            entry["kernels"] = sum(e.get("kernels") or 0 for e in mine)
            if not entry["kernels"]:
                entry["reason"] = why_none.get(name) or _sources_reason(mine)
        out.append(entry)
    made = {b for _, b in modules}
    for builder in parts.get("builders") or []:
        if builder not in made:
            why = (
                f"its builder failed: {failed[builder]}"
                if builder in failed
                else "its builder made no module (no gen_jit_spec call)"
            )
            out.append(
                {"builder": builder, "module": None, "family": None, "sources": None, "kernels": None, "reason": why}
            )
    for builder, why in parts.get("unrun") or []:
        out.append(
            {
                "builder": builder,
                "module": None,
                "family": None,
                "sources": None,
                "kernels": None,
                "reason": f"not run: {why}",
            }
        )
    return out


def _sources_reason(mine: list[dict]) -> str:
    """Why a module's sources give no kernel: ``none of its 3 sources gives a kernel: 2 names
    no sm120 symbol; 1 <its error>``."""
    if not mine:
        return "it generates no source"
    groups: dict[str, int] = {}
    for e in mine:
        what = _WHERE.sub("", e.get("skipped") or e.get("error") or e.get("reason") or "no kernel")
        groups[what] = groups.get(what, 0) + 1
    said = "; ".join(f"{n} {what}" for what, n in sorted(groups.items(), key=lambda kv: -kv[1]))
    return f"none of its {len(mine)} source(s) gives a kernel: {said}"


def account_notes(accounts: list[dict], arch: str, told: set[str], family: str | None = None) -> list[str]:
    """The notes of :func:`module_accounts`: each module without a kernel, with its reason
    (``module cute_sm12x_gemm (gen_gemm_sm120_module_cute): no kernel: ...``; those of families not asked, and those of ``told``, left out: a family
    asked that matched nothing says it), each builder without a module, and the builders not
    run, one line per reason (``not run for sm90: comm.gen_ulysses_lowp_sm90_module, ...:
    its builder names no CUTLASS ...``); with a ``family`` asked, its modules' only."""
    notes = []
    unrun: dict[str, list[str]] = {}
    for a in accounts:
        short = a["builder"].removeprefix("flashinfer.jit.")
        if a["module"] is not None or family is not None:
            if a["module"] is not None and a["reason"] and a["kernels"] is not None and a["module"] not in told:
                notes.append(f"module {a['module']} ({short.rsplit('.', 1)[-1]}): no kernel: {a['reason']}")
        elif a["reason"].startswith("not run: "):
            unrun.setdefault(a["reason"].removeprefix("not run: "), []).append(short)
        elif not a["reason"].startswith("its builder failed"):  # a failed builder is a note of its own
            notes.append(f"{short}: no module: {a['reason']}")
    notes += [f"not run for {arch}: {', '.join(names)}: {why}" for why, names in unrun.items()]
    return notes


__all__ = ["account_notes", "builder_parts", "module_accounts"]
