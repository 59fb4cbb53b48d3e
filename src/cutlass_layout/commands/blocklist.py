"""audit --blocklist: the over-capacity tactics an install's runtime would try, as a file its
own autotuner loads (``FLASHINFER_TACTICS_BLOCKLIST``) and so skips.

flashinfer (0.7.2.post1 and 0.7.4; not 0.6.8) has an offline blocklist of tactics known to fail on a GPU
(``flashinfer/tactics_blocklist.py``: ``TacticsBlocklist.load`` and ``filter``, filled by
``tactics_blocklist_gen.py`` by profiling on that GPU). This module writes the same file
without a GPU, from an :func:`~cutlass_layout.commands.audit.audit`, reading everything about
it from the install's own code:

* the format (:func:`blocklist_format`): ``{"_metadata": {...}, "invalid_tactics":
  {"<custom op>::<runner class>": [tactic, ...]}}``; the metadata fields are the ones
  ``autotuner._collect_metadata`` sets, which ``load`` compares with its environment: the
  file names the install's ``flashinfer_version`` and ``"*"`` (the loader's wildcard) for
  every field not knowable offline (CUDA, cuBLAS, cuDNN, CuTe DSL versions, the GPU's name);
* the keys: the custom ops the CUTLASS fused-MoE runner is tuned under
  (``fused_moe/core.py``: ``tuner.choose_one("trtllm::fused_moe::gemm1", [moe_runner], ...,
  gemm_idx=1)``) and the runner's class (the one whose ``get_valid_tactics`` counts
  ``get_gemm1_tactic_count()``);
* the tactic values: the runner's tactics are ints, ``range(gemm1_count)`` for GEMM1 and
  ``range(gemm1_count, gemm1_count + gemm2_count)`` for GEMM2, indices into the C++ runner's
  ``mAllProfiles`` (``getTactics(GEMM_1)`` then ``getTactics(GEMM_2)``,
  ``flashinfer_cutlass_fused_moe_binding.cu``), whose order
  :func:`cutlass_layout.installs.candidates.moe_configs` derives from TensorRT-LLM's heuristic.

A key names the runner's class, not its data types: every CUTLASS MoE runner of a process
(NVFP4, FP8 x FP4, and the BF16 / FP8 ones that run SM80-path kernels on SM120) reads the same
entry, so the ids also remove the tactics of those numbers in the other runners' lists. The
tactics the audit lays out are checked for that (a note names an id that is a fitting tactic
of another audited runner); the SM80-path runners are not laid out, and a note says so.
"""

from __future__ import annotations

import ast
from datetime import datetime, timezone
from pathlib import Path
from typing import cast

from ..core.files import output_path
from ..errors import BadInput
from ..model import AuditResult, Blocklist, BlocklistFormat, Tactic, Verdict

#: The loader and the modules its format is read from, relative to the ``flashinfer`` package.
LOADER = "tactics_blocklist.py"
AUTOTUNER = ("autotuner/autotuner.py", "autotuner.py")
MOE_RUNNER = "fused_moe/core.py"
#: The loader's wildcard for a metadata field (``saved_meta.get(k) not in (current, "*")``).
WILDCARD = "*"


