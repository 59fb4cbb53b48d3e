"""The ``cutlass-layout`` command: flags to library calls and results to reports, nothing more.

The library is called through :mod:`cutlass_layout.api` alone (the facade Python users
call); besides it this module imports only :mod:`~cutlass_layout.options` (the shared
flags), :mod:`~cutlass_layout.reports` (printing) and :mod:`~cutlass_layout.errors`
(tests/test_imports.py checks it). Every error becomes one line on stderr (``error: ...``)
and an exit code from :mod:`cutlass_layout.errors`; see docs/exit-codes.md.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from . import api
from .errors import INTERNAL_ERROR_EXIT, BadInput, CutlassLayoutError, Interrupted
from .options import (
    CONFIG_FLAGS,
    audit_check_fails,
    checks_option,
    parse_checks,
    check_jobs_flag,
    check_plot_flag,
    in_flag_words,
    merge_takes_no_more,
    show_structs,
    tactic_takes_no_more,
    typed_in_bytes,
    usage_hint,
    was_given,
    config_options,
    cuda_path_option,
    executor_option,
    format_options,
    header_options,
    library_filters,
    library_options,
    limits_option,
    output_format,
    plot_written,
    source_options,
    text_console,
)
from .options import check_exclude_list, exclude_list_option, exclude_list_written, refuse_without_audit
from .options import diff_check_fails, diff_check_option
from .reports import audit as audit_report
from .reports import layout as layout_report
from .reports.common import json_text


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cutlass-layout")
def cli():
    """Exact shared-memory layouts of CUTLASS GEMM kernels, read from real CUTLASS headers.

    Exit codes: 0 done, 1 a check failed, 2 bad input, 3 does not compile, 4 nvcc or the
    GPU disagrees (--verify), 5 internal error (a bug), 130 interrupted.

    Each command's full reference: docs/commands/COMMAND.md.
    """


# ------------------------------------------------------------------------------------------
# layout


@cli.command("layout")
@limits_option
@config_options()
@source_options
@header_options
@click.option("--tactic", default=None, metavar="ID", help="A tactic an audit listed (id or unique part).")
@format_options("text", "markdown", "json")
@click.option("--check", is_flag=True, help="Exit 1 when over capacity.")
@click.option("--check-kernel", is_flag=True, help="Also instantiate the kernel body (~20 s).")
@click.option(
    "--verify", type=str, default=None, metavar="nvcc|gpu", help="Cross-check with nvcc, or on the local GPU."
)
@click.option("--emit-probe", type=str, default=None, metavar="FILE", help="Write the probe's C++ (for nvcc) to FILE.")
@click.option("--plot", "plot_file", default=None, metavar="FILE", help="Draw a memory map (.svg or .png).")
@click.option("--no-budget", is_flag=True, help="Leave out the builder's stage budget.")
@click.option("--params", is_flag=True, help="Also Params on Linux and MSVC (two parses more).")
@click.option("--no-cache", is_flag=True, help="Lay out again (the result is still stored).")
@click.option(
    "--depth", default=3, show_default=True, type=click.IntRange(min=0), help="Member levels shown (0 = all)."
)
@click.option("--show", default="kernel", show_default=True, help="kernel, mainloop, epilogue or all (a,b,...).")
def layout_cmd(
    cutlass_src,
    cuda_path,
    header,
    type_name,
    includes,
    defines,
    tactic,
    fmt,
    as_json,
    check,
    check_kernel,
    verify,
    emit_probe,
    plot_file,
    no_budget,
    params,
    no_cache,
    depth,
    show,
    **flags,
):
    """Lay out one kernel config's SharedStorage and compare it with the capacity.

    A preset (the config flags, each once), your own type (--header FILE --type NAME), or a
    tactic an audit listed (--tactic ID). For example, the MoE kernel flashinfer builds
    (K in bytes, as TensorRT-LLM names its tiles):

    \b
        cutlass-layout layout --cutlass flashinfer-python==0.7.2.post1 \\
            --preset trtllm-moe --tile 128x256x64B

    Exit 1 with --check when over capacity, 3 when it does not compile, 4 when --verify
    disagrees.

    Full reference: docs/commands/layout.md
    """
    fmt = output_format(fmt, ("text", "markdown", "json"), as_json)
    structs = show_structs(show)
    if tactic is not None:
        tactic_takes_no_more()
        return _layout_tactic(
            tactic, cutlass_src, cuda_path, flags["arch"].lower(), fmt, check, depth, structs, plot_file, no_cache
        )
    if header is not None or type_name is not None or includes or defines:
        subject = user_type_from_flags(header, type_name, includes, defines, flags)
    else:
        subject = api.config(**flags)
    device = _verify_preflight(verify, subject)
    check_plot_flag(plot_file)
    tgt = api.target(cutlass_src, cuda_path)
    if emit_probe:
        try:
            Path(emit_probe).write_text(api.probe_text(subject))
        except OSError as exc:
            raise BadInput(f"--emit-probe {emit_probe}: {exc.strerror or exc}") from None
    try:
        rep = api.layout(
            subject, tgt, check_kernel_body=check_kernel, budget=not no_budget, use_cache=not no_cache, params=params
        )
    except BadInput as exc:
        if check_kernel and "kernel body" in str(exc):
            raise BadInput(f"--check-kernel: {exc}") from None
        raise
    if fmt == "json":
        doc = rep.to_dict()
        if verify and rep.error is None:
            v = _verify(verify, device, subject, rep, tgt)
            doc["verification"] = (
                v.to_dict()
                if verify == "gpu"
                else {
                    "tool": "nvcc",
                    "agree": v.agree,
                    "sizes": v.sizes,
                    "fields": v.fields,
                    "mismatches": v.mismatches,
                }
            )
        click.echo(json_text(doc))
    else:
        _show_layout(rep, fmt, depth, structs, tile_bytes=typed_in_bytes([flags["tile"]]))
        if verify and rep.error is None:
            v = _verify(verify, device, subject, rep, tgt)
            click.echo(v.summary())
    if plot_file and rep.error is None:
        from .reports.plot import plot_layout

        plot_layout(rep, plot_file, tile_bytes=typed_in_bytes([flags["tile"]]))
        plot_written(plot_file)
    if emit_probe:
        click.echo(
            f"probe written to {emit_probe} (compile: nvcc -std=c++17 -arch=... "
            f"-I{tgt.tree.include_root} {emit_probe})",
            err=True,
        )
    if rep.error is not None:
        if fmt == "json":
            click.echo(f"error: {rep.error.one_line()}", err=True)
        sys.exit(3)
    if verify and not v.agree:
        sys.exit(4)
    if check and not rep.fits:
        _check_failed(rep)


def _check_failed(rep, what: str = "the kernel's SharedStorage") -> None:
    """``layout --check`` failed: say why on stderr (the bytes, the capacity, by how much), exit 1."""
    if rep.launch is not None:
        what = "its launch size"
    click.echo(
        f"check failed: {what} is {rep.smem_bytes} B, over the {rep.capacity_bytes} B "
        f"capacity by {-rep.headroom_bytes} B",
        err=True,
    )
    sys.exit(1)


def _show_layout(rep, fmt: str, depth: int, structs: tuple[str, ...], tile_bytes: bool = False) -> None:
    """A layout report as Markdown or as the terminal's table (``--depth 0``: every level);
    ``tile_bytes``: the tile was typed with K in bytes."""
    if fmt == "markdown":
        click.echo(
            layout_report.to_markdown(rep, max_depth=depth or None, structs=structs, tile_bytes=tile_bytes), nl=False
        )
    else:
        layout_report.render(rep, text_console(), max_depth=depth or None, structs=structs, tile_bytes=tile_bytes)


def _verify_preflight(verify, subject):
    """Check ``--verify``'s value, and for ``gpu`` the GPU and nvcc, before any layout."""
    if verify not in (None, "nvcc", "gpu"):
        raise BadInput(f"--verify {verify!r}: choose nvcc or gpu")
    if verify != "gpu":
        return None
    return api.gpu_device([subject])


