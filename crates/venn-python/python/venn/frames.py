"""Joins of a table in memory — a pandas DataFrame or a pyarrow Table — with a peer's rows:
:func:`intersect_frame`, the relational join ``pandas.merge`` computes, by PSI.

The table's key column, the columns it reveals and each row's position are written to a
CSV file in a private temporary directory, a file party runs on it
(:func:`venn.send_file` or :func:`venn.receive_file`), and the rows it writes are read
back as positions into the table, with the peer's values. The table's own columns are
then taken from the table itself, so they keep their values and types exactly; the
directory (its owner's only) is removed when the run ends, on an error too.
"""

from __future__ import annotations

import bisect
import csv
import math
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

from . import Intersection, PartyOptions, UsageError, VennError, _column, _names, receive_file, send_file

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

    import pandas
    import pyarrow

    Frame = TypeVar("Frame", pandas.DataFrame, pyarrow.Table)

__all__ = ["intersect_frame"]

#: The kinds of join, as ``how`` names them (the command line's ``--join``).
HOW = ("inner", "left", "difference")

#: The column ``match_any`` adds: the names of the identifiers that matched.
MATCHED_ON = "matched_on"

#: An error about a line of the file a party read, as the native party words it.
_LINE_ERROR = re.compile(r"input line (\d+): (.*)", re.S)


def intersect_frame(
    frame: Frame,
    column: Optional[str] = None,
    *,
    match_any: Union[str, Sequence[str], None] = None,
    role: str = "receive",
    how: str = "inner",
    peer_columns: Union[str, Sequence[str], None] = None,
    reveal_columns: Union[str, Sequence[str], None] = None,
    **options: Unpack[PartyOptions],
) -> Frame:
    """Join ``frame`` (a pandas DataFrame, or a pyarrow Table) with the peer's rows on the
    key in ``column``, by PSI: the result is what ``pandas.merge(frame, theirs[[column,
    *peer_columns]], on=column, how=how)`` gives, where ``theirs`` is the peer's table,
    after both sides' keys are normalised alike (``trim``, ``lowercase``).

    - ``how="inner"`` (default): each row whose key the peer holds, once for each of the
      peer's rows of that key (many-to-many), with the peer's ``peer_columns`` appended;
      without ``peer_columns`` each matched row once (a repeated key of the peer's is one
      item, whose count is not revealed).
    - ``how="left"``: every row; the peer's columns missing (``NaN``, Arrow's null) where
      the peer lacks the key. There is no ``matched`` column (a pandas left merge has none):
      a matched row's peer values are never missing.
    - ``how="difference"``: the rows whose key the peer lacks, as
      ``frame[~frame[column].isin(theirs[column])]`` selects them (no ``peer_columns``:
      there are none to add, and a peer that reveals columns is refused).

    Rows are in the frame's order, each repeated for the peer's rows of its key in the
    peer's order — the order ``pandas.merge`` gives for ``inner`` and ``left`` ("preserve
    the order of the left keys"). The frame's own columns keep their names, order, values
    and types; the peer's are text (pandas' default string type; Arrow's ``string``), named
    as in ``peer_columns``, which must not name a column of the frame. ``inner`` and ``left``
    results are numbered afresh (0, 1, …) as a merge's are; a ``difference`` keeps the
    frame's index. A pyarrow Table gives a pyarrow Table (pyarrow is not needed otherwise).

    Keys are taken as they are: text, bytes, anything else by ``str()``; a missing value
    (``None``, ``NaN``, pandas' ``NA``, Arrow's null) is an empty key, an error naming the
    row's position unless ``skip_empty=True``, which leaves such rows out of every kind of
    join. ``reveal_columns`` (names, each ``"name:WIDTH"`` to pad its values to WIDTH bytes)
    send those columns' values, as text (missing values empty), to the peer with each
    matched key, for its ``peer_columns`` (protocols ``rr22`` and ``rr22-m``).

    ``match_any=["email", "phone"]`` (2 to 16 columns, instead of ``column``) matches a
    row when any one of those columns equals the same column of a peer's row (an e-mail
    only to an e-mail; missing values are left out, and a row missing all of them is an
    empty key). Each row is then output once (for each of the peer's rows of the first of
    its columns, in ``match_any`` order, that matched, where ``peer_columns`` are asked),
    with a ``matched_on`` column (text: the names of the columns that matched, joined by
    ``|``; missing on a ``left`` join's unmatched rows; none for a ``difference``): what
    ``pandas.merge`` on that first column gives, row by row.

    ``role="receive"`` (default) runs the receiver: it reveals columns only with
    ``both=True``. ``role="send"`` runs the sender, which learns the intersection only with
    ``both=True`` (on both sides), so it is refused without it before the peer is reached:
    a sender that only contributes runs :func:`venn.send` on the keys, or
    :func:`venn.send_file` on a file when it reveals columns. ``options`` as for
    :func:`venn.receive`; a protocol whose party learns no rows (a count, a sum) is a
    :class:`UsageError` after the run.
    """
    if role not in ("send", "receive"):
        raise UsageError("role is 'send' or 'receive'")
    if how not in HOW:
        raise UsageError(f"how is one of {', '.join(HOW)}, not {how!r}")
    if role == "send" and not options.get("both"):
        raise UsageError(
            "a sender learns no rows without both=True (on both sides); to only contribute, "
            "run venn.send on the keys (venn.send_file on a file to reveal columns)"
        )
    table = _table(frame)
    identifiers = _names(match_any)
    if (column is None) == (match_any is None):
        raise UsageError("give column= (the key) or match_any= (several identifiers), one of them")
    key_names = identifiers or [column]
    keys = [table.column(name) for name in key_names]
    revealed = [_revealed_name(c) for c in _names(reveal_columns)]
    extra = [name for name in revealed if name not in identifiers]
    extra_values = [table.column(name) for name in extra]
    asked = _names(peer_columns)
    matched_on = bool(identifiers) and how != "difference"
    added = ([MATCHED_ON] if matched_on else []) + asked
    for name in added:
        if name in table.names():
            whose = "the peer's column" if name in asked else "the column match_any adds,"
            raise UsageError(f"{whose} {name!r} has the name of a column of the frame")
    with tempfile.TemporaryDirectory(prefix="venn-frame-") as folder:
        rows_in, rows_out = Path(folder) / "rows.csv", Path(folder) / "joined.csv"
        row, key = _fresh_names(revealed + identifiers)
        file_keys = identifiers or [key]
        lines = _write_rows(rows_in, [row, *file_keys, *extra], [*keys, *extra_values])
        keyed = dict(match_any=identifiers) if identifiers else dict(column=key)
        file_options = dict(reveal_columns=reveal_columns, peer_columns=asked, join=how, **keyed, **options)
        try:
            if role == "send":
                result = send_file(rows_in, output=rows_out, **file_options)
            else:
                result = receive_file(rows_in, rows_out, **file_options)
        except VennError as e:
            raise _at_row(e, lines) from None
        if not isinstance(result.output, Intersection) or result.rows_written is None:
            raise UsageError(
                f"this party learns no rows in protocol {result.protocol!r} as the {role} side"
            )
        own = 1 + len(file_keys) + len(extra)
        positions, peer = _read_joined(rows_out, own, how, len(added))
    return table.joined(positions, dict(zip(added, peer)), how)


