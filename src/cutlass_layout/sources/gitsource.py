"""Git URLs as sources: ``git+URL[@REF][#SUBPATH]``, cloned shallowly into the cache once per commit.

``REF`` is a tag, a branch or a whole commit (40 hex digits); none is the remote's default
branch (its ``HEAD``). The commit is resolved first (``git ls-remote URL REF REF^{}``: an
annotated tag's peeled commit before the tag object, then a tag, then a branch; a commit is
itself), and the clone is kept in ``<cache>/git/<commit>``: a second use of that commit, by
any URL or ref naming it, clones nothing. Cloning runs under the cache's file lock for that
commit, into a temporary folder renamed into place once whole (``git clone --depth 1
--branch REF --recurse-submodules --shallow-submodules``; a commit: ``git fetch --depth 1
origin COMMIT`` then ``git submodule update --init --recursive --depth 1``), so concurrent runs
clone it once and a clone cut short is never used. The clone is then a checkout like any other
(a CUTLASS checkout, a flashinfer checkout with its ``3rdparty/cutlass``): nothing is written
outside the cache. git's own security defaults are kept (``protocol.file.allow`` and so on).

The source's origin names the URL, the ref and the commit, never the cache path.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..errors import BadInput
from ..core.cache import cache_dir, lock
from ..core.progress import step

#: What starts a git URL source (as pip's VCS URLs: ``git+https://...``, ``git+file:///...``).
PREFIX = "git+"
#: The file written into a clone once it is whole (its URL and commit).
CLONE_MARKER = ".cutlass-layout-clone"
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class GitSource:
    """A parsed ``git+URL[@REF][#SUBPATH]``: ``url`` without ``git+`` and ``@REF``, ``ref``
    (None: the default branch), ``sub`` (the part after ``#``, None where there is none)."""

    url: str
    ref: str | None
    sub: str | None


def is_git_source(src) -> bool:
    """Whether ``src`` is a git URL source (text starting ``git+``). Reads and runs nothing."""
    return isinstance(src, (str, os.PathLike)) and os.fspath(src).strip().startswith(PREFIX)


def parse(text: str) -> GitSource:
    """Split ``git+URL[@REF][#SUBPATH]`` as pip does: ``@REF`` is the last ``@`` of the URL's
    path (``git+ssh://git@host/repo@v1``: user ``git``, ref ``v1``).

    Raises:
        BadInput: no scheme (``git+github.com/...``), no path, an empty ref.
    """
    body = text.strip()[len(PREFIX) :]
    sub = None
    if "#" in body:
        body, sub = body.split("#", 1)
        sub = sub or None
    parts = urlsplit(body)
    if not parts.scheme or not (parts.netloc or parts.path):
        raise BadInput(
            f"{text}: a git URL source is git+SCHEME://HOST/PATH[@REF] "
            "(git+https://github.com/NVIDIA/cutlass@v4.7.0, git+file:///path/to/repo@TAG)"
        )
    path, ref = parts.path, None
    if "@" in path:
        path, ref = path.rsplit("@", 1)
        if not ref:
            raise BadInput(f"{text}: empty ref after '@' (a tag, a branch or a 40-digit commit)")
    if not path.strip("/") and not parts.netloc:
        raise BadInput(f"{text}: no repository path in the URL")
    return GitSource(url=urlunsplit((parts.scheme, parts.netloc, path, parts.query, "")), ref=ref, sub=sub)


def _git() -> str:
    git = shutil.which("git")
    if git is None:
        raise BadInput(
            "git is not on PATH: a git+URL source is cloned with git (install git, or give a checkout's path)"
        )
    return git


def _env() -> dict[str, str]:
    """git's environment: never prompt (a private repository fails at once), no LFS downloads."""
    return {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1", "GIT_ASKPASS": "echo"}


def _run(args: list[str], what: str, cwd: Path | None = None) -> str:
    """Run git; its stdout. Fails as one line: ``WHAT: git's first fatal/error line``."""
    try:
        proc = subprocess.run(
            [_git(), *args], cwd=cwd, env=_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
    except OSError as exc:
        raise BadInput(f"{what}: cannot run git ({exc.strerror or exc})") from None
    if proc.returncode != 0:
        raise BadInput(f"{what}: {_git_message(proc.stderr)}")
    return proc.stdout


def _git_message(stderr: str) -> str:
    """git's reason on one line: its first ``fatal:``/``error:`` line, else its last line."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    first = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), lines[-1] if lines else "")
    return first or "git failed"


def resolve_commit(src: GitSource) -> str:
    """The commit ``src`` names: a 40-digit ref itself; else by ``git ls-remote``, an annotated
    tag's peeled commit, a tag's, a branch's, a full ref's; no ref: the remote ``HEAD``.

    Raises:
        BadInput: the remote cannot be read (git's message); no such ref.
    """
    if src.ref is not None and _COMMIT.fullmatch(src.ref.lower()):
        return src.ref.lower()
    ref = src.ref or "HEAD"
    out = _run(["ls-remote", "--", src.url, ref, f"{ref}^{{}}"], f"cannot read {src.url}")
    refs: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, name = line.partition("\t")
        refs.setdefault(name.strip(), sha.strip())
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", f"{ref}^{{}}", ref):
        if name in refs:
            return refs[name]
    raise BadInput(f"{src.url} has no tag or branch {ref!r} (a commit is named by all 40 hex digits)")


def clone_into(src: GitSource, commit: str, tmp: Path) -> None:
    """Clone ``src`` at ``commit`` into the empty folder ``tmp``, shallow, with its submodules."""
    what = f"cloning {src.url} at {src.ref or 'its default branch'} ({commit[:12]})"
    shallow = ["-c", "advice.detachedHead=false"]
    if src.ref is not None and not _COMMIT.fullmatch(src.ref.lower()):
        _run(
            [
                *shallow,
                "clone",
                "--quiet",
                "--depth",
                "1",
                "--branch",
                src.ref,
                "--recurse-submodules",
                "--shallow-submodules",
                "--",
                src.url,
                str(tmp),
            ],
            what,
        )
    elif src.ref is None:
        _run(
            [
                *shallow,
                "clone",
                "--quiet",
                "--depth",
                "1",
                "--recurse-submodules",
                "--shallow-submodules",
                "--",
                src.url,
                str(tmp),
            ],
            what,
        )
    else:
        _run(["init", "--quiet", str(tmp)], what)
        _run(["remote", "add", "origin", src.url], what, cwd=tmp)
        _run(["fetch", "--quiet", "--depth", "1", "origin", commit], what, cwd=tmp)
        _run([*shallow, "checkout", "--quiet", "FETCH_HEAD"], what, cwd=tmp)
        _run(["submodule", "update", "--quiet", "--init", "--recursive", "--depth", "1"], what, cwd=tmp)
    head = _run(["rev-parse", "HEAD"], what, cwd=tmp).strip()
    if head != commit:  # the branch moved between ls-remote and the clone
        raise BadInput(f"{what}: got commit {head[:12]}, the ref moved meanwhile; run again")


def _whole(dest: Path, commit: str) -> bool:
    try:
        return (dest / CLONE_MARKER).read_text().split("\n")[1] == commit
    except (OSError, IndexError, UnicodeDecodeError):
        return False


@functools.lru_cache(maxsize=64)
def _checkout(text: str) -> tuple[Path, str, str | None]:
    src = parse(text)
    _git()
    commit = resolve_commit(src)
    dest = cache_dir("git") / commit
    fresh = False
    if not _whole(dest, commit):
        with lock(f"git-{commit}"):
            if not _whole(dest, commit):  # another process may have cloned it meanwhile
                tmp = Path(tempfile.mkdtemp(dir=cache_dir("git"), prefix=".clone-"))
                try:
                    with step(f"cloning {src.url} at {src.ref or 'its default branch'} into the cache"):
                        clone_into(src, commit, tmp / "repo")
                    (tmp / "repo" / CLONE_MARKER).write_text(f"{src.url}\n{commit}\n")
                    if dest.exists():  # a clone cut short: move it aside first
                        shutil.rmtree(dest, ignore_errors=True)
                    os.replace(tmp / "repo", dest)
                    fresh = True
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
    at = f"@{src.ref}" if src.ref else " (default branch)"
    origin = f"git {src.url}{at}, commit {commit} ({'cloned into the cache' if fresh else 'cached'})"
    return dest, origin, src.sub


def checkout(text: str) -> tuple[Path, str, str | None]:
    """``(the clone's folder in the cache, its origin, SUBPATH or None)`` for a git URL source
    (module docstring), cloning it once per commit; remembered per process (one ``ls-remote``).

    Raises:
        BadInput: a malformed URL, no git on PATH, a remote git cannot read, an unknown ref,
            a failed clone (git's message, one line).
    """
    return _checkout(os.fspath(text).strip())


def forget_checkouts() -> None:
    """Forget the commits :func:`checkout` resolved in this process (as a new process would:
    the next call runs ``git ls-remote`` again; the clones in the cache stay)."""
    _checkout.cache_clear()