def _verify(verify, device, subject, rep, tgt):
    if verify == "gpu":
        return api.verify_gpu([subject], [rep], tgt, device=device)
    return api.verify_nvcc([subject], [rep], tgt)


def user_type_from_flags(header, type_name, includes, defines, flags, stages=None):
    """``--header/--type`` (with ``-I``/``-D``): the :class:`~cutlass_layout.api.UserType`;
    ``--arch`` when given (else the type's arch tag decides), ``--stages N`` defines its
    ``STAGES`` macro. The preset flags do not go with it."""
    if header is None or type_name is None:
        raise BadInput("--header and --type go together (and -I/-D go with them)")
    extra = [flag for flag, name, _, _ in CONFIG_FLAGS if name not in ("arch", "stages") and was_given(name)]
    if extra:
        raise BadInput(
            f"{extra[0]} describes a preset; with --header the type in the header is "
            "what is laid out (only --arch and --stages go with it)"
        )
    arch = flags["arch"] if was_given("arch") else None
    if stages is None and isinstance(flags["stages"], str):
        stages = flags["stages"]
    return api.user_type(header, type_name, arch=arch, stages=stages, includes=includes, defines=defines)


def _layout_tactic(tactic, src, cuda_path, arch, fmt, check, depth, structs, plot_file, no_cache):
    """``layout --tactic``: one tactic of an audit (from the results cache when it has run)."""
    check_plot_flag(plot_file)
    t = api.tactic(tactic, src, arch, cuda_path=cuda_path, use_cache=not no_cache, progress=True)
    rep = t.report
    assert rep is not None  # api.tactic's tactics are laid out
    if fmt == "json":
        click.echo(json_text({**rep.to_dict(), "tactic": t.to_dict()}))
    else:
        _show_layout(rep, fmt, depth, structs)
        for line in audit_report.fix_lines(t):  # what fits instead
            click.echo(f"- {line.strip()}" if fmt == "markdown" else line)
    if t.params_note:  # Params asked for and not read: said, not left out silently
        click.echo(f"note: {t.params_note}", err=True)
    if plot_file and rep.error is None:
        from .reports.plot import plot_layout

        plot_layout(rep, plot_file)
        plot_written(plot_file)
    if rep.error is not None:
        sys.exit(3)
    if check and not rep.fits:
        _check_failed(rep, f"tactic {t.id}")


