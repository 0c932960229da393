"""Types of the native module (see ``venn`` for the documented API)."""

import sys
from collections.abc import Callable
from os import PathLike
from typing import Any, Optional, Union

if sys.version_info >= (3, 11):
    from typing import Unpack
else:
    from typing_extensions import Unpack

from . import PartyOptions

__version__: str
DEFAULT_CHUNK_ITEMS: int
PAIR_TIMEOUT_SECONDS: int
PRETOKEN_COUNT: int
PRETOKEN_WAIT_SECONDS: int
RESULT_WAIT_SECONDS: int

class VennError(Exception): ...
class UsageError(VennError): ...
class NetworkError(VennError): ...
class PeerError(VennError): ...
class CheatingDetected(PeerError): ...
class ServiceError(VennError): ...

class Intersection:
    @property
    def matched(self) -> Optional[list[int]]: ...
    @property
    def count(self) -> int: ...

class IntersectionSize:
    @property
    def count(self) -> int: ...

class IntersectionSum:
    @property
    def count(self) -> int: ...
    @property
    def sums(self) -> list[int]: ...
    @property
    def sum(self) -> Optional[int]: ...

class Threshold:
    @property
    def threshold(self) -> int: ...
    @property
    def reached(self) -> bool: ...

class NoOutput: ...

class RunResult:
    @property
    def protocol(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def output(self) -> Union[Intersection, IntersectionSize, IntersectionSum, Threshold, NoOutput]: ...
    @property
    def matched(self) -> Optional[list[int]]: ...
    @property
    def count(self) -> Optional[int]: ...
    @property
    def sum(self) -> Optional[int]: ...
    @property
    def sums(self) -> Optional[list[int]]: ...
    @property
    def reached(self) -> Optional[bool]: ...
    @property
    def n_self(self) -> int: ...
    @property
    def n_peer(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def bytes_sent(self) -> int: ...
    @property
    def bytes_received(self) -> int: ...
    @property
    def rows_written(self) -> Optional[int]: ...

def protocols() -> list[tuple[str, str, str]]: ...
def keygen(out: Union[str, PathLike[str]], *, days: int = ...) -> str: ...
def lane_keywords() -> list[str]: ...

class Settings:
    @property
    def protocol(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def timeout(self) -> float: ...
    @property
    def max_peer_items(self) -> int: ...
    @property
    def max_memory(self) -> int: ...

class Party:
    def __init__(
        self,
        role: str,
        items: Optional[list[Union[str, bytes]]],
        *,
        input: Optional[Union[str, PathLike[str]]] = ...,
        output: Optional[Union[str, PathLike[str]]] = ...,
        format: Optional[str] = ...,
        column: list[str] = ...,
        match_any: list[str] = ...,
        value_column: list[str] = ...,
        reveal_columns: list[str] = ...,
        peer_columns: list[str] = ...,
        join: Optional[str] = ...,
        align: Optional[str] = ...,
        delimiter: Optional[str] = ...,
        **options: Unpack[PartyOptions],
    ) -> None: ...
    @property
    def settings(self) -> Settings: ...
    def run(self) -> RunResult: ...

_Path = Union[str, PathLike[str]]
_Keys = list[Union[str, bytes]]

class CloudClient:
    def __init__(
        self,
        server: str,
        identity: _Path,
        *,
        server_fingerprint: Optional[str] = ...,
        server_ca: Optional[_Path] = ...,
        plain_http: bool = ...,
    ) -> None: ...
    @staticmethod
    def register(
        server: str,
        identity: _Path,
        name: str,
        *,
        invite: Optional[str] = ...,
        server_fingerprint: Optional[str] = ...,
        server_ca: Optional[_Path] = ...,
        plain_http: bool = ...,
    ) -> CloudClient: ...
    @property
    def name(self) -> str: ...
    def upload(
        self,
        items: _Keys,
        dataset: str,
        key_file: _Path,
        *,
        chunk_items: int = ...,
        trim: bool = ...,
        lowercase: bool = ...,
        skip_empty: bool = ...,
        progress: Optional[Callable[[int, int], None]] = ...,
    ) -> str: ...
    def pair(
        self,
        key_file: _Path,
        *,
        connect: Optional[str] = ...,
        listen: Optional[str] = ...,
        on_listening: Optional[Callable[[str], None]] = ...,
        partners: int = ...,
        timeout: float = ...,
        preprocessed: bool = ...,
        tls_cert: Optional[_Path] = ...,
        tls_key: Optional[_Path] = ...,
        tls_ca: Optional[_Path] = ...,
        peer_fingerprint: list[str] = ...,
        plaintext: bool = ...,
    ) -> str: ...
    def make_pretokens(self, key_file: _Path, count: int = ..., *, wait: float = ...) -> list[str]: ...
    def pretokens(self, key_file: _Path) -> str: ...
    def status(self, run: str, *, wait: float = ...) -> str: ...
    def result(
        self,
        run: str,
        key_file: _Path,
        items: _Keys,
        *,
        wait: float = ...,
        trim: bool = ...,
        lowercase: bool = ...,
        skip_empty: bool = ...,
    ) -> list[int]: ...
    def datasets(self) -> str: ...
    def delete(self, dataset: str) -> str: ...

class WorkerLink:
    def __init__(
        self,
        server: str,
        worker_identity: _Path,
        *,
        server_fingerprint: Optional[str] = ...,
        server_ca: Optional[_Path] = ...,
        plain_http: bool = ...,
    ) -> None: ...
    def lease(self) -> Optional[str]: ...
    def input(self, task: str) -> bytes: ...
    def hand_in(self, task: str, answer: bytes) -> None: ...

def answer(task: str, input: bytes, *, threads: int = ...) -> bytes: ...

class LanedRun:
    def __init__(self, party: Party, *, lanes: int, bucket_rows: Optional[int] = ...) -> None: ...
    @property
    def lanes(self) -> int: ...
    @property
    def listens(self) -> bool: ...
    def job(self, lane: int) -> bytes: ...
    def send_addresses(self, addresses: list[str]) -> None: ...
    def recv_addresses(self) -> list[str]: ...
    def abort(self, reason: str) -> None: ...
    def finish(self, results: list[bytes]) -> RunResult: ...

class Lane:
    def __init__(self, job: bytes, **tls: Any) -> None: ...
    def bind(self, host: str) -> str: ...
    def run(self, lane: int, connect: Optional[str] = ...) -> bytes: ...

def ub_run(
    keys: Optional[list[Union[str, bytes]]],
    connect: str,
    *,
    state: Optional[_Path] = ...,
    max_tags: int = ...,
    session_timeout: float = ...,
    **options: Any,
) -> dict[str, Any]: ...
