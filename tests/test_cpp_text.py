"""The text primitives of cpp/ (arguments.py, brackets.py): argument lists, matching brackets and
statement ends, on snippets in the shape of CUTLASS and TensorRT-LLM code (written for the test);
every expected value is derived by hand in a comment beside it."""

from __future__ import annotations

import pytest

from cutlass_layout.cpp.arguments import arguments, call_args, template_args, trimmed
from cutlass_layout.cpp.brackets import brace_pairs, matching, statement_end

BUILDER = (
    "cutlass::gemm::collective::CollectiveBuilder<cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, "
    "cutlass::half_t, cutlass::layout::RowMajor, 8, cutlass::half_t, cutlass::layout::ColumnMajor, 8, "
    "float, cute::Shape<cute::_128, cute::_128, cute::_64>, cute::Shape<cute::_1, cute::_2, cute::_1>, "
    "cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(Epilogue::SharedStorage))>, "
    "cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp"
)


def test_template_args_of_a_builder():
    args = template_args(BUILDER)
    # ArchTag .. KernelSchedule: 13 arguments; the shapes' and the carveout's commas are nested
    assert len(args) == 13
    assert args[9] == "cute::Shape<cute::_128, cute::_128, cute::_64>"
    assert (
        args[11]
        == "cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(Epilogue::SharedStorage))>"
    )
    assert template_args(BUILDER, 2) == ["cutlass::arch::Sm90", "cutlass::arch::OpClassTensorOp"]


@pytest.mark.parametrize(
    "spelled, args",
    [
        # parentheses protect a '>': candidates._first_args gave ['(x'] (it ignored parentheses)
        ("A<(x>y), b>", ["(x>y)", "b"]),
        ("A<(x < y), b>", ["(x < y)", "b"]),
        # brackets and braces nest too
        ("f<a[1, 2], {3, 4}>", ["a[1, 2]", "{3, 4}"]),
        ("A<B<C<D>>, E>", ["B<C<D>>", "E"]),
        # empty arguments left out; an unclosed list runs to the end
        ("A<, x, , y, z", ["x", "y", "z"]),
        ("A", []),
        # only the first list
        ("A<x>::B<y, z>", ["x"]),
    ],
)
def test_template_args(spelled, args):
    assert template_args(spelled) == args


def test_the_mixed_launcher_types():
    """candidates reads a mixed-input MoE launcher's T and WeightType with template_args (it had
    its own splitter, _first_args, which ignored parentheses)."""
    launcher = "sm90_generic_mixed_moe_gemm_kernelLauncher<__nv_fp8_e4m3, cutlass::uint4b_t, (1 > 0), half>"
    assert template_args(launcher, 2) == ["__nv_fp8_e4m3", "cutlass::uint4b_t"]
    assert template_args("A<(x>y), b>", 2) == ["(x>y)", "b"]


def test_arguments_spans():
    text = "Gemm<A<1, 2>, (x > y), z>;"
    # from after the '<' at 4: commas at 12 and 21, the closing '>' at 24
    got = list(arguments(text, 5))
    assert [(text[s:e], stop) for s, e, stop in got] == [("A<1, 2>", 12), (" (x > y)", 21), (" z", 24)]
    assert [text[slice(*trimmed(text, s, e))] for s, e, _ in got] == ["A<1, 2>", "(x > y)", "z"]


def test_arguments_to_a_known_end():
    # the list's end given: a '>' or '->' it did not open is an operator, not its end
    text = "a > b, p->q, c"
    assert [text[s:e] for s, e, _ in arguments(text, 0, len(text))] == ["a > b", " p->q", " c"]
    # not given: the first '>' closes the list
    assert [(text[s:e], stop) for s, e, stop in arguments(text, 0)] == [("a ", 2)]


def test_macro_arguments():
    """A macro call splits at commas outside parentheses only, as the preprocessor does:
    TensorRT-LLM's INSTANTIATE_TMA_WARP_SPECIALIZED_MOE_GEMM-style calls pass types with commas."""
    text = "LAUNCH(cute::Shape<_128, _64>, (a, b), {1, 2});"
    args, close = call_args(text, 6)
    assert args == ["cute::Shape<_128", " _64>", " (a, b)", " {1", " 2}"]
    assert close == len(text) - 2
    assert call_args("LAUNCH(a, (b", 6) is None  # not closed
    assert call_args("LAUNCH()", 6) == ([""], 7)


LAUNCHER = """\
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    ArchTag, OperatorClass, ElementA, LayoutA, 16, ElementB, LayoutB, 16, float,
    TileShape, ClusterShape, StageCount<(sizeof(X) > 8 ? 3 : 4)>, KernelSchedule>::CollectiveOp;
auto args = Arguments{{M, N, K}, {ptr_a, stride_a}};
if (args.mode) { run(args); }
"""


def test_matching():
    lt = LAUNCHER.index("<")
    gt = matching(LAUNCHER, lt, "<", ">")
    # the builder's closing '>' is the one before '::CollectiveOp': the '>' of 'sizeof(X) > 8' is in
    # parentheses, StageCount's own '<...>' nests
    assert LAUNCHER[gt + 1 :].startswith("::CollectiveOp;")
    brace = LAUNCHER.index("{")
    close = matching(LAUNCHER, brace, "{", "}")
    assert LAUNCHER[brace : close + 1] == "{{M, N, K}, {ptr_a, stride_a}}"
    assert matching("f(a, (b)", 1, "(", ")") is None  # never closed


def test_statement_end():
    # the first statement ends at its own ';' (the '>' and parentheses inside do not count)
    end = statement_end(LAUNCHER, 0)
    assert LAUNCHER[:end].endswith("::CollectiveOp;")
    # the next one: its braces are brackets of the statement, the ';' after them ends it
    start = LAUNCHER.index("auto")
    assert LAUNCHER[start : statement_end(LAUNCHER, start)] == "auto args = Arguments{{M, N, K}, {ptr_a, stride_a}};"
    # from 'if': its only ';' is inside the block's braces, and the text ends before another
    assert statement_end(LAUNCHER, LAUNCHER.index("if")) is None
    # from inside the block, its '}' closes a bracket not opened: None
    inner = LAUNCHER.index("; }") + 1
    assert statement_end(LAUNCHER, inner) is None


def test_brace_pairs():
    text = "namespace a { struct S { int x; }; void f() { if (x) { } } }"
    pairs = brace_pairs(text)
    # four '{' (the namespace's at 12), each paired with its own '}'
    assert {text[o : c + 1] for o, c in pairs.items()} == {text[12:], "{ int x; }", "{ if (x) { } }", "{ }"}
    assert brace_pairs("{ }}") is None and brace_pairs("{ { }") is None


def test_a_macro_calls_arguments():
    """kernels.macro_call splits a launcher macro call's arguments with :func:`arguments` (its own
    splitter counted every '>' as a closing bracket: after a '->' it split no more)."""
    from cutlass_layout.installs import kernels

    text = "x;\nINSTANTIATE_GEMM(half, cute::Shape<_128, _64>,\n    p->q, (a > b), 3);\n"
    # line 2: the call; the shape's comma nested, '->' and the parenthesized '>' operators
    assert kernels.macro_call(text, 2) == (
        "INSTANTIATE_GEMM",
        ["half", "cute::Shape<_128, _64>", "p->q", "(a > b)", "3"],
    )
    assert kernels.macro_call(text, 1) is None  # no call on line 1
