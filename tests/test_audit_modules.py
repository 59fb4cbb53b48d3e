"""audit accounts for every JIT module builder an install has for the arch (issue 43, item 1).

How the builders are enumerated here, independently of the tool: every ``def gen_...(`` at the
start of a line of ``flashinfer/jit/**/*.py`` (a module-level function) whose name holds the
arch's number as flashinfer spells it in builder names: ``sm90``, ``sm100`` (``sm100a`` too),
``sm103``, and for sm120 ``sm120`` or ``sm121`` (``sm120f`` too; SM121 runs SM120's builds),
with or without an underscore (``sm_100``), not followed by another digit.

What the reasons are, by hand from flashinfer 0.7.4's code:

* ``jit/gemm/svdquant_sm120.py``'s builder imports ``SVDQUANT_SM120_CONFIGS`` from the sibling
  ``jit/gemm/svdquant_sm120_configs.py`` (data only: a docstring, a ``typing`` import, one tuple
  of 31 names, so the generator harness runs it) and renders one ``.cu`` per config in a ``for``
  loop: 31 sources, 49 kernels (tests/test_audit_sm120_svdquant.py), no reason.
* ``jit/cute_sm12x_gemm.py`` lists six sources under ``csrc/cute_sm12x_gemm/`` and generates
  none; the wheel has no ``data/csrc/cute_sm12x_gemm`` folder (checked below), so its reason
  says that none of them is in the install.
* ``jit/gemm/fp8_blockscale.py``'s builder lists 8 sources, all under ``FLASHINFER_CSRC_DIR``,
  and writes none: "its 8 source(s) are flashinfer's own".
* sm100's ``gen_gemm_sm100_module_cutlass_nvfp4_svdquant`` renders one source per config of its
  8 (``Tactic1Sm128x64x128Config`` among them), one ``run_tactic`` kernel each: with that one
  source laid out, its module has a kernel and no reason.
"""

from __future__ import annotations

import re

import pytest

SPEC = "flashinfer-python==0.7.4"
#: the arch's number in builder names (module docstring)
NUMBERS = {"sm90": "90", "sm100": "100", "sm103": "103", "sm120": "12[01]"}
#: per arch, the family the audit is asked for, and the generated sources it lays out (None: all
#: of that family's; the whole install cold is tens of minutes, docs/performance.md)
ASKED = {
    "sm90": ("fp8_blockscale_gemm_90", None),
    "sm100": ("nvfp4_svdquant_gemm_cutlass", {"nvfp4_svdquant_gemm_cutlass_Tactic1Sm128x64x128Config.cu"}),
    "sm103": ("fp4_gemm_cutlass_sm103", {"fp4_gemm_cutlass_half_128_64_128.cu"}),
    "sm120": ("nvfp4_svdquant_gemm_cutlass_sm120", None),
}


def builders_named_for(root, arch: str) -> set[str]:
    """``flashinfer.jit.<module>.<function>`` of each builder of ``arch`` (module docstring)."""
    name = re.compile(rf"sm_?{NUMBERS[arch]}(?![0-9])")
    out = set()
    for path in sorted((root / "jit").rglob("*.py")):
        module = "flashinfer." + ".".join(path.relative_to(root).with_suffix("").parts)
        for m in re.finditer(r"^def (gen_\w+)\(", path.read_text(), re.M):
            if name.search(m.group(1)):
                out.add(f"{module}.{m.group(1)}")
    return out


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm90", "sm100", "sm103", "sm120"])
def test_every_builder_of_0_7_4_is_accounted_for(arch, only_sources):
    from cutlass_layout.commands.audit import audit
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    family, keep = ASKED[arch]
    if keep is not None:
        only_sources(lambda n: n in keep)
    res = audit(SPEC, arch, family=family, jobs=1)
    root = resolve_flashinfer(SPEC).root
    expected = builders_named_for(root, arch)
    assert len(expected) >= 3
    got = {m["builder"] for m in res.modules}
    assert got == expected
    for m in res.modules:  # kernels, or a reason
        assert (m["kernels"] or 0) > 0 or m["reason"], m
        assert (m["reason"] is None) == bool(m["kernels"]), m
    asked = [m for m in res.modules if m["family"] == family]
    assert asked and all(m["kernels"] is not None for m in asked)
    others = [m for m in res.modules if m["module"] is not None and m["family"] != family]
    assert all(
        m["kernels"] is None and m["reason"] == f"not laid out: the audit asked for family {family}" for m in others
    )
    assert all(m["reason"].startswith("not run: ") for m in res.modules if m["module"] is None)
    # the JSON holds them as they are
    assert res.to_dict()["modules"] == res.modules
    if arch == "sm120":
        (svd,) = asked
        assert svd["builder"].endswith("svdquant_sm120.gen_gemm_sm120_module_cutlass_nvfp4_svdquant")
        assert svd["kernels"] == 49 and svd["sources"] == 31 and svd["reason"] is None
        cute = next(m for m in res.modules if m["module"] == "cute_sm12x_gemm")
        assert cute["kernels"] is None  # another family: not laid out here, ...
        res_cute = audit(SPEC, arch, family="cute_sm12x_gemm", jobs=1)  # ... its own audit says why
        (cute,) = [m for m in res_cute.modules if m["family"] == "cute_sm12x_gemm"]
        assert not (root / "data" / "csrc" / "cute_sm12x_gemm").exists()
        assert cute["kernels"] == 0 and "csrc/cute_sm12x_gemm/" in cute["reason"]
        assert cute["reason"].endswith("none of them is in the install")
    elif arch == "sm90":
        (blockscale,) = asked
        assert blockscale["kernels"] == 0 and "its 8 source(s) are flashinfer's own" in blockscale["reason"]
    if arch != "sm90":
        assert all(m["kernels"] > 0 and m["reason"] is None for m in asked), asked


