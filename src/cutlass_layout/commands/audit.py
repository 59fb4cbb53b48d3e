"""audit: every CUTLASS GEMM kernel an installed flashinfer builds for an arch, laid out exactly.

``audit(src)`` reads what the install builds from its own code (:mod:`cutlass_layout.sources.flashinfer_jit`:
its JIT module builders, the TensorRT-LLM MoE generator, its templates), lays out the kernel
of every launcher in every generated source with the flags its JIT compiles them with
(:mod:`cutlass_layout.installs.kernels`), and names each as the install does:

* ``moe`` (TensorRT-LLM's MoE grouped GEMM, ``moe_gemm_tma_ws_launcher.inl``): the tile
  enum of its dispatch (``CtaShape128x256x64B``: K in bytes of the activation, as
  ``moe_gemm_template_dispatch_tma_ws.h`` counts it), the epilogue fusion, swap_ab and the
  output type, from the arguments of the launcher macro; and whether the install's runtime
  candidate list for the arch would try it (:mod:`cutlass_layout.installs.candidates`);
* other modules: the launcher (struct or function) and the kernel alias.

A tactic over capacity or an exact fit gets what fits instead (:mod:`cutlass_layout.installs.fixes`:
its launcher laid out again with ``StageCount<N>`` in the mainloop builder).

``audit(src, shard=(i, n))`` lays out shard ``i`` of ``n`` alone (the split:
:mod:`cutlass_layout.commands.shard`), and :func:`merge_shards` joins every shard's JSON into
the audit of the whole, through the same tail (:func:`finish_audit`).

Results are cached per source in the one results cache (:class:`~cutlass_layout.core.cache.ResultCache`,
kind ``audit``), keyed by the install's fingerprint, the CUTLASS tree hash, the source's
text, the clang flags, libclang and this code; sources are parsed in parallel worker processes.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from ..errors import BadInput, NothingForArch
from ..installs.candidates import store_candidates
from ..installs.equivalence import canonical_flags, named, place_names, unnamed
from ..installs.kernels import (
    FoundKernel,
    Source,
    estimate_kernels,
    kernel_arch,
    lay_out_sources,
    pch_preamble,
    split_preamble,
)
from ..installs.moe_sm80 import FAMILY as SM80_FAMILY
from ..installs.moe_sm80 import audit_sm80_path, has_sm80_path, kernel_count
from ..installs.moe_sm80 import defines as sm80_defines
from ..installs.naming import (  # noqa: F401  (names this module gave before)
    BLOCK_SCALED,
    CUDA_TYPES,
    CUTLASS_TYPES,
    INTEGER_KINDS,
    MIXED_LAUNCHERS,
    MOE,
    element_kind,
    family_of,
    kernel_parts,
    macro_params,
    mixed_identity,
    tactic_of,
)
from ..subjects.archs import (  # noqa: F401  (names this module gave before)
    ALL,
    AUDIT_ARCHS,
    SM80_PATH_ARCHS,
    arch_family,
    arch_list,
    audit_arch,
    capacity_of,
    every_arch,
)
from ..model import AuditResult, AuditSet, AuditShard, Fix, LayoutReport, Provenance, Tactic
from ..core.cache import ResultCache, code_fingerprint
from ..core.cache import key as cache_key
from ..engine.loop import ENGINE_SOURCES
from ..core.pool import gc_paused, task_memory
from ..cpp.text import (
    blank_comments,
    declared_functions,
    explicit_instantiations,
    kernel_aliases,
    macro_calls,
)
from .shard import check_shard, ranked_tactics, shard_of

#: Version of the cached per-source payload (2: ``launcher_macros``).
_FORMAT = 2
#: The code a cached per-source result depends on (naming tactics happens after reading it;
#: which sources and flags are read is in the key itself), and STANDINS below.
_CODE = ("installs/kernels.py", "cpp/text.py", *ENGINE_SOURCES)
#: The stand-in headers (package ``stubs/``) a build may include.
STANDINS = tuple(f"stubs/{p.name}" for p in sorted((Path(__file__).parent.parent / "stubs").glob("*.h")))
#: Verdicts in the order the table lists them.
VERDICT_ORDER = ("over_capacity", "exact_fit", "does_not_compile", "fits")



# ---------------------------------------------------------------------------------------
# the work of one source (also run in worker processes)
def _lay_out(sources: list[Source], provenance: dict, pch: tuple | None) -> list[dict]:
    """The per-source payloads of ``sources`` (one folder, flags and includes), laid out
    together (:func:`cutlass_layout.installs.kernels.lay_out_sources`); the CPU time is shared out
    by kernels. ``pch``: ``(preamble, flags, key)`` of the precompiled header of their
    includes (:func:`_pch`; this machine's cache has it unless the task runs on another
    machine, which builds its own), or None."""
    from ..cpp.clang import ensure_pch

    path = ensure_pch(pch[0], list(pch[1]), pch[2]) if pch else None
    t0 = time.process_time()
    with task_memory() as mem:  # this task's peak (the pool frees what it leaves)
        results = lay_out_sources(sources, Provenance(**provenance), pch=path)
    cpu = time.process_time() - t0
    weights = [max(1, len(r.kernels)) for r in results]
    peak = mem["peak_rss_mb"]
    return [{
        "error": res.error, "lasting": res.lasting, "launcher_macros": res.launcher_macros,
        "kernels": [{"found": {**asdict(k), "error": None}, "report": rep.to_dict()}
                    for k, rep in res.kernels],
        "cpu_seconds": round(cpu * w / sum(weights), 2), "seconds": res.seconds,
        "peak_rss_mb": peak,
    } for res, w in zip(results, weights)]


#: Weight (see :data:`KERNEL_WEIGHTS`) laid out in one translation unit at most. A unit's kernels
#: share what they instantiate alike (builders, cute's layouts of one tile), so a larger unit
#: costs less per kernel, and more memory. Measured on flashinfer 0.7.4's MoE sources, each
#: unit alone (CPU; peak resident memory of the process):
#:
#: * SM90: 8 units of 48 kernels 50-66 s, one of 360-380 kernels 21.6-30.1 s; the peak 624-768 MB
#:   at 48, 1043-1147 MB at 192, 1138-1461 MB at 360-380;
#: * SM100: 2 units of 48 kernels 31.8 s, one of 96 25.1 s (peak 1449 MB); 4 of 48 63.8 s, one of
#:   192 37.8 s, but its peak was 1926 MB;
#: * the SM103 dense FP4 GEMMs' units of 4 sources of 9 kernels peaked at 2087-2225 MB in an
#:   audit's worker (which holds what its earlier units left, 300-400 MB).
BATCH_WEIGHT = 288
#: What one kernel weighs, by module name (the first pattern that matches): SM90 and SM120 MoE
#: kernels 1 (288 a unit), SM100 and SM103 MoE kernels 3 (96), the SM103 dense FP4 GEMMs' 12
#: (24: 2 of their sources), :data:`DEFAULT_WEIGHT` for the rest.
KERNEL_WEIGHTS = ((re.compile(r"^fused_moe_(90|12\d)\b"), 1), (re.compile(r"^fused_moe_10\d\b"), 3),
                  (re.compile(r"fp4_gemm_cutlass_sm103"), 12))
#: What one kernel of a module :data:`KERNEL_WEIGHTS` does not name weighs: 48 a unit.
DEFAULT_WEIGHT = 6


def kernel_weight(module: str) -> int:
    """What one kernel of a source of ``module`` weighs of a unit's :data:`BATCH_WEIGHT`
    (:data:`KERNEL_WEIGHTS`, else :data:`DEFAULT_WEIGHT`)."""
    return next((w for pattern, w in KERNEL_WEIGHTS if pattern.search(module)), DEFAULT_WEIGHT)


def _batches(items: list[tuple], jobs: int, estimates: dict) -> list[list[tuple]]:
    """``items`` (``(source, key)`` of one folder, flags and includes) in groups of at most
    :data:`BATCH_WEIGHT` (``estimates``: by source path, its estimated kernels,
    :func:`cutlass_layout.installs.kernels.estimate_kernels`, times :func:`kernel_weight`), and in as
    many groups as ``jobs`` where there are enough sources (so that every worker has one)."""
    est = [max(1, estimates.get(source.path, 1)) for source, _ in items]
    per = min(BATCH_WEIGHT, max(1, -(-sum(est) // max(1, jobs))))
    out: list[list[tuple]] = []
    load = 0
    for item, n in zip(items, est):
        if not out or load + n > per:
            out.append([])
            load = 0
        out[-1].append(item)
        load += n
    return out


def _load_source(payload: dict) -> dict:
    """A cached per-source payload if it is whole (each kernel's report loads, see
    :func:`cutlass_layout.engine.loop.load_report`; kept as its item's ``loaded``, so that it is
    read once); raises for one that is not (a miss)."""
    from ..engine.loop import load_report

    if not isinstance(payload["kernels"], list) or not isinstance(payload.get("error"), (str, type(None))):
        raise TypeError("kernels")
    if not isinstance(payload["launcher_macros"], (list, type(None))):
        raise TypeError("launcher_macros")
    for item in payload["kernels"]:
        _found_from(item["found"])
        item["loaded"] = load_report(item["report"])  # read once: the audit uses it
    return payload


def _found_from(d: dict) -> FoundKernel:
    d = dict(d)
    if d.get("macro") is not None:
        d["macro"] = (d["macro"][0], list(d["macro"][1]))
    return FoundKernel(**d)


#: What keys a source as its twin's (:func:`_canonicals`) reads besides :data:`_CODE`.
_TWIN_CODE = ("installs/equivalence.py",)
_CANONICALS = ResultCache("audit-canonicals")


def twin_digests(install, arch: str, cuda_version: tuple[int, int], *, use_cache: bool = True,
                 run: bool = True) -> set[str]:
    """The SHA-256 of each generated source of the install's other builds of ``arch``'s family
    (for ``sm100``, the ``sm103`` build's, and the reverse; flashinfer 0.7.4's SM103 MoE module
    generates the SM100 module's 242 sources again, byte for byte): the sources that may be
    laid out once for both (:func:`_canonicals`). Empty for an arch alone in its family, or an
    install without the other build."""
    from ..sources.flashinfer_jit import ARCH_BUILDERS, build_arch, jit_modules

    own = build_arch(arch)
    fam = arch_family(int(AUDIT_ARCHS[arch][2:]))
    others = [a for a in ARCH_BUILDERS if build_arch(a) == a and a != own
              and arch_family(int(AUDIT_ARCHS[a][2:])) == fam]
    out: set[str] = set()
    for other in others:
        try:
            builds = jit_modules(install, other, cuda_version=cuda_version, use_cache=use_cache, run=run)
        except (NothingForArch, BadInput):
            continue
        out |= set(builds.digests.values()) if builds is not None else set()  # as read back: checked
    return out


def _canonicals(mod, flags: tuple, read: list[tuple], gen_root: Path | None, arch_fam: str,
                target: tuple, use_cache: bool) -> dict[str, list[str]]:
    """``{path: canonical flags}`` of the sources of ``read`` (``(path, entry, index, text,
    digest)`` of a module's sources that have a twin in another build of the family), as
    :func:`cutlass_layout.installs.equivalence.canonical_flags` gives them (a source it cannot
    follow is left out: keyed by its own flags), remembered per module."""
    if not read:
        return {}
    key = cache_key("audit-canonicals/1", subject=[mod.name, list(flags), arch_fam, str(gen_root),
                                                   [[str(p), d] for p, _, _, _, d in read]],
                    target=list(target), code=_TWIN_CODE)

    def load(payload):
        if not isinstance(payload, dict) or not all(isinstance(v, list) for v in payload.values()):
            raise ValueError("not canonical flags")
        return payload

    hit = _CANONICALS.get(key, load) if use_cache else None
    if hit is not None:
        return hit
    memo: dict = {}
    out = {}
    for path, *_ in read:
        canon = canonical_flags(path, list(flags), gen_root, arch_fam, memo)
        if canon is not None:
            out[str(path)] = canon
    _CANONICALS.put(key, out)
    return out


def _clean(payload: dict) -> bool:
    """Whether a source's payload has no error of its own or of a kernel (what a twin build
    may share: an error names the files of the build that met it)."""
    return payload.get("error") is None and all(
        (item["report"].get("error") if isinstance(item.get("report"), dict) else None) is None
        for item in payload.get("kernels") or [])


def _placed(payload: dict, places: list, *, back: bool, copy: bool = False) -> dict:
    """``payload`` with each kernel's ``decl_file`` in a generated folder named by its place
    (``back=False``: what a twin build reads) or by this build's folder (``back=True``)."""
    if copy:
        payload = dict(payload, kernels=[dict(item, found=dict(item["found"])) for item in payload["kernels"]])
    for item in payload.get("kernels") or []:
        f = item["found"]
        decl = f.get("decl_file")
        if isinstance(decl, str):
            f["decl_file"] = unnamed(decl, places) if back else named(decl, places)
    return payload


_SCANS = ResultCache("audit-scans")
#: What reading a source's text without a parse (:func:`_scan`) runs.
_SCAN_CODE = ("commands/audit.py", "cpp/text.py", "installs/kernels.py")


def _scan(arch: str, path: Path, text: str) -> dict:
    """What an audit reads of a source's text before any parse: its :func:`source_facts`,
    whether it names the arch (``arch_word``: its folder, name or code, comments left out),
    its :func:`~cutlass_layout.installs.kernels.estimate_kernels` and the ``#include`` lines of
    its preamble (:func:`~cutlass_layout.installs.kernels.split_preamble`)."""
    clean = blank_comments(text, strings=False)
    return {"facts": source_facts(text),
            "arch_word": bool(_ARCH_WORD[arch].search(f"{path.parent.name}/{path.name}\n{clean}")),
            "estimate": estimate_kernels(clean), "includes": split_preamble(text)[0]}


def _scans(arch: str, read: list[tuple], use_cache: bool) -> list[dict]:
    """:func:`_scan` of each source of ``read`` (``(path, entry, index, text, digest)``),
    remembered for the texts of all of them (a whole install's 968 sources took 0.4 s of a
    profile of its warm audit)."""
    key = cache_key("audit-scans/1", subject=[arch, [[f"{p.parent.name}/{p.name}", d] for p, _, _, _, d in read]],
                    target=[], code=_SCAN_CODE)

    def load(payload):
        if not (isinstance(payload, list) and len(payload) == len(read)
                and all(isinstance(x, dict) and x.keys() == _SCAN_KEYS for x in payload)):
            raise ValueError("scans of other sources")
        return payload

    hit = _SCANS.get(key, load) if use_cache else None
    if hit is not None:
        return hit
    out = [_scan(arch, path, text) for path, _, _, text, _ in read]
    _SCANS.put(key, out)
    return out


_SCAN_KEYS = {"facts", "arch_word", "estimate", "includes"}


#: Version of the remembered names of a run's kernels (:func:`_load_names`).
_NAMES_FORMAT = 2
#: What naming a kernel (:func:`tactic_of`) reads: this module, the kernel's spelling as
#: :mod:`~cutlass_layout.installs.kernels` reads it, the :class:`~cutlass_layout.model.Tactic`.
_NAMING_CODE = ("commands/audit.py", "installs/naming.py", "installs/kernels.py", "model.py")
_NAMES = ResultCache("audit-names")
#: The :class:`~cutlass_layout.model.Tactic` fields :func:`tactic_of` gives (all but the
#: report and what the audit adds: the runtime candidate, the fix, the runtime guard).
_NAMED = ("family", "name", "a", "b", "out", "fusion", "swap_ab", "tile", "cluster", "kernel", "schedule",
          "file", "line", "launcher", "launcher_file", "launcher_line", "mma_sms", "dynamic_cluster",
          "epilogue_schedule", "mma_tile", "sm_version")


def over_so_far(arch: str, file: str, payload: dict, arch_fam: str) -> list[str]:
    """A line for each kernel over capacity in a source's freshly laid-out ``payload`` (its
    file and line, launcher (template arguments left out) and alias, ``sizeof`` of its
    SharedStorage and the bytes over): what a long audit shows on its progress display as
    each source comes in, before the table (``audit sm90: found: F:10 L<...>::GemmKernel:
    331776 B, 99328 B over capacity``)."""
    out = []
    for j, _ in _kept(payload["kernels"], arch_fam):
        k, rep = payload["kernels"][j]["found"], payload["kernels"][j]["report"]
        if rep.get("verdict") == "over_capacity" and rep.get("headroom_bytes") is not None:
            owner = re.sub(r"<.*", "<...>", re.sub(r"\(.*", "", k.get("owner") or ""))
            name = f"{owner}::{k['alias']}" if owner else k["alias"]
            size = (rep.get("kernel") or rep.get("storage") or {}).get("size")
            out.append(f"audit {arch}: found: {file}:{k.get('line')} {name}: {size} B, "
                       f"{-rep['headroom_bytes']} B over capacity")
    return out


def _kept(kernels: list[dict], arch_fam: str) -> list[tuple[int, None]]:
    """``(index, None)`` of each of a source's kernels that runs on ``arch_fam`` (an SM103
    build compiles SM100's kernels too; a kernel whose policy names no arch runs on the
    build's)."""
    return [(j, None) for j, item in enumerate(kernels)
            if (kernel_arch(item["found"]["spelling"]) or arch_fam) == arch_fam]


def _load_names(lines: list[list]) -> Callable:
    """The loader of remembered names: one list per source (whose kernels are found at
    ``lines[i]`` now) of ``[index, fields]`` of each kernel kept, ``fields`` as :data:`_NAMED`
    (its ``line`` that of the kernel at ``index``); raises for anything else (a miss)."""
    def load(payload):
        if not (isinstance(payload, list) and len(payload) == len(lines)):
            raise ValueError("names of other sources")
        for per, found in zip(payload, lines):
            for j, fields in per:
                if not (isinstance(j, int) and 0 <= j < len(found) and isinstance(fields, dict)
                        and fields.keys() == set(_NAMED) and fields["line"] == found[j]):
                    raise ValueError("not names of these kernels")
        return payload
    return load


# ---------------------------------------------------------------------------------------
# what a source instantiates, and why one gives no kernel

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
    return {"explicit": explicit_instantiations(text), "defined": defined, "calls": calls,
            "aliases": kernel_aliases(text), "macro_calls": macro_calls(text)}


def _counted(names: list[str]) -> str:
    """``a (x3), b``: distinct names in order, with how often each occurs where more than once."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return ", ".join(f"{n} (x{c})" if c > 1 else n for n, c in counts.items())


def _files(files: list[str]) -> str:
    return files[0] + (f" and {len(files) - 1} more" if len(files) > 1 else "")


def judge_source(entry: dict, facts: dict | None, payload: dict | None, module_facts: dict,
                 launchers: set[str] = frozenset()) -> None:
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
        entry["error"] = (f"instantiates {len(unseen)} launcher(s) whose kernel this reader cannot "
                          f"see{laid}: {_counted(unseen)}")
        return
    if found:
        return
    if facts["aliases"]:
        shown = ", ".join(f"{a} (line {ln})" for a, ln in facts["aliases"][:4])
        more = f" and {len(facts['aliases']) - 4} more" if len(facts["aliases"]) > 4 else ""
        entry["error"] = (f"declares {len(facts['aliases'])} kernel type(s) this reader found no "
                          f"kernel of: {shown}{more}")
        return
    if facts["calls"]:
        said = []
        for name in facts["calls"]:
            # instantiated there explicitly, or a kernel there is declared in what it names
            # (a launcher macro's struct, ``NAME_128_32_128_false_...``)
            inst = [f for f, x in module_facts.items() if f != entry["file"]
                    and (any(n == name for n, _, _ in x["explicit"])
                         or any(re.match(rf"{re.escape(name)}\b|{re.escape(name)}_", o) for o in x.get("owners", ())))]
            defs = [f for f, x in module_facts.items() if f != entry["file"] and name in x["defined"]]
            where = (f"instantiated in {_files(inst)}" if inst else f"defined in {_files(defs)}" if defs
                     else "in none of the module's sources")
            said.append(f"{name} ({where})")
        entry["reason"] = "calls kernels defined elsewhere: " + ", ".join(said)
        return
    entry["reason"] = ("instantiates no kernel: no launcher macro call, explicit instantiation or "
                       "kernel type in it")


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
            owners = sorted({item["found"]["owner"] for item in parsed[i]["kernels"]
                             if item["found"].get("owner")}) if i in parsed else []
            module_facts.setdefault(entry["module"], {})[entry["file"]] = {**f, "owners": owners}
    for i, (entry, f) in enumerate(zip(sources, facts)):
        if i in parsed:
            judge_source(entry, f, parsed[i], module_facts.get(entry["module"], {}), launchers)
        else:  # skipped, not readable, or laid out by another shard
            judge_source(entry, None if entry["skipped"] else f, None, {}, launchers)


def _slim(payload: dict) -> dict:
    """What :func:`judge_sources` reads of a source's payload: its error, launcher macros and
    each kernel's line and owner (a shard's ``parts``: the merge judges the sources again)."""
    return {"error": payload.get("error"), "launcher_macros": payload.get("launcher_macros"),
            "kernels": [{"found": {"line": item["found"].get("line"), "owner": item["found"].get("owner")}}
                        for item in payload["kernels"]]}


def nothing_found(version: str, arch: str, modules: list[tuple[str, str]], sources: list[dict],
                  failed: dict) -> str:
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
        said = [f"{len(files)} ({_files(files)}): {what}"
                for what, files in sorted(groups.items(), key=lambda kv: -len(kv[1]))]
        parts.append(f"of the {len(sources)} source(s) of {', '.join(mods)}: " + "; ".join(said))
    if not modules:
        parts.append("no module builder for it ran")
    if failed:
        parts.append("builders that failed: " + "; ".join(f"{b}: {e}" for b, e in failed.items()))
    return f"flashinfer {version} builds no kernel this reader can lay out for {arch}: " + "; ".join(parts)



_ARCH_WORD = {"sm120": re.compile(r"sm_?12[01]", re.I), "sm121": re.compile(r"sm_?12[01]", re.I),
              "sm100": re.compile(r"sm_?10[03]", re.I), "sm103": re.compile(r"sm_?10[03]", re.I),
              "sm90": re.compile(r"sm_?90(?!\d)", re.I)}


# ---------------------------------------------------------------------------------------
# keeping the tactics that match config values

#: Config keys a tactic can be matched on (the others are not recorded per tactic).
FILTER_KEYS = ("kernel", "a", "b", "tile", "cluster", "stages", "d", "schedule")
#: Bits of an element as tactics name them (``Tactic.a``/``b``), for tiles with K in bytes.
ELEMENT_BITS = {"nvfp4": 4, "mxfp4": 4, "e2m1": 4, "mxfp6": 6, "mxfp6-e2m3": 6, "e3m2": 6,
                "e2m3": 6, "mxfp8": 8, "mxfp8-e5m2": 8, "e4m3": 8, "e5m2": 8, "s8": 8,
                "bf16": 16, "f16": 16, "f32": 32, "tf32": 32}


def tactic_filter(**values):
    """A predicate on :class:`~cutlass_layout.model.Tactic` from config values as ``layout``
    takes them (each a value or a list, braces expanding): a tactic is kept when, for every
    key given, it matches one of the values.

    ``kernel``, ``a``, ``b``, ``d`` (the output) compare names; ``tile`` is ``MxNxK`` (K in
    elements) or ``MxNxKB`` (K in bytes of the activation: A, or B with swap_ab, as
    TensorRT-LLM's ``CtaShape...B`` names count it), and matches a tactic's CTA tile (the
    tile enum's) or its MMA tile (:attr:`~cutlass_layout.model.Tactic.mma_tile`: a 2SM
    kernel of ``CtaShape128x64x128B`` is found by ``256x64x128B`` too, an SM103 one of
    ``CtaShape128x128x128B`` by ``128x128x384B``); ``cluster`` ``MxNxK``; ``stages`` N
    (``auto`` keeps all); ``schedule`` ``cooperative`` or ``pingpong`` (in the kernel
    schedule's name; ``auto`` keeps all).

    Raises:
        BadInput: a key that is not recorded per tactic (``c``, ``preset``,
            ``epilogue_schedule``, ``scales``; ``arch`` is the audit's own), or a value no
            tactic could match (the message lists the values accepted).
    """
    return _keep_all(filter_tests(**values))


def _keep_all(tests: dict) -> Callable:
    return lambda t: all(any(test(t) for _, test in vals) for vals in tests.values())


def kept_by(asked: dict) -> Callable[[Tactic], bool]:
    """Whether a tactic passes what an audit was asked (:func:`asked_of`): its ``family``,
    ``grep`` and config ``filters``, as :func:`finish_audit` applies them."""
    family, grep = asked.get("family"), (asked.get("grep") or "").lower()
    keep = _keep_all(filter_tests(**asked.get("filters", {})))
    return lambda t: (family is None or t.family == family) and grep in _haystack(t) and keep(t)


#: What a streamed row (:func:`stream_row`) leaves out: the runtime's candidate list is read
#: beside the parses, fixes are searched and guards read once every source is in.
STREAM_LATER = ("runtime_candidate", "fix", "runtime_guard")


def stream_row(arch: str, t: Tactic) -> dict:
    """A tactic's ``audit --format jsonl`` line as its source comes in: ``{"event": "tactic",
    "arch": ..., **its --json row}`` without :data:`STREAM_LATER` (the arch's closing line,
    the whole audit object, has them). Bytes throughout."""
    row = t.to_dict()
    for k in STREAM_LATER:
        row.pop(k, None)
    return {"event": "tactic", "arch": arch, **row}


#: Elements a tactic's output (``d``) can be: the element kinds, and ``void``.
OUTPUTS = (*ELEMENT_BITS, "void")


def filter_tests(**values) -> dict[str, list[tuple[str, Callable]]]:
    """The tests of :func:`tactic_filter`, one per value: ``{key: [(value as typed, test)]}``
    for the keys given (a tactic passes a key when it passes one of its tests). ``auto``
    (``stages``, ``schedule``) passes every tactic.

    Raises:
        BadInput: as :func:`tactic_filter`.
    """
    from ..subjects.config import KERNELS, parse_shape, parse_stages, split_tile
    from ..subjects.grid import expand_braces

    tests: dict[str, list] = {}
    for key, raw in values.items():
        if raw is None or raw == [] or raw == ():
            continue
        if key not in FILTER_KEYS:
            raise BadInput(f"{key!r} is not recorded for a tactic (an audit lays out the kernels "
                           f"as the install builds them); match on {', '.join(FILTER_KEYS)}")
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        vals = [v for item in items for v in expand_braces(str(item))]
        one = tests.setdefault(key, [])
        for v in vals:
            low = v.strip().lower()
            if key == "kernel":
                if low not in KERNELS:
                    raise BadInput(f"unknown kernel {v!r}: choose {', '.join(KERNELS)}")
                one.append((v, lambda t, w=low: t.kernel == w))
            elif key in ("a", "b", "d"):
                accepted = OUTPUTS if key == "d" else tuple(ELEMENT_BITS)
                if low not in accepted:
                    raise BadInput(f"unknown element kind {v!r} for {key.upper()}: choose "
                                   f"{', '.join(accepted)}")
                attr = "out" if key == "d" else key
                one.append((v, lambda t, w=low, a=attr: getattr(t, a) == w))
            elif key == "tile":
                one.append((v, lambda t, x=split_tile(v): _tile_matches(t, x)))
            elif key == "cluster":
                one.append((v, lambda t, w=tuple(parse_shape(v, "cluster")):
                            t.cluster is not None and tuple(t.cluster) == w))
            elif key == "stages":
                n = parse_stages(v)
                one.append((v, (lambda t: True) if n is None else
                            (lambda t, w=n: t.report is not None and t.report.stages == w)))
            elif key == "schedule":
                if low not in ("auto", "cooperative", "pingpong"):
                    raise BadInput(f"unknown schedule {v!r}: choose auto, cooperative or pingpong")
                one.append((v, (lambda t: True) if low == "auto" else
                            (lambda t, w=low: w in str(t.schedule).lower())))
    return {k: v for k, v in tests.items() if v}


# ---------------------------------------------------------------------------------------
# what a filter that matched nothing could have meant


def _haystack(t: Tactic) -> str:
    """What ``grep`` searches in a tactic: its id, name, launcher and file, lower case."""
    return " ".join(str(x) for x in (t.id, t.name, t.launcher, t.file)).lower()


def _similar(typed: str, values) -> list[str]:
    """``values`` (distinct, as text), the most like ``typed`` first."""
    import difflib

    low = typed.lower()
    uniq = list(dict.fromkeys(str(v) for v in values if v is not None))
    return sorted(uniq, key=lambda v: -difflib.SequenceMatcher(None, low, v.lower()).ratio())


def _tile_distance(a, b) -> float:
    from math import log2

    return sum(abs(log2(x) - log2(y)) if x > 0 and y > 0 else (0 if x == y else 16)
               for x, y in zip(a, b))


def _nearest_tiles(typed: str, pool: list[Tactic]) -> tuple[str, list[str]]:
    """The tactics' tiles nearest ``typed`` (its numbers read either way: K in elements or in
    bytes; the CTA tile or the MMA tile), each as ``MxNxKB = MxNxK`` (K in bytes = K in
    elements, then the activation's element, whose width relates the two) where that width is
    known, and the MMA tile after it where the kernel's is another, with what makes it so (a
    2SM kernel's 2M, an Sm103 kernel's 3K), which the filter takes too:
    ``128x64x128B = 128x64x256 nvfp4 (2SM MMA 256x64x256)``,
    ``128x256x128B = 128x256x256 nvfp4 (Sm103 2SM MMA 256x256x768)``."""
    from ..subjects.config import split_tile

    m, n, k, _ = split_tile(typed)
    tiles: dict[str, float] = {}
    for t in pool:
        if not t.tile:
            continue
        bits = ELEMENT_BITS.get(str(t.b if t.swap_ab else t.a))
        d = float("inf")
        for tile in (t.tile, t.mma_tile):
            if not tile:
                continue
            tm, tn, tk = tile
            d = min(d, _tile_distance((m, n, k), (tm, tn, tk)))
            if bits and (tk * bits) % 8 == 0:
                d = min(d, _tile_distance((m, n, k), (tm, tn, tk * bits // 8)))
        tm, tn, tk = t.tile
        kb = tk * bits // 8 if bits and (tk * bits) % 8 == 0 else None
        elem = str(t.b if t.swap_ab else t.a)  # whose width turns K in bytes into elements
        text = f"{tm}x{tn}x{tk}" if kb is None else f"{tm}x{tn}x{kb}B = {tm}x{tn}x{tk} {elem}"
        if t.mma_tile:  # what makes it another: 2SM (2M), an Sm103 kernel (3K)
            why = ([f"Sm{t.sm_version}"] if t.sm_version not in (None, 100) else []) + \
                (["2SM"] if t.mma_sms == 2 else [])
            text += f" ({' '.join(why + ['MMA'])} {'x'.join(map(str, t.mma_tile))})"
        tiles[text] = min(d, tiles.get(text, d))
    near = sorted(tiles, key=lambda x: (tiles[x], x))[:4]
    legend = " (K in bytes = K in elements of the element named)" if any("B = " in x for x in near) else ""
    return f"nearest{legend}", near


def _grep_nearest(typed: str, pool: list[Tactic]) -> str:
    """The ids most of ``typed`` appears in, in order (as many of its characters as possible)."""
    import difflib

    low = typed.lower()

    def score(i: str) -> float:
        blocks = difflib.SequenceMatcher(None, low, i.lower(), autojunk=False).get_matching_blocks()
        return sum(b.size for b in blocks) / max(1, len(low))
    ids = sorted(dict.fromkeys(t.id for t in pool), key=lambda i: (-score(i), len(i), i))
    return "nearest ids", ids[:3]


def _nearest(key: str, typed: str, pool: list[Tactic]) -> tuple[str, list[str]]:
    """What tactics of ``pool`` have for ``key``, the nearest to ``typed`` first: (what they
    are, the values)."""
    if key == "tile":
        return _nearest_tiles(typed, pool)
    if key == "grep":
        return _grep_nearest(typed, pool)
    if key == "stages":
        have = sorted({t.report.stages for t in pool if t.report is not None and t.report.stages})
        want = int(typed)
        return "the tactics have", [str(n) for n in sorted(have, key=lambda s: (abs(s - want), s))]
    get = {"kernel": lambda t: t.kernel, "a": lambda t: t.a, "b": lambda t: t.b,
           "d": lambda t: t.out, "schedule": lambda t: t.schedule,
           "cluster": lambda t: None if t.cluster is None else "x".join(map(str, t.cluster))}[key]
    have = _similar(typed, (get(t) for t in pool))
    return ("the tactics have" if have else f"no tactic records a {key}"), have[:6]


def unmatched_filters(pool: list[Tactic], grep: str | None, tests: dict) -> list[dict]:
    """The filters that keep none of ``pool`` (the tactics of the family asked for): ``grep``,
    and each value of each config key, alone; or, when each matches some, the filters
    together. One entry per filter (see :attr:`~cutlass_layout.model.AuditResult.unmatched`):
    ``{"filter": key, "value": as typed, "nearest": what the tactics have nearest it,
    "detail": what is wrong, "note": one line naming the filter, with the detail}``. An
    empty list for an empty pool (there is nothing to match)."""
    out = []

    def miss(key, value, what):
        shown = repr(value) if key == "grep" else value
        phrase, near = _nearest(key, value, pool)
        what = f"{what}; {phrase}" + (f": {', '.join(near)}" if near else "")
        out.append({"filter": key, "value": value, "nearest": near, "detail": what,
                    "note": f"{key} {shown}: {what}"})
    if not pool:
        return out
    if grep is not None and not any(grep.lower() in _haystack(t) for t in pool):
        miss("grep", grep, "matched no tactic's id, name, launcher or file")
    for key, vals in tests.items():
        for value, test in vals:
            if not any(test(t) for t in pool):
                miss(key, value, "matched no tactic")
    if not out and (grep is not None or tests):
        keep = _keep_all(tests)
        if not any(keep(t) and (grep is None or grep.lower() in _haystack(t)) for t in pool):
            given = [f"grep {grep!r}"] if grep is not None else []
            given += [f"{k} {' or '.join(v for v, _ in vals)}" for k, vals in tests.items()]
            what = f"each matches some tactic, no tactic matches them all ({'; '.join(given)})"
            out.append({"filter": None, "value": None, "nearest": [], "detail": what,
                        "note": f"the filters: {what}"})
    return out


def _tile_matches(t: Tactic, typed: tuple[int, int, int, bool]) -> bool:
    """Whether ``typed`` (``split_tile``: M, N, K, K in bytes) is the tactic's CTA tile (as
    its tile enum names it) or its MMA tile (:attr:`~cutlass_layout.model.Tactic.mma_tile`:
    2M for 2SM, 3K for SM103); K in bytes counts the activation's bits (A, or B with
    swap_ab)."""
    m, n, k, in_bytes = typed
    bits = ELEMENT_BITS.get(str(t.b if t.swap_ab else t.a))
    for tile in (t.tile, t.mma_tile):
        if not tile:
            continue
        tm, tn, tk = tile
        if (m, n) != (tm, tn):
            continue
        if (k == tk) if not in_bytes else (bits is not None and k * 8 == tk * bits):
            return True
    return False




def unknown_family(family, families: list[str], version: str, arch: str) -> str:
    """The line for a family the install does not build: the nearest, then all it builds."""
    near = _similar(str(family), families)[:1]
    hint = f" (nearest: {near[0]})" if near and _similar_enough(str(family), near[0]) else ""
    return (f"unknown family {family!r}{hint}: flashinfer {version} builds these for {arch}: "
            f"{', '.join(families) or 'none'}")


def _similar_enough(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio() >= 0.5


#: clang's error for a TVM FFI or dlpack header that is not on the include path
_TVM_FFI_MISSING = re.compile(r"'(?:tvm/ffi|dlpack)/[^']*' file not found")


def audit(src=None, arch: str = "sm120", *, family: str | None = None, grep: str | None = None,
          cuda_path=None, jobs: int | None = None, use_cache: bool = True,
          progress: bool = False, strict_family: bool = True, cached_only: bool = False,
          executor=None, shard: tuple[int, int] | None = None,
          on_tactic: Callable[[str, Tactic], None] | None = None, **config_values) -> AuditResult | None:
    """Lay out every CUTLASS GEMM kernel that the flashinfer at ``src`` builds for ``arch``.

    Args:
        src: a flashinfer install: site-packages or package dir, ``.whl``,
            ``flashinfer-python==VERSION``, or None for the one installed here
            (:func:`cutlass_layout.sources.trees.resolve_flashinfer`), or a resolved
            :class:`~cutlass_layout.sources.trees.FlashinferInstall`.
        arch: ``sm120`` (default), ``sm121`` (SM120's builds: it shares their cached
            results), ``sm100``, ``sm103`` (each its own builders: flashinfer names them
            ``..._sm100_...`` and ``..._sm103_...``) or ``sm90``.
        family: keep only tactics of this family (``moe``, or a JIT module name); one the
            install does not build is refused, listing those it does (``strict_family=False``:
            no tactics instead, as a diff of two installs needs).
        grep: keep only tactics whose id, name, launcher or file contains this text
            (case-insensitive).
        cuda_path: CUDA headers (see :func:`cutlass_layout.sources.cuda.find_cuda`).
        jobs: worker processes (default: the CPUs, or the executor's worker threads);
            use_cache: read cached results.
        executor: where the parses run: None (this machine's forked workers) or an
            executor (:func:`cutlass_layout.core.dask.executor`: a Dask cluster); the
            results come back here and are cached here.
        progress: progress on stderr (the install's generator, the parses); without it,
            progress shows where it is turned on (:func:`cutlass_layout.core.progress.show_progress`).
        cached_only: run and parse nothing: the result from the results cache (the install's
            builders' answer, every source's layouts; the runtime candidates where cached),
            or None where any of it is not cached.
        config_values: ``kernel``, ``a``, ``b``, ``tile``, ``cluster``, ``stages``, ``d``,
            ``schedule`` as ``layout`` takes them (``tile="128x256x64B"``, lists allowed):
            keep only the tactics that match (:func:`tactic_filter`).
        shard: ``(i, n)``: lay out shard ``i`` of ``n`` of the work alone
            (:func:`~cutlass_layout.commands.shard.shard_of`): the install's sources for the
            arch in their order (those skipped or not read included, so each is in one shard)
            and the ``moe_sm80`` family as one unit after them, cut into ``n`` runs of about
            equal estimated kernels (:func:`~cutlass_layout.installs.kernels.estimate_kernels`; the
            family's kernel count), the same on every machine for the same install, arch and
            filters. The runtime's candidate list is read, and fixes searched, where the shard
            has tactics that need them. The result holds the shard's sources and tactics (its
            sources judged from what it parsed) and its
            :attr:`~cutlass_layout.model.AuditResult.shard`; an install that gives no kernel
            is not an error here (the merge says so, :func:`merge_shards`).
        on_tactic: called as ``on_tactic(arch, tactic)`` with each tactic the filters keep as
            soon as its source is laid out (or read from the cache: those first, where
            anything is parsed), in the order sources come in, not the table's: what
            ``audit --format jsonl`` streams (:func:`stream_row`). Its runtime candidate, fix
            and guard are not known yet (:data:`STREAM_LATER`); the result has them.

    What it loads from the results cache, and the tactics it builds, are frozen out of the
    garbage collector's passes (:func:`cutlass_layout.core.pool.gc_paused`).

    A source that another build of the arch family also compiles (:func:`twin_digests`: the
    SM103 MoE module's copies of the SM100 module's sources) is keyed by its
    :func:`~cutlass_layout.installs.equivalence.canonical_flags` where they prove the two
    builds read the same types: it is laid out once for both (an answer with an error stays
    the build's own).

    Every source is parsed with its module's flags, and the TVM FFI headers the bindings
    include (:func:`cutlass_layout.sources.trees.tvm_ffi_headers`; fetched unless ``cached_only``)
    on the ``-isystem`` path, as flashinfer's ``get_system_includes`` puts them.

    Returns:
        An :class:`~cutlass_layout.model.AuditResult` (None only with ``cached_only``); a
        kernel that does not compile is a
        tactic with verdict ``does_not_compile`` and its first error (bytes throughout). Each
        tactic kept that is over capacity or an exact fit has its ``fix``: what fits instead
        (:func:`search_fixes`; with ``cached_only`` only where cached). ``stats`` says how many
        fixes were searched and their CPU seconds. A
        filter value (or ``grep``, or the family) that matched no tactic is a note naming it
        and the nearest values the tactics have (also in ``unmatched``).

    Raises:
        BadInput: a bad ``shard`` (:func:`~cutlass_layout.commands.shard.check_shard`); an
            arch other than sm120, sm121, sm100, sm103 or sm90; no flashinfer at
            ``src``, one too old to have JIT module builders for the arch, builders that could
            not run at all, unusable CUDA headers; a family the install does not build; a
            filter value no tactic could match (:func:`tactic_filter`); with no ``family``,
            an install whose builders give no kernel this reader lays out for the arch (the
            message says why, per kind of source: :func:`nothing_found`).

    Each entry of ``sources`` says what the source instantiates and what was found
    (:func:`judge_source`): ``instantiations``, ``kernels``, and for one without a kernel its
    ``reason``, or its ``error`` where it instantiates something that was not laid out.
    """
    from ..cpp.clang import libclang_version
    from ..engine import loop as engine
    from ..core.pool import Pool, default_jobs
    from ..core.progress import Progress, progress_shown
    from ..sources.flashinfer_jit import jit_modules
    from ..sources.trees import FlashinferInstall, resolve_flashinfer, tvm_ffi_headers

    t0 = time.perf_counter()
    arch = audit_arch(arch)
    clang_arch = AUDIT_ARCHS[arch]
    asked = asked_of(config_values, archs=[arch], family=family, grep=grep)
    filter_tests(**asked["filters"])  # bad values: an error before any work
    shard = None if shard is None else check_shard(shard)
    install = src if isinstance(src, FlashinferInstall) else resolve_flashinfer(src)
    tgt = engine.target(install.tree, cuda_path)
    builds = jit_modules(install, arch, cuda_version=tgt.cuda.version, use_cache=use_cache,
                         run=not cached_only)
    if builds is None:
        return None
    families = list(dict.fromkeys(sorted((family_of(m.name) for m in builds.modules),
                                         key=lambda f: (f != MOE, f))))
    if arch in SM80_PATH_ARCHS and MOE in families and has_sm80_path(install):  # moe_sm80.py
        families.append(SM80_FAMILY)
    if family is not None and family not in families and strict_family:
        raise NothingForArch(unknown_family(family, families, install.version, arch))
    t_jit = time.perf_counter()
    base_flags = tgt.flags(clang_arch)
    tvm = tvm_ffi_headers(install, fetch=not cached_only)
    tvm_flags = ["-isystem", str(tvm.include)] if tvm.include is not None else []
    prov = asdict(tgt.provenance(clang_arch))
    clang = libclang_version()
    cache = ResultCache("audit")
    gen_root = None

    work = []  # (module, Source, key, preamble)
    arch_fam = arch_family(int(clang_arch[2:]))  # sm103 builds run SM100's mainloops
    twins = twin_digests(install, arch, tgt.cuda.version, use_cache=use_cache, run=not cached_only)
    # key of a source keyed as its twin's -> (its generated folders' names, its key as this build's alone)
    places: dict[str, tuple] = {}
    estimates: dict[Path, int] = {}  # kernels each source likely holds (batch sizes)
    sources_out: list[dict] = []
    facts: list[dict | None] = []  # source_facts of each of sources_out (None: not read)
    for mod in builds.modules:
        if family is not None and family != family_of(mod.name):
            continue  # not asked for: not parsed
        flags = tuple(base_flags + mod.clang_flags() + tvm_flags)
        read = []  # (path, entry, its index, text, digest) of each C++ source of the module
        for path in mod.generated:
            gen_root = gen_root or _gen_root(path)
            entry = {"module": mod.name, "builder": mod.builder, "family": family_of(mod.name),
                     "file": _rel(path, gen_root), "instantiations": None, "kernels": 0,
                     "skipped": None, "reason": None, "error": None}
            sources_out.append(entry)
            facts.append(None)
            if path.suffix not in (".cu", ".cpp", ".cc", ".cuh"):
                entry["skipped"] = "not a C++ source"
                continue
            try:
                text = path.read_text(errors="replace")
            except OSError as exc:
                entry["error"] = f"cannot read: {exc.strerror or exc}"
                continue
            read.append((path, entry, len(facts) - 1, text, hashlib.sha256(text.encode()).hexdigest()))
        scans = _scans(arch, read, use_cache)
        mod_places = None
        read_flags = _canonicals(mod, flags, [r for r, scan in zip(read, scans) if scan["arch_word"] and r[4] in twins],
                                 gen_root, arch_fam, (install.fingerprint, install.tree.tree_hash, tvm.fingerprint),
                                 use_cache)
        for (path, entry, i, text, digest), scan in zip(read, scans):
            facts[i] = scan["facts"]
            if not scan["arch_word"]:
                entry["skipped"] = f"names no {arch} symbol"
                continue
            estimates[path] = scan["estimate"] * kernel_weight(mod.name)
            canon = read_flags.get(str(path))
            # a source another build of the arch family compiles alike is keyed as both build it
            target = [install.fingerprint, install.tree.tree_hash, clang, str(tgt.cuda.path), tvm.fingerprint]
            key = cache_key(f"audit/{_FORMAT}", subject=[digest, list(flags)], target=target, code=_CODE + STANDINS)
            if canon is not None:
                plain, key = key, cache_key(f"audit/{_FORMAT}", subject=["twin", digest, canon, capacity_of(arch)],
                                            target=target, code=_CODE + STANDINS + _TWIN_CODE)
                mod_places = mod_places or place_names(list(flags), gen_root)  # one module: one set of flags
                places[key] = (mod_places, plain)
            work.append((mod, Source(path, flags, install.tree.include_root, clang_arch), key,
                         pch_preamble(scan["includes"]) if scan["includes"] else None, entry))

    position = {id(entry): i for i, entry in enumerate(sources_out)}
    with_sm80 = SM80_FAMILY in families and family in (None, SM80_FAMILY)
    mflags = next((m.clang_flags() for m in builds.modules if family_of(m.name) == MOE), [])
    # the runtime's candidate list: read with the install's first MoE source's flags (the same
    # in every shard), where the sources laid out here have MoE kernels
    moe = next(((src, pre) for mod, src, _, pre, _ in work if mod.name.startswith("fused_moe")), None)
    own = range(len(sources_out) + with_sm80)  # the units laid out here: each source, moe_sm80
    if shard is not None:
        weight = {id(e): max(1, estimates.get(source.path, 1)) for _, source, _, _, e in work}
        own = shard_of([weight.get(id(e), 0) for e in sources_out] +
                       ([kernel_count(install, sm80_defines(mflags))] if with_sm80 else []), shard)
        work = [w for w in work if position[id(w[4])] in own]
    with_sm80 = with_sm80 and len(sources_out) in own
    results: dict[str, dict] = {}
    todo = []
    with gc_paused(freeze=True):  # thousands of reports: no collector passes over them
        for mod, source, key, pre, entry in work:
            hit = cache.get(key, _load_source) if use_cache else None
            if hit is not None and key in places:
                _placed(hit, places[key][0], back=True)
            elif hit is None and key in places and use_cache:  # an answer with an error: this build's own
                hit = cache.get(places[key][1], _load_source)
            if hit is not None:
                results[key] = hit
            else:
                todo.append((mod, source, key, pre, entry))
    if todo and cached_only:
        return None
    streamed: set[str] = set()  # the sources whose tactics went to on_tactic
    stream_keeps = kept_by(asked) if on_tactic is not None else None

    def stream(mod, source, key, payload):
        """Each kept tactic of a source's payload to ``on_tactic``, as the table will name it."""
        streamed.add(key)
        for j, _ in _kept(payload.get("kernels") or [], arch_fam):
            item = payload["kernels"][j]
            rep = item.get("loaded") or LayoutReport.from_dict(item["report"])
            rep.provenance = Provenance(**prov)
            t = tactic_of(mod.name, source.path, gen_root, _found_from(item["found"]), rep, install.root)
            if stream_keeps(t):
                on_tactic(arch, t)

    if on_tactic is not None and todo:  # what the cache has, before the parses
        for mod, source, key, _, _ in work:
            if key in results:
                stream(mod, source, key, results[key])
    stats = {"sources": len(work), "cached": len(work) - len(todo), "parsed": 0,
             "parse_cpu_seconds": 0.0, "worker_peak_rss_mb": 0.0}
    # the stand-in headers are part of what a precompiled header was built from
    pch_key = install.fingerprint + install.tree.tree_hash + tvm.fingerprint + code_fingerprint(*STANDINS)
    # sm121 runs sm120's builds: the same candidate list (and its cache entry)
    cand_args = (install, clang_arch, list(moe[0].flags), moe[1], pch_key, use_cache) \
        if moe and any(mod.name.startswith("fused_moe") for mod, *_ in work) else None
    cand = None
    if todo:
        # precompiled headers are built in the pool too (one per module's includes), each
        # source submitted once its header is there; the candidate list waits for the MoE one
        pch_of = {(pre, source.flags) for _, source, _, pre, _ in todo if pre is not None}
        waiting: dict[tuple, list] = {pk: [] for pk in pch_of}
        cand_pk = (moe[1], moe[0].flags) if moe and moe[1] is not None else None
        stats["pch_seconds"] = 0.0
        bar = None
        try:
            with Pool(default_jobs(jobs, executor), executor=executor,
                      reads=_reads(install, tgt, gen_root, tvm)) as pool:
                # the bar's thread starts once the workers are forked (runner's rule)
                bar = Progress(f"audit {arch}: laying out sources", len(todo),
                               enabled=progress or progress_shown())
                tickets: dict[int, tuple] = {}
                entry_of = {key: entry for _, _, key, _, entry in todo}
                mod_of = {key: (mod, source) for mod, source, key, _, _ in todo}

                def submit_sources(items, pch):
                    by_folder: dict = {}
                    for item in items:  # one unit holds sources of one folder (quoted includes)
                        by_folder.setdefault(item[0].path.parent, []).append(item)
                    for batch in (b for group in by_folder.values() for b in _batches(group, pool.jobs, estimates)):
                        tickets[pool.submit(_lay_out, [s for s, _ in batch], prov, pch)] = \
                            ("sources", [k for _, k in batch])

                def submit_candidates():
                    tickets[pool.submit(_candidates, *cand_args)] = ("candidates", None)

                for pk in sorted(pch_of, key=lambda x: (x[0], x[1])):
                    tickets[pool.submit(_pch, pk[0], list(pk[1]), pch_key)] = ("pch", pk)
                for _, source, key, pre, _ in todo:
                    if pre is None:
                        submit_sources([(source, key)], None)
                    else:
                        waiting[(pre, source.flags)].append((source, key))
                if cand_args and (cand_pk is None or cand_pk not in pch_of):
                    submit_candidates()  # the runtime's candidate list, beside the sources (13 s)
                while pool.busy:
                    for ticket, payload in pool.next_done():
                        what, key = tickets.pop(ticket)
                        if what == "candidates":
                            cand = payload
                            if cand is not None and executor is not None:  # cached here too
                                store_candidates(install, clang_arch, cand_args[2], cand)
                        elif what == "pch":
                            path, seconds = payload
                            stats["pch_seconds"] += seconds
                            submit_sources(waiting.pop(key), (key[0], key[1], pch_key) if path else None)
                            if cand_args and key == cand_pk:
                                submit_candidates()
                        else:
                            stats["batches"] = stats.get("batches", 0) + 1
                            for skey, one in zip(key, payload):
                                results[skey] = one
                                stats["parsed"] += 1
                                stats["parse_cpu_seconds"] += one.get("cpu_seconds", 0.0)
                                stats["worker_peak_rss_mb"] = max(stats["worker_peak_rss_mb"],
                                                                  one.get("peak_rss_mb", 0.0))
                                if skey in places and _clean(one):  # shared with the twin build
                                    cache.put(skey, _placed(one, places[skey][0], back=False, copy=True))
                                elif one.get("error") is None or one.get("lasting"):
                                    # a source's own compile error is an answer too (a twin's: not shared)
                                    cache.put(places[skey][1] if skey in places else skey, one)
                                for line in over_so_far(arch, entry_of[skey]["file"], one, arch_fam):
                                    bar.note(line)  # what a long audit found, as it finds it
                                if on_tactic is not None:
                                    mod, source = mod_of[skey]
                                    stream(mod, source, skey, one)
                            bar.advance(len(key))
        finally:
            if bar is not None:
                bar.stop()
        stats["pch_seconds"] = round(stats["pch_seconds"], 2)
    elif cand_args:
        cand = _candidates(*cand_args, cached_only=cached_only)
    stats["parse_cpu_seconds"] = round(stats["parse_cpu_seconds"], 2)

    ranked: list[tuple[list[int], Tactic]] = []  # (rank in the whole audit, tactic), before the filters
    origins: dict[int, tuple] = {}  # id(tactic) -> (source, preamble, found kernel)
    parsed = {position[id(entry)]: results[key] for _, _, key, _, entry in work}
    judge_sources(sources_out, facts, parsed)
    # what tactic_of reads of each kernel (its spelling, its launcher's macro), remembered for
    # these sources' results (naming 5,775 kernels was 1.9 s of a profile of a warm audit of a
    # whole install)
    names_key = cache_key(f"audit-names/{_NAMES_FORMAT}", subject=[[w[2] for w in work], [w[0].name for w in work]],
                          target=[str(gen_root), str(install.root), arch_fam], code=_NAMING_CODE)
    lines = [[item["found"]["line"] for item in results[w[2]]["kernels"]] for w in work]
    named = _NAMES.get(names_key, _load_names(lines)) if use_cache else None
    made: list[list] = []
    with gc_paused(freeze=True):  # the tactics and their reports: never scanned again
        for w, (mod, source, key, pre, entry) in enumerate(work):
            made.append([])
            kernels = results[key]["kernels"]
            for j, fields in (named[w] if named is not None else _kept(kernels, arch_fam)):
                item = kernels[j]
                k = _found_from(item["found"])
                rep = item.pop("loaded", None) or LayoutReport.from_dict(item["report"])
                rep.provenance = Provenance(**prov)
                if fields is None:
                    t = tactic_of(mod.name, source.path, gen_root, k, rep, install.root)
                    made[-1].append([j, {f: getattr(t, f) for f in _NAMED}])
                else:
                    t = Tactic(**fields, report=rep)
                    rep.config = {"tactic": t.id, **t.identity()}
                t.runtime_candidate = cand.get(t) if cand is not None else None
                ranked.append(([position[id(entry)], j], t))
                origins[id(t)] = (source, pre, k)
                if on_tactic is not None and key not in streamed and stream_keeps(t):
                    on_tactic(arch, t)  # all from the cache: the tactics as they are made
    # remembered only where every source's result is the cached one (a source whose error is
    # passing, not stored, may give other kernels next time under the same key)
    if named is None and all(results[w[2]].get("error") is None or results[w[2]].get("lasting") for w in work):
        _NAMES.put(names_key, made)
    sm80_notes = None  # the moe_sm80 unit's notes, where it is laid out here
    if with_sm80:
        sm80 = audit_sm80_path(install, tgt, sm80_defines(mflags), use_cache=use_cache, cached_only=cached_only)
        if sm80 is None:  # cached_only, not cached: the rest of the audit stands
            sm80_notes = [f"{SM80_FAMILY}: not in the results cache (run the audit once to lay it out)"]
        else:
            for i, t in enumerate(sm80.tactics):
                if sm80.guard and t.verdict == "over_capacity":
                    t.runtime_guard = sm80.guard
                ranked.append(([len(sources_out), i], t))
                if on_tactic is not None and stream_keeps(t):
                    on_tactic(arch, t)
            sm80_notes = sm80.notes + ([f"{SM80_FAMILY}: over capacity is {sm80.guard}"] if sm80.guard else [])
    provenance = {"library": "flashinfer-python", "version": install.version, "origin": install.origin,
                  "root": str(install.root), "fingerprint": install.fingerprint,
                  "tvm_ffi": {"include": str(tvm.include) if tvm.include else None, "origin": tvm.origin},
                  "generated_root": str(gen_root) if gen_root else None,
                  "builders": builds.builders, **prov}
    mine = [i for i in own if i < len(sources_out)]
    parts = {"sources": len(sources_out), "positions": mine, "facts": [facts[i] for i in mine],
             "parsed": [_slim(parsed[i]) if i in parsed else None for i in mine], "families": families,
             "modules": [[m.name, m.builder] for m in builds.modules], "failed": dict(builds.failed),
             "candidates": None if cand_args is None else {"read": cand is not None,
                                                           "note": None if cand is None else cand.note},
             "sm80": sm80_notes}
    result = finish_audit(provenance, arch, [sources_out[i] for i in mine], ranked, asked, parts,
                          whole=shard is None)
    stats.update(search_fixes(result.tactics, origins, install, tgt, prov, clang_arch, pch_key, jobs=jobs,
                              use_cache=use_cache, cached_only=cached_only, executor=executor))
    stats["seconds"] = round(time.perf_counter() - t0, 3)
    stats["jit_seconds"] = round(t_jit - t0, 2)
    result.stats, result.candidates = stats, cand
    if shard is not None:
        result.shard = shard_part(shard, asked, ranked, result, parts)
    return result


def asked_of(config_values: dict, *, archs, **more) -> dict:
    """What an audit was asked, as its shards record it (:attr:`~cutlass_layout.model.AuditShard.asked`):
    ``archs`` (as asked), ``more`` (``family``, ``grep``; the library's ``selection``) and
    ``filters``: each config value given, as the list of its values as typed (text)."""
    filters = {k: [str(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
               for k, v in config_values.items() if v is not None and v != [] and v != ()}
    return {"archs": list(archs), **more, "filters": filters}


def finish_audit(provenance: dict, arch: str, sources: list[dict], ranked: list[tuple[list, Tactic]],
                 asked: dict, parts: dict, *, whole: bool = True) -> AuditResult:
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

    Notes, in order: the builders that failed, the TVM FFI headers missing, the runtime's
    candidate list, ``moe_sm80``'s, the filters that matched nothing (:func:`unmatched_filters`
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
        raise NothingForArch(nothing_found(provenance["version"], arch, [tuple(m) for m in parts.get("modules", [])],
                                           sources, failed))
    tvm = provenance.get("tvm_ffi") or {}
    wanting = sum(1 for e in sources if e["error"] and _TVM_FFI_MISSING.search(e["error"]))
    if wanting and tvm.get("include") is None:
        notes.append(f"{wanting} source(s) include TVM FFI headers (tvm/ffi/*.h, dlpack/) and there are "
                     f"none to use: {tvm.get('origin')}")
    cand = parts.get("candidates")
    if not (cand and cand["read"]) and any(t.family == MOE for t in tactics):
        notes.append("runtime candidates: the install's candidate list for the arch could not be read")
    elif cand and cand["read"] and cand["note"]:
        notes.append(cand["note"])
    notes += parts.get("sm80") or []
    # the arch's capacity as its headers give it, read from every kernel laid out, before the
    # filters: a filter that keeps nothing does not make it unknown
    capacity = next((t.report.capacity for t in tactics if t.report.capacity is not None), None)
    if family is not None:
        tactics = [t for t in tactics if t.family == family]
    unmatched = []
    if family is not None and not tactics and family in parts.get("families", ()):
        n = sum(1 for e in sources if not e["skipped"])
        what = (f"matched no tactic: its {n} source(s) for {arch} gave no kernel" if n else
                f"matched no tactic: none of its {len(sources)} source(s) is built for {arch}")
        unmatched.append({"filter": "family", "value": family, "nearest": [], "detail": what,
                          "note": f"family {family!r}: {what}"})
    unmatched += unmatched_filters(tactics, grep, tests)
    if grep:
        tactics = [t for t in tactics if grep.lower() in _haystack(t)]
    keep = _keep_all(tests)
    tactics = [t for t in tactics if keep(t)]
    notes += [u["note"] for u in unmatched]
    return AuditResult(provenance=provenance, arch=arch, capacity=capacity, tactics=sort_tactics(tactics),
                       sources=sources, notes=notes, families=list(parts.get("families", [])),
                       unmatched=unmatched, asked=asked)


def shard_part(shard: tuple[int, int], asked: dict, ranked: list[tuple[list, Tactic]], result: AuditResult,
               parts: dict) -> AuditShard:
    """The :class:`~cutlass_layout.model.AuditShard` of a shard's ``result``: the rank of each
    of its tactics, the tactics laid out that its filters dropped, the rank of the tactic its
    capacity was read from (the first, by rank, whose report has one), and ``parts``."""
    rank = {id(t): r for r, t in ranked}
    kept = {id(t) for t in result.tactics}
    cap = next((r for r, t in sorted(ranked, key=lambda x: x[0])
                if t.report is not None and t.report.capacity is result.capacity and t.report.capacity is not None),
               None)
    return AuditShard(index=shard[0], count=shard[1], asked=asked, ranks=[rank[id(t)] for t in result.tactics],
                      dropped=[(r, t) for r, t in ranked if id(t) not in kept], capacity_rank=cap, parts=parts)


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
    parts = first.shard.parts
    total = parts["sources"]
    sources: list = [None] * total
    facts: list = [None] * total
    parsed: dict[int, dict] = {}
    for res in shards:
        p = res.shard.parts
        for pos, entry, f, payload in zip(p["positions"], res.sources, p["facts"], p["parsed"]):
            if not 0 <= pos < total or sources[pos] is not None:
                raise BadInput(f"shard {res.shard.index}/{res.shard.count} ({res.arch}) lays out a source "
                               "another shard lays out too, or one the audit does not have")
            if payload is not None:  # judged again below, from what it holds
                entry = {**entry, "instantiations": None, "kernels": 0, "reason": None, "error": None}
                parsed[pos] = payload
            sources[pos], facts[pos] = entry, f
    if any(e is None for e in sources):
        raise BadInput(f"the {first.arch} shards lay out {sum(e is not None for e in sources)} of the audit's "
                       f"{total} sources: were they written by one version of cutlass-layout?")
    judge_sources(sources, facts, parsed)
    whole = {**parts, "candidates": next((r.shard.parts["candidates"] for r in shards
                                          if r.shard.parts["candidates"] is not None), None),
             "sm80": next((r.shard.parts["sm80"] for r in shards if r.shard.parts["sm80"] is not None), None)}
    return finish_audit(first.provenance, first.arch, sources, ranked_tactics(shards), first.shard.asked, whole)


def audit_archs(src=None, archs=ALL, *, use_cache: bool = True, **kwargs) -> AuditSet:
    """:func:`audit` of several arches of the flashinfer at ``src``, resolved once; each arch
    is its own audit (its builders' run, sources, runtime candidates and capacity), in the
    order asked.

    Args:
        src: a flashinfer install, as :func:`audit` takes it.
        archs: arches of :data:`AUDIT_ARCHS`, or ``"all"`` (anywhere among them): every
            arch the install has JIT module builders for (those :func:`every_arch` tries
            whose :func:`~cutlass_layout.sources.flashinfer_jit.arch_builders` are not empty,
            ascending: sm90, sm100, sm103, sm120; sm121, the same builds as sm120, only
            where named).
        use_cache, kwargs: as :func:`audit` takes them (``family``, ``grep``, the filters,
            ``jobs``, ...), for every arch.

    Returns:
        An :class:`~cutlass_layout.model.AuditSet`: one
        :class:`~cutlass_layout.model.AuditResult` per arch. An arch that ``all`` brought
        in and that gives nothing of what was asked (:class:`NothingForArch`: its builders
        give no kernel, or not the family asked for) is left out, and so is an arch
        without builders; each is named in ``notes``.

    Raises:
        BadInput: no arch, an arch an audit does not take (before the install is read), a
            bad filter value; whatever :func:`audit` raises for an arch named (not brought in
            by ``all``); ``all`` where no arch gives anything (the first arch's reason, or
            that the install has no builder for any).
    """
    from ..sources.flashinfer_jit import arch_builders
    from ..sources.trees import FlashinferInstall, resolve_flashinfer

    asked = arch_list(archs)
    named = [audit_arch(a) for a in asked if a != ALL]
    filter_tests(**{k: v for k, v in kwargs.items() if k in FILTER_KEYS})  # bad values: before any work
    if kwargs.get("shard") is not None:
        check_shard(kwargs["shard"])
    install = src if isinstance(src, FlashinferInstall) else resolve_flashinfer(src)
    notes: list[str] = []
    order: list[str] = []
    for a in asked:
        if a != ALL:
            order.append(a)
            continue
        built = {b: bool(arch_builders(install, b, use_cache=use_cache)) for b in every_arch()}
        order += [b for b, has in built.items() if has]
        none = [b for b, has in built.items() if not has]
        if none:
            notes.append(f"all: flashinfer {install.version} has no JIT module builder that builds a "
                         f"CUTLASS GEMM for {', '.join(none)}: not audited")
    if not order:
        raise NothingForArch(f"flashinfer {install.version} at {install.root} has no JIT module builder "
                             f"that builds a CUTLASS GEMM for any of {', '.join(every_arch())}")
    results: list[AuditResult] = []
    left: list[NothingForArch] = []
    for a in dict.fromkeys(order):
        try:
            results.append(audit(install, a, use_cache=use_cache, **kwargs))
        except NothingForArch as exc:
            if a in named:
                raise
            left.append(exc)
            notes.append(f"all: {a} not audited: {exc}")
        if results and results[-1].shard is not None:  # what its merge needs: which were named
            results[-1].shard.asked["archs"] = asked
    if not results:
        raise left[0]
    return AuditSet(results=results, notes=notes)


#: How a fix's error starts where it says nothing lasting of the launcher (not cached).
_PASSING = ("cannot read", "cannot search", "libclang", "the precompiled", "cannot write")
#: The verdicts whose tactics get a fix searched (:mod:`cutlass_layout.installs.fixes`).
FIX_VERDICTS = ("over_capacity", "exact_fit")


def search_fixes(tactics: list[Tactic], origins: dict, install, tgt, prov: dict, arch: str,
                 pch_key: str, *, jobs: int | None = None, use_cache: bool = True,
                 cached_only: bool = False, executor=None) -> dict:
    """Fill in :attr:`~cutlass_layout.model.Tactic.fix` of every tactic of ``tactics`` over
    capacity or an exact fit (:data:`FIX_VERDICTS`): read from the results cache (kind
    ``fixes``, :func:`cutlass_layout.installs.fixes.fix_key`), else searched
    (:func:`cutlass_layout.installs.fixes.search_fixes`), the tactics of one folder, flags and includes
    together, in worker processes; with ``cached_only`` nothing is searched (a fix not cached
    stays None). ``origins``: ``id(tactic) -> (Source, preamble, FoundKernel)``;
    ``executor``: as :func:`audit` takes it (the fixes come back and are cached here).

    Returns stats: ``fixes`` (searched), ``fixes_cached``, ``fix_cpu_seconds``."""
    from ..cpp.clang import libclang_version
    from ..installs.fixes import FORMULAS, MIN_STAGES, Want, fix_key
    from ..installs.kernels import CAPACITY
    from ..core.pool import Pool, default_jobs

    stats = {"fixes": 0, "fixes_cached": 0, "fix_cpu_seconds": 0.0}
    if arch not in FORMULAS:  # said, not left blank (a blank fix reads as "none needed")
        for t in tactics:
            if t.verdict in FIX_VERDICTS and t.fix is None:
                t.fix = Fix(error=f"not searched: the fix search reads the stage formulas of "
                                  f"{' and '.join(sorted(FORMULAS))}'s builders, not {arch}'s")
        return stats
    cache = ResultCache("fixes")
    target = [install.fingerprint, install.tree.tree_hash, libclang_version(), str(tgt.cuda.path)]
    groups: dict[tuple, list] = {}
    for t in tactics:
        if t.verdict not in FIX_VERDICTS:
            continue
        if id(t) not in origins:
            if t.fix is None:
                t.fix = Fix(error="not searched: its kernel is not declared in a launcher of the "
                                  "install's generated or JIT sources")
            continue
        source, pre, k = origins[id(t)]
        if t.report.stages is not None and t.report.stages <= MIN_STAGES:
            t.fix = Fix(fewest_stages=MIN_STAGES)  # the collective takes no fewer: nothing to search
            continue
        if k.macro is None or not k.decl_file or not Path(k.decl_file).is_absolute() or not k.line:
            t.fix = Fix(error="its kernel is not declared in a launcher macro: not searched")
            continue
        want = Want(key=t.id, source=source, line=k.line, macro=(k.macro[0], list(k.macro[1])),
                    launcher_file=k.decl_file, launcher_line=k.decl_line, report=t.report)
        want.cache_key = fix_key(want, target)
        hit = cache.get(want.cache_key, Fix.from_dict) if use_cache else None
        if hit is not None:
            t.fix = hit
            stats["fixes_cached"] += 1
        elif not cached_only:
            groups.setdefault((source.path.parent, source.flags, pre), []).append((t, want))
    if not groups:
        return stats
    parts = fix_parts(list(groups.items()), default_jobs(jobs, executor))
    with Pool(min(default_jobs(jobs, executor), len(parts)), executor=executor,
              reads=_reads(install, tgt, None, None) + [folder for folder, _, _ in groups]) as pool:
        tasks = ((items, _fixes, ([w for _, w in items], prov, pre, list(flags), pch_key, arch, CAPACITY[arch]))
                 for (_, flags, pre), items in parts)
        for items, (payload, cpu) in pool.run(tasks):
            stats["fix_cpu_seconds"] += cpu
            for (t, want), d in zip(items, payload):
                t.fix = Fix.from_dict(d)
                stats["fixes"] += 1
                if not (t.fix.error or "").startswith(_PASSING):
                    cache.put(want.cache_key, d)  # an answer of the launcher's own
    stats["fix_cpu_seconds"] = round(stats["fix_cpu_seconds"], 2)
    return stats


#: The fewest tactics a part of one group's fix search holds (:func:`fix_parts`): a unit
#: pays some 3 s before its first kernel, so smaller parts would cost more than they save.
FIX_PART_MIN = 4


def fix_parts(groups: list[tuple], jobs: int) -> list[tuple]:
    """``groups`` (``(key, items)``, each one translation unit of the fix search) cut so that
    every worker has one where there are enough tactics: the largest dealt in two until there are
    ``jobs`` parts or none holds 2 x :data:`FIX_PART_MIN` (flashinfer 0.7.4's 60 SM90 tactics
    over capacity or exact fits are one folder's, one group: one worker searched them all
    while the other waited; dealt in two, 54 s -> 30 s wall)."""
    parts = list(groups)
    while len(parts) < jobs:
        i = max(range(len(parts)), key=lambda j: len(parts[j][1]))
        key, items = parts[i]
        if len(items) < 2 * FIX_PART_MIN:
            break
        parts[i:i + 1] = [(key, items[0::2]), (key, items[1::2])]  # alike tactics lie together: dealt
    return parts


def _fixes(wants, provenance: dict, preamble, flags, pch_key, arch, capacity):
    """:func:`cutlass_layout.installs.fixes.search_fixes` in a worker: ``([fix as a dict], CPU seconds)``,
    with the precompiled header of the sources' includes (built when it is not there)."""
    from ..cpp.clang import ensure_pch
    from ..installs.fixes import search_fixes as search

    def pch():
        path = ensure_pch(preamble, flags, pch_key) if preamble else None
        return str(path) if path else None

    t0 = time.process_time()
    try:
        fixes = search(wants, Provenance(**provenance), pch, arch, capacity)
    except (BadInput, OSError) as exc:  # a header missing, a cache that cannot be written: not cached
        what = str(exc) if isinstance(exc, BadInput) else (exc.strerror or str(exc))
        fixes = [Fix(error=f"cannot search: {what}") for _ in wants]
    return [f.to_dict() for f in fixes], round(time.process_time() - t0, 2)


def _pch(preamble: str, flags: list[str], key: str) -> tuple[str | None, float]:
    """:func:`~cutlass_layout.cpp.clang.ensure_pch` in a worker: (its path or None, seconds)."""
    from ..cpp.clang import ensure_pch

    t = time.perf_counter()
    path = ensure_pch(preamble, flags, key)
    return (str(path) if path else None), round(time.perf_counter() - t, 2)


def _candidates(install, arch, flags, preamble, pch_key, use_cache, cached_only=False):
    """:func:`~cutlass_layout.installs.candidates.runtime_candidates` (also run in a worker process)."""
    from ..installs.candidates import runtime_candidates

    return runtime_candidates(install, arch, flags, pch_preamble=preamble, pch_key=pch_key,
                              use_cache=use_cache, cached_only=cached_only)


def _reads(install, tgt, gen_root, tvm) -> list[Path]:
    """The folders a worker's task reads (checked on a Dask cluster's workers): the install,
    its CUTLASS tree, the CUDA headers, the generated sources, the TVM FFI headers."""
    return [p for p in (install.root, install.tree.include_root, tgt.cuda.path, gen_root,
                        tvm.include if tvm is not None else None) if p is not None]


def _gen_root(path: Path) -> Path:
    parts = path.parts
    return Path(*parts[:parts.index("generated") + 1]) if "generated" in parts else path.parent


def _rel(path: Path, root: Path | None) -> str:
    try:
        return str(path.relative_to(root)) if root else str(path)
    except ValueError:
        return str(path)


def sort_tactics(tactics: list[Tactic]) -> list[Tactic]:
    """Grouped by family (``moe`` first), then over capacity, exact fits, does not compile,
    fits; within a verdict by kernel bytes, largest first, then name."""
    def key(t: Tactic):
        kb = t.report.kernel.size if t.report.error is None and t.report.kernel else -1
        return (t.family != MOE, t.family, VERDICT_ORDER.index(t.verdict), -kb, str(t.name),
                str(t.out), str(t.fusion), bool(t.swap_ab))
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
        raise BadInput(f"no tactic matches {text!r}: give an id as `audit` lists them "
                       "(family/name/AxB/out/fusion[/swap_ab])")
    more = f" and {len(hits) - 8} more" if len(hits) > 8 else ""
    raise BadInput(f"{len(hits)} tactics match {text!r}: {', '.join(hits[:8])}{more}")


# ---------------------------------------------------------------------------------------
# what a preset approximates, and what the install builds for the same config

#: preset -> the kernel it approximates, in words
PRESET_KERNELS = {
    "trtllm-moe": "TensorRT-LLM's MoE grouped GEMM (moe_gemm_tma_ws_launcher.inl)",
    "flashinfer": "the CUTLASS GEMMs of flashinfer's JIT modules",
    "vllm": "vLLM's blockwise FP8 GEMM (scaled_mm_blockwise_sm120_fp8_dispatch.cuh)",
}
#: preset -> the audit family of its kernels (None: every family but moe); vllm has none
PRESET_FAMILIES = {"trtllm-moe": MOE, "flashinfer": None}


def _audit_source(origin: str) -> str | None:
    """The install as ``audit`` takes it, from its tree's origin (as
    :func:`cutlass_layout.sources.trees.resolve_cutlass` writes it): ``NAME==VERSION``, the wheel's
    or folder's path, the distribution; None for one found in this environment."""
    m = re.match(r"(?:default )?(\S+==\S+) \(wheel ", origin)
    if m:
        return m.group(1)
    for prefix in ("wheel ", "directory ", "installed "):
        if origin.startswith(prefix):
            rest = origin[len(prefix):]
            return None if prefix == "installed " and " " in rest else rest
    return None


def approximations(configs: list, tree, *, cuda_path=None) -> list:
    """The :class:`~cutlass_layout.model.Approximation` of each config of ``configs`` read
    from the CUTLASS tree ``tree`` (None for what is not a preset config: a user type).

    Where ``tree`` is a flashinfer install's (:func:`cutlass_layout.sources.trees.flashinfer_of`:
    nothing is fetched or unpacked) and :func:`audit` takes the config's arch, the install's
    audit of the preset's family is read from the results cache (``cached_only``: nothing is
    run or parsed; once per arch and family for all configs), and its tactics with the
    config's kernel kind, A, B, D, tile (K in elements) and cluster are listed
    (:func:`tactic_filter`); the stage count and the epilogue flavour are not matched, which
    is the point: the install's tactic of that tile is what runs. Never raises for an install
    that cannot be read (the approximation says nothing was audited).
    """
    from ..model import Approximation
    from ..sources.trees import flashinfer_of
    from ..subjects.config import Config

    out = []
    install = None
    looked = flashinfers = False
    audits: dict = {}
    for cfg in configs:
        if not isinstance(cfg, Config):
            out.append(None)
            continue
        appr = Approximation(preset=cfg.preset, kernel=PRESET_KERNELS.get(cfg.preset, cfg.preset))
        out.append(appr)
        if cfg.preset not in PRESET_FAMILIES:
            continue
        if not looked:
            looked = True
            # a flashinfer's tree (the wheel's CUTLASS alone may be all that is unpacked)
            flashinfers = Path(tree.include_root).parts[-4:] == ("flashinfer", "data", "cutlass", "include")
            try:
                install = flashinfer_of(tree)
            except BadInput:
                install = None
        if install is None and not flashinfers:
            continue
        appr.source = _audit_source(tree.origin)
        if install is not None:
            appr.install = f"flashinfer-python {install.version}"
        else:  # a wheel's CUTLASS tree alone: its version as named
            m = re.fullmatch(r"(\S+)==(\S+)", appr.source or "")
            appr.install = f"{m.group(1)} {m.group(2)}" if m else "flashinfer"
        appr.family = PRESET_FAMILIES[cfg.preset]
        if cfg.arch not in AUDIT_ARCHS:
            continue
        appr.arch = cfg.arch
        appr.audited = False
        if install is None:
            continue
        key = (cfg.arch, appr.family)
        if key not in audits:
            try:
                audits[key] = audit(install, cfg.arch, family=appr.family, cuda_path=cuda_path,
                                    strict_family=False, cached_only=True)
            except BadInput:
                audits[key] = None
        res = audits[key]
        appr.audited = res is not None
        if res is None:
            continue
        try:
            keep = tactic_filter(kernel=cfg.kernel, a=cfg.a, b=cfg.b, d=cfg.element_d,
                                 tile="x".join(map(str, cfg.tile)),
                                 cluster="x".join(map(str, cfg.cluster)))
        except BadInput:  # a kind no tactic is named by
            continue
        appr.tactics = [{k: getattr(t, k) for k in ("id", "verdict", "stages", "kernel_bytes",
                                                    "headroom_bytes", "runtime_candidate")}
                        for t in res.tactics
                        if (t.family == appr.family if appr.family else t.family != MOE) and keep(t)]
    return out


__all__ = ["approximations", "arch_list", "asked_of", "audit", "audit_arch", "audit_archs", "element_kind",
           "find_tactic", "finish_audit", "judge_sources", "kernel_parts", "merge_shards", "sort_tactics",
           "tactic_filter"]
