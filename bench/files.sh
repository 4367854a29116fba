#!/usr/bin/env bash
# Times fsarena's file workloads (`fsarena op NAME …`) side by side with the peer tools that
# do the same job, with hyperfine, on the exact tree `fsarena dataset` generates:
#   * on a tmpfs this script mounts (where harness overhead shows most), and
#   * on an ext4 file system on a loop device (direct I/O) this script creates.
# Both are always torn down (trap), whatever happens.
#
# Usage: bench/files.sh [--scale F] [--runs N] [--threads N] [--fs tmpfs,ext4]
#                       [--ops scan,search-name,...] [--out DIR]
# Needs root and the tools from bench/setup.sh. Results: one hyperfine JSON per
# (file system, op) in DIR (default bench/results/files-<date>), a sanity file that shows
# every tool found the same things, and the ratio table from bench/ratios.py.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
export PATH="$HOME/.cargo/bin:$PATH"

scale=0.2
runs=5
threads=2
fs_list=tmpfs,ext4
ops=scan,scan-cold,search-name,search-size,dupes,dupes-cold,hash,copy,sync,delete,touch,chmod
out=$repo/bench/results/files-$(date +%Y%m%d-%H%M%S)
while (($#)); do
    case $1 in
    --scale) scale=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --fs) fs_list=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "files.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $EUID -eq 0 ]] || { echo "files.sh: run as root (mount, losetup, drop_caches)" >&2; exit 2; }
for t in hyperfine python3; do
    command -v $t >/dev/null || { echo "files.sh: $t missing: run bench/setup.sh" >&2; exit 2; }
done

fsarena=$repo/target/release/fsarena
if [[ ! -x $fsarena ]]; then
    (cd "$repo" && cargo build --release)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d /var/tmp/fsarena-bench.XXXXXX)
