"""Thunder: private set intersection over encrypted data held by a service.

Each data owner uploads its keys once, encrypted under a dataset key only it holds (kept in
a key file); for a run, two (or three) owners agree on a run key over a direct TLS link and
hand the service tokens, and the service's workers find the matches by pairings. The
service learns the sizes and, for each run, which positions matched — never a key. This is
the ``venn cloud`` command line's client, on keys held in memory; the service is
``venn cloud serve`` (see the README's "Thunder").

>>> from venn import cloud
>>> me = cloud.register("https://psi.example:7780", identity="alice.id", name="alice",
...                     server_fingerprint="ab12…")          # once; later cloud.Client(…)
>>> me.upload(emails, dataset="customers", key_file="customers.key")
>>> run = me.pair("customers.key", connect="bob.example:7790",
...               tls_cert="alice.pem", tls_key="alice.key", peer_fingerprint="cd34…")
>>> me.result(run, "customers.key", emails)   # positions in ``emails`` that matched
[3, 17, …]
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

from . import Key, Path, _column
from ._venn import (
    DEFAULT_CHUNK_ITEMS,
    PAIR_TIMEOUT_SECONDS,
    PRETOKEN_COUNT,
    PRETOKEN_WAIT_SECONDS,
    RESULT_WAIT_SECONDS,
)
from ._venn import CloudClient as _Native

if TYPE_CHECKING:
    import pandas

__all__ = ["Client", "register"]


class Client:
    """A client of one Thunder service, signing its requests as one identity (made by
    :func:`register` or ``venn cloud register``). The service is ``https://HOST:PORT``
    with its certificate pinned by ``server_fingerprint`` (what ``venn cloud serve``
    prints) or chained to a CA in the PEM file ``server_ca``; ``http://`` only to this
    machine unless ``plain_http=True``.

    Raises :class:`venn.ServiceError` when the service refuses a request, or the client's
    own checks do (a key file made for another service address, or one that exists; the
    message says why), :class:`venn.NetworkError` when the service cannot be reached, and
    :class:`venn.UsageError` for settings that cannot work (nothing was sent). A key file
    belongs to the service address it was made with.
    """

    def __init__(
        self,
        server: str,
        identity: Path,
        *,
        server_fingerprint: Optional[str] = None,
        server_ca: Optional[Path] = None,
        plain_http: bool = False,
    ) -> None:
        self._native = _Native(
            server,
            identity,
            server_fingerprint=server_fingerprint,
            server_ca=server_ca,
            plain_http=plain_http,
        )

    @property
    def name(self) -> str:
        """The identity's name at the service."""
        return self._native.name

    def upload(
        self,
        items: Sequence[Key],
        *,
        dataset: str,
        key_file: Path,
        chunk_items: int = DEFAULT_CHUNK_ITEMS,
        trim: bool = False,
        lowercase: bool = False,
        skip_empty: bool = False,
        progress: Optional[Callable[[int, int], None]] = None,
    ) -> str:
        """Encrypt ``items`` under a fresh dataset key, saved first to ``key_file`` (a new,
        owner-only file: without it no run and no result is possible), and upload them as
        the dataset named ``dataset``, ``chunk_items`` per chunk; return the dataset's id.
        Keys are normalised (``trim``, ``lowercase``, ``skip_empty``) and deduplicated as
        a party's are. ``progress(sent, total)`` hears of every chunk.
        """
        return self._native.upload(
            _keys(items),
            dataset,
            key_file,
            chunk_items=chunk_items,
            trim=trim,
            lowercase=lowercase,
            skip_empty=skip_empty,
            progress=progress,
        )

    def pair(
        self,
        key_file: Path,
        *,
        connect: Optional[str] = None,
        listen: Optional[str] = None,
        on_listening: Optional[Callable[[str], None]] = None,
        partners: int = 1,
        timeout: float = PAIR_TIMEOUT_SECONDS,
        preprocessed: bool = False,
        tls_cert: Optional[Path] = None,
        tls_key: Optional[Path] = None,
        tls_ca: Optional[Path] = None,
        peer_fingerprint: Union[str, Sequence[str], None] = None,
        plaintext: bool = False,
    ) -> str:
        """Agree on a run with its partners and give the service this dataset's token;
        return the run's id. One side listens (``listen="addr:port"``; with
        ``partners=2`` a three-party run, this side linked to both) and creates the run;
        the other ``connect``\\ s. The link is the parties' own: TLS 1.3 with mutual
        authentication (``tls_cert``, ``tls_key``, ``peer_fingerprint`` or ``tls_ca``)
        unless both are on this machine or ``plaintext=True``. With ``preprocessed`` (both
        sides pass it) a ready pre-token of each dataset is used (:meth:`make_pretokens`).
        """
        fingerprints = (
            [peer_fingerprint] if isinstance(peer_fingerprint, str) else list(peer_fingerprint or [])
        )
        return self._native.pair(
            key_file,
            connect=connect,
            listen=listen,
            on_listening=on_listening,
            partners=partners,
            timeout=timeout,
            preprocessed=preprocessed,
            tls_cert=tls_cert,
            tls_key=tls_key,
            tls_ca=tls_ca,
            peer_fingerprint=fingerprints,
            plaintext=plaintext,
        )

    def make_pretokens(
        self, key_file: Path, count: int = PRETOKEN_COUNT, *, wait: float = PRETOKEN_WAIT_SECONDS
    ) -> list[str]:
        """Hand the service ``count`` one-time pre-tokens of the dataset, whose values it
        precomputes while idle (a ``preprocessed`` run then costs it one exponentiation
        per item of the smaller dataset instead of a pairing per item of both); wait up to
        ``wait`` seconds for them to be ready (0: return at once). Returns their ids.
        """
        return self._native.make_pretokens(key_file, count, wait=wait)

    def pretokens(self, key_file: Path) -> list[dict[str, Any]]:
        """The dataset's pre-tokens: ``id``, ``state`` (``pending``, ``ready``, ``used``…)."""
        result: list[dict[str, Any]] = json.loads(self._native.pretokens(key_file))
        return result

    def status(self, run: str, *, wait: float = 0.0) -> dict[str, Any]:
        """A run as the service shows it (``state``, ``sides``, ``tasks_done`` of
        ``tasks``, ``matches``…); with ``wait`` > 0, once it is done (a failed run, or one
        not done in time, raises :class:`venn.ServiceError`)."""
        result: dict[str, Any] = json.loads(self._native.status(run, wait=wait))
        return result

    def result(
        self,
        run: str,
        key_file: Path,
        items: Sequence[Key],
        *,
        wait: float = RESULT_WAIT_SECONDS,
        trim: bool = False,
        lowercase: bool = False,
        skip_empty: bool = False,
    ) -> list[int]:
        """The positions in ``items`` (the keys uploaded under ``key_file``, with the same
        normalisation) whose keys matched in the run, ascending; waits up to ``wait``
        seconds for the run to finish. Keys other than the uploaded ones are refused.
        """
        return self._native.result(
            run,
            key_file,
            _keys(items),
            wait=wait,
            trim=trim,
            lowercase=lowercase,
            skip_empty=skip_empty,
        )

    def result_frame(
        self, run: str, key_file: Path, frame: pandas.DataFrame, column: str, **options: Any
    ) -> pandas.DataFrame:
        """The rows of ``frame`` whose ``column`` matched in the run (``frame`` holds the
        keys uploaded; values other than ``str``/``bytes`` as ``str()``, a missing one —
        ``None``, ``NaN``, pandas' ``NA`` — an empty key, as :meth:`upload` takes it), in
        frame order; ``options`` as for :meth:`result`."""
        from .frames import _missing

        values = _column(frame, column).tolist()
        keys = [
            None if _missing(v) else v if isinstance(v, (str, bytes)) else str(v) for v in values
        ]
        return frame.iloc[self.result(run, key_file, keys, **options)]

    def datasets(self) -> list[dict[str, Any]]:
        """This client's datasets: ``id``, ``name``, ``state``, ``items``…"""
        result: list[dict[str, Any]] = json.loads(self._native.datasets())
        return result

    def delete(self, dataset: str) -> dict[str, Any]:
        """Delete a dataset of this client's (the service removes its stored points)."""
        result: dict[str, Any] = json.loads(self._native.delete(dataset))
        return result


def register(
    server: str,
    *,
    identity: Path,
    name: str,
    invite: Optional[str] = None,
    server_fingerprint: Optional[str] = None,
    server_ca: Optional[Path] = None,
    plain_http: bool = False,
) -> Client:
    """Make an identity (a signing key saved to the new, owner-only file ``identity``),
    register it with the service as ``name``, and return its :class:`Client`. Keep the
    file: it is how later sessions sign (``Client(server, identity)``). Where the
    service registers by invitation, ``invite`` is one of its operator's (``venn cloud
    invite``).
    """
    client = Client.__new__(Client)
    client._native = _Native.register(
        server,
        identity,
        name,
        invite=invite,
        server_fingerprint=server_fingerprint,
        server_ca=server_ca,
        plain_http=plain_http,
    )
    return client


def _keys(items: Sequence[Key]) -> list[Key]:
    if isinstance(items, (str, bytes)):
        raise TypeError("items is a list of keys, not one key")
    return list(items)
