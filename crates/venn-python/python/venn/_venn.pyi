"""Types of the native module (see ``venn`` for the documented API)."""

from collections.abc import Callable, Sequence
from typing import Optional, Union

__version__: str

class VennError(Exception): ...
class UsageError(VennError): ...
class NetworkError(VennError): ...
class PeerError(VennError): ...
class CheatingDetected(PeerError): ...

class RunResult:
    @property
    def protocol(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def matched(self) -> Optional[list[int]]: ...
    @property
    def count(self) -> Optional[int]: ...
    @property
    def sum(self) -> Optional[int]: ...
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

def protocols() -> list[tuple[str, str, str]]: ...
def run(
    role: str,
    items: Sequence[Union[str, bytes]],
    *,
    values: Optional[Sequence[int]] = None,
    connect: Optional[str] = None,
    listen: Optional[str] = None,
    on_listening: Optional[Callable[[str], None]] = None,
    protocol: str = "kkrt16",
    both: bool = False,
    trim: bool = False,
    lowercase: bool = False,
    skip_empty: bool = False,
    tls_cert: Optional[str] = None,
    tls_key: Optional[str] = None,
    tls_ca: Optional[str] = None,
    peer_fingerprint: Sequence[str] = (),
    plaintext: bool = False,
    insecure: bool = False,
    threads: int = 0,
    timeout: float = 60.0,
    max_peer_items: Optional[int] = None,
    max_memory: Optional[int] = None,
    progress: Optional[Callable[[str], None]] = None,
) -> RunResult: ...
