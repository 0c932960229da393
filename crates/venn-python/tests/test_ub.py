"""``venn.ub`` against the real ``venn ub serve``: queries are the plain intersection
through an update, a state file takes only the changes, a key normalisation other than
the dataset's is refused (or warned of), and over TLS the server is pinned."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import venn
from venn import ub

VENN_BIN = os.environ.get("VENN_BIN") or shutil.which("venn")
pytestmark = pytest.mark.skipif(VENN_BIN is None, reason="no venn binary (set VENN_BIN)")


def venn_ub(*args: str) -> str:
    """``venn ub ARGS…``, which must succeed; its standard error."""
    run = subprocess.run([VENN_BIN, "ub", *args], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stderr


def keys_file(path: Path, keys) -> str:
    path.write_text("email\n" + "".join(f"{k}\n" for k in keys))
    return str(path)


class Server:
    """A running ``venn ub serve`` on ``dataset``, stopped on leaving."""

    def __init__(self, dataset: Path, *extra: str):
        self.log = open(dataset.parent / "serve.log", "w")
        self.proc = subprocess.Popen(
            [VENN_BIN, "ub", "serve", "--dataset", str(dataset), "--listen", "127.0.0.1:0",
             *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
        )  # fmt: skip
        first = self.proc.stdout.readline().strip()
        assert first.startswith("listening "), first
        self.addr = first.removeprefix("listening ")

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *_) -> None:
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def user(i: int) -> str:
    return f"user{i}@example.com"


def test_queries_in_ub_fhe_download_nothing(tmp_path: Path):
    dataset = tmp_path / "ds"
    big = tmp_path / "big.csv"
    big.write_text("email,case\n" + "".join(f"{user(i)},case {i}\n" for i in range(200)))
    venn_ub("init", "--dataset", str(dataset), "--input", str(big), "--column", "email",
            "--label-column", "case", "--max-items", "4096", "--max-query", "16",
            "--mode", "both")  # fmt: skip
    asked = [user(i) for i in (5, 500, 7, 5)]
    with Server(dataset) as server:
        # No state file: auto takes ub-fhe, the same answers as ub-cache's.
        q = ub.query(asked, server.addr)
        assert q.mode == "fhe"
        assert q.matched == [0, 2, 3]
        assert q.labels == [b"case 5", b"case 7", b"case 5"]
        c = ub.query(asked, server.addr, mode="cache")
        assert (c.mode, c.matched, c.labels) == ("cache", q.matched, q.labels)
        with pytest.raises(venn.UsageError):
            ub.query(asked, server.addr, mode="tags")


def test_matches_carry_their_labels(tmp_path: Path):
    dataset = tmp_path / "ds"
    big = tmp_path / "big.csv"
    big.write_text("email,case\n" + "".join(f"{user(i)},case {i}\n" for i in range(300)))
    venn_ub("init", "--dataset", str(dataset), "--input", str(big), "--column", "email",
            "--label-column", "case", "--label-len", "12")  # fmt: skip
    asked = [user(i) for i in (5, 500, 7, 5)]
    with Server(dataset) as server:
        q = ub.query(asked, server.addr, state=tmp_path / "state.bin")
        assert q.matched == [0, 2, 3]
        assert q.labels == [b"case 5", b"case 7", b"case 5"]
        assert q.dataset.label_len == 12
        up = tmp_path / "up.csv"
        up.write_text(f"email,case\n{user(7)},moved\n{user(500)},new\n")
        venn_ub("update", "--dataset", str(dataset), "--upsert", str(up),
                "--label-column", "case")  # fmt: skip
        deadline = time.monotonic() + 20
        while ub.sync(server.addr, state=tmp_path / "probe.bin").version < 1:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        q = ub.query(asked, server.addr, state=tmp_path / "state.bin")
        assert q.matched == [0, 1, 2, 3]
        assert q.labels == [b"case 5", b"new", b"moved", b"case 5"]
        plain = ub.query([user(1)], server.addr)
        assert plain.labels == [b"case 1"]


def test_queries_are_the_intersection_through_an_update(tmp_path: Path):
    dataset = tmp_path / "ds"
    venn_ub("init", "--dataset", str(dataset), "--input",
            keys_file(tmp_path / "big.csv", map(user, range(2000))),
            "--column", "email", "--trim", "--lowercase", "--max-query", "256")  # fmt: skip
    held = set(range(2000))
    asked = list(range(1900, 2300))
    # As a client might have them: other case, spaces around, one key twice.
    keys = [f" User{i}@Example.COM " for i in asked] + [user(1950)]
    asked.append(1950)
    state = tmp_path / "state.bin"
    with Server(dataset) as server:
        q = ub.query(keys, server.addr, state=state, trim=True, lowercase=True)
        want = [p for p, i in enumerate(asked) if i in held]
        assert q.matched == want and want[-1] == 400
        assert (q.count, q.keys) == (100, 400)
        assert (q.dataset.size, q.dataset.epoch, q.dataset.version) == (2000, 0, 0)
        assert not q.dataset.current and q.dataset.max_query == 256
        whole = q.dataset.received
        again = ub.query(keys, server.addr, state=state, trim=True, lowercase=True)
        assert again.matched == want and again.dataset.current

        venn_ub("update", "--dataset", str(dataset), "--column", "email",
                "--upsert", keys_file(tmp_path / "add.csv", map(user, range(2000, 2100))),
                "--delete", keys_file(tmp_path / "del.csv", map(user, range(1900, 1950))))  # fmt: skip
        held |= set(range(2000, 2100))
        held -= set(range(1900, 1950))
        deadline = time.monotonic() + 20
        while (synced := ub.sync(server.addr, state=state)).version != 1:
            assert time.monotonic() < deadline, "the update was not served"
            time.sleep(0.2)
        assert synced.size == 2050 and not synced.current
        assert synced.received * 4 < whole, (synced.received, whole)
        q = ub.query(keys, server.addr, state=state, trim=True, lowercase=True)
        want = [p for p, i in enumerate(asked) if i in held]
        assert q.matched == want and q.dataset.current and len(want) == 151
        # Without a state file the whole set comes each time, with the same answer.
        assert ub.query(keys, server.addr, trim=True, lowercase=True).matched == want
        # A damaged state file is replaced (with a warning); another file is left alone.
        state.write_bytes(b"venn-ub-state-01 cut short")
        with pytest.warns(UserWarning, match="does not read"):
            assert not ub.sync(server.addr, state=state).current
        assert ub.sync(server.addr, state=state).current
        other = tmp_path / "notes.txt"
        other.write_text("mine")
        with pytest.raises(venn.VennError, match="not a `venn ub` state file"):
            ub.sync(server.addr, state=other)
        assert other.read_text() == "mine"
        # An empty file (made for us) holds no state yet.
        empty = tmp_path / "empty.state"
        empty.write_bytes(b"")
        assert not ub.sync(server.addr, state=empty).current
        assert ub.sync(server.addr, state=empty).current
        with pytest.raises(venn.UsageError, match="session_timeout"):
            ub.sync(server.addr, session_timeout=0)


def test_keys_taken_otherwise_are_refused_or_warned_of(tmp_path: Path):
    dataset = tmp_path / "ds"
    venn_ub("init", "--dataset", str(dataset), "--input",
            keys_file(tmp_path / "big.csv", map(user, range(100))),
            "--column", "email", "--lowercase")  # fmt: skip
    with Server(dataset) as server:
        with pytest.raises(venn.PeerError, match="lowercase"):
            ub.query([user(1)], server.addr)
        with pytest.warns(UserWarning, match="lowercase"):
            q = ub.query([user(1), user(500)], server.addr, allow_key_mismatch=True)
        assert q.matched == [0]
        with pytest.raises(TypeError):
            ub.query(user(1), server.addr)
        with pytest.raises(TypeError, match="unexpected keyword"):
            ub.sync(server.addr, protocol="rr22")
        with pytest.raises(venn.UsageError, match="--max-tags"):
            ub.sync(server.addr, max_tags=10)


def test_over_tls_the_server_is_pinned(tmp_path: Path):
    server_fp = venn.keygen(tmp_path / "server")
    client_fp = venn.keygen(tmp_path / "client")
    other_fp = venn.keygen(tmp_path / "other")
    dataset = tmp_path / "ds"
    venn_ub("init", "--dataset", str(dataset), "--input",
            keys_file(tmp_path / "big.csv", map(user, range(300))))  # fmt: skip
    tls = {
        "tls_cert": tmp_path / "client" / "venn.crt",
        "tls_key": tmp_path / "client" / "venn.key",
    }
    with Server(dataset, "--tls-cert", str(tmp_path / "server" / "venn.crt"),
                "--tls-key", str(tmp_path / "server" / "venn.key"),
                "--peer-fingerprint", client_fp) as server:  # fmt: skip
        q = ub.query([user(5), user(305)], server.addr, peer_fingerprint=server_fp, **tls)
        assert q.matched == [0]
        with pytest.raises(venn.NetworkError):
            ub.query([user(5)], server.addr, peer_fingerprint=other_fp, **tls)
