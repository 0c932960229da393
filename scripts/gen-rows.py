#!/usr/bin/env python3
"""Writes a benchmark CSV: a header, then N rows of a 32-hex-digit key and two payload
columns. Keys are a bijection of the row's number (k * odd constant mod 2^128), so files
made with --first A and --first B share exactly the keys of the numbers both ranges hold.

    scripts/gen-rows.py --rows 100000000 --first 0        > sender.csv
    scripts/gen-rows.py --rows 100000000 --first 50000000 > receiver.csv
"""
import argparse
import sys

MUL = 0x9E3779B97F4A7C15F39CC0605CEDC835  # odd: multiplication is a bijection mod 2^128
MASK = (1 << 128) - 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--first", type=int, default=0)
    a = ap.parse_args()
    out = sys.stdout.buffer
    out.write(b"key,amount,region\n")
    chunk = 100_000
    for start in range(a.first, a.first + a.rows, chunk):
        end = min(start + chunk, a.first + a.rows)
        rows = [f"{(k * MUL) & MASK:032x},{k % 100000},r{k % 97}\n" for k in range(start, end)]
        out.write("".join(rows).encode())


if __name__ == "__main__":
    main()