# ------------------------------------------------------------------------------------------
# sweep


@cli.command("sweep")
@limits_option
@config_options(repeatable=True)
@click.option("--grid", "grid_file", default=None, metavar="FILE", help="A TOML or JSON grid (not with config flags).")
@header_options
@source_options
@format_options("text", "markdown", "json", "csv")
@click.option("--plot", "plot_file", default=None, metavar="FILE", help="Draw bytes per config (.svg or .png).")
@click.option("--no-cache", is_flag=True, help="Recompute (results are still stored).")
@click.option("--jobs", type=int, default=None, metavar="N", help="Worker processes [default: the CPUs].")
@executor_option
@click.option("--verify", type=click.Choice(["gpu"]), default=None, help="Check the verdicts on the local GPU.")
def sweep_cmd(
    grid_file,
    header,
    type_name,
    includes,
    defines,
    cutlass_src,
    cuda_path,
    fmt,
    as_json,
    as_csv,
    plot_file,
    no_cache,
    jobs,
    executor,
    verify,
    **flags,
):
    """Lay out a grid of configs: which tiles and stage counts fit, and the largest stage
    count that fits for each. Exit 0 whatever the verdicts (4 when --verify gpu disagrees).

    The grid is the product of the config flags, each repeatable, braces expanding (quote
    them), or a grid file (--grid); --header/--type sweeps your own type. For example:

    \b
        cutlass-layout sweep --tile '128x{32,64,128,256}x{128,256}' \\
            --preset flashinfer --preset trtllm-moe --plot sweep.svg

    Full reference: docs/commands/sweep.md
    """
    from .reports.sweep import render, to_csv, to_markdown

    given = {k: list(v) for k, v in flags.items() if v}
    if grid_file and given:
        raise BadInput("give either --grid FILE or config flags, not both")
    fmt = output_format(fmt, ("text", "markdown", "json", "csv"), as_json, as_csv)
    tile_bytes = typed_in_bytes(given.get("tile"))
    user = None
    if header is not None or type_name is not None or includes or defines:
        if grid_file:
            raise BadInput("give either --grid FILE or --header/--type, not both")
        if verify:
            raise BadInput(
                "--verify gpu launches preset configs; for your own type use layout --header ... --verify nvcc"
            )
        stages = [api.parse_stages(v) for raw in given.get("stages", ["auto"]) for v in api.expand_braces(raw)]
        archs_: list[str | None] = [v for raw in given.get("arch", []) for v in api.expand_braces(raw)] or [None]
        user = [
            user_type_from_flags(header, type_name, includes, defines, {"arch": a, "stages": None}, stages=n)
            for a in archs_
            for n in dict.fromkeys(stages)
        ]
    check_jobs_flag(jobs)
    check_plot_flag(plot_file)
    if user is not None:
        configs = user
    else:
        configs = api.grid_file(grid_file) if grid_file else api.grid(given)
    if not configs:
        raise BadInput("the grid is empty")
    device = None
    if verify:
        archs = {c.arch for c in configs if isinstance(c, api.Config)}
        if len(archs) > 1:
            raise BadInput(f"--verify gpu: the grid mixes archs ({', '.join(sorted(archs))}); a GPU runs one")
        device = api.gpu_device(configs)
    src = api.target(cutlass_src, cuda_path) if verify else cutlass_src  # nvcc reads it too
    result = api.sweep(
        configs, src, cuda_path=cuda_path, jobs=jobs, use_cache=not no_cache, progress=True, executor=executor
    )
    checks = None
    if verify:
        built = [r for r in result.records if r.error is None]  # those that compile
        checks = api.verify_gpu([r.config for r in built], built, src, device=device)
    if fmt == "json":
        doc = result.to_dict()
        if checks is not None:
            doc["verification"] = checks.to_dict()
        click.echo(json_text(doc))
    elif fmt == "csv":
        click.echo(to_csv(result), nl=False)
    elif fmt == "markdown":
        click.echo(to_markdown(result, tile_bytes=tile_bytes), nl=False)
    else:
        render(result, text_console(), tile_bytes=tile_bytes)
    if plot_file:
        from .reports.plot import plot_sweep_result

        plot_sweep_result(result, plot_file, tile_bytes=tile_bytes)
        plot_written(plot_file)
    if checks is not None:
        if fmt != "json":
            click.echo(checks.summary(), err=fmt == "csv")
        if not checks.agree:
            sys.exit(4)


