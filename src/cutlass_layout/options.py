"""Click options shared by the commands: one table of config flags, the source flags and the
output format.

Every command that takes a config takes the same flags, from :data:`CONFIG_FLAGS`:
``layout`` each once, with the defaults below; ``sweep`` and ``diff`` each repeatedly (the
grid is the product, braces expand); ``audit`` each repeatedly, as filters (a tactic is kept
when it matches one value of every flag given). The flag strings become a :class:`Config`
in :func:`cutlass_layout.subjects.config.config_from_flags`, or a filter in
:func:`cutlass_layout.commands.audit.tactic_filter`.

Besides the flags, what the commands ask of the command line itself: which flags it gave
(:func:`was_given`; :func:`tactic_takes_no_more` and :func:`merge_takes_no_more` refuse those
that do not go together), values as typed (``--show``, tiles with K in bytes), the hint for
a usage error, and the library's messages in the flags' words (:func:`in_flag_words`).
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from .core.files import OverLimit
from .errors import BadInput

SOURCE_HELP = "CUTLASS source: folder, .whl, distribution, NAME==VERSION or git+URL@REF."
CUDA_PATH_HELP = "CUDA root, or 'pip' for the header wheels."

#: (flag, parameter name, ``layout``'s default, help), in the order ``--help`` lists them.
CONFIG_FLAGS = (
    ("--arch", "arch", "sm120", "sm120, sm121, sm90, sm100, sm101, sm103, sm110; sm70 to sm89 with --header."),
    ("--kernel", "kernel", "grouped", "dense, grouped (ptr-array) or sparse."),
    ("--a", "a", None, "A element: nvfp4, mxfp4, mxfp8 (SM120, SM100); bf16, f16, e4m3, e5m2 (SM90, SM100)."),
    ("--b", "b", None, "B element (default: same as A)."),
    (
        "--tile",
        "tile",
        None,
        "TileShape MxNxK, or MxNxKB with K in bytes of A [default: 128x128x128; sparse: 128x128x256].",
    ),
    ("--cluster", "cluster", "1x1x1", "ClusterShape MxNxK."),
    ("--stages", "stages", "auto", "auto or N (StageCount<N>)."),
    ("--c", "c", None, "C element: void, bf16, f16, f32."),
    ("--d", "d", None, "D element: bf16 (default), f16, f32; nvfp4, mxfp4, mxfp8 with scale factors (SFD)."),
    ("--preset", "preset", "flashinfer", "Epilogue: flashinfer, trtllm-moe or vllm."),
    ("--schedule", "schedule", "auto", "auto, cooperative or pingpong (SM90); 1sm or 2sm (SM100)."),
    ("--epilogue-schedule", "epilogue_schedule", None, "auto (the preset's), tma or nosmem."),
    ("--scales", "scales", None, "SM120 FP8 blockwise scales MxNxK: 1x128x128 or 128x128x128 (with --a e4m3)."),
)

#: The element kinds an audit's tactics are named with (``commands.audit.ELEMENT_BITS``;
#: tests/test_cli.py checks that the two agree).
_AUDIT_ELEMENTS = (
    "nvfp4, mxfp4, e2m1, mxfp6, mxfp6-e2m3, e3m2, e2m3, mxfp8, mxfp8-e5m2, e4m3, e5m2, s8, bf16, f16, f32, tf32"
)
#: What the config flags say as ``audit``'s filters: what each keeps, and exactly the values
#: it accepts (layout's defaults do not apply; ``--b`` and ``--d`` take ``--a``'s kinds); the
#: flags that do not filter (:data:`NOT_FILTERS`) are refused, and left out of ``--help``.
_FILTER_HELP = {
    "arch": "The arch audited: sm120 (default), sm121, sm100, sm103 or sm90; repeatable, or all.",
    "kernel": "Keep the tactics of this kernel: dense, grouped (ptr-array) or sparse.",
    "a": f"Keep the tactics whose A element (with swap_ab: the weight) is this: {_AUDIT_ELEMENTS}.",
    "b": "Keep tactics of this B element (a kind --a takes).",
    "tile": "Keep tactics of this tile (MxNxK, or MxNxKB).",
    "cluster": "Keep tactics of this ClusterShape MxNxK.",
    "stages": "Keep tactics of N stages (auto keeps all).",
    "d": "Keep tactics of this D (a kind --a takes, or void).",
    "schedule": "Keep tactics of schedule cooperative or pingpong.",
    "c": "Not recorded per tactic: refused here.",
    "preset": "Not recorded per tactic: refused here (see --family moe).",
    "epilogue_schedule": "Not recorded per tactic: refused here.",
    "scales": "Not recorded per tactic: refused here.",
}
#: The config flags ``audit`` refuses (not recorded per tactic): hidden from its ``--help``
#: (docs/commands/audit.md names them).
NOT_FILTERS = ("c", "preset", "epilogue_schedule", "scales")


def config_options(*, repeatable: bool = False, filters: bool = False):
    """Decorator adding every :data:`CONFIG_FLAGS` option: once each with its default, or
    (``repeatable``) any number of times each, braces expanding (a grid), or (``filters``,
    for ``audit``) any number of times each, as filters of what was found. That they repeat
    is said once, in the command's help (docs/commands/ has the whole of each)."""

    def decorate(f):
        for flag, name, default, help_ in reversed(CONFIG_FLAGS):
            if filters:
                f = click.option(flag, name, multiple=True, help=_FILTER_HELP[name], hidden=name in NOT_FILTERS)(f)
            elif repeatable:
                f = click.option(flag, name, multiple=True, help=help_)(f)
            else:
                f = click.option(flag, name, default=default, show_default=default is not None, help=help_)(f)
        return f

    return decorate


