#!/usr/bin/env python3
"""The Python API beside the command line on the same data (the target: ≤ 5% over the CLI).

For each repeat: the two CSV files of `scripts/gen-rows.py` (n rows each, half the keys
shared), then
  - the CLI: `venn receive` (listening, writing its output) and `venn send` as two
    processes; timed from starting them until both exit (reading the files included);
  - Python: two Python processes that read the same keys into lists first (not timed),
    then call `venn.receive` / `venn.send`; timed from the first call to the last return.
Both report the protocol's own time (the CLI's --stats-json, `RunResult.seconds`); the
receiver's matched count must be n/2 on both. Run inside the venv that has the wheel:

    target/python-venv/bin/python scripts/python-bench.py --venn target/release/venn \\
        --log2n 20 --repeat 3
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MUL = 0x9E3779B97F4A7C15F39CC0605CEDC835
MASK = (1 << 128) - 1

PARTY = r"""
import csv, json, sys, time, venn
role, path, port, protocol = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
with open(path, newline="") as f:
    keys = [row[0] for row in csv.reader(f)][1:]
print("ready", flush=True)
sys.stdin.readline()
began = time.time()
where = {"listen": "127.0.0.1:" + port} if role == "receive" else {"connect": "127.0.0.1:" + port}
r = getattr(venn, role)(keys, protocol=protocol, timeout=120, **where)
ended = time.time()
print(json.dumps({"began": began, "ended": ended, "protocol_s": r.seconds,
                  "matched": None if r.matched is None else len(r.matched)}), flush=True)
"""


def write_rows(path, first, n):
    with open(path, "w") as f:
        f.write("key,amount,region\n")
        for k in range(first, first + n):
            f.write(f"{(k * MUL) & MASK:032x},{k % 100000},r{k % 97}\n")


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(venn, d, protocol):
    port = str(free_port())
    began = time.time()
    recv = subprocess.Popen(
        [venn, "receive", "--input", f"{d}/r.csv", "--column", "key", "--protocol", protocol,
         "--listen", f"127.0.0.1:{port}", "--output", f"{d}/out.csv",
         "--stats-json", f"{d}/stats.json"],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    send = subprocess.Popen(
        [venn, "send", "--input", f"{d}/s.csv", "--column", "key", "--protocol", protocol,
         "--connect", f"127.0.0.1:{port}"],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert send.wait() == 0 and recv.wait() == 0
    wall = time.time() - began
    stats = json.load(open(f"{d}/stats.json"))
    rows = sum(1 for _ in open(f"{d}/out.csv")) - 1
    return wall, stats["total_seconds"], rows


def python(d, protocol):
    port = str(free_port())
    procs = {}
    for role, path in (("receive", "r.csv"), ("send", "s.csv")):
        p = subprocess.Popen(
            [sys.executable, "-c", PARTY, role, f"{d}/{path}", port, protocol],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert p.stdout.readline().strip() == "ready"
        procs[role] = p
    for p in procs.values():
        p.stdin.write("go\n")
        p.stdin.flush()
    out = {role: json.loads(p.stdout.readline()) for role, p in procs.items()}
    for p in procs.values():
        assert p.wait() == 0
    wall = max(o["ended"] for o in out.values()) - min(o["began"] for o in out.values())
    return wall, out["receive"]["protocol_s"], out["receive"]["matched"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--venn", required=True)
    ap.add_argument("--log2n", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--protocol", default="kkrt16")
    a = ap.parse_args()
    n = 1 << a.log2n
    with tempfile.TemporaryDirectory() as d:
        write_rows(f"{d}/s.csv", 0, n)
        write_rows(f"{d}/r.csv", n // 2, n)
        print(f"{a.protocol}, n = 2^{a.log2n} per party; wall s (protocol s)")
        ratios = []
        for i in range(a.repeat):
            cw, cp, crows = cli(a.venn, d, a.protocol)
            pw, pp, prows = python(d, a.protocol)
            assert crows == n // 2 and prows == n // 2, (crows, prows)
            ratios.append(pw / cw)
            print(f"  run {i + 1}: CLI {cw:.3f} ({cp:.3f}), Python {pw:.3f} ({pp:.3f}), "
                  f"Python / CLI = {pw / cw:.3f}; {n // 2} matched on both ✓")  # fmt: skip
        ratios.sort()
        print(f"median Python / CLI: {ratios[len(ratios) // 2]:.3f}")


if __name__ == "__main__":
    main()
