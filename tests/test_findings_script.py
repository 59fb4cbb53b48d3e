"""scripts/findings.py's page builder on a tiny fake result (offline): the script that writes
docs/findings.md from real runs cannot rot unnoticed. The fake tactics carry what an audit's
tactics do (family, id, verdict, kernel bytes, stages, capacity, first error); the figures the
page must show are counted here from them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "findings.py"


@pytest.fixture(scope="module")
def findings():
    spec = importlib.util.spec_from_file_location("findings_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


class _Error:
    def __init__(self, text: str):
        self.text = text

    def one_line(self) -> str:
        return f"does not compile: {self.text}"


def _t(family, id, verdict, kernel_bytes=None, stages=None, capacity=101376, error=None):
    return SimpleNamespace(
        family=family,
        id=id,
        verdict=verdict,
        kernel_bytes=kernel_bytes,
        stages=stages,
        capacity_bytes=capacity,
        headroom_bytes=None if kernel_bytes is None else capacity - kernel_bytes,
        error=None if error is None else _Error(error),
    )


ASSERT = "static_assert failed: EPI_TILE_N must divide CTA_N (collective_builder.hpp:10)"
AUDIT = SimpleNamespace(
    arch="sm120",
    tactics=[
        _t("moe", "moe/a", "fits", 90000, 4),
        _t("moe", "moe/b", "exact_fit", 101376, 5),
        _t("moe", "moe/c", "over_capacity", 102400, 5),
        _t("lib", "k_n8_1", "does_not_compile", error=ASSERT),
        _t("lib", "k_n8_2", "does_not_compile", error=ASSERT),
        _t("lib", "k_other", "does_not_compile", error="error: no type named 'x' (a.hpp:3)"),
    ],
)


def test_the_page_from_a_fake_audit_and_gate(findings):
    block = findings.summarize_audit(AUDIT)
    assert [(f.family, f.kernels, f.laid_out, f.does_not_compile) for f in block.families] == [
        ("lib", 3, 0, 3),
        ("moe", 3, 3, 0),
    ]
    assert [(g.error, g.count, g.example) for g in block.errors] == [
        (ASSERT, 2, "k_n8_1"),
        ("error: no type named 'x' (a.hpp:3)", 1, "k_other"),
    ]
    gate = findings.GateBlock(
        counts=dict(
            paired=1,
            only_old=0,
            only_new=5,
            newly_over_capacity=1,
            newly_not_compiling=3,
            stage_changes=0,
            byte_changes=1,
        ),
        newly_over=block.over,
        newly_broken=block.errors,
        changes=["moe/a: 89000 B, 4 stages -> 90000 B, 4 stages (fits)"],
    )
    text = findings.page({"flashinfer": [block], "cutlass420": [block], "cutlass470": None, "gate": gate})
    assert "| sm120 | moe | 3 | 1 | 1 | 1 | 0 |" in text and "| sm120 | lib | 3 | 0 | 0 | 0 | 3 |" in text
    assert "- sm120: 6 kernels, 3 laid out (1 fit, 1 exact fits, 1 over capacity), 3 do not compile" in text
    assert "- moe: `moe/c`: 102400 B, 5 stages, 1024 B over the 101376 B capacity" in text
    assert f"- lib: 2 x `{ASSERT}` (e.g. `k_n8_1`)" in text
    assert (
        "## flashinfer-python 0.7.4, every arch" in text
        and "cutlass-layout audit flashinfer-python==0.7.4 --arch all" in text
    )
    assert "## CUTLASS 4.7.0 checkout (v4.7.0): its kernel library, SM120" in text
    assert text.count("Not run: scripts/findings.py was given no CUTLASS 4.7.0 checkout") == 1  # the audit's
    assert (
        "`gate: 1 paired, 5 only on one side (0 old, 5 new), 1 newly over capacity, 3 newly not compiling, "
        "0 stage changes, 1 byte changes`"
    ) in text
    assert "- `moe/a: 89000 B, 4 stages -> 90000 B, 4 stages (fits)`" in text
    assert "/tmp" not in text and "cutlass-layout diff nvidia-cutlass==4.2.0.0 git+https://github.com" in text
    # the hand-written notes follow, with the anchor the FAQ links
    assert '## The "Error Internal" tiles of flashinfer 0.7.2.post1' in text
    none = findings.page({"flashinfer": [block], "cutlass420": [block], "cutlass470": None, "gate": None})
    assert none.count("Not run: scripts/findings.py was given no CUTLASS 4.7.0 checkout") == 2


def test_a_page_of_some_flashinfer_arches_says_which(findings):
    block = findings.summarize_audit(AUDIT)
    text = findings.page(
        {
            "flashinfer": [block],
            "flashinfer_archs": "--arch sm90 --arch sm120",
            "cutlass420": [block],
            "cutlass470": None,
            "gate": None,
        }
    )
    assert "## flashinfer-python 0.7.4, sm90, sm120\n" in text
    assert "cutlass-layout audit flashinfer-python==0.7.4 --arch sm90 --arch sm120\n" in text
