"""Joins of tables against their oracle, ``pandas.merge``: ``venn.intersect_frame`` on
generated tables with messy keys (case, surrounding white space, empty cells, unicode,
commas, quotes and line breaks, keys repeated on both sides), both parties in this process
(the other one in a thread), every kind of join; and the command line's joins over TLS,
both parties ``venn`` processes, against ``pandas.merge`` of their input files."""

from __future__ import annotations

import csv
import math
import os
import queue
import random
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

import venn

pandas = pytest.importorskip("pandas")
from pandas.testing import assert_frame_equal  # noqa: E402

VENN_BIN = os.environ.get("VENN_BIN") or shutil.which("venn")

#: The keys both tables draw from, each written in several ways (`_spelling`).
KEYS = ["ada@x.org", "Bob@Y.org", "café", "ÉCOLE", "日本語", "a,b", 'say "hi"', "two\nlines",
        "ß", "x y", "Ünïcödé", "tab\tin", "semi;colon", "cr\rin", "plain"]  # fmt: skip
#: Text for the columns that travel to the peer, some of it needing quotes in a CSV.
TEXTS = ["sports, outdoor", 'say "hi"', "ünïcode", "two\nlines", "plain", "a;b", "日本"]


def _spelling(rng: random.Random, key: str) -> str:
    """``key`` as it is, or in another case, or with white space around it."""
    return rng.choice([key, key, key.upper(), key.lower(), f"  {key}", f"{key}\t", f"\u3000{key} "])


def tables(rng: random.Random, rows: int, empties: bool) -> tuple[pandas.DataFrame, pandas.DataFrame]:
    """Mine (an index of its own, columns of several types) and theirs (text columns to
    reveal), keyed by ``email``, each with keys the other lacks; with ``empties``, some
    keys missing, empty or blank."""

    def keys(n: int, drawn_from: list[str]) -> list:
        out = [_spelling(rng, rng.choice(drawn_from)) for _ in range(n)]
        for i in rng.sample(range(n), 4) if empties else []:
            out[i] = rng.choice([None, "", "  ", math.nan])
        return out

    mine = pandas.DataFrame(
        {
            "email": keys(rows, KEYS[3:]),
            "n": range(rows),
            "w": [math.nan if i % 5 == 0 else i / 4 for i in range(rows)],
            "note": [f"{rng.choice(TEXTS)} {i}" for i in range(rows)],
        },
        index=range(100, 100 + rows),
    )
    theirs_rows = rows * 3 // 4
    theirs = pandas.DataFrame(
        {
            "email": keys(theirs_rows, KEYS[:-3]),
            "seg": ["" if i % 7 == 0 else f"{rng.choice(TEXTS)} {i}" for i in range(theirs_rows)],
            "score": [str(rng.randrange(1000)) for _ in range(theirs_rows)],
        }
    )
    return mine, theirs


def _normalised(value, trim: bool, lowercase: bool) -> str:
    """A key as both parties compare it (missing: empty)."""
    if not isinstance(value, str):
        return ""
    value = value.strip() if trim else value
    return value.lower() if lowercase else value


def oracle(mine, theirs, how: str, peer_columns: list[str], trim=False, lowercase=False,
           skip_empty=False) -> pandas.DataFrame:  # fmt: skip
    """``pandas.merge(mine, theirs[[key, *peer_columns]], on=key, how=how)`` on the keys as
    normalised (a ``difference``: the rows of mine whose key theirs lacks); rows with an
    empty key left out on both sides with ``skip_empty``. Without peer columns a repeated
    key of theirs is one key (its count is not revealed)."""
    m = mine.assign(_key=[_normalised(v, trim, lowercase) for v in mine["email"]])
    t = theirs.assign(_key=[_normalised(v, trim, lowercase) for v in theirs["email"]])
    if skip_empty:
        m, t = m[m["_key"] != ""], t[t["_key"] != ""]
    if how == "difference":
        return m[~m["_key"].isin(t["_key"])].drop(columns="_key")
    right = t[["_key", *peer_columns]] if peer_columns else t[["_key"]].drop_duplicates()
    return pandas.merge(m, right, on="_key", how=how).drop(columns="_key")


def in_thread(run):
    """Runs ``run(listen=…, on_listening=…)`` in a thread: the address it listens on, and a
    function that waits for its result (raising its error)."""
    bound: queue.Queue = queue.Queue()
    box = {}

    def party():
        try:
            box["result"] = run(listen="127.0.0.1:0", on_listening=bound.put)
        except BaseException as e:  # handed to the test's thread
            box["error"] = e
            bound.put(None)

    thread = threading.Thread(target=party, daemon=True)
    thread.start()

    def result():
        thread.join(60)
        if "error" in box:
            raise box["error"]
        return box["result"]

    addr = bound.get(timeout=30)
    if addr is None:
        result()
    return addr, result


