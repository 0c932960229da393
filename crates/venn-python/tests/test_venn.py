"""The Python package end to end: each run's two parties are two Python processes (one
child, one the test), or a Python party and the ``venn`` command line."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import venn

# The command line, for runs against it (built by `cargo build`/`cargo test`).
VENN_BIN = os.environ.get("VENN_BIN") or shutil.which("venn")


class Child:
    """A party in another Python process that listens on a free port: `run(...)` of the
    module with `items` and `options`; its result on stdout as a repr of a dict."""

    def __init__(self, role: str, items, **options):
        code = textwrap.dedent(
            f"""
            import sys, venn
            def bound(addr):
                print("listening", addr, flush=True)
            try:
                r = venn.{role}({items!r}, listen="127.0.0.1:0", on_listening=bound,
                                **{options!r})
                got = dict(matched=r.matched, count=r.count, n_self=r.n_self, n_peer=r.n_peer)
                rows = getattr(r.output, "peer_rows", None)
                if rows is not None:
                    got["peer_rows"] = rows
                print("result", repr(got), flush=True)
            except venn.VennError as e:
                print("error", type(e).__name__, e, flush=True)
            """
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline()
        assert line.startswith("listening "), line
        self.addr = line.split()[1]

    def result(self):
        out, _ = self.proc.communicate(timeout=120)
        kind, _, rest = out.strip().partition(" ")
        return kind, (eval(rest) if kind == "result" else rest)


def test_two_python_processes_get_the_intersection():
    ours = ["a@x.org", "b@y.org", b"raw\x00bytes", "b@y.org", "z"]
    theirs = ["b@y.org", "q", b"raw\x00bytes", "a@x.org "]
    child = Child("send", theirs)
    phases = []
    r = venn.receive(ours, connect=child.addr, progress=phases.append)
    assert r.matched == [1, 2, 3], "every position of a matched key, repeats included"
    assert (r.protocol, r.role, r.n_self, r.n_peer) == ("rr22", "receiver", 4, 4)
    assert r.count == 2 and r.bytes_sent > 0 and r.bytes_received > 0
    # One typed object for the output's kind; the flat attributes read it.
    assert isinstance(r.output, venn.Intersection), r.output
    assert (r.output.matched, r.output.count) == ([1, 2, 3], 2)
    assert "output=Intersection(matched=[1, 2, 3], count=2)" in repr(r), repr(r)
    assert phases, "progress heard of the phases"
    kind, sent = child.result()
    assert kind == "result" and sent["matched"] is None and sent["n_peer"] == 4


def test_text_keys_are_their_utf8_bytes():
    class Email(str):
        pass

    ours = ["", "café", Email("ß@x.org"), "日本", "plain"]
    theirs = ["café".encode(), "ß@x.org".encode(), "日本".encode("utf-16")]
    child = Child("send", theirs)
    r = venn.receive(ours, connect=child.addr, skip_empty=True)
    assert r.matched == [1, 2], "UTF-8 meets the same bytes; positions count the skipped key"
    assert child.result()[0] == "result"
    with pytest.raises(venn.UsageError, match="key at position 0: empty key"):
        venn.receive(ours, connect="127.0.0.1:1")
    with pytest.raises(UnicodeEncodeError):
        venn.receive(["ok", "lone \udc80 surrogate"], connect="127.0.0.1:1")


def test_normalisation_and_both():
    child = Child("receive", [" A@X.org", "c"], trim=True, lowercase=True, both=True)
    r = venn.send(["a@x.org", "B "], connect=child.addr, both=True, trim=True, lowercase=True)
    assert r.matched == [0]
    kind, got = child.result()
    assert kind == "result" and got["matched"] == [0]


def test_a_normalisation_mismatch_is_refused_naming_both_settings():
    child = Child("receive", [" A@X.org", "b", "C"], trim=True, lowercase=True)
    with pytest.raises(venn.PeerError, match="ours with no trim, no lowercase, 1 key column, "
                       "the peer's with trim, lowercase, 1 key column"):
        venn.send([" A@X.org", "b", "C"], connect=child.addr)
    kind, why = child.result()
    assert kind == "error" and "take their keys differently" in why, why
    # Allowed on both sides: the run goes ahead, and of the same three keys only the one
    # that normalising leaves alone matches.
    child = Child("receive", [" A@X.org", "b", "C"], trim=True, lowercase=True,
                  allow_key_mismatch=True)
    r = venn.send([" A@X.org", "b", "C"], connect=child.addr, allow_key_mismatch=True)
    assert r.count is None and isinstance(r.output, venn.NoOutput), r.output
    kind, got = child.result()
    assert kind == "result" and got["matched"] == [1], got


def test_missing_keys_are_empty_keys():
    nan = float("nan")
    child = Child("send", ["a", "c"])
    r = venn.receive(["a", None, nan, "c"], connect=child.addr, skip_empty=True)
    assert r.matched == [0, 3] and r.n_self == 2
    assert child.result()[0] == "result"
    with pytest.raises(venn.UsageError, match="key at position 1: empty key"):
        venn.receive(["a", None], connect="127.0.0.1:1")


def test_intersect_frame_returns_the_matched_rows():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"email": ["a", "b", "c", "d"], "n": [1, 2, 3, 4]})
    child = Child("send", ["d", "b", "x"])
    matched = venn.intersect_frame(frame, "email", connect=child.addr)
    assert matched["n"].tolist() == [2, 4]
    assert child.result()[0] == "result"
    # A blank cell (NaN, as pandas reads it from a CSV) is an empty key, not "nan".
    frame = pandas.DataFrame({"email": ["a", None, "nan", float("nan")], "n": [1, 2, 3, 4]})
    child = Child("send", ["nan", "a"])
    matched = venn.intersect_frame(frame, "email", connect=child.addr, skip_empty=True)
    assert matched["n"].tolist() == [1, 3]
    assert child.result()[0] == "result"


def test_threads_are_bounded_by_the_cores(capfd):
    """More threads than cores only take turns: a party runs on the cores it may use and
    warns, naming both numbers; no threads at all is refused at once."""
    with pytest.raises(venn.UsageError, match="threads must be at least 1"):
        venn.receive(["a"], connect="127.0.0.1:1", threads=0)
    asked = 8 * os.cpu_count()
    child = Child("send", ["a", "b"], threads=asked)
    assert venn.receive(["b", "c"], connect=child.addr, threads=asked).matched == [0]
    assert child.result()[0] == "result"
    err = capfd.readouterr().err
    assert f"{asked} threads asked for, but this process may use" in err, err


def test_a_misspelt_frame_column_names_the_columns():
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"email": ["a"], "n": [1]})
    with pytest.raises(venn.UsageError, match=r"no column named 'emial' \(columns: 'email', 'n'\)"):
        venn.intersect_frame(frame, "emial", connect="127.0.0.1:1")


def test_file_parties_read_other_delimiters_and_write_rows_with_them(tmp_path: Path):
    rows = 'name;email\n"Turing; Alan";alan@x.org\nAda;ada@x.org\nGrace;grace@x.org\n'
    (tmp_path / "r.csv").write_text(rows)
    out = tmp_path / "out.csv"
    child = Child("send", ["grace@x.org", "alan@x.org", "zed"])
    r = venn.receive_file(tmp_path / "r.csv", out, column="email", delimiter=";",
                          connect=child.addr)
    assert (r.rows_written, r.count, r.matched) == (2, 2, None)
    assert isinstance(r.output, venn.Intersection) and r.output.matched is None
    assert out.read_text() == 'name;email\n"Turing; Alan";alan@x.org\nGrace;grace@x.org\n'
    assert child.result()[0] == "result"
    (tmp_path / "s.tsv").write_text("n\tk\n1\tc\n2\tx\n")
    child = Child("receive", ["b", "c"])
    r = venn.send_file(tmp_path / "s.tsv", column="k", delimiter="\t", connect=child.addr)
    assert (r.rows_written, r.n_self) == (None, 2)
    assert child.result() == ("result", dict(matched=[1], count=1, n_self=2, n_peer=2))
    # Refused before the peer is reached: a misspelt column, a semicolon file read with
    # commas (the error says how to read it), a delimiter that cannot be one, file
    # options for keys in memory.
    nobody = dict(connect="127.0.0.1:1", timeout=1.0)
    with pytest.raises(venn.UsageError, match=r"no column named 'emial' \(columns: name, email\)"):
        venn.receive_file(tmp_path / "r.csv", out, column="emial", delimiter=";", **nobody)
    with pytest.raises(venn.UsageError, match="pass --delimiter ';'"):
        venn.receive_file(tmp_path / "r.csv", tmp_path / "o2.csv", column="email", **nobody)
    with pytest.raises(venn.UsageError, match=r"one of , ; \| and tab"):
        venn.send_file(tmp_path / "s.tsv", delimiter=":", **nobody)
    with pytest.raises(venn.UsageError, match="delimiter= is for a party on a file"):
        venn.send(["a"], delimiter=";", **nobody)  # type: ignore[call-arg]
    assert not (tmp_path / "o2.csv").exists()


def test_a_file_receiver_gets_the_senders_revealed_columns(tmp_path: Path):
    """The sender's revealed columns come with each matched row, in the receiver's
    delimiter (quoted only where that needs it)."""
    (tmp_path / "s.csv").write_text('email,segment\nada@x.org,"a, b"\nbob@x.org,"x;y"\n')
    (tmp_path / "r.csv").write_text("id;email\n1;bob@x.org\n2;zed\n3;ada@x.org\n")
    out = tmp_path / "out.csv"
    child = Child("send_file", str(tmp_path / "s.csv"), reveal_columns=["segment:8"])
    r = venn.receive_file(tmp_path / "r.csv", out, column="email", delimiter=";",
                          peer_columns="segment", connect=child.addr)
    assert r.rows_written == 2
    assert out.read_text() == 'id;email;segment\n1;bob@x.org;"x;y"\n3;ada@x.org;a, b\n'
    assert child.result()[0] == "result"


def test_file_parties_align_their_outputs_and_join_left(tmp_path: Path):
    """With both=True and align="inner" the two outputs list the matched rows in one
    order; join="left" flags every row."""
    (tmp_path / "s.csv").write_text("k,v\n" + "".join(f"k{i},s{i}\n" for i in range(30)))
    (tmp_path / "r.csv").write_text("k,w\n" + "".join(f"k{i},r{i}\n" for i in range(45, 10, -1)))
    so, ro = tmp_path / "so.csv", tmp_path / "ro.csv"
    child = Child("send_file", str(tmp_path / "s.csv"), output=str(so), both=True, align="inner")
    venn.receive_file(tmp_path / "r.csv", ro, both=True, align="inner", connect=child.addr)
    assert child.result()[0] == "result"
    keys = lambda p: [line.split(",")[0] for line in p.read_text().splitlines()[1:]]
    assert keys(so) == keys(ro) and sorted(keys(ro)) == sorted(f"k{i}" for i in range(11, 30))
    child = Child("send_file", str(tmp_path / "s.csv"))
    r = venn.receive_file(tmp_path / "r.csv", ro, join="left", connect=child.addr)
    assert child.result()[0] == "result"
    assert r.rows_written == 35 and ro.read_text().splitlines()[:2] == ["k,w,matched", "k45,r45,false"]


def test_keygen_writes_what_venn_keygen_writes(tmp_path: Path):
    fingerprint = venn.keygen(tmp_path / "k", days=30)
    assert len(fingerprint) == 64 and int(fingerprint, 16) >= 0
    assert (tmp_path / "k" / "venn.key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "k" / "venn.crt").read_text().startswith("-----BEGIN CERTIFICATE-----")
    with pytest.raises(venn.UsageError, match="never replaces"):
        venn.keygen(tmp_path / "k")
    with pytest.raises(venn.UsageError, match="1 to 36500 days"):
        venn.keygen(tmp_path / "other", days=0)


def test_errors_are_typed():
    with pytest.raises(venn.UsageError, match="protocol"):
        venn.receive(["a"], connect="127.0.0.1:1", protocol="nope")
    with pytest.raises(venn.UsageError, match="INSECURE"):
        venn.receive(["a"], connect="127.0.0.1:1", protocol="naive")
    with pytest.raises(venn.UsageError, match="needs TLS"):
        venn.receive(["a"], connect="192.0.2.1:7000")
    with pytest.raises(venn.UsageError):
        venn.receive(["a"], connect="127.0.0.1:1", listen="127.0.0.1:0")
    with pytest.raises(TypeError):
        venn.receive("abc", connect="127.0.0.1:1")
    with pytest.raises(TypeError):
        venn.receive([1, 2], connect="127.0.0.1:1")
    with pytest.raises(TypeError, match="protocl"):
        venn.receive(["a"], connect="127.0.0.1:1", protocl="kkrt16")  # type: ignore[call-arg]
    # Bounded as the command line's (a year), not left to panic converting it.
    with pytest.raises(venn.UsageError, match="timeout is a positive number"):
        venn.receive(["a"], connect="127.0.0.1:1", timeout=1e30)
    with pytest.raises(TypeError, match="threads"):
        venn.receive(["a"], connect="127.0.0.1:1", threads="two")  # type: ignore[arg-type]
    # Nobody listens: the connection is retried until the timeout.
    with pytest.raises(venn.NetworkError):
        venn.receive(["a"], connect="127.0.0.1:9", timeout=1.0)
    assert issubclass(venn.CheatingDetected, venn.PeerError)
    assert issubclass(venn.PeerError, venn.VennError)


def test_a_cpu_level_that_is_none_stops_the_import():
    env = dict(os.environ, VENN_CPU="avx-512")
    run = subprocess.run([sys.executable, "-c", "import venn"], env=env, capture_output=True,
                         text=True)
    assert run.returncode != 0
    assert 'VENN_CPU="avx-512" is not a level' in run.stderr, run.stderr
    env["VENN_CPU"] = "portable"
    subprocess.run([sys.executable, "-c", "import venn"], env=env, check=True)


def test_the_gil_is_released_while_a_party_runs():
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    t = threading.Thread(target=count)
    t.start()
    # A party waiting for a peer that never comes: a second of the GIL held would show.
    with pytest.raises(venn.NetworkError):
        venn.receive(["a"], listen="127.0.0.1:0", timeout=1.0)
    stop.set()
    t.join()
    assert ticks > 200, ticks


def test_protocols_are_listed():
    names = {name for name, _, _ in venn.protocols()}
    assert {"kkrt16", "rr17-bloom", "naive"} <= names


@pytest.mark.skipif(VENN_BIN is None, reason="no venn binary (set VENN_BIN)")
def test_a_python_party_runs_against_the_command_line_over_tls(tmp_path: Path):
    # The Python side's key and certificate from venn.keygen, the CLI's from venn keygen.
    fps = {"py": venn.keygen(tmp_path / "py")}
    out = subprocess.run(
        [VENN_BIN, "keygen", "--out", str(tmp_path / "cli")],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    fps["cli"] = out.stdout.strip()
    rows = "email\n" + "".join(f"user{i}@x.org\n" for i in range(0, 300, 3))
    (tmp_path / "cli.csv").write_text(rows)
    bound = threading.Event()
    addr = {}

    def on_listening(a):
        addr["a"] = a
        bound.set()

    result = {}

    def party():
        result["r"] = venn.receive(
            [f"user{i}@x.org" for i in range(200)],
            listen="127.0.0.1:0",
            on_listening=on_listening,
            tls_cert=tmp_path / "py" / "venn.crt",
            tls_key=tmp_path / "py" / "venn.key",
            peer_fingerprint=fps["cli"],
        )

    t = threading.Thread(target=party)
    t.start()
    assert bound.wait(30)
    subprocess.run(
        [VENN_BIN, "send", "--connect", addr["a"], "--input", str(tmp_path / "cli.csv"),
         "--column", "email",
         "--tls-cert", str(tmp_path / "cli" / "venn.crt"),
         "--tls-key", str(tmp_path / "cli" / "venn.key"),
         "--peer-fingerprint", fps["py"]],
        check=True, capture_output=True,
    )  # fmt: skip
    t.join(60)
    assert result["r"].matched == list(range(0, 200, 3))


@pytest.mark.parametrize("protocol", ["rr22-sum", "psww18-sum"])
def test_a_sum_over_the_intersection(protocol):
    child = Child("send", ["a", "b", "c", "d"], values=[5, 7, 11, 13], protocol=protocol)
    r = venn.receive(["b", "d", "x"], connect=child.addr, protocol=protocol)
    assert (r.count, r.sum, r.sums, r.matched) == (2, 20, [20], None)
    assert isinstance(r.output, venn.IntersectionSum)
    assert (r.output.count, r.output.sum, r.output.sums) == (2, 20, [20])
    assert child.result()[0] == "result"
    with pytest.raises(venn.UsageError, match="the same number of values for every key"):
        venn.send(["a"], values=[1, 2], connect="127.0.0.1:1", protocol=protocol)


def test_sums_of_several_value_columns():
    values = [(5, 1), (7, 2), (11, 3), (13, 4)]
    child = Child("send", ["a", "b", "c", "d"], values=values, protocol="rr22-sum")
    r = venn.receive(["b", "d", "x"], connect=child.addr, protocol="rr22-sum")
    assert (r.count, r.sum, r.sums) == (2, 20, [20, 6])
    assert child.result()[0] == "result"
    with pytest.raises(ValueError, match="one sequence of 2 integers per item"):
        venn.send(["a", "b"], values=[(1, 2), (3,)], connect="127.0.0.1:1", protocol="rr22-sum")
    with pytest.raises(venn.UsageError, match="one value column"):
        venn.send(["a"], values=[(1, 2)], connect="127.0.0.1:1", protocol="psww18-sum")


@pytest.mark.parametrize("protocol", ["rr22", "rr22-m"])
def test_keys_in_memory_reveal_columns_and_get_the_peers(protocol):
    """Each side's revealed columns reach the other's matched items (with ``both``), a
    pair for each of the peer's items of the key, as pandas.merge pairs rows."""
    pandas = pytest.importorskip("pandas")
    theirs = ["A@x ", "b", "a@x", "c"]
    reveal = {"segment": ["s1", "sb", "s2", "sc"], "score:8": [b"\x00\xff", "7", "8", "é"]}
    ours = ["x", "b", " a@X", "b", "zz"]
    tags = {"tag": [f"t{i}" for i in range(5)]}
    norm = dict(trim=True, lowercase=True, both=True, protocol=protocol)
    child = Child("send", theirs, reveal=reveal, peer_columns=["tag"], **norm)
    r = venn.receive(ours, connect=child.addr, reveal=tags, peer_columns=["segment", "score"], **norm)

    def merged(mine, peer, columns):
        key = [k.strip().lower() for k in mine], [k.strip().lower() for k in peer]
        as_bytes = lambda v: v if isinstance(v, bytes) else v.encode()  # noqa: E731
        return [
            (i, [as_bytes(column[j]) for column in columns])
            for i, k in enumerate(key[0])
            for j, p in enumerate(key[1])
            if k == p
        ]

    assert r.matched == [1, 2, 3]
    assert r.output.peer_rows == merged(ours, theirs, list(reveal.values()))
    assert r.output.peer_rows[1] == (2, [b"s1", b"\x00\xff"])
    # Made once: the same objects at every reading.
    assert r.output is r.output and r.output.peer_rows is r.output.peer_rows
    kind, got = child.result()
    assert kind == "result", got
    assert got["peer_rows"] == merged(theirs, ours, list(tags.values()))
    plain = Child("send", ["q"])
    assert venn.receive(["q"], connect=plain.addr).output.peer_rows is None
    assert plain.result()[0] == "result"

    def refused(match: str, **options):
        with pytest.raises(venn.UsageError, match=match):
            venn.send(["a", "b"], connect="127.0.0.1:1", timeout=1, **options)

    # A key longer than the csv module's default field limit joins as any other.
    # (The sender in a thread: a child's command line would not hold the key.)
    long = "k" * 140_000
    frame = pandas.DataFrame({"email": [long, "b"], "n": [1, 2]})
    bound: queue.Queue[str] = queue.Queue()
    sender = threading.Thread(
        target=venn.send,
        args=([long, "z"],),
        kwargs=dict(reveal={"seg": ["s1", "s2"]}, listen="127.0.0.1:0", on_listening=bound.put),
    )
    sender.start()
    matched = venn.intersect_frame(frame, "email", connect=bound.get(timeout=30), peer_columns="seg")
    sender.join()
    assert (matched["n"].tolist(), matched["seg"].tolist()) == ([1], ["s1"])

    refused("a value for every key", reveal={"s": ["x"]})
    with pytest.raises(TypeError, match="one per item, not one value"):
        venn.send(["a", "b"], reveal={"s": "xy"}, connect="127.0.0.1:1", timeout=1)
    refused("cannot carry", reveal={"s": ["x", "y"]}, protocol="kkrt16")
    refused("without --both", peer_columns=["s"])
    refused("width of the column 's'", reveal={"s:0": ["x", "y"]})
    with pytest.raises(venn.UsageError, match="only with --both"):
        venn.receive(["a"], reveal={"s": ["x"]}, connect="127.0.0.1:1", timeout=1)


