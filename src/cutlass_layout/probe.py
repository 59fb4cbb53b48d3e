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
``Tma*``             ``char[1 + TmaTransactionBytes*]`` (``char[1]`` when the collective
                     has no such member)
``Capacity``         ``char[<arch capacity constant>]``, and ``capacity_ref`` bound to it
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
INT_ALIASES = ("Stages", "Capacity")
#: ``char[1 + N]`` aliases of the mainloop's TMA members: alias -> member name.
TMA_MEMBERS = {"TmaMK": "TmaTransactionBytesMK", "TmaNK": "TmaTransactionBytesNK",
               "TmaTotal": "TmaTransactionBytes"}

#: Per family: arch tag, operator class, capacity constant (read from the headers).
FAMILIES = {
    "sm120": ("cutlass::arch::Sm120", "cutlass::arch::OpClassBlockScaledTensorOp",
              "cutlass::arch::sm120_smem_capacity_bytes"),
    "sm90": ("cutlass::arch::Sm90", "cutlass::arch::OpClassTensorOp",
             "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes"),
}

_DETECT = """
// Detection of optional static members (a collective may not define them): 1 + value, or 1.
namespace cl_detail {
#define CL_DETECT(NAME)                                                                  \\
  template <class T, class = void> struct has_##NAME { static constexpr long long value = 1; }; \\
  template <class T> struct has_##NAME<T, std::void_t<decltype(T::NAME)>> {              \\
    static constexpr long long value = 1 + static_cast<long long>(T::NAME); };
CL_DETECT(TmaTransactionBytesMK)
CL_DETECT(TmaTransactionBytesNK)
CL_DETECT(TmaTransactionBytes)
#undef CL_DETECT
}  // namespace cl_detail
"""


def preamble() -> str:
    """The includes every probe starts with (also what a precompiled header holds)."""
    return "".join(f"#include <{h}>\n" for h in HEADERS) + "#include <type_traits>\n"


def kernel_schedule(cfg: Config) -> str:
    """The mainloop schedule tag for ``cfg`` (``cutlass/gemm/dispatch_policy.hpp``).

    SM90 grouped kernels need a ptr-array schedule, so ``auto`` means cooperative there.
    """
    if cfg.family == "sm120" or (cfg.schedule == "auto" and cfg.kernel == "dense"):
        return "cutlass::gemm::collective::KernelScheduleAuto"
    kind = "Pingpong" if cfg.schedule == "pingpong" else "Cooperative"
    if cfg.kernel == "grouped":
        return f"cutlass::gemm::KernelPtrArrayTmaWarpSpecialized{kind}"
    return f"cutlass::gemm::KernelTmaWarpSpecialized{kind}"


def epilogue_schedule(cfg: Config) -> str:
    """The epilogue schedule tag for ``cfg`` (``cutlass/epilogue/dispatch_policy.hpp``).

    ``auto`` is the preset's: ``EpilogueScheduleAuto`` (flashinfer; on SM90 the builder then
    picks an epilogue without shared memory), ``TmaWarpSpecialized`` on SM120 for trtllm-moe.
    """
    sched = cfg.epilogue_schedule
    if sched == "auto":
        if cfg.preset == "trtllm-moe":
            sched = "tma"
        else:
            return "cutlass::epilogue::collective::EpilogueScheduleAuto"
    ptr = "PtrArray" if cfg.kernel == "grouped" else ""
    if sched == "nosmem":
        return f"cutlass::epilogue::{ptr}NoSmemWarpSpecialized"
    if cfg.family == "sm120":
        return "cutlass::epilogue::TmaWarpSpecialized"
    suffix = "" if cfg.schedule == "pingpong" else "Cooperative"
    if cfg.kernel == "grouped" and cfg.schedule == "pingpong":
        suffix = "Pingpong"
    return f"cutlass::epilogue::{ptr}TmaWarpSpecialized{suffix}"


def config_block(cfg: Config, index: int) -> str:
    """C++ declarations for one config in ``namespace cl_probe_<index>``."""
    m, n, k = cfg.tile
    grouped = cfg.kernel == "grouped"
    ptr = "*" if grouped else ""
    arch, op_class, capacity = FAMILIES[cfg.family]
    el_a, el_b = ELEMENTS[cfg.a].cpp, ELEMENTS[cfg.b].cpp
    el_c, el_d = OUTPUTS[cfg.element_c][0], OUTPUTS[cfg.element_d][0]
    if grouped:
        idx = "int64_t" if cfg.preset == "trtllm-moe" else "int"
        problem = f"cutlass::gemm::GroupProblemShape<cute::Shape<{idx}, {idx}, {idx}>>"
    else:
        problem = "cute::Shape<int, int, int, int>"
    if cfg.stages is None:
        stages = ("cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>("
                  "sizeof(typename CollectiveEpilogue::SharedStorage))>")
    else:
        stages = f"cutlass::gemm::collective::StageCount<{cfg.stages}>"
    cm, cn, ck = cfg.cluster
    tma = "".join(
        f"using {alias} = char[cl_detail::has_{member}<CollectiveMainloop>::value];\n"
        for alias, member in TMA_MEMBERS.items()
    )
    return f"""
// {cfg.label()}
namespace {NAMESPACE}{index} {{
using TileShape = cute::Shape<cute::Int<{m}>, cute::Int<{n}>, cute::Int<{k}>>;
using ClusterShape = cute::Shape<cute::Int<{cm}>, cute::Int<{cn}>, cute::Int<{ck}>>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    {arch}, {op_class}, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    {el_c}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("c")},
    {el_d}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("d")},
    {epilogue_schedule(cfg)}>::CollectiveOp;
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    {arch}, {op_class},
    {el_a}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("a")},
    {el_b}, cutlass::layout::ColumnMajor{ptr}, {cfg.alignment("b")},
    float, TileShape, ClusterShape,
    {stages},
    {kernel_schedule(cfg)}>::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
    {problem}, CollectiveMainloop, CollectiveEpilogue, void>;
using KernelStorage = typename GemmKernel::SharedStorage;
using MainloopStorage = typename CollectiveMainloop::SharedStorage;
using EpilogueStorage = typename CollectiveEpilogue::SharedStorage;
using KernelStorageBytes = char[sizeof(KernelStorage)];
using MainloopStorageBytes = char[sizeof(MainloopStorage)];
using EpilogueStorageBytes = char[sizeof(EpilogueStorage)];
using Stages = char[CollectiveMainloop::DispatchPolicy::Stages];
{tma}using Capacity = char[{capacity}];
constexpr auto const& capacity_ref = {capacity};
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
             preamble(), _DETECT]
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
