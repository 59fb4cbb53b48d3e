"""Click options shared by the commands: one table of config flags, the source flags and the
output format.

Every command that takes a config takes the same flags, from :data:`CONFIG_FLAGS`:
``layout`` each once, with the defaults below; ``sweep`` and ``diff`` each repeatedly (the
grid is the product, braces expand); ``audit`` each repeatedly, as filters (a tactic is kept
when it matches one value of every flag given). The flag strings become a :class:`Config`
in :func:`cutlass_layout.subjects.config.config_from_flags`, or a filter in
:func:`cutlass_layout.commands.audit.tactic_filter`.
"""

from __future__ import annotations

import click

from .errors import BadInput

SOURCE_HELP = ("CUTLASS source: a folder, .whl, installed distribution or NAME==VERSION "
               "[default: the installed one].")
CUDA_PATH_HELP = "CUDA root, or 'pip' for the CUDA header wheels."

#: (flag, parameter name, ``layout``'s default, help), in the order ``--help`` lists them.
CONFIG_FLAGS = (
    ("--arch", "arch", "sm120", "sm120, sm121, sm90, sm100, sm101, sm103, sm110; sm70 to sm89 "
                                "with --header."),
    ("--kernel", "kernel", "grouped", "dense, grouped (ptr-array) or sparse (SM120 block-scaled)."),
    ("--a", "a", None, "A element: nvfp4, mxfp4, mxfp8 (SM120, SM100); bf16, f16, e4m3, e5m2 "
                       "(SM90, SM100)."),
    ("--b", "b", None, "B element (default: same as A)."),
    ("--tile", "tile", None, "TileShape MxNxK, or MxNxKB with K in bytes of A "
                             "[default: 128x128x128; sparse: 128x128x256]."),
    ("--cluster", "cluster", "1x1x1", "ClusterShape MxNxK."),
    ("--stages", "stages", "auto", "auto or N (StageCount<N>)."),
    ("--c", "c", None, "C element: void, bf16, f16, f32 (default from --preset)."),
    ("--d", "d", None, "D element: bf16 (default), f16, f32; nvfp4, mxfp4, mxfp8 with scale "
                       "factors (SFD)."),
    ("--preset", "preset", "flashinfer", "Epilogue flavour: flashinfer, trtllm-moe, or vllm "
                                         "(SM120 blockwise FP8)."),
    ("--schedule", "schedule", "auto", "auto, cooperative or pingpong (SM90); 1sm or 2sm (SM100)."),
    ("--epilogue-schedule", "epilogue_schedule", None, "auto (the preset's), tma or nosmem."),
    ("--scales", "scales", None, "SM120 FP8 blockwise scales MxNxK: 1x128x128 or 128x128x128 "
                                 "(with --a e4m3)."),
)

#: The element kinds an audit's tactics are named with (``commands.audit.ELEMENT_BITS``;
#: tests/test_cli.py checks that the two agree).
_AUDIT_ELEMENTS = ("nvfp4, mxfp4, e2m1, mxfp6, mxfp6-e2m3, e3m2, e2m3, mxfp8, mxfp8-e5m2, e4m3, e5m2, "
                   "s8, bf16, f16, f32, tf32")
#: What the config flags say as ``audit``'s filters: what each keeps, and exactly the values
#: it accepts (layout's defaults do not apply; ``--b`` and ``--d`` take ``--a``'s kinds); the
#: flags that do not filter (:data:`NOT_FILTERS`) are refused, and left out of ``--help``.
_FILTER_HELP = {"arch": "The arch audited: sm120 (default), sm121, sm100, sm103 or sm90; "
                        "repeatable, or all.",
                "kernel": "Keep the tactics of this kernel: dense, grouped (ptr-array) or sparse.",
                "a": f"Keep the tactics whose A element (with swap_ab: the weight) is this: {_AUDIT_ELEMENTS}.",
                "b": "Keep the tactics whose B element is this (a kind --a takes).",
                "tile": "Keep the tactics of this tile: MxNxK, or MxNxKB with K in bytes of the "
                        "activation.",
                "cluster": "Keep the tactics of this ClusterShape MxNxK.",
                "stages": "Keep the tactics of N stages (auto keeps all).",
                "d": "Keep the tactics whose output is this (a kind --a takes, or void).",
                "schedule": "Keep the tactics of schedule cooperative or pingpong (auto keeps all).",
                "c": "Not recorded per tactic: refused here.",
                "preset": "Not recorded per tactic: refused here (see --family moe).",
                "epilogue_schedule": "Not recorded per tactic: refused here.",
                "scales": "Not recorded per tactic: refused here."}
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
                f = click.option(flag, name, multiple=True, help=_FILTER_HELP[name],
                                 hidden=name in NOT_FILTERS)(f)
            elif repeatable:
                f = click.option(flag, name, multiple=True, help=help_)(f)
            else:
                f = click.option(flag, name, default=default, show_default=default is not None,
                                 help=help_)(f)
        return f
    return decorate