def test_malicious_vole_psi_gives_the_sender_the_intersection_by_tags():
    child = Child("send", ["a", "b", "c", "d"], protocol="rr22-m", both=True)
    r = venn.receive(["b", "d", "x"], connect=child.addr, protocol="rr22-m", both=True)
    assert r.matched == [0, 1]
    assert child.result() == ("result", dict(matched=[1, 3], count=2, n_self=4, n_peer=3))


def test_protocol_options_reach_the_protocol():
    child = Child("send", ["7", "12", "40000"], protocol="rr17-de-sm", sigma=32)
    r = venn.receive(["12", "5", "40000"], connect=child.addr, protocol="rr17-de-sm", sigma=32)
    assert r.matched == [0, 2]
    assert child.result()[0] == "result"
    with pytest.raises(venn.UsageError, match="sigma"):
        venn.receive(["1"], connect="127.0.0.1:1", protocol="rr17-de-sm")
    with pytest.raises(venn.UsageError, match="wan"):
        venn.receive(["1"], connect="127.0.0.1:1", protocol="rr17-bloom", bins="wide")
    with pytest.raises(venn.UsageError, match="dealer"):
        venn.receive(["1"], connect="127.0.0.1:1", protocol="kbm23", offline="dealer")


@pytest.mark.skipif(VENN_BIN is None, reason="no venn binary (set VENN_BIN)")
def test_defaults_are_the_command_lines():
    """Every default the two front ends share is the same (Python's
    max_peer_items was 2^31, the CLI's 2^24): a party made with no options runs with what
    ``venn send --help`` says, and with half of physical memory as its memory cap."""
    import re

    help_text = subprocess.run(
        [VENN_BIN, "send", "--help"], capture_output=True, text=True, check=True
    ).stdout
    flags = {"protocol": "--protocol", "threads": "--threads", "timeout": "--timeout",
             "max_peer_items": "--max-peer-items"}
    cli = {}
    for name, flag in flags.items():
        # The flag's own help only: it ends where the next option begins.
        found = re.search(re.escape(flag) + r" <[A-Z_]+>(?:(?!\n\s+-).)*?\[default: ([^\]]+)\]",
                          help_text, re.S)
        assert found, f"{flag} has no default in `venn send --help`"
        cli[name] = found.group(1)
    settings = venn._venn.Party("send", [b"x"], listen="127.0.0.1:0").settings
    assert settings.protocol == cli["protocol"]
    assert settings.threads == int(cli["threads"])
    assert settings.timeout == float(cli["timeout"])
    assert settings.max_peer_items == int(cli["max_peer_items"])
    mem_total_kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())[1])
    assert settings.max_memory == mem_total_kib * 1024 // 2


def test_a_count_and_a_threshold_come_as_their_own_objects():
    child = Child("send", ["a", "b", "c"], protocol="rr22-ca")
    r = venn.receive(["b", "c", "x"], connect=child.addr, protocol="rr22-ca")
    assert isinstance(r.output, venn.IntersectionSize) and r.output.count == 2, r.output
    assert (r.count, r.matched, r.reached) == (2, None, None)
    assert child.result()[0] == "result"
    child = Child("send", ["a", "b", "c"], protocol="rr22-ca", threshold=3)
    r = venn.receive(["b", "c", "x"], connect=child.addr, protocol="rr22-ca", threshold=3)
    assert isinstance(r.output, venn.Threshold), r.output
    assert (r.output.threshold, r.output.reached, r.reached, r.count) == (3, False, False, None)
    assert repr(r.output) == "Threshold(threshold=3, reached=False)"
    assert child.result()[0] == "result"
