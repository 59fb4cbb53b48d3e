"""Hostile and broken input, every command: each case with its exit code and its message.

The rule (README "Exit codes", issue 13): every input gives exit 0 with a right answer, or exit 2
with one ``error:`` line that names the path and what to do; none exits 5 (an internal error),
hangs, or prints a number from a corrupt cache entry. Cases that already passed before issue 13
(a wheel's ``..`` and symlink members, Ctrl-C) are kept here too.

Offline cases use a wheel built here from ``fixtures/installs/mini_flashinfer`` (a miniature
flashinfer with a tiny CUTLASS tree: version 9.8.7, ``sm120_smem_capacity_bytes = 101376`` in
``cutlass/arch/arch.h``); ``network`` cases copy nvidia-cutlass 4.2.0.0's cached wheel.
Permission cases run the command as another user (``nobody``, through ``setpriv``) when the
tests run as root, who reads every file whatever its mode.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from handed import SECTION_A  # shared known-good values (tests/handed.py)
from test_audit import MINI, mini_sizes

from cutlass_layout.cli import main
from cutlass_layout.core.progress import is_progress_line

PY = [sys.executable, "-m", "cutlass_layout.cli"]
INCLUDE = "flashinfer/data/cutlass/include/"
CAPACITY = 101376
#: The mini install's MoE tactic sized by hand in test_audit: 128x64x32, 3 stages, finalize.
MOE_FINALIZE = "moe/CtaShape128x64x16B/nvfp4xnvfp4/f16/finalize"


# ---------------------------------------------------------------------------------------
# helpers


def run(*argv, cache, user=(), timeout=180, env=None) -> subprocess.CompletedProcess:
    """The command line in a fresh process (its own cache), as ``user`` (a command prefix)."""
    e = {**os.environ, "CUTLASS_LAYOUT_CACHE": str(cache), **(env or {})}
    return subprocess.run([*user, *PY, *map(str, argv)], capture_output=True, text=True, timeout=timeout, env=e)


def expect(proc, code: int, *words: str) -> None:
    """Exit ``code``, no traceback, each of ``words`` on stderr; exit 2 is one ``error:`` line
    (besides progress lines: a damaged wheel is found while it is unpacked)."""
    err = [ln for ln in proc.stderr.splitlines() if ln.strip() and not is_progress_line(ln)]
    assert proc.returncode == code, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    if code == 2:
        errors = [ln for ln in err if ln.startswith("error: ")]
        assert len(errors) == 1 and len(err) == 1, err
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def _children(proc: subprocess.Popen, n: int, *, within: float) -> bool:
    """Wait (at most ``within`` seconds) until ``proc`` has ``n`` child processes: ``True``;
    ``False`` if it exits first or the time is up. Each look waits on the process itself."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    for _ in range(int(within * 10)):
        try:
            if len(children.read_text().split()) >= n:
                return True
        except OSError:  # no /proc: the process is gone, or this is not Linux
            if not Path("/proc/self").is_dir():
                pytest.skip("no /proc to see the sweep's worker processes in")
        try:
            proc.wait(timeout=0.1)  # returns at once if it exited
            return False
        except subprocess.TimeoutExpired:
            pass
    return False