def _parse(root: Path, rel: str, version: str) -> ast.Module:
    path = root / rel
    try:
        return ast.parse(path.read_text(errors="replace"), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise BadInput(
            f"flashinfer {version}: cannot read {rel} ({exc.__class__.__name__}): "
            "its tactics blocklist format is not known"
        ) from None


def _function(tree: ast.AST, name: str):
    return next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None
    )


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def blocklist_format(root: Path, version: str) -> BlocklistFormat:
    """The tactics blocklist format of the flashinfer package at ``root`` (its ``flashinfer``
    folder), read from its code with :mod:`ast` (nothing of it is imported or run):
    ``tactics_blocklist.py`` (class ``TacticsBlocklist`` with ``load`` and ``filter``; the
    tactics key ``load`` reads; the ``"*"`` wildcard it accepts), the autotuner
    (``_METADATA_KEY``, the fields ``_collect_metadata`` sets: ``meta["<field>"] = ...``) and
    ``fused_moe/core.py`` (the custom ops of ``choose_one`` calls with ``gemm_idx=1``/``2``,
    and the runner class whose ``get_valid_tactics`` numbers GEMM2's tactics
    ``range(gemm1_count, gemm1_count + gemm2_count)``).

    Raises:
        BadInput: the install has no blocklist loader (flashinfer before 0.7.4), or its
            loader, autotuner or MoE runner has another shape than the one described (the
            message says which). 0.7.2.post1 and 0.7.4 have the loader, 0.6.8 has none.
    """
    root = Path(root)
    if not (root / LOADER).is_file():
        raise BadInput(
            f"flashinfer {version} has no tactics blocklist loader (flashinfer/{LOADER}): "
            "it cannot load a blocklist file"
        )
    loader = _parse(root, LOADER, version)
    cls = next((n for n in loader.body if isinstance(n, ast.ClassDef) and n.name == "TacticsBlocklist"), None)
    methods = {n.name: n for n in (cls.body if cls else []) if isinstance(n, ast.FunctionDef)}
    if cls is None or "load" not in methods or "filter" not in methods:
        raise BadInput(f"flashinfer {version}: {LOADER} has no TacticsBlocklist.load and .filter")
    load = methods["load"]
    if WILDCARD not in _strings(load):
        raise BadInput(
            f"flashinfer {version}: TacticsBlocklist.load takes no '*' metadata wildcard, "
            "so a file written without its GPU would not load"
        )
    tactics_key = next((s for s in ("invalid_tactics",) if s in _strings(load)), None)
    if tactics_key is None:
        raise BadInput(f"flashinfer {version}: TacticsBlocklist.load reads no 'invalid_tactics'")
    auto_rel = next((r for r in AUTOTUNER if (root / r).is_file()), None)
    if auto_rel is None:
        raise BadInput(f"flashinfer {version}: no autotuner ({' or '.join(AUTOTUNER)}) beside {LOADER}")
    auto = _parse(root, auto_rel, version)
    metadata_key = next(
        (
            n.value.value
            for n in auto.body
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "_METADATA_KEY" for t in n.targets)
            and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)
        ),
        None,
    )
    collect = _function(auto, "_collect_metadata")
    fields = []
    for n in ast.walk(collect) if collect is not None else ():
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if (
                    isinstance(t, ast.Subscript)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "meta"
                    and isinstance(t.slice, ast.Constant)
                    and isinstance(t.slice.value, str)
                ):
                    fields.append(t.slice.value)
    fields = list(dict.fromkeys(fields))
    if metadata_key is None or "flashinfer_version" not in fields:
        raise BadInput(
            f"flashinfer {version}: {auto_rel} has no _METADATA_KEY or no _collect_metadata setting flashinfer_version"
        )
    ops, runner_class = _moe_runner(root, version)
    return BlocklistFormat(
        version=version,
        loader=LOADER,
        metadata_key=metadata_key,
        tactics_key=tactics_key,
        metadata_fields=fields,
        ops=ops,
        runner_class=runner_class,
        dense=dense_keys(root),
    )


