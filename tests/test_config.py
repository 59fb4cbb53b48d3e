import pytest

from cutlass_layout import BadInput, Config, parse_tile
from cutlass_layout.subjects.config import parse_shape, parse_stages


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


@pytest.mark.parametrize(
    "kwargs,word",
    [
        (dict(arch="sm80"), "arch"),
        (dict(a="fp4"), "element"),
        (dict(kernel="batched"), "kernel"),
        (dict(cluster=(2, 1, 1)), "1x1x1"),
        (dict(a="nvfp4", b="mxfp8"), "pair"),
        (dict(arch="sm90", a="nvfp4"), "pair"),
        (dict(schedule="pingpong"), "auto"),
        (dict(c="int8"), "element"),
        (dict(preset="vllm"), "preset"),
    ],
)
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


def test_tile_bytes_capital_only_and_back():
    from cutlass_layout.subjects.config import split_tile, tile_text

    assert split_tile("128x256x64B") == (128, 256, 64, True)
    assert split_tile("128x256x64") == (128, 256, 64, False)
    with pytest.raises(BadInput, match=r"capital B \(128x256x64B\)"):
        parse_tile("128x256x64b")
    with pytest.raises(BadInput, match="layout takes one tile"):
        parse_tile("128x{128,256}x64B")
    # K 128 elements: 64 bytes of fp4, 128 of fp8, 256 of bf16
    assert tile_text((128, 256, 128), "nvfp4", True) == "128x256x64B"
    assert tile_text((128, 256, 128), "mxfp8", True) == "128x256x128B"
    assert tile_text((128, 256, 128), "bf16", True) == "128x256x256B"
    assert tile_text((128, 256, 128), "nvfp4") == "128x256x128"
    assert tile_text((128, 256, 127), "nvfp4", True) == "128x256x127"  # not whole bytes: elements
    assert tile_text((128, 256, 128), None, True) == "128x256x128"


def test_defaults_that_compile_and_a_preset_that_names_its_flags():
    """A tile or epilogue schedule not given is the kernel's own default: sparse takes
    128x128x256 (CUTLASS example 80b; K 128 fails the sparse collective's tile_to_shape), an
    SM90 grouped kernel the TMA epilogue (auto fails "StrideCD must be rank-3"); given, a value
    stands. The vllm preset without its A and scales says which flags it needs."""
    from cutlass_layout.subjects.config import config_from_flags

    assert Config().tile == (128, 128, 128) and Config().epilogue_schedule == "auto"
    assert Config(kernel="sparse").tile == (128, 128, 256)
    assert Config(arch="sm90").epilogue_schedule == "tma" and repr(Config(arch="sm90")) == "Config(arch='sm90')"
    assert Config(arch="sm90", kernel="dense").epilogue_schedule == "auto"
    assert Config(arch="sm90", epilogue_schedule="auto").epilogue_schedule == "auto"
    assert config_from_flags(kernel="sparse", tile="128x128x128").tile == (128, 128, 128)
    assert config_from_flags(arch="sm90").to_dict()["epilogue_schedule"] == "tma"
    with pytest.raises(BadInput, match="--a e4m3 --scales 1x128x128"):
        config_from_flags(preset="vllm")
