#!/usr/bin/env python3
"""Venn on Ray beside Venn on one machine: per-worker throughput and scaling
efficiency at 1 → 2 workers.

thunder: two datasets of n keys each (half shared) uploaded to a `venn cloud serve`; one
plain run, timed from the run's creation until it is done, worked either by the service's
own pool of W threads or by `venn.ray.thunder_workers` on a local Ray cluster of W CPUs
(the service then has none). Each run's matches are checked (n/2, the right positions).
psi: two parties of n rows each (half the keys shared), each a process of its own: first
`venn.receive` / `venn.send` on one machine (one thread each, no Ray), then
`venn.ray.receive` / `venn.ray.send`, each party with its own local Ray cluster of W CPUs
and W lanes. Timed from the call to its return in each party (the keys are in memory
first); the receiver's matches are checked (the shared half, by position).

Run inside the venv that has the wheel and Ray:

    target/python-venv/bin/python scripts/ray-bench.py thunder --venn target/release/venn \\
        --log2n 15 --workers 1,2
    target/python-venv/bin/python scripts/ray-bench.py psi --rows 10000000 --workers 1,2
"""
import argparse
import json
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from venn import cloud

MUL = 0x9E3779B97F4A7C15F39CC0605CEDC835
MASK = (1 << 128) - 1


def keys(first, n):
    return [f"{(k * MUL) & MASK:032x}" for k in range(first, first + n)]


