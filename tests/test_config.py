import pytest

from cutlass_layout import BadInput, Config, parse_tile
from cutlass_layout.config import parse_shape, parse_stages


def test_tile_in_elements_and_in_bytes():
    assert parse_tile("128x256x128") == (128, 256, 128)
    # TensorRT-LLM names tactics with K in bytes: 64B of fp4 are 128 elements
    assert parse_tile("128x128x64B", "nvfp4") == (128, 128, 128)
    assert parse_tile("128x128x128B", "mxfp8") == (128, 128, 128)


@pytest.mark.parametrize("text", ["128x0x128", "abc", "128x128", "", "-1x2x3", "1x2x3x4"])
def test_bad_tiles(text):
    with pytest.raises(BadInput):
        parse_tile(text)


def test_stages_and_cluster():
    assert parse_stages("auto") is None
    assert parse_stages("3") == 3
    with pytest.raises(BadInput):
        parse_stages("0")
    assert parse_shape("1x1x1") == (1, 1, 1)


@pytest.mark.parametrize("kwargs,word", [
    (dict(arch="sm80"), "arch"),
    (dict(a="fp4"), "element"),
    (dict(kernel="batched"), "kernel"),
    (dict(cluster=(2, 1, 1)), "1x1x1"),
    (dict(a="nvfp4", b="mxfp8"), "pair"),
    (dict(arch="sm90", a="nvfp4"), "pair"),
    (dict(schedule="pingpong"), "auto"),
    (dict(c="int8"), "element"),
    (dict(preset="vllm"), "preset"),
])
def test_bad_configs_say_what_is_wrong(kwargs, word):
    with pytest.raises(BadInput) as exc:
        Config(**kwargs)
    assert word in str(exc.value)
    assert "\n" not in str(exc.value)


def test_preset_epilogue_values():
    fi = Config()
    assert (fi.element_c, fi.element_d, fi.alignment("c"), fi.alignment("d")) == ("void", "bf16", 0, 8)
    moe = Config(preset="trtllm-moe")
    # TRT-LLM computes AlignmentC from the input element (fp4: 128 / 4 = 32)
    assert (moe.element_c, moe.alignment("c"), moe.alignment("d")) == ("bf16", 32, 8)
    assert Config(preset="trtllm-moe", c="f32").element_c == "f32"
    assert Config(a="mxfp8", b="mxfp4").alignment("b") == 128
    assert Config(a="mxfp8", b="mxfp8").alignment("a") == 16
