"""Git URLs as sources (``git+URL@REF``): repositories made in the test, read over ``file://``.

Every expected version below is the one the test writes into the repository's
``cutlass/version.h``; every commit is the one git reports for the test's own commits.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cutlass_layout import BadInput, resolve_cutlass
from cutlass_layout.cli import main
from cutlass_layout.core.progress import is_progress_line
from cutlass_layout.sources import gitsource
from cutlass_layout.sources.flashinfer import resolve_flashinfer
from cutlass_layout.sources.library import is_kernel_library, resolve_kernel_library

from test_sources import make_tree

MINI_LIBRARY = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_cutlass_library"


@pytest.fixture(autouse=True)
def git_env(tmp_path, monkeypatch):
    """A private cache; git with a fixed identity, no user or system config, and file://
    allowed for submodules (git refuses it by default since 2.38.1: the test's repositories
    are its own)."""
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(tmp_path / "cache"))
    for k, v in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "protocol.file.allow",
        "GIT_CONFIG_VALUE_0": "always",
        "GIT_CONFIG_KEY_1": "init.defaultBranch",
        "GIT_CONFIG_VALUE_1": "main",
    }.items():
        monkeypatch.setenv(k, v)
    gitsource.forget_checkouts()
    yield
    gitsource.forget_checkouts()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def cutlass_repo(tmp_path) -> tuple[Path, str, str]:
    """A CUTLASS-shaped repository: 4.7.0 at the annotated tag v4.7.0, 4.8.0 on main after it.
    ``(repo, the tag's commit, main's commit)``."""
    repo = tmp_path / "cutlass"
    make_tree(repo / "include", (4, 7, 0))
    git(repo, "init", "-q")
    tagged = commit_all(repo, "4.7.0")
    git(repo, "tag", "-a", "v4.7.0", "-m", "v4.7.0")
    (repo / "include" / "cutlass" / "version.h").write_text(
        "#define CUTLASS_MAJOR 4\n#define CUTLASS_MINOR 8\n#define CUTLASS_PATCH 0\n"
    )
    head = commit_all(repo, "4.8.0")
    return repo, tagged, head


def test_a_tag_a_branch_and_a_commit(cutlass_repo, tmp_path):
    repo, tagged, head = cutlass_repo
    url = f"file://{repo}"
    t = resolve_cutlass(f"git+{url}@v4.7.0")
    assert t.version == "4.7.0"
    assert t.origin == f"git {url}@v4.7.0, commit {tagged} (cloned into the cache)"
    assert t.include_root == (tmp_path / "cache" / "git" / tagged / "include").resolve()
    assert str(tmp_path / "cache") not in t.origin  # the provenance names the URL, not the clone
    assert resolve_cutlass(f"git+{url}").version == "4.8.0"  # the default branch
    assert resolve_cutlass(f"git+{url}@main").include_root == (tmp_path / "cache/git" / head / "include").resolve()
    # a commit by all 40 digits: the tag's clone, not cloned again
    gitsource.forget_checkouts()
    t2 = resolve_cutlass(f"git+{url}@{tagged}")
    assert t2.include_root == t.include_root and t2.origin.endswith(f"commit {tagged} (cached)")
    # nothing was written into the repository
    assert git(repo, "status", "--porcelain") == ""


def test_an_old_commit_by_its_hash_is_fetched(cutlass_repo, tmp_path):
    """A commit that no ref points at the tip of (the tag's, by hash, before the tag is used)."""
    repo, tagged, _ = cutlass_repo
    t = resolve_cutlass(f"git+file://{repo}@{tagged}")
    assert t.version == "4.7.0" and t.origin.endswith(f"commit {tagged} (cloned into the cache)")


def test_a_second_use_clones_nothing(cutlass_repo, monkeypatch):
    repo, tagged, _ = cutlass_repo
    src = f"git+file://{repo}@v4.7.0"
    first = resolve_cutlass(src)
    gitsource.forget_checkouts()  # a new process

    def no_clone(*args):
        raise AssertionError("cloned again")

    monkeypatch.setattr(gitsource, "clone_into", no_clone)
    again = resolve_cutlass(src)
    assert again.include_root == first.include_root and again.tree_hash == first.tree_hash
    assert again.origin == f"git file://{repo}@v4.7.0, commit {tagged} (cached)"


def test_bad_refs_and_urls_are_one_error_line(cutlass_repo, tmp_path, capsys):
    repo, _, _ = cutlass_repo
    cases = {
        f"git+file://{repo}@v9.9.9": f"error: file://{repo} has no tag or branch 'v9.9.9' (a commit is named by all 40 hex digits)",
        f"git+file://{tmp_path}/nothere@v1": f"error: cannot read file://{tmp_path}/nothere: fatal: '{tmp_path}/nothere' "
        "does not appear to be a git repository",
        "git+github.com/NVIDIA/cutlass": "error: git+github.com/NVIDIA/cutlass: a git URL source is git+SCHEME://HOST/PATH[@REF] "
        "(git+https://github.com/NVIDIA/cutlass@v4.7.0, git+file:///path/to/repo@TAG)",
        f"git+file://{repo}@": f"error: git+file://{repo}@: empty ref after '@' (a tag, a branch or a 40-digit commit)",
    }
    for src, want in cases.items():
        assert main(["source", "--cutlass", src]) == 2
        assert capsys.readouterr().err.splitlines() == [want]
    # a commit the remote does not have: git's own message
    assert main(["source", "--cutlass", f"git+file://{repo}@{'0' * 40}"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if not is_progress_line(ln)]
    assert len(err) == 1 and err[0].startswith(f"error: cloning file://{repo} at {'0' * 40} (000000000000): ")
    assert not list((tmp_path / "cache" / "git").iterdir())  # no clone left behind


def test_no_git_on_path(cutlass_repo, monkeypatch):
    repo, _, _ = cutlass_repo
    monkeypatch.setattr(gitsource.shutil, "which", lambda name: None)
    with pytest.raises(BadInput, match="^git is not on PATH: a git[+]URL source is cloned with git"):
        resolve_cutlass(f"git+file://{repo}@v4.7.0")


def test_the_source_command_names_the_url_and_commit(cutlass_repo, capsys):
    repo, tagged, _ = cutlass_repo
    assert main(["source", "--cutlass", f"git+file://{repo}@v4.7.0"]) == 0
    out = capsys.readouterr().out
    assert "version.h:    4.7.0\n" in out
    assert f"origin:       git file://{repo}@v4.7.0, commit {tagged} (cloned into the cache)\n" in out


def test_a_flashinfer_repository_with_its_cutlass_submodule(tmp_path):
    """A flashinfer-shaped repository whose 3rdparty/cutlass is a submodule (at 4.5.0)."""
    sub = tmp_path / "cutlass-sub"
    make_tree(sub / "include", (4, 5, 0))
    git(sub, "init", "-q")
    commit_all(sub, "cutlass")
    fi = tmp_path / "flashinfer"
    for d in ("flashinfer/jit", "csrc", "include"):
        (fi / d).mkdir(parents=True)
        (fi / d / "keep.txt").write_text("")
    (fi / "version.txt").write_text("0.6.18\n")
    git(fi, "init", "-q")
    git(fi, "submodule", "add", "-q", f"file://{sub}", "3rdparty/cutlass")
    head = commit_all(fi, "flashinfer")
    git(fi, "tag", "v0.6.18")
    src = f"git+file://{fi}@v0.6.18"
    install = resolve_flashinfer(src)
    assert install.version == "0.6.18" and install.tree.version == "4.5.0"
    assert install.origin == f"git file://{fi}@v0.6.18, commit {head} (cloned into the cache)"
    assert install.tree.include_root == (tmp_path / "cache/git" / head / "3rdparty/cutlass/include").resolve()
    gitsource.forget_checkouts()
    assert resolve_cutlass(src).include_root == install.tree.include_root  # the same clone, cached
    # a flashinfer URL is not CUTLASS's kernel library
    assert not is_kernel_library(src)


def test_a_cutlass_repository_as_the_kernel_library(tmp_path):
    """A CUTLASS-shaped repository with python/cutlass_library (the miniature library's modules)."""
    repo = tmp_path / "cutlass"
    make_tree(repo / "include", (4, 7, 0))
    (repo / "python").mkdir()
    pkg = MINI_LIBRARY / "cutlass_library"
    dest = repo / "python" / "cutlass_library"
    dest.mkdir()
    for f in pkg.glob("*.py"):
        (dest / f.name).write_text(f.read_text())
    git(repo, "init", "-q")
    head = commit_all(repo, "library")
    src = f"git+file://{repo}"
    assert is_kernel_library(src)
    lib = resolve_kernel_library(src)
    assert lib.version == "4.7.0" and lib.root == (tmp_path / "cache/git" / head / "python").resolve()
    assert lib.origin == f"git file://{repo} (default branch), commit {head} (cloned into the cache)"
