"""--header/--type: a user's own kernel with a non-default epilogue, checked against nvcc."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutlass_layout import BadInput, UserType, layouts
from cutlass_layout.checks.verify import verify_with_nvcc
from cutlass_layout.cli import main

HEADER = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "user_kernel.hpp"

pytestmark = pytest.mark.network


def test_user_kernel_and_collectives_match_nvcc(nc420, nvcc):
    subjects = [
        UserType(HEADER, "my_project::ReluGemm", "sm90"),
        UserType(HEADER, "my_project::Mainloop", "sm90"),
        UserType(HEADER, "my_project::ReluEpilogue", "sm90"),
    ]
    kernel, mainloop, epilogue = reps = layouts(subjects, nc420)
    assert all(r.error is None for r in reps)
    # the kernel has all three parts; a collective alone has only its own
    assert kernel.kernel and kernel.mainloop and kernel.epilogue
    assert mainloop.kernel is None and mainloop.epilogue is None and mainloop.mainloop
    assert epilogue.kernel is None and epilogue.mainloop is None and epilogue.epilogue
    assert kernel.stages == 5 and mainloop.stages == 5 and epilogue.stages is None
    assert mainloop.mainloop.size == kernel.mainloop.size
    # the pingpong kernel has the math warp-group order barrier
    assert kernel.kernel.find("pipelines.math_wg_order").size > 0
    v = verify_with_nvcc(subjects, reps, nc420.tree.include_root, nvcc=nvcc)
    assert v.agree, v.mismatches
    assert v.fields > 40


def test_cli_header_type_json(nc420, capsys):
    code = main(
        [
            "layout",
            "--cutlass",
            str(nc420.tree.include_root),
            "--arch",
            "sm90",
            "--header",
            str(HEADER),
            "--type",
            "my_project::ReluGemm",
            "--json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["config"] == {"header": str(HEADER), "type": "my_project::ReluGemm", "arch": "sm90"}
    assert doc["capacity_bytes"] == 232448 and doc["stages"] == 5


def test_unknown_type_does_not_compile(nc420, capsys):
    code = main(
        [
            "layout",
            "--cutlass",
            str(nc420.tree.include_root),
            "--arch",
            "sm90",
            "--header",
            str(HEADER),
            "--type",
            "my_project::NoSuchKernel",
        ]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert "NoSuchKernel" in out


def test_bad_user_input(tmp_path, capsys):
    assert main(["layout", "--header", str(tmp_path / "nope.hpp"), "--type", "a::B"]) == 2
    assert "header not found" in capsys.readouterr().err
    assert main(["layout", "--header", str(HEADER)]) == 2
    assert "go together" in capsys.readouterr().err
    with pytest.raises(BadInput):
        UserType(HEADER, "1bad name", "sm90")
