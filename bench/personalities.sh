#!/usr/bin/env bash
# The personality engine beside the closest existing tool on tmpfs (so the file system costs
# next to nothing and the engines are what is measured): fsarena's `fileserver` against
# dbench (the NetBench file-server load, 16 clients, creates/writes/reads/deletes/stats),
# both 16 threads, operations per second. Installs dbench (Debian) if missing.
# Usage: sudo bench/personalities.sh [--seconds N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=20 RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) SECONDS_EACH=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) echo "usage: bench/personalities.sh [--seconds N] [--runs N]" >&2; exit 2 ;;
    esac
done
command -v dbench >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dbench >/dev/null
BIN=$PWD/target/release/fsarena
BASE=/var/tmp/fsarena-bench-personalities
OUT=bench/results/personalities-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$BASE/mnt" "$OUT"
finish() { umount "$BASE/mnt" 2>/dev/null || true; rm -rf "$BASE"; }
trap finish EXIT
mount -t tmpfs -o size=8G tmpfs "$BASE/mnt"
LOADFILE=$(ls /usr/share/dbench/client.txt* 2>/dev/null | head -1)
for r in $(seq "$RUNS"); do
    # fsarena: the fileserver mix as shipped at --scale 1 (10,000 files, 500,000 operations),
    # 16 threads.
    mkdir -p "$BASE/mnt/fs"
    "$BIN" run --target "dir:$BASE/mnt/fs" --workload fileserver --scale 1 --runs 1 \
        --quiet --format json --out "$OUT/fsarena-$r" >/dev/null
    rm -rf "$BASE/mnt/fs"
    # dbench: 16 clients for SECONDS_EACH seconds (its default warm-up first), its own operation table.
    mkdir -p "$BASE/mnt/db"
    dbench -D "$BASE/mnt/db" -t "$SECONDS_EACH" ${LOADFILE:+-c "$LOADFILE"} 16 \
        >"$OUT/dbench-$r.txt" 2>&1
    rm -rf "$BASE/mnt/db"
done
python3 - "$OUT" "$RUNS" "$SECONDS_EACH" <<'PY'
import json, re, sys, statistics
out, runs, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
fs, db = [], []
for r in range(1, runs + 1):
    for line in open(f"{out}/fsarena-{r}/results.jsonl"):
        m = json.loads(line)
        if m.get("record") == "measurement" and m["status"] == "ok":
            fs.append(m["metrics"]["ops_per_s"])
    text = open(f"{out}/dbench-{r}.txt").read()
    table = text.split("Operation")[-1]
    ops = sum(int(c) for c in re.findall(r"^\s*\w+\s+(\d+)\s+[\d.]+\s+[\d.]+\s*$", table, re.M))
    db.append(ops / secs)
print(f"fsarena fileserver ops/s: {[round(x) for x in fs]} median {statistics.median(fs):.0f}")
print(f"dbench (16 clients) ops/s: {[round(x) for x in db]} median {statistics.median(db):.0f}")
print(f"ratio fsarena / dbench: {statistics.median(fs) / statistics.median(db):.2f}")
PY
