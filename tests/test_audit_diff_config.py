"""diff --audit pairs tactics by configuration, not by the install's spelling of their names.

Offline: hand-made Tactic lists (pairing only), and two copies of
fixtures/installs/mini_flashinfer whose dense FP4 stand-in is respelled as flashinfer 0.7.2
respelled its own: the old copy's macro has no SWAP_AB_ argument (struct
``MiniDense_f16_128_64_32``), the new one appends it (``MiniDense_f16_128_64_32false``) and
instantiates both ``true`` and ``false``; sizes by hand (tests/test_audit.py's ``mini_sizes``).
With the package index: flashinfer-python 0.6.8 -> 0.7.2.post1, the dense FP4 GEMM family,
counts computed from the two wheels' own sources.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from test_audit import CAPACITY, MINI, mini_sizes

from cutlass_layout import diff
from cutlass_layout.cli import main
from cutlass_layout.commands.diff_audit import pair_tactics, renamed_part, tactic_configuration
from cutlass_layout.model import Tactic

HEADER = "flashinfer/data/include/mini/dense_template_sm120.h"
JINJA = "flashinfer/data/csrc/mini_dense.jinja"
FAMILY = "fp4_gemm_cutlass_sm120"


def tactic(name: str, *, tile=(128, 64, 32), cluster=(1, 1, 1), swap_ab=None, out="f16") -> Tactic:
    return Tactic(
        family=FAMILY,
        name=name,
        a="nvfp4",
        b="nvfp4",
        out=out,
        fusion=None,
        swap_ab=swap_ab,
        tile=list(tile),
        cluster=None if cluster is None else list(cluster),
        kernel="dense",
        schedule="KernelTmaWarpSpecializedCooperative",
        file="x.cu",
        line=1,
        launcher=name.split("::")[0],
    )


def test_configuration_leaves_out_the_name_and_counts_no_swap_as_not_swapped():
    t = tactic("S_1SM::GemmKernelDefault")
    cfg = tactic_configuration(t, "sm120")
    assert cfg == {
        "family": FAMILY,
        "arch": "sm120",
        "a": "nvfp4",
        "b": "nvfp4",
        "out": "f16",
        "tile": [128, 64, 32],
        "cluster": [1, 1, 1],
        "schedule": "KernelTmaWarpSpecializedCooperative",
        "fusion": None,
        "swap_ab": False,
        "kernel": "dense",
    }
    assert tactic_configuration(tactic("other name", swap_ab=False), "sm120") == cfg
    assert tactic_configuration(tactic("S", swap_ab=True), "sm120")["swap_ab"] is True


def test_pairing_is_by_configuration_then_by_the_rest_of_the_name():
    """Two tactics of one configuration on each side (a runtime cluster, no Tactic field tells
    Default from StreamK): the most alike ids pair; a third old one of that configuration is
    removed, not dropped; a unique configuration pairs whatever its name; equal ids say ``id``."""
    olds = [
        tactic("S_1SM::GemmKernelStreamK", cluster=None),
        tactic("S_1SM::GemmKernelDefault", cluster=None),
        tactic("S_1SM::GemmKernelExtra", cluster=None),
        tactic("T_a", tile=(256, 128, 64)),
        tactic("U", tile=(128, 32, 64)),
    ]
    news = [
        tactic("S_1SMfalse::GemmKernelDefault", cluster=None, swap_ab=False),
        tactic("S_1SMfalse::GemmKernelStreamK", cluster=None, swap_ab=False),
        tactic("T_b", tile=(256, 128, 64)),
        tactic("U", tile=(128, 32, 64)),
        tactic("S_1SMtrue::GemmKernelDefault", cluster=None, swap_ab=True),
    ]
    got = [(o and o.name, n and n.name, by) for o, n, by in pair_tactics(olds, news, "sm120")]
    assert got == [
        ("S_1SM::GemmKernelStreamK", "S_1SMfalse::GemmKernelStreamK", "name"),
        ("S_1SM::GemmKernelDefault", "S_1SMfalse::GemmKernelDefault", "name"),
        ("T_a", "T_b", "configuration"),
        ("U", "U", "id"),
        ("S_1SM::GemmKernelExtra", None, None),
        (None, "S_1SMtrue::GemmKernelDefault", None),
    ]
    # the same answer whatever order the new side lists them in
    again = [(o and o.name, n and n.name, by) for o, n, by in pair_tactics(olds, news[::-1], "sm120")]
    assert sorted(map(str, again)) == sorted(map(str, got))


def test_renamed_part_is_widened_to_words():
    assert renamed_part(
        f"{FAMILY}/S_half_128_1_1_1_1SM::GemmKernelDefault/nvfp4xnvfp4/f16",
        f"{FAMILY}/S_half_128_1_1_1_1SMfalse::GemmKernelDefault/nvfp4xnvfp4/f16",
    ) == ("1SM", "1SMfalse")
    assert renamed_part("moe/CtaShape128x64x32B/x", "moe/CtaShape128x64x64B/x") == (
        "CtaShape128x64x32B",
        "CtaShape128x64x64B",
    )
    assert renamed_part("a/b", "a/b") == ("", "")


@pytest.fixture
def respelled(tmp_path, monkeypatch):
    """(old, new) mini installs: old spells the dense structs without a swap argument, new
    appends it (to the launcher too) and instantiates both values; ``stages`` of the new copy's mainloop is set by
    the test (2 in the fixture)."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(MINI, old)
    shutil.copytree(MINI, new)
    h = (old / HEADER).read_text()
    assert h.count("CTA_K_, SWAP_AB_)") == 2 and h.count("##CTA_K_##SWAP_AB_") == 2
    (old / HEADER).write_text(h.replace("CTA_K_, SWAP_AB_)", "CTA_K_)").replace("##CTA_K_##SWAP_AB_", "##CTA_K_"))
    j = (old / JINJA).read_text()
    assert "{{ k }}, true)" in j
    (old / JINJA).write_text(j.replace("{{ k }}, true)", "{{ k }})"))
    line = next(ln for ln in j.splitlines() if "{{ k }}, true)" in ln)
    (new / JINJA).write_text(j.replace(line, line + "\n" + line.replace("true)", "false)")))
    h = (new / HEADER).read_text()  # one launcher per swap value, as flashinfer's are
    assert h.count("mini_dense_launch_##T(") == 1
    (new / HEADER).write_text(h.replace("mini_dense_launch_##T(", "mini_dense_launch_##T##SWAP_AB_("))

    def stages(n: int):
        h = (new / HEADER).read_text()
        assert "MainloopSm120Mini<2>" in h
        (new / HEADER).write_text(h.replace("MainloopSm120Mini<2>", f"MainloopSm120Mini<{n}>"))

    return old, new, stages


