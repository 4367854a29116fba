#!/usr/bin/env bash
# The memory cgroup's own cost with the cell-to-cell noise taken out (issue 13's "memory cgroup
# overhead below 2 %, same run, cap far above the database"). bench/cgroup.sh compares whole
# fsarena cells, each on a fresh file system, and their ~10 % spread hides a 2 % effect. Here one
# PostgreSQL server, one database and one file system serve every run: the server's processes
# (postmaster, its background workers and so the backends it forks) are moved, between runs,
# alternately into a memory cgroup whose limit is far above the database (100 GiB) and back to
# the cgroup they came from, and the same pgbench run is timed each time, caches dropped before
# each, as fsarena's cells do. Pairs (outside, inside) in alternating order; the ratio is the
# mean of ln(tps inside / tps outside) over the pairs, with its 95 % t interval.
# What this does not include: fsarena's poll of the cgroup (timed separately in BENCHMARKS.md).
# --limit max leaves the cgroup without a limit (to tell the limit's cost from the cgroup's).
# --parent own makes the cgroup a child of the server's own memory cgroup, where fsarena
# makes its cgroups (cgroup::parent); --parent root puts it beside it, under the root (the
# placement of this script's first measurements).
# --client inside starts pgbench, the client, in the same cgroup as the server for the inside
# runs (by default it stays where it was started, outside, as fsarena ran it before).
# Usage: sudo bench/cgroup_paired.sh [--pairs N] [--seconds S] [--clients N] [--mode tpcb|select-only] [--limit 100g|max] [--client outside|inside] [--parent own|root]
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=10 SECS=5 CLIENTS=2 MODE=tpcb LIMIT=100g CLIENT=outside PARENT=own
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) PAIRS=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --mode) MODE=$2; shift 2 ;;
        --limit) LIMIT=$2; shift 2 ;;
        --client) CLIENT=$2; shift 2 ;;
        --parent) PARENT=$2; shift 2 ;;
        *) echo "usage: bench/cgroup_paired.sh [--pairs N] [--seconds S] [--clients N] [--mode tpcb|select-only] [--limit 100g|max] [--client outside|inside] [--parent own|root]" >&2; exit 2 ;;
    esac
