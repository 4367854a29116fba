#!/usr/bin/env bash
# Does fsarena agree with the standard tools? Puts fsarena's create, cold scan and delete beside
# the tool that does the same job, on the same tree and the same kind of device, and prints,
# per file system, each side's % difference against ext4 (issue 41, item 4):
#
#   create  fsarena `create`            fs_mark -S 0 -k (no sync in its loop), then `sync -f`
#   scan    fsarena `scan`, point cold  `du -s` after `sync; echo 3 > drop_caches`, then `sync -f`
#   delete  fsarena `delete`            `rm -rf TREE`, then `sync -f`
#
# Every timed phase ends with `sync -f` because every fsarena phase ends with `syncfs` inside its
# time. For the scan that matters: the first read of a directory whose access time is not newer
# than its modification time updates it under `relatime` (the default), and btrfs writes those
# updates as copy-on-write metadata (~480 write I/Os for this tree) at the next commit; without
# the sync, du's clock stopped before they were written and fsarena's did not.
#
# fsarena side: one `fsarena run --target ext4 --target xfs --target btrfs --workload
# create,scan,delete --threads T --runs N --scale F --size SIZE` (its summary.json gives the
# intervals and decisions). Tool side, N repetitions, each on fresh file systems made exactly
# as fsarena makes them: a sparse image of SIZE, `losetup --find --show --direct-io=on`, and the
# mkfs and mount commands fsarena's own `--dry-run --verbose` prints for that target (so a
# change of mkfs options in fsarena is followed here). Per repetition and file system: one
# fresh file system for fs_mark, and two for the tree `fsarena dataset --scale F` lays down
# (one timed cold with du, one removed with rm), each unmounted and mounted again first, as
# fsarena's cells get a freshly mounted copy of their populated image. So du and rm, like
# fsarena's scan and delete, are the first walk of a tree just laid down: every directory's
# access time is not newer than its modification time. The script checks that before each
# timed du and rm (by `stat` on the directories' paths, which reads no directory's entries)
# and records it, and after du how many a read would still update, in atime.txt.
#
# fs_mark's tree is what fs_mark can make: the same number of files and directories as
# fsarena's create (read from fsarena's own records: files, dirs), all directories one level
# deep, files round-robin by batches of files/dirs, every file the data set's mean size.
# fsarena's tree is up to 6 levels deep with log-normal sizes. That difference is the
# script's to state, not to hide: see BENCHMARKS.md "Agreement with independent tools".
#
# Each timed tool phase also records the loop device's read and write I/Os (/proc/diskstats),
# and runs (`taskset`) on the CPUs fsarena's records say its workloads ran on.
#
# Usage: sudo bench/agree.sh [--scale F] [--runs N] [--size SIZE] [--threads T]
#                            [--fs ext4,xfs,btrfs] [--out DIR]
# Defaults: --scale 0.08 (20,000 files), --runs 3, --size 64G, --threads 1; the first file
# system is the baseline. Needs root and fs_mark (`./dev deps` installs the fsmark package).
# Everything it makes (work directory, images, loop devices, mounts) is removed on any exit;
# it detaches only loop devices it attached itself.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
scale=0.08
runs=3
size=64G
threads=1
fs_list=ext4,xfs,btrfs
out=$repo/bench/results/agree-$(date -u +%Y%m%d-%H%M%S)
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0"; }
while (($#)); do
    case $1 in
    --scale) scale=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --fs) fs_list=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "agree.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "agree.sh: --runs: a whole number ≥ 1" >&2; exit 2; }
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "agree.sh: --threads: a whole number ≥ 1" >&2; exit 2; }
for fs in ${fs_list//,/ }; do
    case $fs in ext4 | xfs | btrfs) ;; *) echo "agree.sh: --fs: ext4, xfs or btrfs, not $fs" >&2; exit 2 ;; esac
done
[[ $EUID -eq 0 ]] || { echo "agree.sh: run as root (losetup, mkfs, mount, drop_caches)" >&2; exit 2; }
for t in fs_mark du losetup python3; do
    command -v $t >/dev/null || { echo "agree.sh: $t missing: run ./dev deps" >&2; exit 2; }