# ------------------------------------------------------------------------------------------
# diff


@cli.command("diff")
@limits_option
@click.argument("old")
@click.argument("new")
@format_options("text", "markdown", "json", wide=False)
@click.option("--exit-code", is_flag=True, help="Exit 1 when there are differences.")
@diff_check_option
@config_options(repeatable=True)
@click.option("--grid", "grid_file", default=None, metavar="FILE", help="A TOML or JSON grid file.")
@click.option("--structural-only", is_flag=True, help="Only the diff of storage structs and constants.")
@click.option("--numeric-only", is_flag=True, help="Only the layouts of the config grid.")
@click.option("--audit", "with_audit", is_flag=True, help="Compare what two installs build instead.")
@click.option("--family", default=None, metavar="NAME", help="With --audit: keep one family (moe, ...).")
@library_options("--audit: the libraries'")
@cuda_path_option
def diff_cmd(
    old,
    new,
    fmt,
    as_json,
    exit_code,
    check,
    grid_file,
    structural_only,
    numeric_only,
    with_audit,
    family,
    library_kernels,
    ignore_kernels,
    exclude_kernels,
    instantiation_level,
    cuda_path,
    **flags,
):
    """Diff the shared-memory layouts of two CUTLASS trees (OLD -> NEW).

    OLD and NEW are anything --cutlass accepts. Structural: the storage structs and
    constants that changed in the headers; numeric: the exact layouts of a grid of configs
    on both (the config flags repeat, braces expand; default: SM120 NVFP4 grouped and
    dense). With --audit, the kernels two flashinfer installs (or two CUTLASS kernel
    libraries) build. For example:

    \b
        cutlass-layout diff flashinfer-python==0.6.8 flashinfer-python==0.7.2.post1

    Exit 0 (1 with --exit-code when there are differences, with --audit --check when a
    kernel newly fails), 2 bad input. Full reference: docs/commands/diff.md
    """
    from .reports.diff import render_text, to_markdown

    fmt = output_format(fmt, ("text", "markdown", "json"), as_json)
    if structural_only and numeric_only:
        raise BadInput("--structural-only and --numeric-only exclude each other")
    values = {k: list(v) for k, v in flags.items() if v}
    library = library_filters(library_kernels, ignore_kernels, exclude_kernels, instantiation_level)
    if with_audit:
        if structural_only or numeric_only or grid_file or set(values) - {"arch"}:
            raise BadInput(
                "--audit compares the kernels the installs build: it takes --arch "
                "and --family, no grid flags, --structural-only or --numeric-only"
            )
        res = api.diff(
            old,
            new,
            audit=True,
            arch=_arch_values(values.get("arch")) or None,
            family=family,
            cuda_path=cuda_path,
            **library,
        )
    else:
        refuse_without_audit(library, check)
        archs = _arch_values(values.get("arch")) or None
        if grid_file and values:
            raise BadInput("--grid FILE cannot be combined with config flags")
        if structural_only and set(values) - {"arch"}:
            raise BadInput("--structural-only takes no config flags but --arch")
        configs, source = None, "default"
        grid_values: dict[str, Any] = {}
        if grid_file:
            configs, source = api.grid_file(grid_file), "file"
        elif values and not structural_only:
            # laid out on both trees (their families); the arch goes in as arch=
            grid_values, source = {k: v for k, v in values.items() if k != "arch"}, "flags"
        res = api.diff(
            old,
            new,
            configs,
            structural=not numeric_only,
            numeric=not structural_only,
            arch=archs,
            cuda_path=cuda_path,
            grid_source=source,
            **grid_values,
        )
    res.old.source, res.new.source = old, new
    tile_bytes = typed_in_bytes(values.get("tile"))
    if fmt == "json":
        click.echo(json_text(res.to_dict()))
    elif fmt == "markdown":
        click.echo(to_markdown(res, tile_bytes=tile_bytes), nl=False)
    else:
        click.echo(render_text(res, tile_bytes=tile_bytes), nl=False)
    if (check and diff_check_fails(res)) or (exit_code and res.has_differences):
        sys.exit(1)


