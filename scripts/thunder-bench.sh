#!/usr/bin/env bash
# Thunder end to end through the `venn` binary (interim, until `venn bench --thunder`):
# two clients with N keys each (32 hex digits, half shared), a service without its own pool
# (SQLite), W worker processes with one thread each. Prints each upload's wall and CPU
# time, the run's time (last token to the first client's rows written), each worker's CPU,
# and checks the number of rows.
#
#   scripts/thunder-bench.sh N W [CHUNK_ITEMS]      (VENN=path/to/venn; default: release)
set -euo pipefail
N=$1; W=$2; CHUNK=${3:-16384}
V=$(realpath "${VENN:-target/release/venn}")
D=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$D"' EXIT
cd "$D"
python3 - "$N" <<'PY'
import sys
n = int(sys.argv[1])
for name, lo in (("a.csv", 0), ("b.csv", n // 2)):
    with open(name, "w") as f:
        f.write("key\n")
        f.writelines(f"{i:032x}\n" for i in range(lo, lo + n))
PY
"$V" cloud serve --listen 127.0.0.1:0 --threads 0 --data data > serve.out 2> serve.err &
until grep -q listening serve.out; do sleep 0.1; done
S=http://$(awk '{print $2}' serve.out)
for p in a b; do "$V" cloud register --server "$S" --identity $p.id --name $p 2>/dev/null; done
t0=$(date +%s.%N)
for p in a b; do
  /usr/bin/time -f "upload $p: %e s wall, %U+%S s cpu" "$V" cloud upload --server "$S" \
    --identity $p.id --dataset d --input $p.csv --key-file $p.key --chunk-items "$CHUNK" \
    > /dev/null 2> upload-$p.err
  tail -1 upload-$p.err
done
t1=$(date +%s.%N)
"$V" cloud pair --server "$S" --identity a.id --key-file a.key --listen 127.0.0.1:0 \
  > run.out 2> pair-a.err &
PA=$!
until grep -q 'listening on' pair-a.err; do sleep 0.1; done
ADDR=$(sed -n 's/.*listening on //p' pair-a.err)
"$V" cloud pair --server "$S" --identity b.id --key-file b.key --connect "$ADDR" > /dev/null 2>&1
wait $PA
RUN=$(cat run.out)
t2=$(date +%s.%N)
WORKERS=()
for i in $(seq 1 "$W"); do
  /usr/bin/time -o w$i.time -f "worker $i: %e s wall, %U+%S s cpu" "$V" cloud worker \
    --server "$S" --worker-secret data/worker-secret --threads 1 --idle-exit 3 2> w$i.err &
  WORKERS+=($!)
done
"$V" cloud result --server "$S" --identity a.id --key-file a.key --input a.csv --run "$RUN" \
  --output a.out 2> result.err
t3=$(date +%s.%N)
wait "${WORKERS[@]}"
cat w*.time   # the 3 s of --idle-exit are in each worker's wall time
ROWS=$(($(wc -l < a.out) - 1))
echo "rows: $ROWS (expected $((N / 2)))"
python3 -c "print(f'uploads: {$t1-$t0:.1f} s; run: {$t3-$t2:.1f} s; pairings/s (wall): {2*$N/($t3-$t2):.0f}')"
[ "$ROWS" -eq $((N / 2)) ]
