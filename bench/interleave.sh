#!/usr/bin/env bash
# How close in time two file systems' warm passes must be for the machine's spells to cancel
# in their ratio. The default run's data set (`fsarena dataset`, small profile, scale 0.01:
# 2,500 files) on ext4, xfs and btrfs loop mounts; fsarena's own `search name` pass
# (`fsarena op search-name --in-turn-with`, one thread, cache warm, nothing written) run on
# them in turn, one pass each, over and over in one process on one CPU. Prints each pass as
# `SECONDS-SINCE-START FS PASS-SECONDS FILES` into OUT, then bench/interleave.py's table:
# the spread of log(xfs/ext4) and log(btrfs/ext4) over windows of a quarter second (the
# phase floor) when both sides come from the same window (passes interleaved) and when they
# come from windows further apart (cells measured one after another, as a run does today),
# and how often n rounds of each kind decide. With --rounds N, N rounds instead, as joint
# cells would run: each remounts the three file systems (nothing cached), walks each tree
# once unmeasured, then takes a quarter second of passes in turn; a fifth column numbers
# the round, and the rounds take the windows' place. See bench/journal/default-run.md,
# "Interleaved passes". --fses "ext4 ext4 xfs" sets the file systems and their order (the
# first is the base; a type named twice gets two images, ext4 and ext4-2: an A/A pair whose
# ratio shows what the order alone does). --op takes another read-only op of `fsarena op`
# (search-size, scan, dupes, hash) in search-name's place. --rotate starts each turn of the
# passes one file system later than the turn before (`fsarena op --rotate`).
# Usage: sudo bench/interleave.sh [--bin PATH] [--seconds S | --rounds N] [--fses LIST]
#        [--op NAME] [--rotate] [--cpu C] [--out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/target/release/fsarena SECONDS_=120 ROUNDS=0 CPU=$(( $(nproc) - 1 )) OUT=interleave.txt
TYPES=(ext4 xfs btrfs) OP=search-name ROTATE=
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --seconds) SECONDS_=$2; shift 2 ;;
        --rounds) ROUNDS=$2; shift 2 ;;
        --fses) read -r -a TYPES <<<"$2"; shift 2 ;;
        --op) OP=$2; shift 2 ;;
        --rotate) ROTATE=--rotate; shift ;;
        --cpu) CPU=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "usage: bench/interleave.sh [--bin PATH] [--seconds S | --rounds N] [--fses LIST] [--op NAME] [--rotate] [--cpu C] [--out FILE]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench/interleave.sh needs root (loop mounts)" >&2; exit 2; }
[ "${#TYPES[@]}" -ge 2 ] || { echo "bench/interleave.sh: --fses needs two file systems or more" >&2; exit 2; }
# Each file system's name: its type, with -2, -3 … for a type named again.
FSES=()
for t in "${TYPES[@]}"; do
    n=$t k=1
    while [[ " ${FSES[*]} " == *" $n "* ]]; do k=$((k + 1)); n=$t-$k; done
    FSES+=("$n")
done
ROOT=$(mktemp -d /var/tmp/interleave.XXXXXX)
cleanup() {
    for fs in "${FSES[@]}"; do umount "$ROOT/$fs" 2>/dev/null || true; done
    rm -rf "$ROOT"
}
trap cleanup EXIT
for i in "${!FSES[@]}"; do
    fs=${FSES[$i]}
    truncate -s 8G "$ROOT/$fs.img"
    case "${TYPES[$i]}" in
        ext4) mkfs.ext4 -q -F "$ROOT/$fs.img" ;;
        xfs) mkfs.xfs -q -f "$ROOT/$fs.img" ;;
        btrfs) mkfs.btrfs -q -f "$ROOT/$fs.img" >/dev/null ;;
        *) echo "bench/interleave.sh: --fses takes ext4, xfs and btrfs" >&2; exit 2 ;;
    esac
    mkdir "$ROOT/$fs"
    mount -o loop "$ROOT/$fs.img" "$ROOT/$fs"
    "$BIN" dataset "$ROOT/$fs/tree" >/dev/null
done
sync
# One pass per file system in turn, in one process (`fsarena op … --in-turn-with`), which
# prints `OP tree=K at=T seconds=S files=N bytes=B` per pass (search: FILES counts matches).
# $1: seconds to go on; $2: the round's number, printed as a fifth column when given.
in_turn() {
    local others=()
    for fs in "${FSES[@]:1}"; do others+=(--in-turn-with "$ROOT/$fs/tree"); done
    taskset -c "$CPU" "$BIN" op "$OP" --threads 1 "$ROOT/${FSES[0]}/tree" \
        "${others[@]}" $ROTATE --seconds "$1" |
        awk -v names="${FSES[*]}" -v round="${2:-}" '
            BEGIN { split(names, fs, " ") }
            { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
              printf "%s %s %s %s %s\n", v["at"], fs[v["tree"] + 1], v["seconds"], v["files"], round }'
}
if [ "$ROUNDS" = 0 ]; then
    in_turn "$SECONDS_" >"$OUT"
else
    : >"$OUT"
    for r in $(seq "$ROUNDS"); do
        for fs in "${FSES[@]}"; do
            umount "$ROOT/$fs"
            mount -o loop "$ROOT/$fs.img" "$ROOT/$fs"
            "$BIN" op "$OP" --threads 1 "$ROOT/$fs/tree" >/dev/null
        done
        in_turn 0.25 "$r" >>"$OUT"
    done
fi
python3 bench/interleave.py "$OUT"
