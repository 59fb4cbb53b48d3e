"""The probe's part for one subject: the C++ detection helpers (``namespace cl_detail``,
:data:`DETECT`: what a subject is, its parts, its optional members) and the aliases that
expose its storage to the frontend (:func:`subject_block`; the table of aliases is in
:mod:`.probe`'s docstring). The helpers mirror what tells CUTLASS's types apart: a 3.x
``GemmUniversal`` (``gemm/kernel/gemm_universal.hpp``), a 2.x kernel (``kernel::Gemm``), a
collective (``TiledMma``, ``DispatchPolicy``), a 2.x threadblock mainloop (``MmaBase``) or
epilogue, a direct convolution's launch size (``conv/kernel/direct_convolution.h``).
"""

from __future__ import annotations


NAMESPACE = "cl_probe_"

#: ``Kind`` - 2 -> :attr:`cutlass_layout.model.LayoutReport.subject_kind` (4: ``storage``, which
#: the engine may name more closely from the storage's members: ``fmha``)
KINDS = {5: "direct_conv", 4: "storage", 3: "kernel", 2: "kernel2x", 1: "mainloop", 0: "epilogue"}
#: ``char[1 + N]`` aliases of the mainloop's TMA members: alias -> member name.
TMA_MEMBERS = {"TmaMK": "TmaTransactionBytesMK", "TmaNK": "TmaTransactionBytesNK", "TmaTotal": "TmaTransactionBytes"}
#: ``char[1 + N]`` aliases of the other transaction counts a collective may split its bytes
#: into (``char[1]``: no such member), read for :class:`~cutlass_layout.model.launch.TmaCheck`:
#: SM100/SM103 block-scaled ``ABTmaTransactionBytes`` and ``SFTransactionBytes``
#: (``gemm/collective/sm100_blockscaled_mma_warpspecialized.hpp``), SM90 blockwise FP8's
#: ``TmaTransactionBytesSFA``/``SFB`` (``sm90_mma_tma_gmma_ss_warpspecialized_fp8_blockwise_scaling.hpp``),
#: SM90 mixed input's ``TmaTransactionBytesExtra`` (the scales and zeros,
#: ``sm90_mma_tma_gmma_rs_warpspecialized_mixed_input.hpp``), the SM100 sparse collectives'
#: ``MainLoadTmaTransactionBytes`` and ``MetadataTmaTransactionBytes``
#: (``sm100_sparse_mma_warpspecialized.hpp``) and SM100 mixed input's ``TmaTransactionBytes_A``/``_B``
#: (``sm100_mma_warpspecialized_mixed_input.hpp``)
TMA_PARTS = {
    "TmaAB": "ABTmaTransactionBytes",
    "TmaSF": "SFTransactionBytes",
    "TmaSFA": "TmaTransactionBytesSFA",
    "TmaSFB": "TmaTransactionBytesSFB",
    "TmaExtra": "TmaTransactionBytesExtra",
    "TmaMainLoad": "MainLoadTmaTransactionBytes",
    "TmaMetadata": "MetadataTmaTransactionBytes",
    "TmaA": "TmaTransactionBytes_A",
    "TmaB": "TmaTransactionBytes_B",
}
#: ``char[2 + N]`` aliases (``char[1]``: none) of the bytes the elements of a collective's
#: scale-factor, scale and zero buffers hold (``SharedStorage::TensorStorage::<member>``, a
#: ``cute::ArrayEngine<T, N>``: N x the bits of T): alias -> member. A buffer's ``sizeof`` can be
#: more than its elements: one of no elements (a scale-factor layout with a zero extent, CUTLASS
#: 4.2.0's SM120 block-scaled SFB of an N = 32 tile; a conversion mode without zeros) is still a
#: 16-byte member (``cute::array_aligned``'s alignment), and its TMA copy delivers nothing
TMA_DATA = {
    "TmaDataSFA": "smem_SFA",
    "TmaDataSFB": "smem_SFB",
    "TmaDataScale": "smem_scale",
    "TmaDataZero": "smem_zero",
}
#: ``char[2 + N]`` aliases (``char[1]``: no such member) of a 3.x kernel's launch members, read
#: for its occupancy: alias -> static member of the kernel class (CUTLASS's
#: ``gemm/kernel/sm90_gemm_tma_warpspecialized_cooperative.hpp`` and the other 3.x kernels
#: declare ``MaxThreadsPerBlock`` and ``MinBlocksPerMultiprocessor``; the warp-specialized ones
#: with a register split ``NumLoadWarpGroups``/``NumMmaWarpGroups`` and
#: ``LoadRegisterRequirement``/``MmaRegisterRequirement``, which each warp group's
#: ``cutlass::arch::warpgroup_reg_dealloc``/``warpgroup_reg_alloc`` applies)
OCCUPANCY_MEMBERS = {
    "OccThreads": "MaxThreadsPerBlock",
    "OccMinBlocks": "MinBlocksPerMultiprocessor",
    "OccLoadGroups": "NumLoadWarpGroups",
    "OccMmaGroups": "NumMmaWarpGroups",
    "OccLoadRegs": "LoadRegisterRequirement",
    "OccMmaRegs": "MmaRegisterRequirement",
}