def _arch_values(raw) -> list[str]:
    """Repeated ``--arch`` values, braces expanded (``sm{90,120}``), lower case."""
    return [a.lower() for r in (raw or ()) for a in api.expand_braces(str(r))]


# ------------------------------------------------------------------------------------------
# scan


def run_scan_cli(
    path,
    json_out: bool = False,
    grep: str | None = None,
    file_only: bool = False,
    line_offset: str | None = None,
    as_cutlass: bool = False,
) -> int:
    """``cutlass-layout scan PATH [--json] [--grep NAME] [--file-only] [--line-offset N|FILE:START]``.

    ``as_cutlass``: PATH came as ``--cutlass SRC`` (a folder is read as a CUTLASS source).

    PATH ``-`` reads one header's text from stdin. Prints the result to stdout (text, or
    JSON with ``json_out``) and returns the exit code: 0 when the scan ran (diagnostics
    included), 2 for bad input, after printing ``error: <one line>`` to stderr. Never lets a
    traceback out for bad input.
    """
    from .reports.scan import render_text

    try:
        name, offset = api.parse_line_offset(line_offset)
        if path == "-":
            if sys.stdin is None or sys.stdin.isatty():
                raise BadInput(
                    "scan -: pipe a header's text into stdin "
                    "(sed -n 250,300p FILE | cutlass-layout scan - --line-offset 249)"
                )
            result = api.scan_text(sys.stdin.buffer.read(), name or "<stdin>", line_offset=offset, grep=grep)
        else:
            if name is not None:
                raise BadInput(
                    "--line-offset FILE:START names the real file of stdin's text; for a file give --line-offset N"
                )
            result = api.scan(path, grep=grep, line_offset=offset, as_cutlass=as_cutlass)
    except BadInput as exc:
        print(f"error: {in_flag_words(exc)}", file=sys.stderr)
        return exc.exit_code
    except (OSError, RecursionError) as exc:  # e.g. permission denied deep in a tree
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if json_out:
        sys.stdout.write(json_text(result.to_dict(file_only=file_only)) + "\n")
    else:
        sys.stdout.write(render_text(result, file_only=file_only))
    if grep and not result.structs and not result.constants:  # as audit names a filter that kept nothing
        print(
            f"note: --grep {grep}: matched no storage struct (nor a member of one) or constant's name "
            f"in {result.files_scanned} header(s) (case-sensitive)",
            file=sys.stderr,
        )
    return 0


@cli.command("scan")
@limits_option
@click.argument("path", required=False)
@click.option("--cutlass", "cutlass_src", default=None, metavar="SRC", help="A CUTLASS source (instead of PATH).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (cutlass-layout/scan/1).")
@click.option("--grep", default=None, metavar="NAME", help="Keep structs and constants whose name has NAME.")
@click.option("--file-only", is_flag=True, help="Print only the files that match.")
@click.option(
    "--line-offset", default=None, metavar="N|FILE:START", help="An excerpt: N lines (or FILE:START) precede it."
)
def scan_cmd(path, cutlass_src, as_json, grep, file_only, line_offset):
    """List every *Storage struct and TMA-bytes/stages/capacity constant, without compiling.

    PATH is a header, a directory, any source --cutlass accepts, or - for one header's text
    on stdin; cut-off and damaged headers are read as far as they go. For example:

    \b
        cutlass-layout scan --cutlass flashinfer-python==0.7.2.post1 --grep TensorStorage

    Full reference: docs/commands/scan.md
    """
    if path is not None and cutlass_src is not None:
        raise BadInput("give PATH or --cutlass SRC, not both")
    target = path if path is not None else cutlass_src
    if target is None:
        raise BadInput("give what to scan: PATH (a header, a directory, a source), - for stdin, or --cutlass SRC")
    sys.exit(run_scan_cli(target, as_json, grep, file_only, line_offset, as_cutlass=cutlass_src is not None))