def header_options(f):
    """Decorator adding ``--header FILE``, ``--type NAME``, ``-I DIR`` (parameter
    ``includes``) and ``-D NAME[=VALUE]`` (parameter ``defines``), both repeatable: a user's
    own kernel type instead of a preset."""
    f = click.option(
        "-D", "--define", "defines", multiple=True, metavar="NAME[=VALUE]", help="A macro for --header (repeatable)."
    )(f)
    f = click.option(
        "-I", "--include", "includes", multiple=True, metavar="DIR", help="An include folder for --header (repeatable)."
    )(f)
    f = click.option("--type", "type_name", default=None, metavar="NAME", help="The type to lay out (with --header).")(
        f
    )
    return click.option(
        "--header", type=str, default=None, metavar="FILE", help="A header declaring your own kernel type."
    )(f)


def cuda_path_option(f):
    """Decorator adding ``--cuda-path``."""
    return click.option("--cuda-path", default=None, help=CUDA_PATH_HELP)(f)


def executor_option(f):
    """Decorator adding ``--executor local|dask://HOST:PORT`` (parameter ``executor``)."""
    return click.option(
        "--executor",
        default=None,
        metavar="local|dask://HOST:PORT",
        help="Where the parses run: local, or a Dask cluster [default: DASK_SCHEDULER_ADDRESS, else local].",
    )(f)


def source_options(f):
    """Decorator adding ``--cutlass SRC`` (parameter ``cutlass_src``) and ``--cuda-path``."""
    f = cuda_path_option(f)
    return click.option("--cutlass", "cutlass_src", default=None, metavar="SRC", help=SOURCE_HELP)(f)


def library_options(where: str):
    """Decorator adding CUTLASS's kernel library's own filters, as its generator takes them:
    ``--kernels`` (parameter ``library_kernels``), ``--ignore-kernels``, ``--exclude-kernels``
    and ``--instantiation-level`` (``generator.py``'s flags of those names); ``where`` begins
    each help text (whose flag it is: ``"The kernel library's"``). :func:`library_filters` gathers them."""

    def decorate(f):
        f = click.option(
            "--instantiation-level", default=None, metavar="LEVEL", help=f"{where} --instantiation-level."
        )(f)
        f = click.option("--exclude-kernels", default=None, metavar="FILTERS", help=f"{where} --exclude-kernels.")(f)
        f = click.option("--ignore-kernels", default=None, metavar="FILTERS", help=f"{where} --ignore-kernels.")(f)
        return click.option(
            "--kernels", "library_kernels", default=None, metavar="FILTERS", help=f"{where} --kernels."
        )(f)

    return decorate


