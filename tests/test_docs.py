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


@pytest.mark.parametrize("args", [c for page in sorted(PAGES.glob("*.md"))
                                  for c in command_lines(page.read_text())], ids=" ".join)
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
    functions = {n for n in api.__all__ if inspect.isfunction(getattr(api, n))
                 and getattr(api, n).__module__ == api.__name__}
    assert functions <= sections, sorted(functions - sections)
    for anchor in re.findall(r"docs/python-api\.md#(\w+)", inspect.getsource(api)):
        assert anchor in sections, anchor