NORMALISED = dict(trim=True, lowercase=True, skip_empty=True)


@pytest.mark.parametrize("normalise", [False, True], ids=["as-is", "normalised"])
@pytest.mark.parametrize("how, columns", [("inner", False), ("inner", True), ("left", False),
                                          ("left", True), ("difference", False)])  # fmt: skip
def test_a_receivers_join_is_pandas_merge(tmp_path: Path, how: str, columns: bool, normalise: bool):
    """The receiver's frame joined with a sender's CSV file (revealing two columns, one
    with a width, where the join takes them: a difference has none), as pandas merges the
    two tables."""
    rng = random.Random(f"{how} {columns} {normalise}")
    mine, theirs = tables(rng, 80, empties=normalise)
    options = NORMALISED if normalise else {}
    theirs.to_csv(tmp_path / "theirs.csv", index=False, quoting=csv.QUOTE_ALL)
    addr, sent = in_thread(
        lambda **link: venn.send_file(tmp_path / "theirs.csv", column="email",
                                      reveal_columns=["seg", "score:8"] if columns else None,
                                      **options, **link)
    )  # fmt: skip
    peer = ["seg", "score"] if columns else []
    got = venn.intersect_frame(mine, "email", how=how, peer_columns=peer, connect=addr, **options)
    sent()
    assert_frame_equal(got, oracle(mine, theirs, how, peer, **options))
    for kind in ("inner", "difference"):
        assert len(oracle(mine, theirs, kind, [], **options)) > 10, f"the data's {kind} is not small"


@pytest.mark.parametrize("mine_how, theirs_how",
                         [("inner", "left"), ("left", "difference"), ("difference", "inner")])  # fmt: skip
def test_with_both_each_side_gets_its_own_join(mine_how: str, theirs_how: str):
    """Both parties frames with ``both=True``, each revealing a column to the other unless
    the other's join is a difference: each gets the merge of its table with the other's."""
    rng = random.Random(f"both {mine_how} {theirs_how}")
    mine, theirs = tables(rng, 60, empties=True)
    mine_peer = [] if mine_how == "difference" else ["seg"]
    theirs_peer = [] if theirs_how == "difference" else ["note"]
    addr, sent = in_thread(
        lambda **link: venn.intersect_frame(theirs, "email", role="send", how=theirs_how,
                                            reveal_columns=mine_peer, peer_columns=theirs_peer,
                                            both=True, **NORMALISED, **link)
    )  # fmt: skip
    got = venn.intersect_frame(mine, "email", how=mine_how, peer_columns=mine_peer,
                               reveal_columns=[f"{c}:64" for c in theirs_peer], connect=addr,
                               both=True, **NORMALISED)  # fmt: skip
    assert_frame_equal(got, oracle(mine, theirs, mine_how, mine_peer, **NORMALISED))
    assert_frame_equal(sent(), oracle(theirs, mine, theirs_how, theirs_peer, **NORMALISED))


def test_a_pyarrow_table_gives_a_pyarrow_table(tmp_path: Path):
    """A Table's own columns keep their Arrow types; the peer's are strings, null where a
    left join's row did not match."""
    pyarrow = pytest.importorskip("pyarrow")
    mine, theirs = tables(random.Random("arrow"), 60, empties=False)
    table = pyarrow.Table.from_pandas(mine, preserve_index=False)
    theirs.to_csv(tmp_path / "theirs.csv", index=False, quoting=csv.QUOTE_ALL)
    for how in ["left", "difference"]:
        addr, sent = in_thread(
            lambda **link: venn.send_file(tmp_path / "theirs.csv", column="email",
                                          reveal_columns=None if how == "difference" else "seg",
                                          **link)
        )  # fmt: skip
        peer = [] if how == "difference" else ["seg"]
        got = venn.intersect_frame(table, "email", how=how, peer_columns=peer, connect=addr)
        sent()
        assert isinstance(got, pyarrow.Table)
        assert got.select(list(mine.columns)).schema == table.schema
        want = oracle(mine.reset_index(drop=True), theirs, how, peer)
        assert got.column_names == list(want.columns)
        if peer:
            assert got.schema.field("seg").type == pyarrow.string()
            assert got.column("seg").null_count == (want["seg"].isna()).sum() > 0
        assert got.to_pydict() == pyarrow.Table.from_pandas(want, preserve_index=False).to_pydict()


