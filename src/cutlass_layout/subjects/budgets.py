"""The mainloop builder's stage budget, read in the probe (:func:`budget_block`,
:func:`user_budget_block`): the capacity the builder assumed, the stage count it chose and its
bytes per stage, found by a search over its own stage-count function
(``cutlass/gemm/collective/builders/sm100_blockscaled_umma_builder.inl``,
``sm90_gmma_builder.inl``).
"""

from __future__ import annotations

from .aliases import NAMESPACE
from .config import Config


def budgeted(cfg) -> bool:
    """Whether ``cfg``'s probe block reads its mainloop builder's stage budget: a
    :class:`Config` with ``StageCountAutoCarveout`` (stages auto) whose family's stage
    function is read (:func:`budget_family`)."""
    return isinstance(cfg, Config) and cfg.stages is None and budget_family(cfg) is not None


#: Per family: the builder's stage-count function, called with capacity C and no carve-out
#: (``cutlass/gemm/collective/builders/sm100_blockscaled_umma_builder.inl`` and
#: ``sm90_gmma_builder.inl``), and the builder's reduced-capacity member, if any.
_STAGE_FN = {
    "sm120": (
        "cutlass::gemm::collective::detail::sm100_compute_stage_count_or_override_blockscaled<C, "
        "typename B::SmemAllocTypeA, typename B::SmemAllocTypeB, "
        "TileShape, typename B::SmemLayoutAtomSFA, "
        "typename B::SmemLayoutAtomSFB>(cutlass::gemm::collective::StageCountAutoCarveout<0>{})",
        "ReducedSmemCapacityBytes",
        ("SmemAllocTypeA", "SmemAllocTypeB", "SmemLayoutAtomSFA", "SmemLayoutAtomSFB"),
    ),
    "sm90": (
        "cutlass::gemm::collective::detail::compute_stage_count_or_override<C, "
        "typename B::ElementAMma, typename B::ElementBMma, TileShape>("
        "cutlass::gemm::collective::StageCountAutoCarveout<0>{})",
        "Sm90ReducedSmemCapacityBytes",
        ("ElementAMma", "ElementBMma"),
    ),
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
    family = budget_family(cfg)
    assert family is not None  # a budgeted config's (callers check budgeted)
    return f"""
namespace {ns} {{
{_budget_decls(family)}}}  // namespace {ns}
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
        uses = "".join(f"using namespace ::{'::'.join(namespaces[: k + 1])};\n" for k in range(len(namespaces)))
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