def library_filters(library_kernels, ignore_kernels, exclude_kernels, instantiation_level) -> dict:
    """The filters of :func:`library_options` that were given, as :func:`cutlass_layout.api.audit`
    and :func:`cutlass_layout.api.diff` take them (``kernels``, ``ignore_kernels``, ...)."""
    given = {
        "kernels": library_kernels,
        "ignore_kernels": ignore_kernels,
        "exclude_kernels": exclude_kernels,
        "instantiation_level": instantiation_level,
    }
    return {k: v for k, v in given.items() if v is not None}


#: Where ``--wide`` leaves its value, in the click context's ``meta``.
_WIDE = "cutlass_layout.wide"


def _note_wide(ctx, param, value):
    ctx.meta[_WIDE] = bool(value)


def text_console():
    """The console a text report prints on: the terminal's width, whose tables leave their
    low-value columns out to fit it, or every column with ``--wide``; a pipe gets every
    column (:func:`cutlass_layout.reports.layout.default_console`)."""
    from .reports.layout import default_console

    ctx = click.get_current_context(silent=True)
    return default_console(wide=bool(ctx is not None and ctx.meta.get(_WIDE)))


def format_options(*formats: str, wide: bool = True):
    """Decorator adding ``--format`` (parameter ``fmt``, one of ``formats``, default
    ``text``) and the shorthands ``--json`` (``as_json``) and, where CSV is a format,
    ``--csv`` (``as_csv``); :func:`output_format` reconciles them. ``wide``: also ``--wide``
    (:func:`text_console`: the text tables keep every column on a terminal too narrow)."""

    def decorate(f):
        if wide:
            f = click.option(
                "--wide",
                is_flag=True,
                expose_value=False,
                callback=_note_wide,
                help="Text tables: every column, however wide the terminal is "
                "(a narrow one leaves some out, and says which).",
            )(f)
        if "csv" in formats:
            f = click.option("--csv", "as_csv", is_flag=True, help="Same as --format csv.")(f)
        f = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(f)
        return click.option(
            "--format",
            "fmt",
            default=None,
            metavar="|".join(formats),
            help="Output: text (the default), markdown, "
            + ", ".join(x for x in formats if x not in ("text", "markdown"))
            + ".",
        )(f)

    return decorate


def output_format(fmt: str | None, formats: tuple[str, ...], as_json: bool = False, as_csv: bool = False) -> str:
    """The one output format of ``--format``, ``--json`` and ``--csv``.

    Raises:
        BadInput: an unknown format, or two different ones asked for.
    """
    asked = []
    if fmt is not None:
        f = fmt.strip().lower()
        f = {"md": "markdown", "table": "text"}.get(f, f)
        if f not in formats:
            raise BadInput(f"--format {fmt}: choose {', '.join(formats)}")
        asked.append(f)
    if as_json:
        asked.append("json")
    if as_csv:
        asked.append("csv")
    if len(set(asked)) > 1:
        raise BadInput(f"give one output format, not {' and '.join(dict.fromkeys(asked))}")
    return asked[0] if asked else "text"


def check_jobs_flag(jobs):
    """``--jobs N`` checked before any work, by the one check of a job count
    (:func:`cutlass_layout.core.pool.check_jobs`): N, or None when not given.

    Raises:
        BadInput: N below 1 (``--jobs 0: give a positive number``).
    """
    from .core.pool import check_jobs

    return check_jobs(jobs, "--jobs")


def check_plot_flag(plot_file) -> None:
    """``--plot FILE`` checked before any parse (:func:`cutlass_layout.reports.plot.check_plot_path`);
    nothing when not given.

    Raises:
        BadInput: a name that is not .svg or .png, a folder that does not exist, no matplotlib.
    """
    if plot_file:
        from .reports.plot import check_plot_path

        check_plot_path(plot_file)