def test_the_rows_go_through_a_private_folder_removed_after_the_run(tmp_path: Path, monkeypatch):
    """The frame's rows are written to a folder only its owner may enter, which is gone
    when the run ends, as after one refused."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    frame = pandas.DataFrame({"email": ["a", "b,c", 'd"'], "n": [1, 2, 3]})
    seen = {}
    peer = {}

    def listening(addr: str):
        (folder,) = tmp_path.glob("venn-frame-*")
        seen["mode"] = folder.stat().st_mode & 0o777
        seen["files"] = sorted(p.name for p in folder.iterdir())
        peer["thread"] = threading.Thread(target=lambda: venn.send(['d"', "b,c"], connect=addr))
        peer["thread"].start()

    got = venn.intersect_frame(frame, "email", listen="127.0.0.1:0", on_listening=listening)
    peer["thread"].join(30)
    assert got["n"].tolist() == [2, 3]
    assert seen == {"mode": 0o700, "files": ["rows.csv"]}
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(venn.UsageError, match="empty key"):
        venn.intersect_frame(frame.assign(email=["a", None, "b"]), "email", connect="127.0.0.1:1")
    assert list(tmp_path.iterdir()) == []


def test_frame_refusals():
    """What cannot work is refused before the peer is reached, naming what to change: an
    empty key names its row's position (past a key with a line break, so not its line)."""
    frame = pandas.DataFrame({"email": ["a", "two\nlines", "b", None, "c"], "seg": [1, 2, 3, 4, 5]})
    nobody = dict(connect="127.0.0.1:1", timeout=1.0)
    with pytest.raises(venn.UsageError, match=r"^the row at position 3: empty key \(--skip-empty"):
        venn.intersect_frame(frame, "email", **nobody)
    with pytest.raises(venn.UsageError, match="the peer's column 'seg' has the name of a column"):
        venn.intersect_frame(frame, "email", peer_columns="seg", **nobody)
    with pytest.raises(venn.UsageError, match="a sender learns no rows without both=True"):
        venn.intersect_frame(frame, "email", role="send", reveal_columns="seg", **nobody)
    with pytest.raises(venn.UsageError, match="how is one of inner, left, difference, not 'outer'"):
        venn.intersect_frame(frame, "email", how="outer", **nobody)
    with pytest.raises(venn.UsageError, match="no --peer-columns to add"):
        venn.intersect_frame(frame, "email", how="difference", peer_columns="segment", **nobody)
    with pytest.raises(venn.UsageError, match=r"no column named 'sgment' \(columns: 'email', 'seg'\)"):
        venn.intersect_frame(frame, "email", reveal_columns="sgment:8", both=True, **nobody)
    with pytest.raises(TypeError, match="a pandas DataFrame or a pyarrow Table, not dict"):
        venn.intersect_frame({"email": ["a"]}, "email", **nobody)  # type: ignore[type-var]


#: Phone numbers for ``match_any``'s second identifier, drawn from overlapping pools;
#: "café" is one of the e-mails too, and must match no e-mail.
PHONES = ["+1 555 0100", "555-0101", "0102", " 0103 ", "0104", "0105", "0106", "0107", "café"]


def any_oracle(mine, theirs, identifiers: list[str], how: str, peer_columns: list[str],
               trim=True, lowercase=True) -> pandas.DataFrame:  # fmt: skip
    """``match_any`` row by row: a row of mine matches when the peer has one of its
    identifiers under the same column (as normalised; empty ones left out, a row with none
    skipped); it is output once for each of the peer's rows of the first that matched
    (``pandas.merge`` on that column), with ``matched_on`` naming all that matched."""
    norm = {c: [_normalised(v, trim, lowercase) for v in theirs[c]] for c in identifiers}
    present = {c: {v for v in norm[c] if v} for c in identifiers}
    rows, on, peer = [], [], {c: [] for c in peer_columns}
    for position in range(len(mine)):
        values = [_normalised(mine[c].iloc[position], trim, lowercase) for c in identifiers]
        if not any(values):
            continue
        hits = [c for c, v in zip(identifiers, values) if v and v in present[c]]
        if (how == "difference" and hits) or (how == "inner" and not hits):
            continue
        first = hits[0] if hits else None
        value = values[identifiers.index(first)] if hits else None
        theirs_rows = [j for j, v in enumerate(norm[first]) if v == value] if hits else [None]
        for j in theirs_rows if peer_columns else theirs_rows[:1]:
            rows.append(position)
            on.append("|".join(hits) if hits else math.nan)
            for c in peer_columns:
                peer[c].append(math.nan if j is None else theirs[c].iloc[j])
    out = mine.iloc[rows]
    if how == "difference":
        return out
    text = pandas.Series([""]).dtype
    out = out.reset_index(drop=True)
    for name, values in {"matched_on": on, **peer}.items():
        out[name] = pandas.Series(values, dtype=text)
    return out


@pytest.mark.parametrize("how, columns", [("inner", False), ("inner", True), ("left", True),
                                          ("difference", False)])  # fmt: skip