def dense_keys(root: Path) -> dict[str, str]:
    """``{audit family: "<custom op>::<runner class>"}`` of the dense runners of
    :data:`~cutlass_layout.installs.dense_runners.DENSE`, read from ``gemm/gemm_base.py`` with
    :mod:`ast`: the class of that name whose ``get_valid_tactics`` returns
    ``list(range(module.<tactic_num>()))``, the function that returns it (its factory), and the
    custom op (a string constant: ``custom_op=`` or the first argument) of the one ``choose_one``
    call of the function that calls that factory. A family whose key cannot be read is left out."""
    from ..installs.dense_runners import DENSE

    try:
        tree = ast.parse((root / DENSE_MODULE).read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return {}
    out = {}
    for family, runner in DENSE.items():
        op = _dense_op(tree, runner.python_runner, runner.tactic_num)
        if op is not None:
            out[family] = f"{op}::{runner.python_runner}"
    return out


#: The module that holds flashinfer's dense GEMM runners, relative to the ``flashinfer`` package.
DENSE_MODULE = "gemm/gemm_base.py"


def _dense_op(tree: ast.Module, cls_name: str, tactic_num: str) -> str | None:
    """The custom op the dense runner class ``cls_name`` is tuned under (see :func:`dense_keys`)."""
    want = f"return list(range(module.{tactic_num}()))"
    factories = set()
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        for cls in (n for n in fn.body if isinstance(n, ast.ClassDef) and n.name == cls_name):
            valid = _function(cls, "get_valid_tactics")
            if valid is not None and [ast.unparse(b) for b in valid.body] == [want]:
                factories.add(fn.name)
    ops = set()
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        calls = [
            (n, n.func.attr) for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        ]
        if not any(attr in factories for _, attr in calls):
            continue
        chosen = [c for c, attr in calls if attr == "choose_one"]
        args = [
            next((k.value for k in c.keywords if k.arg == "custom_op"), c.args[0] if c.args else None) for c in chosen
        ]
        if len(args) != 1 or not (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
            return None
        ops.add(args[0].value)
    return ops.pop() if len(ops) == 1 else None


def _moe_runner(root: Path, version: str) -> tuple[dict[int, str], str]:
    """``({1: op, 2: op}, runner class)`` of the CUTLASS fused-MoE runner in ``fused_moe/core.py``."""
    if not (root / MOE_RUNNER).is_file():
        raise BadInput(f"flashinfer {version}: no {MOE_RUNNER} (the CUTLASS MoE runner)")
    tree = _parse(root, MOE_RUNNER, version)
    runner = None
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        valid = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "get_valid_tactics"), None)
        if valid is None:
            continue
        text = ast.unparse(valid)
        if (
            "get_gemm1_tactic_count" in text
            and "range(gemm1_count, gemm1_count + gemm2_count)" in text
            and "range(gemm1_count)" in text
        ):
            runner = cls.name
            break
    ops: dict[int, str] = {}
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        f = call.func
        if not (isinstance(f, ast.Attribute) and f.attr == "choose_one") or not call.args:
            continue
        op = call.args[0]
        idx = next((k.value for k in call.keywords if k.arg == "gemm_idx"), None)
        if (
            isinstance(op, ast.Constant)
            and isinstance(op.value, str)
            and isinstance(idx, ast.Constant)
            and idx.value in (1, 2)
        ):
            ops.setdefault(cast(int, idx.value), op.value)  # cast: one of (1, 2), checked
    if runner is None or set(ops) != {1, 2}:
        raise BadInput(
            f"flashinfer {version}: {MOE_RUNNER} has no CUTLASS MoE runner numbering its "
            "tactics range(gemm1_count) and range(gemm1_count, gemm1_count + gemm2_count), "
            "tuned as gemm_idx 1 and 2"
        )
    return ops, runner


def _runner_of(t: Tactic) -> tuple[str, str]:
    """(activation, weight) kinds of a MoE tactic (with swap_ab, A is the weight)."""
    assert t.a is not None and t.b is not None  # a MoE tactic names both
    return (t.b, t.a) if t.swap_ab else (t.a, t.b)


def _sm90_ids(cand, t: Tactic) -> list[tuple[int, int]] | None:
    """SM90: ``[(gemm, tactic id), ...]`` of a mixed-input MoE tactic in its runner's list
    (:func:`cutlass_layout.installs.candidates.sm90_moe_configs`: GEMM1's and GEMM2's lists
    are the same, GEMM2's ids follow GEMM1's); None where the list cannot be read."""
    from ..installs.candidates import sm90_moe_configs, sm90_place

    place = sm90_place(t)
    if place is None or t.fusion not in (None, "none"):
        return None
    runner, tile, cluster, schedule, _mixed = place
    if runner is None:
        return None
    configs = sm90_moe_configs(cand, runner)
    if configs is None:
        return None
    at = [
        i
        for i, (c_tile, c_cluster, c_schedule, swap) in enumerate(configs)
        if (c_tile, c_cluster) == (tile, cluster) and c_schedule in ("AUTO", schedule) and swap == bool(t.swap_ab)
    ]
    return [(1, i) for i in at] + [(2, len(configs) + i) for i in at]


