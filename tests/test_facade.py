"""The facade: ``import cutlass_layout as cl; cl.layout/layouts/sweep/diff/scan/audit/tactic``,
from :mod:`cutlass_layout.api`, with the command line's values and defaults, one name
(``source``) for the CUTLASS source, one-line ``BadInput`` for bad values, short reprs; and
no facade name that is also a module's."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import pkgutil
import shutil
import warnings
from pathlib import Path

import pytest
from handed import SECTION_A

import cutlass_layout as cl
from cutlass_layout import BadInput, Config, api, audit, diff, layout, layouts, scan, sweep

MINI = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_flashinfer"


def _all_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(cl.__path__, "cutlass_layout.")]


def test_no_facade_name_is_a_module():
    """``cl.sweep`` is the function whatever was imported; ``cutlass_layout.commands.sweep``
    is the module, by ``import`` and by ``importlib``; ``cutlass_layout.sweep`` is no module."""
    modules = _all_modules()
    for name in modules:
        importlib.import_module(name)  # every module imported: none puts its name on the package
    shadowed = [n for n in cl.__all__ if f"cutlass_layout.{n}" in modules]
    assert not shadowed, f"facade names that are also modules: {shadowed}"
    for name in ("layout", "layouts", "sweep", "diff", "scan", "audit", "tactic", "target"):
        f = getattr(cl, name)
        assert inspect.isfunction(f) and f is getattr(api, name), name
    import cutlass_layout.commands.sweep as sweep_module

    assert importlib.import_module("cutlass_layout.commands.sweep") is sweep_module
    assert sweep_module.MAX_STAGES == 32 and sweep_module.SweepResult is cl.SweepResult
    from cutlass_layout.commands.sweep import MAX_STAGES

    assert MAX_STAGES == 32
    for name in ("sweep", "diff", "scan", "audit"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"cutlass_layout.{name}")
    assert all(callable(f) for f in (layout, layouts, sweep, diff, scan))


#: The facade's functions that read CUTLASS (or a flashinfer install), and where it goes.
READS_A_SOURCE = ["layout", "layouts", "sweep", "scan", "audit", "tactic", "target", "resolve_cutlass"]


@pytest.mark.parametrize("name", READS_A_SOURCE)
def test_one_name_for_the_source(name):
    params = inspect.signature(getattr(cl, name)).parameters
    assert "source" in params
    assert not {"cutlass", "src", "path"} & set(params), "one name: source"


def test_diff_takes_two_sources_old_and_new():
    assert list(inspect.signature(cl.diff).parameters)[:3] == ["old", "new", "grid"]


@pytest.mark.parametrize(
    "call,old",
    [
        (lambda **kw: layout(**kw), "cutlass"),
        (lambda **kw: layouts(["128x128x128"], **kw), "cutlass"),
        (lambda **kw: sweep(tile="128x128x128", **kw), "cutlass"),
        (lambda **kw: cl.target(**kw), "cutlass"),
        (lambda **kw: scan(**kw), "path"),
    ],
)
def test_the_old_keyword_names_still_work_and_warn(call, old):
    with pytest.warns(DeprecationWarning, match=f"{old}="), pytest.raises(BadInput, match="does not exist"):
        call(**{old: "/no/such/dir/include"})
    with pytest.raises(BadInput, match="give source= alone"):
        call(**{old: "/a", "source": "/b"})


def test_the_facade_calls_the_modules():
    """A thin layer: the same answers as the modules it calls, docstrings for every name."""
    from cutlass_layout.commands.scan import scan as scan_module_function

    header = MINI.parent.parent / "headers" / "scan" / "storage_demo.hpp"
    a, b = scan(header, grep="Storage"), scan_module_function(header, grep="Storage")
    assert a.structs and a.structs == b.structs and a.constants == b.constants
    undocumented = [n for n in api.__all__ if not (getattr(api, n).__doc__ or "").strip()]
    assert not undocumented, undocumented
    for name in READS_A_SOURCE + ["diff"]:
        doc = getattr(api, name).__doc__
        assert "Raises:" in doc and "bytes" in (api.__doc__ + doc), name


def test_one_version():
    assert cl.__version__ == importlib.metadata.version("cutlass-layout")
    from click.testing import CliRunner

    from cutlass_layout.cli import cli

    assert cl.__version__ in CliRunner().invoke(cli, ["--version"]).output


def test_config_values_as_the_command_line_takes_them():
    from cutlass_layout.subjects.config import config_from

    assert config_from("128x256x128", preset="trtllm-moe") == Config(tile=(128, 256, 128), preset="trtllm-moe")
    assert config_from(tile="128x128x64B") == Config()  # K in bytes of nvfp4: 128 elements
    assert config_from({"arch": "SM90", "kernel": "dense", "stages": "3"}) == Config(
        arch="sm90", kernel="dense", stages=3
    )
    assert config_from(tile=(128, 64, 128), stages=3) == Config(tile=(128, 64, 128), stages=3)
    assert (
        repr(Config(tile=(128, 256, 128), preset="trtllm-moe")) == "Config(tile=(128, 256, 128), preset='trtllm-moe')"
    )


BAD = [
    (lambda: layout("128x0x128", source="/nonexistent"), "tile"),
    (lambda: layout(tiles="128x128x128", source="/nonexistent"), "unknown config key 'tiles'"),
    (lambda: layout(Config(), preset="trtllm-moe", source="/nonexistent"), "not both"),
    (lambda: layout(arch=90, source="/nonexistent"), "arch 90"),
    (lambda: layout(stages=0, source="/nonexistent"), "stages"),
    (lambda: layout(a="fp5", source="/nonexistent"), "unknown element kind"),
    (lambda: layout(cluster="2x1x1", source="/nonexistent"), "only 1x1x1"),
    (lambda: layout(42, source="/nonexistent"), "config 42"),
    (lambda: layout(source="/no/such/dir/include"), "does not exist"),
    (lambda: layouts("128x128x128", "/nonexistent"), "a list of configs"),
    (lambda: sweep(source="/nonexistent"), "give a grid"),
    (lambda: sweep([], source="/nonexistent"), "empty"),
    (lambda: sweep(tile="128x{64,128x128", source="/nonexistent"), "unbalanced"),
    (lambda: sweep(tile="128x128x128", jobs=0, source="/nonexistent"), "jobs 0"),
    (lambda: sweep(tiles="128x128x128"), "unknown grid key"),
    (lambda: diff("/no/such/old", "/no/such/new"), "old (/no/such/old)"),
    (lambda: diff("/a", "/b", structural=False, numeric=False), "nothing to diff"),
    (lambda: diff("/a", "/b", [Config()], tile="128x128x128"), "not both"),
    (lambda: scan("/no/such/header.hpp"), "does not exist"),
    (lambda: layout(arch="sm80", source="/nonexistent"), "2.x-era arch"),
    (lambda: audit("/nonexistent", arch="sm110"), "an audit takes sm120, sm121"),
    (lambda: audit("/nonexistent", tile="128x128x64b"), "capital B"),
    (lambda: audit("/nonexistent", schedule="fast"), "unknown schedule"),
    (lambda: diff("/a", "/b", audit=True, arch=["sm90", "sm120"]), "one arch"),
]


@pytest.mark.parametrize("call,words", BAD, ids=[w for _, w in BAD])
def test_bad_values_are_one_line_without_flag_names(call, words):
    with pytest.raises(BadInput) as exc:
        call()
    msg = str(exc.value)
    assert words in msg and "\n" not in msg
    assert "--" not in msg, "library messages name no command-line flag"


@pytest.mark.network
def test_layout_takes_flag_values_and_reads_the_budget_by_default(fi068, fi072):
    rep = layout("128x256x128", fi072, preset="trtllm-moe")
    stages, mainloop, epilogue, kernel, _ = SECTION_A[((128, 256, 128), "trtllm-moe")]
    assert (rep.stages, rep.mainloop.size, rep.epilogue.size, rep.kernel.size) == (stages, mainloop, epilogue, kernel)
    assert rep.builder_budget is not None  # on by default, as in the CLI
    assert len(repr(rep)) < 200 and "98304" in repr(rep)
    # test_budget.py: flashinfer 0.6.8 budgets 4 stages of 22656 B for grouped NVFP4 128x32x256
    b = layout(tile="128x32x256", source=fi068).builder_budget
    assert (b.stages, b.stage_bytes) == (4, 22656)
    assert layout("128x32x256", fi068, budget=False).builder_budget is None
    (one, two) = layouts(["128x128x128", {"tile": "128x256x128", "preset": "trtllm-moe"}], fi072)
    assert one.kernel.size == SECTION_A[((128, 128, 128), "flashinfer")][3]
    assert two.kernel.size == kernel


@pytest.mark.network
def test_sweep_and_diff_take_grid_values(fi068, fi072):
    res = sweep(tile="128x{128,256}x128", preset="trtllm-moe", source=fi072)
    assert [r.kernel_bytes for r in res.records] == [89088, 98304]  # tests/handed.md A
    assert repr(res) == "<SweepResult 2 configs: 2 fits, 0 over_capacity, 0 does_not_compile>"
    d = diff(fi068.tree, fi072.tree, structural=False, tile="128x32x256", kernel="grouped")
    (row,) = d.numeric
    # tests/handed.md C and test_diff.py (nvcc): 4 stages, 102400 B -> 3 stages, 84992 B
    assert (row.old.stages, row.old.kernel_bytes, row.new.stages, row.new.kernel_bytes) == (4, 102400, 3, 84992)
    assert d.grid_source == "python" and "1 of 1 configs differ" in repr(d)


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    """A copy of the miniature flashinfer install of tests/test_audit.py (offline)."""
    dest = tmp_path_factory.mktemp("mini") / "site-packages"
    shutil.copytree(MINI, dest)
    return dest


@pytest.mark.mini_shared
def test_tactic_by_a_part_of_its_id(mini):
    # test_audit.py: the stand-in's 256x128x64 (32 B of K) MoE kernel, 5 stages, by hand
    # 123904 B of mainloop + 4096 B of epilogue + 48 B of pipelines -> 129024 B > 101376 B
    t = cl.tactic("CtaShape256x128x32B", mini)
    assert t.family == "moe" and "CtaShape256x128x32B" in t.id
    assert (t.verdict, t.report.kernel.size, t.report.capacity_bytes) == ("over_capacity", 129024, 101376)
    with pytest.raises(BadInput, match="tactics match"):
        cl.tactic("moe/CtaShape", source=mini)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        assert cl.audit(source=mini, family="moe").tactics
