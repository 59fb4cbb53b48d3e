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

from dataclasses import dataclass
from pathlib import Path

from .config import ARCHS, ELEMENTS, FAMILY, OUTPUTS, Config
from .errors import BadInput
from .inputs import read_file

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
// Detection of what a subject type is and of optional members (cutlass-layout).
#ifndef CL_DETAIL_DEFINED  // also in the precompiled header
#define CL_DETAIL_DEFINED
namespace cl_detail {
struct cl_none {};  // stands for "the subject has no such part"
#define CL_DETECT(NAME)                                                                  \\
  template <class T, class = void> struct has_##NAME { static constexpr long long value = 1; }; \\
  template <class T> struct has_##NAME<T, std::void_t<decltype(T::NAME)>> {              \\
    static constexpr long long value = 1 + static_cast<long long>(T::NAME); };
CL_DETECT(TmaTransactionBytesMK)
CL_DETECT(TmaTransactionBytesNK)
CL_DETECT(TmaTransactionBytes)
CL_DETECT(ReducedSmemCapacityBytes)
CL_DETECT(Sm90ReducedSmemCapacityBytes)
#undef CL_DETECT
// Smallest C in [Lo, Hi] with F::stages<C>() >= 1000: 1000 x the builder's bytes per stage.
template <class F, long long Lo, long long Hi>
constexpr long long min_capacity() {
  if constexpr (Lo >= Hi) { return Lo; }
  else {
    constexpr long long Mid = (Lo + Hi) / 2;
    if constexpr (F::template stages<static_cast<int>(Mid)>() >= 1000) { return min_capacity<F, Lo, Mid>(); }
    else { return min_capacity<F, Mid + 1, Hi>(); }
  }
}
template <class T, class = void> struct is_kernel : std::false_type {};
template <class T> struct is_kernel<T, std::void_t<typename T::CollectiveMainloop,
    typename T::CollectiveEpilogue, typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct is_mainloop : std::false_type {};
template <class T> struct is_mainloop<T, std::void_t<typename T::TiledMma,
    typename T::DispatchPolicy, typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct has_storage : std::false_type {};
template <class T> struct has_storage<T, std::void_t<typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct mainloop_of {
  using type = std::conditional_t<is_mainloop<T>::value, T, cl_none>; };
template <class T> struct mainloop_of<T, std::enable_if_t<is_kernel<T>::value>> {
  using type = typename T::CollectiveMainloop; };
template <class T, class = void> struct epilogue_of {
  using type = std::conditional_t<has_storage<T>::value && !is_mainloop<T>::value, T, cl_none>; };
template <class T> struct epilogue_of<T, std::enable_if_t<is_kernel<T>::value>> {
  using type = typename T::CollectiveEpilogue; };
template <class T, class = void> struct storage_of { using type = cl_none; };
template <class T> struct storage_of<T, std::void_t<typename T::SharedStorage>> {
  using type = typename T::SharedStorage; };
template <class T> using kernel_storage_t =
    typename storage_of<std::conditional_t<is_kernel<T>::value, T, cl_none>>::type;