def cli(capsys, *argv) -> tuple[int, str, str]:
    """The command line in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def one_error(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip() and not is_progress_line(ln)]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for w in words:
        assert w in lines[0], (w, lines[0])


def make_wheel(path: Path, base: Path = MINI, *, extra=(), stored=(), skip=()) -> Path:
    """A wheel of every file below ``base`` (names relative to it), plus ``extra`` members
    ``(name, bytes)``; names in ``stored`` are not compressed, names in ``skip`` left out."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(base.rglob("*")):
            name = p.relative_to(base).as_posix()
            if p.is_file() and name not in skip:
                zf.write(p, name, compress_type=zipfile.ZIP_STORED if name in stored else None)
        for name, data in extra:
            zf.writestr(name, data)
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The mini flashinfer as a wheel (a flashinfer install and a CUTLASS source)."""
    return make_wheel(tmp_path_factory.mktemp("wheel") / "mini_flashinfer-0.0.1-py3-none-any.whl")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty private cache, for this process and the ones it starts."""
    path = tmp_path / "cache"
    monkeypatch.setenv("CUTLASS_LAYOUT_CACHE", str(path))
    return path


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of the mini CUTLASS tree."""
    dest = tmp_path / "include"
    shutil.copytree(MINI / INCLUDE, dest)
    return dest


@pytest.fixture
def shared(tmp_path_factory):
    """A temporary folder another user can reach (pytest's own sit in a private folder)."""
    path = Path(tempfile.mkdtemp(prefix="cutlass-layout-hostile-"))
    os.chmod(path, 0o755)
    yield path
    for p in [path, *path.rglob("*")]:  # what a test made unreadable, readable again
        if not p.is_symlink():
            os.chmod(p, 0o755)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def other_user():
    """A command prefix that runs a command as a user without our permissions: nothing when
    we are not root (our own permissions then apply), else ``setpriv`` to ``nobody``."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be tested")
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import cutlass_layout"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("user nobody cannot run this Python: permissions cannot be tested")
    return prefix


def unreadable(path: Path) -> None:
    os.chmod(path, 0)


def writable_by(path: Path, user) -> None:
    """Let the ``other_user`` write ``path`` (a cache folder)."""
    path.mkdir(parents=True, exist_ok=True)
    if user:
        for p in [path, *path.rglob("*")]:
            os.chown(p, 65534, 65534, follow_symlinks=False)


# ---------------------------------------------------------------------------------------
# several processes at once on an empty cache


@pytest.mark.network
def test_three_processes_lay_out_from_the_same_new_wheel(tmp_path, nc420):
    from cutlass_layout.sources.wheels import fetch_wheel

    whl = tmp_path / "nvidia_cutlass-4.2.0.0-py3-none-any.whl"
    shutil.copy(fetch_wheel("nvidia-cutlass==4.2.0.0"), whl)
    cache = tmp_path / "cache"  # empty: the wheel is unpacked, the header built, by one of them
    env = {**os.environ, "CUTLASS_LAYOUT_CACHE": str(cache)}
    procs = [
        subprocess.Popen(
            [*PY, "layout", "--cutlass", str(whl), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and "error" not in err, err
    docs = [json.loads(out) for out, _ in outs]
    assert docs[0] == docs[1] == docs[2]
    stages, mainloop, epilogue, kernel, fits = SECTION_A[((128, 128, 128), "flashinfer")]
    assert (
        docs[0]["stages"],
        docs[0]["mainloop"]["size"],
        docs[0]["epilogue"]["size"],
        docs[0]["kernel"]["size"],
        docs[0]["fits"],
    ) == (stages, mainloop, epilogue, kernel, fits)
    assert len(list((cache / "pch").glob("*.pch"))) == 1  # built once, not three times
    assert not list((cache / "trees").glob(".unpack-*"))


def test_three_processes_audit_the_same_new_wheel(tmp_path, wheel):
    cache = tmp_path / "cache"
    env = {**os.environ, "CUTLASS_LAYOUT_CACHE": str(cache)}
    procs = [
        subprocess.Popen(
            [*PY, "audit", str(wheel), "--json", "--jobs", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0 and "error" not in err, err
    tactics = [{t["id"]: (t["verdict"], t["kernel_bytes"]) for t in json.loads(out)["tactics"]} for out, _ in outs]
    assert tactics[0] == tactics[1] == tactics[2]
    assert tactics[0][MOE_FINALIZE] == ("fits", mini_sizes(128, 64, 32, 3, 4096)[2])


# ---------------------------------------------------------------------------------------
# a cache that cannot be used


def test_cache_path_that_is_a_file_falls_back_to_a_private_cache(tmp_path, wheel):
    (tmp_path / "file").write_text("not a folder")
    for cache in (tmp_path / "file", tmp_path / "file" / "below"):
        proc = run("source", "--cutlass", wheel, cache=cache)
        expect(proc, 0, f"warning: the cache folder {cache} cannot be used", "private temporary cache")
        assert len([ln for ln in proc.stderr.strip().splitlines() if not is_progress_line(ln)]) == 1
        assert "version.h:    9.8.7" in proc.stdout


def test_read_only_cache_falls_back_and_still_reads_it(shared, wheel, other_user):
    whl = shutil.copy(wheel, shared / wheel.name)
    os.chmod(whl, 0o644)
    cache = shared / "cache"
    first = run("audit", whl, "--json", "--jobs", "1", cache=cache)  # fills it (as us)
    expect(first, 0)
    for p in [cache, *cache.rglob("*")]:  # read-only, for the other user as for us
        if not p.is_symlink():
            os.chmod(p, p.stat().st_mode & ~0o222 | 0o444 | (0o111 if p.is_dir() else 0))
    for argv in (["source", "--cutlass", whl], ["scan", whl, "--grep", "sm120_smem"]):
        proc = run(*argv, cache=cache, user=other_user)
        expect(proc, 0, f"warning: the cache folder {cache}", "cannot be used", "private temporary cache")
    assert "sm120_smem_capacity_bytes = 101376" in proc.stdout


# ---------------------------------------------------------------------------------------
# files that are not regular files: never opened


def test_fifo_in_a_cutlass_tree(tree, cache):
    os.mkfifo(tree / "cutlass" / "pipe.h")
    for cmd in ("source", "layout"):
        proc = run(cmd, "--cutlass", tree, cache=cache, timeout=60)
        expect(proc, 2, f"{tree / 'cutlass' / 'pipe.h'} is a FIFO, not a regular file", "remove it")
    proc = run("scan", tree, cache=cache, timeout=60)
    expect(proc, 0)
    assert "cutlass/pipe.h:0: not read: a FIFO, not a regular file" in proc.stdout


def test_fifo_in_a_scanned_folder_and_as_a_file(tmp_path, cache):
    folder = tmp_path / "headers"
    folder.mkdir()
    (folder / "a.hpp").write_text("struct SharedStorage { int x; };\n")
    os.mkfifo(folder / "pipe.hpp")
    proc = run("scan", folder, "--json", cache=cache, timeout=60)
    expect(proc, 0)
    doc = json.loads(proc.stdout)
    assert [s["name"] for s in doc["structs"]] == ["SharedStorage"]
    assert {"file": "pipe.hpp", "line": 0, "message": "not read: a FIFO, not a regular file"} in doc["diagnostics"]
    expect(run("scan", folder / "pipe.hpp", cache=cache, timeout=60), 2, "pipe.hpp is a FIFO")


def test_fifo_or_device_named_as_an_input(tmp_path, cache, tree):
    fifo = tmp_path / "grid.toml"
    os.mkfifo(fifo)
    expect(run("sweep", "--grid", fifo, cache=cache, timeout=60), 2, f"grid file {fifo} is a FIFO")
    expect(
        run("layout", "--cutlass", tree, "--header", fifo, "--type", "T", cache=cache, timeout=60),
        2,
        f"header {fifo} is a FIFO",
    )
    if os.path.exists("/dev/zero"):
        expect(
            run("layout", "--cutlass", tree, "--header", "/dev/zero", "--type", "T", cache=cache, timeout=60),
            2,
            "header /dev/zero is a character device",
        )
    whl = tmp_path / "x.whl"
    os.mkfifo(whl)
    expect(run("layout", "--cutlass", whl, cache=cache, timeout=60), 2, f"{whl} is a FIFO")
    expect(run("audit", whl, cache=cache, timeout=60), 2, f"{whl} is a FIFO")


def test_fifo_in_a_flashinfer_install(tmp_path, cache):
    site = tmp_path / "site-packages"
    shutil.copytree(MINI, site)
    os.mkfifo(site / "flashinfer" / "jit" / "pipe.py")
    expect(run("audit", site, cache=cache, timeout=60), 2, "pipe.py is a FIFO", "remove it")


# ---------------------------------------------------------------------------------------
# files that cannot be read


def test_unreadable_header(shared, other_user, tree):
    dest = shared / "include"
    shutil.copytree(tree, dest)
    header = shared / "mine.hpp"
    header.write_text("struct T {};\n")
    unreadable(header)
    cache = shared / "cache"
    writable_by(cache, other_user)
    proc = run("layout", "--cutlass", dest, "--header", header, "--type", "T", cache=cache, user=other_user)
    expect(proc, 2, f"cannot read header {header}: Permission denied")


def test_unreadable_file_in_a_tree(shared, other_user, tree):
    dest = shared / "include"
    shutil.copytree(tree, dest)
    unreadable(dest / "cutlass" / "arch" / "arch.h")
    cache = shared / "cache"
    writable_by(cache, other_user)
    for cmd in ("source", "layout"):
        expect(
            run(cmd, "--cutlass", dest, cache=cache, user=other_user),
            2,
            f"cannot read {dest / 'cutlass' / 'arch' / 'arch.h'}: Permission denied",
        )
    # scan reads what it can and says what it could not, even when grepping for what was there
    proc = run("scan", dest, "--grep", "sm120_smem_capacity_bytes", "--json", cache=cache, user=other_user)
    expect(proc, 0)
    doc = json.loads(proc.stdout)
    assert doc["constants"] == []
    assert doc["diagnostics"] == [{"file": "cutlass/arch/arch.h", "line": 0, "message": "not read: Permission denied"}]


# ---------------------------------------------------------------------------------------
# damaged wheels


def test_wheel_with_a_bad_crc(tmp_path, cache):
    name = INCLUDE + "cutlass/arch/arch.h"
    whl = make_wheel(tmp_path / "crc-1.0-py3-none-any.whl", stored={name})
    data = bytearray(whl.read_bytes())
    with zipfile.ZipFile(whl) as zf:
        info = zf.getinfo(name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 10] ^= 0xFF  # one byte of the stored member
    whl.write_bytes(bytes(data))
    for argv in (["source", "--cutlass", whl], ["layout", "--cutlass", whl], ["scan", whl], ["audit", whl]):
        expect(run(*argv, cache=cache), 2, f"{whl} is a damaged wheel", "Bad CRC-32", "fetch or build it again")


def test_wheel_cut_short(tmp_path, cache, wheel):
    whl = tmp_path / "cut-1.0-py3-none-any.whl"
    whl.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])
    expect(run("source", "--cutlass", whl, cache=cache), 2, f"{whl} is not a readable wheel")


def test_wheel_with_a_file_and_a_folder_of_the_same_name(tmp_path, cache):
    whl = make_wheel(tmp_path / "dup-1.0-py3-none-any.whl", extra=[(INCLUDE + "cutlass/arch", b"a file")])
    for argv in (["source", "--cutlass", whl], ["audit", whl]):
        expect(run(*argv, cache=cache), 2, f"{whl} is a damaged wheel", "cutlass/arch is both a file and a folder")


def test_wheel_members_that_climb_out_or_link_stay_inside(tmp_path, cache):
    """(Already harmless before issue 13.)"""
    link = zipfile.ZipInfo(INCLUDE + "cutlass/link.h")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    whl = make_wheel(
        tmp_path / "evil-1.0-py3-none-any.whl",
        extra=[(INCLUDE + "../../../../../evil.h", b"x"), ("/tmp/evil-absolute.h", b"x"), (link, b"/etc/passwd")],
    )
    proc = run("source", "--cutlass", whl, cache=cache)
    expect(proc, 0)
    assert not (tmp_path / "evil.h").exists() and not [p for p in cache.rglob("evil*")]
    root = Path(proc.stdout.split("include root: ")[1].split("\n")[0])
    assert not (root / "cutlass" / "link.h").is_symlink()  # a file holding the link's text


# ---------------------------------------------------------------------------------------
# limits (README "Limits"), and --no-limits


def _declared_size(whl: Path, name: str, size: int) -> None:
    """Make the zip's headers claim ``size`` bytes for member ``name`` (a bomb, in a few KB):
    the uncompressed size at offset 22 of its local header and 24 of its central entry."""
    data = bytearray(whl.read_bytes())
    with zipfile.ZipFile(whl) as zf:
        info = zf.getinfo(name)
    pos = data.index(b"PK\x01\x02")
    while True:  # the central directory entry of `name`
        n = int.from_bytes(data[pos + 28 : pos + 30], "little")
        if data[pos + 46 : pos + 46 + n] == name.encode():
            break
        pos = data.index(b"PK\x01\x02", pos + 46)
    data[pos + 24 : pos + 28] = size.to_bytes(4, "little")
    data[info.header_offset + 22 : info.header_offset + 26] = size.to_bytes(4, "little")
    whl.write_bytes(bytes(data))


def test_zip_bomb_is_refused_before_anything_is_written(tmp_path, cache):
    name = INCLUDE + "cutlass/zeros.h"
    whl = make_wheel(tmp_path / "bomb-1.0-py3-none-any.whl", extra=[(name, b"\0" * 1000)])
    _declared_size(whl, name, 2100 << 20)  # 2.1 GB, as the 8.5 MB bomb of the issue
    for argv in (["source", "--cutlass", whl], ["audit", whl]):
        expect(
            run(*argv, cache=cache),
            2,
            f"what {whl} unpacks is",
            "over the limit of 512 MiB",
            "(--no-limits lifts the limits)",
        )
    assert sum(p.stat().st_size for p in cache.rglob("*") if p.is_file()) < 1 << 20


def test_header_over_the_size_limit(tmp_path, cache):
    big = (b"// filler\n" * (1 << 20))[: 9 << 20]  # 9 MiB of comments
    whl = make_wheel(tmp_path / "big-1.0-py3-none-any.whl", extra=[(INCLUDE + "cutlass/big.h", big)])
    expect(
        run("source", "--cutlass", whl, cache=cache),
        2,
        f"{INCLUDE}cutlass/big.h in {whl} is 9 MiB, over the limit of 8 MiB",
        "--no-limits",
    )
    proc = run("source", "--cutlass", whl, "--no-limits", cache=cache)
    expect(proc, 0)
    assert "version.h:    9.8.7" in proc.stdout

    folder = tmp_path / "headers"
    folder.mkdir()
    (folder / "big.hpp").write_bytes(big + b"\nconstexpr int kStages = 3;\n")
    expect(run("scan", folder / "big.hpp", cache=cache), 2, "is 9.0 MiB, over the limit of 8 MiB", "--no-limits")
    proc = run("scan", folder, "--json", cache=cache)
    expect(proc, 0)
    assert json.loads(proc.stdout)["diagnostics"] == [
        {"file": "big.hpp", "line": 0, "message": "not read: 9.0 MiB, over the limit of 8 MiB on one file"}
    ]
    proc = run("scan", folder, "--json", "--no-limits", cache=cache)
    expect(proc, 0)
    assert [(c["name"], c["value"]) for c in json.loads(proc.stdout)["constants"]] == [("kStages", 3)]


def test_grid_over_the_size_limit(capsys):
    from cutlass_layout.core.files import LIMITS, Limits

    tile = "{1,2,3,4,5,6,7,8,9,10}x{1,2,3,4,5,6,7,8,9,10}x{1,2,3,4,5,6,7,8,9,10}"
    code, _, err = cli(capsys, "sweep", "--tile", tile, "--a", "nvfp4", "--a", "mxfp8")
    assert code == 2
    one_error(err, "the grid is 2000 configs, over the limit of 1024 configs", "--no-limits")
    code, _, err = cli(capsys, "sweep", "--tile", tile + "{1,2}")
    assert code == 2
    one_error(err, "is 2000 configs, over the limit of 1024 configs")
    # lifted, the grid is built (and its first bad value found); the limits are back afterwards
    code, _, err = cli(capsys, "sweep", "--no-limits", "--tile", tile, "--a", "nvfp4", "--a", "fp5")
    assert code == 2
    one_error(err, "unknown element kind 'fp5'")
    assert LIMITS == Limits()


# ---------------------------------------------------------------------------------------
# bad values and grids


@pytest.mark.parametrize(
    "argv,words",
    [
        (["--tile", "4294967424x128x128"], "tile 4294967424x128x128: M, N and K must be at most 2147483647"),
        (["--tile", "128x128x4294967424B"], "must be at most 2147483647"),
        (["--stages", "99999999999"], "stages 99999999999: at most 2147483647"),
    ],
)
def test_out_of_range_tiles_and_stages_are_bad_input(argv, words, capsys):
    code, _, err = cli(capsys, "layout", *argv)
    assert code == 2
    one_error(err, words)


@pytest.mark.parametrize(
    "name,text,words",
    [
        ("empty.toml", "", "is empty"),
        ("comments.toml", "# a grid\n\n# nothing yet\n", "is empty"),
        ("empty.json", "{}", "is empty"),
        ("grid.json", '{"grid": {}}', "is empty"),
        ("configs.json", '{"configs": []}', "the grid is empty"),  # (said so before issue 13)
    ],
)
def test_empty_grid_file_says_it_is_empty(tmp_path, name, text, words, capsys):
    (tmp_path / name).write_text(text)
    code, _, err = cli(capsys, "sweep", "--grid", tmp_path / name)
    assert code == 2
    one_error(err, words)


# ---------------------------------------------------------------------------------------
# scan: constants in their declared type


CONSTANTS = """\
namespace n {
static constexpr uint32_t TmaTransactionBytesX = 4294967295u + 2u;
static constexpr int16_t ShortStages = 70000;
static constexpr int NumStages = 2147483647 + 1;
static constexpr uint8_t ByteStages = -1;
constexpr auto AutoStages = 5u - 6u;
static constexpr int32_t HexStages = 0xFFFFFFFF;
static constexpr int MinStages = -2147483647 - 1;
static constexpr int16_t BraceStages{70000};
static constexpr int BigStages = 99999999999999999999999;
static constexpr int kStages = 1 << 4;
constexpr int sm120_smem_capacity_bytes = 101376;
}
"""


def test_scan_evaluates_constants_in_their_declared_type(tmp_path):
    from cutlass_layout import scan

    (tmp_path / "c.hpp").write_text(CONSTANTS)
    res = scan(tmp_path / "c.hpp")
    # the values C++17 gives (g++ 13 -std=c++17 prints the same), by hand: unsigned arithmetic
    # wraps modulo 2^32; 70000 in 16 bits is 70000 - 65536; -1 in 8 bits is 255; 0xFFFFFFFF is
    # unsigned int, -1 as int32_t; signed overflow, a narrowing brace and a literal too large
    # for any type do not compile (no value)
    assert {c.name: c.value for c in res.constants} == {
        "TmaTransactionBytesX": 1,
        "ShortStages": 4464,
        "NumStages": None,
        "ByteStages": 255,
        "AutoStages": 4294967295,
        "HexStages": -1,
        "MinStages": -2147483648,
        "BraceStages": None,
        "BigStages": None,
        "kStages": 16,
        "sm120_smem_capacity_bytes": 101376,
    }
    said = {d.line: d.message for d in res.diagnostics}
    assert said[2] == (
        "constant TmaTransactionBytesX = 4294967295u + 2u: 4294967297 does not fit uint32_t: the compiler makes it 1"
    )
    assert said[3] == "constant ShortStages = 70000: 70000 does not fit int16_t: the compiler makes it 4464"
    assert said[4].endswith("2147483647 + 1 overflows int: not a constant expression (it does not compile)")
    assert "a narrowing brace initializer does not compile" in said[9]
    assert "too large for any integer type" in said[10]
    assert set(said) == {2, 3, 4, 5, 6, 7, 9, 10}


# ---------------------------------------------------------------------------------------
# caches: a corrupt or half-written entry is a miss, never a crash or a number


@pytest.fixture(scope="module")
def audited(tmp_path_factory, wheel):
    """The mini wheel audited once in a cache of its own: (cache, JSON)."""
    cache = tmp_path_factory.mktemp("audited") / "cache"
    proc = run("audit", wheel, "--json", "--jobs", "1", cache=cache)
    expect(proc, 0)
    return cache, json.loads(proc.stdout)


def _entries(cache: Path, kind: str) -> list[Path]:
    return sorted((cache / "results" / kind).glob("*.json"))


def _rewrite(path: Path, change, resign: bool) -> None:
    head, _, body = path.read_bytes().partition(b"\n")
    meta, payload = json.loads(head), json.loads(body)
    payload = change(payload)
    body = json.dumps(payload).encode()
    if resign:  # the checksum made to agree: only the content's own consistency is left
        meta["sha256"] = hashlib.sha256(body).hexdigest()
    path.write_bytes(json.dumps(meta).encode() + b"\n" + body)


def _grow_kernel(payload):
    for item in payload["kernels"]:
        if item["report"]["kernel"]:
            item["report"]["kernel"]["size"] = CAPACITY + 1
    return payload


def _garble(payload):
    for item in payload["kernels"]:
        item["report"]["kernel"] = "big"
    return payload


def _numbers(doc: dict) -> dict:
    return {t["id"]: (t["verdict"], t["stages"], t["kernel_bytes"], t["mainloop_bytes"]) for t in doc["tactics"]}


@pytest.mark.parametrize(
    "change,resign",
    [(_grow_kernel, False), (_grow_kernel, True), (_garble, True), (lambda p: [1, 2], True), (None, None)],
    ids=["grown", "grown-resigned", "garbled-resigned", "a-list-resigned", "cut-short"],
)
def test_altered_results_are_misses(wheel, audited, change, resign):
    from cutlass_layout.commands.audit.run import load_source
    from cutlass_layout.core.cache import ResultCache

    cache, first = audited  # each case leaves the cache as it found it (the rerun stores again)
    entries = _entries(cache, "audit")
    assert entries
    for entry in entries:
        if change is None:  # cut short, as by a crash in the middle of a write
            entry.write_bytes(entry.read_bytes()[:100])
        else:
            _rewrite(entry, change, resign)
    proc = run("audit", wheel, "--json", "--jobs", "1", cache=cache)
    expect(proc, 0)
    assert _numbers(json.loads(proc.stdout)) == _numbers(first)
    mainloop, _, kernel = mini_sizes(128, 64, 32, 3, 4096)
    assert _numbers(first)[MOE_FINALIZE] == ("fits", 3, kernel, mainloop)
    for entry in entries:  # each was a miss: computed again and stored whole
        assert load_source(ResultCache.read_entry(entry, entry.stem))


def test_a_report_whose_numbers_disagree_does_not_load(audited):
    from cutlass_layout.engine.loop import load_report

    _, doc = audited
    payloads = [json.loads(e.read_bytes().partition(b"\n")[2]) for e in _entries(audited[0], "audit")]
    # a source's entry that holds a kernel (the fixture's dispatch source gives none)
    report = next(item["report"] for payload in payloads for item in payload["kernels"] if item["report"]["kernel"])
    assert load_report(report).kernel.size == report["kernel"]["size"]
    for change in (
        lambda r: r["kernel"].update(size=r["kernel"]["size"] + 1),  # verdict/headroom disagree
        lambda r: r["kernel"]["fields"][0].update(offset=10**9),  # a member outside it
        lambda r: r["kernel"].update(size="big"),
        lambda r: r.update(stages=-1),
        lambda r: r.update(error={"kind": "error", "message": "x", "file": None, "line": None}),
    ):
        bad = json.loads(json.dumps(report))
        change(bad)
        with pytest.raises((KeyError, TypeError, ValueError, AttributeError)):
            load_report(bad)


def test_sealed_files(cache, tmp_path):
    import cutlass_layout.core.cache as cache_module
    from cutlass_layout.core.cache import discard, seal, sealed

    blob = tmp_path / "x.pch"
    blob.write_bytes(b"precompiled" * 1000)
    assert not sealed(blob, "k")  # no seal: not trusted
    seal(blob, "k")
    assert sealed(blob, "k") and not sealed(blob, "other key")
    data = bytearray(blob.read_bytes())
    data[5000] ^= 1
    blob.write_bytes(bytes(data))
    cache_module.SEALED.clear()  # as a new process finds it (a check is remembered per process)
    assert not sealed(blob, "k")  # altered
    blob.write_bytes(b"precompiled")
    assert not sealed(blob, "k")  # cut short
    discard(blob)
    assert not blob.exists() and not sealed(blob, "k")


def test_wheel_digest_memo_that_is_damaged_is_computed_again(cache, wheel):
    from cutlass_layout.sources import wheels

    true = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert wheels.sha256_file(wheel) == true
    (memo,) = _entries(cache, "wheel-digests")
    memo.write_bytes(memo.read_bytes().replace(true[:8].encode(), b"00000000"))
    assert wheels.sha256_file(wheel) == true
    memo.write_bytes(b"garbage")
    assert wheels.sha256_file(wheel) == true


def test_unpacked_tree_that_lost_a_file_is_unpacked_again(cache, wheel):
    from cutlass_layout.sources.trees import resolve_cutlass

    root = resolve_cutlass(str(wheel)).include_root
    arch = root / "cutlass" / "arch" / "arch.h"
    text = arch.read_text()
    (cache / "trees" / ".unpack-leftover").mkdir()  # what a killed process leaves: ignored
    arch.unlink()
    assert resolve_cutlass(str(wheel)).include_root == root and arch.read_text() == text
    arch.write_text(text[:10])  # cut short
    assert resolve_cutlass(str(wheel)).include_root == root and arch.read_text() == text


def test_prelude_that_is_damaged_is_written_again(cache):
    from cutlass_layout.installs.preludes import Prelude

    pre = Prelude(macros="#define CL_TEST 1\n")
    path = pre.write()
    good = path.read_bytes()
    path.write_bytes(good[:5])
    assert pre.write() == path and path.read_bytes() == good


def test_generated_source_that_changed_runs_the_builders_again(cache, wheel):
    from cutlass_layout.sources.flashinfer_jit import jit_modules
    from cutlass_layout.sources.flashinfer import resolve_flashinfer

    install = resolve_flashinfer(str(wheel))
    gen = jit_modules(install).modules[0].generated[0]
    text = gen.read_text()
    gen.write_text(text[: len(text) // 2])  # a half-written source must not be parsed
    assert jit_modules(install).modules[0].generated[0] == gen and gen.read_text() == text


# ---------------------------------------------------------------------------------------
# sweeps: progress when stderr is not a terminal, results kept when interrupted


@pytest.mark.network
def test_sweep_prints_progress_lines_when_stderr_is_not_a_terminal(nc420, monkeypatch, capsys):
    from cutlass_layout.core.progress import Progress

    schedule_module = importlib.import_module("cutlass_layout.engine.schedule")  # the sweep's progress

    class Often(Progress):
        def __init__(self, what, total=0, **kw):
            super().__init__(what, total, **{**kw, "every": 0.0})

    monkeypatch.setattr(schedule_module, "Progress", Often)
    code, _, err = cli(
        capsys,
        "sweep",
        "--cutlass",
        nc420.tree.include_root,
        "--no-cache",
        "--tile",
        "128x{64,128}x128",
        "--kernel",
        "dense",
        "--kernel",
        "grouped",
        "--jobs",
        "1",
    )
    assert code == 0
    assert any(ln.startswith("laying out: ") for ln in err.splitlines()), err


@pytest.mark.network
def test_layouts_are_stored_as_their_parse_gives_them(nc420, cache, monkeypatch):
    from cutlass_layout import Config
    from cutlass_layout.engine import loop as engine

    monkeypatch.setenv("CUTLASS_LAYOUT_NO_PCH", "1")  # no header to build in the temporary cache
    tgt = engine.target(nc420.tree)
    first, second = Config(), Config(arch="sm90", kernel="dense")
    real, calls = engine.parse_probe, []

    def parse(*args):
        calls.append(args)
        if len(calls) == 2:  # Ctrl-C while the second translation unit is parsed
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(engine, "parse_probe", parse)
    with pytest.raises(KeyboardInterrupt):
        engine.layouts([first, second], tgt, use_cache=False)
    kept, lost = engine.cached([first, second], tgt)
    assert lost is None and kept is not None
    stages, _, _, kernel, _ = SECTION_A[((128, 128, 128), "flashinfer")]
    assert (kept.stages, kept.kernel.size) == (stages, kernel)


@pytest.mark.network
def test_ctrl_c_during_a_sweep_is_clean(nc420):
    """(Already clean before issue 13.) Ctrl-C once the sweep's two worker processes are
    there, i.e. while configs are being laid out."""
    proc = subprocess.Popen(
        [
            *PY,
            "sweep",
            "--cutlass",
            str(nc420.tree.include_root),
            "--no-cache",
            "--tile",
            "128x{32,64,128,256}x{128,256}",
            "--jobs",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _children(proc, 2, within=300), "the sweep started no worker processes"
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "error: interrupted", err
    assert "Traceback" not in err
