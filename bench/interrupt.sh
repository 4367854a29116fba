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
# --series (issue 57): the plans are a replay of a checked-in trace, a tune race and a
#   `--scale` series instead, each interrupted by SIGINT, SIGTERM or kill -9 (plus a
#   Ctrl-C to the group at a child tool); a tune is resumed with `tune --resume`.
# --cleanup: after the interruption, `fsarena cleanup --work-dir W` runs first and must
#   exit 0 leaving nothing (no loop device, mount, process, cgroup, run directory), and
#   only then is the run resumed. Run it with --bin OLD and --bin NEW and the same --seed
#   for an A/B of two builds: the same plans, signals and moments.
# --relative: every command names the work directory by a relative path (as `--work-dir wd`
#   typed in another directory would), the form issue 57 found broken for tune and cleanup.
# Usage: sudo bench/interrupt.sh [--tries N] [--seed S] [--pg] [--series] [--cleanup] [--relative] [--bin PATH]
set -uo pipefail
cd "$(dirname "$0")/.."
TRIES=30 SEED=$$ PG=0 SERIES=0 CLEANUP=0 RELATIVE=0 BIN=$PWD/target/release/fsarena
USAGE="usage: bench/interrupt.sh [--tries N] [--seed S] [--pg] [--series] [--cleanup] [--relative] [--bin PATH]"
while [ $# -gt 0 ]; do
    case "$1" in
        --tries) TRIES=$2; shift 2 ;;
        --seed) SEED=$2; shift 2 ;;
        --pg) PG=1; shift ;;
        --series) SERIES=1; shift ;;
        --cleanup) CLEANUP=1; shift ;;
        --relative) RELATIVE=1; shift ;;
        --bin) BIN=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "$USAGE" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "bench/interrupt.sh needs root (loop devices, mounts)" >&2; exit 2; }
RANDOM=$SEED
ROOT=$(mktemp -d /tmp/fsarena-interrupt-XXXXXX)
chmod 755 "$ROOT"
# Each plan is the command after `fsarena`: `run …` or `tune FS …`.
PLANS=(
    "run --target ext4 --target btrfs --workload create,scan --runs 2 --scale 0.001"
    "run --target xfs --target ext4 --workload delete --runs 2 --scale 0.001"
    "run --target btrfs --workload create --runs 3 --scale 0.001"
    "run --target ext4 --workload db --runs 2 --scale 0.001"
)
[ "$PG" = 1 ] && PLANS+=("run --target ext4 --workload pg --runs 1 --scale 0.001")
if [ "$SERIES" = 1 ]; then
    PLANS=(
        "run --target ext4 --target xfs --workload replay --trace $PWD/traces/tar-xf.fstrace --runs 2 --fs-size 1G"
        "tune ext4 --workload create --scale 0.001 --candidates 2 --budget 3m"
        "run --target ext4 --target btrfs --workload create --runs 2 --scale 0.001,0.002"
    )
fi
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
    [ "$RELATIVE" = 1 ] && work=$(realpath --relative-to=. "$work")
    kinds=(group-ctrl-c group-ctrl-c sigint sigterm double-ctrl-c kill9)
    [ "$SERIES" = 1 ] && kinds=(group-ctrl-c sigint sigterm kill9)
    kind=${kinds[RANDOM % ${#kinds[@]}]}
    cmd=${plan%% *} results=$out/results.jsonl
    [ "$cmd" = tune ] && results=$out/runs/results.jsonl
    # shellcheck disable=SC2086
    setsid "$BIN" $plan --quiet --out "$out" --work-dir "$work" >/dev/null 2>"$ROOT/err$t" &
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
    # Exit 2 is a refusal before anything was made: an interruption must never end so.
    [ $rc -eq 2 ] && verdict="exit 2: $(tail -1 "$ROOT/err$t")"
    # A run that ended within 20 ms of the first Ctrl-C never saw the second: exit 1 is right.
    if [ "$kind" = double-ctrl-c ] && grep -q "second signal" "$ROOT/err$t" && [ $rc -ne 130 ]; then
        verdict="double Ctrl-C exit $rc"
    fi
    if grep -q '"status":"\(error\|invalid\)"' "$results" 2>/dev/null; then
        verdict="failure recorded: $(grep -o '"error":"[^"]*"' "$results" | head -1)"
    fi
    if [ "$CLEANUP" = 1 ]; then
        "$BIN" cleanup --work-dir "$work" >"$ROOT/cleanup$t" 2>&1 || verdict="cleanup exit $?: $(tail -1 "$ROOT/cleanup$t")"
        stray=$(left; find "$work" -mindepth 1 -maxdepth 1 -name 'run-*' | sed 's/^/run directory /')
        [ -n "$stray" ] && verdict="left after cleanup: $(echo "$stray" | tr '\n' ';')"
    fi
    resumes=0 rrc=0
    # Killed before it wrote its results directory: nothing to resume (a new run starts over).
    if [ $rc -ne 0 ] && [ -s "$results" ]; then
        rrc=1
        while [ $resumes -lt 4 ] && [ $rrc -ne 0 ]; do
            "$BIN" "$cmd" --quiet --resume "$out" --work-dir "$work" >/dev/null 2>"$ROOT/resume$t"
            rrc=$?; resumes=$((resumes + 1))
        done
    fi
    [ $rrc -ne 0 ] && verdict="resume exit $rrc: $(tail -1 "$ROOT/resume$t")"
    stray=$(left)
    [ -n "$stray" ] && verdict="left: $(echo "$stray" | tr '\n' ';')"
    COUNT[$kind]=$(( ${COUNT[$kind]:-0} + 1 ))
    [ "$verdict" = ok ] || bad=$((bad + 1))
    printf 'try %2d %-5s %-14s %-16s exit %3d, %d resume(s): %s\n' "$t" "$cmd" "$kind" "$at" "$rc" "$resumes" "$verdict"
done
echo "tries $TRIES (seed $SEED):$(for k in "${!COUNT[@]}"; do printf ' %s %d' "$k" "${COUNT[$k]}"; done); broken $bad"
[ $bad -eq 0 ] && rm -rf "$ROOT"
[ $bad -eq 0 ]
