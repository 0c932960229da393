"""`venn.ray` on real local Ray clusters (2 CPUs each, started here). Thunder: the same
datasets and runs on a service with its own pool of workers and on one with none, worked
by Ray. Two parties: each with its own cluster (one in a child process), against the same
run on one machine without Ray. The matches must be the same, and what the keys say."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import venn
from venn import cloud

ray = pytest.importorskip("ray")
from venn.ray import thunder_workers  # noqa: E402

VENN_BIN = os.environ.get("VENN_BIN") or shutil.which("venn")
pytestmark = pytest.mark.skipif(VENN_BIN is None, reason="no venn binary (set VENN_BIN)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


class Service:
    """`venn cloud serve` on a free port with `threads` workers of its own."""

    def __init__(self, data: Path, threads: int):
        self.data = data
        self.proc = subprocess.Popen(
            [VENN_BIN, "cloud", "serve", "--listen", "127.0.0.1:0", "--data", str(data),
             "--threads", str(threads)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        line = self.proc.stdout.readline()
        assert line.startswith("listening "), line
        self.url = "http://" + line.split()[1]

    def enrol(self, name: str) -> Path:
        """A worker enrolled with the service (`venn cloud enrol-worker`): its identity."""
        out = self.data / f"{name}.worker"
        subprocess.run(
            [VENN_BIN, "cloud", "enrol-worker", "--data", str(self.data), "--name", name,
             "--out", str(out)],
            check=True, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        return out

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


ALICE = [f"user{i}@x.org" for i in range(150)]
BOB = [f"user{i}@x.org" for i in range(0, 400, 3)]
EXPECTED = list(range(0, 150, 3))


def runs_on(service: Service, dir: Path, work: Callable[[], None]) -> list[list[int]]:
    """Alice's matches in a plain run and a preprocessed run of the two datasets, `work()`
    called wherever the service's tasks must be done."""
    alice = cloud.register(service.url, identity=dir / "alice.id", name="alice")
    bob = cloud.register(service.url, identity=dir / "bob.id", name="bob")
    alice.upload(ALICE, dataset="a", key_file=dir / "a.key", chunk_items=40)
    bob.upload(BOB, dataset="b", key_file=dir / "b.key", chunk_items=40)
    alice.make_pretokens(dir / "a.key")
    bob.make_pretokens(dir / "b.key")
    work()
    for owner, key in ((alice, dir / "a.key"), (bob, dir / "b.key")):
        deadline = time.monotonic() + 60
        while [t["state"] for t in owner.pretokens(key)] != ["ready"]:
            assert time.monotonic() < deadline, owner.pretokens(key)
            time.sleep(0.2)

    def pair(**options) -> str:
        bound: queue.Queue[str] = queue.Queue()
        runs: dict[str, str] = {}
        t = threading.Thread(
            target=lambda: runs.setdefault(
                "a", alice.pair(dir / "a.key", listen="127.0.0.1:0", on_listening=bound.put,
                                **options)))  # fmt: skip
        t.start()
        bob.pair(dir / "b.key", connect=bound.get(timeout=30), **options)
        t.join(60)
        return runs["a"]

    matches = []
    for options in ({}, {"preprocessed": True}):
        run = pair(**options)
        work()
        matches.append(alice.result(run, dir / "a.key", ALICE, wait=60))
        assert alice.status(run)["state"] == "done"
    return matches


def test_ray_workers_match_the_services_own_pool(cluster: None, tmp_path: Path):
    own = Service(tmp_path / "own", threads=2)
    bare = Service(tmp_path / "bare", threads=0)
    done: list[int] = []
    try:
        ray_worker = bare.enrol("ray")
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        by_pool = runs_on(own, tmp_path / "a", lambda: None)
        by_ray = runs_on(
            bare,
            tmp_path / "b",
            lambda: done.append(
                thunder_workers(bare.url, ray_worker, idle_exit=1.0)
            ),
        )
    finally:
        own.stop()
        bare.stop()
    assert by_pool == by_ray == [EXPECTED, EXPECTED]
    # Pre-tokens: 4 + 4 chunks; a plain run: 4 + 4; a preprocessed run: the smaller side's 4.
    assert done == [8, 8, 4], done


