"""The examples of the README and of every page of ``docs/`` run as written.

(``docs/commands/`` pages' command lines are parsed by tests/test_docs.py, with their flags.)

* every ``cutlass-layout ...`` command line in its code blocks (fenced or indented; ``$ ``
  prompts, ``\\`` continuations, pipes, ``&&`` and redirections taken apart as a shell
  would) is parsed by the command line's own parser (click), down to its subcommand's flags
  and their types; synopsis lines (``[--json]``) are left out;
* every ``python`` block (but a function's signature, ``name(args) -> T`` on one line, which
  must be ``inspect.signature``'s of ``cutlass_layout.api.name``) runs, top to bottom, in a fresh namespace of its own, against the
  session's cache (the sources it names are the session fixtures' wheels, fetched once). An
  expression followed by a comment that is a Python literal (``# (3, 98304, 101376, True,
  3072)``, inline or on the next line, up to a ``:``) must give that value: those values are
  nvcc's (tests/handed.md section E, tests/test_audit_nvcc.py).
"""

from __future__ import annotations

import ast
import io
import re
import shlex
import tokenize
from pathlib import Path

import click
import pytest

from cutlass_layout.cli import cli

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: The README and every page of docs/ but the command pages (tests/test_docs.py reads those).
PAGES = [README] + sorted(p for p in (ROOT / "docs").rglob("*.md") if p.parent.name != "commands")
#: A Python block that is a function's signature, as docs/python-api.md writes them.
SIGNATURE = re.compile(r"(\w+)\(.*\)(?: -> .+)?")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def page_commands() -> list[tuple[str, list[str]]]:
    """``(page, args)`` of every ``cutlass-layout`` command line of the pages."""
    return [(_rel(p), args) for p in PAGES for args in command_lines(p.read_text())]


def python_blocks(path: Path) -> list[str]:
    """The ``python`` blocks of a page to run (signatures aside)."""
    return [
        code
        for lang, code in code_blocks(path.read_text())
        if lang == "python" and not SIGNATURE.fullmatch(code.strip())
    ]


def code_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced block (language as written after the fence, ``""``
    for none) and of every indented block (language ``"indented"``) outside the fences."""
    out: list[tuple[str, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^```(\S*)\s*$", line)
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append((m.group(1), "\n".join(lines[i + 1 : j])))
            i = j + 1
            continue
        if line.startswith("    ") and line.strip() and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            out.append(("indented", "\n".join(ln[4:] for ln in lines[i:j])))
            i = j
            continue
        i += 1
    return out


def command_lines(text: str) -> list[list[str]]:
    """The ``cutlass-layout`` commands of the README's shell-like blocks, and of its YAML
    blocks' ``run:`` and ``entry:`` values (a CI step, a pre-commit hook), as argument lists
    (without the program name)."""
    out = []
    for lang, code in code_blocks(text):
        if lang in ("yaml", "yml"):
            code = "\n".join(re.sub(r"^\s*(?:-\s+)?(?:run|entry):\s*", "", ln) for ln in code.split("\n"))
        elif lang not in ("bash", "sh", "console", "text", "indented", ""):
            continue
        joined = re.sub(r"\\\n\s*", " ", code)
        for line in joined.split("\n"):
            line = line.strip()
            line = line[2:] if line.startswith("$ ") else line
            for part in re.split(r"\|\||&&|\|", line):
                words = shlex.split(part.strip(), comments=True) if "cutlass-layout" in part else []
                if not words or words[0] != "cutlass-layout":
                    continue
                for stop in (">", "2>", ">>"):
                    if stop in words:
                        words = words[: words.index(stop)]
                if any(w.startswith("[") for w in words):  # a synopsis, not a command
                    continue
                out.append(words[1:])
    return out


def parse(args: list[str]) -> None:
    """Parse ``args`` as the command line does (the group, then the subcommand's flags and
    their types), without running the command. Raises click's usage errors."""
    with cli.make_context("cutlass-layout", list(args)) as ctx:
        name, cmd, rest = cli.resolve_command(ctx, ctx._protected_args + ctx.args)
        with cmd.make_context(name, rest, parent=ctx):
            pass


