#!/usr/bin/env bash
# How close in time two file systems' warm passes must be for the machine's spells to cancel
# in their ratio. The default run's data set (`fsarena dataset`, small profile, scale 0.01:
# 2,500 files) on ext4, xfs and btrfs loop mounts; fsarena's own `search name` pass
# (`fsarena op search-name`, cache warm, nothing written) run on them in turn, one pass each,
# over and over on one CPU. Prints each pass as `SECONDS-SINCE-START FS PASS-SECONDS FILES`
# into OUT, then bench/interleave.py's table: the spread of log(xfs/ext4) and
# log(btrfs/ext4) over windows of a quarter second (the phase floor) when both sides come
# from the same window (passes interleaved) and when they come from windows further apart
# (cells measured one after another, as a run does today). See bench/journal/default-run.md,
# "Interleaved passes".
# Usage: sudo bench/interleave.sh [--bin PATH] [--seconds S] [--cpu C] [--out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/target/release/fsarena SECONDS_=120 CPU=$(( $(nproc) - 1 )) OUT=interleave.txt
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --seconds) SECONDS_=$2; shift 2 ;;
        --cpu) CPU=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "usage: bench/interleave.sh [--bin PATH] [--seconds S] [--cpu C] [--out FILE]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench/interleave.sh needs root (loop mounts)" >&2; exit 2; }
FSES=(ext4 xfs btrfs)
ROOT=$(mktemp -d /var/tmp/interleave.XXXXXX)
cleanup() {
    for fs in "${FSES[@]}"; do umount "$ROOT/$fs" 2>/dev/null || true; done
    rm -rf "$ROOT"
}
trap cleanup EXIT
for fs in "${FSES[@]}"; do
    truncate -s 8G "$ROOT/$fs.img"
    case "$fs" in
        ext4) mkfs.ext4 -q -F "$ROOT/$fs.img" ;;
        xfs) mkfs.xfs -q -f "$ROOT/$fs.img" ;;
        btrfs) mkfs.btrfs -q -f "$ROOT/$fs.img" >/dev/null ;;
    esac
    mkdir "$ROOT/$fs"
    mount -o loop "$ROOT/$fs.img" "$ROOT/$fs"
    "$BIN" dataset "$ROOT/$fs/tree" >/dev/null
done
sync
# One pass per file system in turn; `op` prints `search-name seconds=… files=… bytes=…`.
start=$(date +%s.%N)
end=$(echo "$start + $SECONDS_" | bc)
: >"$OUT"
while [ "$(echo "$(date +%s.%N) < $end" | bc)" = 1 ]; do
    for fs in "${FSES[@]}"; do
        t=$(date +%s.%N)
        line=$(taskset -c "$CPU" "$BIN" op search-name "$ROOT/$fs/tree")
        s=${line#*seconds=}; s=${s%% *}
        f=${line#*files=}; f=${f%% *}
        echo "$t $fs $s $f" | awk -v s0="$start" '{ printf "%.6f %s %s %s\n", $1 - s0, $2, $3, $4 }' >>"$OUT"
    done
done
python3 bench/interleave.py "$OUT"
