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
    ("--arch", "arch", "sm120", "sm120, sm121 or sm90."),
    ("--kernel", "kernel", "grouped", "dense or grouped (ptr-array)."),
    ("--a", "a", None, "A element: nvfp4, mxfp4, mxfp8 (SM120, default nvfp4); bf16, f16, e4m3, "
                       "e5m2 (SM90, default bf16)."),
    ("--b", "b", None, "B element (default: same as A)."),
    ("--tile", "tile", "128x128x128",
     "TileShape MxNxK (K in elements) or MxNxKB (K in bytes of A's element)."),
    ("--cluster", "cluster", "1x1x1", "ClusterShape MxNxK."),
    ("--stages", "stages", "auto", "auto or N (StageCount<N>)."),
    ("--c", "c", None, "C element: void, bf16, f16, f32 (default from --preset)."),
    ("--d", "d", None, "D element: bf16, f16, f32 (default bf16)."),
    ("--preset", "preset", "flashinfer", "Epilogue flavour: flashinfer or trtllm-moe."),
    ("--schedule", "schedule", "auto", "auto, cooperative or pingpong (SM90)."),
    ("--epilogue-schedule", "epilogue_schedule", "auto", "auto (the preset's), tma or nosmem."),
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


def cuda_path_option(f):
    """Decorator adding ``--cuda-path``."""
    return click.option("--cuda-path", default=None, help=CUDA_PATH_HELP)(f)


def source_options(f):
    """Decorator adding ``--cutlass SRC`` (parameter ``cutlass_src``) and ``--cuda-path``."""
    f = cuda_path_option(f)
    return click.option("--cutlass", "cutlass_src", default=None, metavar="SRC", help=SOURCE_HELP)(f)


def _lift_limits(ctx, param, value):
    if value:
        from .inputs import lift_limits

        lift_limits()  # for this command: cli.main puts them back
    return value


def _limits_help() -> str:
    from .inputs import Limits, size_text

    d = Limits()
    return (f"Lift the limits on input: {size_text(d.archive_bytes)} unpacked from one wheel, "
            f"{size_text(d.file_bytes)} per header or file, {d.grid_configs} configs per grid.")


def limits_option(f):
    """Decorator adding ``--no-limits`` (README "Limits"; handled here, the command does not
    see it): what a wheel may unpack, a header weigh and a grid hold."""
    return click.option("--no-limits", is_flag=True, expose_value=False, is_eager=True,
                        callback=_lift_limits, help=_limits_help())(f)
