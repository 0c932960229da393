#!/usr/bin/env bash
# Refits `venn plan`'s cost model on this machine: runs `venn bench` (loopback at several
# set sizes, equal and with one set small, and a slow-latency link to count each
# protocol's round trips) for every protocol `venn plan` can recommend, at 1 and 2 threads
# per party, and writes the fit to crates/venn-cli/src/plan/costs.json (rebuild to use
# it). About 35 minutes on 2 cores; run nothing else meanwhile.
#
#   cargo build --release --locked && scripts/plan-fit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venn=${VENN_BIN:-target/release/venn}
# The rows fitted are kept here (`venn plan --fit` refits from them without a rerun).
out=target/plan-fit
mkdir -p "$out"
# Protocols quick at 2^20 are measured up to it; the others up to 2^16 (beyond, `venn
# plan` reads them at their last cost per item and marks the figure).
fast=rr22,rr22-m,rr22-ca,rr22-sum,kkrt16,pssz15,rr17-de,rr17-ec,dcw13
slow=rr17-bloom,rr17-de-sm,kbm23,psww18-ca,psww18-sum,hek12-ca,dgt12-ca,dkt10
common=(--threads 1,2 --bins lan,wan --offline ot,bfv,dealer --json)
"$venn" bench --protocol "$fast" --log2n 10,12,14,16,18,20 --repeat 3 "${common[@]}" > "$out/fast.json"
"$venn" bench --protocol "$slow" --log2n 10,12,14,16 "${common[@]}" > "$out/slow.json"
# Unequal sets: each set growing against 2^10 of the other (the model's edges, read
# between the equal sets and them: crates/venn-cli/src/plan/model.rs).
"$venn" bench --protocol "$fast" --repeat 3 "${common[@]}" \
  --sizes 2^14:2^10,2^17:2^10,2^20:2^10,2^10:2^14,2^10:2^17,2^10:2^20 > "$out/fast-unequal.json"
"$venn" bench --protocol "$slow" "${common[@]}" \
  --sizes 2^13:2^10,2^16:2^10,2^10:2^13,2^10:2^16 > "$out/slow-unequal.json"
# Round trips: the same runs at two sizes over 50 ms of round trip (the link fast enough
# that its transfer time hardly counts).
"$venn" bench --protocol "$fast" --log2n 12,16 --net 10gbit,50ms "${common[@]}" > "$out/fast-rtt.json"
"$venn" bench --protocol "$slow" --log2n 10,14 --net 10gbit,50ms "${common[@]}" > "$out/slow-rtt.json"
# The share of the transfer time each waits for: one size on a link slow enough that
# its bytes take longer than its computation.
"$venn" bench --protocol "$fast" --log2n 16 --net 200mbit,0.2ms "${common[@]}" > "$out/fast-rate.json"
"$venn" bench --protocol "$slow" --log2n 12 --net 100mbit,0.2ms "${common[@]}" > "$out/slow-rate.json"
measured="$(date -u +%F), commit $(git rev-parse --short HEAD), $(nproc) cores of $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
"$venn" plan --fit "$out"/{fast,slow,fast-unequal,slow-unequal,fast-rtt,slow-rtt,fast-rate,slow-rate}.json \
  --measured "$measured" > crates/venn-cli/src/plan/costs.json.new
mv crates/venn-cli/src/plan/costs.json.new crates/venn-cli/src/plan/costs.json
echo "wrote crates/venn-cli/src/plan/costs.json ($measured)"
