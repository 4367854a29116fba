#!/usr/bin/env bash
# The measurement behind docs/findings.md (issue 40, item 4): every study at the scale the
# validity work makes trustworthy, on the file systems the seeds' question needs, one after
# another, each timed, with the host's state before and after.
#
#   file-management  ext4, ntfs (ntfs-3g), exfat, ext4-bigalloc64k, xfs, btrfs; the four data
#                    sets at --scale 0.004,0.04 (the verdicts checked across the two sizes)
#   copy-verify      ext4, ntfs, exfat, xfs, btrfs, btrfs-nodatasum (the plan's own scale
#                    series, 0.05 and 0.005)
#   fio-sweep        ext4, xfs, btrfs, ntfs, exfat (every point is direct I/O; on ntfs-3g
#                    and exFAT's FUSE daemons --direct=1 bypasses the FUSE file's cache only:
#                    docs/findings.md says what that does to their figures)
#   database         ext4, xfs, btrfs, btrfs-nodatasum, ext4-fscrypt, ext4-nocsum-fscrypt
#
# Every file system is the default device size (64 GiB sparse images on direct-I/O loop
# devices), each cell on a fresh one. Each study writes DIR/STUDY/ (fsarena's own output:
# results.jsonl, summary.json, study.md, report.html), DIR/STUDY.time (wall seconds) and
# DIR/host.txt (kernel, CPUs, memory, load and CPU steal before and after each study).
#
# Usage: sudo bench/findings.sh [--only STUDY[,STUDY...]] [--dry-run] [--out DIR]
# Defaults: every study, --out bench/results/findings-DATE. --dry-run prints each study's
# plan and estimate (fsarena's --dry-run) and runs nothing. Nothing else should run on the
# machine meanwhile: the spread between runs is the host's (BENCHMARKS.md).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out=$repo/bench/results/findings-$(date -u +%Y%m%d-%H%M%S)
only=file-management,copy-verify,fio-sweep,database
dry=
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; }
while (($#)); do
    case $1 in
    --only) only=$2; shift 2 ;;
    --dry-run) dry=--dry-run; shift ;;
    --out) out=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "findings.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
fsarena=${FSARENA:-$repo/target/release/fsarena}
[[ -x $fsarena ]] || { echo "findings.sh: no $fsarena (cargo build --release first)" >&2; exit 2; }

targets() {
    case $1 in
    file-management) echo ext4 ntfs exfat ext4-bigalloc64k xfs btrfs ;;
    copy-verify) echo ext4 ntfs exfat xfs btrfs btrfs-nodatasum ;;
    fio-sweep) echo ext4 xfs btrfs ntfs exfat ;;
    database) echo ext4 xfs btrfs btrfs-nodatasum ext4-fscrypt ext4-nocsum-fscrypt ;;
    *) echo "findings.sh: no study $1" >&2; exit 2 ;;
    esac
}
extra() {
    case $1 in
    file-management) echo --scale 0.004,0.04 ;;
    esac
}
steal() { awk '/^cpu / { print $9 }' /proc/stat; }
host() {
    echo "$(date -u +%FT%TZ) $1: load $(cut -d' ' -f1-3 /proc/loadavg), steal ticks $(steal)"
}

mkdir -p "$out"
work=$(mktemp -d /var/tmp/fsarena-findings.XXXXXX)
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
{
    echo "fsarena $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), $(uname -r)"
    echo "$(nproc) CPUs, $(awk '/MemTotal/ { print $2 " kB" }' /proc/meminfo)"
} >>"$out/host.txt"
IFS=, read -ra studies <<<"$only"
for s in "${studies[@]}"; do
    args=()
    for t in $(targets "$s"); do args+=(--target "$t"); done
    # shellcheck disable=SC2207
    args+=($(extra "$s"))
    cmd=("$fsarena" run "study:$s" "${args[@]}" --work-dir "$work" --out "$out/$s" $dry)
    echo "== $s: ${cmd[*]}"
    host "before $s" >>"$out/host.txt"
    start=$(date +%s.%N)
    # A study whose cells failed exits 1 with every result kept: record it, go on.
    rc=0
    "${cmd[@]}" || rc=$?
    end=$(date +%s.%N)
    ((rc == 0)) || echo "$(date -u +%FT%TZ) $s: fsarena exited $rc" >>"$out/host.txt"
    host "after $s" >>"$out/host.txt"
    [[ -n $dry ]] || awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f\n", b - a }' >"$out/$s.time"
done
echo "findings.sh: done; $out"
