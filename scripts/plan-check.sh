#!/usr/bin/env bash
# Checks `venn plan`'s cost model against `venn bench` on configurations none of its
# fitted rows were measured in — five of equal sets (set sizes between and beyond the
# fitted ones, emulated networks, thread counts) and five of unequal ones (each set the
# larger, a circuit protocol): prints each row's measured and predicted time, traffic each
# way and peak memory and their ratios, and the memory model beside the peak. Each row the
# median of three runs (the first run of a sitting can be slow). About 10 minutes on 2
# cores; run nothing else meanwhile.
#
#   cargo build --release --locked && scripts/plan-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venn=${VENN_BIN:-target/release/venn}
# The rows measured are kept here (`venn plan --check` reads them again after a refit).
out=target/plan-check
mkdir -p "$out"
fast=rr22,rr22-m,kkrt16,pssz15,rr17-de,rr17-ec,dcw13
"$venn" bench --json --repeat 3 --protocol "$fast" --log2n 17 --threads 1 > "$out/1.json"
"$venn" bench --json --repeat 3 --protocol "$fast" --log2n 19 --threads 2 --net lan > "$out/2.json"
"$venn" bench --json --repeat 3 --protocol rr22,rr22-m,kkrt16,pssz15,dgt12-ca --log2n 16 --threads 1 --net wan > "$out/3.json"
"$venn" bench --json --repeat 3 --protocol rr22,rr22-m,kkrt16,rr17-ec,psww18-ca,psww18-sum,dgt12-ca --sigma any,32 --log2n 15 --threads 2 --net kkrt16-wan > "$out/4.json"
"$venn" bench --json --repeat 3 --protocol rr17-bloom,rr17-de-sm,kbm23,hek12-ca,dkt10 --offline ot,dealer --log2n 13 --threads 1 --net 1gbit,10ms > "$out/5.json"
"$venn" bench --json --repeat 3 --protocol rr22 --sizes 1000000:10000,10000:1000000 > "$out/6.json"
"$venn" bench --json --repeat 3 --protocol rr22-m --sizes 2^19:2^12 > "$out/7.json"
"$venn" bench --json --repeat 3 --protocol kkrt16 --sizes 2^11:2^18 > "$out/8.json"
"$venn" bench --json --repeat 3 --protocol rr22-ca --sizes 2^18:2^13 > "$out/9.json"
"$venn" plan --check "$out"/{1,2,3,4,5,6,7,8,9}.json