template <class T, class = void> struct stages_of { static constexpr int value = 1; };
template <class T> struct stages_of<T, std::void_t<decltype(T::DispatchPolicy::Stages)>> {
  static constexpr int value = 1 + T::DispatchPolicy::Stages; };
}  // namespace cl_detail
#endif  // CL_DETAIL_DEFINED
"""


@dataclass(frozen=True)
class UserType:
    """A user's own GemmKernel, CollectiveMainloop or CollectiveEpilogue type.

    Attributes:
        header: the header that declares it (absolute path); it includes what it needs from
            the CUTLASS tree given with ``--cutlass``.
        type: its qualified C++ name (``my::GemmKernel``).
        arch: ``sm120``, ``sm121`` or ``sm90``: the capacity it is compared with and clang's
            ``--cuda-gpu-arch``.

    Raises:
        BadInput: the header does not exist, the name is empty or the arch unknown.
    """

    header: Path
    type: str
    arch: str = "sm90"

    def __post_init__(self):
        p = Path(self.header).expanduser()
        if not p.exists():
            raise BadInput(f"header not found: {self.header}")
        head = read_file(p, what="header")[:65536]  # a regular file, readable, within the limit
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(head) - 3:  # not a character cut at 64 KiB
                raise BadInput(f"{self.header} is not a text header (not UTF-8)") from None
        if b"\0" in head:
            raise BadInput(f"{self.header} is a binary file, not a header")
        object.__setattr__(self, "header", p.resolve())
        if not self.type or not all(part.isidentifier() or part == "" for part in
                                    self.type.split("<")[0].split("::")):
            raise BadInput(f"type {self.type!r}: give a qualified C++ type name")
        if self.arch not in ARCHS:
            raise BadInput(f"unknown arch {self.arch!r}: choose {', '.join(ARCHS)}")

    @property
    def family(self) -> str:
        return FAMILY[self.arch]

    def label(self) -> str:
        return f"{self.type} from {self.header.name} ({self.arch})"

    def to_dict(self) -> dict:
        return {"header": str(self.header), "type": self.type, "arch": self.arch}


def preamble() -> str:
    """The includes every probe starts with (also what a precompiled header holds)."""
    return "".join(f"#include <{h}>\n" for h in HEADERS) + "#include <type_traits>\n"


#: Per family, the configs a precompiled header holds already laid out (its warm-up): the
#: family's main kernels and element kinds. clang keeps a precompiled header's template
#: instantiations, and most of a config's (cute's layout algebra, the builders' helpers,
#: GemmUniversal's parts) are shared with one of these.
WARM_UP = {
    "sm120": (dict(), dict(kernel="dense"), dict(a="mxfp8"), dict(kernel="dense", a="mxfp8")),
    # the grouped default (auto epilogue) does not compile on SM90: handed.md D
    "sm90": (dict(kernel="dense"), dict(kernel="grouped", epilogue_schedule="tma")),
}


def pch_preambles(arch: str) -> list[str]:
    """What a precompiled header for ``arch`` may hold, best first: the includes and the
    detection helpers, plus the layouts of the family's :data:`WARM_UP` configs (``namespace
    cl_warm_<i>``), so that every later parse starts with their instantiations done (about
    0.7 s of every parse, and 0.1-0.2 s of every config). A tree where not all of them
    compile gets the first alone, or none.
    """
    plain = preamble() + _DETECT
    configs = [Config(arch=arch, **kw) for kw in WARM_UP.get(FAMILY.get(arch, ""), ())]

    def warm(cfgs):
        return plain + "".join(config_block(c, i).replace(NAMESPACE, WARM_NAMESPACE)
                               for i, c in enumerate(cfgs))
    out = [warm(configs[:n]) for n in (len(configs), 1) if 0 < n <= len(configs)]
    return list(dict.fromkeys(out + [plain]))


#: Namespace of the precompiled header's warm-up configs.
WARM_NAMESPACE = "cl_warm_"


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
using MainloopBuilder = cutlass::gemm::collective::CollectiveBuilder<
    {arch}, {op_class},
    {el_a}, cutlass::layout::RowMajor{ptr}, {cfg.alignment("a")},
    {el_b}, cutlass::layout::ColumnMajor{ptr}, {cfg.alignment("b")},
    float, TileShape, ClusterShape,
    {stages},
    {kernel_schedule(cfg)}>;
using CollectiveMainloop = typename MainloopBuilder::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
    {problem}, CollectiveMainloop, CollectiveEpilogue, void>;
{subject_block("GemmKernel", capacity)}}}  // namespace {NAMESPACE}{index}
"""


def subject_block(subject: str, capacity: str, *, prefix: str = "", member: bool = False) -> str:
    """Aliases that expose ``subject``'s storage to the frontend (inside a probe namespace).

    ``subject`` may be a kernel (``GemmUniversal``: has CollectiveMainloop, CollectiveEpilogue
    and SharedStorage), a mainloop collective (has TiledMma and DispatchPolicy) or an
    epilogue collective; parts it does not have become ``cl_detail::cl_none``. ``prefix``
    goes before every name (for several blocks in one scope, e.g. inside a launcher's body);
    ``member`` makes the capacity reference a static member (for a block inside a class).
    """
    p = prefix
    tma = "".join(
        f"using {p}{alias} = char[cl_detail::has_{member_}<{p}Mainloop>::value];\n"
        for alias, member_ in TMA_MEMBERS.items()
    )
    return f"""using {p}Subject = {subject};
using {p}Mainloop = typename cl_detail::mainloop_of<{p}Subject>::type;
using {p}Epilogue = typename cl_detail::epilogue_of<{p}Subject>::type;
using {p}KernelStorage = cl_detail::kernel_storage_t<{p}Subject>;
using {p}MainloopStorage = typename cl_detail::storage_of<{p}Mainloop>::type;
using {p}EpilogueStorage = typename cl_detail::storage_of<{p}Epilogue>::type;
using {p}KernelStorageBytes = char[sizeof({p}KernelStorage)];
using {p}MainloopStorageBytes = char[sizeof({p}MainloopStorage)];
using {p}EpilogueStorageBytes = char[sizeof({p}EpilogueStorage)];
using {p}Stages = char[cl_detail::stages_of<{p}Mainloop>::value];
{tma}using {p}Capacity = char[{capacity}];
{"static " if member else ""}constexpr auto const& {p}capacity_ref = {capacity};
"""


def user_block(user: "UserType", index: int) -> str:
    """A probe namespace that lays out a user's own type from their header."""
    _, _, capacity = FAMILIES[user.family]
    name = user.type if user.type.startswith("::") else "::" + user.type
    return f"""
// {user.label()}
#include "{user.header}"
namespace {NAMESPACE}{index} {{
{subject_block(name, capacity)}}}  // namespace {NAMESPACE}{index}
"""