def _tactic_ids(cand, runner: tuple[str, str]) -> dict[tuple, list[tuple[int, int]]] | None:
    """``{(tile, fusion, swap_ab): [(gemm, tactic id), ...]}`` of one runner's list, or None."""
    from ..installs.candidates import moe_configs

    gemm1 = moe_configs(cand, *runner, supports_finalize_fusion=False)
    gemm2 = moe_configs(cand, *runner, supports_finalize_fusion=True)
    if gemm1 is None or gemm2 is None:
        return None
    out: dict[tuple, list[tuple[int, int]]] = {}
    for i, c in enumerate(gemm1):
        out.setdefault(c, []).append((1, i))
    for i, c in enumerate(gemm2):
        out.setdefault(c, []).append((2, len(gemm1) + i))
    return out


def tactics_blocklist(result: AuditResult, fmt: BlocklistFormat) -> Blocklist:
    """The blocklist of ``result``'s tactics that the runtime would try
    (``runtime_candidate`` True) and that are over capacity, in ``fmt`` (the install's
    :func:`blocklist_format`): each MoE tactic's id in its runner's GEMM1 and GEMM2 lists
    (a tactic without fusion is in both; a FINALIZE one in GEMM2's only), as the C++ runner
    numbers them (:func:`cutlass_layout.installs.candidates.moe_configs`, for the default
    ``use_fused_finalize=True``), under ``"<op>::<runner class>"``. The output type does not
    change a runner's list, so the f16 and bf16 twins of a tactic share their ids.

    Every tactic ``audit --check`` fails on (:meth:`~cutlass_layout.model.AuditResult.check_failures`)
    that the file does not hold is in :attr:`~cutlass_layout.model.Blocklist.left_out`, with why.
    What the file cannot hold is a note: an over-capacity tactic of another family (no
    runtime tactic list), or one whose id cannot be derived (its runner's list not read); an
    id that names a tactic that fits in another audited runner (keys do not name the data
    types); and, when it holds ids, the runners the audit does not lay out.
    """
    cand = result.candidates
    notes: list[str] = []
    invalid: dict[str, set[int]] = {fmt.key(1): set(), fmt.key(2): set()}
    blocked: list[dict] = []
    lists: dict[tuple[str, str], dict | None] = {}
    sm90 = cand is not None and bool(cand.sm90)  # the SM90 runners' lists, else SM120's

    def ids_of(t: Tactic):
        if sm90:
            return _sm90_ids(cand, t) or []
        r = _runner_of(t)
        if r not in lists:
            lists[r] = _tactic_ids(cand, r) if cand is not None else None
        table = lists[r]
        return None if table is None else table.get((t.name, t.fusion or "none", bool(t.swap_ab)), [])

    for t in result.over_capacity_candidates():
        base = {
            "tactic": t.id,
            "runner": "x".join(_runner_of(t)),
            "kernel_bytes": t.kernel_bytes,
            "capacity_bytes": t.capacity_bytes,
        }
        if t.family in fmt.dense and result.dense_runners.get(t.family) is not None:
            key, ids = fmt.dense[t.family], result.dense_runners[t.family].ids(t) or []
            for tid in ids:
                invalid.setdefault(key, set()).add(tid)
                blocked.append({**base, "key": key, "tactic_id": tid, "gemm": None})
            if not ids:
                notes.append(
                    f"{t.id}: over capacity, not in the file: its id in the runner's "
                    "getConfigs could not be read from the install's code"
                )
            continue
        if t.family != "moe":
            notes.append(f"{t.id}: over capacity, not in the file: its family has no tactic ids the autotuner knows")
            continue
        found = ids_of(t)
        if not found:
            notes.append(
                f"{t.id}: over capacity, not in the file: its id in the runtime's list "
                "could not be read from the install's code"
            )
            blocked.append({**base, "key": None, "tactic_id": None, "gemm": None})
            continue
        for gemm, tid in found:
            invalid[fmt.key(gemm)].add(tid)
            blocked.append({**base, "key": fmt.key(gemm), "tactic_id": tid, "gemm": gemm})
    # an id blocked for one runner that names a fitting tactic of an audited runner (its
    # other output type, or other data types): the keys do not tell them apart
    moe = [t for t in result.tactics if t.family == "moe"]
    for r in sorted(set() if sm90 else {_runner_of(t) for t in moe}, key=str):
        if r not in lists:
            lists[r] = _tactic_ids(cand, r) if cand is not None else None
        where = {(g, tid): c for c, pairs in (lists[r] or {}).items() for g, tid in pairs}
        for gemm in (1, 2):
            for tid in sorted(invalid[fmt.key(gemm)]):
                c = where.get((gemm, tid))
                fits = [
                    t
                    for t in moe
                    if c is not None
                    and _runner_of(t) == r
                    and t.verdict in (Verdict.FITS, Verdict.EXACT_FIT)
                    and (t.name, t.fusion or "none", bool(t.swap_ab)) == c
                ]
                if fits:
                    notes.append(
                        f"id {tid} under {fmt.key(gemm)} is also {fits[0].id}, which fits: the key "
                        "does not name the runner's types, so the file removes it too"
                    )
    if any(invalid.values()) and sm90:
        notes.append(
            "the ids are the SM90 mixed-input runners' (FP4 weights; GEMM1's and GEMM2's lists alike); "
            "every CUTLASS MoE runner of a process reads the same keys, so they also remove the tactics "
            "of those numbers in the other SM90 runners' lists (FP8, BF16, F16 weights), not numbered here"
        )
    elif any(invalid.values()):
        notes.append(
            "the ids are for cutlass_fused_moe's default use_fused_finalize=True (with it False "
            "GEMM2 has no FINALIZE tactics and the same ids name other tactics); every CUTLASS MoE "
            "runner of a process reads the same keys, including those of data types this audit "
            "does not lay out (BF16 and FP8 activations: SM80-path tactics on SM120)"
        )
    held = {b["tactic"] for b in blocked if b["key"] is not None}
    left_out = [
        {"tactic": t.id, "reason": _why_left_out(t, result.arch)} for t in result.check_failures() if t.id not in held
    ]
    metadata = {f: (fmt.version if f == "flashinfer_version" else WILDCARD) for f in fmt.metadata_fields}
    metadata.update(
        generated_at=datetime.now(timezone.utc).isoformat(),
        generator=f"cutlass-layout {_version()} audit --blocklist (shared-memory layout, "
        f"{result.arch}, capacity {result.capacity_bytes} B; no GPU)",
    )
    return Blocklist(
        format=fmt,
        arch=result.arch,
        invalid_tactics={k: sorted(v) for k, v in invalid.items() if v},
        blocked=blocked,
        notes=notes,
        metadata=metadata,
        left_out=left_out,
    )