def plot_written(path) -> None:
    """Say where ``--plot`` wrote its file (stderr: stdout may be JSON)."""
    click.echo(f"plot written to {Path(path).resolve()}", err=True)


def _lift_limits(ctx, param, value):
    if value:
        from .core.files import lift_limits

        lift_limits()  # for this command: cli.main puts them back
    return value


def _limits_help() -> str:
    from .core.files import Limits, size_text

    d = Limits()
    assert d.archive_bytes is not None and d.file_bytes is not None  # the defaults: limits
    return (
        f"Lift the limits ({size_text(d.archive_bytes)} a wheel, {size_text(d.file_bytes)} a file, "
        f"{d.grid_configs} configs)."
    )


def limits_option(f):
    """Decorator adding ``--no-limits`` (docs/exit-codes.md, "Limits"; handled here, the command does not
    see it): what a wheel may unpack, a header weigh and a grid hold."""
    return click.option(
        "--no-limits", is_flag=True, expose_value=False, is_eager=True, callback=_lift_limits, help=_limits_help()
    )(f)


# ------------------------------------------------------------------------------------------
# what the command line gave: flags that go together, values as typed, messages in flag words


def was_given(name: str) -> bool:
    """Whether the command line (not the default) gave the parameter ``name``."""
    src = click.get_current_context().get_parameter_source(name)
    return src is not None and src.name == "COMMANDLINE"


def given_beyond(takes: set[str]) -> str | None:
    """The first flag the command line gave whose parameter is not one of ``takes`` (its
    longest name), or None."""
    for param in click.get_current_context().command.params:
        if param.name not in takes and param.expose_value and was_given(param.name):
            return max(param.opts, key=len)
    return None


#: What ``layout --tactic`` honours besides the tactic: the install, the arch its kernels are
#: built for, the cache, and how the report is shown. Every other parameter is refused.
TACTIC_TAKES = {
    "tactic",
    "params",  # a tactic's Params are read either way
    "cutlass_src",
    "cuda_path",
    "arch",
    "no_cache",
    "no_budget",
    "fmt",
    "as_json",
    "check",
    "depth",
    "show",
    "plot_file",
}


def tactic_takes_no_more() -> None:
    """``layout --tactic`` lays out a kernel as the install builds it: a flag that would
    change or check that kernel (a config value, ``--header``, ``--check-kernel``,
    ``--verify``, ``--emit-probe``) cannot be honoured and is refused, naming it.

    Raises:
        BadInput: the first such flag given.
    """
    flag = given_beyond(TACTIC_TAKES)
    if flag is not None:
        raise BadInput(
            f"--tactic lays out the kernel as the install builds it: {flag} does not go "
            "with it (it takes --cutlass, --cuda-path, --arch, --no-cache, --check, "
            "--show, --depth, --format/--json, --plot and --params)"
        )


#: What ``audit --merge`` honours besides the files: how the result is shown and checked.
MERGE_TAKES = {"src", "merge", "fmt", "as_json", "check", "checks_text"}


def merge_takes_no_more() -> None:
    """``audit --merge`` joins what the shards laid out: a flag that would lay out, filter or
    verify anything is refused, naming it.

    Raises:
        BadInput: the first such flag given.
    """
    flag = given_beyond(MERGE_TAKES)
    if flag is not None:
        raise BadInput(
            f"--merge joins the shards' JSON as they were laid out: {flag} does not go with it (it "
            "takes the files, --format/--json, --check and --checks; give the audit's own flags to each shard)"
        )


#: What ``--show`` tabulates.
STRUCTS = ("kernel", "mainloop", "epilogue")


def show_structs(show: str) -> tuple[str, ...]:
    """``--show``'s structs (comma-separated; ``all`` is the three), checked before anything
    runs.

    Raises:
        BadInput: a value that names none of them.
    """
    parts = [s.strip() for s in show.split(",")]
    for s in parts:
        if s not in (*STRUCTS, "all"):
            raise BadInput(f"--show {s!r}: choose kernel, mainloop, epilogue or all (or several, comma-separated)")
    return STRUCTS if "all" in parts else tuple(dict.fromkeys(parts))