def block(subject, index: int) -> str:
    """The probe block of a :class:`Config` or a :class:`UserType`."""
    return user_block(subject, index) if isinstance(subject, UserType) else config_block(subject, index)


#: Per family: the builder's stage-count function, called with capacity C and no carve-out
#: (``cutlass/gemm/collective/builders/sm100_blockscaled_umma_builder.inl`` and
#: ``sm90_gmma_builder.inl``), and the builder's reduced-capacity member, if any.
_STAGE_FN = {
    "sm120": ("cutlass::gemm::collective::detail::sm100_compute_stage_count_or_override_blockscaled<C, "
              "typename B::SmemAllocTypeA, typename B::SmemAllocTypeB, "
              "TileShape, typename B::SmemLayoutAtomSFA, "
              "typename B::SmemLayoutAtomSFB>(cutlass::gemm::collective::StageCountAutoCarveout<0>{})",
              "ReducedSmemCapacityBytes",
              ("SmemAllocTypeA", "SmemAllocTypeB", "SmemLayoutAtomSFA", "SmemLayoutAtomSFB")),
    "sm90": ("cutlass::gemm::collective::detail::compute_stage_count_or_override<C, "
             "typename B::ElementAMma, typename B::ElementBMma, TileShape>("
             "cutlass::gemm::collective::StageCountAutoCarveout<0>{})",
             "Sm90ReducedSmemCapacityBytes",
             ("ElementAMma", "ElementBMma")),
}


def budget_block(cfg: Config, index: int) -> str:
    """Aliases exposing the mainloop builder's stage budget for config ``index``: the
    capacity it assumed (``BudgetReducedCapacity``: 1 + its reduced-capacity member, or 1
    when it has none), the stage count it chose (``BudgetStages``: 1 + N, or 1), and 1000 x
    its bytes per stage, found by a binary search over the builder's own stage function
    (``BudgetStageBytes1000``; 1 when unknown).

    The search is only instantiated when the builder has every member it needs (a
    ``KernelScheduleAuto`` builder that forwards to another one does not): a stage function
    that fails to instantiate would make each step of the search fail.
    """
    fn, reduced, members = _STAGE_FN[cfg.family]
    ns = f"{NAMESPACE}{index}"
    needed = ", ".join([f"typename B::{m}" for m in members] + ["decltype(B::PipelineStages)"])
    return f"""
namespace {ns} {{
template <class B, class = void> struct BudgetOf {{
  static constexpr long long stage_bytes_1000 = 1; static constexpr int stages = 0; }};
template <class B> struct BudgetOf<B, std::void_t<{needed}>> {{
  struct Fn {{ template <int C> static constexpr int stages() {{ return {fn}; }} }};
  static constexpr long long stage_bytes_1000 = cl_detail::min_capacity<Fn, 0, 2000000000>();
  static constexpr int stages = B::PipelineStages;
}};
using BudgetStageBytes1000 = char[BudgetOf<MainloopBuilder>::stage_bytes_1000];
using BudgetStages = char[1 + BudgetOf<MainloopBuilder>::stages];
using BudgetReducedCapacity = char[cl_detail::has_{reduced}<MainloopBuilder>::value];
}}  // namespace {ns}
"""


BUDGET_REDUCED = {fam: v[1] for fam, v in _STAGE_FN.items()}


def kernel_instantiation(index: int) -> str:
    """An explicit instantiation of ``cutlass::device_kernel`` for probe ``index``'s kernel:
    in a device pass with function bodies, this instantiates ``GemmKernel::operator()``."""
    ns = f"{NAMESPACE}{index}"
    return ("\n#include <cutlass/device_kernel.h>\n"
            f"template __global__ void cutlass::device_kernel<{ns}::Subject>("
            f"typename {ns}::Subject::Params const);\n")


def line_ranges(configs: list[Config]) -> list[tuple[int, int]]:
    """The 1-based (first, last) line of each config's block in :func:`render`'s text."""
    line = 1 + render([]).count("\n")
    out = []
    for i, cfg in enumerate(configs):
        n = block(cfg, i).count("\n")
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
        parts.append(block(cfg, i))
    if with_main:
        parts.append("#include <cstdio>\n#include <cstddef>\nint main() {\n")
        for i, _ in enumerate(configs):
            ns = f"{NAMESPACE}{i}"
            parts.append(
                f'  std::printf("size {i} %zu %zu %zu %d\\n", sizeof({ns}::KernelStorage), '
                f"sizeof({ns}::MainloopStorage), sizeof({ns}::EpilogueStorage), "
                f"(int)sizeof({ns}::Stages) - 1);\n"
            )
            for alias, path in (offsets[i] if offsets else []):
                t = f"{ns}::{alias}"
                parts.append(
                    f'  std::printf("field {i} {alias} {path} %zu %zu\\n", '
                    f"offsetof({t}, {path}), sizeof((({t}*)nullptr)->{path}));\n"
                )
        parts.append("  return 0;\n}\n")
    return "".join(parts)
