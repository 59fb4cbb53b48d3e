"""Generate the probe translation unit: C++ that builds each config's kernel types.

For config ``i`` the probe declares, in ``namespace cl_probe_<i>``, the same type
computation a user's code performs (CUTLASS's two ``CollectiveBuilder``s and
``GemmUniversal``), then aliases whose record layouts the frontend reads:

==================== =====================================================
``KernelStorage``    ``GemmKernel::SharedStorage``
``MainloopStorage``  ``CollectiveMainloop::SharedStorage``
``EpilogueStorage``  ``CollectiveEpilogue::SharedStorage``
``*Bytes``           ``char[sizeof(...)]``: forces each struct to be complete
``Stages``           ``char[1 + Stages]``: the mainloop policy's ``Stages`` (``StagesA`` for
                     the sparse collectives; ``Mma::kStages`` for CUTLASS 2.x), ``char[1]``
                     when there is none; ``StagesB``/``StagesE``: ``char[2 + N]`` (``char[1]``
                     when the policy has no such member)
``ArchCC``           ``char[1 + ArchTag::kMinComputeCapability]`` of the named type's arch
                     tag, else the subject's, else its mainloop's
``SmemElement{A,B}``, ``GlobalElement{A,B}``: a 2.x mainloop's element types in shared memory
                     (``Operator::ElementA/B``) and in global memory (``IteratorA/B::Element``),
                     ``cl_detail::cl_none`` for anything else
``Kind``             ``char[2 + K]``: K 3 a 3.x kernel, 2 a 2.x kernel, 1 a mainloop, 0 an
                     epilogue (:data:`KINDS`)
``Tma*``             ``char[1 + TmaTransactionBytes*]`` (``char[1]`` when the collective
                     has no such member)
``Capacity``         ``char[<arch capacity constant>]``, and ``capacity_ref`` bound to it
                     (for a 2.x-era arch, the documented value: :mod:`cutlass_layout.archs`);
                     a user type whose arch comes from its tag has ``Capacity_<i>`` for each
                     constant the tree defines instead
==================== =====================================================

A subject is unwrapped first: a type with a ``GemmKernel`` member (``GemmUniversalAdapter``,
CUTLASS 2.x ``device::Gemm``/``device::GemmGrouped``, ``kernel::DefaultGemmGrouped``) stands
for that kernel. A kernel is a CUTLASS 3.x ``GemmUniversal`` (``CollectiveMainloop``,
``CollectiveEpilogue``, ``SharedStorage``) or a CUTLASS 2.x kernel (``Mma``, ``Epilogue``,
``SharedStorage``: ``kernel::Gemm``, ``kernel::GemmGrouped``, ``kernel::GemmUniversal``).

Integer constants are read through ``char[N]`` aliases because their size is exactly N.
The probe compiles with nvcc too (``main()`` prints the same numbers), which is how tests
cross-check the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import archs
from .config import ELEMENTS, FAMILY, OUTPUTS, SCALED_OUTPUTS, Config
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
INT_ALIASES = ("Stages", "Capacity", "StagesB", "StagesE", "ArchCC", "Kind")
#: ``Kind`` - 2 -> :attr:`cutlass_layout.model.LayoutReport.subject_kind`
KINDS = {3: "kernel", 2: "kernel2x", 1: "mainloop", 0: "epilogue"}
#: ``char[1 + N]`` aliases of the mainloop's TMA members: alias -> member name.
TMA_MEMBERS = {"TmaMK": "TmaTransactionBytesMK", "TmaNK": "TmaTransactionBytesNK",
               "TmaTotal": "TmaTransactionBytes"}

#: Per family: arch tag, operator class, capacity constant (read from the headers).
FAMILIES = {
    "sm120": ("cutlass::arch::Sm120", "cutlass::arch::OpClassBlockScaledTensorOp",
              "cutlass::arch::sm120_smem_capacity_bytes"),
    "sm90": ("cutlass::arch::Sm90", "cutlass::arch::OpClassTensorOp",
             "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes"),
    "sm100": ("cutlass::arch::Sm100", "cutlass::arch::OpClassTensorOp",
              "cutlass::arch::sm100_smem_capacity_bytes"),
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
// a CUTLASS 2.x kernel (kernel::Gemm, kernel::GemmGrouped, kernel::GemmUniversal)
template <class T, class = void> struct is_kernel2x : std::false_type {};
template <class T> struct is_kernel2x<T, std::void_t<typename T::Mma, typename T::Epilogue,
    typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct is_mainloop : std::false_type {};
template <class T> struct is_mainloop<T, std::void_t<typename T::TiledMma,
    typename T::DispatchPolicy, typename T::SharedStorage>> : std::true_type {};
// a CUTLASS 2.x threadblock mainloop (MmaMultistage, MmaPipelined)
template <class T, class = void> struct is_mainloop2x : std::false_type {};
template <class T> struct is_mainloop2x<T, std::void_t<typename T::IteratorA,
    decltype(T::kStages), typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct has_storage : std::false_type {};
template <class T> struct has_storage<T, std::void_t<typename T::SharedStorage>> : std::true_type {};
// a 2.x mainloop's element types: those it stages in shared memory (its warp-level operator's
// ElementA/B, what MmaBase's SharedStorage buffers hold) and those its global-memory
// iterators load (IteratorA/B::Element); cl_none where it has none (a 3.x collective)
template <class T, class = void> struct smem_elements { using a = cl_none; using b = cl_none; };
template <class T> struct smem_elements<T, std::void_t<typename T::IteratorA,
    typename T::Operator::ElementA, typename T::Operator::ElementB>> {
  using a = typename T::Operator::ElementA; using b = typename T::Operator::ElementB; };
template <class T, class = void> struct global_elements { using a = cl_none; using b = cl_none; };
template <class T> struct global_elements<T, std::void_t<typename T::IteratorA::Element,
    typename T::IteratorB::Element>> {
  using a = typename T::IteratorA::Element; using b = typename T::IteratorB::Element; };
// what a subject stands for: a type with a GemmKernel member (an adapter, a 2.x device-level
// Gemm, a Default* kernel builder) is its kernel
template <class T, bool = (is_kernel<T>::value || is_kernel2x<T>::value), class = void>
struct unwrap { using type = T; };
template <class T> struct unwrap<T, false, std::void_t<typename T::GemmKernel>> {
  using type = typename unwrap<typename T::GemmKernel>::type; };
// 3: a 3.x kernel, 2: a 2.x kernel, 1: a mainloop, 0: an epilogue, -1: none of these
template <class T> struct kind_of { static constexpr int value =
    is_kernel<T>::value ? 3 : is_kernel2x<T>::value ? 2
    : (is_mainloop<T>::value || is_mainloop2x<T>::value) ? 1 : has_storage<T>::value ? 0 : -1; };
template <class T, int K = kind_of<T>::value> struct mainloop_of { using type = cl_none; };
template <class T> struct mainloop_of<T, 3> { using type = typename T::CollectiveMainloop; };
template <class T> struct mainloop_of<T, 2> { using type = typename T::Mma; };
template <class T> struct mainloop_of<T, 1> { using type = T; };
template <class T, int K = kind_of<T>::value> struct epilogue_of { using type = cl_none; };
template <class T> struct epilogue_of<T, 3> { using type = typename T::CollectiveEpilogue; };
template <class T> struct epilogue_of<T, 2> { using type = typename T::Epilogue; };
template <class T> struct epilogue_of<T, 0> { using type = T; };
template <class T, class = void> struct storage_of { using type = cl_none; };
template <class T> struct storage_of<T, std::void_t<typename T::SharedStorage>> {
  using type = typename T::SharedStorage; };
template <class T> using kernel_storage_t =
    typename storage_of<std::conditional_t<(kind_of<T>::value >= 2), T, cl_none>>::type;
// stage counts: 1 + N (char[1] for none)
template <class T, class = void> struct stages_2x { static constexpr int value = 1; };
template <class T> struct stages_2x<T, std::void_t<decltype(T::kStages)>> {
  static constexpr int value = 1 + T::kStages; };
template <class T, class = void> struct stages_a { static constexpr int value = stages_2x<T>::value; };
template <class T> struct stages_a<T, std::void_t<decltype(T::DispatchPolicy::StagesA)>> {
  static constexpr int value = 1 + T::DispatchPolicy::StagesA; };
template <class T, class = void> struct stages_of { static constexpr int value = stages_a<T>::value; };
template <class T> struct stages_of<T, std::void_t<decltype(T::DispatchPolicy::Stages)>> {
  static constexpr int value = 1 + T::DispatchPolicy::Stages; };
// the sparse collectives' StagesB and StagesE: 2 + N (1 for none; StagesE may be 0)
template <class T, class = void> struct stages_b { static constexpr int value = 1; };
template <class T> struct stages_b<T, std::void_t<decltype(T::DispatchPolicy::StagesB)>> {
  static constexpr int value = 2 + T::DispatchPolicy::StagesB; };
template <class T, class = void> struct stages_e { static constexpr int value = 1; };
template <class T> struct stages_e<T, std::void_t<decltype(T::DispatchPolicy::StagesE)>> {
  static constexpr int value = 2 + T::DispatchPolicy::StagesE; };
// the arch tag's compute capability: the named type's own ArchTag (a 2.x device-level Gemm's:
// the arch it was built for), else the subject's, else its mainloop's (a 2.x mainloop's is its
// warp MMA's, which can be older: DefaultMma's float 2-stage pick uses SM75's f16 MMA), else
// the mainloop policy's (0: none)
template <class T, class = void> struct tag_cc { static constexpr int value = 0; };
template <class T> struct tag_cc<T, std::void_t<decltype(T::ArchTag::kMinComputeCapability)>> {
  static constexpr int value = T::ArchTag::kMinComputeCapability; };
template <class T, class = void> struct policy_cc { static constexpr int value = 0; };
template <class T> struct policy_cc<T, std::void_t<decltype(T::DispatchPolicy::ArchTag::kMinComputeCapability)>> {
  static constexpr int value = T::DispatchPolicy::ArchTag::kMinComputeCapability; };
template <class N, class S, class M> struct arch_cc { static constexpr int value =
    tag_cc<N>::value ? tag_cc<N>::value : tag_cc<S>::value ? tag_cc<S>::value
    : tag_cc<M>::value ? tag_cc<M>::value : policy_cc<M>::value; };
}  // namespace cl_detail
#endif  // CL_DETAIL_DEFINED
"""


