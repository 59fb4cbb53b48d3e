"""Runtime tactic ids of flashinfer's dense CUTLASS GEMM runners, read from the install's code.

A dense runner's tactic is an index into the vector its C++ runner's ``getConfigs()`` returns:
the binding (``data/csrc/<module>.cu``) keeps ``getConfigs()`` once and runs
``globalConfigs[tactic]``, and ``*_gemm_tactic_num()`` returns its size, which the Python
runner's ``get_valid_tactics`` turns into ``range(...)``. :func:`dense_configs` parses the
runner's template header with libclang (bodies parsed, the module's own flags), runs
``getConfigs`` with :class:`~cutlass_layout.cpp.interpret.Eval` and reads the tile each config's
tile enum runs from the dispatch ``switch`` on ``tile_config_sm120``: the first three integers of
the ``case``'s statement (integer literal cursors), the CTA shape the launcher is instantiated with
(``genericMxfp8GemmKernelLauncherSm120<T, cute::Int<128>, cute::Int<32>, cute::Int<128>, ...>``,
``DISPATCH_WITH_SCHEDULER(128, 32, 128)``). A tactic of the family then has the id of the config
with its tile (elements, as the kernel holds it), swap_ab and, where the config names it, its
tile scheduler (``use_stream_k``: the launcher's ``GemmKernelStreamK`` kernel rather than
``GemmKernelDefault``) (:meth:`DenseConfigs.ids`).

Read for flashinfer 0.7.x's SM120 runners (:data:`DENSE`): ``CutlassMxfp8GemmRunnerSm120``
(``mxfp8_gemm_cutlass_sm120``) and ``CutlassFp4GemmRunner`` of the SM120 FP4 template
(``fp4_gemm_cutlass_sm120``). Where the code has another shape the answer is a note, and the
family's tactics keep ``runtime_candidate`` None.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core.cache import KINDS
from ..core.progress import audit_label, step

#: The cache kind of :func:`dense_configs`' answers.
DENSE_CANDIDATES = KINDS["dense-candidates"]


@dataclass(frozen=True)
class DenseRunner:
    """Where a dense runner's configs are, in a flashinfer install.

    Attributes:
        header: the runner's template header, below ``data/include``.
        runner: the C++ class whose ``getConfigs`` the binding indexes with a tactic.
        dispatch: the function whose ``switch`` on ``member`` maps a tile enum to a launcher.
        member: the config's tile member (``tile_config_sm120``).
        enum: the tile enum (``CutlassTileConfigSM120``).
        python_runner: the Python runner class the autotuner sees (``gemm/gemm_base.py``).
        tactic_num: the binding function its ``get_valid_tactics`` counts (``range(module.X())``).
    """

    header: str
    runner: str
    dispatch: str
    member: str
    enum: str
    python_runner: str
    tactic_num: str


#: The dense runners whose ids are read, by audit family.
DENSE = {
    "mxfp8_gemm_cutlass_sm120": DenseRunner(
        "flashinfer/gemm/mxfp8_gemm_cutlass_template_sm120.h",
        "CutlassMxfp8GemmRunnerSm120",
        "dispatchMXFP8xMXFP8GemmCTAShapeSm120",
        "tile_config_sm120",
        "CutlassTileConfigSM120",
        "CutlassMxfp8GemmRunner",
        "mxfp8_gemm_tactic_num",
    ),
    "fp4_gemm_cutlass_sm120": DenseRunner(
        "flashinfer/gemm/fp4_gemm_cutlass_template_sm120.h",
        "CutlassFp4GemmRunner",
        "dispatchNVFP4xNVFP4GemmCTAShapeSm120",
        "tile_config_sm120",
        "CutlassTileConfigSM120",
        "CutlassFp4GemmRunner",
        "fp4_gemm_tactic_num",
    ),
}


@dataclass
class DenseConfigs:
    """One dense runner's configs in ``getConfigs()`` order (a tactic id is an index).

    Attributes:
        configs: ``[tile enum, [M, N, K], swap_ab, use_stream_k], ...``; ``[M, N, K]`` the CTA
            shape the dispatch instantiates for the enum (elements), None where its ``case``
            was not found.
        note: why the configs could not be read (then no tactic gets an id).
    """

    configs: list = field(default_factory=list)
    note: str | None = None

    def ids(self, tactic) -> list[int] | None:
        """The tactic ids of ``tactic`` (a :class:`~cutlass_layout.model.Tactic` of the family):
        the indices of the configs with its tile, swap_ab and (by its kernel alias, ``...::
        GemmKernelStreamK`` or not) scheduler; [] where none has them; None where the configs were
        not read or a config's tile was not."""
        if self.note is not None or any(c[1] is None for c in self.configs) or tactic.tile is None:
            return None
        stream_k = str(tactic.name or "").endswith("::GemmKernelStreamK")
        return [
            i
            for i, (_enum, tile, swap, sk) in enumerate(self.configs)
            if list(tile) == list(tactic.tile) and bool(swap) == bool(tactic.swap_ab) and bool(sk) == stream_k
        ]