def test_the_pages_have_what_these_tests_read():
    text = README.read_text()
    readme = command_lines(text)
    assert {c[0] for c in readme} >= {"audit", "layout"} and len(readme) >= 6
    assert [
        "layout",
        "--cutlass",
        "flashinfer-python==0.7.2.post1",
        "--preset",
        "trtllm-moe",
        "--tile",
        "128x256x64B",
    ] in readme
    assert [
        "layout",
        "--cutlass",
        "flashinfer-python==0.7.2.post1",
        "--tactic",
        "moe/CtaShape128x256x64B/nvfp4xnvfp4/bf16/finalize",
    ] in readme
    assert len(python_blocks(README)) >= 1
    commands = [args for _, args in page_commands()]
    assert len(commands) >= 40
    assert {c[0] for c in commands} >= {"audit", "layout", "sweep", "diff", "scan"}
    pages = {_rel(p) for p in PAGES}
    assert {
        "docs/index.md",
        "docs/faq.md",
        "docs/findings.md",
        "docs/how-it-works.md",
        "docs/schemas.md",
        "docs/sources.md",
        "docs/performance.md",
        "docs/python-api.md",
        "docs/guides/audit.md",
    } <= pages
    assert len(python_blocks(ROOT / "docs" / "python-api.md")) >= 2


@pytest.mark.parametrize("page,args", page_commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_every_command_line_parses(page, args):
    try:
        parse(args)
    except click.ClickException as exc:
        pytest.fail(f"{page}: cutlass-layout {' '.join(args)}: {exc.format_message()}")


def test_every_signature_is_the_functions():
    """docs/python-api.md's signature blocks are the functions' own (annotations unquoted)."""
    import inspect

    from cutlass_layout import api

    shown = [
        code.strip()
        for p in PAGES
        for lang, code in code_blocks(p.read_text())
        if lang == "python" and SIGNATURE.fullmatch(code.strip())
    ]
    assert len(shown) >= 20
    for text in shown:
        name = SIGNATURE.fullmatch(text).group(1)
        own = f"{name}{inspect.signature(getattr(api, name))}"
        own = re.sub(r"-> '(.*)'$", r"-> \1", re.sub(r": '([^']*)'", r": \1", own))  # annotations unquoted
        assert text == own


def test_a_bad_command_line_does_not_parse():
    """The parse is the command line's own: a flag it does not have, or a bad value of a
    typed one, is refused."""
    with pytest.raises(click.UsageError):
        parse(["layout", "--no-such-flag"])
    with pytest.raises(click.BadParameter):
        parse(["layout", "--depth", "-1"])
    parse(["audit", "flashinfer-python==0.7.2.post1", "--family", "moe"])


def _comments(code: str) -> dict[int, str]:
    """Line number (1-based) -> the text of the comment on it."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string[1:].strip()
    return out


def _expected(comment: str | None):
    """The literal a comment shows (``(3, 98304)`` or ``(102400, -1024): why``), else a
    marker for none."""
    if not comment:
        return _NONE
    for text in (comment, comment.split(": ", 1)[0]):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
    return _NONE


_NONE = object()


def run_snippet(code: str) -> int:
    """Run ``code`` statement by statement in a fresh namespace, checking each expression
    against the literal its comment shows; returns how many were checked."""
    tree = ast.parse(code)
    comments = _comments(code)
    lines = code.split("\n")
    namespace: dict = {"__name__": "__readme__"}
    checked = 0
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr):
            value = eval(compile(ast.Expression(stmt.value), "README.md", "eval"), namespace)
            end = stmt.end_lineno
            following = lines[end].strip() if end < len(lines) else ""
            comment = comments.get(end) or (comments.get(end + 1) if following.startswith("#") else None)
            want = _expected(comment)
            if want is not _NONE:
                assert value == want, (ast.get_source_segment(code, stmt), value, want)
                checked += 1
        else:
            exec(compile(ast.Module([stmt], type_ignores=[]), "README.md", "exec"), namespace)
    return checked


@pytest.mark.network
@pytest.mark.parametrize("page", [_rel(p) for p in PAGES if python_blocks(p)])
def test_every_python_snippet_runs(page):
    """Each page's Python, as written (the numbers: the trtllm-moe preset's 128x256x128 NVFP4
    kernel on flashinfer 0.7.2.post1 is 98304 B with 3 stages, tests/handed.md E's NONE row; the
    audit's first tactic, a FINALIZE one, 102400 B, 1024 over: tests/handed.md E)."""
    checked = sum(run_snippet(code) for code in python_blocks(ROOT / page))
    assert checked >= 2