def typed_in_bytes(tiles) -> bool:
    """Whether the user typed every tile with K in bytes (``128x256x64B``): reports then
    show tiles in that unit."""
    tiles = [t for t in (tiles or []) if isinstance(t, str)]
    return bool(tiles) and all(t.strip().endswith("B") for t in tiles)


_SHAPE_WORD = re.compile(r"^\d+x\d+x\d+B?$", re.I)


#: What ``audit --checks`` takes: ``smem`` (a tactic over capacity: ``--check``'s meaning alone)
#: and ``launch`` (a launch finding: :meth:`~cutlass_layout.model.AuditResult.launch_failures`).
CHECKS = ("smem", "launch")


def checks_option(f):
    """``--checks LIST``: what ``--check`` fails on (implies ``--check``)."""
    return click.option(
        "--checks",
        "checks_text",
        default=None,
        metavar="LIST",
        help="What --check fails on, comma-separated: smem (the default), launch. Implies --check.",
    )(f)


def parse_checks(text: str | None) -> frozenset[str]:
    """The checks ``--checks`` names (``smem,launch``); ``smem`` where it is not given.

    Raises:
        BadInput: an empty list, or a name not in :data:`CHECKS`.
    """
    if text is None:
        return frozenset({"smem"})
    names = [w.strip() for w in text.split(",") if w.strip()]
    bad = [w for w in names if w not in CHECKS]
    if bad or not names:
        raise BadInput(f"--checks {text!r}: choose smem, launch (or both, comma-separated)")
    return frozenset(names)


def launch_check_fails(res, name_arch: bool = False) -> bool:
    """``audit --checks launch`` of one arch's audit: whether a tactic the runtime would try
    (or may try) has a launch finding (:meth:`~cutlass_layout.model.AuditResult.launch_failures`);
    says each finding on stderr, one line each (``launch check: <id>: <finding>``), then a
    summary."""
    failing = res.launch_failures()
    arch = f"{res.arch}: " if name_arch else ""
    for t in failing:
        tried = "tried by the runtime" if t.runtime_candidate else "the runtime may try it: its list could not be read"
        if res.provenance.get("library") == "cutlass_library":
            tried = "kept by the library's generator"
        for finding in t.launch_findings:
            click.echo(f"launch check: {arch}{t.id}: {finding} ({tried})", err=True)
    click.echo(launch_check_scope(res, arch), err=True)
    if failing:
        click.echo(f"check failed: {len(failing)} tactic(s) cannot launch on {res.arch} (launch findings)", err=True)
    return bool(failing)


def launch_check_scope(res, arch: str = "") -> str:
    """What ``--checks launch`` checked of one arch's audit and what it could not, one line
    (said whether it passes or fails, so a pass is not silence): the tactics the runtime
    tries or may try, by occupancy, cluster and TMA counts; never ``Params`` (an audit does not
    read them: ``layout --tactic`` does), nor a cluster set at run time (its kernel's
    ``can_implement`` checks it at launch)."""
    tried = [t for t in res.tactics if t.runtime_candidate is not False]
    run_time = sum(1 for t in tried if t.cluster_legality is not None and t.cluster_legality.verdict == "run_time")
    dynamic = f"; {run_time} cluster(s) set at run time" if run_time else ""
    return (
        f"launch check: {arch}{len(tried)} tactic(s) checked (occupancy, cluster, TMA transaction bytes); "
        f"not verified: Params (an audit does not read them: layout --tactic does){dynamic}"
    )