done
case "$MODE" in tpcb) SFLAG="" ;; select-only) SFLAG="-S" ;; *) echo "--mode: tpcb or select-only" >&2; exit 2 ;; esac
case "$CLIENT" in outside|inside) ;; *) echo "--client: outside or inside" >&2; exit 2 ;; esac
case "$PARENT" in own|root) ;; *) echo "--parent: own or root" >&2; exit 2 ;; esac
case "$LIMIT" in 100g) LIMIT_BYTES=$((100 << 30)) ;; max) LIMIT_BYTES=-1 ;; *) echo "--limit: 100g or max" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "bench/cgroup_paired.sh needs root (loop device, cgroups, drop_caches)" >&2; exit 2; }
MEMCG_ROOT=/sys/fs/cgroup/memory
[ -d "$MEMCG_ROOT" ] || { echo "no cgroup v1 memory controller at $MEMCG_ROOT" >&2; exit 2; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/pgbench" ] || { echo "PostgreSQL is not installed (./dev deps)" >&2; exit 2; }
USER_PG=fsarena-pg
id "$USER_PG" >/dev/null 2>&1 || useradd --system --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin --user-group "$USER_PG"
JOBS=$(( CLIENTS < $(nproc) ? CLIENTS : $(nproc) ))
BASE=/var/tmp/fsarena-bench-cgpair
CG=$MEMCG_ROOT/fsarena-bench-cgpair-$$
OUT=$PWD/bench/results/cgroup-paired-$(date -u +%Y%m%d-%H%M%S)
LOOP=""
DATA=$BASE/mnt/data
finish() {
    if [ -f "$DATA/postmaster.pid" ]; then
        runuser -u "$USER_PG" -- "$PGBIN/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    if [ -d "$CG" ]; then
        for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do echo "$p" >"$MEMCG_ROOT/cgroup.procs" 2>/dev/null || true; done
        rmdir "$CG" 2>/dev/null || true
    fi
    umount "$BASE/mnt" 2>/dev/null || true
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    rm -rf "$BASE"
}
trap finish EXIT
trap 'exit 130' INT TERM
rm -rf "$BASE"
mkdir -p "$BASE/mnt" "$OUT"
truncate -s 4G "$BASE/ext4.img"
LOOP=$(losetup -f --show --direct-io=on "$BASE/ext4.img")
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP"
mount "$LOOP" "$BASE/mnt"
mkdir -p "$DATA" "$BASE/mnt/sock" "$BASE/mnt/log"
chown "$USER_PG:$USER_PG" "$DATA" "$BASE/mnt/sock" "$BASE/mnt/log"
chmod 700 "$DATA"
runuser -u "$USER_PG" -- "$PGBIN/initdb" -D "$DATA" -U fsarena -A trust -E UTF8 --locale=C \
    --no-sync >/dev/null
runuser -u "$USER_PG" -- "$PGBIN/pg_ctl" -D "$DATA" -w -l "$BASE/mnt/log/postgres.log" \
    -o "-c listen_addresses= -c unix_socket_directories=$BASE/mnt/sock -c shared_buffers=128MB \
        -c max_connections=$((CLIENTS + 10)) -c max_wal_senders=0" start >/dev/null
PG="-h $BASE/mnt/sock -U fsarena"
"$PGBIN/pgbench" $PG -i -q -s 1 postgres >/dev/null 2>&1
POSTMASTER=$(head -1 "$DATA/postmaster.pid")
HOME_CG=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' "/proc/$POSTMASTER/cgroup")
if [ "$PARENT" = own ]; then CG=$MEMCG_ROOT${HOME_CG%/}/fsarena-bench-cgpair-$$; fi
mkdir "$CG"
echo "$LIMIT_BYTES" >"$CG/memory.limit_in_bytes"
server_pids() { echo "$POSTMASTER"; pgrep -P "$POSTMASTER" || true; }
move_to() { for p in $(server_pids); do echo "$p" >"$1/cgroup.procs" 2>/dev/null || true; done; }
one() { # $1 = outside | inside, $2 = pair number
    if [ "$1" = inside ]; then move_to "$CG"; else move_to "$MEMCG_ROOT$HOME_CG"; fi
    "$PGBIN/psql" $PG -d postgres -X -q -c CHECKPOINT
    sync; echo 3 >/proc/sys/vm/drop_caches
    local into=""
    if [ "$1" = inside ] && [ "$CLIENT" = inside ]; then into="$CG/cgroup.procs"; fi
    # The client enters the cgroup (or not) between fork and exec, like the server's children.
    sh -c 'if [ -n "$1" ]; then echo $$ >"$1"; fi
           awk -F: -v who="$3" '"'"'$2 ~ /(^|,)memory(,|$)/ {print who " client in memory cgroup " $3}'"'"' /proc/$$/cgroup >>"$2"
           shift 3; exec "$@"' sh "$into" "$OUT/client-placement.txt" "$1 $2" \
        "$PGBIN/pgbench" $PG -n -c "$CLIENTS" -j "$JOBS" -T "$SECS" $SFLAG postgres \
        >"$OUT/pgbench-$1-$2.txt" 2>&1
    # Not vacuous: the server really ran where it was put.
    local where
    where=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' "/proc/$POSTMASTER/cgroup")
    echo "$1 $2 postmaster in memory cgroup $where" >>"$OUT/placement.txt"
}
echo "PostgreSQL $PGBIN, pgbench scale 1, $CLIENTS clients, $SECS s, $MODE, $PAIRS pairs, ext4 on $LOOP; cgroup $CG (limit $LIMIT, client $CLIENT, parent $PARENT), home $HOME_CG" | tee "$OUT/setup.txt"
for r in $(seq "$PAIRS"); do
    if [ $((r % 2)) = 1 ]; then one outside "$r"; one inside "$r"; else one inside "$r"; one outside "$r"; fi
done
cp "$BASE/mnt/log/postgres.log" "$OUT/"
echo "cgroup's peak usage: $(cat "$CG/memory.max_usage_in_bytes") bytes" | tee -a "$OUT/setup.txt"
python3 - "$OUT" "$PAIRS" "$CG" <<'PY'
import math, re, statistics, sys
out, pairs, cg = sys.argv[1], int(sys.argv[2]), sys.argv[3]
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
       11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 19: 2.09}
def tps(side, r):
    text = open(f"{out}/pgbench-{side}-{r}.txt").read()
    t = re.search(r"^tps = ([\d.]+)", text, re.M)
    if not t:
        sys.exit(f"pgbench {side} {r}: no tps in\n{text}")
    return float(t.group(1))
placed = open(f"{out}/placement.txt").read().splitlines()
if not all((l.split()[0] == "inside") == l.endswith(cg.split("/memory", 1)[1]) for l in placed):
    sys.exit("the server was not where the run says it was:\n" + "\n".join(placed))
a = [tps("outside", r) for r in range(1, pairs + 1)]
b = [tps("inside", r) for r in range(1, pairs + 1)]
lr = [math.log(y / x) for x, y in zip(a, b)]
m, h = statistics.mean(lr), T95.get(len(lr) - 1, 2.1) * statistics.stdev(lr) / math.sqrt(len(lr))
print(f"outside tps: {[round(x) for x in a]} median {statistics.median(a):.0f}")
print(f"inside  tps: {[round(x) for x in b]} median {statistics.median(b):.0f}")
print(f"inside / outside = {math.exp(m):.4f} (95 % interval {math.exp(m - h):.4f}–{math.exp(m + h):.4f})")
PY
echo "results: $OUT"