mnt_tmpfs=$work/tmpfs
mnt_ext4=$work/ext4
loopdev=
cleanup() {
    set +e
    cd /
    for m in "$mnt_tmpfs" "$mnt_ext4"; do
        if mountpoint -q "$m"; then
            umount "$m" || umount -l "$m"
        fi
    done
    [[ -n $loopdev ]] && losetup -d "$loopdev"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

have() { command -v "$1" >/dev/null; }
say() { printf '\n== %s\n' "$*"; }

# Environment: the figures only mean something next to these.
{
    echo "date: $(date -Iseconds)"
    echo "kernel: $(uname -r)"
    echo "cpus: $(nproc)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "fsarena: $($fsarena --version) ($(git -C "$repo" rev-parse --short HEAD))"
    echo "threads: fsarena --threads $threads; peers at their defaults"
    for t in hyperfine du find fdfind dua pdu jdupes rmlint fclones cp rsync xcp xxhsum chmod touch; do
        if have $t; then echo "$t: $($t --version 2>&1 | head -n1)"; else echo "$t: MISSING"; fi
    done
} >"$out/environment.txt"
cat "$out/environment.txt"

hf() { # hf NAME-OF-JSON hyperfine-args... (warm cache, no shell: commands are exec'd)
    local name=$1
    shift
    echo "load before $name: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/load.txt"
    hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/$name.json" "$@"
}

# Prepare scripts (run unmeasured before every timed run). `sync` first so that no
# writeback owed by an earlier run lands inside the next one.
make_scripts() {
    local root=$1
    cat >"$work/drop.sh" <<'EOF'
sync
echo 3 > /proc/sys/vm/drop_caches
EOF
    # copy: the destination must not exist.
    cat >"$work/prep-copy.sh" <<EOF
rm -rf "$root/dst"
sync
EOF
    # delete: a fresh copy of the tree to remove.
    cat >"$work/prep-delete.sh" <<EOF
rm -rf "$root/del"
cp -a "$root/tree" "$root/del"
sync
EOF
    # sync: the mirror as it was before the source changed.
    cat >"$work/prep-sync.sh" <<EOF
rm -rf "$root/mirror"
cp -a "$root/mirror0" "$root/mirror"
sync
EOF
    # chmod: every file back to 0644, directories to 0755.
    cat >"$work/prep-chmod.sh" <<EOF
chmod -R o+r "$root/work"
sync
EOF
}

# The changed source for `sync`: like the workload's change set, 10 % of the files in four
# equal parts — modified (new bytes and mtime, half of them a new size), added, deleted,
# renamed — chosen deterministically from the sorted file list.
make_sync_trees() {
    local root=$1
    cp -a "$root/tree" "$root/mirror0"
    cp -a "$root/tree" "$root/src"
    python3 - "$root/src" <<'EOF'
import os, random, sys
root = sys.argv[1]
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
n = len(files)
for i, p in enumerate(files):
    k = i % 40
    if k == 0:
        os.remove(p)
    elif k == 1:
        size = os.path.getsize(p)
        with open(p, "r+b") as f:
            f.seek(0)
            f.write(b"\x5a" * min(size, 4096) or b"x")
            if i % 80 == 1:
                f.write(b"grown")
    elif k == 2:
        os.rename(p, os.path.join(os.path.dirname(p), "renamed-" + os.path.basename(p)))
    elif k == 3:
        with open(os.path.join(os.path.dirname(p), "added-%d.bin" % i), "wb") as f:
            f.write(random.Random(i).randbytes(os.path.getsize(p)))
EOF
}

# Counts every tool's answer once, so the tables compare equal work.
sanity() {
    local fs=$1 root=$2
    local t=$root/tree
    {
        echo "## $fs"
        echo "fsarena search-name: $($fsarena op search-name "$t" --pattern '*.jpg' --threads "$threads")"
        echo "find -name:          $(find "$t" -type f -name '*.jpg' | wc -l) matches"
        have fdfind && echo "fdfind -g:           $(fdfind -u -t f -g '*.jpg' . "$t" | wc -l) matches"
        echo "fsarena search-size: $($fsarena op search-size "$t" --min-size "$min" --max-size "$max" --threads "$threads")"
        echo "find -size:          $(find "$t" -type f -size +$((min - 1))c -size -$((max + 1))c | wc -l) matches"
        echo "fsarena scan:        $($fsarena op scan "$t" --threads "$threads")"
        echo "du -s -B1:           $(du -s -B1 "$t" | cut -f1) bytes"
        echo "fsarena dupes:       $($fsarena op dupes "$t" --threads "$threads")"
        have jdupes && echo "jdupes -r:           $(jdupes -r -q "$t" | grep -c .) files in groups"
        have fclones && echo "fclones group:       $(fclones group "$t" 2>/dev/null | grep -c '^    ') files in groups"
        have rmlint && echo "rmlint -T df:        $(rmlint -T df -o fdupes "$t" | grep -c .) files in groups"
        echo "fsarena hash:        $($fsarena op hash "$t" --threads "$threads")"
        echo
    } | tee -a "$out/sanity.txt"
}

run_ops() {
    local fs=$1 root=$2
    local t=$root/tree
    local -a cmd
    make_scripts "$root"
    for op in ${ops//,/ }; do
        say "$fs: $op"
        case $op in
        scan | scan-cold)
            local -a prep=()
            [[ $op == scan-cold ]] && prep=(--prepare "bash $work/drop.sh")
            cmd=(-n fsarena "$fsarena op scan $t --threads $threads" -n "du -s" "du -s $t")
            have dua && cmd+=(-n dua "dua aggregate $t")
            have pdu && cmd+=(-n pdu "pdu --max-depth=1 $t")
            hf "$fs-$op" "${prep[@]}" "${cmd[@]}"
            ;;
        search-name)
            cmd=(-n fsarena "$fsarena op search-name $t --pattern *.jpg --threads $threads"
                -n "find -name" "find $t -type f -name *.jpg")
            have fdfind && cmd+=(-n "fdfind -g" "fdfind -u -t f -g *.jpg . $t")
            hf "$fs-$op" "${cmd[@]}"
            ;;
        search-size)
            cmd=(-n fsarena "$fsarena op search-size $t --min-size $min --max-size $max --threads $threads"
                -n "find -size" "find $t -type f -size +$((min - 1))c -size -$((max + 1))c")
            have fdfind && cmd+=(-n "fdfind -S" "fdfind -u -t f -S +${min}b -S -${max}b . $t")
            hf "$fs-$op" "${cmd[@]}"
            ;;
        dupes | dupes-cold)
            local -a prep=()
            [[ $op == dupes-cold ]] && prep=(--prepare "bash $work/drop.sh")
            cmd=(-n fsarena "$fsarena op dupes $t --threads $threads")
            have jdupes && cmd+=(-n "jdupes -r" "jdupes -r -q $t")
            have rmlint && cmd+=(-n rmlint "rmlint -T df -o fdupes $t")
            have fclones && cmd+=(-n "fclones group" "fclones group $t")
            hf "$fs-$op" "${prep[@]}" "${cmd[@]}"
            ;;
        hash)
            cmd=(-n fsarena "$fsarena op hash $t --threads $threads")
            have xxhsum && cmd+=(-n "find -exec xxhsum -H3" "find $t -type f -exec xxhsum -H3 {} +")
            hf "$fs-$op" "${cmd[@]}"
            ;;
        copy)
            cmd=(-n fsarena "$fsarena op copy $t $root/dst --threads $threads"
                -n "cp -a" "cp -a $t $root/dst"
                -n "rsync -a" "rsync -a $t/ $root/dst/")
            have xcp && cmd+=(-n "xcp -r" "xcp -r $t $root/dst")
            hf "$fs-$op" --prepare "bash $work/prep-copy.sh" "${cmd[@]}"
            rm -rf "$root/dst"
            ;;
        sync)
            make_sync_trees "$root"
            hf "$fs-$op" --prepare "bash $work/prep-sync.sh" \
                -n fsarena "$fsarena op sync $root/src $root/mirror --threads $threads" \
                -n "rsync -a --delete" "rsync -a --delete $root/src/ $root/mirror/"
            diff -r "$root/src" "$root/mirror" >/dev/null && echo "sync: mirror equals source"
            rm -rf "$root/src" "$root/mirror" "$root/mirror0"
            ;;
        delete)
            hf "$fs-$op" --prepare "bash $work/prep-delete.sh" \
                -n fsarena "$fsarena op delete $root/del --threads $threads" \
                -n "rm -rf" "rm -rf $root/del"
            rm -rf "$root/del"
            ;;
        touch)
            [[ -d $root/work ]] || cp -a "$t" "$root/work"
            hf "$fs-$op" --prepare "sync" \
                -n fsarena "$fsarena op touch $root/work --time 1000000000 --threads $threads" \
                -n "find -exec touch" "find $root/work -type f -exec touch -d @1000000000 {} +"
            ;;
        chmod)
            [[ -d $root/work ]] || cp -a "$t" "$root/work"
            hf "$fs-$op" --prepare "bash $work/prep-chmod.sh" \
                -n fsarena "$fsarena op chmod $root/work --mode 640 --threads $threads" \
                -n "chmod -R" "chmod -R o-r $root/work"
            ;;
        *) echo "files.sh: unknown op $op" >&2; exit 2 ;;
        esac
    done
    rm -rf "$root/work"
}

