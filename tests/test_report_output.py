"""Reports for a PR (issue 43, item 8): titles name the install by distribution and version,
never a local path; no line of a text report ends in a space; a terminal too narrow for a
table leaves its low-value columns out (and says which), ``--wide`` and a pipe keep them all.

Offline: the mini flashinfer of tests/test_audit.py, copied to ``tmp_path/site-packages`` (the
``mini`` fixture). Its version, by hand: ``flashinfer/_build_meta.py`` says ``__version__ =
"0.0.1+mini"``; its CUTLASS's ``cutlass/version.h`` defines MAJOR 9, MINOR 8, PATCH 7.
"""

from __future__ import annotations

import io
import pytest

from rich.console import Console
from test_shard import mini_library_laid_out  # noqa: F401, F811 (a fixture)

from cutlass_layout.cli import main
from cutlass_layout.reports.common import Column, origin_words, print_table, rich_table, source_name

INSTALL = "flashinfer-python 0.0.1+mini"
CUTLASS = "CUTLASS 9.8.7"


def _out(capsys, args: list[str], code: int = 0) -> str:
    assert main(args) == code
    return capsys.readouterr().out


@pytest.mark.mini_shared
def test_titles_name_the_install_not_its_path(mini, tmp_path, capsys):
    md = _out(capsys, ["audit", str(mini), "--format", "markdown"])
    assert md.splitlines()[0] == f"#### Audit: {INSTALL} ({CUTLASS}), sm120"
    gh = _out(capsys, ["audit", str(mini), "--format", "github"])
    assert gh.splitlines()[-1].startswith(f"cutlass-layout: {INSTALL} (a directory), sm120: ")
    text = _out(capsys, ["audit", str(mini)])
    assert text.splitlines()[0] == f"{INSTALL} (a directory)"
    # no head line holds the path but the text's CUTLASS line ("CUTLASS 9.8.7 at PATH": the tree
    # read, for the terminal's user); the JSON keeps it (provenance.root)
    for head in (md.splitlines()[:3], gh.splitlines()[-1:], text.splitlines()[:1]):
        assert not [ln for ln in head if str(tmp_path) in ln]
    assert text.splitlines()[1].startswith(f"{CUTLASS} at {mini}")
    # a tactic's layout read from the same folder: a CUTLASS tree with no distribution named
    lay = _out(capsys, ["layout", "--cutlass", str(mini), "--tactic", "CtaShape256x128x32B", "--format", "markdown"])
    assert lay.splitlines()[2].startswith(f"{CUTLASS}, tree `") and str(tmp_path) not in lay


def test_source_name_and_origin_words():
    assert (
        source_name("directory /home/me/sp", "4.5.0", library="flashinfer-python", version="0.7.4")
        == "flashinfer-python 0.7.4 (CUTLASS 4.5.0)"
    )
    assert (
        source_name("checkout /home/me/fi", "4.1.0", library="flashinfer-python", version="unknown")
        == "flashinfer-python (version unknown) (CUTLASS 4.1.0)"
    )
    # the distribution the user named wins over the library's own name (nvidia-cutlass's cutlass_library)
    assert (
        source_name(
            "nvidia-cutlass==4.2.0.0 (wheel nvidia_cutlass-4.2.0.0-py3-none-any.whl, cached)",
            "4.2.0",
            library="CUTLASS's kernel library",
            version="4.2.0",
        )
        == "nvidia-cutlass 4.2.0.0 (CUTLASS 4.2.0)"
    )
    assert origin_words("directory /home/me/sp") == "a directory"
    assert origin_words("checkout /home/me/fi") == "a git checkout"
    assert (
        origin_words("wheel /tmp/w/flashinfer_python-0.6.8-py3-none-any.whl")
        == "wheel flashinfer_python-0.6.8-py3-none-any.whl"
    )
    assert origin_words("installed flashinfer-python 0.7.4") == "installed flashinfer-python 0.7.4"


def _no_trailing_space(outs: list[str]) -> None:
    for out in outs:
        assert out.strip() and [ln for ln in out.splitlines() if ln.endswith(" ")] == []


@pytest.mark.mini_shared
def test_no_text_line_ends_in_a_space(mini, capsys):
    _no_trailing_space(
        [
            _out(capsys, ["audit", str(mini)]),
            _out(capsys, ["audit", str(mini), "--wide"]),
            _out(capsys, ["layout", "--cutlass", str(mini), "--tactic", "CtaShape256x128x32B"]),
        ]
    )


def test_no_library_audit_line_ends_in_a_space(mini_library_laid_out, capsys):  # noqa: F811
    _no_trailing_space([_out(capsys, ["audit", str(mini_library_laid_out)])])


_COLUMNS = [
    Column("verdict"),
    Column("name", wrap=True),
    Column("kernel", right=True),
    Column("mainloop", right=True, drop=5),
    Column("epilogue", right=True, drop=5),
    Column("fix", drop=4),
    Column("tried"),
]
_ROWS = [
    [
        "over capacity",
        "CtaShape128x128x512B_ClusterShape_1x1x1_COOPERATIVE",
        "366592",
        "332800",
        "34816",
        "none: 2 st is the fewest",
        "no",
    ]
]


def _printed(width: int, terminal: bool) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=terminal, color_system=None, highlight=False)
    print_table(con, rich_table(_COLUMNS, _ROWS))
    return buf.getvalue()


def test_a_narrow_terminal_leaves_low_value_columns_out():
    # by hand: each column takes its widest cell, 3 more between two (padding, rule, padding),
    # 1 before the first (the one after the last is a trailing space, left out): verdict 13,
    # kernel 6, mainloop 8, epilogue 8, fix 24, tried 5 and the name 51: 115 + 6 * 3 + 1 = 134
    whole = _printed(200, True)
    assert max(map(len, whole.splitlines())) == 134 and "left out" not in whole
    # 80 columns: the name kept at 20 (WRAP_KEEP), mainloop and epilogue (drop 5) out: 13 + 20 + 6
    # + 24 + 5 + 4 * 3 + 1 = 81 > 80, so fix (drop 4) too; the name then folds into what is left
    out = _printed(80, True)
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[-1] == "(left out to fit 80 columns: mainloop, epilogue, fix; --wide shows all)"
    assert "366592" in out and "332800" not in out and "none: 2 st" not in out
    # 30 columns: nothing fits; the narrowest table, not the whole one: mainloop, epilogue and fix
    # out, the name folded to its least (10): 13 + 10 + 6 + 5 + 3 * 3 + 1 = 44, and the line says so
    tiny = _printed(30, True).splitlines()
    assert max(map(len, tiny[:-1])) == 44 and "366592" in "".join(tiny)
    assert tiny[-1] == "(left out, and still wider than 30 columns: mainloop, epilogue, fix; --wide shows all)"
    # not a terminal (a pipe, a file): every column, the lines whole
    assert _printed(80, False) == whole
    for text in (whole, out):
        assert [ln for ln in text.splitlines() if ln.endswith(" ")] == []
