"""Click options shared by the commands: one table of config flags, and the source flags.

``layout`` takes each config flag once, with the defaults below; ``sweep`` takes each one
repeatedly (the grid is the product). The flag strings become a :class:`Config` in
:func:`cutlass_layout.config.config_from_flags` either way.
"""

from __future__ import annotations

import click

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
    ("--tile", "tile", "128x128x128",
     "TileShape MxNxK (K in elements) or MxNxKB (K in bytes of A's element)."),
    ("--cluster", "cluster", "1x1x1", "ClusterShape MxNxK."),
    ("--stages", "stages", "auto", "auto or N (StageCount<N>)."),
    ("--c", "c", None, "C element: void, bf16, f16, f32 (default from --preset)."),
    ("--d", "d", None, "D element: bf16, f16, f32 (default bf16); nvfp4, mxfp4, mxfp8 = D with "
                       "block scale factors (SFD, SM120 and SM100)."),
    ("--preset", "preset", "flashinfer", "Epilogue flavour: flashinfer, trtllm-moe, or vllm "
                                         "(SM120 blockwise FP8)."),
    ("--schedule", "schedule", "auto", "auto, cooperative or pingpong (SM90); 1sm or 2sm (SM100)."),
    ("--epilogue-schedule", "epilogue_schedule", "auto", "auto (the preset's), tma or nosmem."),
    ("--scales", "scales", None, "Blockwise scale granularity MxNxK of the SM120 FP8 GEMM "
                                 "(1x128x128 or 128x128x128; with --a e4m3)."),
)


def config_options(*, repeatable: bool = False):
    """Decorator adding every :data:`CONFIG_FLAGS` option: once each with its default, or
    (``repeatable``) any number of times each, braces expanding (the sweep's grid)."""
    def decorate(f):
        for flag, name, default, help_ in reversed(CONFIG_FLAGS):
            if repeatable:
                more = " Repeatable; braces expand (quote them): '128x{64,128}x128'."
                f = click.option(flag, name, multiple=True, help=help_ + more)(f)
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


def source_options(f):
    """Decorator adding ``--cutlass SRC`` (parameter ``cutlass_src``) and ``--cuda-path``."""
    f = cuda_path_option(f)
    return click.option("--cutlass", "cutlass_src", default=None, metavar="SRC", help=SOURCE_HELP)(f)
