#!/usr/bin/env bash
# What the database workloads' memory cgroup costs (issue 13: "the memory cgroup overhead below
# 2 %, same run, cap far above the database"). For each engine (`db`, `pg`), alternates fsarena
# cells with `cache = "off"` (no cgroup: the engine runs in fsarena's own process or a plain
# server) and `cache = "100g"` (the engine in a memory cgroup whose limit is far above the
# database, so the limit never evicts anything and only the cgroup's machinery differs). Both
# start cold: the built database is dropped from the page cache before the phase in either mode.
# Each repetition is one fsarena run of both settings back to back (order alternating), on a
# fresh ext4 loop target per cell, so drift over time does not favour one side.
# Prints transactions/s per repetition, the medians, the ratio 100g / off per engine and mode,
# with a 95 % interval of the mean log ratio over the repetitions.
# Usage: sudo bench/cgroup.sh [--runs N] [--scale F] [--engines db,pg]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=6 SCALE=0.01 ENGINES=db,pg
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) RUNS=$2; shift 2 ;;
        --scale) SCALE=$2; shift 2 ;;
        --engines) ENGINES=$2; shift 2 ;;
        *) echo "usage: bench/cgroup.sh [--runs N] [--scale F] [--engines db,pg]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench/cgroup.sh needs root (loop devices, cgroups, drop_caches)" >&2; exit 2; }
BIN=$PWD/target/release/fsarena
[ -x "$BIN" ] || cargo build --release
OUT=$PWD/bench/results/cgroup-$(date -u +%Y%m%d-%H%M%S)
WORK=/var/tmp/fsarena-bench-cgroup
finish() { "$BIN" cleanup --work-dir "$WORK" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap finish EXIT
trap 'exit 130' INT TERM
mkdir -p "$OUT"
for e in ${ENGINES//,/ }; do
    for c in off 100g; do
        printf 'workloads = ["%s"]\ntargets = ["ext4"]\n[workload.%s]\ncache = "%s"\n' \
            "$e" "$e" "$c" >"$OUT/$e-$c.toml"
    done
done
echo "fsarena $("$BIN" --version), scale $SCALE, $RUNS repetitions, engines $ENGINES" | tee "$OUT/setup.txt"
for r in $(seq "$RUNS"); do
    for e in ${ENGINES//,/ }; do
        if [ $((r % 2)) = 1 ]; then order="off 100g"; else order="100g off"; fi
        for c in $order; do
            "$BIN" run "$OUT/$e-$c.toml" --runs 1 --scale "$SCALE" --quiet --work-dir "$WORK" \
                --out "$OUT/$e-$c-$r" >/dev/null 2>>"$OUT/stderr.log"
        done
    done
done
python3 - "$OUT" "$RUNS" "$ENGINES" <<'PY'
import json, math, statistics, sys
out, runs, engines = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}
def tps(e, c, r):
    got = {}
    for line in open(f"{out}/{e}-{c}-{r}/results.jsonl"):
        m = json.loads(line)
        if m.get("record") != "measurement":
            continue
        if m["status"] != "ok":
            sys.exit(f"{e} cache={c} repetition {r}: status {m['status']}: {m.get('error')}")
        if m["metrics"].get("device_read_ios", 0) <= 0 and c != "off":
            print(f"note: {e} cache={c} repetition {r} {m['variant']}: no device reads")
        got[m["variant"] or "-"] = m["metrics"]["transactions_per_s"]
    return got
for e in engines:
    off = [tps(e, "off", r) for r in range(1, runs + 1)]
    cap = [tps(e, "100g", r) for r in range(1, runs + 1)]
    for v in sorted(off[0]):
        a, b = [x[v] for x in off], [x[v] for x in cap]
        lr = [math.log(y / x) for x, y in zip(a, b)]
        mean = statistics.mean(lr)
        half = T95.get(len(lr) - 1, 2.0) * statistics.stdev(lr) / math.sqrt(len(lr)) if len(lr) > 1 else float("inf")
        print(f"{e} {v}: off tps {[round(x) for x in a]} median {statistics.median(a):.0f}")
        print(f"{e} {v}: 100g tps {[round(x) for x in b]} median {statistics.median(b):.0f}")
        print(f"{e} {v}: 100g / off = {math.exp(mean):.3f} (95 % interval {math.exp(mean - half):.3f}–{math.exp(mean + half):.3f}), medians {statistics.median(b) / statistics.median(a):.3f}")
PY
echo "results: $OUT"