#: The macro a user header reads its stage count from (see :class:`UserType`).
STAGES_MACRO = "STAGES"
_STAGES_RE = re.compile(rf"\b{STAGES_MACRO}\b")
_DEFINE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(=.*)?$", re.S)


@dataclass(frozen=True)
class UserType:
    """A user's own kernel or collective type: a CUTLASS 3.x ``GemmKernel``
    (``GemmUniversal``), ``CollectiveMainloop`` or ``CollectiveEpilogue``, a CUTLASS 2.x kernel
    (``kernel::Gemm``, ``kernel::GemmGrouped``, ...) or threadblock mainloop, or a type with a
    ``GemmKernel`` member standing for its kernel (``GemmUniversalAdapter``, 2.x
    ``device::Gemm``, ``kernel::DefaultGemmGrouped``).

    The stage count a header exposes: the header reads the macro ``STAGES``
    (:data:`STAGES_MACRO`) with a default of its own, and passes it wherever the stage count
    goes (``StageCount<STAGES>``, ``DefaultGemmGrouped<..., STAGES, ...>``), or the type name
    takes it as a template argument (``my::Gemm<STAGES>``)::

        #ifndef STAGES
        #define STAGES 4
        #endif

    ``stages=N`` defines ``STAGES`` as N for this type (the probe writes ``#define STAGES N``
    before the header and ``#undef`` after the type); ``None`` leaves the header's default.

    Attributes:
        header: the header that declares it (absolute path); it includes what it needs from
            the CUTLASS tree given with ``--cutlass`` and from ``includes``.
        type: its qualified C++ name (``my::GemmKernel``), template arguments allowed.
        arch: an arch of :mod:`cutlass_layout.archs` (the capacity it is compared with and
            clang's ``--cuda-gpu-arch``), or ``None``: the arch of the type's own arch tag
            (``ArchTag::kMinComputeCapability``: ``Sm100`` -> sm100), found in the parse.
        stages: the value of ``STAGES``, or ``None``.
        includes: more include directories (``-I``), in order.
        defines: macro definitions (``-D``): ``NAME`` or ``NAME=VALUE``.

    Raises:
        BadInput: the header does not exist or is not text, the name or the arch is bad, a
            define is malformed, or ``stages`` is given and neither the header nor the type
            name uses ``STAGES``.
    """

    header: Path
    type: str
    arch: str | None = None
    stages: int | None = None
    includes: tuple = ()
    defines: tuple = ()

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
        if not isinstance(self.type, str) or not self.type or not all(
                part.isidentifier() or part == "" for part in self.type.split("<")[0].split("::")):
            raise BadInput(f"type {self.type!r}: give a qualified C++ type name")
        if self.arch is not None:
            archs.arch(self.arch)  # BadInput naming the choices
        if self.stages is not None and (isinstance(self.stages, bool) or not isinstance(self.stages, int)
                                        or self.stages < 1):
            raise BadInput(f"stages {self.stages!r}: give auto or a positive integer")
        incs = []
        for d in self.includes:
            q = Path(d).expanduser()
            if not q.is_dir():
                raise BadInput(f"include directory not found: {d}")
            incs.append(str(q.resolve()))
        object.__setattr__(self, "includes", tuple(incs))
        for d in self.defines:
            if not isinstance(d, str) or not _DEFINE_RE.match(d) or "\n" in d:
                raise BadInput(f"define {d!r}: write NAME or NAME=VALUE")
        object.__setattr__(self, "defines", tuple(self.defines))
        if self.stages is not None and not self.takes_stages:
            raise BadInput(f"stages {self.stages}: neither {p.name} nor the type name uses the "
                           f"{STAGES_MACRO} macro (write #ifndef {STAGES_MACRO} / #define "
                           f"{STAGES_MACRO} N / #endif in the header and pass {STAGES_MACRO} as the "
                           "stage count)")

    @property
    def takes_stages(self) -> bool:
        """Whether the header or the type name uses the ``STAGES`` macro (the header itself is
        read, not what it includes)."""
        if _STAGES_RE.search(self.type):
            return True
        try:
            return bool(_STAGES_RE.search(self.header.read_text(errors="replace")))
        except OSError:
            return False

    @property
    def parse_arch(self) -> str:
        """The arch whose clang flags parse it: ``arch``, or sm120 when it comes from the tag
        (a host pass: the layouts do not depend on it)."""
        return self.arch or "sm120"

    @property
    def family(self) -> str | None:
        return FAMILY.get(self.arch or "")

    def extra_flags(self) -> list[str]:
        """``-I`` and ``-D`` flags for this type's parse (and nvcc's)."""
        return [f"-I{d}" for d in self.includes] + [f"-D{d}" for d in self.defines]

    def unit_key(self) -> tuple:
        """Types with the same key can share a translation unit (a header included twice is
        read once: a different ``STAGES`` needs a unit of its own)."""
        return (str(self.header), self.stages, self.includes, self.defines)

    def with_(self, **changes) -> "UserType":
        """A copy with some attributes changed (validated again)."""
        from dataclasses import replace

        return replace(self, **changes)

    def label(self) -> str:
        st = "" if self.stages is None else f", {STAGES_MACRO}={self.stages}"
        return f"{self.type} from {self.header.name} ({self.arch or 'arch of its tag'}{st})"

    def to_dict(self) -> dict:
        d = {"header": str(self.header), "type": self.type, "arch": self.arch}
        if self.stages is not None:
            d["stages"] = self.stages
        if self.includes:
            d["includes"] = list(self.includes)
        if self.defines:
            d["defines"] = list(self.defines)
        return d


