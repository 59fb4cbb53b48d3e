"""cpp/preprocessor.py: ``#if`` conditions and the branches they keep, on header-shaped text.

The snippets are written for the test in the shape of CUTLASS's arch guards
(``cutlass/arch/config.h``'s ``CUTLASS_ARCH_MMA_SM90_SUPPORTED``) and TensorRT-LLM's
``#ifdef ENABLE_FP4`` blocks (``moe_tma_warp_specialized_traits.h``); every expected value is
derived by hand in a comment beside it.
"""

from __future__ import annotations

import pytest

from cutlass_layout.cpp.preprocessor import (
    active_text,
    command_line_defines,
    directives,
    evaluate,
)
from cutlass_layout.installs import moe_sm80

ARCH_GUARD = """\
struct Mma {
#if defined(CUTLASS_ARCH_MMA_SM90_SUPPORTED)
  static int const kStages = 4;
#elif defined(CUTLASS_ARCH_MMA_SM80_SUPPORTED)
  static int const kStages = 3;
#else
  static int const kStages = 2;
#endif
};"""


def kept(text: str, defined) -> list[str]:
    return [ln.strip() for ln in active_text(text, defined).split("\n") if ln.strip()]


@pytest.mark.parametrize(
    "defined, stages",
    [
        ({"CUTLASS_ARCH_MMA_SM90_SUPPORTED"}, "4"),  # the #if branch
        ({"CUTLASS_ARCH_MMA_SM80_SUPPORTED"}, "3"),  # the #elif branch
        ({"CUTLASS_ARCH_MMA_SM90_SUPPORTED", "CUTLASS_ARCH_MMA_SM80_SUPPORTED"}, "4"),  # the first that holds
        (set(), "2"),  # neither: #else
    ],
)
def test_one_branch_of_an_elif_chain(defined, stages):
    assert kept(ARCH_GUARD, defined) == ["struct Mma {", f"static int const kStages = {stages};", "};"]


def test_lines_are_kept():
    # 8 lines in, 8 lines out: directives and branches not taken become empty lines
    out = active_text(ARCH_GUARD, {"CUTLASS_ARCH_MMA_SM80_SUPPORTED"})
    assert out.split("\n") == ["struct Mma {", "", "", "", "  static int const kStages = 3;", "", "", "", "};"]
    assert out.count("\n") == ARCH_GUARD.count("\n")


def test_the_elif_bug_of_moe_sm80():
    """moe_sm80.active_text used to give an #elif the state of its #if: with {"B"} it blanked
    ``y``, with {"A"} it kept both ``x`` and ``y``."""
    text = "#if defined(A)\nx\n#elif defined(B)\ny\n#endif"
    assert moe_sm80.active_text(text, {"B"}) == "\n\n\ny\n"
    assert moe_sm80.active_text(text, {"A"}) == "\nx\n\n\n"
    assert moe_sm80.active_text(text, set()) == "\n\n\n\n"


FP4_TRAITS = """\
constexpr bool isValidHopperMOESpecialisation() {
#if defined(CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED)
  return (is_same<T, WeightType>::value
#ifdef ENABLE_FP4
          || is_same<Fp4Type, WeightType>::value
#endif
         )
#ifndef ENABLE_FP4
         && true
#endif
         ;
#else
  return false;
#endif
}"""


@pytest.mark.parametrize(
    "defined, body",
    [
        # the outer #if taken, the nested #ifdef taken, the #ifndef not
        (
            {"CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED", "ENABLE_FP4"},
            ["return (is_same<T, WeightType>::value", "|| is_same<Fp4Type, WeightType>::value", ")", ";"],
        ),
        # the outer #if taken, the nested #ifdef not, the #ifndef taken
        (
            {"CUTLASS_ARCH_MMA_MODIFIABLE_TMA_SM90_SUPPORTED"},
            ["return (is_same<T, WeightType>::value", ")", "&& true", ";"],
        ),
        # the outer #if not taken: nothing nested counts, whatever is defined; the #else kept
        ({"ENABLE_FP4"}, ["return false;"]),
        (set(), ["return false;"]),
    ],
)
def test_nested_groups(defined, body):
    assert kept(FP4_TRAITS, defined)[1:-1] == body


def test_continuation_lines_and_other_directives():
    text = "#if defined(A) && \\\n    defined(B)\n#define X 1\nx\n#endif\n#include <y>"
    # the #if spans two lines, both emptied; the #define is text of its branch
    assert active_text(text, {"A", "B"}) == "\n\n#define X 1\nx\n\n#include <y>"
    assert active_text(text, {"A"}) == "\n\n\n\n\n#include <y>"


@pytest.mark.parametrize(
    "expr, value",
    [
        ("defined(A)", True),
        ("defined A", True),
        ("!defined(B)", True),
        ("defined(A) && defined(B)", False),
        ("defined(A) || defined(B)", True),
        ("defined(A) or defined(B)", True),  # moe_sm80._pp_true: SyntaxError
        ("defined(A) || round", True),  # moe_sm80._pp_true: NameError ('round' is a Python name)
        ("not defined(A) and defined(A)", False),
        ("(defined(A) || defined(B)) && !(defined(B))", True),
        ("CUTLASS_VERSION >= 300", False),  # not defined: 0
        ("__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)", False),
        ("1 + 2 * 3 == 7", True),  # precedence: 1 + 6
        ("0x10 >> 2", 4),
        ("-7 / 2", -3),  # C truncates toward zero
        ("-7 % 2", -1),
        ("defined(A) ? 10 : 20", 10),
        ("1 ? 2 : 0 ? 3 : 4", 2),
        ("10UL > 9", True),
        ("true && !false", True),
    ],
)
def test_evaluate(expr, value):
    got = evaluate(expr, {"A"})
    assert got == value and type(got) is type(value)


