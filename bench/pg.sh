#!/usr/bin/env bash
# fsarena's `pg` cell beside the same pgbench run by hand, on the same ext4 file system (a loop
# image this script makes and removes): issue 13's "pg tps within noise of the same pgbench
# run by hand". Both sides: the same PostgreSQL, initdb as the unprivileged user fsarena uses,
# the same server settings (shared_buffers 128 MB, max_connections clients + 10, no TCP, I/O
# timing on), `pgbench -i -s SCALE`, CHECKPOINT, caches dropped, then `pgbench -n -c CLIENTS
# -j min(CLIENTS, CPUs) -T SECONDS` (-S for select-only). fsarena runs with `cache = "off"`:
# its memory cgroup has no hand-run equivalent that is not fragile, so the comparison is of
# the engine and the harness, not of the cache limit. The hand run logs no per-transaction
# latencies (fsarena's -l does), so the ratio includes that cost.
# Prints both tps per repetition, the medians and the ratio fsarena / by hand.
# Usage: sudo bench/pg.sh [--scale F] [--clients N] [--seconds S] [--mode tpcb|select-only] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=0.01 CLIENTS=2 SECS=5 MODE=tpcb RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --scale) SCALE=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        --mode) MODE=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) echo "usage: bench/pg.sh [--scale F] [--clients N] [--seconds S] [--mode tpcb|select-only] [--runs N]" >&2; exit 2 ;;
    esac
done
case "$MODE" in tpcb) SFLAG="" ;; select-only) SFLAG="-S" ;; *) echo "--mode: tpcb or select-only" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "bench/pg.sh needs root (loop device, mount, drop_caches)" >&2; exit 2; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/pgbench" ] || { echo "PostgreSQL is not installed (./dev deps)" >&2; exit 2; }
BIN=$PWD/target/release/fsarena
[ -x "$BIN" ] || cargo build --release
# fsarena's pgbench scale for --scale F: 64 × F, at least 1 (src/workload/pg/options.rs).
PGSCALE=$(python3 -c "print(max(1, min(100000, round(64 * float('$SCALE')))))")
JOBS=$(( CLIENTS < $(nproc) ? CLIENTS : $(nproc) ))
USER_PG=fsarena-pg
id "$USER_PG" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin --user-group "$USER_PG"
BASE=/var/tmp/fsarena-bench-pg
OUT=$PWD/bench/results/pg-$(date -u +%Y%m%d-%H%M%S)
LOOP=""
finish() {
    if [ -f "$BASE/mnt/hand/data/postmaster.pid" ]; then
        runuser -u "$USER_PG" -- "$PGBIN/pg_ctl" -D "$BASE/mnt/hand/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    "$BIN" cleanup --work-dir "$BASE/work" >/dev/null 2>&1 || true
    umount "$BASE/mnt" 2>/dev/null || true
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    rm -rf "$BASE"
}
trap finish EXIT
trap 'exit 130' INT TERM
rm -rf "$BASE"
mkdir -p "$BASE/mnt" "$OUT"
# Room for the database (≈ 16 MiB per pgbench scale unit), its WAL and both sides' copies.
SIZE_MB=$(( 2048 + PGSCALE * 64 ))
truncate -s "${SIZE_MB}M" "$BASE/ext4.img"
LOOP=$(losetup -f --show "$BASE/ext4.img")
mkfs.ext4 -q -F "$LOOP"
mount "$LOOP" "$BASE/mnt"
cat >"$OUT/plan.toml" <<EOF
workloads = ["pg"]
targets = ["dir:$BASE/mnt/fsarena"]
[workload.pg]
cache = "off"
threads = $CLIENTS
seconds = $SECS
pgbench_scale = $PGSCALE
modes = ["$MODE"]
EOF
echo "PostgreSQL $PGBIN, pgbench scale $PGSCALE, $CLIENTS clients ($JOBS threads), $SECS s, $MODE, ext4 on $LOOP" | tee "$OUT/setup.txt"
hand() {
    local r=$1 dir=$BASE/mnt/hand
    mkdir -p "$dir/data" "$dir/sock" "$dir/log"
    chown "$USER_PG:$USER_PG" "$dir/data" "$dir/sock" "$dir/log"
    chmod 700 "$dir/data"
    runuser -u "$USER_PG" -- "$PGBIN/initdb" -D "$dir/data" -U fsarena -A trust -E UTF8 \
        --locale=C --no-sync >/dev/null
    runuser -u "$USER_PG" -- "$PGBIN/pg_ctl" -D "$dir/data" -w -l "$dir/log/postgres.log" \
        -o "-c listen_addresses= -c unix_socket_directories=$dir/sock -c shared_buffers=128MB \
            -c max_connections=$((CLIENTS + 10)) -c max_wal_senders=0 -c track_io_timing=on \
            -c track_wal_io_timing=on" start >/dev/null
    "$PGBIN/pgbench" -h "$dir/sock" -U fsarena -i -q -s "$PGSCALE" postgres >/dev/null 2>&1
    "$PGBIN/psql" -h "$dir/sock" -U fsarena -d postgres -X -q -c CHECKPOINT
    sync; echo 3 >/proc/sys/vm/drop_caches
    "$PGBIN/pgbench" -h "$dir/sock" -U fsarena -n -c "$CLIENTS" -j "$JOBS" -T "$SECS" $SFLAG \
        postgres >"$OUT/pgbench-hand-$r.txt" 2>&1
    runuser -u "$USER_PG" -- "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    cp "$dir/log/postgres.log" "$OUT/postgres-hand-$r.log"
    rm -rf "$dir"
}
for r in $(seq "$RUNS"); do
    # Alternate which side goes first, so drift over the run does not favour one.
    if [ $((r % 2)) = 1 ]; then hand "$r"; fi
    mkdir -p "$BASE/mnt/fsarena"
    "$BIN" run "$OUT/plan.toml" --runs 1 --quiet --work-dir "$BASE/work" \
        --out "$OUT/fsarena-$r" >/dev/null
    rm -rf "$BASE/mnt/fsarena"
    if [ $((r % 2)) = 0 ]; then hand "$r"; fi
done
python3 - "$OUT" "$RUNS" <<'PY'
import json, re, sys, statistics
out, runs = sys.argv[1], int(sys.argv[2])
fs, hand = [], []
for r in range(1, runs + 1):
    for line in open(f"{out}/fsarena-{r}/results.jsonl"):
        m = json.loads(line)
        if m.get("record") == "measurement":
            if m["status"] != "ok":
                sys.exit(f"fsarena run {r}: status {m['status']}")
            fs.append(m["metrics"]["transactions_per_s"])
    text = open(f"{out}/pgbench-hand-{r}.txt").read()
    t = re.search(r"^tps = ([\d.]+)", text, re.M)
    if not t:
        sys.exit(f"pgbench by hand, run {r}: no tps in\n{text}")
    hand.append(float(t.group(1)))
print(f"fsarena pg tps:      {[round(x, 1) for x in fs]} median {statistics.median(fs):.1f}")
print(f"pgbench by hand tps: {[round(x, 1) for x in hand]} median {statistics.median(hand):.1f}")
print(f"ratio fsarena / by hand: {statistics.median(fs) / statistics.median(hand):.3f}")
PY
echo "results: $OUT"