def audit_check_fails(res, name_arch: bool = False, checks: frozenset[str] = frozenset({"smem"})) -> bool:
    """``audit --check`` of one arch's audit: whether a tactic the runtime would try (or may
    try, where its list cannot be read) is over capacity (``smem`` in ``checks``, the default),
    has a launch finding (``launch`` in ``checks``: :func:`launch_check_fails`), or a filter
    matched nothing (so what was asked for was not checked); says why on stderr, one line per
    tactic (after the arch, with ``name_arch``: an audit of several), then a summary."""
    launch = launch_check_fails(res, name_arch) if "launch" in checks else False
    over = res.check_failures() if "smem" in checks else []
    library = res.provenance.get("library") == "cutlass_library"
    arch = f"{res.arch}: " if name_arch else ""
    for t in over:
        tried = (
            "kept by the library's generator"
            if library
            else "tried by the runtime"
            if t.runtime_candidate
            else "the runtime may try it: its candidate list could not be read"
        )
        click.echo(
            f"check: {arch}{t.id}: {t.kernel_bytes} B, over the {t.capacity_bytes} B capacity by "
            f"{-t.headroom_bytes} B ({tried})",
            err=True,
        )
    if over:
        what = "kernel(s) the library's generator keeps" if library else "tactic(s) the runtime would try"
        click.echo(f"check failed: {len(over)} {what} are over capacity on {res.arch}", err=True)
    elif res.unmatched and not launch:
        click.echo(
            f"check failed: {len(res.unmatched)} filter(s) matched no tactic"
            f"{f' on {res.arch}' if name_arch else ''}, so nothing they ask for was checked",
            err=True,
        )
    return bool(over or res.unmatched or launch)


def usage_hint(exc: click.ClickException) -> str:
    """What to do about a usage error a newcomer hits: unquoted braces in a tile, which the
    shell expanded into extra arguments."""
    msg = exc.format_message()
    if "unexpected extra argument" not in msg:
        return ""
    extra = re.findall(r"\(([^)]*)\)", msg)
    words = extra[-1].split() if extra else []
    if any(_SHAPE_WORD.match(w) for w in words):
        return (
            " (the shell expanded unquoted braces in a tile into several words: quote "
            "them, --tile '128x{128,256}x64B', or repeat --tile)"
        )
    if words and all(_ARCH_WORD.match(w) for w in words):
        return (
            " (the shell expanded unquoted braces in an arch into several words: quote "
            "them, --arch 'sm{90,120}', or repeat --arch)"
        )
    return ""


#: A word the shell made of ``--arch sm{90,120}``: ``sm120``.
_ARCH_WORD = re.compile(r"^sm_?\d+[af]?$")


#: The library's words for what the command names by a flag (library messages name none).
FLAG_WORDS = (
    ("GPU check: ", "--verify gpu: "),
    ("a GPU check ", "--verify gpu "),
    ("check your own type with nvcc (verify_nvcc)", "for your own type use --verify nvcc"),
    ("check it with nvcc: verify_nvcc", "use --verify nvcc"),
    ("give the arch of the local GPU", "give --arch of the local GPU"),
    ("from its header instead (a user type; ", "with --header FILE --type NAME ("),
    ("an audit diff compares one arch's kernels", "diff --audit compares one arch's kernels"),
    ("give the arch (arch=)", "give --arch"),
)


def in_flag_words(exc: Exception) -> str:
    """An error's line in the command's words (:data:`FLAG_WORDS`), with how to lift a limit
    it went over."""
    msg = str(exc)
    for lib, flag in FLAG_WORDS:
        msg = msg.replace(lib, flag)
    return f"{msg} (--no-limits lifts the limits)" if isinstance(exc, OverLimit) else msg


def exclude_list_option(f):
    """``audit --exclude-list FILE`` (:mod:`cutlass_layout.commands.exclude_list`)."""
    return click.option(
        "--exclude-list",
        "exclude_list_file",
        default=None,
        metavar="FILE",
        help="Also write CUTLASS_LIBRARY_EXCLUDE_KERNELS (the library's kernels over capacity or not compiling).",
    )(f)


