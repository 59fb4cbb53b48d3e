"""What an audit lays out: the install's builds for the arch (:func:`read_builds`), its
families, every generated source of the modules asked for with its flags, its text's facts
and its results-cache key (a source another build of the arch family compiles alike is keyed
as both build it: :func:`twin_digests`), and the shard's part of them (:func:`plan_sources`)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import BadInput, NothingForArch
from ...core.cache import KINDS, code_fingerprint, result_key
from ...cpp.brackets import blank_comments
from ...installs.equivalence import canonical_flags, place_names
from ...installs.kernels import Source, estimate_kernels, pch_preamble, split_preamble
from ...installs.moe_sm80 import FAMILY as SM80_FAMILY
from ...installs.moe_sm80 import has_sm80_path, kernel_count
from ...cpp.preprocessor import command_line_defines
from ...installs.naming import MOE, family_of
from ...subjects.archs import AUDIT_ARCHS, SM80_PATH_ARCHS, arch_family, capacity_of
from ..shard import shard_of
from .judge import source_facts

if TYPE_CHECKING:
    from ...engine.loop import Target
    from ...sources.flashinfer import FlashinferInstall
    from ...sources.flashinfer_jit import JitBuilds
    from ...sources.tvm_ffi import TvmFfiHeaders

#: The cache kind of a per-source result: its row's code is what it depends on (naming tactics
#: happens after reading it; which sources and flags are read is in the key itself), its keys
#: add STANDINS below.
AUDIT = KINDS["audit"]
#: The stand-in headers (package ``stubs/``) a build may include.
STANDINS = tuple(f"stubs/{p.name}" for p in sorted((Path(__file__).parents[2] / "stubs").glob("*.h")))


#: Weight (see :data:`KERNEL_WEIGHTS`) laid out in one translation unit at most. A unit's kernels
#: share what they instantiate alike (builders, cute's layouts of one tile), so a larger unit
#: costs less per kernel, and more memory. The value is chosen from measurements of flashinfer
#: 0.7.4's MoE sources, each unit alone (CPU and peak resident memory by unit size:
#: docs/performance.md, "Batching by weight").
BATCH_WEIGHT = 288
#: What one kernel weighs, by module name (the first pattern that matches): SM90 and SM120 MoE
#: kernels 1 (288 a unit), SM100 and SM103 MoE kernels 3 (96), the SM103 dense FP4 GEMMs' 12
#: (24: 2 of their sources), :data:`DEFAULT_WEIGHT` for the rest.
KERNEL_WEIGHTS = (
    (re.compile(r"^fused_moe_(90|12\d)\b"), 1),
    (re.compile(r"^fused_moe_10\d\b"), 3),
    (re.compile(r"fp4_gemm_cutlass_sm103"), 12),
)
#: What one kernel of a module :data:`KERNEL_WEIGHTS` does not name weighs: 48 a unit.
DEFAULT_WEIGHT = 6


def kernel_weight(module: str) -> int:
    """What one kernel of a source of ``module`` weighs of a unit's :data:`BATCH_WEIGHT`
    (:data:`KERNEL_WEIGHTS`, else :data:`DEFAULT_WEIGHT`)."""
    return next((w for pattern, w in KERNEL_WEIGHTS if pattern.search(module)), DEFAULT_WEIGHT)


#: What keys a source as its twin's (:func:`_canonicals`): its row's code is read besides the audit's.
_CANONICALS = KINDS["audit-canonicals"]


def twin_digests(
    install, arch: str, cuda_version: tuple[int, int], *, use_cache: bool = True, run: bool = True
) -> set[str]:
    """The SHA-256 of each generated source of the install's other builds of ``arch``'s family
    (for ``sm100``, the ``sm103`` build's, and the reverse; flashinfer 0.7.4's SM103 MoE module
    generates the SM100 module's 242 sources again, byte for byte): the sources that may be
    laid out once for both (:func:`_canonicals`). Empty for an arch alone in its family, or an
    install without the other build."""
    from ...sources.flashinfer_jit import ARCH_BUILDERS, build_arch, jit_modules

    own = build_arch(arch)
    fam = arch_family(int(AUDIT_ARCHS[arch][2:]))
    others = [
        a for a in ARCH_BUILDERS if build_arch(a) == a and a != own and arch_family(int(AUDIT_ARCHS[a][2:])) == fam
    ]
    out: set[str] = set()
    for other in others:
        try:
            builds = jit_modules(install, other, cuda_version=cuda_version, use_cache=use_cache, run=run)
        except (NothingForArch, BadInput):
            continue
        out |= set(builds.digests.values()) if builds is not None else set()  # as read back: checked
    return out


def _canonicals(
    mod, flags: tuple, read: list[tuple], gen_root: Path | None, arch_fam: str, target: tuple, use_cache: bool
) -> dict[str, list[str]]:
    """``{path: canonical flags}`` of the sources of ``read`` (``(path, entry, index, text,
    digest)`` of a module's sources that have a twin in another build of the family), as
    :func:`cutlass_layout.installs.equivalence.canonical_flags` gives them (a source it cannot
    follow is left out: keyed by its own flags), remembered per module."""
    if not read:
        return {}
    key = _CANONICALS.key(
        subject=[mod.name, list(flags), arch_fam, str(gen_root), [[str(p), d] for p, _, _, _, d in read]],
        target=list(target),
    )

    def load(payload):
        if not isinstance(payload, dict) or not all(isinstance(v, list) for v in payload.values()):
            raise ValueError("not canonical flags")
        return payload

    def compute() -> dict[str, list[str]]:
        memo: dict = {}
        out = {}
        for path, *_ in read:
            canon = canonical_flags(path, list(flags), gen_root, arch_fam, memo)
            if canon is not None:
                out[str(path)] = canon
        return out

    return _CANONICALS.memo(key, compute, load=load, use_cache=use_cache)


#: What reading a source's text without a parse (:func:`scan_source`) remembers (its row: the code it runs).
_SCANS = KINDS["audit-scans"]


def scan_source(arch: str, path: Path, text: str) -> dict:
    """What an audit reads of a source's text before any parse: its :func:`source_facts`,
    whether it names the arch (``arch_word``: its folder, name or code, comments left out),
    its :func:`~cutlass_layout.installs.kernels.estimate_kernels` and the ``#include`` lines of
    its preamble (:func:`~cutlass_layout.installs.kernels.split_preamble`)."""
    clean = blank_comments(text, strings=False)
    return {
        "facts": source_facts(text),
        "arch_word": bool(_ARCH_WORD[arch].search(f"{path.parent.name}/{path.name}\n{clean}")),
        "estimate": estimate_kernels(clean),
        "includes": split_preamble(text)[0],
    }


def _scans(arch: str, read: list[tuple], use_cache: bool) -> list[dict]:
    """:func:`scan_source` of each source of ``read`` (``(path, entry, index, text, digest)``),
    remembered for the texts of all of them (scanning a whole install's sources again was a
    visible share of its warm audit: docs/performance.md)."""
    key = _SCANS.key(subject=[arch, [[f"{p.parent.name}/{p.name}", d] for p, _, _, _, d in read]], target=[])

    def load(payload):
        if not (
            isinstance(payload, list)
            and len(payload) == len(read)
            and all(isinstance(x, dict) and x.keys() == _SCAN_KEYS for x in payload)
        ):
            raise ValueError("scans of other sources")
        return payload

    return _SCANS.memo(
        key, lambda: [scan_source(arch, path, text) for path, _, _, text, _ in read], load=load, use_cache=use_cache
    )


_SCAN_KEYS = {"facts", "arch_word", "estimate", "includes"}

_ARCH_WORD = {
    "sm120": re.compile(r"sm_?12[01]", re.I),
    "sm121": re.compile(r"sm_?12[01]", re.I),
    "sm100": re.compile(r"sm_?10[03]", re.I),
    "sm103": re.compile(r"sm_?10[03]", re.I),
    "sm90": re.compile(r"sm_?90(?!\d)", re.I),
}


def _gen_root(path: Path) -> Path:
    parts = path.parts
    return Path(*parts[: parts.index("generated") + 1]) if "generated" in parts else path.parent


def _rel(path: Path, root: Path | None) -> str:
    try:
        return str(path.relative_to(root)) if root else str(path)
    except ValueError:
        return str(path)


# ---------------------------------------------------------------------------------------
# the plan of one audit


@dataclass
class Build:
    """What a flashinfer install builds for an arch: the install, the target (its CUTLASS tree
    and CUDA headers), its JIT modules' answer (:func:`~cutlass_layout.sources.flashinfer_jit.jit_modules`)
    and the tactic families they give (``moe`` first; ``moe_sm80`` where the arch holds it)."""

    install: FlashinferInstall
    tgt: Target
    builds: JitBuilds
    families: list[str]


def read_builds(src, arch: str, cuda_path, *, use_cache: bool, cached_only: bool) -> Build | None:
    """The :class:`Build` of the flashinfer at ``src`` for ``arch``; None where ``cached_only``
    and its builders' answer is not cached."""
    from ...engine import loop as engine
    from ...sources.flashinfer_jit import jit_modules
    from ...sources.flashinfer import FlashinferInstall, resolve_flashinfer

    install = src if isinstance(src, FlashinferInstall) else resolve_flashinfer(src)
    tgt = engine.target(install.tree, cuda_path)
    builds = jit_modules(install, arch, cuda_version=tgt.cuda.version, use_cache=use_cache, run=not cached_only)
    if builds is None:
        return None
    families = list(dict.fromkeys(sorted((family_of(m.name) for m in builds.modules), key=lambda f: (f != MOE, f))))
    if arch in SM80_PATH_ARCHS and MOE in families and has_sm80_path(install):  # moe_sm80.py
        families.append(SM80_FAMILY)
    return Build(install, tgt, builds, families)


@dataclass
class Plan:
    """The sources of one audit (or shard), as :func:`plan_sources` reads them.

    Attributes:
        work: ``(module, Source, key, preamble, entry)`` of each source laid out here
            (``preamble``: the ``#include`` lines a precompiled header is built of, or None).
        sources, facts: every source's entry (:attr:`~cutlass_layout.model.AuditResult.sources`)
            and its :func:`~cutlass_layout.commands.audit.judge.source_facts` (None: not read).
        places: the key of a source keyed as its twin's -> (its generated folders' names, its
            key as this build's alone).
        estimates: the kernels each source likely holds, times their weight (unit sizes).
        own: the units laid out here (positions in ``sources``; ``len(sources)`` is moe_sm80).
        moe: ``(Source, preamble)`` of the first MoE source (the runtime's candidate list is
            read with its flags), or None; cand_args: the candidate list's arguments, where
            the sources laid out here have MoE kernels.
    """

    arch: str
    clang_arch: str
    arch_fam: str | None
    family: str | None
    build: Build
    tvm: TvmFfiHeaders
    prov: dict
    gen_root: Path | None = None
    work: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    facts: list = field(default_factory=list)
    places: dict = field(default_factory=dict)
    estimates: dict = field(default_factory=dict)
    position: dict = field(default_factory=dict)
    own: object = None
    with_sm80: bool = False
    mflags: list = field(default_factory=list)
    moe: tuple | None = None
    pch_key: str = ""
    # (install, clang arch, flags, preamble, pch key, use_cache)
    cand_args: tuple[FlashinferInstall, str, list[str], str | None, str, bool] | None = None
    #: the dense runners' config lists read while naming tactics, by family
    #: (:func:`~cutlass_layout.installs.dense_runners.dense_configs`)
    dense: dict = field(default_factory=dict)

    @property
    def install(self) -> FlashinferInstall:
        return self.build.install

    @property
    def tgt(self) -> Target:
        return self.build.tgt


def plan_sources(
    build: Build, arch: str, family: str | None, shard: tuple[int, int] | None, *, use_cache: bool, cached_only: bool
) -> Plan:
    """The :class:`Plan` of an audit of ``build`` for ``arch``: every generated source of the
    modules of ``family`` (all without one) read, scanned and keyed, then cut to ``shard``."""
    from ...cpp.clang import libclang_version
    from ...sources.tvm_ffi import tvm_ffi_headers

    install, tgt = build.install, build.tgt
    clang_arch = AUDIT_ARCHS[arch]
    base_flags = tgt.flags(clang_arch)
    tvm = tvm_ffi_headers(install, fetch=not cached_only)
    tvm_flags = ["-isystem", str(tvm.include)] if tvm.include is not None else []
    plan = Plan(
        arch=arch,
        clang_arch=clang_arch,
        arch_fam=None,
        family=family,
        build=build,
        tvm=tvm,
        prov=asdict(tgt.provenance(clang_arch)),
    )
    clang = libclang_version()
    plan.arch_fam = arch_family(int(clang_arch[2:]))  # sm103 builds run SM100's mainloops
    twins = twin_digests(install, arch, tgt.cuda.version, use_cache=use_cache, run=not cached_only)
    target = [install.fingerprint, install.tree.tree_hash, clang, str(tgt.cuda.path), tvm.fingerprint]
    for mod in build.builds.modules:
        if family is not None and family != family_of(mod.name):
            continue  # not asked for: not parsed
        flags = tuple(base_flags + mod.clang_flags() + tvm_flags)
        _plan_module(plan, mod, flags, _read_module(plan, mod), twins, target, use_cache)
    _cut_shard(plan, shard)
    # the stand-in headers are part of what a precompiled header was built from
    plan.pch_key = result_key(
        "pch", install.fingerprint, install.tree.tree_hash, tvm.fingerprint, code_fingerprint(*STANDINS)
    )
    # sm121 runs sm120's builds: the same candidate list (and its cache entry)
    moe = plan.moe
    plan.cand_args = (
        (install, clang_arch, list(moe[0].flags), moe[1], plan.pch_key, use_cache)
        if moe and any(mod.name.startswith("fused_moe") for mod, *_ in plan.work)
        else None
    )
    return plan


def _read_module(plan: Plan, mod) -> list[tuple]:
    """A module's generated sources as entries of ``plan.sources`` (a facts slot each), and
    ``(path, entry, its index, text, digest)`` of each C++ source whose text could be read."""
    read = []
    for path in mod.generated:
        plan.gen_root = plan.gen_root or _gen_root(path)
        entry = {
            "module": mod.name,
            "builder": mod.builder,
            "family": family_of(mod.name),
            "file": _rel(path, plan.gen_root),
            "instantiations": None,
            "kernels": 0,
            "skipped": None,
            "reason": None,
            "error": None,
        }
        plan.sources.append(entry)
        plan.facts.append(None)
        if path.suffix not in (".cu", ".cpp", ".cc", ".cuh"):
            entry["skipped"] = "not a C++ source"
            continue
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            entry["error"] = f"cannot read: {exc.strerror or exc}"
            continue
        read.append((path, entry, len(plan.facts) - 1, text, hashlib.sha256(text.encode()).hexdigest()))
    return read


def _plan_module(
    plan: Plan, mod, flags: tuple, read: list[tuple], twins: set[str], target: list, use_cache: bool
) -> None:
    """The sources of ``read`` (one module's) that name the arch, into ``plan.work`` with their
    keys (a source with a twin in another build of the family: keyed as both build it); the
    others skipped."""
    install, arch, gen_root = plan.install, plan.arch, plan.gen_root
    scans = _scans(arch, read, use_cache)
    mod_places = None
    assert plan.arch_fam is not None  # plan_sources sets it first
    read_flags = _canonicals(
        mod,
        flags,
        [r for r, scan in zip(read, scans) if scan["arch_word"] and r[4] in twins],
        gen_root,
        plan.arch_fam,
        (install.fingerprint, install.tree.tree_hash, plan.tvm.fingerprint),
        use_cache,
    )
    for (path, entry, i, text, digest), scan in zip(read, scans):
        plan.facts[i] = scan["facts"]
        if not scan["arch_word"]:
            entry["skipped"] = f"names no {arch} symbol"
            continue
        plan.estimates[path] = scan["estimate"] * kernel_weight(mod.name)
        canon = read_flags.get(str(path))
        # a source another build of the arch family compiles alike is keyed as both build it
        key = AUDIT.key(subject=[digest, list(flags)], target=target, code=STANDINS)
        if canon is not None:
            plain, key = (
                key,
                AUDIT.key(
                    subject=["twin", digest, canon, capacity_of(arch)],
                    target=target,
                    code=STANDINS + (_CANONICALS.code or ()),
                ),
            )
            mod_places = mod_places or place_names(list(flags), gen_root)  # one module: one set of flags
            plan.places[key] = (mod_places, plain)
        plan.work.append(
            (
                mod,
                Source(path, flags, install.tree.include_root, plan.clang_arch),
                key,
                pch_preamble(scan["includes"]) if scan["includes"] else None,
                entry,
            )
        )


def _cut_shard(plan: Plan, shard: tuple[int, int] | None) -> None:
    """The units laid out here (``plan.own``): every source and moe_sm80, or ``shard``'s of
    them (:func:`~cutlass_layout.commands.shard.shard_of`, by estimated kernels); the MoE
    source whose flags read the runtime's candidate list (the same in every shard)."""
    plan.position = {id(entry): i for i, entry in enumerate(plan.sources)}
    plan.with_sm80 = SM80_FAMILY in plan.build.families and plan.family in (None, SM80_FAMILY)
    plan.mflags = next((m.clang_flags() for m in plan.build.builds.modules if family_of(m.name) == MOE), [])
    # the runtime's candidate list: read with the install's first MoE source's flags (the same
    # in every shard), where the sources laid out here have MoE kernels
    plan.moe = next(((src, pre) for mod, src, _, pre, _ in plan.work if mod.name.startswith("fused_moe")), None)
    plan.own = range(len(plan.sources) + plan.with_sm80)  # the units laid out here: each source, moe_sm80
    if shard is not None:
        weight = {id(e): max(1, plan.estimates.get(source.path, 1)) for _, source, _, _, e in plan.work}
        plan.own = shard_of(
            [weight.get(id(e), 0) for e in plan.sources]
            + ([kernel_count(plan.install, command_line_defines(plan.mflags))] if plan.with_sm80 else []),
            shard,
        )
        plan.work = [w for w in plan.work if plan.position[id(w[4])] in plan.own]
    plan.with_sm80 = plan.with_sm80 and len(plan.sources) in plan.own


__all__ = [
    "BATCH_WEIGHT",
    "DEFAULT_WEIGHT",
    "KERNEL_WEIGHTS",
    "STANDINS",
    "Build",
    "Plan",
    "kernel_weight",
    "plan_sources",
    "read_builds",
    "twin_digests",
]
