"""Every arch ``--arch`` takes, and its capacity: the constant the headers being read define
(SM90 ``sm90_common.inl``; SM100, SM101, SM103, SM110 and SM120, SM121 ``cutlass/arch/arch.h``),
or for the CUTLASS 2.x era (SM70 to SM89, no constant in the headers) the documented per-block
opt-in limit, said so. Expected values by hand from the headers' text (``grep`` of each tree)
and from the CUDA C++ Programming Guide's table (compute capability 8.0: 163 KB; 8.6 and 8.9:
99 KB; 7.5: 64 KB; 7.0: 96 KB), which CUTLASS's ``SharedMemPerCC`` repeats."""

from __future__ import annotations

from pathlib import Path

import pytest

from cutlass_layout import BadInput, Config, UserType, layouts
from cutlass_layout.cli import main
from cutlass_layout.subjects.archs import ARCHS, arch, defined_capacities, from_cc

HEADERS = Path(__file__).resolve().parent.parent / "fixtures" / "headers"
TINY = HEADERS / "tiny_storage.hpp"


def test_every_arch_has_a_capacity_source():
    for a in ARCHS.values():
        assert (a.capacity is None) != (a.optin_bytes is None), a.name
        assert a.gpu_arch.startswith("sm_") and from_cc(a.cc) is a
    assert {a.name for a in ARCHS.values() if a.capacity is None} == {
        "sm70",
        "sm72",
        "sm75",
        "sm80",
        "sm86",
        "sm87",
        "sm89",
    }
    assert arch("sm80").optin_bytes == 163 * 1024 == 166912
    assert arch("sm86").optin_bytes == arch("sm89").optin_bytes == 99 * 1024 == 101376
    assert arch("sm75").optin_bytes == 65536 and arch("sm70").optin_bytes == 98304
    assert "SharedMemPerCC[80]" in arch("sm80").optin_source
    for name in ("sm100", "sm101", "sm103", "sm110"):
        assert arch(name).capacity == "cutlass::arch::sm100_smem_capacity_bytes"
    assert arch("sm121").capacity == arch("sm120").capacity == "cutlass::arch::sm120_smem_capacity_bytes"
    with pytest.raises(BadInput, match="unknown arch 'sm99'"):
        arch("sm99")


def test_arch_family_and_capacity_of_are_the_tables():
    """One definition: a kernel's arch family (``MainloopSm<cc>``) and a build's capacity
    constant are the arch table's for every arch in it; ``arch_family(110)`` is ``sm100``
    (it was None, a hand-written copy of the table); the installs' names are the table's."""
    from cutlass_layout.installs import kernel_library, kernels, source_layout
    from cutlass_layout.subjects.archs import arch_family, capacity_of

    assert kernels.arch_family is arch_family and source_layout.capacity_of is capacity_of
    assert kernel_library.capacity_of is capacity_of
    for a in ARCHS.values():
        assert arch_family(a.cc) == a.family, a.name
        assert capacity_of(a.name) == (ARCHS[a.family].capacity if a.family else None), a.name
    assert arch_family(110) == ARCHS["sm110"].family == "sm100"
    # unchanged for the archs a flashinfer build has (the MainloopSm<N> of its headers: 70, 80,
    # 90, 100, 103, 120) and the audit's archs
    assert [arch_family(cc) for cc in (70, 80, 90, 100, 103, 120, 121)] == [
        None,
        None,
        "sm90",
        "sm100",
        "sm100",
        "sm120",
        "sm120",
    ]
    assert {n: capacity_of(n) for n in ("sm90", "sm100", "sm103", "sm120", "sm121")} == {
        "sm90": "cutlass::gemm::collective::detail::sm90_smem_capacity_bytes",
        "sm100": "cutlass::arch::sm100_smem_capacity_bytes",
        "sm103": "cutlass::arch::sm100_smem_capacity_bytes",
        "sm120": "cutlass::arch::sm120_smem_capacity_bytes",
        "sm121": "cutlass::arch::sm120_smem_capacity_bytes",
    }
    assert capacity_of("sm110") == "cutlass::arch::sm100_smem_capacity_bytes"
    assert capacity_of("sm80") is None and capacity_of("all") is None and arch_family(99) is None


def test_defined_capacities_read_the_tree(tmp_path):
    (tmp_path / "cutlass/arch").mkdir(parents=True)
    (tmp_path / "cutlass/arch/arch.h").write_text("constexpr int sm100_smem_capacity_bytes = 1;\n")
    assert defined_capacities(tmp_path) == ("cutlass::arch::sm100_smem_capacity_bytes",)
    assert defined_capacities(tmp_path / "nowhere") == ()


def test_preset_archs_and_2x_archs(capsys):
    assert Config(arch="sm103").family == "sm100" and Config(arch="sm121").family == "sm120"
    with pytest.raises(BadInput, match="2.x-era arch"):
        Config(arch="sm86")
    assert main(["layout", "--arch", "sm89"]) == 2
    assert "--header" in capsys.readouterr().err