def check_exclude_list(path, source, several: bool, shard) -> None:
    """``--exclude-list FILE`` before any work (nothing where ``path`` is None): CUTLASS's kernel
    library only, one arch, the whole audit (not a shard), a folder that exists.

    Raises:
        BadInput: any of these not so."""
    from .commands.exclude_list import check_exclude_path
    from .sources.library import is_kernel_library

    if path is None:
        return
    if not is_kernel_library(source):
        raise BadInput(
            "--exclude-list writes CUTLASS_LIBRARY_EXCLUDE_KERNELS for CUTLASS's kernel library "
            "(nvidia-cutlass==VERSION, a CUTLASS checkout): for a flashinfer install, --blocklist"
        )
    if several:
        raise BadInput(
            "--exclude-list with several arches: the list is one arch's (--architectures): "
            "write one file per arch, --arch A --exclude-list FILE"
        )
    if shard is not None:
        raise BadInput(
            "--exclude-list with --shard: a shard has some of the kernels; write it from the audit without --shard"
        )
    check_exclude_path(path)


def exclude_list_written(res, path) -> bool:
    """Write ``audit --exclude-list FILE`` and say on stderr what it holds (and, in notes, the
    kernels the library's filter drops beside them); False (it fails no check)."""
    from .commands.exclude_list import write_exclude_list

    el = write_exclude_list(res, path)
    click.echo(
        f"exclude list: wrote {path} (CUTLASS_LIBRARY_EXCLUDE_KERNELS, {res.arch}): "
        f"{el.counts['over_capacity']} over capacity, {el.counts['does_not_compile']} that do not "
        "compile",
        err=True,
    )
    for kept, name in el.also_dropped.items():
        click.echo(
            f"note: exclude list: it also drops {kept}, which fits (its name contains {name}: "
            "the library's filter matches a part of the name)",
            err=True,
        )
    return False


def diff_check_option(f):
    """``diff --audit --check`` (:func:`diff_check_fails`)."""
    return click.option(
        "--check",
        is_flag=True,
        help="With --audit: exit 1 when a kernel newly fails (over capacity or not compiling on the new side).",
    )(f)


def diff_check_fails(res) -> bool:
    """``diff --audit --check`` as a release gate: whether a kernel newly fails on the new side
    (:meth:`AuditDiff.newly_failing <cutlass_layout.model.AuditDiff.newly_failing>`: over
    capacity or not compiling there, and passing on the old side or not built by it); says
    which on stderr, one line per kernel (its bytes over the capacity, or its first error),
    then a summary. ``res``: a :class:`~cutlass_layout.model.DiffResult` with its audit."""
    from .model import Verdict

    a = res.audit
    rows = a.newly_failing()
    for r in rows:
        t = r.new
        was = f"was {r.old.verdict}" if r.old is not None else "only on the new side"
        if t.verdict == Verdict.OVER_CAPACITY:
            by = "" if t.headroom_bytes is None else f" by {-t.headroom_bytes} B"
            what = f"newly over capacity: {t.kernel_bytes} B, over the {t.capacity_bytes} B capacity{by}"
        else:
            what = f"newly {t.error.one_line() if t.error is not None else 'not laid out'}"
        click.echo(f"check: {r.id}: {what} ({was})", err=True)
    if rows:
        g = a.gate()
        click.echo(
            f"check failed: {len(rows)} kernel(s) newly fail on {a.arch} ({g.newly_over_capacity} over capacity, "
            f"{g.newly_not_compiling} not compiling) from {res.old.source} to {res.new.source}",
            err=True,
        )
    return bool(rows)


def refuse_without_audit(library: dict, check: bool) -> None:
    """``diff`` without ``--audit``: the kernel library's filters and ``--check`` are refused
    (they are of the kernels two installs build).

    Raises:
        BadInput: either given."""
    if library:
        raise BadInput(
            f"{', '.join('--' + k.replace('_', '-') for k in library)}: the kernel library's own "
            "filters, for diff --audit of two CUTLASS kernel libraries"
        )
    if check:
        raise BadInput(
            "--check fails on a kernel that newly fails, for diff --audit (the kernels two installs "
            "or kernel libraries build); for the trees' differences, --exit-code"
        )
