"""Tests of ``cutlass-layout scan`` (cutlass_layout.commands.scan, cpp/treesitter).

Expected values were read by hand from the headers (sed -n on the unpacked wheels), not
copied from the tool's output. Tests marked ``network`` fetch flashinfer-python 0.7.2.post1
and nvidia-cutlass 4.2.0.0 once into the user cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutlass_layout.cli import main, run_scan_cli
from cutlass_layout.commands.scan import SCHEMA, Struct, scan, to_json
from cutlass_layout.errors import BadInput
from cutlass_layout.reports.scan import render_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "headers" / "scan"

SM120_ARRAY = "cutlass/gemm/collective/sm120_blockscaled_mma_array_tma.hpp"
SM90_ARRAY_COOP = "cutlass/gemm/kernel/sm90_gemm_array_tma_warpspecialized_cooperative.hpp"
SM90_EPILOGUE = "cutlass/epilogue/collective/sm90_epilogue_tma_warpspecialized.hpp"

# Initializers of the three TMA transaction-byte constants of the SM120 block-scaled grouped
# mainloop, whitespace collapsed (same text in 4.2.0 and in flashinfer's 4.5 tree).
TMA_MK = (
    "static_cast<uint32_t>(cutlass::bits_to_bytes(cosize(take<0,2>(SmemLayoutSFA{})) * "
    "cute::sizeof_bits_v<ElementSF>) + cutlass::bits_to_bytes(size(take<0,2>(SmemLayoutA{})) * "
    "sizeof_bits<ElementA>::value))"
)
TMA_NK = (
    "static_cast<uint32_t>(cutlass::bits_to_bytes(cosize(take<0,2>(SmemLayoutSFB{})) * "
    "cute::sizeof_bits_v<ElementSF>) + cutlass::bits_to_bytes(size(take<0,2>(SmemLayoutB{})) * "
    "sizeof_bits<ElementB>::value))"
)
TMA_SUM = "TmaTransactionBytesMK + TmaTransactionBytesNK"


# ------------------------------------------------------------------------------------------
# fixtures: real trees (downloaded once into the user cache dir)


@pytest.fixture(scope="session")
def fi_tree():
    from cutlass_layout.sources.trees import resolve_cutlass

    return resolve_cutlass("flashinfer-python==0.7.2.post1")


@pytest.fixture(scope="session")
def c42_tree():
    from cutlass_layout.sources.trees import resolve_cutlass

    return resolve_cutlass("nvidia-cutlass==4.2.0.0")


@pytest.fixture(scope="session")
def fi_scan(fi_tree):
    return scan(fi_tree.include_root)


@pytest.fixture(scope="session")
def c42_scan():
    # goes through resolve_cutlass("name==version") inside scan()
    return scan("nvidia-cutlass==4.2.0.0")


def _struct(result, file, qualified_name) -> Struct:
    found = [s for top in result.structs for s in top.walk() if s.file == file and s.qualified_name == qualified_name]
    assert len(found) == 1, (file, qualified_name, [s.qualified_name for s in result.structs if s.file == file])
    return found[0]


def _fields(s: Struct) -> list[tuple]:
    return [(f.name, f.alignas, f.extent, f.line) for f in s.fields]


def _const(result, file, name):
    found = [c for c in result.constants if c.file == file and c.name == name]
    assert len(found) == 1, (file, name)
    return found[0]


# ------------------------------------------------------------------------------------------
# real CUTLASS headers

# (result fixture, SharedStorage line, first line of the TensorStorage fields, alignas of
#  smem_SFA/SFB, line of the first TmaTransactionBytes constant). flashinfer 0.7.2.post1
#  carries alignas(16) on SFA/SFB; nvidia-cutlass 4.2.0 has none.
SM120_CASES = {
    "flashinfer-0.7.2.post1": ("fi_scan", 269, 271, "16", 259),
    "cutlass-4.2.0": ("c42_scan", 258, 260, None, 248),
}


@pytest.mark.network
@pytest.mark.parametrize("case", sorted(SM120_CASES))
def test_sm120_blockscaled_grouped_mainloop(case, request):
    fixture, ss_line, a_line, sf_align, mk_line = SM120_CASES[case]
    result = request.getfixturevalue(fixture)
    qn = "cutlass::gemm::collective::CollectiveMma::SharedStorage"
    ss = _struct(result, SM120_ARRAY, qn)
    assert ss.line == ss_line and ss.kind == "struct" and not ss.cut
    assert ss.enclosing[-1].name == "CollectiveMma"
    assert ss.enclosing[-1].template_args.startswith("<MainloopSm120ArrayTmaWarpSpecializedBlockScaled<")

    ts = _struct(result, SM120_ARRAY, qn + "::TensorStorage")
    assert ts.bases == ["cute::aligned_struct<128, _0>"]
    assert ts.line == ss_line + 1
    assert _fields(ts) == [
        ("smem_A", "1024", None, a_line),
        ("smem_B", "1024", None, a_line + 1),
        ("smem_SFA", sf_align, None, a_line + 2),
        ("smem_SFB", sf_align, None, a_line + 3),
    ]
    assert ts.fields[0].type == "cute::ArrayEngine<SmemAllocTypeA, cute::cosize_v<SmemLayoutA>>"
    assert ts.fields[2].type == "cute::ArrayEngine<ElementSF, cute::cosize_v<SmemLayoutSFA>>"

    tm = _struct(result, SM120_ARRAY, qn + "::TensorMapStorage")
    assert tm.bases == ["cute::aligned_struct<128, _0>"]
    assert [(f.name, f.type, f.alignas) for f in tm.fields] == [
        ("smem_tensormap_A", "cute::TmaDescriptor", None),
        ("smem_tensormap_B", "cute::TmaDescriptor", None),
        ("smem_tensormap_SFA", "cute::TmaDescriptor", None),
        ("smem_tensormap_SFB", "cute::TmaDescriptor", None),
    ]

    assert [(f.name, f.type, f.alignas) for f in ss.fields] == [
        ("tensors", "TensorStorage", None),
        ("tensormaps", "TensorMapStorage", None),
        ("pipeline_storage", "PipelineStorage", "16"),
    ]
    assert [(a.name, a.type) for a in ss.aliases] == [("PipelineStorage", "typename MainloopPipeline::SharedStorage")]

    mk = _const(result, SM120_ARRAY, "TmaTransactionBytesMK")
    nk = _const(result, SM120_ARRAY, "TmaTransactionBytesNK")
    tot = _const(result, SM120_ARRAY, "TmaTransactionBytes")
    assert (mk.line, nk.line, tot.line) == (mk_line, mk_line + 4, mk_line + 8)
    assert (mk.expression, nk.expression, tot.expression) == (TMA_MK, TMA_NK, TMA_SUM)
    assert mk.value is None and tot.value is None
    assert tot.qualified_name == "cutlass::gemm::collective::CollectiveMma::TmaTransactionBytes"
    assert tot.type == "uint32_t"


# (fixture, SharedStorage line) of GemmUniversal's SharedStorage in the SM90 grouped
# (array) cooperative kernel, and the line of its TileSchedulerStages.
SM90_KERNEL_CASES = {"flashinfer-0.7.2.post1": ("fi_scan", 197, 161), "cutlass-4.2.0": ("c42_scan", 178, 160)}


@pytest.mark.network
@pytest.mark.parametrize("case", sorted(SM90_KERNEL_CASES))
def test_sm90_grouped_cooperative_kernel_storage(case, request):
    fixture, line, stages_line = SM90_KERNEL_CASES[case]
    result = request.getfixturevalue(fixture)
    qn = "cutlass::gemm::kernel::GemmUniversal::SharedStorage"
    ss = _struct(result, SM90_ARRAY_COOP, qn)
    assert ss.line == line
    assert ss.enclosing[-1].kind == "class"
    assert [(f.name, f.type, f.alignas, f.extent) for f in ss.fields] == [
        ("tensors", "TensorStorage", None, None),
        ("pipelines", "PipelineStorage", None, None),
        ("scheduler_response", "TileSchedulerResponse", "16", "TileSchedulerStages"),
        ("tensormaps", "TensorMapStorage", None, None),
    ]
    assert [f.line for f in ss.fields] == [line + 7, line + 18, line + 20, line + 28]

    ts = _struct(result, SM90_ARRAY_COOP, qn + "::TensorStorage")
    assert ts.bases == ["cute::aligned_struct<128, _1>"]
    assert [(f.name, f.type) for f in ts.fields] == [
        ("mainloop", "MainloopTensorStorage"),
        ("epilogue", "EpilogueTensorStorage"),
    ]
    assert ("MainloopTensorStorage", "typename CollectiveMainloop::TensorStorage") in [
        (a.name, a.type) for a in ts.aliases
    ]

    ps = _struct(result, SM90_ARRAY_COOP, qn + "::PipelineStorage")
    assert ps.bases == ["cute::aligned_struct<16, _1>"]
    assert [(f.name, f.type, f.alignas) for f in ps.fields] == [
        ("scheduler", "TileSchedulerPipelineStorage", "16"),
        ("mainloop", "MainloopPipelineStorage", "16"),
        ("epi_load", "EpiLoadPipelineStorage", "16"),
        ("load_order", "typename LoadWarpOrderBarrier::SharedStorage", "16"),
    ]

    tm = _struct(result, SM90_ARRAY_COOP, qn + "::TensorMapStorage")
    assert tm.bases == ["cute::aligned_struct<128, _1>"]
    assert [(f.name, f.alignas) for f in tm.fields] == [("mainloop", "128"), ("epilogue", "128")]

    stages = _const(result, SM90_ARRAY_COOP, "TileSchedulerStages")
    assert (stages.expression, stages.value, stages.line) == ("8", 8, stages_line)


@pytest.mark.network
@pytest.mark.parametrize("fixture", ["fi_scan", "c42_scan"])
def test_sm90_tma_epilogue_storage(fixture, request):
    result = request.getfixturevalue(fixture)
    scope = "cutlass::epilogue::collective::CollectiveEpilogue"
    with_c = _struct(result, SM90_EPILOGUE, scope + "::CollectiveStorageWithC")
    assert (with_c.kind, with_c.line) == ("struct", 189)
    assert [(f.name, f.alignas) for f in with_c.fields] == [("smem_C", "SmemAlignmentC"), ("smem_D", "SmemAlignmentD")]
    without_c = _struct(result, SM90_EPILOGUE, scope + "::CollectiveStorageWithoutC")
    assert without_c.kind == "union"
    assert [(f.name, f.type, f.alignas) for f in without_c.fields] == [
        ("smem_C", "cute::array<SmemElementC, 0>", None),
        ("smem_D", "ArrayEngine<SmemElementD, cosize_v<SmemLayoutD>>", "SmemAlignmentD"),
    ]
    reuse = _struct(result, SM90_EPILOGUE, scope + "::CollectiveStorageReuseC")
    assert reuse.kind == "union"
    assert [f.alignas for f in reuse.fields] == ["MaxSmemAlignment", "MaxSmemAlignment"]

    ss = _struct(result, SM90_EPILOGUE, scope + "::SharedStorage")
    assert ss.line == 218
    assert [(f.name, f.type, f.line) for f in ss.fields] == [
        ("tensors", "TensorStorage", 226),
        ("pipeline", "PipelineStorage", 229),
    ]
    ts = _struct(result, SM90_EPILOGUE, scope + "::SharedStorage::TensorStorage")
    assert [(f.name, f.type) for f in ts.fields] == [("collective", "CollectiveStorage"), ("thread", "FusionStorage")]

    tma = _const(result, SM90_EPILOGUE, "TmaTransactionBytes")
    assert tma.line == 208
    assert tma.expression == (
        "(size(take<0,2>(SmemLayoutC{})) * static_cast<uint32_t>(sizeof_bits<SmemElementC>::value)) / 8"
    )


@pytest.mark.network
@pytest.mark.parametrize("fixture", ["fi_scan", "c42_scan"])
def test_capacity_constants(fixture, request):
    result = request.getfixturevalue(fixture)
    sm120 = _const(result, "cutlass/arch/arch.h", "sm120_smem_capacity_bytes")
    sm100 = _const(result, "cutlass/arch/arch.h", "sm100_smem_capacity_bytes")
    sm90 = _const(result, "cutlass/gemm/collective/builders/sm90_common.inl", "sm90_smem_capacity_bytes")
    assert (sm120.value, sm120.expression, sm120.line) == (101376, "101376", 45)
    assert (sm100.value, sm100.line) == (232448, 44)
    assert sm100.qualified_name == "cutlass::arch::sm100_smem_capacity_bytes"
    assert (sm90.value, sm90.line) == (232448, 57)
    assert sm90.qualified_name == "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes"
    # an alias of another constant has an expression but no literal value
    alias = _const(result, "cutlass/gemm/collective/builders/sm100_common.inl", "sm100_smem_capacity_bytes")
    assert (alias.expression, alias.value) == ("cutlass::arch::sm100_smem_capacity_bytes", None)


@pytest.mark.network
def test_no_parse_errors_inside_storage_structs(fi_scan):
    assert fi_scan.files_scanned > 800
    assert len(fi_scan.structs) > 200
    assert fi_scan.diagnostics == []
    assert not any(s.cut for top in fi_scan.structs for s in top.walk())


@pytest.mark.network
def test_blanking_is_what_removes_the_errors(fi_tree, monkeypatch):
    """Negative control: without macro blanking the detector does report errors."""
    from cutlass_layout.cpp import treesitter

    rel = "cutlass/gemm/threadblock/mma_sparse_base.h"  # CUTLASS_DEVICE members in SharedStorage
    assert scan(fi_tree.include_root / rel).diagnostics == []
    monkeypatch.setattr(treesitter, "blank_macros", lambda src: src)
    diags = scan(fi_tree.include_root / rel).diagnostics
    assert diags and all("parse error inside class" in d.message for d in diags)


@pytest.mark.network
def test_cut_off_excerpt(fi_tree, tmp_path, capsys):
    """Lines 255-272 of the SM120 grouped block-scaled mainloop stop after smem_B."""
    lines = (fi_tree.include_root / SM120_ARRAY).read_text().splitlines(keepends=True)
    excerpt = lines[254:272]
    assert excerpt[0].strip().startswith("using SmemAllocTypeA =")
    assert excerpt[4].strip().startswith("static constexpr uint32_t TmaTransactionBytesMK =")
    assert excerpt[14].strip() == "struct SharedStorage {"
    assert excerpt[15].strip() == "struct TensorStorage : cute::aligned_struct<128, _0> {"
    assert excerpt[17].strip().endswith("smem_B;")
    path = tmp_path / "sm120_excerpt.hpp"
    path.write_text("".join(excerpt))

    result = scan(path)
    consts = {c.name: c for c in result.constants}
    assert sorted(consts) == ["TmaTransactionBytes", "TmaTransactionBytesMK", "TmaTransactionBytesNK"]
    assert consts["TmaTransactionBytesMK"].expression == TMA_MK
    assert consts["TmaTransactionBytesNK"].expression == TMA_NK
    assert consts["TmaTransactionBytes"].expression == TMA_SUM
    assert [c.line for c in result.constants] == [5, 9, 13]

    (ss,) = result.structs
    assert (ss.qualified_name, ss.line, ss.cut) == ("SharedStorage", 15, True)
    (ts,) = ss.children
    assert (ts.name, ts.line, ts.cut, ts.end_line) == ("TensorStorage", 16, True, 18)
    assert [(f.name, f.alignas, f.line) for f in ts.fields] == [("smem_A", "1024", 17), ("smem_B", "1024", 18)]
    (diag,) = result.diagnostics
    assert diag.line == 18 and diag.line + 254 == 272  # excerpt line 18 is file line 272
    assert "cut" in diag.message and "SharedStorage::TensorStorage" in diag.message

    assert run_scan_cli(str(path), json_out=True, grep=None, file_only=False) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["structs"][0]["children"][0]["cut"] is True


# ------------------------------------------------------------------------------------------
# hand-written headers


def test_demo_header_fields_conditions_and_constants():
    result = scan(FIXTURES / "storage_demo.hpp")
    assert result.diagnostics == []
    ss = _struct(result, "storage_demo.hpp", "demo::Mainloop::SharedStorage")
    ts = ss.children[0]
    assert ts.qualified_name == "demo::Mainloop::SharedStorage::TensorStorage"
    assert [(f.name, f.type, f.alignas, f.extent, f.condition) for f in ts.fields] == [
        ("smem_A", "Element", "1024", "Stages][64", None),
        ("smem_scale", "float", "16", "8", None),  # CUTE_ALIGNAS(16)
        ("with_flag", "int", None, None, "defined(DEMO_FLAG) && DEMO_FLAG > 0"),
        ("with_other", "short", None, None, "!(defined(DEMO_FLAG) && DEMO_FLAG > 0) && DEMO_OTHER"),
        ("without", "char", None, None, "!(defined(DEMO_FLAG) && DEMO_FLAG > 0) && !(DEMO_OTHER)"),
        ("extra", "double", None, None, "!defined(DEMO_NO_EXTRA)"),
    ]
    assert [f.line for f in ts.fields] == [27, 28, 30, 32, 34, 37]
    union = ss.children[1]
    assert (union.kind, union.name, [f.name for f in union.fields]) == ("union", "", ["as_int", "as_float"])
    # member functions (behind CUTLASS_DEVICE) are not fields
    assert [(f.name, f.type, f.alignas) for f in ss.fields] == [
        ("tensors", "TensorStorage", None),
        ("scratch", "union (anonymous)", None),
        ("pipeline", "PipelineStorage", "16"),
    ]
    empty = _struct(result, "storage_demo.hpp", "demo::EmptyStorage")
    assert (empty.alignas, empty.fields) == ("32", [])

    consts = {c.name: (c.line, c.expression, c.value) for c in result.constants}
    assert consts == {
        "demo_smem_capacity_bytes": (8, "48 * 1024 + 512", 49664),
        "DemoSmemCapacityHalf": (9, "demo_smem_capacity_bytes / 2", None),
        "Stages": (13, "Stages_", None),
        "TmaTransactionBytesA": (14, "128 * 64 * 2", 16384),
        "TmaTransactionBytes": (15, "TmaTransactionBytesA + 0x100", None),
    }  # LocalStages (inside a function) is not reported


def test_truncated_struct(capsys):
    path = FIXTURES / "truncated_struct.hpp"
    result = scan(path)
    (ss,) = result.structs
    assert (ss.qualified_name, ss.cut) == ("demo::SharedStorage", True)
    tensors, pipes = ss.children
    assert (tensors.cut, [f.name for f in tensors.fields]) == (False, ["smem_A"])
    assert (pipes.name, pipes.cut, pipes.end_line) == ("PipelineStorage", True, 13)
    assert [(f.name, f.alignas, f.extent) for f in pipes.fields] == [
        ("full_barrier", "8", "Stages"),
        ("empty_barrier", "8", "Stages"),
    ]
    (d,) = result.diagnostics
    assert d.line == 13 and "demo::SharedStorage::PipelineStorage" in d.message
    assert run_scan_cli(str(path), json_out=False, grep=None, file_only=False) == 0
    out, err = capsys.readouterr()
    assert "CUT" in out and err == ""


def test_unbalanced_braces():
    result = scan(FIXTURES / "unbalanced_braces.hpp")
    assert [s.name for s in result.structs] == ["TensorStorage", "PipelineStorage"]
    assert [(f.name, f.alignas) for f in result.structs[0].fields] == [("smem_A", "256"), ("smem_B", None)]
    (d,) = result.diagnostics
    assert d.line == 14 and "unmatched '}'" in d.message


def test_missing_brace():
    result = scan(FIXTURES / "missing_brace.hpp")
    names = [s.name for top in result.structs for s in top.walk()]
    assert "TensorStorage" in names and "PipelineStorage" in names
    (d,) = result.diagnostics
    assert "never closed" in d.message and "line 2" in d.message


def _bad(capsys, path) -> str:
    assert run_scan_cli(str(path), json_out=False, grep=None, file_only=False) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(BadInput):
        scan(path)
    return err


def test_bad_inputs_one_line_exit_2(capsys, tmp_path):
    assert "empty file" in _bad(capsys, FIXTURES / "empty.hpp")
    binary = tmp_path / "blob.hpp"
    binary.write_bytes(b"struct SharedStorage {\0\1\2\3")
    assert "binary file" in _bad(capsys, binary)
    latin1 = tmp_path / "latin1.hpp"
    latin1.write_bytes("// caf\u00e9\nstruct SharedStorage { int a; };\n".encode("latin-1"))
    assert "not UTF-8" in _bad(capsys, latin1) and "line 1" in _bad(capsys, latin1)
    assert "does not exist" in _bad(capsys, tmp_path / "nope" / "missing.hpp")
    assert "does not exist" in _bad(capsys, tmp_path / "missing.hpp")
    no_headers = tmp_path / "docs"
    no_headers.mkdir()
    (no_headers / "notes.txt").write_text("struct SharedStorage {};\n")
    assert "no headers" in _bad(capsys, no_headers)


def test_directory_with_broken_headers_exits_0(tmp_path, capsys):
    for name in ("truncated_struct.hpp", "unbalanced_braces.hpp", "empty.hpp"):
        (tmp_path / name).write_bytes((FIXTURES / name).read_bytes())
    (tmp_path / "blob.h").write_bytes(b"struct SharedStorage\0")
    assert run_scan_cli(str(tmp_path), json_out=True, grep=None, file_only=False) == 0
    out = json.loads(capsys.readouterr().out)
    msgs = {(d["file"], d["message"].split(":")[0]) for d in out["diagnostics"]}
    assert ("blob.h", "binary file (NUL byte at offset 20)") in msgs
    assert ("truncated_struct.hpp", "cut") in msgs
    assert out["files_scanned"] == 4


def test_json_schema_keys(capsys):
    assert run_scan_cli(str(FIXTURES / "storage_demo.hpp"), json_out=True, grep=None, file_only=False) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == SCHEMA == "cutlass-layout/scan/1"
    assert {"schema", "root", "structs", "constants", "diagnostics"} <= set(out)
    s = out["structs"][0]
    assert {"name", "qualified_name", "file", "line", "kind", "bases", "cut", "fields", "children"} <= set(s)
    assert set(s["fields"][0]) == {"name", "type", "alignas", "extent", "line", "condition"}
    assert set(out["constants"][0]) >= {"name", "qualified_name", "file", "line", "expression", "value"}
    assert to_json(scan(FIXTURES / "truncated_struct.hpp"))["diagnostics"][0].keys() == {"file", "line", "message"}


def test_grep_and_file_only(capsys):
    result = scan(FIXTURES, grep="PipelineStorage")
    assert sorted({s.file for s in result.structs}) == [
        "missing_brace.hpp",
        "truncated_struct.hpp",
        "unbalanced_braces.hpp",
    ]
    assert result.constants == []
    assert run_scan_cli(str(FIXTURES), json_out=False, grep="demo::Mainloop", file_only=True) == 0
    assert capsys.readouterr().out == "storage_demo.hpp\n"
    assert run_scan_cli(str(FIXTURES), json_out=False, grep="NoSuchStorage", file_only=False) == 0
    out, err = capsys.readouterr()  # a filter that kept nothing says so, naming it
    assert "no storage structs or constants found" in out
    assert err.startswith("note: --grep NoSuchStorage: matched no storage struct")
    text = render_text(scan(FIXTURES / "storage_demo.hpp"))
    assert "alignas(1024) Element smem_A[Stages][64];" in text


def test_single_file_does_not_start_a_pool(monkeypatch):
    from cutlass_layout.core import pool as runner  # the one process pool, which scan uses

    def boom(*a, **k):
        raise AssertionError("process pool started for one file")

    monkeypatch.setattr(runner, "ProcessPoolExecutor", boom)
    assert scan(FIXTURES / "storage_demo.hpp").structs


# ------------------------------------------------------------------------------------------
# an excerpt on stdin, its lines as in the real file


def _stdin(monkeypatch, data: bytes):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def _lines(path: Path, first: int, last: int) -> bytes:
    """``sed -n FIRST,LASTp PATH``."""
    return b"".join(path.read_bytes().splitlines(keepends=True)[first - 1 : last])


def test_stdin_excerpt_with_line_offset(monkeypatch, capsys):
    demo = FIXTURES / "storage_demo.hpp"
    # by hand (grep -n): SharedStorage opens at line 25, TensorStorage at 26, smem_A at 27,
    # the alias PipelineStorage at 46, the struct closes at 50
    _stdin(monkeypatch, _lines(demo, 20, 52))
    assert run_scan_cli("-", json_out=True, line_offset="19") == 0
    doc = json.loads(capsys.readouterr().out)
    (s,) = doc["structs"]
    assert (s["name"], s["line"], s["end_line"], s["file"]) == ("SharedStorage", 25, 50, "<stdin>")
    (tensors,) = [c for c in s["children"] if c["name"] == "TensorStorage"]
    assert tensors["line"] == 26 and tensors["fields"][0]["name"] == "smem_A"
    assert tensors["fields"][0]["line"] == 27
    assert [a["line"] for a in s["aliases"]] == [46]
    # FILE:START names the real file; START is the excerpt's first line
    _stdin(monkeypatch, _lines(demo, 20, 52))
    assert run_scan_cli("-", json_out=True, line_offset="storage_demo.hpp:20") == 0
    (s,) = json.loads(capsys.readouterr().out)["structs"]
    assert (s["line"], s["file"]) == (25, "storage_demo.hpp")


def test_stdin_cut_excerpt_diagnostic_counts_real_lines(monkeypatch, capsys):
    demo = FIXTURES / "storage_demo.hpp"
    _stdin(monkeypatch, _lines(demo, 25, 35))  # stops inside TensorStorage, at line 35
    assert run_scan_cli("-", line_offset="24") == 0
    out = capsys.readouterr().out
    assert "    25  " in out and "CUT: the file ends here" in out
    assert "<stdin>:35: cut: file ends at line 35 inside" in out


def test_line_offset_on_a_file_and_bad_uses(monkeypatch, tmp_path, capsys):
    demo = FIXTURES / "storage_demo.hpp"
    part = tmp_path / "part.hpp"
    part.write_bytes(_lines(demo, 20, 52))
    res = scan(part, line_offset=19)
    assert [(s.name, s.line, s.file) for s in res.structs] == [("SharedStorage", 25, "part.hpp")]
    from cutlass_layout.commands.scan import parse_line_offset

    assert parse_line_offset("249") == (None, 249)
    assert parse_line_offset("x.hpp:250") == ("x.hpp", 249)
    for bad, words in (
        ("abc", "give N"),
        ("x.hpp:0", "between 1"),
        (":5", "needs the file"),
        ("-3", "between 0"),
        ("99999999", "between 0"),
    ):
        with pytest.raises(BadInput, match=words):
            parse_line_offset(bad)
    assert run_scan_cli(str(FIXTURES), line_offset="3") == 2
    assert "one header (or stdin)" in capsys.readouterr().err
    assert run_scan_cli(str(part), line_offset="part.hpp:20") == 2
    assert "for a file give --line-offset N" in capsys.readouterr().err
    _stdin(monkeypatch, b"")
    assert run_scan_cli("-") == 2
    assert "empty" in capsys.readouterr().err
    _stdin(monkeypatch, b"\x00\x01binary")
    assert run_scan_cli("-") == 2
    assert "binary" in capsys.readouterr().err


@pytest.mark.network
def test_sed_excerpt_of_the_real_header_through_the_command(fi_tree):
    """The seed's workflow: ``sed -n 250,300p sm120_blockscaled_mma_array_tma.hpp |
    cutlass-layout scan - --line-offset 249``; SharedStorage is at line 269 of flashinfer
    0.7.2.post1's header (grep -n 'struct SharedStorage')."""
    import subprocess
    import sys

    header = Path(fi_tree.include_root) / SM120_ARRAY
    excerpt = subprocess.run(["sed", "-n", "250,300p", str(header)], capture_output=True, check=True).stdout
    proc = subprocess.run(
        [sys.executable, "-m", "cutlass_layout.cli", "scan", "-", "--line-offset", "249", "--json"],
        input=excerpt,
        capture_output=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    (s,) = [x for x in doc["structs"] if x["name"] == "SharedStorage"]
    assert s["line"] == 269
    assert header.read_text().split("\n")[268].strip() == "struct SharedStorage {"


def test_cutlass_flag_on_a_folder_scans_its_cutlass_tree(tmp_path, capsys):
    """``scan --cutlass SITE`` reads SITE as a CUTLASS source (a site-packages: flashinfer's
    bundled tree, FACTS.md's flashinfer/data/cutlass/include), not every header below it;
    ``scan SITE`` (a folder) still reads them all."""
    inc = tmp_path / "flashinfer" / "data" / "cutlass" / "include"
    (inc / "cutlass").mkdir(parents=True)
    (inc / "cute").mkdir()
    (inc / "cutlass" / "version.h").write_text(
        "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 2\n#define CUTLASS_PATCH 0\n"
    )
    (inc / "cute" / "tensor.hpp").write_text("#pragma once\n")
    (inc / "cutlass" / "kernel.hpp").write_text("struct SharedStorage { float smem[4]; };\n")
    other = tmp_path / "torch" / "include"
    other.mkdir(parents=True)
    (other / "other.h").write_text("struct OtherStorage { int x; };\n")
    assert main(["scan", "--cutlass", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in doc["structs"]] == ["SharedStorage"]
    assert doc["files_scanned"] == 3 and doc["root"] == str(inc)
    assert main(["scan", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(s["name"] for s in doc["structs"]) == ["OtherStorage", "SharedStorage"]
