#!/usr/bin/env bash
# Whether this machine changes speed in spells of seconds for cache-warm metadata work: the
# default run's data set (`fsarena dataset`, small profile, scale 0.01: 2,500 files) on an
# ext4 loop mount, walked by `find -name '*.jpg'` (fsarena's `search name` point is the same
# walk) over and over on one CPU, cache warm, nothing written. Prints one sample per line:
# seconds since the start and files per second over that sample's walks; then the samples'
# spread. A steady machine gives one speed; the 2-core dev VM gave two, ~1.4× apart, in
# spells of seconds (bench/journal/default-run.md, "What varies a warm cell"), which no
# file system caused and which the run's per-phase probe does not see.
# Usage: sudo bench/host_regimes.sh [--bin PATH] [--samples N] [--walks K] [--cpu C]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/target/release/fsarena SAMPLES=60 WALKS=20 CPU=$(( $(nproc) - 1 ))
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --samples) SAMPLES=$2; shift 2 ;;
        --walks) WALKS=$2; shift 2 ;;
        --cpu) CPU=$2; shift 2 ;;
        *) echo "usage: bench/host_regimes.sh [--bin PATH] [--samples N] [--walks K] [--cpu C]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench/host_regimes.sh needs root (a loop mount)" >&2; exit 2; }
ROOT=$(mktemp -d /var/tmp/host-regimes.XXXXXX)
cleanup() { umount "$ROOT/mnt" 2>/dev/null || true; rm -rf "$ROOT"; }
trap cleanup EXIT
truncate -s 4G "$ROOT/img"
mkfs.ext4 -q -F "$ROOT/img"
mkdir "$ROOT/mnt"
mount -o loop "$ROOT/img" "$ROOT/mnt"
"$BIN" dataset "$ROOT/mnt/tree" >/dev/null
files=$(find "$ROOT/mnt/tree" -type f | wc -l)
start=$(date +%s.%N)
for _ in $(seq "$SAMPLES"); do
    t0=$(date +%s.%N)
    for _ in $(seq "$WALKS"); do
        taskset -c "$CPU" find "$ROOT/mnt/tree" -name '*.jpg' >/dev/null
    done
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk -v s="$start" -v f="$files" -v k="$WALKS" \
        '{ printf "%.1f s  %.0f files/s\n", $1 - s, f * k / ($2 - $1) }'
done | tee "$ROOT/samples"
awk '{ print $3 }' "$ROOT/samples" | sort -n | awk '
    { v[NR] = $1 }
    END { printf "samples %d: min %.0f, median %.0f, max %.0f files/s (max/min %.2f)\n",
          NR, v[1], v[int((NR + 1) / 2)], v[NR], v[NR] / v[1] }'
