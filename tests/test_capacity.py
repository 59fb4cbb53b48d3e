"""The capacity comes from the headers being analysed, not from a table in the tool."""

from __future__ import annotations

import re
import shutil

import pytest

from cutlass_layout import Config, layout, resolve_cutlass
from cutlass_layout.engine.loop import Target

pytestmark = pytest.mark.network


def test_patched_arch_h_is_read(nc420, tmp_path):
    inc = tmp_path / "include"
    shutil.copytree(nc420.tree.include_root, inc)
    arch_h = inc / "cutlass" / "arch" / "arch.h"
    text = arch_h.read_text()
    assert "sm120_smem_capacity_bytes = 101376;" in text
    # exactly the size of the default kernel (84992 B, tests/handed.md section A)
    arch_h.write_text(re.sub(r"sm120_smem_capacity_bytes = 101376;", "sm120_smem_capacity_bytes = 84992;", text))
    tree = resolve_cutlass(str(inc))
    assert tree.tree_hash != nc420.tree.tree_hash
    rep = layout(Config(), Target(tree=tree, cuda=nc420.cuda))
    assert rep.capacity.value == 84992
    assert rep.capacity.expression == "84992"
    assert rep.capacity.file == "cutlass/arch/arch.h"
    assert rep.kernel.size == 84992
    assert rep.fits is True and rep.headroom_bytes == 0 and rep.exact_fit is True
