#!/usr/bin/env bash
# Files/s of create, scan and delete on 1, 2 and 4 MPI ranks sharing one directory, on a
# tmpfs and on an ext4 loop image mounted here, plus 1 rank under mpirun against the same
# run without MPI (the harness's own cost under MPI). Needs root and a build with
# `--features mpi`. Usage: sudo bench/mpi.sh [--scale F] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=0.01 RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --scale) SCALE=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        *) echo "usage: bench/mpi.sh [--scale F] [--runs N]" >&2; exit 2 ;;
    esac
done
BIN=$PWD/target/release/fsarena
BASE=/var/tmp/fsarena-bench-mpi
OUT=bench/results/mpi-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$BASE/tmpfs" "$BASE/ext4" "$OUT"
LOOP=
finish() {
    umount "$BASE/tmpfs" 2>/dev/null || true
    umount "$BASE/ext4" 2>/dev/null || true
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null || true
    rm -rf "$BASE"
}
trap finish EXIT
mount -t tmpfs -o size=4G tmpfs "$BASE/tmpfs"
truncate -s 4G "$BASE/ext4.img"
mkfs.ext4 -q "$BASE/ext4.img"
LOOP=$(losetup --find --show "$BASE/ext4.img")
mount "$LOOP" "$BASE/ext4"
common=(--workload create,scan,delete --threads 1 --runs "$RUNS" --scale "$SCALE" --quiet
        --format csv --work-dir "$BASE/work")
for fs in tmpfs ext4; do
    "$BIN" run --target "dir:$BASE/$fs" "${common[@]}" --out "$OUT/$fs-nompi" >/dev/null
    for np in 1 2 4; do
        mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np "$np" \
            "$BIN" run --target "dir:$BASE/$fs" "${common[@]}" --out "$OUT/$fs-np$np" >/dev/null
    done
done
uptime > "$OUT/load.txt"
# Only the records are kept (the reports are rebuilt with `fsarena report DIR`).
find "$OUT" \( -name report.html -o -name 'summary.*' -o -name study.md \) -delete
# files/s per run directory: mean over the repetitions, per workload and point.
python3 - "$OUT" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
for d in sorted(os.listdir(out)):
    p = os.path.join(out, d, "results.jsonl")
    if not os.path.exists(p):
        continue
    rows = {}
    for line in open(p):
        r = json.loads(line)
        if r.get("record") != "measurement" or r["status"] != "ok":
            continue
        key = r["workload"] + (" " + r["variant"] if r["variant"] else "")
        rows.setdefault(key, []).append(r["metrics"]["files_per_s"])
    cells = ", ".join(f"{k} {statistics.mean(v):,.0f} ± {statistics.stdev(v) if len(v) > 1 else 0:,.0f}" for k, v in rows.items())
    print(f"{d}: {cells}")
PY
