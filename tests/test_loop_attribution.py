"""The layout loop's attribution of errors (:func:`cutlass_layout.engine.loop.lay_out`): several
subjects that fail in one translation unit each get the error they get alone, and the parses
are counted. Plain C++ against fixtures/headers/failing_asserts.hpp (no CUTLASS, no CUDA):
the line numbers below are that header's, read by hand."""

from __future__ import annotations

from pathlib import Path

from cutlass_layout.cpp.clang import ProbeUnit
from cutlass_layout.engine.loop import Batch, lay_out
from cutlass_layout.model import LayoutReport, Provenance

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "failing_asserts.hpp"
PROV = Provenance(cutlass_root=str(HEADER.parent), cutlass_version="-", tree_hash="-", origin="test")


def _batch(parses: list, alone: bool = False) -> Batch:
    """Subjects are ``(kin, type)``; each block sizes its type; ``parses``: the members of each
    ``parse`` (and ``alone``) call."""
    flags = ["-x", "c++", "-std=c++17", f"-I{HEADER.parent}"]

    def parse(text: str, members: list) -> ProbeUnit:
        parses.append([t for _, t in members])
        return ProbeUnit(text, flags, HEADER.parent)

    def read(unit: ProbeUnit, subject, k: int) -> LayoutReport:
        size = ProbeUnit.int_alias(unit.aliases(f"cl_probe_{k}")["Bytes"])
        return LayoutReport(config={"type": subject[1], "bytes": size}, provenance=PROV)

    return Batch(
        head=f"#include <{HEADER.name}>\n",
        parse=parse,
        block=lambda s, k, _budget: (
            f"namespace cl_probe_{k} {{\nusing T = {s[1]};\nusing Bytes = char[sizeof(T)];\n}}\n",
            "",
        ),
        read=read,
        failed=lambda s, err: LayoutReport(config={"type": s[1]}, provenance=PROV, error=err),
        kin=lambda s: s[0],
        alone=parse if alone else None,
    )


def _error(rep: LayoutReport) -> tuple | None:
    e = rep.error
    return None if e is None else (e.kind, e.message, e.file, e.line)


def test_each_failing_subject_gets_its_own_static_assert_in_two_parses():
    """Three class templates fail on three static_asserts (failing_asserts.hpp lines 6, 11,
    16), kin to none of the others; Fine<4> shares nothing with them. One parse settles the
    three (each static_assert is the first error in its own instantiation), one more lays out
    Fine<4> (numbers only from a unit without errors): int x[4], 4 x 4 = 16 bytes."""
    subjects = [("even", "NeedsEven<3>"), ("small", "NeedsSmall<200>"), ("odd", "NeedsOdd<4>"), ("fine", "Fine<4>")]
    parses: list = []
    reps = lay_out(_batch(parses), subjects)
    assert len(parses) <= 2 and parses == [[t for _, t in subjects], ["Fine<4>"]]
    name = HEADER.name
    assert [_error(r) for r in reps[:3]] == [
        ("static_assert", "N must be even", name, 6),
        ("static_assert", "N must be below 100", name, 11),
        ("static_assert", "N must be odd", name, 16),
    ]
    assert reps[3].error is None and reps[3].config["bytes"] == 16
    for s, r in zip(subjects[:3], reps):  # each the error it gets alone
        assert _error(lay_out(_batch([]), [s])[0]) == _error(r)


def test_a_failure_clang_reports_once_is_found_alone():
    """Uses<3, 1> and Uses<3, 7> both call checked<3>(), which fails (line 27); clang reports
    that once, for the first, so beside it Uses<3, 7> shows only its own static_assert (line
    33), not its first error. The two are kin (the same N): the second is parsed alone
    (``Batch.alone``), where checked<3>() fails first (its return type, deduced from its body,
    is the class's first member)."""
    first, second = ("n3", "Uses<3, 1>"), ("n3", "Uses<3, 7>")
    name = HEADER.name
    parses: list = []
    together = ProbeUnit(
        f"#include <{name}>\nusing A = char[sizeof({first[1]})];\nusing B = char[sizeof({second[1]})];\n",
        ["-x", "c++", "-std=c++17", f"-I{HEADER.parent}"],
        HEADER.parent,
    ).errors()
    assert [(e.message, e.line) for e in together] == [("N must not be 3", 27), ("M must not be 7", 33)]
    reps = lay_out(_batch(parses, alone=True), [first, second])
    assert parses == [["Uses<3, 1>", "Uses<3, 7>"], ["Uses<3, 7>"]]
    assert [_error(r) for r in reps] == [("static_assert", "N must not be 3", name, 27)] * 2
