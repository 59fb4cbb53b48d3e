"""The ``cutlass-layout`` command: parses flags and calls the library, nothing more.

Every error becomes one line on stderr (``error: ...``) and an exit code from
:mod:`cutlass_layout.errors`; see the README's exit-code table.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from . import engine, probe, report
from .config import config_from_flags
from .errors import BadInput, CutlassLayoutError
from .options import config_options, source_options
from .probe import UserType
from .verify import verify_with_nvcc

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cutlass-layout")
def cli():
    """Exact shared-memory layouts of CUTLASS GEMM kernels, read from real CUTLASS headers."""


@cli.command("layout")
@config_options()
@source_options
@click.option("--header", type=str, default=None, metavar="FILE",
              help="A header declaring your own kernel or collective type (with --type).")
@click.option("--type", "type_name", default=None, metavar="NAME",
              help="Qualified name of the GemmKernel, CollectiveMainloop or CollectiveEpilogue to lay out.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report (schema cutlass-layout/layout/1).")
@click.option("--check", is_flag=True, help="Exit 1 when the kernel's SharedStorage is over capacity.")
@click.option("--check-kernel", is_flag=True,
              help="Also instantiate the kernel's device entry point, so asserts in operator() fire (slow: ~20 s).")
@click.option("--verify", type=str, default=None, metavar="nvcc",
              help="Compile the same probe with nvcc and compare every size and offset.")
@click.option("--emit-probe", type=str, default=None, metavar="FILE",
              help="Write the generated translation unit (with a main() printing the numbers) to FILE.")
@click.option("--plot", "plot_file", default=None, metavar="FILE",
              help="Draw the kernel SharedStorage as a memory map (.svg or .png).")
@click.option("--no-budget", is_flag=True,
              help="Skip the builder's stage budget (read from the same parse; slightly faster without).")
@click.option("--depth", default=3, show_default=True, type=click.IntRange(min=0),
              help="Member levels shown in the table (0 = all).")
@click.option("--show", default="kernel", show_default=True,
              help="Structs to tabulate: kernel, mainloop, epilogue or all (comma-separated).")
def layout_cmd(cutlass_src, cuda_path, header, type_name, as_json, check, check_kernel, verify,
               emit_probe, plot_file, no_budget, depth, show, **flags):
    """Lay out one kernel config's SharedStorage and compare it with the capacity."""
    if (header is None) != (type_name is None):
        raise BadInput("--header and --type go together")
    if header is not None:
        subject = UserType(header=header, type=type_name, arch=flags["arch"].lower())
    else:
        subject = config_from_flags(**flags)
    structs = ("kernel", "mainloop", "epilogue") if show == "all" else tuple(s.strip() for s in show.split(","))
    for s in structs:
        if s not in ("kernel", "mainloop", "epilogue"):
            raise BadInput(f"--show {s!r}: choose kernel, mainloop, epilogue or all")
    if verify not in (None, "nvcc"):
        raise BadInput(f"--verify {verify!r}: the only verifier is nvcc")
    if plot_file:
        from .plot import check_plot_path

        check_plot_path(plot_file)  # a bad name or no matplotlib: one line, before any parse
    tgt = engine.target(cutlass_src, cuda_path)
    if emit_probe:
        try:
            Path(emit_probe).write_text(probe.render([subject], with_main=True))
        except OSError as exc:
            raise BadInput(f"--emit-probe {emit_probe}: {exc.strerror or exc}") from None
    rep = engine.layout(subject, tgt, check_kernel_body=check_kernel, budget=not no_budget)
    if as_json:
        doc = rep.to_dict()
        if verify and rep.error is None:
            v = verify_with_nvcc([subject], [rep], tgt.tree.include_root)
            doc["verification"] = {"tool": "nvcc", "agree": v.agree, "sizes": v.sizes,
                                   "fields": v.fields, "mismatches": v.mismatches}
        click.echo(json.dumps(doc, indent=2))
    else:
        report.render(rep, max_depth=depth or None, structs=structs)
        if verify and rep.error is None:
            v = verify_with_nvcc([subject], [rep], tgt.tree.include_root)
            click.echo(v.summary())
    if plot_file and rep.error is None:
        from .plot import plot_layout

        plot_layout(rep, plot_file)
        click.echo(f"plot written to {plot_file}", err=True)
    if emit_probe:
        click.echo(f"probe written to {emit_probe} (compile: nvcc -std=c++17 -arch=... "
                   f"-I{tgt.tree.include_root} {emit_probe})", err=True)
    if rep.error is not None:
        if as_json:
            click.echo(f"error: {rep.error.one_line()}", err=True)
        sys.exit(3)
    if verify and not v.agree:
        sys.exit(4)
    if check and not rep.fits:
        sys.exit(1)


@cli.command("scan")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema cutlass-layout/scan/1).")
@click.option("--grep", default=None, metavar="NAME", help="Keep structs and constants whose name contains NAME.")
@click.option("--file-only", is_flag=True, help="Print only the files that match.")
def scan_cmd(path, as_json, grep, file_only):
    """List every *Storage struct and TMA-bytes/stages/capacity constant, without compiling.

    PATH is a header, a directory, or any source --cutlass accepts. Tolerant of cut-off and
    damaged headers (tree-sitter): what was recovered is reported with diagnostics.
    """
    from .scan import run_scan_cli

    sys.exit(run_scan_cli(path, as_json, grep, file_only))


@cli.command("source")
@source_options
def source_cmd(cutlass_src, cuda_path):
    """Show which CUTLASS tree and CUDA headers a --cutlass/--cuda-path resolves to."""
    tgt = engine.target(cutlass_src, cuda_path)
    t = tgt.tree
    click.echo(f"include root: {t.include_root}")
    click.echo(f"version.h:    {t.version}")
    click.echo(f"tree hash:    {t.tree_hash}")
    click.echo(f"origin:       {t.origin}")
    click.echo(f"CUDA headers: {tgt.cuda.path} ({tgt.cuda.source})")


def _register() -> None:
    from .diff import command as diff_command
    from .sweep import command as sweep_command

    cli.add_command(sweep_command)
    cli.add_command(diff_command)


_register()


def main(argv=None) -> int:
    """Console entry point. Returns (and exits with) the exit code."""
    try:
        cli.main(args=argv, prog_name="cutlass-layout", standalone_mode=False)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        code = 130
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        code = 2
    except CutlassLayoutError as exc:
        click.echo(f"error: {exc}", err=True)
        code = exc.exit_code
    except Exception as exc:  # a bug: one line, unless asked for the traceback
        if os.environ.get("CUTLASS_LAYOUT_DEBUG"):
            raise
        click.echo(f"internal error: {type(exc).__name__}: {exc} "
                   "(set CUTLASS_LAYOUT_DEBUG=1 for the traceback)", err=True)
        code = 4
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