@cli.command("audit")
@limits_option
@click.argument("src", nargs=-1, metavar="[SRC | --merge FILE...]")
@click.option("--cutlass", "cutlass_src", default=None, metavar="SRC", help="The flashinfer install (instead of SRC).")
@config_options(filters=True)
@click.option("--family", default=None, metavar="NAME", help="Keep one family: moe or a JIT module.")
@click.option("--grep", default=None, metavar="TEXT", help="Keep tactics whose id, name, launcher or file has TEXT.")
@library_options("The kernel library's")
@format_options("text", "markdown", "json", "github", "jsonl", "sarif")
@click.option(
    "--check", is_flag=True, help="Exit 1 when a tactic the runtime tries is over capacity, or a filter keeps none."
)
@checks_option
@click.option(
    "--blocklist", "blocklist_file", default=None, metavar="FILE", help="Also write flashinfer's tactics blocklist."
)
@exclude_list_option
@click.option("--verify", type=click.Choice(["nvcc"]), default=None, help="Cross-check a sample with nvcc's front end.")
@click.option("--sample", type=int, default=None, metavar="K", help="With --verify: K tactics per family.")
@click.option("--jobs", type=int, default=None, metavar="N", help="Worker processes [default: the CPUs].")
@executor_option
@click.option("--shard", "shard_text", default=None, metavar="I/N", help="Lay out shard I of N alone (see --merge).")
@click.option("--merge", is_flag=True, help="Join the shards' --json FILEs (not SRC).")
@click.option("--no-cache", is_flag=True, help="Recompute (results are still stored).")
@cuda_path_option
def audit_cmd(
    src,
    cutlass_src,
    family,
    grep,
    library_kernels,
    ignore_kernels,
    exclude_kernels,
    instantiation_level,
    fmt,
    as_json,
    check,
    checks_text,
    blocklist_file,
    exclude_list_file,
    verify,
    sample,
    jobs,
    executor,
    shard_text,
    merge,
    no_cache,
    cuda_path,
    **flags,
):
    """Lay out every CUTLASS GEMM kernel an installed flashinfer builds for an arch (or several).

    SRC: a flashinfer install (default: the one installed here; its generator code runs in
    a sandboxed child process) or CUTLASS's own kernel library (nvidia-cutlass==VERSION).
    The config flags filter the tactics (each repeatable: a tactic is kept when it matches
    one value of every flag given). For example, a CI gate:

    \b
        cutlass-layout audit flashinfer-python==0.7.4 --family moe --check --format github

    Exit 0 whatever the verdicts; 1 with --check, or --blocklist leaving out a tactic it fails
    on; 2 bad input; 4 when nvcc disagrees.

    Verdicts: fits, exact fit, over capacity, does not compile; an exact fit (headroom 0
    B) fits and launches (CUDA takes a request of the opt-in limit itself), but one byte
    more puts it over, and TensorRT-LLM's occupancy check, in the launchers that run one
    (SM80 MoE, fpA_intB), rejects it.

    Full reference: docs/commands/audit.md
    """
    fmt = output_format(fmt, ("text", "markdown", "json", "github", "jsonl", "sarif"), as_json)
    check = parse_checks(checks_text) if check or checks_text is not None else frozenset()
    if merge:
        merge_takes_no_more()
        res = api.merge_audits(src)
        several = isinstance(res, api.AuditSet)
        ones = res.results if isinstance(res, api.AuditSet) else [res]
        asked = ones[0].asked  # the shards' filters: tiles shown as typed
        for one in ones if fmt == "jsonl" else ():
            for t in one.tactics:  # as a streamed audit prints them: every tactic, then the closing lines
                _stream_tactics(one.arch, t)
        _print_audits(res, several, fmt, typed_in_bytes(asked.get("filters", {}).get("tile")), check)
        return
    if len(src) > 1:  # as click says it for an argument of one value
        raise click.UsageError(f"Got unexpected extra argument{'s' if len(src) > 2 else ''} ({' '.join(src[1:])})")
    src = src[0] if src else None
    shard = None
    if shard_text is not None:
        try:
            shard = api.parse_shard(shard_text)
        except BadInput as exc:
            raise BadInput(f"--{exc}") from None
    if src is not None and cutlass_src is not None:
        raise BadInput("give the flashinfer install as SRC or as --cutlass SRC, not both")
    check_jobs_flag(jobs)
    archs = list(dict.fromkeys(_arch_values(flags.pop("arch"))))
    several = len(archs) > 1 or "all" in archs
    arch = archs if several else archs[0] if archs else "sm120"
    filters = {k: list(v) for k, v in flags.items() if v}
    library = library_filters(library_kernels, ignore_kernels, exclude_kernels, instantiation_level)
    source = src if src is not None else cutlass_src
    if blocklist_file and api.is_kernel_library(source):
        raise BadInput("--blocklist writes flashinfer's tactics blocklist: CUTLASS's kernel library has none")
    if blocklist_file and shard is not None:
        raise BadInput(
            f"--blocklist with --shard {shard_text}: flashinfer's tactics blocklist holds every "
            "over-capacity tactic the runtime would try, and a shard has some of them: write it from "
            "the audit without --shard"
        )
    if blocklist_file and several:
        raise BadInput(
            f"--blocklist with --arch {' '.join(archs)}: flashinfer's tactics blocklist holds one "
            "arch's tactic ids (one _metadata block, keys naming the MoE runner's GEMMs, not the "
            "GPU): write one file per arch, --arch A --blocklist FILE"
        )
    bl_format = api.blocklist_format(source, blocklist_file) if blocklist_file else None  # the folder checked
    check_exclude_list(exclude_list_file, source, several, shard)  # none given: nothing to check
    if sample is not None and verify is None:
        raise BadInput("--sample K picks the tactics --verify nvcc compiles: give --verify nvcc too")
    if sample is not None and sample < 1:
        raise BadInput(f"--sample {sample}: give a positive number of tactics per family")
    if verify:
        api.find_nvcc(cuda_path)  # missing or unusable: one line before any work
    if fmt == "jsonl" and api.is_kernel_library(source):
        raise BadInput(
            "--format jsonl streams a flashinfer install's tactics as they come in; CUTLASS's "
            "kernel library gives its tactics at the end: give --json"
        )
    streamed = _stream_tactics if fmt == "jsonl" else None
    try:
        res = api.audit(
            source,
            arch,
            family=family,
            grep=grep,
            cuda_path=cuda_path,
            jobs=jobs,
            use_cache=not no_cache,
            progress=True,
            executor=executor,
            shard=shard,
            on_tactic=streamed,
            **library,
            **filters,
        )
    except Interrupted as exc:  # Ctrl-C after an arch was done: what is done, then exit 130
        _print_audits(exc.partial, True, fmt, typed_in_bytes(filters.get("tile")), frozenset())
        raise
    KEPT.append(res)  # freed by no one when the console entry point ends the process
    results = res.results if several else [res]
    checked = (
        [api.verify_audit(one, source, sample=sample, jobs=jobs, cuda_path=cuda_path) for one in results]
        if verify
        else []
    )
    _print_audits(
        res,
        several,
        fmt,
        typed_in_bytes(filters.get("tile")),
        check,
        checked,
        (lambda: _write_blocklist(res, blocklist_file, bl_format))
        if blocklist_file
        else (lambda: exclude_list_written(res, exclude_list_file))
        if exclude_list_file
        else None,
    )