done
fsarena=$repo/target/release/fsarena
[[ -x $fsarena ]] || (cd "$repo" && cargo build --release)
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d /var/tmp/fsarena-agree.XXXXXX)
chmod 755 "$work"
mnt=$work/mnt
fwork=$work/fsarena-work
loopdev=
cleanup() {
    set +e
    cd /
    if mountpoint -q "$mnt"; then umount "$mnt" || umount -l "$mnt"; fi
    [[ -n $loopdev ]] && losetup -d "$loopdev"
    [[ -d $fwork ]] && "$fsarena" cleanup --work-dir "$fwork" >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n== %s\n' "$*"; }
targets=()
for fs in ${fs_list//,/ }; do targets+=(--target "$fs"); done
common=("${targets[@]}" --workload create,scan,delete --threads "$threads" --scale "$scale"
    --size "$size")

{
    echo "date: $(date -u -Iseconds)"
    echo "kernel: $(uname -r), cpus: $(nproc), memory: $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "fsarena: $($fsarena --version) ($(git -C "$repo" rev-parse --short HEAD))"
    echo "fs_mark: $(dpkg-query -W -f='${Version}' fsmark 2>/dev/null || echo '?')"
    echo "du: $(du --version | head -n1)"
    echo "scale $scale, runs $runs, image size $size (sparse), threads $threads, file systems $fs_list"
} | tee "$out/environment.txt"

# The mkfs and mount commands fsarena uses for each target, from its own dry run (wide, so
# that no command is wrapped).
mkdir -p "$fwork"
declare -A mkfs_line mount_line
for fs in ${fs_list//,/ }; do
    dry=$(COLUMNS=1000 "$fsarena" run --target "$fs" --workload create --runs 1 --size "$size" --dry-run \
        --verbose --work-dir "$fwork")
    mkfs_line[$fs]=$(grep -m1 -E '^\s+mkfs' <<<"$dry" | sed 's/^ *//')
    mount_line[$fs]=$(grep -m1 -E '^\s+mount ' <<<"$dry" | sed 's/^ *//')
    [[ ${mkfs_line[$fs]} == *' /dev/loopN' && ${mount_line[$fs]} == *' /dev/loopN '* ]] || {
        echo "agree.sh: cannot read $fs's mkfs/mount commands from fsarena's dry run" >&2
        exit 1
    }
    echo "$fs: ${mkfs_line[$fs]}; ${mount_line[$fs]%% /dev/loopN *} DEVICE MOUNTPOINT" |
        tee -a "$out/environment.txt"
done

# 1. fsarena.
say "fsarena run ${common[*]} --runs $runs"
"$fsarena" run "${common[@]}" --runs "$runs" --work-dir "$fwork" --out "$out/fsarena" --quiet \
    >/dev/null
echo "load after fsarena: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/environment.txt"

# The shape of the create workload's tree, from fsarena's own records.
read -r files dirs mean_size work_cpus < <(python3 - "$out/fsarena/results.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("record") == "measurement" and m["workload"] == "create" and m["status"] == "ok":
        x = m["metrics"]
        files, dirs = int(x["files"]), int(x["dirs"])
        work = ((m.get("provenance") or {}).get("cpus") or {}).get("work") or "-"
        print(files, dirs, round(x["logical_write_bytes"] / files), work)
        break
EOF
)
[[ -n ${files:-} ]] || { echo "agree.sh: fsarena recorded no successful create" >&2; exit 1; }
echo "create tree: $files files, $dirs directories, mean size $mean_size bytes" |
    tee -a "$out/environment.txt"
# The tools run on the CPUs fsarena ran its workloads on (`--cpus auto` keeps one for the
# harness): pinned or not moves a create by several points (BENCHMARKS.md, "What makes a
# create figure").
pin=()
[[ $work_cpus != - ]] && pin=(taskset -c "$work_cpus")
echo "tools pinned as fsarena's workloads were: ${pin[*]:-(not pinned)}" | tee -a "$out/environment.txt"

# 2. The tools.
make_fs() { # make_fs FS: a fresh file system of $size on a loop device of ours, at $mnt
    local fs=$1 img=$work/$1.img
    local -a mk mo
    truncate -s "$size" "$img"
    loopdev=$(losetup --find --show --direct-io=on "$img")
    [[ $(cat "/sys/block/${loopdev#/dev/}/loop/dio") == 1 ]] ||
        { echo "agree.sh: $loopdev: the kernel refused direct I/O" >&2; exit 1; }
    read -ra mk <<<"${mkfs_line[$fs]}"
    mk[-1]=$loopdev
    "${mk[@]}" >/dev/null
    read -ra mo <<<"${mount_line[$fs]%% /dev/loopN *}"
    mkdir -p "$mnt"
    "${mo[@]}" "$loopdev" "$mnt"
}
drop_fs() {
    umount "$mnt"
    losetup -d "$loopdev"
    loopdev=
    rm -f "$work"/*.img
}
cold() { sync; echo 3 >/proc/sys/vm/drop_caches; }
remount() { # as fsarena's cell gets its copy: freshly mounted, nothing cached
    local fs=$1
    local -a mo
    umount "$mnt"
    read -ra mo <<<"${mount_line[$fs]%% /dev/loopN *}"
    "${mo[@]}" "$loopdev" "$mnt"
    cold
}
lay_down() { # lay_down FS: a fresh file system holding the data set's tree, freshly mounted
    make_fs "$1"
    # One writer, as fsarena writes its populated images (and its `create` cell's tree, which
    # the run keeps as the image): the layout du and rm meet is the one scan and delete meet.
    "$fsarena" dataset "$mnt/tree" --scale "$scale" --threads 1 >"$work/dataset.txt"
    sync -f "$mnt"
    remount "$1"
}
# The tree's directories, relative, NUL-separated, listed once on a tree just laid down with
# the file system mounted `noatime` (so the listing updates no access time), then mounted as
# fsarena mounts it again. The tree is the same every time: the data set is seeded.
list_dirs() {
    mount -o remount,noatime "$mnt"
    (cd "$mnt/tree" && find . -type d -print0) >"$work/dirs.txt"
    remount "$1"
}
# stale: how many of the listed directories a read would give a new access time under
# `relatime`: access time not newer than the modification or change time, or a day old.
# `stat` by path looks names up but reads no directory's entries, so it changes no access time.
stale() {
    python3 - "$mnt/tree" "$work/dirs.txt" <<'EOF'
import os, sys, time
root, listing = sys.argv[1], sys.argv[2]
now, day, n = time.time_ns(), 86400 * 10**9, 0
for rel in filter(None, open(listing, "rb").read().split(b"\0")):
    st = os.stat(os.path.join(root.encode(), rel), follow_symlinks=False)
    n += st.st_atime_ns <= max(st.st_mtime_ns, st.st_ctime_ns) or now - st.st_atime_ns >= day
print(n)
EOF
}
# first_walk OP FS: checks that the timed OP will be the tree's first walk, as fsarena's is on
# its freshly mounted copy of a just-populated image (every directory's access time stale),
# sets $before to that count, and leaves the caches cold.
first_walk() {
    before=$(stale)
    [[ $before == "$ndirs" ]] || {
        echo "agree.sh: $2: only $before of $ndirs directories are unread before $1: not a first walk" >&2
        exit 1
    }
    cold
}
ios() { awk -v d="${loopdev#/dev/}" '$3 == d { print $4, $8 }' /proc/diskstats; }
# timed OP FS REP COMMAND...: runs COMMAND, then `sync -f` on the mount (inside the time, as
# fsarena's syncfs is inside its phase), and records one line.
timed() {
    local op=$1 fs=$2 rep=$3
    shift 3
    local r0 w0 r1 w1 t0 t1
    read -r r0 w0 < <(ios)
    t0=$EPOCHREALTIME
    "${pin[@]}" "$@" >"$work/last.txt"
    "${pin[@]}" sync -f "$mnt"
    t1=$EPOCHREALTIME
    read -r r1 w1 < <(ios)
    echo "$op $fs $rep $files $t0 $t1 $((r1 - r0)) $((w1 - w0))" >>"$out/tools.txt"
    printf '%s %s rep %s: %.3f s, %d read / %d write I/Os\n' "$op" "$fs" "$rep" \
        "$(python3 -c "print($t1 - $t0)")" $((r1 - r0)) $((w1 - w0))
}

: >"$out/tools.txt"
echo "# op fs repetition directories unread-before unread-after (a read would update the access time)" \
    >"$out/atime.txt"
per_dir=$(((files + dirs - 1) / dirs))
# fs_mark refuses a -d path of 40 bytes or more: it runs in the mount point, on a relative one.
fsm=(env -C "$mnt" fs_mark -d fsmark -D "$dirs" -N "$per_dir" -n $((files / threads)) -s "$mean_size"
    -S 0 -k -L 1 -t "$threads" -l "$work/fs_mark.log")
echo "fs_mark command (in the mount point): ${fsm[*]:3}" | sed "s|$work|WORK|g" |
    tee -a "$out/environment.txt"
for rep in $(seq 1 "$runs"); do
    for fs in ${fs_list//,/ }; do
        say "$fs, repetition $rep"
        make_fs "$fs"
        mkdir "$mnt/fsmark"
        sync
        timed create "$fs" "$rep" "${fsm[@]}"
        n=$(find "$mnt/fsmark" -type f | wc -l)
        [[ $n == "$(((files / threads) * threads))" ]] ||
            { echo "agree.sh: fs_mark left $n files" >&2; exit 1; }
        grep -E '^ +[0-9]' "$work/last.txt" | sed "s/^/fs_mark $fs $rep: /" >>"$out/fs_mark.txt"
        drop_fs

        lay_down "$fs"
        [[ -s $work/dirs.txt ]] || list_dirs "$fs"
        ndirs=$(tr -cd '\0' <"$work/dirs.txt" | wc -c)
        first_walk scan "$fs"
        timed scan "$fs" "$rep" du -s "$mnt/tree"
        cut -f1 "$work/last.txt" | sed "s/^/du -s $fs $rep: /" >>"$out/du.txt"
        echo "scan $fs $rep $ndirs $before $(stale)" >>"$out/atime.txt"
        drop_fs

        lay_down "$fs"
        first_walk delete "$fs"
        timed delete "$fs" "$rep" rm -rf "$mnt/tree"
        echo "delete $fs $rep $ndirs $before -" >>"$out/atime.txt"
        drop_fs
    done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/environment.txt"

# 3. Side by side.
python3 "$here/agree.py" "$out" "$threads" | tee "$out/agree.md"
