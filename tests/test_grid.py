import json

import pytest

from cutlass_layout import BadInput, Config
from cutlass_layout.subjects.grid import expand_braces, grid_configs, load_grid_file


def test_braces():
    assert expand_braces("128x{32,64}x{128,256}") == ["128x32x128", "128x32x256", "128x64x128", "128x64x256"]
    assert expand_braces("256x128x128") == ["256x128x128"]
    for bad in ("128x{32,64x128", "128x{}x128", "128x{32,}x128"):
        with pytest.raises(BadInput):
            expand_braces(bad)


def test_product_and_defaults():
    cfgs = grid_configs({"tile": ["128x{32,64}x128", "256x128x128"], "stages": ["auto", "3"]})
    assert len(cfgs) == 6
    assert cfgs[0] == Config(tile=(128, 32, 128))
    assert cfgs[1] == Config(tile=(128, 32, 128), stages=3)
    assert cfgs[-1] == Config(tile=(256, 128, 128), stages=3)


def test_duplicates_dropped_and_bad_values():
    assert len(grid_configs({"tile": ["128x128x128", "128x128x64B"]})) == 1
    with pytest.raises(BadInput, match="unknown grid key"):
        grid_configs({"tiles": "128x128x128"})
    with pytest.raises(BadInput, match="tile"):
        grid_configs({"tile": "128x0x128"})


def test_grid_files(tmp_path):
    toml = tmp_path / "g.toml"
    toml.write_text('kernel = ["grouped", "dense"]\ntile = "128x{64,128}x128"\nstages = ["auto", 3]\n')
    assert len(load_grid_file(toml)) == 8
    js = tmp_path / "g.json"
    js.write_text(json.dumps({"configs": [{"tile": "128x128x128"}, {"tile": "256x128x128", "preset": "trtllm-moe"}]}))
    cfgs = load_grid_file(js)
    assert [c.preset for c in cfgs] == ["flashinfer", "trtllm-moe"]
    bad = tmp_path / "bad.toml"
    bad.write_text("tile = [")
    with pytest.raises(BadInput, match="bad.toml"):
        load_grid_file(bad)
    with pytest.raises(BadInput, match="cannot read"):
        load_grid_file(tmp_path / "missing.toml")
