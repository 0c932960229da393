#!/usr/bin/env python3
"""Venn on Ray beside Venn on one machine (issue 14's "per-worker throughput and scaling
efficiency at 1 → 2 workers").

thunder: two datasets of n keys each (half shared) uploaded to a `venn cloud serve`; one
plain run, timed from the run's creation until it is done, worked either by the service's
own pool of W threads or by `venn.ray.thunder_workers` on a local Ray cluster of W CPUs
(the service then has none). Each run's matches are checked (n/2, the right positions).
Run inside the venv that has the wheel and Ray:

    target/python-venv/bin/python scripts/ray-bench.py thunder --venn target/release/venn \\
        --log2n 15 --workers 1,2
"""
import argparse
import queue
import subprocess
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
        began = time.monotonic()
        worked = {}
        if on_ray:
            from venn.ray import thunder_workers

            w = threading.Thread(
                target=lambda: worked.setdefault(
                    "tasks", thunder_workers(service.url, service.data / "worker-secret",
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["thunder"])
    ap.add_argument("--venn", required=True)
    ap.add_argument("--log2n", type=int, default=15)
    ap.add_argument("--workers", default="1,2")
    a = ap.parse_args()
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