def dense_configs(install, family: str, flags: list[str], *, use_cache: bool = True) -> DenseConfigs | None:
    """The configs of ``family``'s runner (:data:`DENSE`) in ``install``, read with the
    module's clang ``flags`` (see the module docstring); None for a family not in
    :data:`DENSE`. Cached per (install, family, flags, this code); a parse is said as a
    progress step (seconds)."""
    runner = DENSE.get(family)
    if runner is None:
        return None
    inc = install.root / "data" / "include"
    if not (inc / runner.header).is_file():
        return DenseConfigs(note=f"runtime tactic ids: {runner.header} is missing")
    from ..cpp.clang import libclang_version

    key = DENSE_CANDIDATES.key(subject=[family, list(flags)], target=[install.fingerprint, libclang_version()])

    def compute() -> DenseConfigs:
        with step(audit_label(family, "reading the runner's configs (getConfigs, with libclang)")):
            return _read(install, runner, inc, flags)

    return DENSE_CANDIDATES.memo(key, compute, load=lambda d: DenseConfigs(**d), dump=asdict, use_cache=use_cache)


def _read(install, runner: DenseRunner, inc: Path, flags: list[str]) -> DenseConfigs:
    """Parse the runner's header and read its configs (the note where they cannot be read)."""
    from ..cpp.clang import ProbeUnit
    from ..cpp.cursors import function_definitions
    from ..cpp.interpret import Eval, Unreadable

    try:
        unit = ProbeUnit(
            f'#include "{runner.header}"\n',
            list(flags),
            install.tree.include_root,
            filename="cutlass_layout_dense_runner.cu",
            skip_bodies=False,
        )
    except Exception as exc:  # libclang could not parse at all
        return DenseConfigs(note=f"runtime tactic ids: cannot parse {runner.header}: {exc}")
    errors = unit.errors()
    if errors:
        return DenseConfigs(note=f"runtime tactic ids: {runner.header} does not parse here ({errors[0].one_line()})")
    header = inc / runner.header
    roots = (str(header), str(header.resolve()))
    defs = [c for _kind, c in function_definitions(unit.tu.cursor, roots)]
    get = [c for c in defs if c.spelling == "getConfigs" and c.semantic_parent.spelling == runner.runner]
    disp = [c for c in defs if c.spelling == runner.dispatch]
    if len(get) != 1 or len(disp) != 1:
        return DenseConfigs(
            note=f"runtime tactic ids: {runner.runner}::getConfigs or {runner.dispatch} "
            f"not found once in {runner.header}"
        )
    try:
        rows = Eval().call(get[0], []) or []
        tiles = _case_tiles(disp[0], runner.member, runner.enum)
        configs = [
            [
                c[runner.member].name,
                tiles.get(c[runner.member].name),
                bool(c["swap_ab"]),
                bool(c.get("use_stream_k", False)),
            ]
            for c in rows
        ]
    except (Unreadable, KeyError, AttributeError, TypeError) as exc:
        return DenseConfigs(note=f"runtime tactic ids: {runner.runner}::getConfigs cannot be followed ({exc})")
    return DenseConfigs(configs=configs)


def _case_tiles(fn, member: str, enum: str) -> dict[str, list[int]]:
    """``{tile enum: [M, N, K]}`` of the ``case`` labels of the switches below ``fn`` whose
    condition names ``member``: the first three integer literals of each case's statement
    (the CTA shape it instantiates; a macro's arguments where the case expands one); a case with
    fewer is left out."""
    from ..cpp.cursors import case_statements, condition_names, integer_literals, switches

    out: dict[str, list[int]] = {}
    for sw, _ in switches(fn, member):
        if not condition_names(sw, member):
            continue
        for name, stmt in case_statements(sw, enum):
            ints = integer_literals(stmt)
            if len(ints) >= 3 and name not in out:
                out[name] = ints[:3]
    return out


__all__ = ["DENSE", "DenseConfigs", "DenseRunner", "dense_configs"]
