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
                     epilogue, 4 another type with a ``SharedStorage`` (an FMHA kernel, ...), 5 a
                     2.x direct convolution (:data:`KINDS`)
``Storage``          ``Subject::SharedStorage`` of a kind-4 subject (``cl_detail::cl_none``
                     otherwise): laid out as is, no part of it called mainloop or epilogue
``Launch*``          ``char[2 + N]`` (``char[1]``: none): a direct convolution's launch size
                     ``LaunchBytes`` (what its ``Params::get_smem_size()`` returns, where that
                     is a compile-time size), ``LaunchActivation``/``LaunchFilter`` (its
                     iterators' ``kActivationSize``/``kFilterSize``); ``LaunchParams`` names
                     its ``Params`` and ``LaunchIteratorA``/``B`` its iterators
``Tma*``             ``char[1 + TmaTransactionBytes*]`` (``char[1]`` when the collective
                     has no such member)
``Capacity``         ``char[<arch capacity constant>]``, and ``capacity_ref`` bound to it
                     (for a 2.x-era arch, the documented value: :mod:`cutlass_layout.subjects.archs`);
                     a user type whose arch comes from its tag has ``Capacity_<i>`` for each
                     constant the tree defines instead
==================== =====================================================

A subject is unwrapped first: a type with a ``GemmKernel`` member (``GemmUniversalAdapter``,
CUTLASS 2.x ``device::Gemm``/``device::GemmGrouped``, ``kernel::DefaultGemmGrouped``), else
with an ``UnderlyingKernel`` one (``conv::device::DirectConvolution``,
``ImplicitGemmConvolution``), else, without a ``SharedStorage`` of its own, with a ``Kernel``
one (example 77's ``fmha::device::FMHA``), stands for that kernel. A kernel is a CUTLASS 3.x
``GemmUniversal`` (``CollectiveMainloop``, ``CollectiveEpilogue``, ``SharedStorage``) or a
CUTLASS 2.x kernel (``Mma``, ``Epilogue``, ``SharedStorage``: ``kernel::Gemm``,
``kernel::GemmGrouped``, ``kernel::GemmUniversal``, ``conv::kernel::ImplicitGemmConvolution``);
one whose ``Params`` has ``get_smem_size()`` (``conv::kernel::DirectConvolution``) launches
with that, not with ``sizeof(SharedStorage)``. A mainloop is a 3.x collective (``TiledMma``,
``DispatchPolicy``) or a 2.x threadblock mainloop (``IteratorA``, ``kStages``); an epilogue a
3.x collective (``StrideD``) or a 2.x threadblock epilogue (``AccumulatorFragmentIterator``).
Any other type with a ``SharedStorage`` (an FMHA kernel of CUTLASS examples 77/88 or
flashinfer: its template parameters are named ``CollectiveMainloop``, but it has no such
members) is none of these: its ``SharedStorage`` is laid out as it is.

Integer constants are read through ``char[N]`` aliases because their size is exactly N.
The probe compiles with nvcc too (``main()`` prints the same numbers), which is how tests
cross-check the engine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..core.files import read_file
from . import archs
from .config import ELEMENTS, FAMILY, OUTPUTS, SCALED_OUTPUTS, Config

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
RECORD_ALIASES = ("KernelStorage", "MainloopStorage", "EpilogueStorage", "Storage")
#: ``char[N]`` aliases read as integers.
INT_ALIASES = ("Stages", "Capacity", "StagesB", "StagesE", "ArchCC", "Kind", "LaunchBytes",
               "LaunchActivation", "LaunchFilter")
#: ``Kind`` - 2 -> :attr:`cutlass_layout.model.LayoutReport.subject_kind` (4: ``storage``, which
#: the engine may name more closely from the storage's members: ``fmha``)
KINDS = {5: "direct_conv", 4: "storage", 3: "kernel", 2: "kernel2x", 1: "mainloop", 0: "epilogue"}
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
// a CUTLASS 3.x epilogue collective (StrideD) or a 2.x threadblock epilogue
template <class T, class = void> struct is_epilogue : std::false_type {};
template <class T> struct is_epilogue<T, std::void_t<typename T::StrideD,
    typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct is_epilogue2x : std::false_type {};
template <class T> struct is_epilogue2x<T, std::void_t<typename T::AccumulatorFragmentIterator,
    typename T::SharedStorage>> : std::true_type {};
template <class T, class = void> struct has_storage : std::false_type {};
template <class T> struct has_storage<T, std::void_t<typename T::SharedStorage>> : std::true_type {};
// a kernel whose Params computes the launch size (conv/kernel/direct_convolution.h); asked of
// 2.x kernels only (std::conjunction): it completes T::Params, and a 3.x kernel's Params can
// fail (a TMA static_assert) where its SharedStorage does not
template <class T, class = void> struct has_params_smem : std::false_type {};
template <class T> struct has_params_smem<T, std::void_t<
    decltype(std::declval<typename T::Params&>().get_smem_size())>> : std::true_type {};
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
// Gemm, a Default* kernel builder), else with an UnderlyingKernel one (a 2.x conv device
// wrapper), else, having no SharedStorage, with a Kernel one (an FMHA device wrapper), is its
// kernel
template <class T, class = void> struct wrapped_of { using type = void; };
template <class T> struct wrapped_of<T, std::void_t<typename T::Kernel>> {
  using type = std::conditional_t<has_storage<T>::value, void, typename T::Kernel>; };
template <class T, class = void> struct underlying_of : wrapped_of<T> {};
template <class T> struct underlying_of<T, std::void_t<typename T::UnderlyingKernel>> {
  using type = typename T::UnderlyingKernel; };
template <class T, class = void> struct inner_kernel_of : underlying_of<T> {};
template <class T> struct inner_kernel_of<T, std::void_t<typename T::GemmKernel>> {
  using type = typename T::GemmKernel; };
template <class T, bool = (is_kernel<T>::value || is_kernel2x<T>::value),
          class K = typename inner_kernel_of<T>::type>
struct unwrap { using type = T; };
template <class T, class K> struct unwrap<T, false, K> { using type = typename unwrap<K>::type; };
template <class T> struct unwrap<T, false, void> { using type = T; };
// 5: a 2.x direct convolution, 3: a 3.x kernel, 2: a 2.x kernel, 1: a mainloop, 0: an
// epilogue, 4: another type with a SharedStorage, -1: none of these
template <class T> struct kind_of { static constexpr int value =
    std::conjunction<is_kernel2x<T>, has_params_smem<T>>::value ? 5
    : is_kernel<T>::value ? 3 : is_kernel2x<T>::value ? 2
    : (is_mainloop<T>::value || is_mainloop2x<T>::value) ? 1
    : (is_epilogue<T>::value || is_epilogue2x<T>::value) ? 0 : has_storage<T>::value ? 4 : -1; };
template <class T, int K = kind_of<T>::value> struct mainloop_of { using type = cl_none; };
template <class T> struct mainloop_of<T, 3> { using type = typename T::CollectiveMainloop; };
template <class T> struct mainloop_of<T, 2> { using type = typename T::Mma; };
template <class T> struct mainloop_of<T, 5> { using type = typename T::Mma; };
template <class T> struct mainloop_of<T, 1> { using type = T; };
template <class T, int K = kind_of<T>::value> struct epilogue_of { using type = cl_none; };
template <class T> struct epilogue_of<T, 3> { using type = typename T::CollectiveEpilogue; };
template <class T> struct epilogue_of<T, 2> { using type = typename T::Epilogue; };
template <class T> struct epilogue_of<T, 5> { using type = typename T::Epilogue; };
template <class T> struct epilogue_of<T, 0> { using type = T; };
template <class T, class = void> struct storage_of { using type = cl_none; };
template <class T> struct storage_of<T, std::void_t<typename T::SharedStorage>> {
  using type = typename T::SharedStorage; };
template <class T> using kernel_storage_t = typename storage_of<std::conditional_t<
    (kind_of<T>::value == 2 || kind_of<T>::value == 3 || kind_of<T>::value == 5), T, cl_none>>::type;
template <class T> using other_storage_t =
    typename storage_of<std::conditional_t<(kind_of<T>::value == 4), T, cl_none>>::type;
// a direct convolution's launch size, as its Params computes it (conv/kernel/
// direct_convolution.h, DirectConvolutionParams): max(iterator_A.activation_size,
// sizeof(Epilogue::SharedStorage)) * kStages + iterator_B.filter_size. The iterators' getParams
// pass kActivationSize (the fixed stride and dilation iterator) and kFilterSize; an iterator
// without such a constant computes its size from the problem at run time (-1 here)
template <class T, int K = kind_of<T>::value> struct params_of { using type = cl_none; };
template <class T> struct params_of<T, 5> { using type = typename T::Params; };
template <class T, int K = kind_of<T>::value> struct iterator_a_of { using type = cl_none; };
template <class T> struct iterator_a_of<T, 5> { using type = typename T::Mma::IteratorA; };
template <class T, int K = kind_of<T>::value> struct iterator_b_of { using type = cl_none; };
template <class T> struct iterator_b_of<T, 5> { using type = typename T::Mma::IteratorB; };
template <class T, class = void> struct activation_bytes { static constexpr long long value = -1; };
template <class T> struct activation_bytes<T, std::void_t<decltype(T::kActivationSize)>> {
  static constexpr long long value = T::kActivationSize; };
template <class T, class = void> struct filter_bytes { static constexpr long long value = -1; };
template <class T> struct filter_bytes<T, std::void_t<decltype(T::kFilterSize)>> {
  static constexpr long long value = T::kFilterSize; };
template <class T, bool = (kind_of<T>::value == 5)> struct launch_bytes {
  static constexpr long long value = -1; };
template <class T> struct launch_bytes<T, true> {
  static constexpr long long a = activation_bytes<typename T::Mma::IteratorA>::value;
  static constexpr long long f = filter_bytes<typename T::Mma::IteratorB>::value;
  static constexpr long long e = static_cast<long long>(sizeof(typename T::Epilogue::SharedStorage));
  static constexpr long long value = (a < 0 || f < 0) ? -1 : (a > e ? a : e) * T::Mma::kStages + f; };
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
    (``kernel::Gemm``, ``kernel::GemmGrouped``, ``conv::kernel::DirectConvolution``, ...),
    threadblock mainloop or epilogue, a type with a ``GemmKernel`` (``GemmUniversalAdapter``,
    2.x ``device::Gemm``, ``kernel::DefaultGemmGrouped``) or ``UnderlyingKernel`` member (2.x
    conv device wrappers) standing for its kernel, or any other type with a ``SharedStorage``
    (an FMHA kernel), laid out as it is (see the module docstring for how each is told).

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
        arch: an arch of :mod:`cutlass_layout.subjects.archs` (the capacity it is compared with and
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
        """The preset family of ``arch`` (:data:`cutlass_layout.subjects.config.FAMILY`), or ``None``
        (no arch given, or a 2.x-era arch)."""
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
        """``my::Gemm from my_gemm.h (sm120, STAGES=3)`` (``arch of its tag`` where no arch
        is given)."""
        st = "" if self.stages is None else f", {STAGES_MACRO}={self.stages}"
        return f"{self.type} from {self.header.name} ({self.arch or 'arch of its tag'}{st})"

    def to_dict(self) -> dict:
        """``{header, type, arch}`` (the ``config`` object of its reports), with ``stages``,
        ``includes`` and ``defines`` where given."""
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
    # the grouped default (auto epilogue) does not compile on SM90: tests/handed.md D
    "sm90": (dict(kernel="dense"), dict(kernel="grouped", epilogue_schedule="tma")),
    "sm100": (dict(kernel="dense"), dict(kernel="grouped", a="nvfp4")),
}


def pch_preambles(arch: str) -> list[str]:
    """What a precompiled header for ``arch`` may hold, best first: the includes and the
    detection helpers, plus the layouts of the family's :data:`WARM_UP` configs (``namespace
    cl_warm_<i>``), so that every later parse starts with their instantiations done (time
    saved on every parse and every config: docs/performance.md). A tree where not all of them
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
using {p}Storage = cl_detail::other_storage_t<{p}Subject>;
using {p}KernelStorageBytes = char[sizeof({p}KernelStorage)];
using {p}StorageBytes = char[sizeof({p}Storage)];
using {p}MainloopStorageBytes = char[sizeof({p}MainloopStorage)];
using {p}EpilogueStorageBytes = char[sizeof({p}EpilogueStorage)];
using {p}Stages = char[cl_detail::stages_of<{p}Mainloop>::value];
using {p}StagesB = char[cl_detail::stages_b<{p}Mainloop>::value];
using {p}StagesE = char[cl_detail::stages_e<{p}Mainloop>::value];
using {p}ArchCC = char[1 + cl_detail::arch_cc<{subject}, {p}Subject, {p}Mainloop>::value];
using {p}Kind = char[2 + cl_detail::kind_of<{p}Subject>::value];
using {p}LaunchParams = typename cl_detail::params_of<{p}Subject>::type;
using {p}LaunchIteratorA = typename cl_detail::iterator_a_of<{p}Subject>::type;
using {p}LaunchIteratorB = typename cl_detail::iterator_b_of<{p}Subject>::type;
using {p}LaunchBytes = char[2 + cl_detail::launch_bytes<{p}Subject>::value];
using {p}LaunchActivation = char[2 + cl_detail::activation_bytes<{p}LaunchIteratorA>::value];
using {p}LaunchFilter = char[2 + cl_detail::filter_bytes<{p}LaunchIteratorB>::value];
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
    ``cutlass::Kernel<GemmKernel>`` for a 2.x one (``kind`` ``kernel2x`` or ``direct_conv``). In a device pass
    with function bodies, this instantiates ``GemmKernel::operator()``. The parameter carries
    ``CUTLASS_GRID_CONSTANT`` as the declaration does (nvcc refuses the directive without it;
    under clang it is empty), so the same text compiles with nvcc."""
    ns = f"{NAMESPACE}{index}"
    if kind in ("kernel2x", "direct_conv"):
        return ("\n#include <cutlass/device_kernel.h>\n"
                f"template __global__ void cutlass::Kernel<{ns}::Subject>("
                f"typename {ns}::Subject::Params);\n")
    return ("\n#include <cutlass/device_kernel.h>\n"
            f"template __global__ void cutlass::device_kernel<{ns}::Subject>("
            f"CUTLASS_GRID_CONSTANT typename {ns}::Subject::Params const);\n")


#: What ``render(with_main=True)`` adds for user types: a direct convolution's launch size as
#: its own ``Params`` computes it (``conv/kernel/direct_convolution.h``), built on the host from
#: ``Arguments`` of a 2-D problem (``conv/conv2d_problem_size.h``); -1 for any other subject.
_PARAMS_SMEM = """#include <cutlass/conv/conv2d_problem_size.h>
namespace cl_detail {
template <class T> long long params_smem() {
  if constexpr (kind_of<T>::value == 5) {
    if constexpr (std::is_same_v<typename T::ConvProblemSize, cutlass::conv::Conv2dProblemSize>) {
      int const c = T::Mma::Shape::kN;
      cutlass::conv::Conv2dProblemSize problem(1, 16, 16, c, c, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1,
                                               cutlass::conv::Mode::kCrossCorrelation, 1, c);
      typename T::Params params(typename T::Arguments(problem), nullptr);
      return params.get_smem_size();
    }
  }
  return -1;
}
}  // namespace cl_detail
"""


#: The class template whose incomplete instantiations carry :func:`render`'s ``shown`` numbers.
SHOW = "cl_show::Show"


def checks(configs: list, offsets: list[list[tuple[str, str]]] | None = None, *,
           run: bool = False) -> list[tuple[str, str | None, list[str]]]:
    """The numbers a cross-check reads, as ``(tag, condition, [C++ expressions])`` in order
    (the numbers count only where ``condition``, a C++ ``bool``, holds; ``None``: always):

    * per config ``("size i", [sizeof kernel, mainloop, epilogue storage, stages])``;
    * ``("field i Stages B"|"E", [N, 0])`` for a sparse mainloop's ``StagesB``/``StagesE``;
    * ``("field i Size Storage", [sizeof, 0])`` for a subject whose storage is of no GEMM
      shape (``Storage``);
    * where user types are among ``configs``, for a direct convolution (kind 5), ``("field i
      Launch expr", [N, 0])`` (the probe's ``LaunchBytes``) and, with ``run`` (a value only a
      program run computes), ``("field i Launch params", [N, 0])``: what its own ``Params``,
      built from ``Arguments`` of a 2-D problem (N 1, H W P Q 16, R S 3, padding 1, stride and
      dilation 1, C = K = groups = the tile's N), returns from ``get_smem_size()`` (-1 for a
      3-D problem type);
    * per ``(alias, dotted.path)`` of ``offsets[i]`` ``("field i alias path", [offsetof, sizeof])``.

    Bytes."""
    users = any(isinstance(c, UserType) for c in configs)
    out = []
    for i, _ in enumerate(configs):
        ns = f"{NAMESPACE}{i}"
        out.append((f"size {i}", None, [f"sizeof({ns}::KernelStorage)", f"sizeof({ns}::MainloopStorage)",
                                        f"sizeof({ns}::EpilogueStorage)", f"(int)sizeof({ns}::Stages) - 1"]))
        out.append((f"field {i} Size Storage", f"!std::is_same_v<{ns}::Storage, cl_detail::cl_none>",
                    [f"sizeof({ns}::Storage)", "0"]))
        if users:
            conv = f"cl_detail::kind_of<{ns}::Subject>::value == 5"
            out.append((f"field {i} Launch expr", conv, [f"(int)sizeof({ns}::LaunchBytes) - 2", "0"]))
            if run:
                out.append((f"field {i} Launch params", conv,
                            [f"cl_detail::params_smem<{ns}::Subject>()", "0"]))
        for which in ("B", "E"):
            out.append((f"field {i} Stages {which}", f"sizeof({ns}::Stages{which}) > 1",
                        [f"(int)sizeof({ns}::Stages{which}) - 2", "0"]))
        for alias, path in (offsets[i] if offsets else []):
            t = f"{ns}::{alias}"
            out.append((f"field {i} {alias} {path}", None,
                        [f"offsetof({t}, {path})", f"sizeof((({t}*)nullptr)->{path})"]))
    return out


def render(configs: list[Config], *, with_main: bool = False, shown: bool = False,
           offsets: list[list[tuple[str, str]]] | None = None,
           capacities: tuple[str, ...] = ()) -> str:
    """The whole probe for ``configs`` (one namespace each; ``capacities``: see
    :func:`user_block`), without builder budgets (the engine adds them:
    :func:`cutlass_layout.engine.loop.probe_batch`).

    The numbers of :func:`checks` (``offsets`` as there) are given two ways, for cross-checks:
    with ``with_main``, a ``main()`` prints one line per check whose condition holds, ``tag
    value...`` (with ``run``'s checks too); with ``shown``, each check ``j`` names the
    incomplete type ``cl_show::Show<jL, condition, value...>`` in host code, so the
    compiler's front end reports every value in an error message and nothing is compiled,
    linked or run (:func:`cutlass_layout.checks.verify.nvcc_numbers`).
    """
    parts = ["// Generated by cutlass-layout: the type computation of each config.\n",
             preamble(), _DETECT]
    for i, cfg in enumerate(configs):
        parts.append(block(cfg, i, capacities, budget=False))
    if shown:
        parts.append("#include <cstddef>\n#if !defined(__CUDA_ARCH__)\n"
                     "namespace cl_show { template <long... V> struct Show; }\n")
        for j, (_, cond, exprs) in enumerate(checks(configs, offsets)):
            vals = "".join(f", (long)({e})" for e in [cond or "true", *exprs])
            parts.append(f"constexpr std::size_t cl_shown_{j} = sizeof({SHOW}<{j}L{vals}>);\n")
        parts.append("#endif\n")
    if with_main:
        users = any(isinstance(c, UserType) for c in configs)
        parts.append("#include <cstdio>\n#include <cstddef>\n" + (_PARAMS_SMEM if users else "")
                     + "int main() {\n")
        for tag, cond, exprs in checks(configs, offsets, run=True):
            fmt = " ".join("%lld" for _ in exprs)
            args = ", ".join(f"(long long)({e})" for e in exprs)
            line = f'std::printf("{tag} {fmt}\\n", {args});'
            parts.append(f"  if ({cond}) {line}\n" if cond else f"  {line}\n")
        parts.append("  return 0;\n}\n")
    return "".join(parts)
