"""`venn.cloud` against a real Thunder service (`venn cloud serve` of VENN_BIN, SQLite
store, its own pool of workers): two owners register, upload, pair (one listening in a
thread, the other connecting) and read back their matches."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import venn
from venn import cloud

VENN_BIN = os.environ.get("VENN_BIN") or shutil.which("venn")
pytestmark = pytest.mark.skipif(VENN_BIN is None, reason="no venn binary (set VENN_BIN)")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("service")
    proc = subprocess.Popen(
        [VENN_BIN, "cloud", "serve", "--listen", "127.0.0.1:0", "--data", str(data),
         "--threads", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    line = proc.stdout.readline()
    assert line.startswith("listening "), line
    yield "http://" + line.split()[1]
    proc.terminate()
    proc.wait(30)


def pair_both(a: cloud.Client, a_key: Path, b: cloud.Client, b_key: Path, **options) -> str:
    """`a` listens (and creates the run) in a thread; `b` connects. Both see one run."""
    bound: queue.Queue[str] = queue.Queue()
    runs: dict[str, str] = {}

    def lead() -> None:
        runs["a"] = a.pair(a_key, listen="127.0.0.1:0", on_listening=bound.put, **options)

    t = threading.Thread(target=lead)
    t.start()
    runs["b"] = b.pair(b_key, connect=bound.get(timeout=30), **options)
    t.join(60)
    assert runs["a"] == runs["b"]
    return runs["a"]


def test_two_owners_find_their_matches(service: str, tmp_path: Path):
    alice = cloud.register(service, identity=tmp_path / "alice.id", name="alice")
    bob = cloud.register(service, identity=tmp_path / "bob.id", name="bob")
    ours = [f"user{i}@x.org" for i in range(120)] + ["user4@x.org"]
    theirs = [f"USER{i}@x.org".encode() for i in range(0, 300, 4)]
    heard: list[tuple[int, int]] = []
    alice.upload(ours, dataset="customers", key_file=tmp_path / "a.key", chunk_items=50,
                 progress=lambda sent, total: heard.append((sent, total)))  # fmt: skip
    bob.upload(theirs, dataset="leads", key_file=tmp_path / "b.key", lowercase=True)
    assert heard == [(50, 120), (100, 120), (120, 120)], "one report per chunk"
    assert [d["name"] for d in alice.datasets()] == ["customers"]

    run = pair_both(alice, tmp_path / "a.key", bob, tmp_path / "b.key")
    expected = [i for i in range(120) if i % 4 == 0]
    assert alice.result(run, tmp_path / "a.key", ours, wait=120) == expected + [120]
    got = bob.result(run, tmp_path / "b.key", theirs, wait=120, lowercase=True)
    assert got == [i // 4 for i in expected]
    assert alice.status(run)["state"] == "done"

    # The same again as a preprocessed run (pre-tokens computed first).
    alice.make_pretokens(tmp_path / "a.key", wait=120)
    bob.make_pretokens(tmp_path / "b.key", wait=120)
    assert [t["state"] for t in alice.pretokens(tmp_path / "a.key")] == ["ready"]
    run = pair_both(alice, tmp_path / "a.key", bob, tmp_path / "b.key", preprocessed=True)
    assert alice.result(run, tmp_path / "a.key", ours, wait=120) == expected + [120]

    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"email": ours, "n": range(len(ours))})
    rows = alice.result_frame(run, tmp_path / "a.key", frame, "email")
    assert rows["n"].tolist() == expected + [120]

    # A frame's missing key is the empty key the upload skipped, not the text "None".
    carol = cloud.register(service, identity=tmp_path / "carol.id", name="carol")
    sparse = ["user4@x.org", None, "user8@x.org", float("nan")]
    carol.upload(sparse, dataset="sparse", key_file=tmp_path / "c.key", skip_empty=True)
    sparse_run = pair_both(carol, tmp_path / "c.key", bob, tmp_path / "b.key")
    frame = pandas.DataFrame({"email": sparse, "n": range(4)})
    rows = carol.result_frame(sparse_run, tmp_path / "c.key", frame, "email", skip_empty=True, wait=120)
    assert rows["n"].tolist() == [0, 2]

    # Refusals, each of its kind.
    with pytest.raises(venn.ServiceError, match="not the ones uploaded"):
        alice.result(run, tmp_path / "a.key", ours[:-2])
    with pytest.raises(venn.ServiceError, match="never overwritten"):
        alice.upload(ours, dataset="again", key_file=tmp_path / "a.key")
    with pytest.raises(venn.UsageError, match="never overwritten"):
        cloud.register(service, identity=tmp_path / "alice.id", name="alice2")
    with pytest.raises(venn.UsageError, match="already|taken|exists"):
        cloud.register(service, identity=tmp_path / "alice-again.id", name="alice")
    assert not (tmp_path / "alice-again.id").exists(), "a refused identity is not kept"
    with pytest.raises(TypeError):
        alice.upload("one key", dataset="x", key_file=tmp_path / "x.key")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword argument 'threads'"):
        alice._native.pair(tmp_path / "a.key", connect="127.0.0.1:9", threads=2)  # TLS only

    gone = alice.delete(alice.datasets()[0]["id"])
    assert gone["name"] == "customers"
    assert [d["state"] for d in alice.datasets()] == ["deleted"]
    with pytest.raises(venn.UsageError, match="fingerprint"):
        cloud.Client("https://127.0.0.1:9", tmp_path / "bob.id")
    with pytest.raises(venn.UsageError):
        cloud.Client(service, tmp_path / "nobody.id")
    again = cloud.Client(service, tmp_path / "bob.id")
    assert again.name == "bob" and len(again.datasets()) == 1


def test_plain_http_is_refused_off_this_machine(tmp_path: Path):
    with pytest.raises(venn.UsageError, match="plain_http=True"):
        cloud.register("http://192.0.2.1:7780", identity=tmp_path / "x.id", name="x")
    with pytest.raises(venn.NetworkError):
        cloud.register("http://127.0.0.1:9", identity=tmp_path / "y.id", name="y")


def test_registration_by_invitation(tmp_path: Path):
    data = tmp_path / "service"
    proc = subprocess.Popen(
        [VENN_BIN, "cloud", "serve", "--listen", "127.0.0.1:0", "--data", str(data),
         "--threads", "0", "--registration", "invite"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening "), line
        service = "http://" + line.split()[1]
        made = subprocess.run(
            [VENN_BIN, "cloud", "invite", "--data", str(data)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        invite = made.stdout.strip()
        with pytest.raises(venn.UsageError, match="invitation"):
            cloud.register(service, identity=tmp_path / "a.id", name="a")
        assert not (tmp_path / "a.id").exists()
        alice = cloud.register(service, identity=tmp_path / "a.id", name="a", invite=invite)
        assert alice.name == "a"
        with pytest.raises(venn.UsageError, match="was used"):
            cloud.register(service, identity=tmp_path / "b.id", name="b", invite=invite)
    finally:
        proc.terminate()
        proc.wait(30)