@pytest.mark.network
def test_a_family_whose_module_generates_nothing_says_why(capsys):
    """The text of ``audit --family cute_sm12x_gemm`` (0.7.4): the head counts the module, the
    note gives its reason (nothing is laid out: its sources are flashinfer's own, and absent)."""
    from cutlass_layout.cli import main

    assert main(["audit", SPEC, "--arch", "sm120", "--family", "cute_sm12x_gemm"]) == 0
    got = capsys.readouterr()
    out, err = got.out, got.err
    assert "modules: 0 of 1 JIT module builders for sm120 give kernels; 1 gives none (the notes say why)" in out
    assert (
        "note: --family cute_sm12x_gemm: matched no tactic: cute_sm12x_gemm: it generates no source: "
        "its 6 source(s) are flashinfer's own"
    ) in out + err


def test_modules_that_give_nothing_say_why_offline(mini):
    """The miniature install with four more builders for sm120, written here: one that loops
    over a sibling module's config list computed by a call (not data only: the harness stands
    it in, so the loop runs over nothing), one whose sources are flashinfer's own and absent, one
    that takes an argument with no default, and one whose code names no CUTLASS. Each is in
    ``modules`` with that reason, and a note says it; the modules that give kernels have none."""
    from cutlass_layout.commands.audit import audit
    from cutlass_layout.reports.audit import head_lines

    jit = mini / "flashinfer" / "jit"
    # a call: not a data-only module (harness.data_only), so a stand-in
    (jit / "gemm" / "extra_configs.py").write_text('CONFIGS = tuple(["A", "B"])\n')
    (jit / "gemm" / "extra.py").write_text(
        "from .. import env as jit_env\n"
        "from ..core import gen_jit_spec\n"
        "from .extra_configs import CONFIGS\n\n\n"
        "def gen_gemm_sm120_module_cutlass_looped():  # a CUTLASS GEMM\n"
        "    out = []\n"
        "    for c in CONFIGS:\n"
        "        out.append(jit_env.FLASHINFER_GEN_SRC_DIR / f'looped_{c}.cu')\n"
        "    return gen_jit_spec('looped_gemm_sm120', out)\n\n\n"
        "def gen_gemm_sm120_module_cutlass_own():  # a CUTLASS GEMM\n"
        "    return gen_jit_spec('own_gemm_sm120', [jit_env.FLASHINFER_CSRC_DIR / 'absent' / 'x.cu'])\n\n\n"
        "def gen_gemm_sm120_module_cutlass_args(dtype):  # a CUTLASS GEMM\n"
        "    return None\n\n\n"
        "def gen_norm_sm120_module():\n"
        "    return None\n"
    )
    res = audit(str(mini), jobs=1)
    by = {m["builder"].rsplit(".", 1)[-1]: m for m in res.modules}
    assert by["gen_gemm_sm120_module_cutlass_looped"]["module"] == "looped_gemm_sm120"
    assert by["gen_gemm_sm120_module_cutlass_looped"]["reason"].startswith(
        "its generator needs flashinfer.jit.gemm.extra_configs, which the harness does not run (it loops over "
        "flashinfer.jit.gemm.extra_configs.CONFIGS"
    )
    assert by["gen_gemm_sm120_module_cutlass_own"]["reason"] == (
        "it generates no source: its 1 source(s) are flashinfer's own (csrc/absent/x.cu), and the audit "
        "lays out generated kernel instantiations only; none of them is in the install"
    )
    assert by["gen_gemm_sm120_module_cutlass_args"]["reason"] == (
        "not run: it takes arguments with no default (dtype): the audit cannot choose them"
    )
    assert by["gen_norm_sm120_module"]["reason"] == (
        "not run: its builder names no CUTLASS: not a CUTLASS kernel to the audit"
    )
    assert by["gen_gemm_sm120_module_cutlass_broken"]["reason"].startswith(
        "its builder failed: ValueError: this builder is broken on purpose"
    )
    for name in ("gen_cutlass_fused_moe_sm120_module", "gen_gemm_sm120_module_cutlass_fp4", "gen_gemm_sm120_module"):
        assert by[name]["kernels"] > 0 and by[name]["reason"] is None
    assert len(by) == 8
    assert any(
        n.startswith(
            "module looped_gemm_sm120 (gen_gemm_sm120_module_cutlass_looped): no kernel: its "
            "generator needs flashinfer.jit.gemm.extra_configs"
        )
        for n in res.notes
    )
    assert (
        "not run for sm120: gemm.extra.gen_gemm_sm120_module_cutlass_args: it takes arguments with no default "
        "(dtype): the audit cannot choose them" in res.notes
    )
    # 3 give kernels; 5 do not: the broken, looped, own, args and norm builders
    assert head_lines(res)[3] == (
        "modules: 3 of 8 JIT module builders for sm120 give kernels; 5 give none (the notes say why)"
    )
