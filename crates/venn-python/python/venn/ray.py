"""Venn's work spread over a Ray cluster, when one machine is not enough.

:func:`thunder_workers` — a Ray job that works for a Thunder service (``venn cloud serve``,
with or instead of its own pool and ``venn cloud worker`` processes): this driver leases
tasks (one chunk of one side of a run each), fetches their input and hands in their
answers; each answer is computed in a Ray task by Venn's own worker function, so any
number of cluster CPUs pair at once. The workers' secret stays with the driver: Ray tasks
see only public inputs (stored points and a run's token, which the service holds too).

Needs ``pip install ray`` beside ``venn``, and ``venn`` installed where the cluster's
workers run; call ``ray.init(...)`` (or run as a Ray job) first.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional

from . import NetworkError, Path, _venn

__all__ = ["thunder_workers"]


def _answer(task: str, data: bytes) -> bytes:
    # Imported here: this runs in a Ray worker process.
    from venn import _venn as native

    return native.answer(task, data, threads=1)


def thunder_workers(
    server: str,
    worker_secret: Path,
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
    work (default: until stopped). ``worker_secret`` is the service's workers' secret file;
    the service's certificate is checked as :class:`venn.cloud.Client` checks it.

    A task whose Ray task or hand-in fails is left to its lease's expiry: the service
    gives it to a worker again, and since a task is a pure function of public inputs,
    any worker's answer is the same.
    """
    import ray

    link = _venn.WorkerLink(
        server,
        worker_secret,
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
