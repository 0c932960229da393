"""Unbalanced PSI: small queries against one large dataset that a server keeps and updates.

A dataset's server (``venn ub serve``, see docs/unbalanced.md) publishes a compact tag set
of its keys under a key only it holds; a client downloads the set once, keeps it in a state
file, and afterwards takes only the changes. Each query is then one round with the server
(64 bytes a key): the client learns which of its keys the dataset holds, the server learns
how many keys were asked (padded) and nothing about them. The client also learns the
dataset's exact size and how it changes, which balanced PSI does not tell.

>>> from venn import ub
>>> q = ub.query(["a@x.org", "b@y.org"], "psi.example:7800", state="sanctions.state",
...              peer_fingerprint="ab12…", tls_cert="me.pem", tls_key="me.key")
>>> q.matched          # positions in the list given
[1]
>>> q.dataset.size, q.dataset.version
(1048576, 12)
>>> q.labels           # where the dataset's keys carry labels: each match's
[b'listed 2024-03: ref 7731']
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

from . import Key, Path
from ._venn import ub_run as _client

if TYPE_CHECKING:
    import sys

    from typing import TypedDict

    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:
        from typing_extensions import Unpack

__all__ = ["Dataset", "Query", "query", "sync"]


@dataclass(frozen=True)
class Dataset:
    """The dataset as the server published it, and what this sync did."""

    size: int
    """How many keys the dataset holds (0 where it serves ub-fhe only: not told)."""
    epoch: int
    """The server key's epoch (one more with each key rotation)."""
    version: int
    """The tag set's version within the epoch (one more with each update)."""
    max_query: int
    """The most keys one round of a query may hold (a larger query takes several)."""
    current: bool
    """Whether the state file's tag set was current (nothing downloaded)."""
    received: int
    """Bytes received from the server."""
    label_len: Optional[int] = None
    """The most bytes a key's label takes, where the dataset's keys carry labels."""


@dataclass(frozen=True)
class Query:
    """What a query found."""

    matched: list[int]
    """The positions in the keys given whose keys the dataset holds, ascending (every
    position of a repeated key)."""
    count: int
    """How many distinct keys the dataset holds."""
    keys: int
    """How many distinct keys were asked."""
    dataset: Dataset
    """The dataset queried, and the sync before the query."""
    labels: Optional[list[bytes]] = None
    """Where the dataset's keys carry labels, each matched position's label, in the order
    of ``matched`` (else ``None``)."""
    mode: str = "cache"
    """The mode the query took: ``"cache"`` (the tag set synced, looked up locally) or
    ``"fhe"`` (the keys' OPRF values sent encrypted; nothing downloaded)."""


if TYPE_CHECKING:

    class LinkOptions(TypedDict, total=False):
        """How the link to the server is secured, and how long it may take."""

        timeout: float
        tls_cert: Path
        tls_key: Path
        tls_ca: Path
        peer_fingerprint: Union[str, Sequence[str]]
        plaintext: bool


def sync(
    connect: str,
    *,
    state: Optional[Path] = None,
    max_tags: Optional[int] = None,
    session_timeout: float = 3600,
    **options: Unpack[LinkOptions],
) -> Dataset:
    """Bring the dataset's tag set in the file ``state`` up to date (the changes since
    the version held, or the whole set), as ``venn ub sync`` does. The server at
    ``connect`` is reached over TLS 1.3 (``tls_cert``, ``tls_key``, and
    ``peer_fingerprint`` or ``tls_ca``) unless it is on this machine or
    ``plaintext=True``; ``timeout`` bounds each message and ``session_timeout`` the whole
    session, a download of the whole set included (seconds). A dataset larger than
    ``max_tags`` keys (default 2^28) is refused before its download. A state file that
    is not one is refused (:class:`venn.VennError`) and left as it is;
    one that is damaged is replaced by the whole set, with a ``UserWarning``.
    """
    extra = {} if max_tags is None else {"max_tags": max_tags}
    return _dataset(
        _client(None, connect, state=state, session_timeout=session_timeout, **extra, **options)
    )


def query(
    keys: Sequence[Key],
    connect: str,
    *,
    state: Optional[Path] = None,
    max_tags: Optional[int] = None,
    session_timeout: float = 3600,
    trim: bool = False,
    lowercase: bool = False,
    skip_empty: bool = False,
    allow_key_mismatch: bool = False,
    mode: str = "auto",
    **options: Unpack[LinkOptions],
) -> Query:
    """Which of ``keys`` (``str``, encoded as UTF-8, or ``bytes``) the dataset at
    ``connect`` holds, as ``venn ub query`` finds them: the tag set brought up to date
    first (kept in ``state`` if given, otherwise downloaded whole), then one round with
    the server per ``max_query`` keys. Keys are normalised (``trim``, ``lowercase``,
    ``skip_empty``) and deduplicated as a party's are; a normalisation other than the
    dataset's is refused before any download (:class:`venn.PeerError`) unless
    ``allow_key_mismatch``, which warns instead. The link's options are :func:`sync`'s.

    ``mode`` chooses how: ``"cache"`` as above, ``"fhe"`` (a dataset served in ub-fhe:
    the keys' OPRF values sent encrypted under BFV, nothing downloaded, no state kept) or
    ``"auto"``: cache with a ``state`` file or where the dataset serves nothing else, else
    fhe.
    """
    if isinstance(keys, (str, bytes)):
        raise TypeError("keys is a list of keys, not one key")
    extra = {} if max_tags is None else {"max_tags": max_tags}
    got = _client(
        list(keys),
        connect,
        state=state,
        session_timeout=session_timeout,
        trim=trim,
        lowercase=lowercase,
        skip_empty=skip_empty,
        allow_key_mismatch=allow_key_mismatch,
        mode=mode,
        **extra,
        **options,
    )
    if got["warning"] is not None:
        warnings.warn(got["warning"], stacklevel=2)
    return Query(
        matched=got["matched"],
        count=got["count"],
        keys=got["keys"],
        dataset=_dataset(got["dataset"], stacklevel=3),
        labels=got["labels"],
        mode=got["mode"],
    )


def _dataset(native: dict, stacklevel: int = 3) -> Dataset:
    """The native sync's dictionary as a :class:`Dataset`, its warning (a damaged state
    file replaced) given to Python's warnings."""
    warning = native.pop("warning")
    if warning is not None:
        warnings.warn(warning, stacklevel=stacklevel)
    return Dataset(**native)