# search-size range: 2× to 16× the small profile's 16 KiB mean, scaled like the workload.
min=32768
max=262144

for fs in ${fs_list//,/ }; do
    case $fs in
    tmpfs)
        mkdir -p "$mnt_tmpfs"
        mount -t tmpfs -o size=6G,mode=0755 fsarena-bench "$mnt_tmpfs"
        root=$mnt_tmpfs
        ;;
    ext4)
        mkdir -p "$mnt_ext4"
        truncate -s 8G "$work/ext4.img"
        loopdev=$(losetup --find --show --direct-io=on "$work/ext4.img")
        echo "ext4: $loopdev, direct I/O $(cat /sys/block/${loopdev#/dev/}/loop/dio)" | tee -a "$out/environment.txt"
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loopdev"
        mount "$loopdev" "$mnt_ext4"
        root=$mnt_ext4
        ;;
    *) echo "files.sh: unknown file system $fs" >&2; exit 2 ;;
    esac
    say "$fs: generating the tree (small profile, scale $scale)"
    line=$($fsarena dataset "$root/tree" --profile small --scale "$scale")
    echo "$fs tree: small profile, scale $scale: $line" | tee -a "$out/environment.txt"
    sync
    sanity "$fs" "$root"
    run_ops "$fs" "$root"
    rm -rf "$root/tree"
    if [[ $fs == ext4 ]]; then
        umount "$mnt_ext4"
        losetup -d "$loopdev"
        loopdev=
        rm -f "$work/ext4.img"
    else
        umount "$mnt_tmpfs"
    fi
done

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/environment.txt"
python3 "$here/ratios.py" "$out" | tee "$out/ratios.md"
