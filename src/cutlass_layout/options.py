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

SOURCE_HELP = ("CUTLASS source: include dir, checkout, site-packages dir, .whl file, installed "
               "distribution (flashinfer, nvidia-cutlass, sgl_kernel, vllm) or NAME==VERSION; "
               "append #SUBPATH to choose among several trees. Default: the installed one, "
               "else nvidia-cutlass 4.2.0.0 fetched into the cache.")
CUDA_PATH_HELP = "CUDA root, or 'pip' for the CUDA header wheels."

#: (flag, parameter name, ``layout``'s default, help), in the order ``--help`` lists them.
CONFIG_FLAGS = (
    ("--arch", "arch", "sm120", "sm120, sm121, sm90, sm100, sm101, sm103, sm110 (presets); "
                                "sm70, sm72, sm75, sm80, sm86, sm87, sm89 too with --header "
                                "(default there: the type's arch tag)."),
    ("--kernel", "kernel", "grouped", "dense, grouped (ptr-array) or sparse (SM120 block-scaled)."),
    ("--a", "a", None, "A element: nvfp4, mxfp4, mxfp8 (SM120, SM100; default nvfp4 on SM120), "
                       "e4m3 with --scales (SM120 blockwise); bf16, f16, e4m3, e5m2 (SM90, SM100; "
                       "default bf16)."),
    ("--b", "b", None, "B element (default: same as A)."),
    ("--tile", "tile", None,
     "TileShape MxNxK (K in elements) or MxNxKB (capital B: K in bytes of A's element) "
     "[default: 128x128x128; 128x128x256 for --kernel sparse]."),
    ("--cluster", "cluster", "1x1x1", "ClusterShape MxNxK."),
    ("--stages", "stages", "auto", "auto or N (StageCount<N>)."),
    ("--c", "c", None, "C element: void, bf16, f16, f32 (default from --preset)."),
    ("--d", "d", None, "D element: bf16, f16, f32 (default bf16); nvfp4, mxfp4, mxfp8 = D with "
                       "block scale factors (SFD, SM120 and SM100)."),
    ("--preset", "preset", "flashinfer", "Epilogue flavour: flashinfer, trtllm-moe, or vllm "
                                         "(SM120 blockwise FP8)."),
    ("--schedule", "schedule", "auto", "auto, cooperative or pingpong (SM90); 1sm or 2sm (SM100)."),
    ("--epilogue-schedule", "epilogue_schedule", None, "auto (the preset's), tma or nosmem "
                                                       "[default: auto; tma for SM90 grouped]."),
    ("--scales", "scales", None, "Blockwise scale granularity MxNxK of the SM120 FP8 GEMM "
                                 "(1x128x128 or 128x128x128; with --a e4m3)."),
)

_GRID_MORE = " Repeatable; braces expand (quote them): '128x{64,128}x128'."
_FILTER_MORE = " Repeatable: keeps the tactics that match one of the values."
#: The element kinds an audit's tactics are named with (``commands.audit.ELEMENT_BITS``;
#: tests/test_cli.py checks that the two agree).
_AUDIT_ELEMENTS = ("nvfp4, mxfp4, e2m1, mxfp6, mxfp6-e2m3, e3m2, e2m3, mxfp8, mxfp8-e5m2, e4m3, e5m2, "
                   "s8, bf16, f16, f32, tf32")