def _revealed_name(text: str) -> str:
    """The column ``text`` names in ``reveal_columns``: ``name`` or ``name:WIDTH``, read as
    the command line reads it (a name may hold ``:`` where what follows the last one is not
    a number)."""
    name, _, width = text.rpartition(":")
    return name if name and width.isascii() and width.isdigit() else text


def _fresh_names(revealed: list[str]) -> tuple[str, str]:
    """Names for the file's row-position and key columns that no revealed column has."""
    row, key = "venn row", "venn key"
    while row in revealed or key in revealed:
        row, key = row + "_", key + "_"
    return row, key


def _field(value: Any) -> bytes:
    """A cell as the bytes of a CSV field: text as UTF-8, bytes as they are, a missing
    value empty, anything else by ``str()``."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    if _missing(value):
        return b""
    return str(value).encode("utf-8")


def _missing(value: Any) -> bool:
    """Whether a cell is missing: ``None``, a float NaN, or what pandas (if loaded) calls
    missing (``NA``, ``NaT``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    pandas = sys.modules.get("pandas")
    return pandas is not None and pandas.api.types.is_scalar(value) and bool(pandas.isna(value))


def _record(fields: list[bytes]) -> bytes:
    """One CSV row of ``fields``, each quoted (its quotes doubled) where it holds a comma, a
    quote or a line break, as the command line writes fields."""
    quoted = [
        b'"' + f.replace(b'"', b'""') + b'"' if any(c in f for c in (b",", b'"', b"\n", b"\r")) else f
        for f in fields
    ]
    return b",".join(quoted) + b"\n"


def _write_rows(path: Path, header: list[str], columns: list[list[Any]]) -> list[int]:
    """Writes the header and one row per table row (its position, then ``columns``' cells)
    to ``path``; returns the line of the file each row starts on (from 1, as the native
    party counts lines: fields may hold line breaks)."""
    starts = []
    with open(path, "wb") as f:
        head = _record([name.encode("utf-8") for name in header])
        f.write(head)
        line = 1 + head.count(b"\n")
        for position, cells in enumerate(zip(*columns)):
            record = _record([str(position).encode(), *(_field(c) for c in cells)])
            starts.append(line)
            line += record.count(b"\n")
            f.write(record)
    return starts


def _at_row(error: VennError, starts: list[int]) -> VennError:
    """``error``, where it names a line of the file written, naming the table's row instead
    (its position) — the file is the party's own, not the user's."""
    found = _LINE_ERROR.fullmatch(str(error))
    if found is None or not starts or int(found[1]) < starts[0]:
        return error
    position = bisect.bisect_right(starts, int(found[1])) - 1
    return type(error)(f"the row at position {position}: {found[2]}")


def _read_joined(
    path: Path, own: int, how: str, peer: int
) -> tuple[list[int], list[list[Optional[str]]]]:
    """The rows a party wrote to ``path``: each one's position in the table (its first
    field) and the peer's values of each of its ``peer`` columns, which follow the ``own``
    fields (and a ``left`` join's ``matched`` field); a value is None where the row did not
    match. Text that is not UTF-8 (the peer's values are the peer's) is decoded with U+FFFD
    in place of the bytes that are not."""
    positions: list[int] = []
    values: list[list[Optional[str]]] = [[] for _ in range(peer)]
    # A field (a long key) may be longer than the csv module's default limit: none is
    # longer than the file.
    csv.field_size_limit(max(csv.field_size_limit(), os.path.getsize(path)))
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        records = csv.reader(f)
        next(records)  # the header
        for record in records:
            positions.append(int(record[0]))
            matched = how != "left" or record[own] == "true"
            given = record[own + (how == "left") :]
            for column, value in zip(values, given):
                column.append(value if matched else None)
    return positions, values


class _PandasFrame:
    """A pandas DataFrame, as :func:`intersect_frame` reads and extends it."""

    def __init__(self, frame: pandas.DataFrame):
        self.frame = frame

    def names(self) -> list[Any]:
        return list(self.frame.columns)

    def column(self, name: str) -> list[Any]:
        return _column(self.frame, name).tolist()

    def joined(
        self, positions: list[int], peer: dict[str, list[Optional[str]]], how: str
    ) -> pandas.DataFrame:
        import pandas

        rows = self.frame.iloc[positions]
        if how == "difference":
            return rows
        rows = rows.reset_index(drop=True)
        # The type pandas gives text (str in pandas 3, object before), as a merge keeps the
        # peer's text columns; missing values NaN, as a merge leaves them.
        text = pandas.Series([""]).dtype
        for name, values in peer.items():
            rows[name] = pandas.Series([math.nan if v is None else v for v in values], dtype=text)
        return rows


class _ArrowTable:
    """A pyarrow Table, as :func:`intersect_frame` reads and extends it."""

    def __init__(self, table: pyarrow.Table):
        self.table = table

    def names(self) -> list[str]:
        return list(self.table.column_names)

    def column(self, name: str) -> list[Any]:
        if name not in self.table.column_names:
            names = ", ".join(repr(n) for n in self.table.column_names)
            raise UsageError(f"no column named {name!r} (columns: {names})")
        return self.table.column(name).to_pylist()

    def joined(
        self, positions: list[int], peer: dict[str, list[Optional[str]]], how: str
    ) -> pyarrow.Table:
        import pyarrow

        rows = self.table.take(pyarrow.array(positions, type=pyarrow.int64()))
        for name, values in peer.items():
            rows = rows.append_column(name, pyarrow.array(values, type=pyarrow.string()))
        return rows


def _table(frame: Any) -> Union[_PandasFrame, _ArrowTable]:
    """``frame`` as a pandas DataFrame or a pyarrow Table, or a TypeError."""
    arrow = sys.modules.get("pyarrow")  # a Table exists only once pyarrow is imported
    if arrow is not None and isinstance(frame, arrow.Table):
        return _ArrowTable(frame)
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(frame, pandas.DataFrame):
        return _PandasFrame(frame)
    raise TypeError(f"frame is a pandas DataFrame or a pyarrow Table, not {type(frame).__name__}")