#: One arch per source of capacity (the documented limit, sm90_common.inl, arch.h's two
#: constants); the arches that share a source (sm75/sm86: documented, sm103/sm110: SM100's,
#: sm121: SM120's; test_every_arch_has_a_capacity_source checks the table) each cost a parse
#: of their own, so all of them are the full tier's.
ONE_PER_SOURCE = ["sm80", "sm90", "sm100", "sm120"]
EVERY_ARCH = ["sm75", "sm80", "sm86", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121"]


@pytest.mark.network
@pytest.mark.parametrize(
    "tree,names",
    [
        pytest.param("nc420", ONE_PER_SOURCE, id="nc420"),
        pytest.param("nc420", EVERY_ARCH, marks=pytest.mark.slow, id="nc420-every-arch"),
        pytest.param("fi072", ONE_PER_SOURCE, marks=pytest.mark.slow, id="fi072"),  # a second version: the full tier
    ],
)
def test_capacity_of_every_arch_from_the_headers(tree, names, request):
    """One type with a SharedStorage, laid out for each arch: the capacity is the tree's
    constant, with its file and line (4.2.0 and flashinfer 0.7.2.post1 keep them at the same
    lines: arch.h 44/45, sm90_common.inl 57), or the documented limit."""
    tgt = request.getfixturevalue(tree)
    subjects = [UserType(TINY, "tiny::Plain", name) for name in names]
    want = {
        "sm75": (None, 65536),
        "sm80": (None, 166912),
        "sm86": (None, 101376),
        "sm90": ("sm90_smem_capacity_bytes", 232448, "cutlass/gemm/collective/builders/sm90_common.inl", 57),
        "sm100": ("sm100_smem_capacity_bytes", 232448, "cutlass/arch/arch.h", 44),
        "sm103": ("sm100_smem_capacity_bytes", 232448, "cutlass/arch/arch.h", 44),
        "sm110": ("sm100_smem_capacity_bytes", 232448, "cutlass/arch/arch.h", 44),
        "sm120": ("sm120_smem_capacity_bytes", 101376, "cutlass/arch/arch.h", 45),
        "sm121": ("sm120_smem_capacity_bytes", 101376, "cutlass/arch/arch.h", 45),
    }
    reps = layouts(subjects, tgt)
    assert len(reps) == len(names)  # one report per arch: zip would drop the missing silently
    for name, rep in zip(names, reps, strict=True):
        assert rep.error is None, rep.error
        # a SharedStorage of no GEMM (or FMHA) shape: laid out as the type's own storage
        assert rep.storage.size == 1000 and rep.subject_kind == "storage" and rep.epilogue is None
        cap = rep.capacity
        if want[name][0] is None:
            assert cap.value == want[name][1] and cap.file is None
            assert "opt-in" in cap.source and "cutlass_library" in cap.source
        else:
            assert (cap.name, cap.value, cap.file, cap.line) == want[name]
            assert cap.source is None


@pytest.mark.network
def test_capacity_from_the_arch_tag(nc420, capsys):
    """Without --arch the type's own ArchTag decides; without a tag, --arch is asked for."""
    subjects = [UserType(TINY, f"tiny::Tagged{n}") for n in (80, 90, 100, 120)]
    reps = layouts(subjects, nc420)
    assert [(r.config["arch"], r.config["arch_from"], r.capacity_bytes) for r in reps] == [
        ("sm80", "tag", 166912),
        ("sm90", "tag", 232448),
        ("sm100", "tag", 232448),
        ("sm120", "tag", 101376),
    ]
    code = main(["layout", "--cutlass", str(nc420.tree.include_root), "--header", str(TINY), "--type", "tiny::Plain"])
    assert code == 2 and "no arch tag" in capsys.readouterr().err


@pytest.mark.network
def test_include_dirs_and_defines(nc420, capsys):
    """-I DIR and -D NAME=VALUE reach the header: 3 * 256 bytes."""
    header = HEADERS / "needs_include.hpp"
    argv = [
        "layout",
        "--cutlass",
        str(nc420.tree.include_root),
        "--header",
        str(header),
        "--type",
        "tiny::NeedsInclude",
        "-I",
        str(HEADERS / "extra"),
        "-D",
        "TINY_COPIES=3",
        "--json",
    ]
    assert main(argv) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["storage"]["size"] == 768 and doc["capacity_bytes"] == 232448
    assert doc["config"]["defines"] == ["TINY_COPIES=3"]
    # without the include directory the header's own include is missing: bad input
    assert main(argv[:7] + ["-D", "TINY_COPIES=3"]) == 2
    assert "tiny_extent.hpp" in capsys.readouterr().err


def test_header_flag_errors(capsys):
    assert main(["layout", "--header", str(TINY), "--type", "tiny::Plain", "--tile", "128x64x64"]) == 2
    assert "--tile describes a preset" in capsys.readouterr().err
    assert main(["layout", "--header", str(TINY), "--type", "tiny::Plain", "--stages", "3"]) == 2
    assert "STAGES macro" in capsys.readouterr().err
    assert main(["layout", "--header", str(TINY), "--type", "tiny::Plain", "-D", "1X=2"]) == 2
    assert "NAME or NAME=VALUE" in capsys.readouterr().err
    assert main(["layout", "--header", str(TINY), "--type", "tiny::Plain", "-I", "/no/such/dir"]) == 2
    assert "include directory not found" in capsys.readouterr().err
