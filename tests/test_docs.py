"""Every command has a short ``--help`` and a page of reference: ``docs/commands/COMMAND.md``
holds what the help leaves out (every flag, the examples, the notes), and the help names it.

* the command's own text in ``--help`` (usage, what it does, an example, the page), at the
  80 columns a terminal gives, is at most 30 lines; each flag's help is one short line of
  text (a list of the values it accepts aside);
* there is a page for every command and a command for every page, and each page names every
  flag of its command;
* every ``cutlass-layout ...`` line in the pages' code blocks parses, as the README's do;
* docs/python-api.md has a section for every function of :mod:`cutlass_layout.api`.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from test_readme import command_lines, parse

from cutlass_layout.cli import cli

PAGES = Path(__file__).resolve().parent.parent / "docs" / "commands"
COMMANDS = sorted(cli.commands)
#: Flags whose help is the list of values they accept (longer than one line on purpose).
VALUE_LISTS = {("audit", "--a")}


def _help(name: str) -> str:
    res = CliRunner().invoke(cli, [name, "--help"], prog_name="cutlass-layout", terminal_width=80)
    assert res.exit_code == 0
    return res.output


def test_a_page_for_every_command_and_a_command_for_every_page():
    assert {p.stem for p in PAGES.glob("*.md")} == set(COMMANDS)
    assert len(COMMANDS) >= 6


@pytest.mark.parametrize("name", COMMANDS)
def test_help_is_short_and_names_its_page(name):
    text = _help(name)
    own = text.split("\nOptions:")[0]
    assert len(own.splitlines()) <= 30, own
    assert f"Full reference: docs/commands/{name}.md" in own
    command = cli.commands[name]
    ctx = click.Context(command, info_name=name)
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or (name, param.opts[0]) in VALUE_LISTS:
            continue
        assert len(record[1]) <= 110, f"{name} {record[0]}: {record[1]}"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_page_names_every_flag(name):
    page = (PAGES / f"{name}.md").read_text()
    flags = {o for p in cli.commands[name].params for o in p.opts + p.secondary_opts if o.startswith("-")}
    missing = sorted(f for f in flags if f"`{f}" not in page and f"{f} " not in page and f"{f}`" not in page)
    assert not missing, missing


@pytest.mark.parametrize(
    "args", [c for page in sorted(PAGES.glob("*.md")) for c in command_lines(page.read_text())], ids=" ".join
)
def test_every_command_line_of_the_pages_parses(args):
    try:
        parse(args)
    except click.ClickException as exc:
        pytest.fail(f"cutlass-layout {' '.join(args)}: {exc.format_message()}")


def test_the_pages_have_examples():
    for name in COMMANDS:
        assert any(c[0] == name for c in command_lines((PAGES / f"{name}.md").read_text())), name


def test_every_api_function_has_its_section_in_python_api_md():
    """docs/python-api.md holds each public function's full reference (its docstring keeps the
    guarantees and points there)."""
    import inspect
    import re

    from cutlass_layout import api

    page = (PAGES.parent / "python-api.md").read_text()
    sections = set(re.findall(r"^## (\w+)$", page, re.M))
    functions = {
        n for n in api.__all__ if inspect.isfunction(getattr(api, n)) and getattr(api, n).__module__ == api.__name__
    }
    assert functions <= sections, sorted(functions - sections)
    for anchor in re.findall(r"docs/python-api\.md#(\w+)", inspect.getsource(api)):
        assert anchor in sections, anchor


# -------------------------------------------------------------------------------------------
# the site (mkdocs.yml), the CI steps and installs that work as written
ROOT = PAGES.parent.parent


def _nav_pages() -> list[str]:
    """The pages mkdocs.yml's nav names (read without a YAML library: each ``- Title: page.md``
    or ``- page.md`` line of its ``nav:`` block)."""
    import re

    text = (ROOT / "mkdocs.yml").read_text()
    nav = text.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)$", nav, re.M)


def test_the_site_has_every_page_once_and_checks_its_links():
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    nav = _nav_pages()
    assert sorted(nav) == pages and len(nav) == len(set(nav)) >= 20
    text = (ROOT / "mkdocs.yml").read_text()
    assert "strict: true" in text
    for check in ("unrecognized_links: warn", "anchors: warn", "omitted_files: warn"):
        assert check in text, check  # a warning, so that --strict fails on it
    run = (ROOT / ".ci" / "run").read_text()
    assert 'mkdocs build --strict -q -d "$scratch/site"' in run  # never into the tree
    assert "site/" in (ROOT / ".gitignore").read_text().split()


def test_ci_runs_the_readme_test_command_and_checks_the_distributions():
    """.ci/run runs the README's lint and test command (with the docs and dist extras
    besides), and builds the wheel and sdist and checks them with twine."""
    from test_readme import README, code_blocks

    readme = [code for lang, code in code_blocks(README.read_text()) if "pytest" in code]
    assert len(readme) == 1
    run = (ROOT / ".ci" / "run").read_text()
    for step in readme[0].split(" && "):
        step = step.replace("'.[test]'", "'.[test,docs,dist]'").replace(
            "pip install -c", "pip install -q --no-compile -c"
        )
        assert step in run, step
    assert "python -m build -q --sdist --wheel" in run and "twine check --strict" in run
    pyproject = (ROOT / "pyproject.toml").read_text()
    for extra in ("docs = [", "dist = [", "plot = [", "dask = ["):
        assert extra in pyproject, extra


def test_no_install_from_the_package_index_is_written_anywhere():
    """The package is not on the index: no page, message or hook says ``pip install
    cutlass-layout`` (or one of its extras by the package's name) as if it were."""
    import re

    bad = re.compile(r"pip install ['\"]?cutlass-layout(\[\w+\])?['\"]?(?=\s|$|\)|`)(?!\s+@)")
    files = [
        README_PATH,
        *(ROOT / "docs").rglob("*.md"),
        *(ROOT / "src").rglob("*.py"),
        ROOT / ".pre-commit-hooks.yaml",
        ROOT / "pyproject.toml",
    ]
    found = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in files for m in bad.finditer(p.read_text())]
    assert not found, found
    assert "cutlass-layout[" not in " ".join(p.read_text() for p in files if p.suffix == ".py")


def test_python_m_cutlass_layout_is_the_command():
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "cutlass_layout", "layout", "--help"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Usage: cutlass-layout layout [OPTIONS]")
    assert "Full reference: docs/commands/layout.md" in res.stdout
    res = subprocess.run(
        [sys.executable, "-m", "cutlass_layout", "layout", "--no-such-flag"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "no-such-flag" in res.stderr


README_PATH = ROOT / "README.md"
