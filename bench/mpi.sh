#!/usr/bin/env bash
# Files/s of create, scan and delete on 1, 2 and 4 MPI ranks on one dir: target, each rank
# in its own subtree (--rank-dirs own) and all in one tree (shared), on a tmpfs and on an
# ext4 loop image mounted here, plus 1 rank under mpirun against the same run without MPI
# (the harness's own cost under MPI). Prints two Markdown tables for BENCHMARKS.md. Needs
# root and a build with `--features mpi`. Usage: sudo bench/mpi.sh [--scale F] [--runs N]
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
"$BIN" doctor 2>/dev/null | grep -q "MPI (many ranks): *built with MPI" ||
    echo "bench/mpi.sh: this fsarena may lack MPI: cargo build --release --features mpi" >&2
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
mpi=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)
for fs in tmpfs ext4; do
    # The harness's own cost under MPI: the same run without MPI and as 1 rank of mpirun.
    "$BIN" run --target "dir:$BASE/$fs" "${common[@]}" --out "$OUT/$fs-nompi" >/dev/null
    "${mpi[@]}" -np 1 "$BIN" run --target "dir:$BASE/$fs" "${common[@]}" --out "$OUT/$fs-np1" >/dev/null
    # Scaling: 2 and 4 ranks, each in its own subtree and all in one tree (1 rank: the same).
    for mode in own shared; do
        for np in 2 4; do
            "${mpi[@]}" -np "$np" "$BIN" run --target "dir:$BASE/$fs" "${common[@]}" \
                --rank-dirs "$mode" --out "$OUT/$fs-np$np-$mode" >/dev/null
        done
    done
done
uptime > "$OUT/load.txt"
# Only the records are kept (the reports are rebuilt with `fsarena report DIR`).
find "$OUT" \( -name report.html -o -name 'summary.*' -o -name study.md \) -delete
python3 - "$OUT" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]

def rates(d):
    """files/s per workload point of one run directory: (mean, stdev) over repetitions."""
    p = os.path.join(out, d, "results.jsonl")
    rows = {}
    if os.path.exists(p):
        for line in open(p):
            r = json.loads(line)
            if r.get("record") != "measurement" or r["status"] != "ok":
                continue
            key = r["workload"] + (" " + r["variant"] if r["variant"] else "")
            rows.setdefault(key, []).append(r["metrics"]["files_per_s"])
    return {k: (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0) for k, v in rows.items()}

def cell(x):
    return f"{x[0]:,.0f} ± {x[1]:,.0f}" if x else "—"

print("## 1 rank under mpirun vs the same run without MPI (files/s; ratio near 1: no harness cost)\n")
print("| fs | workload | without MPI | 1 rank | ratio |\n|---|---|---|---|---|")
for fs in ("tmpfs", "ext4"):
    a, b = rates(f"{fs}-nompi"), rates(f"{fs}-np1")
    for k in sorted(a):
        ratio = f"{b[k][0] / a[k][0]:.3f}" if k in b and a[k][0] else "—"
        print(f"| {fs} | {k} | {cell(a[k])} | {cell(b.get(k))} | {ratio} |")
print("\n## Scaling: aggregate files/s on 1, 2, 4 ranks\n")
print("(scan, shared: every rank walks every rank's files, N × the entries of own.)\n")
print("| fs | workload | rank dirs | 1 rank | 2 ranks | 4 ranks | 4 / 1 |\n|---|---|---|---|---|---|---|")
for fs in ("tmpfs", "ext4"):
    one = rates(f"{fs}-np1")
    for mode in ("own", "shared"):
        two, four = rates(f"{fs}-np2-{mode}"), rates(f"{fs}-np4-{mode}")
        for k in sorted(one):
            ratio = f"{four[k][0] / one[k][0]:.2f}" if k in four and one[k][0] else "—"
            print(f"| {fs} | {k} | {mode} | {cell(one[k])} | {cell(two.get(k))} | {cell(four.get(k))} | {ratio} |")
PY
