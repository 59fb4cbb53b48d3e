"""Finding CUTLASS trees: synthetic layouts of every kind of source, built in tmp_path.

Large installs (vLLM 336 MB, sgl-kernel 536 MB) are represented by small directory trees
with the same paths; nothing big is downloaded here.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from cutlass_layout import BadInput, resolve_cutlass
from cutlass_layout.sources.trees import find_trees, read_version
from cutlass_layout.sources.digests import tree_hash

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
    whl = make_wheel(tmp_path / "nvidia_cutlass-4.2.0.0-py3-none-any.whl", "cutlass_library/source/include/")
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
    from cutlass_layout.sources import digests

    digests.TREE_HASHES.clear()
    assert tree_hash(a) != tree_hash(b)


def test_installed_distribution_by_name(tmp_path, monkeypatch):
    """A fake installed distribution (dist-info with RECORD) found by import and dist name."""
    sp = tmp_path / "sp"
    make_tree(sp / "flashinfer" / "data" / "cutlass" / "include", (4, 4, 2))
    info = sp / "flashinfer_python-0.6.8.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flashinfer-python\nVersion: 0.6.8\n")
    (info / "RECORD").write_text(
        "flashinfer/data/cutlass/include/cutlass/version.h,,\nflashinfer_python-0.6.8.dist-info/METADATA,,\n"
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
    from cutlass_layout.core.cache import cache_dir

    t = resolve_cutlass("nvidia-cutlass==4.2.0.0")
    assert Path(t.include_root).is_relative_to(cache_dir())
    assert t.version == "4.2.0"
    assert t.include_root.as_posix().endswith("cutlass_library/source/include")


@pytest.mark.network
def test_source_only_version_is_a_clear_error():
    with pytest.raises(BadInput, match="no wheel for flashinfer-python==0.2.5"):
        resolve_cutlass("flashinfer-python==0.2.5")


def test_short_pip_error_keeps_the_oldest_and_newest_versions():
    """pip's "Could not find a version" line (its own wording), a version list of 9 cut to the
    oldest and the 5 newest; a short list, or a line without one, as pip wrote it."""
    from cutlass_layout.sources.wheels import short_pip_error

    versions = ", ".join(["0.1.0", "0.1.1", "0.2.0", "0.2.5", "0.3.0", "0.6.8", "0.7.2.post1", "0.7.3", "0.7.4"])
    line = (
        f"Could not find a version that satisfies the requirement flashinfer-python==9.9.9 (from versions: {versions})"
    )
    assert short_pip_error(line) == (
        "Could not find a version that satisfies the requirement "
        "flashinfer-python==9.9.9 (from versions: 0.1.0, ..., 0.3.0, 0.6.8, "
        "0.7.2.post1, 0.7.3, 0.7.4; 9 in all)"
    )
    short = "Could not find a version that satisfies the requirement x==2 (from versions: 1.0, 1.1)"
    assert short_pip_error(short) == short
    assert short_pip_error("No matching distribution found for x==2") == "No matching distribution found for x==2"
    assert short_pip_error(line, keep=7) == line  # 9 <= 7 + 2: nothing to cut


# ---------------------------------------------------------------------------------------
# checkouts without include/cutlass/version.h (tags v2.0.0 to v3.4.0: CMake generates it from
# cmake/version.h.in into the build folder). The markers below are those of tag v2.10.0
# (CMakeLists.txt line 41, CHANGELOG.md line 3) and v3.1.0 (python/setup.py line 122), as
# `git show <tag>:<file>` prints them.
CMAKE_210 = (
    "cmake_minimum_required(VERSION 3.12.4 FATAL_ERROR)\n"
    'message(STATUS "CMake Version: ${CMAKE_VERSION}")\n\n'
    "project(CUTLASS VERSION 2.10.0 LANGUAGES CXX)\n"
    "include(${CMAKE_CURRENT_SOURCE_DIR}/CUDA.cmake)\n"
)
CMAKE_341 = (
    "project(CUTLASS VERSION ${_CUTLASS_VERSION_MAJOR}.${_CUTLASS_VERSION_MINOR}."
    "${_CUTLASS_VERSION_PATCH} LANGUAGES CXX)\n"
)
CHANGELOG_211 = (
    "# NVIDIA CUTLASS Changelog\n\n"
    "## [2.11.0](https://github.com/NVIDIA/cutlass/releases/tag/v2.11.0) (2022-11-19)\n"
    "* Stream-K\n\n"
    "## [2.10.0](https://github.com/NVIDIA/cutlass/releases/tag/v2.10.0) (2022-08-23)\n"
)
SETUP_310 = "setup_args = dict(\n    name='cutlass',\n    version='3.1.0',\n)\n"


def make_checkout_2x(root: Path, **markers) -> Path:
    """A checkout shaped like tag v2.10.0's: include/cutlass/cutlass.h and no version.h, no
    cute/; ``markers`` maps a file relative to ``root`` to its text."""
    (root / "include" / "cutlass" / "gemm").mkdir(parents=True)
    (root / "include" / "cutlass" / "cutlass.h").write_text("#pragma once\n")
    (root / "include" / "cutlass" / "gemm" / "gemm.h").write_text("#pragma once\n")
    for rel, text in markers.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    "markers, want",
    [
        ({"CMakeLists.txt": CMAKE_210, "CHANGELOG.md": CHANGELOG_211}, ("2.10.0", "CMakeLists.txt project()")),
        ({"CHANGELOG.md": CHANGELOG_211}, ("2.11.0", "CHANGELOG.md heading")),
        # v3.4.1's project() names no number: passed over
        ({"CMakeLists.txt": CMAKE_341, "CHANGELOG.md": CHANGELOG_211}, ("2.11.0", "CHANGELOG.md heading")),
        ({"python/setup.py": SETUP_310}, ("3.1.0", "python/setup.py version")),
        # the first heading is no version (v3.3.0 writes "## [3.3]"): passed over, not the next one
        (
            {
                "CHANGELOG.md": "## [3.3](https://github.com/NVIDIA/cutlass/releases/tag/v3.3) (2023-10-31)\n"
                "## [3.2.2]\n"
            },
            ("unknown", "none"),
        ),
        ({}, ("unknown", "none")),
    ],
    ids=["cmake", "changelog", "cmake-3.4.1", "setup.py", "changelog-3.3", "none"],
)
def test_checkout_without_version_h(tmp_path, markers, want):
    from cutlass_layout.sources.trees import tree_version

    root = make_checkout_2x(tmp_path / "cutlass", **markers)
    assert tree_version(root / "include") == want
    for src in (root, root / "include"):
        t = resolve_cutlass(str(src))
        assert t.include_root == (root / "include").resolve()
        assert (t.version, t.version_from) == want


def test_checkout_markers_that_cannot_be_read_are_passed_over(tmp_path):
    import os

    root = make_checkout_2x(tmp_path / "c", **{"CHANGELOG.md": CHANGELOG_211})
    (root / "CMakeLists.txt").mkdir()  # a folder, not a file
    os.mkfifo(root / "python_setup_fifo")
    (root / "python").mkdir()
    (root / "python" / "setup.py").symlink_to(root / "python_setup_fifo")
    assert resolve_cutlass(str(root)).version == "2.11.0"
    # not UTF-8: read with replacement characters, so the heading no longer starts its line
    (root / "CHANGELOG.md").write_bytes(b"\xff\xfe## [9.9.9]\n")
    assert resolve_cutlass(str(root)).version == "unknown"


def test_version_h_wins_over_the_markers(tmp_path):
    root = tmp_path / "c"
    make_tree(root / "include", (4, 7, 0))
    (root / "CMakeLists.txt").write_text(CMAKE_210)
    t = resolve_cutlass(str(root))
    assert (t.version, t.version_from) == ("4.7.0", "cutlass/version.h")


def test_tree_without_cutlass_h_is_still_no_cutlass(tmp_path):
    root = tmp_path / "c"
    (root / "include" / "cutlass").mkdir(parents=True)
    (root / "include" / "cutlass" / "gemm.h").write_text("#pragma once\n")
    (root / "CMakeLists.txt").write_text(CMAKE_210)  # markers alone make no tree
    with pytest.raises(BadInput, match="no CUTLASS headers"):
        resolve_cutlass(str(root))
    with pytest.raises(BadInput, match="not a CUTLASS include tree"):
        resolve_cutlass(f"{root}#include")


def test_checkout_2x_from_the_cli(tmp_path, capsys):
    from cutlass_layout.cli import main

    root = make_checkout_2x(tmp_path / "c", **{"CMakeLists.txt": CMAKE_210})
    assert main(["source", "--cutlass", str(root)]) == 0
    assert "version:      2.10.0 (from CMakeLists.txt project(); no cutlass/version.h)" in capsys.readouterr().out
    (root / "include" / "cutlass" / "cutlass.h").unlink()
    assert main(["source", "--cutlass", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no CUTLASS headers") and err.count("\n") == 1


def test_builtin_configs_on_a_2x_tree_are_bad_input(tmp_path, capsys):
    """The presets are 3.x kernels: a tree without cute/ refuses them before any parse."""
    from cutlass_layout.cli import main

    root = make_checkout_2x(tmp_path / "c", **{"CMakeLists.txt": CMAKE_210})
    assert main(["layout", "--cutlass", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: CUTLASS 2.10.0 at ") and err.count("\n") == 1
    assert "has no cute/tensor.hpp (a CUTLASS 2.x tree" in err and "user type" in err


def test_wheel_with_cutlass_h_only(tmp_path):
    whl = tmp_path / "old_cutlass-2.10-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.writestr("pkg/include/cutlass/cutlass.h", "#pragma once\n")
        zf.writestr("pkg/include/cutlass/gemm/gemm.h", "#pragma once\n")
    t = resolve_cutlass(str(whl))
    assert t.include_root.as_posix().endswith("pkg/include")
    assert (t.version, t.version_from) == ("unknown", "none")