#: What the config flags say as ``audit``'s filters: what each keeps, and exactly the values
#: it accepts (layout's defaults do not apply); the flags that do not filter are refused.
_FILTER_HELP = {"arch": "The arch whose builds are audited: sm120 (default), sm121 (sm120's builds), "
                        "sm100, sm103 or sm90. Repeatable (braces expand, quoted: 'sm{90,120}'): one "
                        "audit per arch; all: every arch the install has builders for (not sm121 "
                        "unless named; CUTLASS's library: name the arches).",
                "kernel": "Keep the tactics of this kernel: dense, grouped (ptr-array) or sparse.",
                "a": f"Keep the tactics whose A element (with swap_ab: the weight) is this: {_AUDIT_ELEMENTS}.",
                "b": f"Keep the tactics whose B element is this: {_AUDIT_ELEMENTS}.",
                "tile": "Keep the tactics of this tile: MxNxK (K in elements) or MxNxKB (capital B: "
                        "K in bytes of the activation, as TensorRT-LLM's CtaShape names count it); "
                        "the CTA tile the tile enum names, or the kernel's MMA tile where it is "
                        "another (SM100 2SM: 2M, 256x64x128B finds CtaShape128x64x128B's 2SM "
                        "kernels; SM103: 3K).",
                "cluster": "Keep the tactics of this ClusterShape MxNxK.",
                "stages": "Keep the tactics of N stages (auto keeps all).",
                "d": f"Keep the tactics whose output is this: {_AUDIT_ELEMENTS}, void.",
                "schedule": "Keep the tactics whose kernel schedule is cooperative or pingpong (auto keeps all).",
                "c": "Not recorded per tactic: refused here (the flag is shared with layout).",
                "preset": "Not recorded per tactic: refused here (see --family moe).",
                "epilogue_schedule": "Not recorded per tactic: refused here (the flag is shared with layout).",
                "scales": "Not recorded per tactic: refused here (the flag is shared with layout)."}
#: The audit filters that keep tactics (the others are refused).
_REFUSED = ("arch", "c", "preset", "epilogue_schedule", "scales")


def config_options(*, repeatable: bool = False, filters: bool = False):
    """Decorator adding every :data:`CONFIG_FLAGS` option: once each with its default, or
    (``repeatable``) any number of times each, braces expanding (a grid), or (``filters``,
    for ``audit``) any number of times each, as filters of what was found."""
    def decorate(f):
        for flag, name, default, help_ in reversed(CONFIG_FLAGS):
            if filters:
                f = click.option(flag, name, multiple=True,
                                 help=_FILTER_HELP[name] + ("" if name in _REFUSED else _FILTER_MORE))(f)
            elif repeatable:
                f = click.option(flag, name, multiple=True, help=help_ + _GRID_MORE)(f)
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
                     help="Qualified name of the kernel (3.x GemmKernel, 2.x kernel or device "
                          "Gemm), CollectiveMainloop or CollectiveEpilogue to lay out.")(f)
    return click.option("--header", type=str, default=None, metavar="FILE",
                        help="A header declaring your own kernel or collective type (with "
                             "--type); --stages N defines its STAGES macro.")(f)


def cuda_path_option(f):
    """Decorator adding ``--cuda-path``."""
    return click.option("--cuda-path", default=None, help=CUDA_PATH_HELP)(f)


def executor_option(f):
    """Decorator adding ``--executor local|dask://HOST:PORT`` (parameter ``executor``)."""
    return click.option("--executor", default=None, metavar="local|dask://HOST:PORT",
                        help="Where the parses run: this machine (local), or a Dask scheduler's "
                             "cluster (the dask extra); default: DASK_SCHEDULER_ADDRESS where set, "
                             "else local.")(f)


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
                         help=f"{where}: its generator's --instantiation-level (SM90/SM100; max, or 1111).")(f)
        f = click.option("--exclude-kernels", default=None, metavar="FILTERS",
                         help=f"{where}: its generator's --exclude-kernels.")(f)
        f = click.option("--ignore-kernels", default=None, metavar="FILTERS",
                         help=f"{where}: its generator's --ignore-kernels (only with --kernels).")(f)
        return click.option("--kernels", "library_kernels", default=None, metavar="FILTERS",
                            help=f"{where}: its generator's own --kernels (comma-separated name filters, * "
                                 "between parts that must appear in order; all: every kernel; default: its "
                                 "default set).")(f)
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
                            help="Output: text (tables), markdown (for GitHub issues and PRs), "
                                 + ", ".join(x for x in formats if x not in ("text", "markdown"))
                                 + ". Default text.")(f)
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
    return (f"Lift the limits on input: {size_text(d.archive_bytes)} unpacked from one wheel, "
            f"{size_text(d.file_bytes)} per header or file, {d.grid_configs} configs per grid.")


def limits_option(f):
    """Decorator adding ``--no-limits`` (README "Limits"; handled here, the command does not
    see it): what a wheel may unpack, a header weigh and a grid hold."""
    return click.option("--no-limits", is_flag=True, expose_value=False, is_eager=True,
                        callback=_lift_limits, help=_limits_help())(f)