def test_evaluate_with_values():
    # -D__CUDACC_VER_MAJOR__=12 -D__CUDACC_VER_MINOR__=8
    ver = {"__CUDACC_VER_MAJOR__": "12", "__CUDACC_VER_MINOR__": 8}
    assert (
        evaluate("__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 8)", ver) is True
    )
    assert evaluate("defined(__CUDACC_VER_MINOR__)", ver) is True


@pytest.mark.parametrize("expr", ["", "1 +", "(1", "1 )", "f(1)", "1 / 0", "defined(", "'a'", "a::b"])
def test_evaluate_unreadable(expr):
    assert evaluate(expr) is None


def test_evaluate_strict():
    # strict: a name left is one that cannot be told, not 0
    assert evaluate("true && round", strict=True) is None
    assert evaluate("true && (false || !false)", strict=True) is True
    assert evaluate("sm >= 80 ? 4 : 2", {"sm": 120}, strict=True) == 4


def test_directives():
    text = "int x;\n  #  if A \\\n  && B\n#endif // done\n"
    ds = directives(text)
    assert [(d.kind, d.line, d.lines) for d in ds] == [("if", 2, 2), ("endif", 4, 1)]
    assert ds[0].rest.split() == ["A", "&&", "B"]
    assert text[ds[0].start : ds[0].end] == "  #  if A \\\n  && B"


def test_command_line_defines():
    assert command_line_defines(["-DENABLE_BF16", "-D", "ENABLE_FP8", "-DX=1", "-I/x"]) == {
        "ENABLE_BF16",
        "ENABLE_FP8",
        "X",
    }


def test_moe_conditions_read_cpp_literals():
    """moe_sm80.holds read ``true``/``false`` as unknown names: ``isValidAmpereMOESpecialisation``
    without ``ENABLE_FP4`` is ``return true;``, which it could not tell."""
    assert moe_sm80.holds("true", {}) is True
    assert moe_sm80.holds("!std::is_same_v<T, float> && true", {"T": "half"}) is True
    assert moe_sm80.holds("std::is_same_v<T, half> || round", {"T": "float"}) is None
    # cutlass_heuristic.cpp's stage range: for sm 120, not int8: min 2 (sm != 89, int8 false),
    # max 4 (sm >= 80); int8: 3..6; for sm 89, not int8: 3..4
    heuristic = (
        "int const min_stages = (sm == 89) ? 3 : int8_configs_only ? 3 : 2;\n"
        "int const max_stages = int8_configs_only ? 6 : (sm >= 80 ? 4 : 2);\n"
    )
    assert moe_sm80.candidate_stages(heuristic, 120, set()) == range(2, 5)
    assert moe_sm80.candidate_stages(heuristic, 120, {"INT8_ONLY"}) == range(3, 7)
    assert moe_sm80.candidate_stages(heuristic, 89, set()) == range(3, 5)
    # a truth value is not a stage count
    assert (
        moe_sm80.candidate_stages(heuristic.replace("? 6 : (sm >= 80 ? 4 : 2)", "? 6 : sm >= 80"), 120, set()) is None
    )


AMPERE_TRAITS = """\
namespace tensorrt_llm::kernels::cutlass_kernels {
template <typename T, typename WeightType>
constexpr bool isValidAmpereMOESpecialisation() {
#ifdef ENABLE_FP4
  return !std::is_same_v<T, Fp4Type> && !std::is_same_v<WeightType, Fp4Type>;
#else
  return true;  // Default to true
#endif
}
}
"""


def test_the_traits_header_reader(tmp_path):
    """candidate_lists.fallback_excludes_fp4 reads the branch of ``#ifdef ENABLE_FP4`` the flags keep
    (one reader with hopper_valid_rule: candidate_lists.traits_function)."""
    from cutlass_layout.installs import candidate_lists, moe_runners

    header = tmp_path / moe_runners.TRAITS
    header.parent.mkdir(parents=True)
    header.write_text(AMPERE_TRAITS)
    # -DENABLE_FP4: the #ifdef branch, exactly the FP4-excluding return
    assert candidate_lists.fallback_excludes_fp4(tmp_path, ["-DENABLE_FP4"]) is True
    assert candidate_lists.fallback_excludes_fp4(tmp_path, ["-D", "ENABLE_FP4"]) is True
    # not defined: "return true;"
    assert candidate_lists.fallback_excludes_fp4(tmp_path, ["-DENABLE_BF16"]) is False
    body = candidate_lists.traits_function("isValidAmpereMOESpecialisation", tmp_path, set())
    assert "".join(body.split()) == "returntrue;"
    # an #elif the old inline reader did not follow, and a #define it does not
    header.write_text(AMPERE_TRAITS.replace("#else", "#elif defined(X)\n  return false;\n#else"))
    assert (
        "".join(candidate_lists.traits_function("isValidAmpereMOESpecialisation", tmp_path, {"X"}).split())
        == "returnfalse;"
    )
    header.write_text(AMPERE_TRAITS.replace("#else", "#else\n#define Y 1"))
    assert candidate_lists.traits_function("isValidAmpereMOESpecialisation", tmp_path, set()) is None
    header.write_text(AMPERE_TRAITS.replace("#endif\n}", "}"))  # unbalanced
    assert candidate_lists.traits_function("isValidAmpereMOESpecialisation", tmp_path, set()) is None
    assert candidate_lists.traits_function("isValidAmpereMOESpecialisation", tmp_path / "none", set()) is None
