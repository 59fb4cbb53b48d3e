"""Finding CUTLASS trees: synthetic layouts of every kind of source, built in tmp_path.

Large installs (vLLM 336 MB, sgl-kernel 536 MB) are represented by small directory trees
with the same paths; nothing big is downloaded here.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from cutlass_layout import BadInput, resolve_cutlass
from cutlass_layout.sources import find_trees, read_version, tree_hash

VERSION_H = """#pragma once
#define CUTLASS_MAJOR {0}
#define CUTLASS_MINOR {1}
#define CUTLASS_PATCH {2}
"""


def make_tree(include: Path, version=(4, 2, 1)) -> Path:
    (include / "cutlass").mkdir(parents=True)
    (include / "cute").mkdir()
    (include / "cutlass" / "version.h").write_text(VERSION_H.format(*version))
    (include / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    return include


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))


def test_include_dir_and_checkout(tmp_path):
    inc = make_tree(tmp_path / "cutlass" / "include", (3, 9, 2))
    for src in (inc, tmp_path / "cutlass"):
        t = resolve_cutlass(str(src))
        assert t.include_root == inc.resolve()
        assert t.version == "3.9.2"


def test_site_packages_layouts(tmp_path):
    sp = tmp_path / "site-packages"
    make_tree(sp / "flashinfer" / "data" / "cutlass" / "include", (4, 5, 0))
    (sp / "flashinfer" / "data" / "csrc").mkdir()
    t = resolve_cutlass(str(sp))
    assert t.include_root == (sp / "flashinfer/data/cutlass/include").resolve()
    assert t.version == "4.5.0"


def test_several_trees_are_listed_and_one_can_be_picked(tmp_path):
    sp = tmp_path / "site-packages"
    # vLLM keeps two trees
    make_tree(sp / "vllm" / "third_party" / "deep_gemm" / "include", (4, 2, 1))
    make_tree(sp / "vllm" / "third_party" / "fmha_sm100" / "cutlass" / "include", (4, 8, 0))
    with pytest.raises(BadInput) as exc:
        resolve_cutlass(str(sp))
    msg = str(exc.value)
    assert "2 CUTLASS trees" in msg
    assert "vllm/third_party/deep_gemm/include" in msg
    assert "vllm/third_party/fmha_sm100/cutlass/include" in msg
    t = resolve_cutlass(f"{sp}#vllm/third_party/fmha_sm100/cutlass/include")
    assert t.version == "4.8.0"
    assert len(find_trees(sp)) == 2


def test_many_trees_are_counted_not_all_listed(tmp_path):
    for i in range(9):
        make_tree(tmp_path / f"t{i}" / "include", (4, 2, 0))
    with pytest.raises(BadInput) as exc:
        resolve_cutlass(str(tmp_path))
    msg = str(exc.value)
    assert msg.startswith(f"{tmp_path} holds 9 CUTLASS trees: t0/include, ")
    assert "t5/include and 3 more; " in msg and "t6/include" not in msg


def test_sgl_kernel_layout(tmp_path):
    sp = tmp_path / "sp"
    make_tree(sp / "deep_gemm" / "include", (4, 2, 0))
    (sp / "sgl_kernel").mkdir()
    assert resolve_cutlass(str(sp)).version == "4.2.0"


def make_wheel(path: Path, prefix: str, version=(4, 2, 0), extra: dict | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        if prefix is not None:
            zf.writestr(f"{prefix}cutlass/version.h", VERSION_H.format(*version))
            zf.writestr(f"{prefix}cutlass/cutlass.h", "#pragma once\n")
            zf.writestr(f"{prefix}cute/tensor.hpp", "#pragma once\n")
        zf.writestr("pkg/big_binary.so", b"\0" * 1000)
        for k, v in (extra or {}).items():
            zf.writestr(k, v)
    return path


def test_wheel_unpacks_only_the_include_tree_once(tmp_path):
    whl = make_wheel(tmp_path / "nvidia_cutlass-4.2.0.0-py3-none-any.whl",
                     "cutlass_library/source/include/")
    t = resolve_cutlass(str(whl))
    assert t.version == "4.2.0"
    assert (t.include_root / "cute" / "tensor.hpp").is_file()
    unpacked = {p.name for p in t.include_root.parents[3].rglob("*") if p.is_file()}
    assert "big_binary.so" not in unpacked
    assert str(t.include_root).startswith(str(tmp_path / "cache"))
    stamp = (t.include_root / "cutlass" / "cutlass.h").stat().st_mtime_ns
    again = resolve_cutlass(str(whl))
    assert again.include_root == t.include_root
    assert (t.include_root / "cutlass" / "cutlass.h").stat().st_mtime_ns == stamp


def test_wheel_without_cutlass(tmp_path):
    whl = make_wheel(tmp_path / "other-1.0-py3-none-any.whl", None)
    with pytest.raises(BadInput, match="no CUTLASS headers"):
        resolve_cutlass(str(whl))


def test_not_a_wheel(tmp_path):
    bad = tmp_path / "broken-1.0-py3-none-any.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(BadInput, match="not a readable wheel"):
        resolve_cutlass(str(bad))


def test_missing_and_empty(tmp_path):
    with pytest.raises(BadInput, match="does not exist"):
        resolve_cutlass(str(tmp_path / "nope" / "include"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="no CUTLASS headers"):
        resolve_cutlass(str(tmp_path / "empty"))
    with pytest.raises(BadInput, match="neither an existing path nor an installed distribution"):
        resolve_cutlass("surely-not-installed-dist")


def test_version_h_without_defines(tmp_path):
    inc = tmp_path / "include"
    (inc / "cutlass").mkdir(parents=True)
    (inc / "cutlass" / "version.h").write_text("garbage\n")
    with pytest.raises(BadInput, match="CUTLASS_MAJOR"):
        read_version(inc)


def test_tree_hash_follows_content_not_version(tmp_path):
    a = make_tree(tmp_path / "a" / "include")
    b = make_tree(tmp_path / "b" / "include")
    assert tree_hash(a) == tree_hash(b)
    (b / "cutlass" / "cutlass.h").write_text("#pragma once\n// changed\n")
    from cutlass_layout import sources
    sources._TREE_HASHES.clear()
    assert tree_hash(a) != tree_hash(b)


def test_installed_distribution_by_name(tmp_path, monkeypatch):
    """A fake installed distribution (dist-info with RECORD) found by import and dist name."""
    sp = tmp_path / "sp"
    make_tree(sp / "flashinfer" / "data" / "cutlass" / "include", (4, 4, 2))
    info = sp / "flashinfer_python-0.6.8.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flashinfer-python\nVersion: 0.6.8\n")
    (info / "RECORD").write_text(
        "flashinfer/data/cutlass/include/cutlass/version.h,,\n"
        "flashinfer_python-0.6.8.dist-info/METADATA,,\n"
    )
    monkeypatch.syspath_prepend(str(sp))
    import importlib
    importlib.invalidate_caches()
    for name in ("flashinfer", "flashinfer-python"):
        t = resolve_cutlass(name)
        assert t.version == "4.4.2"
        assert "flashinfer" in t.origin


@pytest.mark.network
def test_name_with_version_fetches_a_wheel():
    """Fetched once into the cache (the session's: tests/conftest.py), then reused."""
    from cutlass_layout.cache import cache_dir

    t = resolve_cutlass("nvidia-cutlass==4.2.0.0")
    assert Path(t.include_root).is_relative_to(cache_dir())
    assert t.version == "4.2.0"
    assert t.include_root.as_posix().endswith("cutlass_library/source/include")


@pytest.mark.network
def test_source_only_version_is_a_clear_error():
    with pytest.raises(BadInput, match="no wheel for flashinfer-python==0.2.5"):
        resolve_cutlass("flashinfer-python==0.2.5")
