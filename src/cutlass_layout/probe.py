"""Generate the probe translation unit: C++ that builds each config's kernel types.

For config ``i`` the probe declares, in ``namespace cl_probe_<i>``, the same type
computation a user's code performs (CUTLASS's two ``CollectiveBuilder``s and
``GemmUniversal``), then aliases whose record layouts the frontend reads:

==================== =====================================================
``KernelStorage``    ``GemmKernel::SharedStorage``
``MainloopStorage``  ``CollectiveMainloop::SharedStorage``
``EpilogueStorage``  ``CollectiveEpilogue::SharedStorage``
``*Bytes``           ``char[sizeof(...)]``: forces each struct to be complete
``Stages``           ``char[CollectiveMainloop::DispatchPolicy::Stages]``
``Tma*``             ``char[TmaTransactionBytes*]``, and references to the members
``Capacity``         ``char[cutlass::arch::sm120_smem_capacity_bytes]``, and a reference
==================== =====================================================

Integer constants are read through ``char[N]`` aliases because their size is exactly N.
The probe compiles with nvcc too (``main()`` prints the same numbers), which is how tests
cross-check the engine.
"""

from __future__ import annotations

from .config import ELEMENTS, OUTPUTS, Config

NAMESPACE = "cl_probe_"

HEADERS = (
    "cutlass/cutlass.h",
    "cute/tensor.hpp",
    "cutlass/arch/arch.h",
    "cutlass/gemm/dispatch_policy.hpp",
    "cutlass/gemm/collective/collective_builder.hpp",
    "cutlass/epilogue/collective/collective_builder.hpp",
    "cutlass/gemm/kernel/gemm_universal.hpp",
    "cutlass/gemm/group_array_problem_shape.hpp",
)

#: Aliases whose canonical type must be a complete record.
RECORD_ALIASES = ("KernelStorage", "MainloopStorage", "EpilogueStorage")
#: ``char[N]`` aliases read as integers.
INT_ALIASES = ("Stages", "TmaMK", "TmaNK", "TmaTotal", "Capacity")
#: reference variables whose initializer names the header constant (for file:line/expression).
REFS = {"TmaMK": "tma_mk_ref", "TmaNK": "tma_nk_ref", "TmaTotal": "tma_total_ref",
        "Capacity": "capacity_ref"}


def preamble() -> str:
    """The includes every probe starts with (also what a precompiled header holds)."""
    return "".join(f"#include <{h}>\n" for h in HEADERS)


