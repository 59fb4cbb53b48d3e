"""The ``cutlass-layout`` command: flags to library calls and results to reports, nothing more.

Every error becomes one line on stderr (``error: ...``) and an exit code from
:mod:`cutlass_layout.errors`; see the README's exit-code table.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from . import engine, probe
from .config import config_from_flags, parse_stages
from .errors import BadInput, CutlassLayoutError
from .options import CONFIG_FLAGS, config_options, cuda_path_option, header_options, source_options
from .probe import UserType
from .reports import layout as layout_report
from .verify import verify_with_nvcc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cutlass-layout")
def cli():
    """Exact shared-memory layouts of CUTLASS GEMM kernels, read from real CUTLASS headers."""


def _check_plot(plot_file) -> None:
    if plot_file:
        from .reports.plot import check_plot_path

        check_plot_path(plot_file)  # a bad name or no matplotlib: one line, before any parse


# ------------------------------------------------------------------------------------------
# layout


@cli.command("layout")
@config_options()
@source_options
@header_options
@click.option("--tactic", default=None, metavar="ID",
              help="One tactic of the flashinfer named by --cutlass, as `audit` lists it (its id, or a unique part).")
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
@click.option("--no-cache", is_flag=True, help="Lay out again instead of reading the results cache (the result is still stored).")
@click.option("--depth", default=3, show_default=True, type=click.IntRange(min=0),
              help="Member levels shown in the table (0 = all).")
@click.option("--show", default="kernel", show_default=True,
              help="Structs to tabulate: kernel, mainloop, epilogue or all (comma-separated).")
def layout_cmd(cutlass_src, cuda_path, header, type_name, includes, defines, tactic, as_json, check,
               check_kernel, verify, emit_probe, plot_file, no_budget, no_cache, depth, show, **flags):
    """Lay out one kernel config's SharedStorage and compare it with the capacity."""
    if tactic is not None:
        return _layout_tactic(tactic, cutlass_src, cuda_path, flags["arch"].lower(), as_json,
                              check, depth, show, plot_file)
    if header is not None or type_name is not None or includes or defines:
        subject = user_type_from_flags(header, type_name, includes, defines, flags)
    else:
        subject = config_from_flags(**flags)
    structs = ("kernel", "mainloop", "epilogue") if show == "all" else tuple(s.strip() for s in show.split(","))
    for s in structs:
        if s not in ("kernel", "mainloop", "epilogue"):
            raise BadInput(f"--show {s!r}: choose kernel, mainloop, epilogue or all")
    if verify not in (None, "nvcc"):
        raise BadInput(f"--verify {verify!r}: the only verifier is nvcc")
    _check_plot(plot_file)
    tgt = engine.target(cutlass_src, cuda_path)
    if emit_probe:
        try:
            Path(emit_probe).write_text(probe.render([subject], with_main=True))
        except OSError as exc:
            raise BadInput(f"--emit-probe {emit_probe}: {exc.strerror or exc}") from None
    try:
        rep = engine.layout(subject, tgt, check_kernel_body=check_kernel, budget=not no_budget,
                            use_cache=not no_cache)
    except BadInput as exc:
        if check_kernel and "kernel body" in str(exc):
            raise BadInput(f"--check-kernel: {exc}") from None
        raise
    if as_json:
        doc = rep.to_dict()
        if verify and rep.error is None:
            v = verify_with_nvcc([subject], [rep], tgt.tree.include_root)
            doc["verification"] = {"tool": "nvcc", "agree": v.agree, "sizes": v.sizes,
                                   "fields": v.fields, "mismatches": v.mismatches}
        click.echo(json.dumps(doc, indent=2))
    else:
        layout_report.render(rep, max_depth=depth or None, structs=structs)
        if verify and rep.error is None:
            v = verify_with_nvcc([subject], [rep], tgt.tree.include_root)
            click.echo(v.summary())
    if plot_file and rep.error is None:
        from .reports.plot import plot_layout

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


