"""Private set intersection: two parties learn what their sets share and nothing else.

A Python party is Venn's own: it runs against another Python party or against the
``venn send`` / ``venn receive`` command line on the other machine, over TCP with TLS 1.3
(mutual authentication) unless both parties are on this machine. Keys are given as lists
of ``str`` (encoded as UTF-8) or ``bytes``; repeated keys are run once and every position
holding a matched key is reported, as the command line reports every matched row.

>>> import venn
>>> # one process                                  # another
>>> r = venn.receive(["a@x.org", "b@y.org"],        # venn.send(["b@y.org", "c@z.org"],
...                  listen="127.0.0.1:7700")       #           connect="127.0.0.1:7700")
>>> r.output
Intersection(matched=[1], count=1)

:func:`send_file` and :func:`receive_file` run a party on a file instead, as the command
line does (CSV separated by commas, semicolons, tabs or bars, or lines; the matched rows
written as they are, with the peer's revealed columns); :func:`intersect_frame` joins a
pandas DataFrame (or a pyarrow Table) with the peer's rows as ``pandas.merge`` would;
:func:`keygen` makes the key and certificate of ``venn keygen``.

The GIL is released while a party runs, so other Python threads go on. For PSI through
a service that holds the datasets encrypted (Thunder), see :mod:`venn.cloud`; for small
queries against one large dataset a server keeps and updates, :mod:`venn.ub`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any, Optional, TypedDict, Union

from ._venn import (
    CheatingDetected,
    Intersection,
    IntersectionSize,
    IntersectionSum,
    NetworkError,
    NoOutput,
    PeerError,
    RunResult,
    Threshold,
    ServiceError,
    UsageError,
    VennError,
    __version__,
    protocols,
)
from ._venn import Party as _Party
from ._venn import keygen

if TYPE_CHECKING:
    import sys

    import pandas

    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

__all__ = [
    "CheatingDetected",
    "Intersection",
    "IntersectionSize",
    "IntersectionSum",
    "NetworkError",
    "NoOutput",
    "PartyOptions",
    "PeerError",
    "RunResult",
    "Threshold",
    "ServiceError",
    "UsageError",
    "VennError",
    "__version__",
    "cloud",
    "intersect_frame",
    "keygen",
    "protocols",
    "receive",
    "receive_file",
    "send",
    "send_file",
    "ub",
]

Key = Union[str, bytes]
Path = Union[str, "PathLike[str]"]


class PartyOptions(TypedDict, total=False):
    """The keyword options of :func:`send` and :func:`receive` (the command line's)."""

    # Written from crates/venn-app/src/run_options/table.rs: edit it there (docs/testing.md).
    protocol: str
    bins: str
    sigma: int
    offline: str
    stash: str
    threshold: int
    listen: str
    connect: str
    threads: int
    timeout: float
    upload_deadline: float
    insecure: bool
    max_peer_items: int
    max_memory: int
    tls_cert: Path
    tls_key: Path
    tls_ca: Path
    peer_fingerprint: Union[str, Sequence[str]]
    plaintext: bool
    dealer: str
    dealer_fingerprint: str
    trim: bool
    lowercase: bool
    skip_empty: bool
    allow_key_mismatch: bool
    peer_columns: Union[str, Sequence[str]]
    both: bool
    # End of the table's options.
    on_listening: Callable[[str], None]
    values: Union[Sequence[int], Sequence[Sequence[int]]]
    reveal: Mapping[str, Sequence[Key]]
    progress: Callable[[str], None]


def _native(options: PartyOptions) -> dict[str, Any]:
    """The options as the native party takes them: None stands for the default, as it
    does in the command line's absent option."""
    return {k: v for k, v in options.items() if v is not None}


def _party(role: str, items: Sequence[Key], options: PartyOptions) -> RunResult:
    if isinstance(items, (str, bytes)):
        raise TypeError("items is a list of keys, not one key")
    return _Party(role, list(items), **_in_memory(options, len(items))).run()


def _in_memory(options: PartyOptions, items: int) -> dict[str, Any]:
    """The options of a party on keys in memory as the native party takes them: ``values``
    row by row, and each ``reveal`` column's values as a list."""
    given = _native(options)
    if given.get("values") is not None:
        given["values"], given["value_columns"] = _value_rows(given["values"], items)
    if given.get("reveal") is not None:
        for name, values in given["reveal"].items():
            if isinstance(values, (str, bytes)):
                raise TypeError(f"reveal[{name!r}] is a sequence of values, one per item, not one value")
        given["reveal"] = {name: list(values) for name, values in given["reveal"].items()}
    return given


def _names(names: Union[str, Sequence[str], None]) -> list[str]:
    return [names] if isinstance(names, str) else list(names or [])


def _file_party(
    role: str,
    input: Path,
    output: Optional[Path],
    column: Union[str, Sequence[str], None],
    match_any: Union[str, Sequence[str], None],
    value_column: Union[str, Sequence[str], None],
    reveal_columns: Union[str, Sequence[str], None],
    peer_columns: Union[str, Sequence[str], None],
    join: str,
    align: str,
    delimiter: str,
    format: Optional[str],
    options: PartyOptions,
) -> RunResult:
    # match_any is passed only when given: the native party refuses it beside column=.
    identifiers = {"match_any": _names(match_any)} if match_any is not None else {}
    return _Party(
        role,
        None,
        input=input,
        output=output,
        format=format,
        column=_names(column),
        **identifiers,
        value_column=_names(value_column),
        reveal_columns=_names(reveal_columns),
        peer_columns=_names(peer_columns),
        join=join,
        align=align,
        delimiter=delimiter,
        **_native(options),
    ).run()


def _value_rows(values: Any, items: int) -> tuple[list[int], int]:
    """``values`` as the package's core takes them: row by row, and how many a row — one
    integer per item (one column), or a sequence of integers per item (one per column,
    the same number for every item)."""
    rows = list(values)
    if not rows or not isinstance(rows[0], (list, tuple)):
        return rows, 1
    columns = len(rows[0])
    if len(rows) != items or any(not isinstance(r, (list, tuple)) or len(r) != columns for r in rows):
        raise ValueError(f"values: one sequence of {columns} integers per item, for each of {items} items")
    return [v for r in rows for v in r], columns


def send(items: Sequence[Key], **options: Unpack[PartyOptions]) -> RunResult:
    """Run the sending party of a PSI run: contribute ``items``; learn only the sizes,
    unless ``both=True`` (and the peer agrees), when the matched positions come back too.

    Exactly one of ``connect="host:port"`` and ``listen="addr:port"`` says how to reach
    the peer (``on_listening`` hears the bound address, useful with port 0). The other
    options are the command line's, with its defaults:

    - ``protocol`` ("rr22"; see :func:`protocols` and ``venn params``) and its options
      ``bins`` ("lan"/"wan"), ``sigma`` (32/64: keys are decimal integers below 2^sigma),
      ``offline`` ("ot"/"bfv"/"dealer", with ``dealer="host:port"`` and
      ``dealer_fingerprint``, or "iknp" for a GMW circuit's triples from IKNP), ``stash`` ("combined"/"separate"), ``threshold`` (int);
    - ``both``: the sender learns the matched positions too (both sides pass it);
    - ``values``: one integer per item, for the sum protocols — or, for ``rr22-sum``, a
      tuple of integers per item (one for each value column, up to 16), whose sums come
      back in an :class:`IntersectionSum` (``sums``; ``sum`` is the first's);
    - ``reveal``: columns of values that go to the peer with each matched item, for its
      ``peer_columns`` (``rr22``, ``rr22-m``; the receiver's only with ``both=True``): a
      dict of each column's name and one value (``str`` or ``bytes``) per item, as
      ``reveal_columns`` reveals a file's — each padded to the column's longest value
      rounded up to 16 bytes, or to WIDTH for a name ``"segment:WIDTH"``; the peer learns
      the widths and nothing of unmatched items. A key given twice reveals both items'
      values (and so, where the peer has it, that it is given twice);
    - ``peer_columns``: the names of the peer's revealed columns to get (exactly those it
      reveals, in order, or both refuse the run): each matched item with the peer's values,
      in :class:`Intersection`'s ``peer_rows`` — ``(position, values)`` for each pair of a
      matched item and a peer item of its key, as ``pandas.merge`` pairs rows;
    - ``trim`` / ``lowercase`` / ``skip_empty``: key normalisation (a missing key —
      ``None``, ``NaN``, pandas' ``NA`` — is empty: skipped with ``skip_empty=True``, an
      error otherwise); both parties must trim and lower-case alike, or the run is refused
      naming both settings, unless ``allow_key_mismatch=True`` (then it warns);
    - TLS: ``tls_cert`` + ``tls_key`` (from ``venn keygen``) with the peer's
      ``peer_fingerprint`` (what its ``venn keygen`` printed; a list for several) or
      ``tls_ca``; ``plaintext=True`` runs without TLS to another machine (insecure; on
      loopback TLS is optional);
    - ``insecure=True`` allows the benchmark baseline protocols;
    - ``threads`` (1), ``timeout`` (60.0 seconds for each wait on the peer; a float),
      ``max_peer_items`` (2^24) and ``max_memory`` (an int of bytes; default half the
      machine's memory): the peer's set is refused before anything is allocated for it
      if it would need more;
    - ``upload_deadline`` (``rr22-m``'s sender only; seconds): how long the receiver has
      for its whole OKVS, which bounds how many items beyond its own a cheating receiver
      gets answers for (default 30 s plus its bytes at 10 MB/s; see ``venn params``);
    - ``progress``: called with each phase's name.

    Raises :class:`UsageError`, :class:`NetworkError`, :class:`PeerError` (and its
    :class:`CheatingDetected`), all :class:`VennError`.
    """
    return _party("send", items, options)


def receive(items: Sequence[Key], **options: Unpack[PartyOptions]) -> RunResult:
    """Run the receiving party of a PSI run: learn which of ``items`` the peer also holds
    (``RunResult.output``, an :class:`Intersection` whose ``matched`` are ascending
    positions into ``items``), or what the protocol outputs instead: an
    :class:`IntersectionSize`, an :class:`IntersectionSum` or a :class:`Threshold`. Options
    as for :func:`send`.
    """
    return _party("receive", items, options)


def send_file(
    input: Path,
    *,
    output: Optional[Path] = None,
    column: Union[str, Sequence[str], None] = None,
    match_any: Union[str, Sequence[str], None] = None,
    value_column: Union[str, Sequence[str], None] = None,
    reveal_columns: Union[str, Sequence[str], None] = None,
    peer_columns: Union[str, Sequence[str], None] = None,
    join: str = "inner",
    align: str = "none",
    delimiter: str = ",",
    format: Optional[str] = None,
    **options: Unpack[PartyOptions],
) -> RunResult:
    """Run the sending party on a file, as ``venn send --input`` does: ``format`` "csv"
    (a header row; fields separated by ``delimiter``: ``","``, ``";"``, ``"\\t"`` or
    ``"|"``), "lines" (a key a line) or "parquet" (columns by name; the output a Parquet
    file); by default "parquet" for a file named ``*.parquet`` and "csv" otherwise. The key
    from ``column`` (a name, or several that make one key; default the first column), the
    values of a sum from ``value_column``. ``match_any`` (2 to 16 names, instead of
    ``column``) matches a row on any one of those columns, each against the peer's same
    column; a matched row is written once, with a ``matched_on`` column naming those
    that matched (``"email|phone"``).
    ``reveal_columns`` (names, each ``"name:WIDTH"`` to pad its values to WIDTH bytes)
    go to the receiver with each matched key, for its ``peer_columns`` (``rr22``,
    ``rr22-m``). With ``both=True`` the matched rows are written to ``output`` as they
    are in the file (its delimiter too), header first; ``RunResult.rows_written`` counts
    them. A file too large for ``max_memory`` runs bucket by bucket. Other options as for
    :func:`send` (``values`` is for keys in memory).
    """
    return _file_party(
        "send", input, output, column, match_any, value_column, reveal_columns, peer_columns, join, align, delimiter,
        format, options,
    )


def receive_file(
    input: Path,
    output: Path,
    *,
    column: Union[str, Sequence[str], None] = None,
    match_any: Union[str, Sequence[str], None] = None,
    peer_columns: Union[str, Sequence[str], None] = None,
    reveal_columns: Union[str, Sequence[str], None] = None,
    join: str = "inner",
    align: str = "none",
    delimiter: str = ",",
    format: Optional[str] = None,
    **options: Unpack[PartyOptions],
) -> RunResult:
    """Run the receiving party on a file, as ``venn receive --input --output`` does: the
    header and every row whose key the peer also holds are written to ``output`` as they
    are in the file (its delimiter too), in file order (``RunResult.rows_written``), with
    the sender's ``peer_columns`` appended to each (the columns its ``reveal_columns``
    names, in order; a row once for each of the sender's rows of its key);
    ``join="left"`` writes every row with a ``matched`` column, ``join="difference"`` the
    rows whose key the peer lacks; a count, a sum or a threshold's answer as JSON. With
    ``both=True``, the receiver's ``reveal_columns`` go to the sender as the sender's go
    to it, and ``align="inner"`` (or ``"outer"``) writes the rows in the order the
    sender's aligned output has them. The file is read as for
    :func:`send_file`; other options as for :func:`send`.
    """
    return _file_party(
        "receive", input, output, column, match_any, None, reveal_columns, peer_columns, join, align, delimiter,
        format, options,
    )


def _column(frame: pandas.DataFrame, column: str) -> pandas.Series:
    """``frame[column]``, or a :class:`UsageError` naming the frame's columns."""
    if column not in frame.columns:
        names = ", ".join(repr(c) for c in frame.columns)
        raise UsageError(f"no column named {column!r} (columns: {names})")
    return frame[column]


from . import cloud, ub  # noqa: E402  (they use the names above)
from .frames import intersect_frame  # noqa: E402  (it uses the names above)