def _why_left_out(t: Tactic, arch: str) -> str:
    """Why an over-capacity tactic the runtime tries (or may try) has no id in the file."""
    if t.runtime_candidate is None:
        return "the runtime may try them: its candidate list could not be read, so their ids are not known"
    if t.family != "moe":
        return f"the {t.family} family has no tactic ids the autotuner knows"
    act, weight = _runner_of(t)
    return f"their ids in the {arch} {act} x {weight} MoE runner's list could not be read from the install's code"


def _version() -> str:
    """This tool's version (as the facade reads it; the package itself is not imported here)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cutlass-layout")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
        return "0+unknown"


def check_blocklist_path(path) -> Path:
    """``path`` as a :class:`~pathlib.Path` where a blocklist can be written: its folder exists
    (``audit --blocklist`` checks it before the audit, not after).

    Raises:
        BadInput: the folder does not exist."""
    return output_path(path, "blocklist")


def write_blocklist(blocklist: Blocklist, path) -> Path:
    """Write ``blocklist`` to ``path`` as JSON (indent 2, as ``TacticsBlocklist.save`` does),
    through a temporary file in the same folder replaced into place
    (:func:`~cutlass_layout.core.cache.write_atomic`: the mode a plain ``open`` gives, 0o666
    less the umask); returns the path.

    Raises:
        BadInput: the folder does not exist or cannot be written.
    """
    import json

    from ..core.cache import write_atomic

    path = check_blocklist_path(path)
    text = json.dumps(blocklist.to_json(), indent=2) + "\n"
    try:
        write_atomic(path, text.encode())
    except OSError as exc:
        raise BadInput(f"cannot write the blocklist {path}: {exc.strerror or exc}") from None
    return path


__all__ = ["blocklist_format", "check_blocklist_path", "tactics_blocklist", "write_blocklist"]