def _given(name: str) -> bool:
    """Whether the command line (not the default) gave the parameter ``name``."""
    src = click.get_current_context().get_parameter_source(name)
    return src is not None and src.name == "COMMANDLINE"


def user_type_from_flags(header, type_name, includes, defines, flags, stages=None) -> UserType:
    """``--header/--type`` (with ``-I``/``-D``): the :class:`UserType`; ``--arch`` when given
    (else the type's arch tag decides), ``--stages N`` defines its ``STAGES`` macro. The
    preset flags do not go with it."""
    if header is None or type_name is None:
        raise BadInput("--header and --type go together (and -I/-D go with them)")
    extra = [flag for flag, name, _, _ in CONFIG_FLAGS
             if name not in ("arch", "stages") and _given(name)]
    if extra:
        raise BadInput(f"{extra[0]} describes a preset; with --header the type in the header is "
                       "what is laid out (only --arch and --stages go with it)")
    arch = flags["arch"] if _given("arch") else None
    if stages is None:
        stages = parse_stages(flags["stages"]) if isinstance(flags["stages"], str) else None
    return UserType(header=header, type=type_name, arch=arch.lower() if arch else None,
                    stages=stages, includes=tuple(includes), defines=tuple(defines))


def _layout_tactic(tactic, src, cuda_path, arch, as_json, check, depth, show, plot_file):
    """``layout --tactic``: one tactic of an audit (from the results cache when it has run)."""
    from .audit import audit, find_tactic

    structs = ("kernel", "mainloop", "epilogue") if show == "all" else tuple(s.strip() for s in show.split(","))
    _check_plot(plot_file)
    t = find_tactic(audit(src, arch, cuda_path=cuda_path, progress=True), tactic)
    rep = t.report
    if as_json:
        click.echo(json.dumps({**rep.to_dict(), "tactic": t.to_dict()}, indent=2))
    else:
        layout_report.render(rep, max_depth=depth or None, structs=structs)
    if plot_file and rep.error is None:
        from .reports.plot import plot_layout

        plot_layout(rep, plot_file)
    if rep.error is not None:
        sys.exit(3)
    if check and not rep.fits:
        sys.exit(1)


# ------------------------------------------------------------------------------------------
# sweep


@cli.command("sweep")
@config_options(repeatable=True)
@click.option("--grid", "grid_file", default=None, metavar="FILE",
              help="TOML or JSON grid file (instead of config flags).")
@header_options
@source_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema cutlass-layout/sweep/1).")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV, one row per config.")
@click.option("--plot", "plot_file", default=None, metavar="FILE",
              help="Draw an SVG or PNG: kernel bytes per config against the capacity "
                   "(a memory map when the sweep is one config).")
@click.option("--no-cache", is_flag=True, help="Recompute every config (results are still stored).")
@click.option("--jobs", type=int, default=None, metavar="N",
              help="Worker processes (default: the number of CPUs).")
def sweep_cmd(grid_file, header, type_name, includes, defines, cutlass_src, cuda_path, as_json,
              as_csv, plot_file, no_cache, jobs, **flags):
    """Lay out a grid of configs: which tiles and stage counts fit, and the largest stage
    count that fits for each. Exit 0 whatever the verdicts.

    With --header/--type, your own kernel type (for each --arch given, else its arch tag's;
    for each --stages N, its STAGES macro): the most stages that fit is searched over STAGES.
    """
    from .grid import expand_braces, grid_configs, load_grid_file
    from .reports.sweep import render, to_csv
    from .sweep import sweep

    given = {k: list(v) for k, v in flags.items() if v}
    if grid_file and given:
        raise BadInput("give either --grid FILE or config flags, not both")
    user = None
    if header is not None or type_name is not None or includes or defines:
        if grid_file:
            raise BadInput("give either --grid FILE or --header/--type, not both")
        stages = [parse_stages(v) for raw in given.get("stages", ["auto"]) for v in expand_braces(raw)]
        archs_ = [v for raw in given.get("arch", []) for v in expand_braces(raw)] or [None]
        user = [user_type_from_flags(header, type_name, includes, defines,
                                     {"arch": a, "stages": None}, stages=n)
                for a in archs_ for n in dict.fromkeys(stages)]
    if as_json and as_csv:
        raise BadInput("give either --json or --csv, not both")
    if jobs is not None and jobs < 1:
        raise BadInput(f"--jobs {jobs}: give a positive number")
    _check_plot(plot_file)
    if user is not None:
        configs = user
    else:
        configs = load_grid_file(grid_file) if grid_file else grid_configs(given)
    if not configs:
        raise BadInput("the grid is empty")
    result = sweep(configs, cutlass_src, cuda_path=cuda_path, jobs=jobs,
                   use_cache=not no_cache, progress=sys.stderr.isatty())
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    elif as_csv:
        click.echo(to_csv(result), nl=False)
    else:
        render(result)
    if plot_file:
        from .reports.plot import plot_sweep_result

        plot_sweep_result(result, plot_file)


