"""audit on a Dask cluster (``executor="dask://HOST:PORT"``): the same JSON as this machine's
pool, also when a worker dies in the middle of the run, and one error line for every way the
cluster can be unusable.

The cluster is a ``distributed.LocalCluster`` of two worker processes of one thread each
(skipped where ``distributed``, the ``dask`` extra, is not installed); the install is the
miniature one of ``fixtures/installs`` (see tests/test_audit.py), laid out from scratch
(``use_cache=False``) in the session's cache, which the workers share (its precompiled
headers too).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys

import pytest
from conftest import MINI

from cutlass_layout import BadInput, api
from cutlass_layout.cli import main
from cutlass_layout.commands.audit import run as audit_module  # where the units are submitted


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    """(a copy of the miniature install, a scratch folder); no DASK_SCHEDULER_ADDRESS."""
    root = tmp_path_factory.mktemp("dask")
    dest = root / "site-packages"
    shutil.copytree(MINI, dest)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
        yield dest, root


@pytest.fixture(scope="module")
def local_json(install):
    """The audit's JSON from this machine's two forked workers."""
    res = api.audit(str(install[0]), jobs=2, use_cache=False, executor="local")
    return json.dumps(res.to_dict(), indent=2)


@pytest.fixture(scope="module")
def cluster(install):
    """``dask://HOST:PORT`` of a LocalCluster of two single-threaded worker processes (they
    inherit this process's environment: the session's cache), whose scheduler gives a task
    up when a second worker dies running it."""
    distributed = pytest.importorskip("distributed")
    import dask

    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c,
    ):
        yield c.scheduler_address.replace("tcp://", "dask://")


def test_a_cluster_gives_the_local_json(install, local_json, cluster):
    res = api.audit(str(install[0]), use_cache=False, executor=cluster)
    assert json.dumps(res.to_dict(), indent=2) == local_json
    assert res.stats["parsed"] == res.stats["sources"] == 6 and res.stats["cached"] == 0
    # the results came back here: the same audit again reads them all from this cache
    again = api.audit(str(install[0]), executor=cluster)
    assert again.stats["parsed"] == 0 and json.dumps(again.to_dict(), indent=2) == local_json


def _killing(marker: str, log: str):
    """``_lay_out`` that writes ``start``/``done`` lines (its sources' names) to ``log``, and
    whose first call anywhere kills its own worker process (SIGKILL, before any work)."""

    def lay_out(sources, provenance, pch):
        names = ",".join(sorted(s.path.name for s in sources))
        with open(log, "a") as f:
            f.write(f"start {names}\n")
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)
        out = audit_module.lay_out_batch(sources, provenance, pch)  # the worker's own, unpatched
        with open(log, "a") as f:
            f.write(f"done {names}\n")
        return out

    return lay_out


def test_a_worker_killed_mid_run_loses_nothing(install, local_json, cluster, monkeypatch):
    import cloudpickle

    root = install[1]
    marker, log = root / "killed", root / "runs.log"
    # the patched task goes to the workers by value (they do not import this test module)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        monkeypatch.setattr(audit_module, "lay_out_batch", _killing(str(marker), str(log)))
        res = api.audit(str(install[0]), use_cache=False, executor=cluster)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert marker.exists()  # a worker did die
    assert json.dumps(res.to_dict(), indent=2) == local_json
    lines = log.read_text().splitlines()
    done = [line[5:] for line in lines if line.startswith("done ")]
    started = [line[6:] for line in lines if line.startswith("start ")]
    # every batch finished once (none that came back was run again); the killed one ran twice
    assert len(done) == len(set(done)) == res.stats["batches"]
    assert len(started) == len(done) + 1 and set(started) == set(done)


def test_workers_that_cannot_see_a_path_are_named(install, cluster, tmp_path):
    from cutlass_layout.core.dask import executor

    ex = executor(cluster)
    try:
        ex.require_paths([install[0]])  # shared here
        with pytest.raises(BadInput, match=r"^Dask worker tcp://.* cannot see .*nowhere: the workers read"):
            ex.require_paths([install[0], tmp_path / "nowhere"])
    finally:
        ex.close()


def test_a_task_that_kills_every_worker_it_runs_on_is_an_error(cluster):
    from cutlass_layout.core.dask import executor
    from cutlass_layout.core.pool import Pool

    ex = executor(cluster)
    try:
        with pytest.raises(BadInput, match=r"^Dask scheduler tcp://\S+: every worker that ran a task died"):
            with Pool(2, executor=ex) as pool:
                pool.submit(os.abort)  # SIGABRT: the worker process dies, twice
                pool.next_done()
    finally:
        ex.close()


def _one_error(capsys) -> str:
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def test_bad_executors_are_one_error_line(mini, monkeypatch, capsys):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    assert main(["audit", str(mini), "--executor", "ray://x:1"]) == 2
    assert _one_error(capsys) == (
        "error: executor 'ray://x:1': give local or dask://HOST:PORT (a Dask scheduler's address)"
    )
    assert main(["audit", str(mini), "--executor", "dask://host:70000"]) == 2
    assert "give local or dask://HOST:PORT" in _one_error(capsys)
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "somewhere")
    assert main(["audit", str(mini), "--family", "moe"]) == 2
    assert _one_error(capsys).startswith("error: DASK_SCHEDULER_ADDRESS 'somewhere': give local or")
    monkeypatch.setenv("CUTLASS_LAYOUT_DASK_TIMEOUT_S", "soon")
    assert main(["audit", str(mini), "--executor", "dask://127.0.0.1:9"]) == 2
    assert "CUTLASS_LAYOUT_DASK_TIMEOUT_S='soon': give a positive number" in _one_error(capsys)


def test_without_distributed_the_error_names_the_extra(mini, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ImportError
    assert main(["audit", str(mini), "--executor", "dask://127.0.0.1:8786"]) == 2
    assert _one_error(capsys) == (
        "error: executor tcp://127.0.0.1:8786: Dask's distributed is not "
        "installed (the dask extra: pip install distributed, or pip install -e '.[dask]' in the clone)"
    )
    # DASK_SCHEDULER_ADDRESS names the cluster unless told to run here
    from cutlass_layout.core.dask import executor, scheduler_address

    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:8786")
    assert executor("local") is None and scheduler_address(None) == "tcp://127.0.0.1:8786"
    with pytest.raises(
        BadInput, match=r"\(the dask extra: pip install distributed, or pip install -e '\.\[dask\]' in the clone\)"
    ):
        executor(None)


def test_a_scheduler_that_does_not_answer_is_an_error_not_a_hang(mini, monkeypatch, capsys):
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("CUTLASS_LAYOUT_DASK_TIMEOUT_S", "1")
    assert main(["audit", str(mini), "--family", "moe", "--no-cache", "--executor", f"dask://127.0.0.1:{port}"]) == 2
    assert _one_error(capsys).startswith(f"error: Dask scheduler tcp://127.0.0.1:{port}: no answer within 1 s (")


@pytest.mark.network
@pytest.mark.slow  # about a minute on a shared 2-core machine
def test_a_sweep_on_a_cluster(nc420, cluster):
    # tests/handed.md section A (nvcc 13.0, the same on nvidia-cutlass 4.2.0.0): SM120 grouped
    # NVFP4, (stages, mainloop, epilogue, kernel) bytes
    handed = {
        ("128x128x128", "flashinfer"): (4, 74752, 9216, 84992),
        ("128x256x128", "flashinfer"): (3, 83968, 9216, 94208),
        ("128x128x128", "trtllm-moe"): (4, 74752, 13312, 89088),
        ("128x256x128", "trtllm-moe"): (3, 83968, 13312, 98304),
    }
    grid = {"tile": "128x{128,256}x128", "preset": ["flashinfer", "trtllm-moe"]}
    res = api.sweep(grid, nc420, use_cache=False, executor=cluster)
    assert (
        res.stats["chunks"] >= 1 and res.stats["laid_out"] >= 4
    )  # the grid and the search's guesses (chunks: as many workers as had joined)
    got = {
        ("x".join(map(str, r.config.tile)), r.config.preset): (
            r.stages,
            r.mainloop_bytes,
            r.epilogue_bytes,
            r.kernel_bytes,
        )
        for r in res.records
    }
    assert got == handed
    # the reports came back here: the same sweep reads them all from this cache
    again = api.sweep(grid, nc420, executor=cluster)
    assert again.stats["laid_out"] == 0 and again.to_dict() == res.to_dict()


def test_addresses(monkeypatch):
    from cutlass_layout.core.dask import scheduler_address

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    assert scheduler_address(None) is None and scheduler_address(" local ") is None
    assert scheduler_address("dask://node-3.cluster:8786") == "tcp://node-3.cluster:8786"
    assert scheduler_address("10.0.0.7:8786") == "tcp://10.0.0.7:8786"
    assert scheduler_address("tls://[::1]:8786") == "tls://[::1]:8786"
    for bad in ("dask://", "dask://host", "dask://host:0", "dask://host:port", "http://host:80", "dask://a b:1"):
        with pytest.raises(BadInput, match="give local or dask://HOST:PORT"):
            scheduler_address(bad)


def test_a_cluster_left_without_workers_is_an_error_not_a_hang(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from cutlass_layout.core.dask import executor
    from cutlass_layout.core.pool import Pool

    monkeypatch.setenv("CUTLASS_LAYOUT_DASK_TIMEOUT_S", "1")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=":0"
    ) as c:
        ex = executor(c.scheduler_address)
        ex.poll_s = 0.2
        try:
            with Pool(1, executor=ex) as pool:
                assert pool.jobs == 1 and ex.cores == 1
                c.scale(0)
                c.sync(c._correct_state)  # the worker is gone (scale only schedules it)
                pool.submit(os.getpid)
                with pytest.raises(BadInput, match=r"no worker left for 1 s, 1 task\(s\) not done"):
                    pool.next_done()
        finally:
            ex.close()
