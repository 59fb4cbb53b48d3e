"""flashinfer installs (what ``audit`` reads): an installed ``flashinfer`` package, the parts of
a flashinfer wheel unpacked into the cache (:data:`INSTALL_DIRS`), or a flashinfer-ai/flashinfer
git checkout linked into an install's layout (:data:`CHECKOUT_DIRS`, as flashinfer's
``build_backend.py`` lays it out); each with the CUTLASS tree it ships
(``flashinfer/data/cutlass/include``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata as md
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInput
from ..core.cache import KINDS, cache_dir, lock
from ..core.files import file_kind, read_text
from .digests import INSTALL_MARKER, stat_fingerprint, tree_files
from .gitsource import checkout as git_checkout, is_git_source
from .trees import DIST_ALIASES, CutlassTree, cutlass_tree, from_wheel, is_tree
from .tvm_ffi import TVM_FFI_DIST, installed_requirement, read_requirement, wheel_requirement, write_requirement
from .wheels import complete, manifest, open_wheel, sha256_file, unpack, wheel_members, wheel_origin


#: Parts of a flashinfer wheel that ``audit`` unpacks (paths under ``flashinfer/``): the JIT's
#: Python (module builders, the TensorRT-LLM kernel generator, templates' renderers), the
#: top-level modules it reads constants from, the headers its builds include, and the
#: sources and jinja templates directly under ``data/csrc`` (not its many kernel folders), and
#: what ``audit --blocklist`` reads of the tactics blocklist's loader (the autotuner package, the
#: CUTLASS MoE runner in ``fused_moe/core.py``, the dense GEMM runners in ``gemm/gemm_base.py``).
INSTALL_DIRS = (
    "jit/",
    "data/include/",
    "data/spdlog/",
    "data/cccl/",
    "data/csrc/nv_internal/",
    "data/cutlass/tools/",
    "autotuner/",
    "fused_moe/core.py",
    "gemm/gemm_base.py",
)
_FLASHINFER_DISTS = ("flashinfer-python", "flashinfer")


@dataclass(frozen=True)
class FlashinferInstall:
    """An installed (or unpacked) flashinfer package.

    Attributes:
        root: the ``flashinfer`` package directory (holds ``jit/`` and ``data/``).
        version: flashinfer's version (``_build_meta.py`` or ``version.py``, else the
            dist-info), or ``unknown``.
        origin: what the user named and how it was found.
        tree: the CUTLASS tree it ships (``data/cutlass/include``).
        fingerprint: identifies the install's content: ``wheel:`` and the first 16 hex digits
            of the wheel's SHA-256 for a wheel, else a hash of every file's path, size and mtime
            under ``root`` (a changed header changes it; for a checkout, under each of its
            folders that :data:`CHECKOUT_DIRS` names).
        tvm_ffi_requirement: what the install's metadata requires of ``apache-tvm-ffi``
            (``apache-tvm-ffi<0.2,>=0.1.11``), the distribution whose headers
            (``tvm/ffi/...``, ``dlpack/``) its TVM FFI bindings include; None when the
            metadata is not there or names none (see :func:`tvm_ffi_headers`).
        checkout: for a flashinfer-ai/flashinfer git checkout, its root (``root`` is then a
            folder of the cache that links the checkout's parts into an install's layout); else None.
    """

    root: Path
    version: str
    origin: str
    tree: CutlassTree
    fingerprint: str
    tvm_ffi_requirement: str | None = None
    checkout: Path | None = None


def _wanted_install_member(name: str) -> bool:
    if not name.startswith("flashinfer/") or name.endswith("/"):
        return False
    rel = name[len("flashinfer/") :]
    if "/" not in rel:
        return rel.endswith(".py")
    if rel.startswith("data/csrc/") and "/" not in rel[len("data/csrc/") :]:
        return True
    return rel.startswith(INSTALL_DIRS)


def _flashinfer_version(root: Path) -> str:
    for name in ("_build_meta.py", "version.py"):
        try:
            m = re.search(
                r"__version__\s*(?::\s*str\s*)?=\s*[\"']([^\"']+)[\"']", read_text(root / name, errors="replace")
            )
        except BadInput:
            continue
        if m:
            return m.group(1)
    for info in sorted(root.parent.glob("flashinfer*.dist-info")):
        try:
            m = re.search(r"^Version:\s*(\S+)", read_text(info / "METADATA", errors="replace"), re.M)
        except BadInput:
            continue
        if m:
            return m.group(1)
    return "unknown"


#: Where the parts of an installed ``flashinfer`` package (paths below it) sit in a
#: flashinfer-ai/flashinfer git checkout (paths below its root): ``build_backend.py``'s
#: ``_create_data_dir`` links (editable) or copies (wheel) ``3rdparty/cutlass``,
#: ``3rdparty/spdlog``, ``3rdparty/cccl``, ``csrc`` and ``include`` to ``flashinfer/data/``;
#: everything else below the package is ``flashinfer/`` itself.
CHECKOUT_DIRS = {
    "data/cutlass": "3rdparty/cutlass",
    "data/spdlog": "3rdparty/spdlog",
    "data/cccl": "3rdparty/cccl",
    "data/csrc": "csrc",
    "data/include": "include",
}


def checkout_path(rel: str) -> str:
    """The path in a flashinfer git checkout (relative to its root) of ``rel``, a path relative
    to an installed ``flashinfer`` package (``data/csrc/nv_internal/x.inl`` ->
    ``csrc/nv_internal/x.inl``, ``jit/core.py`` -> ``flashinfer/jit/core.py``), by
    :data:`CHECKOUT_DIRS`. A wheel and the checkout it was built from name the same file so."""
    rel = Path(rel).as_posix()
    for part, there in CHECKOUT_DIRS.items():
        if rel == part or rel.startswith(part + "/"):
            return there + rel[len(part) :]
    return f"flashinfer/{rel}"


def _checkout_root(path: Path) -> Path | None:
    """``path`` (or the checkout above it, when ``path`` is its ``flashinfer`` package) when
    it is a flashinfer-ai/flashinfer git checkout as cloned: ``flashinfer/jit/``, ``csrc/``
    and ``include/`` at its root and no ``flashinfer/data`` (an editable install's links,
    read as an install). Else None."""
    for cand in (path, path.parent) if path.name == "flashinfer" else (path,):
        if (
            (cand / "flashinfer" / "jit").is_dir()
            and (cand / "csrc").is_dir()
            and (cand / "include").is_dir()
            and not (cand / "flashinfer" / "data").exists()
        ):
            return cand
    return None


#: The marker of a checkout's install-shaped folder of links in the cache (holds the checkout's path).
_CHECKOUT_MARKER = ".checkout"


def _checkout_links(checkout: Path) -> dict[str, str]:
    """What the install-shaped folder of a checkout holds: ``{path below flashinfer/: the
    checkout's file or folder it links to}``, every entry of the checkout's ``flashinfer/``
    package and the ``data/`` parts of :data:`CHECKOUT_DIRS` the checkout has."""
    links = {p.name: str(p) for p in sorted((checkout / "flashinfer").iterdir()) if p.name != "__pycache__"}
    links.update({part: str(checkout / there) for part, there in CHECKOUT_DIRS.items() if (checkout / there).exists()})
    return links


def _links_of(root: Path) -> dict[str, str] | None:
    """The links an install-shaped folder holds (as :func:`_checkout_links` gives them), or
    None when it is missing or holds something else."""
    try:
        out = {}
        for p in sorted(root.iterdir()):
            if p.name == "data":
                out.update({f"data/{q.name}": os.readlink(q) for q in sorted(p.iterdir())})
            else:
                out[p.name] = os.readlink(p)
        return out
    except OSError:
        return None


def _checkout_install(checkout: Path, origin: str) -> FlashinferInstall:
    """A flashinfer git checkout as an install: its parts linked into an install's layout
    (``flashinfer/`` with ``data/cutlass`` -> ``3rdparty/cutlass`` and so on,
    :data:`CHECKOUT_DIRS`) in a folder of the cache kept per checkout path and remade when the
    checkout's entries change; nothing is written into the checkout. The version is
    ``flashinfer/_build_meta.py``'s when a build wrote one, else ``version.txt``'s (what
    ``build_backend.py`` would write), else ``unknown``.

    Raises:
        BadInput: the CUTLASS submodule is not checked out (``3rdparty/cutlass/include``), or
            a FIFO, socket or device in the checkout's parts.
    """
    checkout = checkout.resolve()
    inc = checkout / "3rdparty" / "cutlass" / "include"
    if not is_tree(inc):
        raise BadInput(
            f"the flashinfer checkout at {checkout} has no CUTLASS tree (3rdparty/cutlass/include): "
            "its submodules are not checked out (git submodule update --init --recursive)"
        )
    fingerprint = hashlib.sha256(
        "\n".join(
            f"{there}:{stat_fingerprint(checkout / there)}"
            for there in ("flashinfer", *CHECKOUT_DIRS.values())
            if (checkout / there).is_dir()
        ).encode()
    ).hexdigest()[:16]
    base = cache_dir("checkouts", hashlib.sha256(str(checkout).encode()).hexdigest()[:16])
    root = base / "flashinfer"
    links = _checkout_links(checkout)
    if _links_of(root) != links:
        with lock(f"checkout-{base.name}"):
            if _links_of(root) != links:
                tmp = Path(tempfile.mkdtemp(dir=base, prefix=".links-"))
                (tmp / "data").mkdir()
                for name, target in links.items():
                    os.symlink(target, tmp / name)
                old = base / f".old-{tmp.name}"
                if root.exists():
                    os.replace(root, old)
                os.replace(tmp, root)
                shutil.rmtree(old, ignore_errors=True)
                (base / _CHECKOUT_MARKER).write_text(f"{checkout}\n")
    version = "unknown"
    if (checkout / "flashinfer" / "_build_meta.py").is_file():
        version = _flashinfer_version(root)
    elif (checkout / "version.txt").is_file():
        version = read_text(checkout / "version.txt", errors="replace").strip() or "unknown"
    requirement = None
    with contextlib.suppress(BadInput):  # what build_backend.py's dependencies read
        line = re.search(
            r"^[ \t]*apache[-_.]tvm[-_.]ffi[ \t]*([^#;\n]*)",
            read_text(checkout / "requirements.txt", errors="replace"),
            re.M | re.I,
        )
        requirement = TVM_FFI_DIST + re.sub(r"\s+", "", line.group(1)) if line else None
    return FlashinferInstall(
        root=root,
        version=version,
        origin=origin,
        tree=cutlass_tree(inc, origin),
        fingerprint=f"checkout:{fingerprint}",
        checkout=checkout,
        tvm_ffi_requirement=requirement,
    )


def _flashinfer_root(path: Path) -> Path | None:
    for cand in (path, path / "flashinfer"):
        if (cand / "jit").is_dir() and (cand / "data").is_dir():
            return cand
    return None


def _install(
    root: Path, origin: str, fingerprint: str | None = None, requirement: str | None = None
) -> FlashinferInstall:
    inc = root / "data" / "cutlass" / "include"
    if not is_tree(inc):
        raise BadInput(f"the flashinfer package at {root} has no CUTLASS tree (data/cutlass/include)")
    if requirement is None:
        requirement = installed_requirement(root)
    return FlashinferInstall(
        root=root.resolve(),
        version=_flashinfer_version(root),
        origin=origin,
        tree=cutlass_tree(inc, origin),
        fingerprint=fingerprint or stat_fingerprint(root),
        tvm_ffi_requirement=requirement,
    )


def _wheel_install_facts(path: Path, digest: str) -> dict:
    """What :func:`_install_from_wheel` reads of the wheel's directory, remembered per wheel
    digest and the code of this module, which says what is wanted (a flashinfer wheel's
    directory of some 15,000 members is not read again on every run: docs/performance.md):
    ``jit`` (it holds ``flashinfer/jit/``), ``requirement`` (its METADATA's TVM FFI
    requirement) and ``wanted`` (a digest of the members an audit unpacks)."""

    def load(d):
        if not (
            isinstance(d, dict)
            and isinstance(d["jit"], bool)
            and isinstance(d["wanted"], str)
            and isinstance(d["requirement"], (str, type(None)))
        ):
            raise TypeError(d)
        return d

    def compute():
        with open_wheel(path) as zf:  # opened once: its names and its METADATA's requirement
            names = zf.namelist()
            requirement = wheel_requirement(path, zf, names)
        return {
            "jit": any(n.startswith("flashinfer/jit/") for n in names),
            "requirement": requirement,
            "wanted": _wanted_digest(names),
        }

    kind = KINDS["wheel-installs"]
    return kind.memo(kind.key(subject=[digest], target=[]), compute, load=load)


def _wanted_digest(names: list[str]) -> str:
    """A digest of the wheel members (of ``names``) an audit unpacks (:func:`_wanted_install_member`)."""
    return hashlib.sha256("\n".join(sorted(n for n in names if _wanted_install_member(n))).encode()).hexdigest()[:16]


def _install_from_wheel(path: Path, origin: str) -> FlashinferInstall:
    full = sha256_file(path)
    digest = full[:16]
    facts = _wheel_install_facts(path, full)
    if not facts["jit"]:
        raise BadInput(f"{path} holds no flashinfer package (flashinfer/jit/)")
    requirement = facts["requirement"]
    base = cache_dir("trees", digest)

    def whole() -> bool:
        # the marker's manifest is the tree's, and it was written for the members unpacked
        # now (an install unpacked before INSTALL_DIRS grew may lack some)
        if not complete(base, INSTALL_MARKER, _INCLUDE_SUBTREE):
            return False
        try:
            return (base / INSTALL_MARKER).read_text().split("\n")[2] == facts["wanted"]
        except (OSError, UnicodeDecodeError, IndexError):
            return False

    if not whole():
        with lock(f"install-{digest}"):
            if not whole():
                _unpack_install(path, base)
    # the CUTLASS include tree is unpacked (and marked complete) as for `--cutlass WHEEL`
    from_wheel(path, "flashinfer/data/cutlass/include", origin)
    write_requirement(base, requirement)
    return _install(base / "flashinfer", origin, fingerprint=f"wheel:{digest}", requirement=requirement)


#: Where a flashinfer wheel's CUTLASS tree sits below its unpacked install (unpacked apart).
_INCLUDE_SUBTREE = "flashinfer/data/cutlass/include/"


def _unpack_install(path: Path, base: Path) -> None:
    """Unpack the parts of a flashinfer wheel that ``audit`` reads below ``base`` (under the
    caller's lock): into a temporary folder, then file by file into place (the CUTLASS tree
    below it is unpacked apart), and the marker last."""
    tmp = Path(tempfile.mkdtemp(dir=cache_dir("trees"), prefix=".unpack-"))
    try:
        with open_wheel(path) as zf:
            unpack(
                path,
                zf,
                wheel_members(zf, "", _wanted_install_member),
                tmp,
                "the parts audit reads (the JIT's code, the headers)",
            )
            wanted = _wanted_digest(zf.namelist())
        (base / INSTALL_MARKER).unlink(missing_ok=True)
        for rel in tree_files(tmp):
            dest = base / rel
            if dest.is_dir():
                shutil.rmtree(dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / rel, dest)
        (base / INSTALL_MARKER).write_text(f"{path.name}\n{manifest(base, _INCLUDE_SUBTREE)}\n{wanted}\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def resolve_flashinfer(src: str | os.PathLike | None = None) -> FlashinferInstall:
    """Resolve what the user named to a :class:`FlashinferInstall`.

    ``src`` may be ``None`` (the flashinfer installed in this environment), a ``flashinfer``
    package directory or a directory holding one (site-packages, a venv's site-packages), a
    flashinfer-ai/flashinfer git checkout's root with its submodules (its parts linked into an
    install's layout in the cache, :func:`_checkout_install`), a ``.whl`` file (the parts
    ``audit`` reads, :data:`INSTALL_DIRS`, are unpacked into the user cache, keyed by the
    wheel's SHA-256), ``flashinfer-python==VERSION`` (that wheel, fetched into the cache),
    ``git+URL[@REF]`` (that repository's commit with its submodules, cloned into the cache once:
    :mod:`.gitsource`), or an installed distribution name (``flashinfer``, ``flashinfer-python``).

    Raises:
        BadInput: no flashinfer there, no CUTLASS tree in it (a checkout without its
            submodules), a damaged wheel, no such wheel.
    """
    if src is None:
        for name in _FLASHINFER_DISTS:
            try:
                dist = md.distribution(name)
            except md.PackageNotFoundError:
                continue
            root = _flashinfer_root(Path(str(dist.locate_file(""))))
            if root is not None:
                return _install(root, f"installed {name} {dist.version}")
        raise BadInput(
            "no flashinfer is installed in this environment: name one "
            "(a site-packages dir, a .whl, or flashinfer-python==VERSION)"
        )
    text = os.fspath(src)
    if is_git_source(text):
        clone, origin, _ = git_checkout(text)
        found = _checkout_root(clone)
        if found is None:
            raise BadInput(f"{text} is not a flashinfer git repository (flashinfer/jit, csrc and include)")
        return _checkout_install(found, origin)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_file():
            if path.suffix != ".whl":
                raise BadInput(f"{path} is a file, not a directory or a .whl wheel")
            return _install_from_wheel(path, f"wheel {path}")
        if not path.is_dir():
            raise BadInput(f"{path} is {file_kind(path)}, not a directory or a .whl wheel")
        root = _flashinfer_root(path)
        if root is None:
            checkout = _checkout_root(path)
            if checkout is not None:
                return _checkout_install(checkout, f"checkout {path}")
            raise BadInput(
                f"no flashinfer package (flashinfer/jit and flashinfer/data) in {path}, "
                "nor a flashinfer git checkout (flashinfer/jit, csrc and include)"
            )
        return _install(root, f"directory {path}")
    if "==" in text:
        return _install_from_wheel(*wheel_origin(text))
    if os.sep in text or text.endswith(".whl") or text.startswith("."):
        raise BadInput(f"path does not exist: {text}")
    name = DIST_ALIASES.get(text.lower(), text)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        raise BadInput(f"{text!r} is neither an existing path nor an installed distribution") from None
    root = _flashinfer_root(Path(str(dist.locate_file(""))))
    if root is None:
        raise BadInput(f"distribution {name} {dist.version} holds no flashinfer package")
    return _install(root, f"installed {name} {dist.version}")


def flashinfer_of(tree: CutlassTree) -> FlashinferInstall | None:
    """The flashinfer install whose CUTLASS tree ``tree`` is (its ``data/cutlass/include``),
    as :func:`resolve_flashinfer` would resolve it, without fetching or unpacking anything:
    None when the tree is not a flashinfer's, or is a wheel's whose other parts (what
    ``audit`` reads) have not been unpacked into the cache.

    Raises:
        BadInput: as :func:`resolve_flashinfer` for an install directory (a FIFO in it).
    """
    inc = Path(tree.include_root)
    if inc.parts[-3:] != ("data", "cutlass", "include"):
        return None
    root = inc.parent.parent.parent
    if _flashinfer_root(root) != root:
        return None
    base = root.parent
    if (base / INSTALL_MARKER).exists():
        # a wheel unpacked into the cache: trees/<the wheel's SHA-256, 16>/flashinfer
        if not complete(base, INSTALL_MARKER, _INCLUDE_SUBTREE):
            return None
        return _install(root, tree.origin, fingerprint=f"wheel:{base.name}", requirement=read_requirement(base))
    if Path(cache_dir("trees")).resolve() in root.resolve().parents:
        return None  # the CUTLASS tree of a wheel, and only that, is unpacked
    return _install(root, tree.origin)