def preamble() -> str:
    """The includes every probe starts with (also what a precompiled header holds):
    :data:`HEADERS`, those after ``cutlass/cutlass.h`` only where the tree has
    ``cute/tensor.hpp`` (``__has_include``): a CUTLASS 2.x tree (tags before v3.0.0) has no
    ``cute/`` and no 3.x collectives, and its user types bring their own includes."""
    first, *rest = HEADERS
    return (f"#include <{first}>\n#if __has_include(<cute/tensor.hpp>)\n"
            + "".join(f"#include <{h}>\n" for h in rest) + "#endif\n#include <type_traits>\n")


#: Per family, the configs a precompiled header holds already laid out (its warm-up): the
#: family's main kernels and element kinds. clang keeps a precompiled header's template
#: instantiations, and most of a config's (cute's layout algebra, the builders' helpers,
#: GemmUniversal's parts) are shared with one of these.
WARM_UP = {
    "sm120": (dict(), dict(kernel="dense"), dict(a="mxfp8"), dict(kernel="dense", a="mxfp8")),
    # the grouped default (auto epilogue) does not compile on SM90: handed.md D
    "sm90": (dict(kernel="dense"), dict(kernel="grouped", epilogue_schedule="tma")),
    "sm100": (dict(kernel="dense"), dict(kernel="grouped", a="nvfp4")),
}


