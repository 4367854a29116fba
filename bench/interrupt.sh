#!/usr/bin/env bash
# The random-interruption campaign of issue 39: runs small plans and interrupts each at a
# random moment, the way a user or a terminal does — SIGINT or SIGTERM to fsarena, a Ctrl-C
# to the whole process group aimed at a child tool while it runs (mkfs.*, mount, e2fsck,
# btrfs check, xfs_repair, pg tools), a second Ctrl-C 20 ms after the first, or kill -9 —
# then `--resume`s until the plan is complete, without ever running `fsarena cleanup`.
# After each try it checks its own work directory only: loop devices (losetup -a), mounts
# (/proc/mounts), processes naming it, and fsarena memory cgroups of its runs.
# Prints one line per try and the counts; exits 1 if a try broke a rule:
#   a record `error`/`invalid` after a signal, a second Ctrl-C not exiting 130, a resume
#   that does not finish (exit 0 within 4 resumes), or anything left behind.
# Usage: sudo bench/interrupt.sh [--tries N] [--seed S] [--pg] [--bin PATH]
set -uo pipefail
cd "$(dirname "$0")/.."
TRIES=30 SEED=$$ PG=0 BIN=$PWD/target/release/fsarena
while [ $# -gt 0 ]; do
    case "$1" in
        --tries) TRIES=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --pg) PG=1; shift ;;
        --bin) BIN=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "usage: bench/interrupt.sh [--tries N] [--seed S] [--pg] [--bin PATH]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench/interrupt.sh needs root (loop devices, mounts)" >&2; exit 2; }
RANDOM=$SEED
ROOT=$(mktemp -d /tmp/fsarena-interrupt-XXXXXX)
chmod 755 "$ROOT"
PLANS=(
    "--target ext4 --target btrfs --workload create,scan --runs 2 --scale 0.001"
    "--target xfs --target ext4 --workload delete --runs 2 --scale 0.001"
    "--target btrfs --workload create --runs 3 --scale 0.001"
    "--target ext4 --workload db --runs 2 --scale 0.001"
)
[ "$PG" = 1 ] && PLANS+=("--target ext4 --workload pg --runs 1 --scale 0.001")
TOOLS="mkfs.ext4 mkfs.btrfs mkfs.xfs mount e2fsck btrfs xfs_repair initdb pg_ctl postgres pgbench"
declare -A COUNT
bad=0

# The first child of fsarena ($1) whose name is one of TOOLS, within $2 seconds.
wait_tool() {
    local end=$((SECONDS + $2)) c
    while [ $SECONDS -lt $end ] && kill -0 "$1" 2>/dev/null; do
        for c in $(pgrep -P "$1" 2>/dev/null); do
            if [[ " $TOOLS " == *" $(cat /proc/$c/comm 2>/dev/null) "* ]]; then
                cat /proc/$c/comm; return 0
            fi
        done
        sleep 0.002
    done
    return 1
}

# What this campaign left: loop devices, mounts, processes, cgroups of its runs.
left() {
    losetup -a | grep -F "$ROOT/" | sed 's/^/loop /'
    grep -F " $ROOT/" /proc/mounts | sed 's/^/mount /'
    pgrep -af -- "$ROOT/" | grep -v -e interrupt.sh -e pgrep | sed 's/^/process /'
    for pid in "${PIDS[@]}"; do
        find /sys/fs/cgroup -maxdepth 4 -type d -name "fsarena-*-$pid-*" 2>/dev/null | sed 's/^/cgroup /'
    done
}

PIDS=()
for ((t = 1; t <= TRIES; t++)); do
    plan=${PLANS[RANDOM % ${#PLANS[@]}]}
    out=$ROOT/o$t work=$ROOT/w$t
    mkdir -p "$work"
    kinds=(group-ctrl-c group-ctrl-c sigint sigterm double-ctrl-c kill9)
    kind=${kinds[RANDOM % ${#kinds[@]}]}
    # shellcheck disable=SC2086
    setsid "$BIN" run $plan --quiet --out "$out" --work-dir "$work" >/dev/null 2>"$ROOT/err$t" &
    pid=$!
    PIDS+=("$pid")
    at="$(( RANDOM % 3000 )) ms"
    case $kind in
        group-ctrl-c)
            # Aimed at a tool: skip 0-2 of them so later phases (checks, mounts) are hit too.
            skip=$((RANDOM % 3)) tool=none
            for ((s = 0; s <= skip; s++)); do
                tool=$(wait_tool "$pid" 60) || break
                [ $s -lt $skip ] && sleep 0.05
            done
            at="at $tool"
            kill -INT -- "-$pid" 2>/dev/null ;;
        double-ctrl-c)
            sleep "$(awk -v r=$RANDOM 'BEGIN{print r % 3000 / 1000}')"
            kill -INT -- "-$pid" 2>/dev/null; sleep 0.02; kill -INT -- "-$pid" 2>/dev/null ;;
        sigint|sigterm|kill9)
            sleep "$(awk -v r=$RANDOM 'BEGIN{print r % 3000 / 1000}')"
            sig=${kind#sig}; [ "$kind" = kill9 ] && sig=KILL
            kill -"${sig^^}" "$pid" 2>/dev/null ;;
    esac
    wait "$pid"; rc=$?
    verdict=ok
    # A run that ended within 20 ms of the first Ctrl-C never saw the second: exit 1 is right.
    if [ "$kind" = double-ctrl-c ] && grep -q "second signal" "$ROOT/err$t" && [ $rc -ne 130 ]; then
        verdict="double Ctrl-C exit $rc"
    fi
    if grep -q '"status":"\(error\|invalid\)"' "$out/results.jsonl" 2>/dev/null; then
        verdict="failure recorded: $(grep -o '"error":"[^"]*"' "$out/results.jsonl" | head -1)"
    fi
    resumes=0 rrc=0
    # Killed before it wrote its results directory: nothing to resume (a new run starts over).
    if [ $rc -ne 0 ] && [ -s "$out/results.jsonl" ]; then
        rrc=1
        while [ $resumes -lt 4 ] && [ $rrc -ne 0 ]; do
            "$BIN" run --quiet --resume "$out" --work-dir "$work" >/dev/null 2>"$ROOT/resume$t"
            rrc=$?; resumes=$((resumes + 1))
        done
    fi
    [ $rrc -ne 0 ] && verdict="resume exit $rrc: $(tail -1 "$ROOT/resume$t")"
    stray=$(left)
    [ -n "$stray" ] && verdict="left: $(echo "$stray" | tr '\n' ';')"
    COUNT[$kind]=$(( ${COUNT[$kind]:-0} + 1 ))
    [ "$verdict" = ok ] || bad=$((bad + 1))
    printf 'try %2d %-14s %-16s exit %3d, %d resume(s): %s\n' "$t" "$kind" "$at" "$rc" "$resumes" "$verdict"
done
echo "tries $TRIES (seed $SEED):$(for k in "${!COUNT[@]}"; do printf ' %s %d' "$k" "${COUNT[$k]}"; done); broken $bad"
[ $bad -eq 0 ] && rm -rf "$ROOT"
[ $bad -eq 0 ]
