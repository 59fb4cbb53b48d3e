"""The TVM FFI headers flashinfer's bindings include (``tvm/ffi/...``, ``dlpack/``): found
beside an install, or fetched as the ``apache-tvm-ffi`` release its metadata admits
(:func:`cutlass_layout.sources.tvm_ffi.tvm_ffi_headers`), and put on every module's ``-isystem``
path by ``audit`` as flashinfer's build does (``get_system_includes`` in
``flashinfer/jit/cpp_ext.py``)."""

from pathlib import Path

import pytest

from cutlass_layout import audit
from cutlass_layout.sources.tvm_ffi import requirement_of, tvm_ffi_headers
from cutlass_layout.sources.flashinfer import resolve_flashinfer

MINI = Path(__file__).resolve().parent.parent / "fixtures" / "installs" / "mini_flashinfer"
TEMPLATE = "flashinfer/data/csrc/mini_groupwise_kernel_inst.jinja"
HEADER = "#include <tvm/ffi/container/tensor.h>\n"


def test_the_requirement_read_from_metadata():
    """flashinfer-python 0.7.2.post1's METADATA (its own lines): the plain requirement, not
    the one of the ``ptx`` extra; the older ``name (spec)`` spelling too."""
    meta = (
        "Name: flashinfer-python\nRequires-Dist: apache-tvm-ffi<0.2,>=0.1.11\n"
        "Requires-Dist: click\n"
        'Requires-Dist: apache-tvm-ffi<0.2,>=0.1.12; extra == "ptx"\n'
    )
    assert requirement_of(meta) == "apache-tvm-ffi<0.2,>=0.1.11"
    assert requirement_of('Requires-Dist: apache-tvm-ffi>=0.1.12; extra == "ptx"\n') is None
    assert requirement_of("Requires-Dist: apache_tvm_ffi (>=0.1.0, <0.2)\n") == "apache-tvm-ffi>=0.1.0,<0.2"
    assert requirement_of("Requires-Dist: click\n") is None


@pytest.fixture
def mini_tvm(mini):
    """The miniature install (conftest's copy) whose groupwise source includes a TVM FFI header."""
    template = mini / TEMPLATE
    template.write_text(HEADER + template.read_text())
    return mini


def _groupwise(res):
    return next(s for s in res.sources if s["file"].endswith("mini_groupwise_sm120.cu"))


def test_headers_beside_the_install_are_used(mini_tvm):
    mini = mini_tvm
    """With ``tvm_ffi/include`` beside the install (as ``pip install flashinfer-python`` puts
    apache-tvm-ffi), the source that includes it compiles and gives its kernels: the same
    tactics as the fixture without the include (a line lower)."""
    plain = audit(str(MINI), family="gemm_sm120", jobs=1)
    assert plain.tactics
    header = mini / "tvm_ffi/include/tvm/ffi/container/tensor.h"
    header.parent.mkdir(parents=True)
    header.write_text("#pragma once\nnamespace tvm { namespace ffi { struct Tensor {}; } }\n")
    (mini / "tvm_ffi/include/dlpack").mkdir()
    found = tvm_ffi_headers(resolve_flashinfer(str(mini)))
    assert found.include == (mini / "tvm_ffi/include").resolve() or found.include == mini / "tvm_ffi/include"
    assert "beside the install" in found.origin and found.fingerprint
    res = audit(str(mini), family="gemm_sm120", jobs=1)
    assert _groupwise(res)["error"] is None
    # the same tactics, one line lower (the include added at the top of the source)
    assert [t.to_dict() | {"line": t.line - 1} for t in res.tactics] == [t.to_dict() for t in plain.tactics]
    assert res.provenance["tvm_ffi"]["include"] == str(found.include)


def test_without_headers_the_sources_fail_and_a_note_says_why(mini_tvm):
    mini = mini_tvm
    """No apache-tvm-ffi beside the install and no metadata naming one: the source fails on
    the missing header, and one note counts such sources and says why there are no headers."""
    found = tvm_ffi_headers(resolve_flashinfer(str(mini)))
    assert found.include is None and "not installed beside the install" in found.origin
    res = audit(str(mini), family="gemm_sm120", jobs=1)
    assert "'tvm/ffi/container/tensor.h' file not found" in _groupwise(res)["error"]
    (note,) = [n for n in res.notes if "TVM FFI" in n]
    assert note.startswith("1 source(s) include TVM FFI headers") and found.origin in note


@pytest.mark.network
def test_a_wheel_gets_the_release_its_metadata_admits():
    """flashinfer-python 0.7.2.post1 requires ``apache-tvm-ffi<0.2,>=0.1.11``: that
    wheel is fetched (cached) and its ``tvm_ffi/include`` unpacked, with
    ``tvm/ffi/container/tensor.h`` (what flashinfer's ``csrc/tvm_ffi_utils.h`` includes) and
    ``dlpack/dlpack.h``."""
    install = resolve_flashinfer("flashinfer-python==0.7.2.post1")
    assert install.tvm_ffi_requirement == "apache-tvm-ffi<0.2,>=0.1.11"
    found = tvm_ffi_headers(install)
    assert found.include is not None, found.origin
    assert (found.include / "tvm/ffi/container/tensor.h").is_file()
    assert (found.include / "dlpack/dlpack.h").is_file()
    assert found.origin.startswith("apache-tvm-ffi<0.2,>=0.1.11 (wheel apache_tvm_ffi-")
    assert tvm_ffi_headers(install, fetch=False) == found