def pch_preambles(arch: str) -> list[str]:
    """What a precompiled header for ``arch`` may hold, best first: the includes and the
    detection helpers, plus the layouts of the family's :data:`WARM_UP` configs (``namespace
    cl_warm_<i>``), so that every later parse starts with their instantiations done (about
    0.7 s of every parse, and 0.1-0.2 s of every config). A tree where not all of them
    compile gets the first alone, or none; an arch without a preset family (the 2.x era),
    the includes only.
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

_GEMM = "cutlass::gemm::"
_EPI = "cutlass::epilogue::"


def kernel_schedule(cfg: Config) -> str:
    """The mainloop schedule tag for ``cfg`` (``cutlass/gemm/dispatch_policy.hpp``).

    SM90 grouped kernels need a ptr-array schedule, so ``auto`` means cooperative there.
    SM120: ``KernelScheduleAuto`` (block-scaled), ``KernelScheduleSm120Blockwise`` (blockwise
    FP8, flashinfer's ``gemm_groupwise_sm120.cuh``; vLLM's takes ``KernelScheduleAuto``),
    ``KernelSparseTmaWarpSpecialized{Nvf4,Mxf4,Mxf8f6f4}Sm120`` (sparse, CUTLASS example
    80b). SM100: ``Kernel[PtrArray]TmaWarpSpecialized{1,2}Sm[Nvf4|Mxf4|Mxf8f6f4]Sm100`` (as
    flashinfer's ``*_gemm_template_sm100.h`` and CUTLASS example 75 name them).
    """
    fam = cfg.family
    if fam == "sm120":
        if cfg.kernel == "sparse":
            kind = {"nvfp4": "Nvf4", "mxfp4": "Mxf4"}.get(cfg.a, "Mxf8f6f4")
            return f"{_GEMM}KernelSparseTmaWarpSpecialized{kind}Sm120"
        if cfg.blockwise and cfg.preset != "vllm":
            return f"{_GEMM}KernelScheduleSm120Blockwise"
        return f"{_GEMM}collective::KernelScheduleAuto"
    if fam == "sm100":
        sm = "2Sm" if cfg.two_sm else "1Sm"
        ptr = "PtrArray" if cfg.kernel == "grouped" else ""
        kind = ""
        if cfg.block_scaled:
            kind = ("Nvf4" if (cfg.a, cfg.b) == ("nvfp4", "nvfp4") else
                    "Mxf4" if (cfg.a, cfg.b) == ("mxfp4", "mxfp4") else "Mxf8f6f4")
        return f"{_GEMM}Kernel{ptr}TmaWarpSpecialized{sm}{kind}Sm100"
    if cfg.schedule == "auto" and cfg.kernel == "dense":
        return f"{_GEMM}collective::KernelScheduleAuto"
    kind = "Pingpong" if cfg.schedule == "pingpong" else "Cooperative"
    if cfg.kernel == "grouped":
        return f"{_GEMM}KernelPtrArrayTmaWarpSpecialized{kind}"
    return f"{_GEMM}KernelTmaWarpSpecialized{kind}"


def epilogue_schedule(cfg: Config) -> str:
    """The epilogue schedule tag for ``cfg`` (``cutlass/epilogue/dispatch_policy.hpp``).

    ``auto`` is the preset's: ``EpilogueScheduleAuto`` (flashinfer; on SM90 the builder then
    picks an epilogue without shared memory), ``TmaWarpSpecialized`` on SM120 for trtllm-moe;
    the sparse SM120 kernel's is ``SparseTmaWarpSpecializedCooperativeSm120`` (example 80b). On
    SM100 every schedule names the MMA's 1SM/2SM: ``[PtrArray]TmaWarpSpecialized{1,2}Sm``
    (``auto`` and ``tma``) or ``[PtrArray]NoSmemWarpSpecialized{1,2}Sm``.
    """
    sched = cfg.epilogue_schedule
    ptr = "PtrArray" if cfg.kernel == "grouped" else ""
    if cfg.family == "sm100":
        sm = "2Sm" if cfg.two_sm else "1Sm"
        kind = "NoSmem" if sched == "nosmem" else "Tma"
        return f"{_EPI}{ptr}{kind}WarpSpecialized{sm}"
    if cfg.kernel == "sparse" and sched != "nosmem":
        return f"{_EPI}SparseTmaWarpSpecializedCooperativeSm120"
    if sched == "auto":
        if cfg.preset == "trtllm-moe":
            sched = "tma"
        else:
            return f"{_EPI}collective::EpilogueScheduleAuto"
    if sched == "nosmem":
        return f"{_EPI}{ptr}NoSmemWarpSpecialized"
    if cfg.family == "sm120":
        return f"{_EPI}TmaWarpSpecialized"
    suffix = "" if cfg.schedule == "pingpong" else "Cooperative"
    if cfg.kernel == "grouped" and cfg.schedule == "pingpong":
        suffix = "Pingpong"
    return f"{_EPI}{ptr}TmaWarpSpecialized{suffix}"


def operator_class(cfg: Config) -> str:
    """``cutlass::arch::OpClass...`` of both builders: block-scaled kinds
    ``OpClassBlockScaledTensorOp`` (sparse: ``OpClassBlockScaledSparseTensorOp``), every other
    kind (SM90, SM100 BF16/FP8, SM120 blockwise FP8) ``OpClassTensorOp``."""
    if cfg.kernel == "sparse":
        return "cutlass::arch::OpClassBlockScaledSparseTensorOp"
    if cfg.block_scaled:
        return "cutlass::arch::OpClassBlockScaledTensorOp"
    return "cutlass::arch::OpClassTensorOp"


def _fusion(cfg: Config, layout_d: str) -> str:
    """The epilogue's fusion operation argument (``, ...``), or ``""`` for the builder's
    default (``LinearCombination``). A block-scaled D is
    ``LinCombBlockScaleFactor<SFVecSize, ElementD, float, ElementSF, LayoutD, ElementC>``
    (``cutlass/epilogue/fusion/operations.hpp``; CUTLASS example 79d)."""
    if cfg.element_d not in SCALED_OUTPUTS:
        return ""
    vec, sf = SCALED_OUTPUTS[cfg.element_d]
    el_c = OUTPUTS[cfg.element_c][0]
    el_d = OUTPUTS[cfg.element_d][0]
    return (f",\n    cutlass::epilogue::fusion::LinCombBlockScaleFactor<{vec}, {el_d}, float, {sf}, "
            f"{layout_d}, {el_c}>")


def config_block(cfg: Config, index: int) -> str:
    """C++ declarations for one config in ``namespace cl_probe_<index>``: the type chain of
    the config's family (see :func:`kernel_schedule`, :func:`epilogue_schedule`,
    :func:`operator_class`), then :func:`subject_block`."""
    m, n, k = cfg.tile
    grouped = cfg.kernel == "grouped"
    ptr = "*" if grouped else ""
    arch, _, capacity = FAMILIES[cfg.family]
    op_class = operator_class(cfg)
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
    # C and D: RowMajor, except the sparse kernel's (ColumnMajor, as example 80b)
    lay_cd = "cutlass::layout::ColumnMajor" if cfg.kernel == "sparse" else "cutlass::layout::RowMajor"
    layout_a, layout_b = f"cutlass::layout::RowMajor{ptr}", f"cutlass::layout::ColumnMajor{ptr}"
    scale_config = ""
    if cfg.blockwise:  # Sm120BlockwiseScaleConfig (cutlass/detail/blockwise_scale_layout.hpp)
        gm, gn, gk = cfg.scales
        major_a = "MN" if cfg.preset == "vllm" else "K"
        scale_config = (
            f"using ScaleConfig = cutlass::detail::Sm120BlockwiseScaleConfig<{gm}, {gn}, {gk}, "
            f"cute::UMMA::Major::{major_a}, cute::UMMA::Major::K>;\n"
            "using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());\n"
            "using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());\n")
        layout_a = f"cute::tuple<{layout_a}, LayoutSFA{ptr}>"
        layout_b = f"cute::tuple<{layout_b}, LayoutSFB{ptr}>"
    return f"""