SENDER = r"""
import sys, ray, venn, venn.ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
keys = [f"k{i}" for i in range(0, 30000, 3)] + ["k9", "k9 "]
try:
    r = venn.ray.send(keys, connect=sys.argv[1], lanes=int(sys.argv[2]), trim=True)
    print("result", r.n_self, r.n_peer, r.matched, flush=True)
except venn.VennError as e:
    print("error", type(e).__name__, e, flush=True)
"""


def test_two_clusters_give_the_one_machine_result(cluster: None, tmp_path: Path):
    import socket

    import venn
    import venn.ray

    ours = [f"k{i}" for i in range(20000)] + ["k3"]
    theirs = [f"k{i}" for i in range(0, 30000, 3)] + ["k9", "k9 "]
    expected = [i for i in range(20000) if i % 3 == 0] + [20000]

    def free_port() -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return f"127.0.0.1:{s.getsockname()[1]}"

    # One machine, no Ray: the reference.
    addr = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c",
         f"import venn; venn.send({theirs!r}, connect={addr!r}, trim=True)"],
    )  # fmt: skip
    one = venn.receive(ours, listen=addr, trim=True)
    assert child.wait(60) == 0
    assert one.matched == expected

    for lanes in (2, 3):  # the sender offers 3: the run takes the fewer, 2
        addr = free_port()
        child = subprocess.Popen(
            [sys.executable, "-c", SENDER, addr, str(lanes)], stdout=subprocess.PIPE, text=True
        )
        r = venn.ray.receive(ours, listen=addr, lanes=2, trim=True)
        out = child.communicate(timeout=120)[0]
        assert out.startswith("result "), out
        assert r.matched == one.matched and r.count == len(range(0, 20000, 3))
        assert (r.n_self, r.n_peer) == (20000, 10000), "distinct keys, after trimming"


REVEALING_SENDER = r"""
import sys, ray, venn, venn.ray
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
keys = [f"k{i}" for i in range(0, 30000, 3)]
again = [f"k{i}" for i in range(0, 30000, 15)]
reveal = {"v": [f"value of {k}" for k in keys] + [f"again {k}" for k in again],
          "w:4": ["w"] * len(keys) + ["x"] * len(again)}
keys += again
try:
    r = venn.ray.send(keys, connect=sys.argv[1], lanes=2, reveal=reveal)
    print("result", r.n_self, r.n_peer, r.matched, flush=True)
except venn.VennError as e:
    print("error", type(e).__name__, e, flush=True)
"""


def test_lanes_carry_the_peers_columns(cluster: None):
    """A sender's revealed columns reach the receiver's matched positions through the
    lanes, each its own key's: a key it gives twice, both rows' (the later ones after
    every lane ran, in one stream)."""
    import socket

    import venn.ray

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
    child = subprocess.Popen(
        [sys.executable, "-c", REVEALING_SENDER, addr], stdout=subprocess.PIPE, text=True
    )
    ours = [f"k{i}" for i in range(20000)]
    r = venn.ray.receive(ours, listen=addr, lanes=2, peer_columns=["v", "w"])
    out = child.communicate(timeout=120)[0]
    assert out == "result 10000 20000 None\n", out
    expected = [
        (i, values)
        for i in range(0, 20000, 3)
        for values in [[f"value of k{i}".encode(), b"w"]]
        + ([[f"again k{i}".encode(), b"x"]] if i % 15 == 0 else [])
    ]
    assert r.output.peer_rows == expected
    assert r.matched == sorted({i for i, _ in expected})


def test_a_lane_takes_the_partys_tls_and_deadline_and_nothing_else(tmp_path: Path):
    from venn import _venn

    assert set(_venn.lane_keywords()) == {
        "tls_cert", "tls_key", "tls_ca", "peer_fingerprint", "plaintext", "timeout"
    }  # fmt: skip
    with pytest.raises(TypeError, match="unexpected keyword argument 'threads'"):
        _venn.Lane(b"", threads=2)
    with pytest.raises(venn.VennError, match="missing.pem"):
        _venn.Lane(b"", tls_cert=tmp_path / "missing.pem", tls_key=tmp_path / "missing.key",
                   peer_fingerprint="00" * 32)  # fmt: skip