def config_block(cfg: Config, index: int) -> str:
    """C++ declarations for one config in ``namespace cl_probe_<index>``."""
    m, n, k = cfg.tile
    grouped = cfg.kernel == "grouped"
    ptr = "*" if grouped else ""
    el_a, el_b = ELEMENTS[cfg.a].cpp, ELEMENTS[cfg.b].cpp
    el_c, el_d = OUTPUTS[cfg.element_c][0], OUTPUTS[cfg.element_d][0]
    if grouped:
        idx = "int64_t" if cfg.preset == "trtllm-moe" else "int"
        problem = f"cutlass::gemm::GroupProblemShape<cute::Shape<{idx}, {idx}, {idx}>>"
    else:
        problem = "cute::Shape<int, int, int, int>"
    epi_schedule = ("cutlass::epilogue::TmaWarpSpecialized" if cfg.preset == "trtllm-moe"
                    else "cutlass::epilogue::collective::EpilogueScheduleAuto")
    if cfg.stages is None:
        stages = ("cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>("
                  "sizeof(typename CollectiveEpilogue::SharedStorage))>")
    else:
        stages = f"cutlass::gemm::collective::StageCount<{cfg.stages}>"
    cm, cn, ck = cfg.cluster
    return f"""
// {cfg.label()}
namespace {NAMESPACE}{index} {{
using TileShape = cute::Shape<cute::Int<{m}>, cute::Int<{n}>, cute::Int<{k}>>;
using ClusterShape = cute::Shape<cute::Int<{cm}>, cute::Int<{cn}>, cute::Int<{ck}>>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm120, cutlass::arch::OpClassBlockScaledTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    {el_c}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("c")},
    {el_d}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("d")},
    {epi_schedule}>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm120, cutlass::arch::OpClassBlockScaledTensorOp,
    {el_a}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("a")},
    {el_b}, cutlass::layout::ColumnMajor{ptr}, {cfg.alignment("b")},
    float, TileShape, ClusterShape,
    {stages},
    cutlass::gemm::collective::KernelScheduleAuto>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
    {problem}, CollectiveMainloop, CollectiveEpilogue, void>;
using KernelStorage = typename GemmKernel::SharedStorage;
using MainloopStorage = typename CollectiveMainloop::SharedStorage;
using EpilogueStorage = typename CollectiveEpilogue::SharedStorage;
using KernelStorageBytes = char[sizeof(KernelStorage)];
using MainloopStorageBytes = char[sizeof(MainloopStorage)];
using EpilogueStorageBytes = char[sizeof(EpilogueStorage)];
using Stages = char[CollectiveMainloop::DispatchPolicy::Stages];
using TmaMK = char[CollectiveMainloop::TmaTransactionBytesMK];
using TmaNK = char[CollectiveMainloop::TmaTransactionBytesNK];
using TmaTotal = char[CollectiveMainloop::TmaTransactionBytes];
using Capacity = char[cutlass::arch::sm120_smem_capacity_bytes];
constexpr auto const& tma_mk_ref = CollectiveMainloop::TmaTransactionBytesMK;
constexpr auto const& tma_nk_ref = CollectiveMainloop::TmaTransactionBytesNK;
constexpr auto const& tma_total_ref = CollectiveMainloop::TmaTransactionBytes;
constexpr auto const& capacity_ref = cutlass::arch::sm120_smem_capacity_bytes;
}}  // namespace {NAMESPACE}{index}
"""


def line_ranges(configs: list[Config]) -> list[tuple[int, int]]:
    """The 1-based (first, last) line of each config's block in :func:`render`'s text."""
    line = 1 + render([]).count("\n")
    out = []
    for i, cfg in enumerate(configs):
        n = config_block(cfg, i).count("\n")
        out.append((line, line + n - 1))
        line += n
    return out


def render(configs: list[Config], *, with_main: bool = False,
           offsets: list[list[tuple[str, str]]] | None = None) -> str:
    """The whole probe for ``configs`` (one namespace each).

    With ``with_main``, a ``main()`` prints, per config, ``size i sizeof(kernel)
    sizeof(mainloop) sizeof(epilogue) stages`` and, for each ``(alias, dotted.path)`` in
    ``offsets[i]`` (alias one of :data:`RECORD_ALIASES`), ``field i alias path offsetof
    sizeof``: what nvcc computes, for cross-checks.
    """
    parts = ["// Generated by cutlass-layout: the type computation of each config.\n",
             preamble()]
    for i, cfg in enumerate(configs):
        parts.append(config_block(cfg, i))
    if with_main:
        parts.append("#include <cstdio>\n#include <cstddef>\nint main() {\n")
        for i, _ in enumerate(configs):
            ns = f"{NAMESPACE}{i}"
            parts.append(
                f'  std::printf("size {i} %zu %zu %zu %d\\n", sizeof({ns}::KernelStorage), '
                f"sizeof({ns}::MainloopStorage), sizeof({ns}::EpilogueStorage), "
                f"(int)sizeof({ns}::Stages));\n"
            )
            for alias, path in (offsets[i] if offsets else []):
                t = f"{ns}::{alias}"
                parts.append(
                    f'  std::printf("field {i} {alias} {path} %zu %zu\\n", '
                    f"offsetof({t}, {path}), sizeof((({t}*)nullptr)->{path}));\n"
                )
        parts.append("  return 0;\n}\n")
    return "".join(parts)