# ------------------------------------------------------------------------------------------
# diff


@cli.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema cutlass-layout/diff/1).")
@click.option("--exit-code", is_flag=True, help="Exit 1 when there are differences (like git diff --exit-code).")
@click.option("--tile", multiple=True, help="Tile(s) MxNxK, braces allowed (quote them): '128x{32,64}x256'. Repeatable.")
@click.option("--kernel", multiple=True, help="dense and/or grouped (default: the families both trees have).")
@click.option("--a", "a", multiple=True, help="A element kind(s) (default nvfp4).")
@click.option("--preset", multiple=True, help="flashinfer and/or trtllm-moe (default flashinfer).")
@click.option("--stages", multiple=True, help="auto and/or N (default auto).")
@click.option("--grid", "grid_file", default=None, metavar="FILE", help="TOML/JSON grid file (as for sweeps).")
@click.option("--structural-only", is_flag=True, help="Only the tree-sitter diff of storage structs and constants.")
@click.option("--numeric-only", is_flag=True, help="Only the exact layouts of the config grid.")
@click.option("--audit", "with_audit", is_flag=True,
              help="Compare the kernels two flashinfer installs build (their audits) instead.")
@click.option("--arch", default="sm120", show_default=True, help="With --audit: the arch audited.")
@click.option("--family", default=None, metavar="NAME", help="With --audit: keep one family (moe, ...).")
@cuda_path_option
def diff_cmd(old, new, as_json, exit_code, tile, kernel, a, preset, stages, grid_file,
             structural_only, numeric_only, with_audit, arch, family, cuda_path):
    """Diff the shared-memory layouts of two CUTLASS trees (OLD -> NEW).

    OLD and NEW are anything --cutlass accepts (include dir, checkout, wheel, installed
    distribution, NAME==VERSION such as flashinfer-python==0.6.8). Shows storage structs and
    constants that changed in the headers (structural), and, for a grid of configs, stages,
    SharedStorage sizes, TMA bytes, member offsets and the capacity verdict on both
    (numeric). Default grid: SM120 NVFP4 grouped and dense (those both trees have), tiles
    {128,256}x{32,64,128,256}x{128,256}, flashinfer flavour, stages auto.

    With --audit, OLD and NEW are flashinfer installs (as `audit` takes them): the kernels
    each builds for --arch are laid out (or read from the cache) and matched by tactic id and
    tile; verdict changes first, then byte or stage changes with the members that moved, then
    tactics only on one side.

    Exit 0 (with or without differences; 1 with --exit-code when there are any), 2 bad input.
    """
    from .diff import diff, grid_from_values, resolve_side
    from .grid import load_grid_file
    from .reports.diff import render_text

    if structural_only and numeric_only:
        raise BadInput("--structural-only and --numeric-only exclude each other")
    if with_audit:
        if structural_only or numeric_only or grid_file or tile or kernel or a or preset or stages:
            raise BadInput("--audit compares the kernels the installs build: it takes no grid "
                           "flags, --structural-only or --numeric-only")
        res = diff(old, new, audit=True, arch=arch.lower(), family=family, cuda_path=cuda_path)
        res.old.source, res.new.source = old, new
        click.echo(json.dumps(res.to_dict(), indent=2) if as_json else render_text(res), nl=not not as_json)
        if exit_code and res.has_differences:
            sys.exit(1)
        return
    old_tree = resolve_side(old, "old")
    new_tree = resolve_side(new, "new")
    values = {k: list(v) for k, v in (("tile", tile), ("kernel", kernel), ("a", a),
                                       ("preset", preset), ("stages", stages)) if v}
    if grid_file and values:
        raise BadInput("--grid FILE cannot be combined with --tile/--kernel/--a/--preset/--stages")
    if grid_file:
        configs, source = load_grid_file(grid_file), "file"
    elif values:
        configs, source = grid_from_values(values, old_tree, new_tree), "flags"
    else:
        configs, source = None, "default"
    if structural_only and source != "default":
        raise BadInput("--structural-only takes no grid flags")
    res = diff(old_tree, new_tree, configs, structural=not numeric_only,
               numeric=not structural_only, cuda_path=cuda_path, grid_source=source)
    res.old.source, res.new.source = old, new
    if as_json:
        click.echo(json.dumps(res.to_dict(), indent=2))
    else:
        click.echo(render_text(res), nl=False)
    if exit_code and res.has_differences:
        sys.exit(1)