#: ``char[3 + N]`` aliases (``char[2]``: a run-time extent; ``char[1]``: no such member) of a
#: 3.x kernel's ``ClusterShape`` (M, N, K) and of its ``AtomThrShapeMNK`` M (the CTAs one MMA
#: spans: 2 for SM100's 2-SM MMA; ``collective/sm100_mma_warpspecialized.hpp`` makes it the
#: ``TiledMma``'s peer CTAs), read for the cluster's legality: alias -> (detector, extent)
CLUSTER_ALIASES = {
    "ClusterM": ("cluster_of", "m"),
    "ClusterN": ("cluster_of", "n"),
    "ClusterK": ("cluster_of", "k"),
    "MmaCtas": ("atom_thr_of", "m"),
}

DETECT = """
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
CL_DETECT(ABTmaTransactionBytes)
CL_DETECT(SFTransactionBytes)
CL_DETECT(TmaTransactionBytesSFA)
CL_DETECT(TmaTransactionBytesSFB)
CL_DETECT(TmaTransactionBytesExtra)
CL_DETECT(MainLoadTmaTransactionBytes)
CL_DETECT(MetadataTmaTransactionBytes)
CL_DETECT(TmaTransactionBytes_A)
CL_DETECT(TmaTransactionBytes_B)
CL_DETECT(ReducedSmemCapacityBytes)
CL_DETECT(Sm90ReducedSmemCapacityBytes)
#undef CL_DETECT
// a kernel's launch members: 2 + N, 1 where it has none (N may be 0)
#define CL_MEMBER(NAME)                                                                  \\
  template <class T, class = void> struct member_##NAME { static constexpr long long value = 1; }; \\
  template <class T> struct member_##NAME<T, std::void_t<decltype(T::NAME)>> {           \\
    static constexpr long long value = 2 + static_cast<long long>(T::NAME); };
CL_MEMBER(MaxThreadsPerBlock)
CL_MEMBER(MinBlocksPerMultiprocessor)
CL_MEMBER(NumLoadWarpGroups)
CL_MEMBER(NumMmaWarpGroups)
CL_MEMBER(LoadRegisterRequirement)
CL_MEMBER(MmaRegisterRequirement)
#undef CL_MEMBER
// a 3.x kernel's ClusterShape (M, N, K) and the CTAs one of its MMAs spans (SM100's
// AtomThrShapeMNK M: 2 for a 2-SM MMA): 3 + N for a static extent (a cute::C<N>, which has a
// ::value), 2 for a run-time one (an int: a dynamic cluster), 1 where the kernel has none
template <class X, class = void> struct extent_of { static constexpr long long value = 2; };
template <class X> struct extent_of<X, std::void_t<decltype(X::value)>> {
  static constexpr long long value = 3 + static_cast<long long>(X::value); };
template <class S> struct extents3 { static constexpr long long m = 1, n = 1, k = 1; };
template <template <class...> class Tup, class M, class N, class K> struct extents3<Tup<M, N, K>> {
  static constexpr long long m = extent_of<M>::value, n = extent_of<N>::value, k = extent_of<K>::value; };
// NAME<T>::type: T's member type MEMBER, or cl_none where T has none
#define CL_TYPE(NAME, MEMBER)                                                            \
  template <class T, class = void> struct NAME { using type = cl_none; };                \
  template <class T> struct NAME<T, std::void_t<typename T::MEMBER>> { using type = typename T::MEMBER; };
CL_TYPE(cluster_of, ClusterShape)
CL_TYPE(atom_thr_of, AtomThrShapeMNK)
CL_TYPE(policy_of, DispatchPolicy)  // a collective's dispatch policy
CL_TYPE(element_a, ElementA)
CL_TYPE(element_b, ElementB)
CL_TYPE(alloc_a, SmemAllocTypeA)
CL_TYPE(alloc_b, SmemAllocTypeB)
#undef CL_TYPE
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
// a 3.x kernel's Params (what it is launched with; cl_none for any other subject)
template <class T, int K = kind_of<T>::value> struct kernel_params_of { using type = cl_none; };
template <class T> struct kernel_params_of<T, 3> { using type = typename T::Params; };
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
// the SM103 block-scaled collectives' scale-factor pipeline stages: 2 + N (1 for none)
template <class T, class = void> struct stages_sf { static constexpr int value = 1; };
template <class T> struct stages_sf<T, std::void_t<decltype(T::DispatchPolicy::LoadSFPipelineStageCount)>> {
  static constexpr int value = 2 + T::DispatchPolicy::LoadSFPipelineStageCount; };
// the CTAs of one MMA atom, size(AtomThrShapeMNK{}) (SM100's 2-SM MMA: 2; its one barrier
// counts both CTAs' bytes): 1 + N (1 for none). size is found by argument-dependent lookup
// (cute::size of a cute::Shape), so that a unit without CuTe parses this too
template <class T, class = void> struct atom_thr { static constexpr long long value = 1; };
template <class T> struct atom_thr<T, std::void_t<typename T::AtomThrShapeMNK>> {
  static constexpr long long value = 1 + static_cast<long long>(
      decltype(size(std::declval<typename T::AtomThrShapeMNK>()))::value); };
// the bits of the element a collective's TMA reads for A/B (its TmaInternalElementA/B, else
// its ElementA/B) and of the slot it stages one in (SmemAllocTypeA/B): F8F6F4 collectives stage
// 4- and 6-bit elements in uint8_t slots (sm120_blockscaled_mma_tma.hpp). 1 + N (1: none).
// cutlass::sizeof_bits (cutlass/numeric_size.h) is declared here so that a unit without
// CUTLASS parses this too; it is only instantiated for a real collective
}  // namespace cl_detail
namespace cutlass { template <typename T> struct sizeof_bits; }
namespace cl_detail {
template <class E> struct bits_of { static constexpr long long value = 1 + cutlass::sizeof_bits<E>::value; };
template <> struct bits_of<cl_none> { static constexpr long long value = 1; };
// the bytes the elements of a collective's buffer NAME hold (SharedStorage::TensorStorage::NAME,
// a cute::ArrayEngine<T, N>, matched as any template of a type and a size: N x the bits of T,
// rounded up to bytes): 2 + bytes, 1 where it has no such member. Its sizeof can be more: an
// engine of no elements is still a 16-byte member (cute::array_aligned's alignment)
template <class E> struct engine_bytes { static constexpr long long value = 1; };
template <template <class, decltype(sizeof(0))> class E, class T, decltype(sizeof(0)) N>
struct engine_bytes<E<T, N>> {
  static constexpr long long value = 2 + (static_cast<long long>(N) * cutlass::sizeof_bits<T>::value + 7) / 8; };
#define CL_DATA(NAME)                                                                    \
  template <class T, class = void> struct data_##NAME { static constexpr long long value = 1; }; \
  template <class T> struct data_##NAME<T, std::void_t<decltype(                         \
      std::declval<typename T::SharedStorage::TensorStorage&>().NAME)>>                   \
      : engine_bytes<std::remove_reference_t<decltype(                                     \
          std::declval<typename T::SharedStorage::TensorStorage&>().NAME)>> {};
CL_DATA(smem_SFA)
CL_DATA(smem_SFB)
CL_DATA(smem_scale)
CL_DATA(smem_zero)
#undef CL_DATA
// a mixed-input collective's KernelConversionMode (cutlass::detail::ConversionMode in
// detail/collective/mixed_input_utils.hpp, and TensorRT-LLM's collectives' own enum of the same
// order: DirectConvert 0, ConvertAndScale 1, ConvertAndScaleWithZero 2): 2 + mode. Where the
// member is private (TensorRT-LLM's CollectiveMmaInterleaved), the mode its
// get_conversion_mode() gives: ElementScale void -> DirectConvert, else ElementZero void ->
// ConvertAndScale, else ConvertAndScaleWithZero. 1: neither
template <class T, class = void> struct mode_from_types { static constexpr long long value = 1; };
template <class T> struct mode_from_types<T, std::void_t<typename T::ElementScale, typename T::ElementZero>> {
  static constexpr long long value = 2 + (std::is_void_v<typename T::ElementScale> ? 0
      : std::is_void_v<typename T::ElementZero> ? 1 : 2); };
template <class T, class = void> struct conversion_mode : mode_from_types<T> {};
template <class T> struct conversion_mode<T, std::void_t<decltype(T::KernelConversionMode)>> {
  static constexpr long long value = 2 + static_cast<long long>(T::KernelConversionMode); };
template <class T, class = void> struct tma_element_a : element_a<T> {};
template <class T> struct tma_element_a<T, std::void_t<typename T::TmaInternalElementA>> {
  using type = typename T::TmaInternalElementA; };
template <class T, class = void> struct tma_element_b : element_b<T> {};
template <class T> struct tma_element_b<T, std::void_t<typename T::TmaInternalElementB>> {
  using type = typename T::TmaInternalElementB; };
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


def capacity_alias(name: str) -> str:
    """The ``char[N]`` alias of the capacity constant ``name`` in an arch-from-tag block."""
    return "Capacity_" + name.rsplit("::", 1)[-1]


def params_aliases(prefix: str = "") -> str:
    """``KernelParams`` (a 3.x kernel's ``Params``) and ``KernelParamsBytes``, which completes
    it, of the block's ``Subject`` (:func:`subject_block`'s ``params``)."""
    p = prefix
    return (
        f"using {p}KernelParams = typename cl_detail::kernel_params_of<{p}Subject>::type;\n"
        f"using {p}KernelParamsBytes = char[sizeof({p}KernelParams)];\n"
    )


def subject_block(
    subject: str,
    capacity: str | None,
    *,
    prefix: str = "",
    member: bool = False,
    capacities: tuple[str, ...] = (),
    params: bool = False,
) -> str:
    """Aliases that expose ``subject``'s storage to the frontend (inside a probe namespace).

    ``subject`` may be a kernel (CUTLASS 3.x ``GemmUniversal`` or a 2.x kernel), a type
    standing for one (a ``GemmKernel`` member), a mainloop collective or an epilogue
    collective; parts it does not have become ``cl_detail::cl_none``. ``capacity`` is the C++
    name of the capacity constant, or a number (a 2.x-era arch's documented limit: no
    ``capacity_ref`` then), or ``None`` with ``capacities``: an alias per constant the tree
    defines (:func:`capacity_alias`), the arch's chosen after the parse from ``ArchCC``.
    ``prefix`` goes before every name (for several blocks in one scope, e.g. inside a
    launcher's body); ``member`` makes the capacity references static members (for a block
    inside a class). ``params`` adds ``KernelParams`` (a 3.x kernel's ``Params``) and
    ``KernelParamsBytes``, which completes it for :func:`cutlass_layout.engine.numbers.params_layout`:
    off by default, since completing every kernel's ``Params`` doubles a batch's parse CPU
    (measured on 8 SM120 configs: 8.0-9.1 s against 4.2-4.3 s).
    """
    p = prefix
    static = "static " if member else ""
    kernel_params = params_aliases(p) if params else ""
    tma = "".join(
        f"using {p}{alias} = char[cl_detail::has_{member_}<{p}Mainloop>::value];\n"
        for alias, member_ in {**TMA_MEMBERS, **TMA_PARTS}.items()
    )
    tma += (
        f"using {p}StagesSF = char[cl_detail::stages_sf<{p}Mainloop>::value];\n"
        f"using {p}TmaAtomThr = char[cl_detail::atom_thr<{p}Mainloop>::value];\n"
        f"using {p}MainloopPolicy = typename cl_detail::policy_of<{p}Mainloop>::type;\n"
        f"using {p}TmaBitsA = char[cl_detail::bits_of<typename cl_detail::tma_element_a<{p}Mainloop>::type>::value];\n"
        f"using {p}TmaBitsB = char[cl_detail::bits_of<typename cl_detail::tma_element_b<{p}Mainloop>::type>::value];\n"
        f"using {p}SlotBitsA = char[cl_detail::bits_of<typename cl_detail::alloc_a<{p}Mainloop>::type>::value];\n"
        f"using {p}SlotBitsB = char[cl_detail::bits_of<typename cl_detail::alloc_b<{p}Mainloop>::type>::value];\n"
        f"using {p}TmaMode = char[cl_detail::conversion_mode<{p}Mainloop>::value];\n"
    )
    tma += "".join(
        f"using {p}{alias} = char[cl_detail::data_{member_}<{p}Mainloop>::value];\n"
        for alias, member_ in TMA_DATA.items()
    )
    tma += "".join(
        f"using {p}{alias} = char[cl_detail::member_{member_}<{p}Subject>::value];\n"
        for alias, member_ in OCCUPANCY_MEMBERS.items()
    )
    tma += "".join(
        f"using {p}{alias} = char[cl_detail::extents3<typename cl_detail::{of}<{p}Subject>::type>::{dim}];\n"
        for alias, (of, dim) in CLUSTER_ALIASES.items()
    )
    if capacity is None:
        cap = "".join(
            f"using {p}{capacity_alias(c)} = char[{c}];\n"
            f"{static}constexpr auto const& {p}capacity_ref_{capacity_alias(c)[9:]} = {c};\n"
            for c in capacities
        )
    elif capacity.isdigit():
        cap = f"using {p}Capacity = char[{capacity}];\n"
    else:
        cap = f"using {p}Capacity = char[{capacity}];\n{static}constexpr auto const& {p}capacity_ref = {capacity};\n"
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
{kernel_params}using {p}LaunchParams = typename cl_detail::params_of<{p}Subject>::type;
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
