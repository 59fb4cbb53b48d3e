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
                     2.x direct convolution (:data:`.aliases.KINDS`)
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

This module puts the probe together (:func:`render`, the precompiled header's
:func:`pch_preambles`, the numbers a cross-check reads, :func:`checks`); its parts are the
detection helpers and a subject's aliases (:mod:`.aliases`), a config's type chain
(:mod:`.builders`), a user's type (:mod:`.user_type`) and the builder's stage budget
(:mod:`.budgets`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .aliases import DETECT, NAMESPACE
from .budgets import budget_block, budgeted
from .builders import config_block
from .config import FAMILY, Config
from .user_type import UserType, user_block

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


def preamble() -> str:
    """The includes every probe starts with (also what a precompiled header holds):
    :data:`HEADERS`, those after ``cutlass/cutlass.h`` only where the tree has
    ``cute/tensor.hpp`` (``__has_include``): a CUTLASS 2.x tree (tags before v3.0.0) has no
    ``cute/`` and no 3.x collectives, and its user types bring their own includes."""
    first, *rest = HEADERS
    return (
        f"#include <{first}>\n#if __has_include(<cute/tensor.hpp>)\n"
        + "".join(f"#include <{h}>\n" for h in rest)
        + "#endif\n#include <type_traits>\n"
    )


#: Per family, the configs a precompiled header holds already laid out (its warm-up): the
#: family's main kernels and element kinds. clang keeps a precompiled header's template
#: instantiations, and most of a config's (cute's layout algebra, the builders' helpers,
#: GemmUniversal's parts) are shared with one of these.
WARM_UP: dict[str, tuple[dict[str, Any], ...]] = {  # Config keywords
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
    plain = preamble() + DETECT
    configs = [Config(arch=arch, **kw) for kw in WARM_UP.get(FAMILY.get(arch, ""), ())]

    def warm(cfgs):
        return plain + "".join(config_block(c, i).replace(NAMESPACE, WARM_NAMESPACE) for i, c in enumerate(cfgs))

    out = [warm(configs[:n]) for n in (len(configs), 1) if 0 < n <= len(configs)]
    return list(dict.fromkeys(out + [plain]))


#: Namespace of the precompiled header's warm-up configs.
WARM_NAMESPACE = "cl_warm_"


def block(subject, index: int, capacities: tuple[str, ...] = (), *, budget: bool = True) -> str:
    """The probe block of a :class:`Config` or a :class:`UserType`: for an auto-stage config
    whose builder's budget is read (:func:`budgeted`), followed by its :func:`budget_block`
    unless ``budget`` is false."""
    if isinstance(subject, UserType):
        return user_block(subject, index, capacities)
    text = config_block(subject, index)
    return text + budget_block(subject, index) if budget and budgeted(subject) else text


def kernel_instantiation(index: int, kind: str | None = "kernel") -> str:
    """An explicit instantiation of the device entry point of probe ``index``'s kernel
    (``cutlass/device_kernel.h``): ``cutlass::device_kernel<GemmKernel>`` for a 3.x kernel,
    ``cutlass::Kernel<GemmKernel>`` for a 2.x one (``kind`` ``kernel2x`` or ``direct_conv``). In a device pass
    with function bodies, this instantiates ``GemmKernel::operator()``. The parameter carries
    ``CUTLASS_GRID_CONSTANT`` as the declaration does (nvcc refuses the directive without it;
    under clang it is empty), so the same text compiles with nvcc."""
    ns = f"{NAMESPACE}{index}"
    if kind in ("kernel2x", "direct_conv"):
        return (
            "\n#include <cutlass/device_kernel.h>\n"
            f"template __global__ void cutlass::Kernel<{ns}::Subject>("
            f"typename {ns}::Subject::Params);\n"
        )
    return (
        "\n#include <cutlass/device_kernel.h>\n"
        f"template __global__ void cutlass::device_kernel<{ns}::Subject>("
        f"CUTLASS_GRID_CONSTANT typename {ns}::Subject::Params const);\n"
    )


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


def checks(
    configs: Sequence, offsets: list[list[tuple[str, str]]] | None = None, *, run: bool = False
) -> list[tuple[str, str | None, list[str]]]:
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
    out: list[tuple[str, str | None, list[str]]] = []
    for i, _ in enumerate(configs):
        ns = f"{NAMESPACE}{i}"
        out.append(
            (
                f"size {i}",
                None,
                [
                    f"sizeof({ns}::KernelStorage)",
                    f"sizeof({ns}::MainloopStorage)",
                    f"sizeof({ns}::EpilogueStorage)",
                    f"(int)sizeof({ns}::Stages) - 1",
                ],
            )
        )
        out.append(
            (
                f"field {i} Size Storage",
                f"!std::is_same_v<{ns}::Storage, cl_detail::cl_none>",
                [f"sizeof({ns}::Storage)", "0"],
            )
        )
        if users:
            conv = f"cl_detail::kind_of<{ns}::Subject>::value == 5"
            out.append((f"field {i} Launch expr", conv, [f"(int)sizeof({ns}::LaunchBytes) - 2", "0"]))
            if run:
                out.append((f"field {i} Launch params", conv, [f"cl_detail::params_smem<{ns}::Subject>()", "0"]))
        for which in ("B", "E"):
            out.append(
                (
                    f"field {i} Stages {which}",
                    f"sizeof({ns}::Stages{which}) > 1",
                    [f"(int)sizeof({ns}::Stages{which}) - 2", "0"],
                )
            )
        for alias, path in offsets[i] if offsets else []:
            t = f"{ns}::{alias}"
            out.append(
                (f"field {i} {alias} {path}", None, [f"offsetof({t}, {path})", f"sizeof((({t}*)nullptr)->{path})"])
            )
    return out


def render(
    configs: Sequence[Config | UserType],
    *,
    with_main: bool = False,
    shown: bool = False,
    offsets: list[list[tuple[str, str]]] | None = None,
    capacities: tuple[str, ...] = (),
) -> str:
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
    parts = ["// Generated by cutlass-layout: the type computation of each config.\n", preamble(), DETECT]
    for i, cfg in enumerate(configs):
        parts.append(block(cfg, i, capacities, budget=False))
    if shown:
        parts.append(
            "#include <cstddef>\n#if !defined(__CUDA_ARCH__)\nnamespace cl_show { template <long... V> struct Show; }\n"
        )
        for j, (_, cond, exprs) in enumerate(checks(configs, offsets)):
            vals = "".join(f", (long)({e})" for e in [cond or "true", *exprs])
            parts.append(f"constexpr std::size_t cl_shown_{j} = sizeof({SHOW}<{j}L{vals}>);\n")
        parts.append("#endif\n")
    if with_main:
        users = any(isinstance(c, UserType) for c in configs)
        parts.append("#include <cstdio>\n#include <cstddef>\n" + (_PARAMS_SMEM if users else "") + "int main() {\n")
        for tag, cond, exprs in checks(configs, offsets, run=True):
            fmt = " ".join("%lld" for _ in exprs)
            args = ", ".join(f"(long long)({e})" for e in exprs)
            line = f'std::printf("{tag} {fmt}\\n", {args});'
            parts.append(f"  if ({cond}) {line}\n" if cond else f"  {line}\n")
        parts.append("  return 0;\n}\n")
    return "".join(parts)