def _print_audits(
    res, several: bool, fmt: str, tile_bytes: bool, check: frozenset[str], checked=(), after=None
) -> None:
    """An audit's report (each arch's), its notes on stderr, then ``after()`` (the blocklist),
    nvcc's lines (``checked``) and ``--check``'s; exits 4 when nvcc disagrees, 1 when a check
    fails or ``after()`` returns True (the blocklist leaves out a tactic ``--check`` fails on)."""
    results = res.results if several else [res]
    if fmt in ("json", "jsonl"):  # several: {"audits": [each arch's object]}
        docs = [one.to_dict() for one in results]
        for doc, check_ in zip(docs, checked):
            doc["verification"] = check_.to_dict()
        if fmt == "json":
            click.echo(json_text({"audits": docs} if several else docs[0]))
        for doc in docs if fmt == "jsonl" else ():  # each arch's closing line, after its tactics
            click.echo(json.dumps({"event": "audit", **doc}))
    elif fmt == "sarif":  # one log, a run per arch
        from .reports.sarif import to_sarif

        click.echo(json_text(to_sarif(results)))
    else:
        for i, one in enumerate(results):  # one arch's block after another
            if i and fmt != "github":
                click.echo("")
            _show_audit(one, fmt, tile_bytes)
    for one in results:
        for u in one.unmatched:  # a filter that kept nothing: which, and what there is
            named = f"--{u['filter'].replace('_', '-')} {u['value']}" if u["filter"] else "the filters"
            click.echo(f"note: {f'{one.arch}: ' if several else ''}{named}: {u['detail']}", err=True)
    for note in res.notes if several else ():  # arches `all` left out, and why
        click.echo(f"note: {note}", err=True)
    incomplete = after() if after is not None else False
    if fmt not in ("json", "jsonl"):  # after the report (stderr beside annotations and SARIF)
        for one, check_ in zip(results, checked):
            for line in check_.lines():
                click.echo(f"{one.arch}: {line}" if several else line, err=fmt in ("github", "sarif"))
    failed = [one.arch for one in results if audit_check_fails(one, several, check)] if check else []
    if any(not c.agree for c in checked):
        sys.exit(4)
    if failed or incomplete:  # every arch's lines said, then exit 1 if any arch fails
        sys.exit(1)


def _stream_tactics(arch: str, tactic) -> None:
    """``audit --format jsonl``: one tactic's line, as its source comes in (flushed)."""
    click.echo(json.dumps(api.stream_row(arch, tactic)))