# ------------------------------------------------------------------------------------------
# scan


def run_scan_cli(path, json_out: bool = False, grep: str | None = None,
                 file_only: bool = False) -> int:
    """``cutlass-layout scan PATH [--json] [--grep NAME] [--file-only]``.

    Prints the result to stdout (text, or JSON with ``json_out``) and returns the exit code:
    0 when the scan ran (diagnostics included), 2 for bad input, after printing
    ``error: <one line>`` to stderr. Never lets a traceback out for bad input.
    """
    from .reports.scan import render_text
    from .scan import scan

    try:
        result = scan(path, grep=grep)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except (OSError, RecursionError) as exc:  # e.g. permission denied deep in a tree
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if json_out:
        sys.stdout.write(json.dumps(result.to_dict(file_only=file_only), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result, file_only=file_only))
    return 0


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
    sys.exit(run_scan_cli(path, as_json, grep, file_only))


@cli.command("audit")
@click.argument("src", required=False, metavar="SRC")
@click.option("--arch", default="sm120", show_default=True,
              help="sm120 or sm121 (the same builds), sm90.")
@click.option("--family", default=None, metavar="NAME",
              help="Keep one family: moe (TensorRT-LLM's MoE grouped GEMM) or a JIT module name.")
@click.option("--grep", default=None, metavar="TEXT", help="Keep tactics whose name, launcher or file contains TEXT.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema cutlass-layout/audit/1).")
@click.option("--check", is_flag=True,
              help="Exit 1 when a tactic the runtime would (or may) try is over capacity.")
@click.option("--jobs", type=int, default=None, metavar="N", help="Worker processes (default: the CPUs).")
@click.option("--no-cache", is_flag=True, help="Recompute (results are still stored).")
@cuda_path_option
def audit_cmd(src, arch, family, grep, as_json, check, jobs, no_cache, cuda_path):
    """Lay out every CUTLASS GEMM kernel an installed flashinfer builds for an arch.

    SRC: a flashinfer install (site-packages or package dir, .whl, flashinfer-python==VERSION;
    default: the one installed here). What it builds is read from its own code: its JIT
    module builders and TensorRT-LLM's MoE kernel generator.
    """
    from .audit import audit

    if jobs is not None and jobs < 1:
        raise BadInput(f"--jobs {jobs}: give a positive number")
    res = audit(src, arch.lower(), family=family, grep=grep, cuda_path=cuda_path, jobs=jobs,
                use_cache=not no_cache, progress=True)
    if as_json:
        click.echo(json.dumps(res.to_dict(), indent=2))
    else:
        from .reports.audit import render_audit

        render_audit(res)
    if check and any(t.verdict == "over_capacity" and t.runtime_candidate is not False
                     for t in res.tactics):
        sys.exit(1)


# ------------------------------------------------------------------------------------------
# source


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
