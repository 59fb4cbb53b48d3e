"""One set of flags everywhere: the commands that take a config take the same config flags,
every command that reads a source takes ``--cutlass``, and the output formats; the usage
errors a newcomer hits say what to do."""

from __future__ import annotations

import pytest

from cutlass_layout.cli import cli, main
from cutlass_layout.errors import BadInput
from cutlass_layout.options import CONFIG_FLAGS, output_format


def _flags(command: str) -> set[str]:
    return {o for p in cli.commands[command].params for o in p.opts if o.startswith("--")}


CONFIG = {flag for flag, _, _, _ in CONFIG_FLAGS}


def test_config_flags_are_the_same_for_every_command_that_takes_a_config():
    assert CONFIG == {
        "--arch",
        "--kernel",
        "--a",
        "--b",
        "--tile",
        "--cluster",
        "--stages",
        "--c",
        "--d",
        "--preset",
        "--schedule",
        "--epilogue-schedule",
        "--scales",
    }
    missing = {name: CONFIG - _flags(name) for name in ("layout", "sweep", "diff", "audit")}
    assert not any(missing.values()), missing


def test_cutlass_wherever_a_source_is_read_and_the_formats():
    for name in ("layout", "sweep", "scan", "audit", "source"):
        assert "--cutlass" in _flags(name), name
    for name in ("layout", "sweep", "diff", "audit"):
        assert {"--format", "--json"} <= _flags(name), name
    assert "--csv" in _flags("sweep")
    assert "--line-offset" in _flags("scan")


def test_repeatable_where_a_grid_or_filter_is_made():
    for name in ("sweep", "diff", "audit"):
        params = {p.opts[0]: p for p in cli.commands[name].params}
        assert all(params[f].multiple for f in CONFIG), name
    params = {p.opts[0]: p for p in cli.commands["layout"].params}
    assert not any(params[f].multiple for f in CONFIG)


def test_output_format():
    assert output_format(None, ("text", "json")) == "text"
    assert output_format("MD", ("text", "markdown")) == "markdown"
    assert output_format(None, ("text", "json"), as_json=True) == "json"
    assert output_format("json", ("text", "json"), as_json=True) == "json"
    with pytest.raises(BadInput, match="--format csv: choose text, markdown, json"):
        output_format("csv", ("text", "markdown", "json"))
    with pytest.raises(BadInput, match="one output format, not markdown and json"):
        output_format("markdown", ("text", "markdown", "json"), as_json=True)


@pytest.mark.parametrize(
    "argv",
    [
        # what the shell makes of --tile 128x{128,256}x64B (unquoted)
        ["layout", "--tile", "128x128x64B", "128x256x64B"],
        ["sweep", "--tile", "128x128x64B", "128x256x64B"],
        ["diff", "a", "b", "--tile", "128x128x64B", "128x256x64B"],
        ["audit", "src", "--tile", "128x128x64B", "128x256x64B"],
    ],
    ids=["layout", "sweep", "diff", "audit"],
)
def test_unquoted_braces_get_a_hint(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert "unexpected extra argument" in err and "quote them" in err and "'128x{128,256}x64B'" in err


@pytest.mark.parametrize(
    "argv",
    [
        # what the shell makes of --arch sm{90,120} (unquoted)
        ["audit", "src", "--arch", "sm90", "sm120"],
        ["sweep", "--arch", "sm90", "sm120"],
    ],
    ids=["audit", "sweep"],
)
def test_unquoted_braces_in_an_arch_get_a_hint(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert "unexpected extra argument" in err and "--arch 'sm{90,120}'" in err


def test_other_extra_arguments_get_no_tile_hint(capsys):
    assert main(["layout", "stray"]) == 2
    err = capsys.readouterr().err
    assert "unexpected extra argument" in err and "quote" not in err


@pytest.mark.parametrize(
    "argv,words",
    [
        (["layout", "--tile", "128x256x64b"], "capital B (128x256x64B)"),
        (["layout", "--tile", "128x{128,256}x64B"], "layout takes one tile"),
        (["sweep", "--tile", "128x{128,256}x64b"], "capital B"),
        (["layout", "--format", "csv"], "--format csv: choose text, markdown, json"),
        (["layout", "--format", "markdown", "--json"], "one output format"),
        (["scan"], "give what to scan"),
        (["scan", "x.hpp", "--cutlass", "y"], "PATH or --cutlass SRC, not both"),
        (["audit", "a", "--cutlass", "b"], "not both"),
        (["audit", "a", "--arch", "sm120", "--arch", "sm75"], "arch 'sm75': an audit takes"),
        (["audit", "a", "--preset", "trtllm-moe"], "not recorded for a tactic"),
        (["audit", "a", "--a", "fp5"], "unknown element kind 'fp5'"),
        (["audit", "a", "--tile", "128x64x16b"], "capital B"),
    ],
)
def test_bad_values_one_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert words in err, err


@pytest.mark.parametrize("jobs", [0, -1, 2.0, True, "2"])
def test_one_check_of_a_job_count(jobs, capsys):
    """``jobs`` is checked in one place (core.pool.check_jobs): sweep's, audit's and diff's
    ``--jobs``, and their Python calls; the same line either way, naming the flag or the
    argument."""
    from cutlass_layout import api
    from cutlass_layout.core.pool import check_jobs

    assert [check_jobs(None), check_jobs(1), check_jobs(8)] == [None, 1, 8]
    with pytest.raises(BadInput, match=rf"^jobs {jobs!r}: give a positive number$"):
        check_jobs(jobs)
    with pytest.raises(BadInput, match=rf"^jobs {jobs!r}: give a positive number$"):
        api.diff("/no/such/old", "/no/such/new", jobs=jobs)
    with pytest.raises(BadInput, match=rf"^jobs {jobs!r}: give a positive number$"):
        api.sweep(tile="128x128x128", jobs=jobs, source="/nonexistent")
    if isinstance(jobs, int) and not isinstance(jobs, bool):  # what --jobs (an int) can give
        for argv in (["sweep", "--tile", "128x128x128"], ["audit", "/nonexistent"]):
            assert main([*argv, "--jobs", str(jobs)]) == 2
            assert capsys.readouterr().err.strip() == f"error: --jobs {jobs}: give a positive number"