// {cfg.label()}
namespace {NAMESPACE}{index} {{
using TileShape = cute::Shape<cute::Int<{m}>, cute::Int<{n}>, cute::Int<{k}>>;
using ClusterShape = cute::Shape<cute::Int<{cm}>, cute::Int<{cn}>, cute::Int<{ck}>>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    {arch}, {op_class}, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    {el_c}, {lay_cd}{ptr}, {cfg.alignment("c")},
    {el_d}, {lay_cd}{ptr}, {cfg.alignment("d")},
    {epilogue_schedule(cfg)}{_fusion(cfg, lay_cd)}>::CollectiveOp;
{scale_config}using MainloopBuilder = cutlass::gemm::collective::CollectiveBuilder<
    {arch}, {op_class},
    {el_a}, {layout_a}, {cfg.alignment("a")},
    {el_b}, {layout_b}, {cfg.alignment("b")},
    float, TileShape, ClusterShape,
    {stages},
    {kernel_schedule(cfg)}>;
using CollectiveMainloop = typename MainloopBuilder::CollectiveOp;
using GemmKernel = cutlass::gemm::kernel::GemmUniversal<
    {problem}, CollectiveMainloop, CollectiveEpilogue, void>;
{subject_block("GemmKernel", capacity)}}}  // namespace {NAMESPACE}{index}
"""


def capacity_alias(name: str) -> str:
    """The ``char[N]`` alias of the capacity constant ``name`` in an arch-from-tag block."""
    return "Capacity_" + name.rsplit("::", 1)[-1]


def subject_block(subject: str, capacity: str | None, *, prefix: str = "", member: bool = False,
                  capacities: tuple[str, ...] = ()) -> str:
    """Aliases that expose ``subject``'s storage to the frontend (inside a probe namespace).

    ``subject`` may be a kernel (CUTLASS 3.x ``GemmUniversal`` or a 2.x kernel), a type
    standing for one (a ``GemmKernel`` member), a mainloop collective or an epilogue
    collective; parts it does not have become ``cl_detail::cl_none``. ``capacity`` is the C++
    name of the capacity constant, or a number (a 2.x-era arch's documented limit: no
    ``capacity_ref`` then), or ``None`` with ``capacities``: an alias per constant the tree
    defines (:func:`capacity_alias`), the arch's chosen after the parse from ``ArchCC``.
    ``prefix`` goes before every name (for several blocks in one scope, e.g. inside a
    launcher's body); ``member`` makes the capacity references static members (for a block
    inside a class).
    """
    p = prefix
    static = "static " if member else ""
    tma = "".join(
        f"using {p}{alias} = char[cl_detail::has_{member_}<{p}Mainloop>::value];\n"
        for alias, member_ in TMA_MEMBERS.items()
    )
    if capacity is None:
        cap = "".join(f"using {p}{capacity_alias(c)} = char[{c}];\n"
                      f"{static}constexpr auto const& {p}capacity_ref_{capacity_alias(c)[9:]} = {c};\n"
                      for c in capacities)
    elif capacity.isdigit():
        cap = f"using {p}Capacity = char[{capacity}];\n"
    else:
        cap = (f"using {p}Capacity = char[{capacity}];\n"
               f"{static}constexpr auto const& {p}capacity_ref = {capacity};\n")
    return f"""using {p}Subject = typename cl_detail::unwrap<{subject}>::type;