@pytest.mark.parametrize("new_stages", [2, 3])
def test_mini_respelled_dense_tactics_are_renamed(respelled, new_stages, capsys):
    """The fixture renders the 128x64x32 tile for f16 and bf16, two kernels each
    (GemmKernelDefault, GemmKernelStreamK): old 4 tactics (no swap), new 8 (swap true and
    false). The 4 old ones pair with the new ``false`` ones (renamed ``32`` -> ``32false``);
    the ``true`` ones are added. Sizes by hand: 2 stages, epilogue 2048 -> 16384 B; 3 stages
    -> 22528 B (mini_sizes). The stand-in names no element types (ids ``.../NonexNone/None``)."""
    old, new, stages = respelled
    if new_stages != 2:
        stages(new_stages)
    res = diff(str(old), str(new), audit=True, family=FAMILY)
    a = res.audit
    assert (a.old_tactics, a.new_tactics) == (4, 8)
    paired = [r for r in a.rows if r.old is not None and r.new is not None]
    assert len(paired) == 4 and sum(r.change == "added" for r in a.rows) == 4
    assert not any(r.change == "removed" for r in a.rows)
    old_bytes = mini_sizes(128, 64, 32, 2, 2048)[2]
    new_bytes = mini_sizes(128, 64, 32, new_stages, 2048)[2]
    assert (old_bytes, mini_sizes(128, 64, 32, 3, 2048)[2]) == (16384, 22528)
    for r in paired:
        assert r.old.name.replace("_32::", "_32false::") == r.new.name  # Default with Default
        assert (r.old.swap_ab, r.new.swap_ab) == (None, False)
        assert (r.rename.old, r.rename.new) == ("32", "32false") and r.paired_by == "name"
        assert (r.old_id, r.new_id, r.id) == (r.old.id, r.new.id, r.new.id)
        assert (r.old.kernel_bytes, r.new.kernel_bytes) == (old_bytes, new_bytes)
        assert r.kernel_bytes_delta == new_bytes - old_bytes
        if new_stages == 2:
            assert (r.change, r.kinds) == ("renamed", ["renamed"])
        else:
            assert (r.change, r.kinds) == ("numbers", ["renamed", "numbers"])
            assert {"stages", "kernel_bytes"} <= set(r.changed)
    for r in a.rows:
        if r.change == "added":
            assert r.new.swap_ab is True and r.new.name.split("::")[0].endswith("true")
    assert res.has_differences

    assert main(["diff", str(old), str(new), "--audit", "--family", FAMILY, "--exit-code"]) == 1
    out = capsys.readouterr().out
    counts = "0 with changed numbers, 4 renamed" if new_stages == 2 else "4 with changed numbers, 0 renamed"
    assert counts in out
    flag = "~" if new_stages == 2 else "*"
    row = f"  {flag} {FAMILY}/MiniDense_f16_128_64_32false::GemmKernelDefault/NonexNone/None: "
    nums = (
        "16384 B, 2 stages, fits on both sides (+0 B)"
        if new_stages == 2
        else "16384 B, 2 stages, fits -> 22528 B, 3 stages, fits (+6144 B)"
    )
    assert row + nums in out
    assert f"renamed: 32 -> 32false, was {FAMILY}/MiniDense_f16_128_64_32::GemmKernelDefault/NonexNone/None" in out
    assert main(["diff", str(old), str(new), "--audit", "--family", FAMILY, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = doc["audit"]["tactics"]
    keys = {
        "id",
        "family",
        "name",
        "change",
        "changed",
        "members",
        "old",
        "new",  # as before
        "kinds",
        "old_id",
        "new_id",
        "rename",
        "paired_by",
        "config",
        "kernel_bytes_delta",
        "gate",  # the release gate's part of each (diff --check)
    }
    assert all(set(t) == keys for t in rows)
    r = next(t for t in rows if t["old_id"] == f"{FAMILY}/MiniDense_bf16_128_64_32::GemmKernelStreamK/NonexNone/None")
    assert r["new_id"] == f"{FAMILY}/MiniDense_bf16_128_64_32false::GemmKernelStreamK/NonexNone/None"
    assert r["rename"] == {"old": "32", "new": "32false"} and r["kernel_bytes_delta"] == new_bytes - old_bytes
    assert r["config"]["swap_ab"] is False and r["new"]["swap_ab"] is False and r["old"]["swap_ab"] is None
    assert all(r["config"][k] == r["old"][k] == r["new"][k] for k in ("family", "tile", "cluster", "kernel"))
    assert r["new"]["capacity_bytes"] == CAPACITY
    added = [t for t in rows if t["change"] == "added"]
    assert all(t["old_id"] is None and t["rename"] is None and t["paired_by"] is None for t in added)


# ---------------------------------------------------------------------------------------------
# the real pair


def _dense_fp4_instantiations(flashinfer: Path) -> set[tuple]:
    """(tile, dtype, swap, kernel alias) of every dense FP4 SM120 kernel a flashinfer wheel
    builds, read from its sources: the tiles and dtypes of ``gen_gemm_sm120_module_cutlass_fp4``
    (jit/gemm/core.py), the swap argument of each INSTANTIATE line of its jinja (None where the
    macro has none), and the GemmKernel* aliases the macro declares per struct."""
    core = (flashinfer / "jit/gemm/core.py").read_text()
    body = core[core.index("def gen_gemm_sm120_module_cutlass_fp4") :]
    body = body[: body.index("\ndef ", 1)]
    tiles = [tuple(map(int, t)) for t in re.findall(r"\((\d+), (\d+), (\d+)\)", body)]
    dtypes = re.findall(r'"(\w+)"', re.search(r"dtype_list = \[([^\]]*)\]", body).group(1))
    jinja = (flashinfer / "data/csrc/fp4_gemm_cutlass_sm120.jinja").read_text()
    lines = re.findall(r"^INSTANTIATE_FP4_GEMM_KERNEL_LAUNCHER\((.*)\)\s*$", jinja, re.M)
    swaps = [a[-1] if a[-1] in ("true", "false") else None for a in (re.split(r"\s*,\s*", x) for x in lines)]
    header = (flashinfer / "data/include/flashinfer/gemm/fp4_gemm_template_sm120.h").read_text()
    aliases = set(re.findall(r"using (GemmKernel\w+)\s*=", header))
    assert tiles and dtypes and swaps and aliases == {"GemmKernelDefault", "GemmKernelStreamK"}
    return {(t, d, s, k) for t in tiles for d in dtypes for s in swaps for k in aliases}


@pytest.mark.slow
@pytest.mark.network
def test_068_072_dense_fp4_tiles_are_paired():
    """0.7.2.post1 appended a SWAP_AB_ argument to the dense FP4 GEMM structs (``..._1SM`` ->
    ``..._1SMfalse``) and instantiates true and false. Every kernel of 0.6.8 (no swap) pairs with
    the 0.7.2 kernel of its tile, dtype and alias whose swap is false; the rest of 0.7.2's are
    added; counts from the wheels' sources. The shared tiles all have N = 128, which neither the
    4.5.0 SFB padding (N < 128) nor a change of reduced capacity (both sides >= 4.4.2) touches:
    their numbers are the same, so each pair is ``renamed`` only."""
    res = diff("flashinfer-python==0.6.8", "flashinfer-python==0.7.2.post1", audit=True, family=FAMILY)
    old_src = _dense_fp4_instantiations(Path(res.old.provenance.cutlass_root).parents[2])
    new_src = _dense_fp4_instantiations(Path(res.new.provenance.cutlass_root).parents[2])
    assert {s for _, _, s, _ in old_src} == {None} and {s for _, _, s, _ in new_src} == {"true", "false"}
    shared = {(t, d, k) for t, d, _, k in old_src} & {(t, d, k) for t, d, s, k in new_src if s == "false"}
    a = res.audit
    assert (a.old_tactics, a.new_tactics) == (len(old_src), len(new_src))
    paired = [r for r in a.rows if r.old is not None and r.new is not None]
    assert len(paired) == len(shared) == len(old_src)
    assert sum(r.change == "added" for r in a.rows) == len(new_src) - len(shared)
    assert not any(r.change == "removed" for r in a.rows)
    assert all(t[1] >= 128 for t, _, _ in shared)
    dtype = {"half": "f16", "__nv_bfloat16": "bf16"}
    want = {(t, dtype[d], k) for t, d, k in shared}
    got = set()
    for r in paired:
        o, n = r.old, r.new
        assert (o.tile, o.out, o.swap_ab) == (n.tile, n.out, None) and n.swap_ab is False
        assert o.name.split("::")[1] == n.name.split("::")[1]  # Default with Default, StreamK with StreamK
        assert (r.rename.old, r.rename.new) == ("1SM", "1SMfalse")
        assert (r.change, r.kernel_bytes_delta) == ("renamed", 0)
        assert n.capacity_bytes == CAPACITY
        got.add((tuple(n.tile), n.out, n.name.split("::")[1]))
    assert got == want