def test_match_any_joins_a_row_on_its_first_matched_identifier(tmp_path: Path, how: str, columns: bool):
    """``match_any=["email", "phone"]`` against a sender's file matched on the same two
    columns (revealing a column where the join takes it), as the row-by-row oracle above
    joins them: each row once whichever identifiers matched, an e-mail never matching a
    phone number, missing identifiers left out."""
    rng = random.Random(f"any {how} {columns}")
    mine, theirs = tables(rng, 80, empties=True)
    mine = mine.assign(phone=[rng.choice([*PHONES[2:], None, ""]) for _ in range(len(mine))])
    theirs = theirs.assign(phone=[rng.choice([*PHONES[:-2], None]) for _ in range(len(theirs))])
    theirs.to_csv(tmp_path / "theirs.csv", index=False, quoting=csv.QUOTE_ALL)
    identifiers = ["email", "phone"]
    addr, sent = in_thread(
        lambda **link: venn.send_file(tmp_path / "theirs.csv", match_any=identifiers,
                                      reveal_columns="seg" if columns else None,
                                      **NORMALISED, **link)
    )  # fmt: skip
    peer = ["seg"] if columns else []
    got = venn.intersect_frame(mine, match_any=identifiers, how=how, peer_columns=peer,
                               connect=addr, **NORMALISED)  # fmt: skip
    sent()
    want = any_oracle(mine, theirs, identifiers, how, peer)
    assert_frame_equal(got, want)
    if how != "difference":
        on = set(want["matched_on"].dropna())
        assert {"email", "phone", "email|phone"} <= on, f"every way of matching: {on}"
    with pytest.raises(venn.UsageError, match="give column= .* or match_any="):
        venn.intersect_frame(mine, "email", match_any=identifiers, connect="127.0.0.1:1")


@pytest.mark.skipif(VENN_BIN is None, reason="no venn binary (set VENN_BIN)")
@pytest.mark.parametrize("how", ["inner", "left"])
def test_the_command_lines_join_over_tls_is_pandas_merge(tmp_path: Path, how: str):
    """``venn receive --peer-columns`` against ``venn send --reveal-columns``, over TLS, on
    CSV files with keys repeated on both sides: the receiver's output is pandas' merge of
    the two files (a left join's ``matched`` column before the sender's, which are empty
    where it is false)."""
    mine, theirs = tables(random.Random(f"cli {how}"), 80, empties=False)
    mine.to_csv(tmp_path / "mine.csv", index=False, quoting=csv.QUOTE_ALL)
    theirs.to_csv(tmp_path / "theirs.csv", index=False, quoting=csv.QUOTE_ALL)
    fingerprint = {}
    for side in ("r", "s"):
        made = subprocess.run([VENN_BIN, "keygen", "--out", str(tmp_path / side)],
                              check=True, capture_output=True, text=True)  # fmt: skip
        fingerprint[side] = made.stdout.strip()

    def tls(side: str, peer: str) -> list[str]:
        return ["--tls-cert", str(tmp_path / side / "venn.crt"),
                "--tls-key", str(tmp_path / side / "venn.key"),
                "--peer-fingerprint", fingerprint[peer]]  # fmt: skip

    out = tmp_path / "joined.csv"
    receiver = subprocess.Popen(
        [VENN_BIN, "receive", "--input", str(tmp_path / "mine.csv"), "--column", "email",
         "--peer-columns", "seg,score", "--join", how, "--output", str(out),
         "--listen", "127.0.0.1:0", *tls("r", "s")],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    before = ""
    while not (line := receiver.stderr.readline()).startswith("venn: listening on "):
        assert line, f"venn receive ended before listening: {before}"
        before += line
    addr = line.split()[-1]
    sender = subprocess.run(
        [VENN_BIN, "send", "--input", str(tmp_path / "theirs.csv"), "--column", "email",
         "--reveal-columns", "seg,score:8", "--connect", addr, *tls("s", "r")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    rest = receiver.communicate(timeout=60)[1]
    assert sender.returncode == 0, sender.stderr
    assert receiver.returncode == 0, before + rest

    def read(path: Path) -> pandas.DataFrame:
        return pandas.read_csv(path, dtype=str, keep_default_na=False)

    m, t = read(tmp_path / "mine.csv"), read(tmp_path / "theirs.csv")
    want = pandas.merge(m, t[["email", "seg", "score"]], on="email", how=how, indicator=True)
    matched = want.pop("_merge") == "both"
    assert matched.sum() > 20 and (how == "inner" or (~matched).sum() > 5), "matches and misses"
    if how == "left":
        want = want.fillna({"seg": "", "score": ""})
        want.insert(len(m.columns), "matched", matched.map({True: "true", False: "false"}))
    assert_frame_equal(read(out), want)