using {p}Mainloop = typename cl_detail::mainloop_of<{p}Subject>::type;
using {p}Epilogue = typename cl_detail::epilogue_of<{p}Subject>::type;
using {p}KernelStorage = cl_detail::kernel_storage_t<{p}Subject>;
using {p}MainloopStorage = typename cl_detail::storage_of<{p}Mainloop>::type;
using {p}EpilogueStorage = typename cl_detail::storage_of<{p}Epilogue>::type;
using {p}KernelStorageBytes = char[sizeof({p}KernelStorage)];
using {p}MainloopStorageBytes = char[sizeof({p}MainloopStorage)];
using {p}EpilogueStorageBytes = char[sizeof({p}EpilogueStorage)];
using {p}Stages = char[cl_detail::stages_of<{p}Mainloop>::value];
using {p}StagesB = char[cl_detail::stages_b<{p}Mainloop>::value];
using {p}StagesE = char[cl_detail::stages_e<{p}Mainloop>::value];
using {p}ArchCC = char[1 + cl_detail::arch_cc<{subject}, {p}Subject, {p}Mainloop>::value];
using {p}Kind = char[2 + cl_detail::kind_of<{p}Subject>::value];
using {p}SmemElementA = typename cl_detail::smem_elements<{p}Mainloop>::a;
using {p}SmemElementB = typename cl_detail::smem_elements<{p}Mainloop>::b;
using {p}GlobalElementA = typename cl_detail::global_elements<{p}Mainloop>::a;
using {p}GlobalElementB = typename cl_detail::global_elements<{p}Mainloop>::b;
{tma}{cap}"""


def user_capacity(user: "UserType") -> str | None:
    """The ``capacity`` argument of :func:`subject_block` for a user type: its arch's
    constant, the documented number of a 2.x-era arch, or ``None`` (arch from the tag)."""
    if user.arch is None:
        return None
    a = archs.arch(user.arch)
    return a.capacity if a.capacity else str(a.optin_bytes)


def user_block(user: "UserType", index: int, capacities: tuple[str, ...] = ()) -> str:
    """A probe namespace that lays out a user's own type from their header (``STAGES``
    defined around it when the type has ``stages``; ``capacities``: the constants the tree
    defines, for a type whose arch comes from its tag)."""
    name = user.type if user.type.startswith("::") else "::" + user.type
    define = undef = ""
    if user.stages is not None:
        define = f"#pragma push_macro(\"{STAGES_MACRO}\")\n#undef {STAGES_MACRO}\n" \
                 f"#define {STAGES_MACRO} {user.stages}\n"
        undef = f"#pragma pop_macro(\"{STAGES_MACRO}\")\n"
    return f"""