def header_options(f):
    """Decorator adding ``--header FILE``, ``--type NAME``, ``-I DIR`` (parameter
    ``includes``) and ``-D NAME[=VALUE]`` (parameter ``defines``), both repeatable: a user's
    own kernel type instead of a preset."""
    f = click.option("-D", "--define", "defines", multiple=True, metavar="NAME[=VALUE]",
                     help="With --header: define a macro for the header (repeatable).")(f)
    f = click.option("-I", "--include", "includes", multiple=True, metavar="DIR",
                     help="With --header: an include directory the header needs (repeatable).")(f)
    f = click.option("--type", "type_name", default=None, metavar="NAME",
                     help="Qualified name of the kernel or collective type to lay out.")(f)
    return click.option("--header", type=str, default=None, metavar="FILE",
                        help="A header declaring your own kernel or collective type (with --type).")(f)


def cuda_path_option(f):
    """Decorator adding ``--cuda-path``."""
    return click.option("--cuda-path", default=None, help=CUDA_PATH_HELP)(f)


def executor_option(f):
    """Decorator adding ``--executor local|dask://HOST:PORT`` (parameter ``executor``)."""
    return click.option("--executor", default=None, metavar="local|dask://HOST:PORT",
                        help="Where the parses run: local, or a Dask cluster "
                             "[default: DASK_SCHEDULER_ADDRESS, else local].")(f)


def source_options(f):
    """Decorator adding ``--cutlass SRC`` (parameter ``cutlass_src``) and ``--cuda-path``."""
    f = cuda_path_option(f)
    return click.option("--cutlass", "cutlass_src", default=None, metavar="SRC", help=SOURCE_HELP)(f)


def library_options(where: str):
    """Decorator adding CUTLASS's kernel library's own filters, as its generator takes them:
    ``--kernels`` (parameter ``library_kernels``), ``--ignore-kernels``, ``--exclude-kernels``
    and ``--instantiation-level`` (``generator.py``'s flags of those names); ``where`` begins
    each help text (what they apply to). :func:`library_filters` gathers them."""
    def decorate(f):
        f = click.option("--instantiation-level", default=None, metavar="LEVEL",
                         help=f"{where}: its generator's --instantiation-level (max, or 1111).")(f)
        f = click.option("--exclude-kernels", default=None, metavar="FILTERS",
                         help=f"{where}: its generator's --exclude-kernels.")(f)
        f = click.option("--ignore-kernels", default=None, metavar="FILTERS",
                         help=f"{where}: its generator's --ignore-kernels (with --kernels).")(f)
        return click.option("--kernels", "library_kernels", default=None, metavar="FILTERS",
                            help=f"{where}: its generator's --kernels (comma-separated; all: every "
                                 "kernel).")(f)
    return decorate


def library_filters(library_kernels, ignore_kernels, exclude_kernels, instantiation_level) -> dict:
    """The filters of :func:`library_options` that were given, as :func:`cutlass_layout.api.audit`
    and :func:`cutlass_layout.api.diff` take them (``kernels``, ``ignore_kernels``, ...)."""
    given = {"kernels": library_kernels, "ignore_kernels": ignore_kernels, "exclude_kernels": exclude_kernels,
             "instantiation_level": instantiation_level}
    return {k: v for k, v in given.items() if v is not None}


def format_options(*formats: str):
    """Decorator adding ``--format`` (parameter ``fmt``, one of ``formats``, default
    ``text``) and the shorthands ``--json`` (``as_json``) and, where CSV is a format,
    ``--csv`` (``as_csv``); :func:`output_format` reconciles them."""
    def decorate(f):
        if "csv" in formats:
            f = click.option("--csv", "as_csv", is_flag=True, help="Same as --format csv.")(f)
        f = click.option("--json", "as_json", is_flag=True, help="Same as --format json.")(f)
        return click.option("--format", "fmt", default=None, metavar="|".join(formats),
                            help="Output: text (the default), markdown, "
                                 + ", ".join(x for x in formats if x not in ("text", "markdown"))
                                 + ".")(f)
    return decorate


def output_format(fmt: str | None, formats: tuple[str, ...], as_json: bool = False,
                  as_csv: bool = False) -> str:
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


def _lift_limits(ctx, param, value):
    if value:
        from .core.files import lift_limits

        lift_limits()  # for this command: cli.main puts them back
    return value


def _limits_help() -> str:
    from .core.files import Limits, size_text

    d = Limits()
    return (f"Lift the input limits ({size_text(d.archive_bytes)} per wheel, {size_text(d.file_bytes)} "
            f"per file, {d.grid_configs} configs per grid).")


def limits_option(f):
    """Decorator adding ``--no-limits`` (README "Limits"; handled here, the command does not
    see it): what a wheel may unpack, a header weigh and a grid hold."""
    return click.option("--no-limits", is_flag=True, expose_value=False, is_eager=True,
                        callback=_lift_limits, help=_limits_help())(f)