class Service:
    def __init__(self, venn, data, threads):
        self.data = Path(data)
        self.proc = subprocess.Popen(
            [venn, "cloud", "serve", "--listen", "127.0.0.1:0", "--data", str(data),
             "--threads", str(threads)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        line = self.proc.stdout.readline()
        assert line.startswith("listening "), line
        self.url = "http://" + line.split()[1]

    def enrol(self, venn, name):
        """A worker enrolled with the service (`venn cloud enrol-worker`): its identity."""
        out = self.data / f"{name}.worker"
        subprocess.run([venn, "cloud", "enrol-worker", "--data", str(self.data), "--name", name,
                        "--out", str(out)], check=True, stderr=subprocess.DEVNULL)  # fmt: skip
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def thunder_run(venn, d, n, workers, on_ray):
    """Seconds from the run's creation until it is done, and its tasks."""
    service = Service(venn, d / "service", 0 if on_ray else workers)
    try:
        a = cloud.register(service.url, identity=d / "a.id", name="a")
        b = cloud.register(service.url, identity=d / "b.id", name="b")
        ours, theirs = keys(0, n), keys(n // 2, n)
        a.upload(ours, dataset="a", key_file=d / "a.key")
        b.upload(theirs, dataset="b", key_file=d / "b.key")
        bound, runs = queue.Queue(), {}
        t = threading.Thread(
            target=lambda: runs.setdefault(
                "a", a.pair(d / "a.key", listen="127.0.0.1:0", on_listening=bound.put)))  # fmt: skip
        t.start()
        b.pair(d / "b.key", connect=bound.get(timeout=30))
        t.join(60)
        ray_worker = service.enrol(venn, "ray") if on_ray else None
        began = time.monotonic()
        worked = {}
        if on_ray:
            from venn.ray import thunder_workers

            w = threading.Thread(
                target=lambda: worked.setdefault(
                    "tasks", thunder_workers(service.url, ray_worker,
                                             idle_exit=1.0)))  # fmt: skip
            w.start()
        status = a.status(runs["a"], wait=3600)
        seconds = time.monotonic() - began
        if on_ray:
            w.join()
            assert worked["tasks"] == status["tasks"], (worked, status["tasks"])
        matched = a.result(runs["a"], d / "a.key", ours)
        assert matched == list(range(n // 2, n)), "the matches are the shared half"
        return seconds, status["tasks"]
    finally:
        service.stop()


PSI_PARTY = r"""
import json, sys, time
import venn, venn.ray
role, n, first, addr, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
MUL, MASK = 0x9E3779B97F4A7C15F39CC0605CEDC835, (1 << 128) - 1
keys = [f"{(k * MUL) & MASK:032x}" for k in range(first, first + n)]
where = {"listen": addr} if role == "receive" else {"connect": addr, "timeout": 600}
if workers:
    import ray
    ray.init(num_cpus=workers, object_store_memory=2 << 30, include_dashboard=False,
             log_to_driver=False)
    party = getattr(venn.ray, role)
    options = {"lanes": workers}
else:
    party, options = getattr(venn, role), {}
print("ready", flush=True)
sys.stdin.readline()
began = time.monotonic()
r = party(keys, timeout=600, **options, **where) if role == "receive" else party(keys, **options, **where)
seconds = time.monotonic() - began
ok = r.matched is None or r.matched == list(range(n // 2, n))
print(json.dumps({"seconds": seconds, "protocol_s": r.seconds, "ok": ok,
                  "matched": None if r.matched is None else len(r.matched)}), flush=True)
"""


def psi_run(n, workers):
    """Each party's seconds (receiver, sender) from a common start, and the receiver's
    protocol seconds."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PSI_PARTY, role, str(n), str(first), addr, str(workers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        for role, first in (("receive", 0), ("send", n // 2))
    ]
    for p in procs:  # both have their keys (and their clusters) before either starts
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    out = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert out[0]["ok"] and out[0]["matched"] == n // 2, out[0]
    return out[0]["seconds"], out[1]["seconds"], out[0]["protocol_s"]


def psi(a):
    n = a.rows
    one = psi_run(n, 0)
    print(f"kkrt16, {n:,} rows per party, one thread per party / one lane per Ray CPU")
    print("| workers per side | one machine, no Ray | Ray | Ray / one machine | "
          "rows/s per worker | scaling efficiency |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| (1 thread) | {one[0]:.1f} s (protocol {one[2]:.1f} s) | | | "
          f"{n / one[0]:,.0f} | |", flush=True)  # fmt: skip
    first = None
    for w in [int(x) for x in a.workers.split(",")]:
        r = psi_run(n, w)
        first = first or (w, r[0])
        print(f"| {w} | | {r[0]:.1f} s (sender {r[1]:.1f} s; lanes' sessions {r[2]:.1f} s) | "
              f"{r[0] / one[0]:.2f} | {n / r[0] / w:,.0f} | {first[1] * first[0] / (r[0] * w):.2f} |",
              flush=True)  # fmt: skip


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["thunder", "psi"])
    ap.add_argument("--venn")
    ap.add_argument("--log2n", type=int, default=15)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--workers", default="1,2")
    a = ap.parse_args()
    if a.what == "psi":
        return psi(a)
    n = 1 << a.log2n
    import ray

    print(f"thunder, n = 2^{a.log2n} per dataset, one plain run (2n pairings)")
    print("| workers | service's own pool | Ray | Ray / pool | Ray items/s/worker |")
    print("| --- | --- | --- | --- | --- |")
    first = None
    for w in [int(x) for x in a.workers.split(",")]:
        with tempfile.TemporaryDirectory() as d:
            pool, _ = thunder_run(a.venn, Path(d), n, w, on_ray=False)
        ray.init(num_cpus=w, include_dashboard=False, log_to_driver=False)
        try:
            with tempfile.TemporaryDirectory() as d:
                on_ray, tasks = thunder_run(a.venn, Path(d), n, w, on_ray=True)
        finally:
            ray.shutdown()
        per = 2 * n / on_ray / w
        first = first or (w, on_ray)
        scaling = first[1] * first[0] / (on_ray * w)
        print(f"| {w} | {pool:.1f} s | {on_ray:.1f} s ({tasks} tasks) | {on_ray / pool:.2f} | "
              f"{per:,.0f} (efficiency vs {first[0]}: {scaling:.2f}) |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