// {user.label()}
{define}#include "{user.header}"
namespace {NAMESPACE}{index} {{
{subject_block(name, user_capacity(user), capacities=capacities)}}}  // namespace {NAMESPACE}{index}
{undef}"""


def block(subject, index: int, capacities: tuple[str, ...] = (), *, budget: bool = True) -> str:
    """The probe block of a :class:`Config` or a :class:`UserType`: for an auto-stage config
    whose builder's budget is read (:func:`budgeted`), followed by its :func:`budget_block`
    unless ``budget`` is false."""
    if isinstance(subject, UserType):
        return user_block(subject, index, capacities)
    text = config_block(subject, index)
    return text + budget_block(subject, index) if budget and budgeted(subject) else text


def budgeted(cfg) -> bool:
    """Whether ``cfg``'s probe block reads its mainloop builder's stage budget: a
    :class:`Config` with ``StageCountAutoCarveout`` (stages auto) whose family's stage
    function is read (:func:`budget_family`)."""
    return isinstance(cfg, Config) and cfg.stages is None and budget_family(cfg) is not None


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


def _budget_decls(family: str) -> str:
    """The budget's declarations for a scope where ``MainloopBuilder`` and ``TileShape`` name
    the mainloop builder and its tile (see :func:`budget_block`)."""
    fn, reduced, members = _STAGE_FN[family]
    needed = ", ".join([f"typename B::{m}" for m in members] + ["decltype(B::PipelineStages)"])
    return f"""template <class B, class = void> struct BudgetOf {{
  static constexpr long long stage_bytes_1000 = 1; static constexpr int stages = 0; }};
template <class B> struct BudgetOf<B, std::void_t<{needed}>> {{
  struct Fn {{ template <int C> static constexpr int stages() {{ return {fn}; }} }};
  static constexpr long long stage_bytes_1000 = cl_detail::min_capacity<Fn, 0, 2000000000>();
  static constexpr int stages = B::PipelineStages;
}};
using BudgetStageBytes1000 = char[BudgetOf<MainloopBuilder>::stage_bytes_1000];
using BudgetStages = char[1 + BudgetOf<MainloopBuilder>::stages];
using BudgetReducedCapacity = char[cl_detail::has_{reduced}<MainloopBuilder>::value];
"""


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
    ns = f"{NAMESPACE}{index}"
    return f"""
namespace {ns} {{
{_budget_decls(budget_family(cfg))}}}  // namespace {ns}
"""


#: Namespace of a user type's budget candidates (:func:`user_budget_block`).
BUDGET_NAMESPACE = "cl_budget_"

_BUDGET_DETECT = """
namespace cl_detail {
// the StageCountType of a mainloop CollectiveBuilder (collective_builder_decl.hpp), and its
// carve-out (StageCountAutoCarveout<N>::bytes): 2 + N, or 1 for an explicit StageCount<N>
template <class B> struct stage_type_of { using type = void; };
template <class A, class O, class EA, class LA, int AA, class EB, class LB, int AB, class Acc,
          class T, class C, class S, class K, class E>
struct stage_type_of<cutlass::gemm::collective::CollectiveBuilder<A, O, EA, LA, AA, EB, LB, AB,
    Acc, T, C, S, K, E>> { using type = S; };
template <class S, class = void> struct carveout_of { static constexpr long long value = 1; };
template <class S> struct carveout_of<S, std::void_t<decltype(S::bytes)>> {
  static constexpr long long value = 2 + S::bytes; };
}  // namespace cl_detail
"""


def user_budget_block(family: str, builders: list[tuple[tuple[str, ...], str]]) -> str:
    """Budget candidates for a user type (probe index 0): for each ``(namespaces, builder)``
    (the builder expression as the header writes it, valid in those namespaces), a namespace
    ``cl_budget_<j>`` seeing them (``using namespace``) with :func:`budget_block`'s aliases,
    ``BudgetMatch`` (``char[2]`` when the builder's ``CollectiveOp`` is the subject's mainloop)
    and ``BudgetCarveout`` (``char[2 + N]`` for ``StageCountAutoCarveout<N>``, else
    ``char[1]``)."""
    out = [_BUDGET_DETECT]
    for j, (namespaces, expr) in enumerate(builders):
        uses = "".join(f"using namespace ::{'::'.join(namespaces[:k + 1])};\n"
                       for k in range(len(namespaces)))
        out.append(f"""