def _show_audit(res, fmt: str, tile_bytes: bool) -> None:
    """One arch's audit in ``fmt`` (text, markdown or github), as its kind of source prints it."""
    if res.provenance.get("library") == "cutlass_library":
        from .reports import library_audit

        if fmt == "markdown":
            click.echo(library_audit.to_markdown(res), nl=False)
        elif fmt == "github":
            click.echo(library_audit.to_github(res), nl=False)
        else:
            library_audit.render_library_audit(res, text_console())
    elif fmt == "markdown":
        from .reports.audit import to_markdown

        click.echo(to_markdown(res, tile_bytes=tile_bytes), nl=False)
    elif fmt == "github":
        from .reports.audit import to_github

        click.echo(to_github(res), nl=False)
    else:
        from .reports.audit import render_audit

        render_audit(res, text_console(), tile_bytes=tile_bytes)


def _write_blocklist(res, path: str, fmt) -> bool:
    """``audit --blocklist FILE``: write it (the ids it has); say on stderr what it holds and what it
    cannot; True (exit 1) where it leaves out a tactic ``--check`` fails on (a line: how many, why)."""
    bl = api.tactics_blocklist(res, path, fmt=fmt)
    held = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in bl.invalid_tactics.items()) or "no tactic"
    n = len({b["tactic"] for b in bl.blocked if b["key"] is not None})
    ids = sum(len(v) for v in bl.invalid_tactics.values())  # a tactic may be an id of GEMM1 and of GEMM2,
    as_ids = f", as {ids} id(s)" if ids != n else ""  # or one id the f16 and bf16 runners share
    click.echo(
        f"blocklist: wrote {path} (flashinfer {bl.format.version}, {res.arch}): {n} over-capacity "
        f"tactic(s) the runtime would try{as_ids}; {held}",
        err=True,
    )
    for line in [f"note: blocklist: {note}" for note in bl.notes] + [f"blocklist: {bl.left_out_line()}"] * bool(
        bl.left_out
    ):
        click.echo(line, err=True)
    return bool(bl.left_out)


# ------------------------------------------------------------------------------------------
# source


@cli.command("source")
@limits_option
@source_options
def source_cmd(cutlass_src, cuda_path):
    """Show which CUTLASS tree and CUDA headers a --cutlass/--cuda-path resolves to.

    For example:

    \b
        cutlass-layout source --cutlass flashinfer-python==0.7.2.post1

    Full reference: docs/commands/source.md
    """
    tgt = api.target(cutlass_src, cuda_path)
    t = tgt.tree
    click.echo(f"include root: {t.include_root}")
    if t.version_from == "cutlass/version.h":
        click.echo(f"version.h:    {t.version}")
    else:  # a checkout without version.h (tags v2.0.0 to v3.4.0)
        click.echo(f"version:      {t.version} (from {t.version_from}; no cutlass/version.h)")
    click.echo(f"tree hash:    {t.tree_hash}")
    click.echo(f"origin:       {t.origin}")
    click.echo(f"CUDA headers: {tgt.cuda.path} ({tgt.cuda.source})")


#: What a command made that is only freed when the process ends (a whole install's audit is
#: about a million objects, whose freeing would only delay the exit after its output is written;
#: measured: docs/performance.md). The console entry
#: point ends the process without freeing them (:func:`_exit`); a call from Python frees them.
KEPT: list = []


def _exit(code: int) -> None:
    """End the process with ``code`` as ``sys.exit`` does (standard streams flushed, ``atexit``
    handlers run), without the interpreter's teardown, which would free every object left
    (:data:`KEPT`); where another thread still runs, ``sys.exit`` (which waits for it)."""
    import atexit
    import threading

    if threading.active_count() > 1:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what was written is what the reader took
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def main(argv=None) -> int:
    """Console entry point. Returns (and exits with) the exit code."""
    from dataclasses import replace

    limits = replace(api.LIMITS)  # --no-limits lifts them for one command
    shown = api.show_progress(True)  # every slow step says so on stderr, for this command
    try:
        cli.main(args=argv, prog_name="cutlass-layout", standalone_mode=False)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except click.exceptions.Abort:
        click.echo("error: interrupted", err=True)
        code = 130
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}{usage_hint(exc)}", err=True)
        code = 2
    except CutlassLayoutError as exc:
        click.echo(f"error: {in_flag_words(exc)}", err=True)
        code = exc.exit_code
    except Exception as exc:  # a bug: one line, unless asked for the traceback
        if os.environ.get("CUTLASS_LAYOUT_DEBUG"):
            raise
        text = " ".join(str(exc).split())  # one line, whatever the message holds
        click.echo(
            f"error: internal error: {type(exc).__name__}: {text} (set CUTLASS_LAYOUT_DEBUG=1 for the traceback)",
            err=True,
        )
        code = INTERNAL_ERROR_EXIT
    finally:
        api.LIMITS.__dict__.update(limits.__dict__)
        api.show_progress(shown)
    if argv is None:
        _exit(code)
    KEPT.clear()
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
