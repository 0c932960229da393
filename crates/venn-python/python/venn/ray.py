"""Venn's work spread over a Ray cluster, when one machine is not enough.

:func:`send` and :func:`receive` — one party of a two-party run whose work is spread over
the party's own Ray cluster (each party has its own): both put their keys into the same
hash buckets, and the buckets are shared out among *lanes*, each a Ray actor of each
party, the two joined by a TLS link of their own; the parties' drivers agree on the run
over their link (the one ``venn.send``/``venn.receive`` would use) and merge what the
lanes learned, in input order. The output is the one run's — the positions of ``items``
whose keys the peer holds — and so is what each party learns, as for ``--bucket-rows``
(see the README: the peer learns the number of distinct keys and nothing from the
buckets, padded to one size). Protocols whose receiver learns the intersection run so.

:func:`thunder_workers` — a Ray job that works for a Thunder service (``venn cloud serve``,
with or instead of its own pool and ``venn cloud worker`` processes): this driver leases
tasks (one chunk of one side of a run each), fetches their input and hands in their
answers; each answer is computed in a Ray task by Venn's own worker function, so any
number of cluster CPUs pair at once. The driver works as one enrolled worker (``venn cloud
enrol-worker``), whose secret stays with it: Ray tasks see only public inputs (stored
points and a run's token, which the service holds too).

Needs ``pip install ray`` beside ``venn``, and ``venn`` installed where the cluster's
workers run; call ``ray.init(...)`` (or run as a Ray job) first.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from . import Key, NetworkError, Path, RunResult, VennError, _in_memory, _venn

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from . import PartyOptions

__all__ = ["receive", "send", "thunder_workers"]


def _answer(task: str, data: bytes) -> bytes:
    # Imported here: this runs in a Ray worker process.
    from venn import _venn as native

    return native.answer(task, data, threads=1)


def thunder_workers(
    server: str,
    worker_identity: Path,
    *,
    server_fingerprint: Optional[str] = None,
    server_ca: Optional[Path] = None,
    plain_http: bool = False,
    slots: Optional[int] = None,
    idle_exit: Optional[float] = None,
    poll: float = 0.5,
) -> int:
    """Work for the Thunder service at ``server`` on the Ray cluster this process has joined
    (``ray.init``): lease tasks while any are to be had, at most ``slots`` at once (default:
    the cluster's CPUs — a leased task waits for no one), each computed by a Ray task of
    one CPU; return the number of tasks done. Runs until ``idle_exit`` seconds pass without
    work (default: until stopped). ``worker_identity`` is the file ``venn cloud
    enrol-worker`` wrote for this worker; the service's certificate is checked as
    :class:`venn.cloud.Client` checks it. The service spot-checks every answer: one that
    fails quarantines the worker, and its next lease raises :class:`venn.ServiceError`.

    A task whose Ray task or hand-in fails is left to its lease's expiry: the service
    gives it to a worker again, and since a task is a pure function of public inputs,
    any worker's answer is the same.
    """
    import ray

    link = _venn.WorkerLink(
        server,
        worker_identity,
        server_fingerprint=server_fingerprint,
        server_ca=server_ca,
        plain_http=plain_http,
    )
    remote = ray.remote(num_cpus=1)(_answer)
    cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
    slots = slots or max(1, int(cpus))
    in_flight: dict[Any, str] = {}
    done = 0
    idle_since = time.monotonic()
    while True:
        while len(in_flight) < slots:
            try:
                task = link.lease()
                if task is None:
                    break
                in_flight[remote.remote(task, link.input(task))] = task
            except NetworkError as e:  # the service may be restarting: asked again later
                print(f"venn.ray: {e}", file=sys.stderr)
                break
        if not in_flight:
            if idle_exit is not None and time.monotonic() - idle_since >= idle_exit:
                return done
            time.sleep(poll)
            continue
        ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=poll)
        for ref in ready:
            task = in_flight.pop(ref)
            try:
                link.hand_in(task, ray.get(ref))
                done += 1
            except Exception as e:  # noqa: BLE001 — reported; the lease's expiry retries it
                print(f"venn.ray: a task failed: {e}", file=sys.stderr)
        idle_since = time.monotonic()


class _LaneWorker:
    """A lane's worker, as a Ray actor of one CPU (see :func:`send`)."""

    def __init__(self, job: bytes, tls: dict[str, Any]) -> None:
        from venn import _venn as native

        self.lane = native.Lane(job, **tls)

    def bind(self, host: str) -> str:
        address = self.lane.bind(host)
        if host in ("0.0.0.0", "[::]", "::"):
            import ray

            port = address.rsplit(":", 1)[1]
            node = ray.util.get_node_ip_address()  # type: ignore[no-untyped-call]
            address = f"{node}:{port}"
        return address

    def run(self, lane: int, connect: Optional[str]) -> bytes:
        return self.lane.run(lane, connect)


# What each lane's worker takes of the party's options (its TLS and its deadline).
_LANE_KEYWORDS = tuple(_venn.lane_keywords())


def _laned(
    role: str,
    items: Sequence[Key],
    lanes: Optional[int],
    bucket_rows: Optional[int],
    options: PartyOptions,
) -> RunResult:
    import ray

    if isinstance(items, (str, bytes)):
        raise TypeError("items is a list of keys, not one key")
    given = _in_memory(options, len(items))
    fingerprint = given.get("peer_fingerprint")
    if isinstance(fingerprint, str):
        given["peer_fingerprint"] = [fingerprint]
    if lanes is None:
        cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
        lanes = max(1, int(cpus))
    party = _venn.Party(role, list(items), **given)
    run = _venn.LanedRun(party, lanes=lanes, bucket_rows=bucket_rows)
    tls = {k: given[k] for k in _LANE_KEYWORDS if k in given}
    worker: Any = ray.remote(num_cpus=1)(_LaneWorker)  # Ray's handles are not typed
    workers: list[Any] = [worker.remote(run.job(lane), tls) for lane in range(run.lanes)]
    try:
        if run.listens:
            host = given["listen"].rsplit(":", 1)[0]
            addresses = ray.get([w.bind.remote(host) for w in workers])
            run.send_addresses(addresses)
            refs = [w.run.remote(lane, None) for lane, w in enumerate(workers)]
        else:
            addresses = run.recv_addresses()
            refs = [w.run.remote(lane, a) for lane, (w, a) in enumerate(zip(workers, addresses))]
        results = ray.get(refs)
    except BaseException as e:
        run.abort(str(e))
        cause = getattr(e, "cause", None)  # a Ray task's error: the lane's own, if any
        if isinstance(cause, VennError):
            raise cause from e
        raise
    finally:
        for w in workers:
            ray.kill(w)
    return run.finish(results)


def send(
    items: Sequence[Key],
    *,
    lanes: Optional[int] = None,
    bucket_rows: Optional[int] = None,
    **options: Unpack[PartyOptions],
) -> RunResult:
    """The sending party of a run spread over this process's Ray cluster (``ray.init``):
    ``lanes`` Ray actors of one CPU each (default: the cluster's CPUs; the run uses the
    fewer of the two parties'), the keys in buckets of about ``bucket_rows`` (default:
    as many buckets as lanes). ``options`` are :func:`venn.send`'s (not ``progress`` or
    ``values``; ``reveal`` and ``peer_columns`` carry columns as there, for keys given
    once each where they reveal columns); ``threads`` (default 1) is per lane. TLS files
    must be readable at the same paths on every node; the peer's lanes reach this side's
    on the host of ``listen`` (``0.0.0.0``: each node's address).
    """
    return _laned("send", items, lanes, bucket_rows, options)


def receive(
    items: Sequence[Key],
    *,
    lanes: Optional[int] = None,
    bucket_rows: Optional[int] = None,
    **options: Unpack[PartyOptions],
) -> RunResult:
    """The receiving party of a run spread over this process's Ray cluster: the matched
    positions of ``items`` (``RunResult.matched``), with the peer's columns for
    ``peer_columns`` (``RunResult.output.peer_rows``), as :func:`venn.receive` gives them.
    Options as for :func:`send`.
    """
    return _laned("receive", items, lanes, bucket_rows, options)