namespace {BUDGET_NAMESPACE}{j} {{
{uses}using MainloopBuilder = {expr};
using TileShape = typename MainloopBuilder::CollectiveOp::TileShape;
{_budget_decls(family)}using BudgetMatch = char[1 + std::is_same_v<typename MainloopBuilder::CollectiveOp,
    ::{NAMESPACE}0::Mainloop>];
using BudgetCarveout = char[cl_detail::carveout_of<
    typename cl_detail::stage_type_of<MainloopBuilder>::type>::value];
}}  // namespace {BUDGET_NAMESPACE}{j}
""")
    return "".join(out)


BUDGET_REDUCED = {fam: v[1] for fam, v in _STAGE_FN.items()}


def budget_family(cfg: Config) -> str | None:
    """The :data:`_STAGE_FN` entry whose stage function ``cfg``'s mainloop builder calls, or
    ``None`` where the budget is not read (SM100, SM120 blockwise and sparse builders: their
    stage functions take other arguments)."""
    if cfg.family == "sm120" and (cfg.blockwise or cfg.kernel == "sparse"):
        return None
    return cfg.family if cfg.family in _STAGE_FN else None


def kernel_instantiation(index: int, kind: str | None = "kernel") -> str:
    """An explicit instantiation of the device entry point of probe ``index``'s kernel
    (``cutlass/device_kernel.h``): ``cutlass::device_kernel<GemmKernel>`` for a 3.x kernel,
    ``cutlass::Kernel<GemmKernel>`` for a 2.x one (``kind`` ``kernel2x``). In a device pass
    with function bodies, this instantiates ``GemmKernel::operator()``. The parameter carries
    ``CUTLASS_GRID_CONSTANT`` as the declaration does (nvcc refuses the directive without it;
    under clang it is empty), so the same text compiles with nvcc."""
    ns = f"{NAMESPACE}{index}"
    if kind == "kernel2x":
        return ("\n#include <cutlass/device_kernel.h>\n"
                f"template __global__ void cutlass::Kernel<{ns}::Subject>("
                f"typename {ns}::Subject::Params);\n")
    return ("\n#include <cutlass/device_kernel.h>\n"
            f"template __global__ void cutlass::device_kernel<{ns}::Subject>("
            f"CUTLASS_GRID_CONSTANT typename {ns}::Subject::Params const);\n")


#: The class template whose incomplete instantiations carry :func:`render`'s ``shown`` numbers.
SHOW = "cl_show::Show"


def checks(configs: list, offsets: list[list[tuple[str, str]]] | None = None
           ) -> list[tuple[str, list[str]]]:
    """The numbers a cross-check reads, as ``(tag, [C++ expressions])``, in order: per config
    ``("size i", [sizeof kernel, mainloop, epilogue storage, stages])``, ``("field i Stages
    B"|"E", [sizeof(StagesB|E)])`` (a sparse mainloop's ``StagesB``/``StagesE`` are
    ``int_<N>``-sized markers of ``N + 2`` bytes; 1 byte where there are none), and per
    ``(alias, dotted.path)`` of ``offsets[i]`` ``("field i alias path", [offsetof, sizeof])``.
    Bytes."""
    out = []
    for i, _ in enumerate(configs):
        ns = f"{NAMESPACE}{i}"
        out.append((f"size {i}", [f"sizeof({ns}::KernelStorage)", f"sizeof({ns}::MainloopStorage)",
                                  f"sizeof({ns}::EpilogueStorage)", f"(int)sizeof({ns}::Stages) - 1"]))
        for which in ("B", "E"):
            out.append((f"field {i} Stages {which}", [f"sizeof({ns}::Stages{which})"]))
        for alias, path in (offsets[i] if offsets else []):
            t = f"{ns}::{alias}"
            out.append((f"field {i} {alias} {path}",
                        [f"offsetof({t}, {path})", f"sizeof((({t}*)nullptr)->{path})"]))
    return out


def render(configs: list[Config], *, with_main: bool = False, shown: bool = False,
           offsets: list[list[tuple[str, str]]] | None = None,
           capacities: tuple[str, ...] = ()) -> str:
    """The whole probe for ``configs`` (one namespace each; ``capacities``: see
    :func:`user_block`), without builder budgets (the engine adds them:
    :func:`cutlass_layout.engine.probe_batch`).

    The numbers of :func:`checks` (``offsets`` as there) are given two ways, for cross-checks:
    with ``with_main``, a ``main()`` prints one line per check, ``tag value...`` (a sparse
    mainloop's ``field i Stages B|E N 0``, only where it has them); with ``shown``, each check
    ``j`` names the incomplete type ``cl_show::Show<jL, value...L>`` in host code, so the
    compiler's front end reports every value in an error message and nothing is compiled,
    linked or run (:func:`cutlass_layout.verify.nvcc_numbers`).
    """
    parts = ["// Generated by cutlass-layout: the type computation of each config.\n",
             preamble(), _DETECT]
    for i, cfg in enumerate(configs):
        parts.append(block(cfg, i, capacities, budget=False))
    if shown:
        parts.append("#include <cstddef>\n#if !defined(__CUDA_ARCH__)\n"
                     "namespace cl_show { template <long... V> struct Show; }\n")
        for j, (_, exprs) in enumerate(checks(configs, offsets)):
            vals = "".join(f", (long)({e})" for e in exprs)
            parts.append(f"constexpr std::size_t cl_shown_{j} = sizeof({SHOW}<{j}L{vals}>);\n")
        parts.append("#endif\n")
    if with_main:
        parts.append("#include <cstdio>\n#include <cstddef>\nint main() {\n")
        for tag, exprs in checks(configs, offsets):
            if " Stages " in tag:
                parts.append(f"  if ({exprs[0]} > 1) std::printf(\"{tag} %d 0\\n\", (int){exprs[0]} - 2);\n")
                continue
            fmt = " ".join("%d" if e.startswith("(int)") else "%zu" for e in exprs)
            args = ", ".join(f"(std::size_t)({e})" if not e.startswith("(int)") else f"({e})" for e in exprs)
            parts.append(f'  std::printf("{tag} {fmt}\\n", {args});\n')
        parts.append("  return 0;\n}\n")
    return "".join(parts)
