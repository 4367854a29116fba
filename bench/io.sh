#!/usr/bin/env bash
# Shows that fsarena adds nothing to fio's numbers: runs
#     fsarena run --workload io-quick --target tmpfs --target ext4 --runs N
# and then the same fio jobs by hand on file systems made the same way (tmpfs of 1 GiB; ext4
# on a 1 GiB sparse image, loop device with direct I/O, `mkfs.ext4 -q -F -E
# lazy_itable_init=0,lazy_journal_init=0`), fresh per repetition, in the same order
# (lay-out, randread, randwrite, lay-out, read, write), and prints IOPS side by side.
#
# The job parameters are io-quick's (src/workload/io_sweep.rs: 4k randread/randwrite at
# QD 32, 1m read/write at QD 8, 1 job, O_DIRECT, 3 s + 1 s ramp, the small file) turned into
# fio arguments as FioJob::args does (src/workload/fio.rs); the file size and the engine
# are read from fsarena's own results so both sides run identical jobs. Every fio command
# is printed.
#
# Usage: bench/io.sh [--runs N] [--out DIR]      (root; fio from bench/setup.sh)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
runs=3
out=$repo/bench/results/io-$(date +%Y%m%d-%H%M%S)
while (($#)); do
    case $1 in
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) sed -n 2,17p "$0"; exit 0 ;;
    *) echo "io.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ $EUID -eq 0 ]] || { echo "io.sh: run as root" >&2; exit 2; }
command -v fio >/dev/null || { echo "io.sh: fio missing: run bench/setup.sh" >&2; exit 2; }
fsarena=$repo/target/release/fsarena
[[ -x $fsarena ]] || (cd "$repo" && cargo build --release)
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d /var/tmp/fsarena-io.XXXXXX)
mnt=$work/mnt
loopdev=
cleanup() {
    set +e
    cd /
    mountpoint -q "$mnt" && { umount "$mnt" || umount -l "$mnt"; }
    [[ -n $loopdev ]] && losetup -d "$loopdev"
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/load.txt"

# 1. fsarena.
echo "== fsarena run --workload io-quick --target tmpfs --target ext4 --runs $runs"
"$fsarena" run --workload io-quick --target tmpfs --target ext4 --runs "$runs" \
    --out "$out/fsarena" --quiet
echo "load after fsarena: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"

# The points fsarena ran: variant, rw, bs, iodepth, size, engine.
python3 - "$out/fsarena/results.jsonl" >"$work/points.txt" <<'EOF'
import json, re, sys
seen = {}
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("record") != "measurement":
        continue
    if m["workload"] != "io-quick" or m["status"] != "ok":
        continue
    p = m["params"]
    engine = next((re.search(r"auto → (\w+)", n).group(1) for n in m["notes"]
                   if "auto →" in n), "io_uring")
    key = (m["target"], m["variant"])
    seen.setdefault(key, (m["target"], m["variant"], p["rw"], p["bs"], p["iodepth"],
                          p["numjobs"], p["size_bytes"], int(p["direct"]), engine))
order = {"randread": 0, "randwrite": 1, "read": 2, "write": 3}
for v in sorted(seen.values(), key=lambda v: (v[0], order.get(v[2], 9))):
    print(*v)
EOF
cat "$work/points.txt"
[[ -s $work/points.txt ]] || { echo "io.sh: fsarena recorded no successful io-quick point" >&2; exit 1; }

make_fs() { # make_fs tmpfs|ext4 → mounted at $mnt
    mkdir -p "$mnt"
    if [[ $1 == tmpfs ]]; then
        mount -t tmpfs -o size=1073741824 tmpfs "$mnt"
    else
        truncate -s 1G "$work/ext4.img"
        loopdev=$(losetup --find --show --direct-io=on "$work/ext4.img")
        mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$loopdev"
        mount -t ext4 "$loopdev" "$mnt"
    fi
}
drop_fs() {
    umount "$mnt"
    if [[ -n $loopdev ]]; then
        losetup -d "$loopdev"
        loopdev=
        rm -f "$work/ext4.img"
    fi
}
lay_out() { # lay_out FILE SIZE: real writes, fsync, as io_sweep::lay_out
    local cmd=(fio --name=layout "--filename=$1" --rw=write --bs=1048576 "--size=$2" --numjobs=1
        --iodepth=1 --direct=0 --ioengine=psync --fallocate=none --thread --group_reporting
        --end_fsync=1 --output-format=json+)
    (cd "$mnt" && "${cmd[@]}" >/dev/null)
}

# 2. The same jobs by hand.
: >"$out/fio-by-hand.txt"
for rep in $(seq 1 "$runs"); do
    for target in tmpfs ext4; do
        make_fs "$target"
        laid=
        while read -r t variant rw bs qd jobs size direct engine; do
            [[ $t == "$target" ]] || continue
            file=fsarena-io-$size.dat
            if [[ -z $laid ]]; then
                lay_out "$file" "$size"
                laid=1
            fi
            cmd=(fio --name=fsarena "--filename=$file" "--rw=$rw" "--bs=$bs" "--size=$size"
                "--numjobs=$jobs" "--iodepth=$qd" "--direct=$direct" "--ioengine=$engine"
                --fallocate=none --thread --group_reporting --time_based --runtime=3000ms
                --ramp_time=1000ms --output-format=json+)
            [[ $rep == 1 ]] && echo "(cd $target-mount && ${cmd[*]})"
            iops=$(cd "$mnt" && "${cmd[@]}" | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
print(j["read"]["iops"] + j["write"]["iops"])')
            echo "$target $variant $rep $iops" >>"$out/fio-by-hand.txt"
            if [[ $rw == *write ]]; then
                rm -f "$mnt/$file"
                laid=
            fi
        done <"$work/points.txt"
        drop_fs
    done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"

# 3. Side by side.
python3 - "$out/fsarena/results.jsonl" "$out/fio-by-hand.txt" <<'EOF' | tee "$out/io-ratios.md"
import json, statistics as st, sys
ours, hand = {}, {}
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("workload") == "io-quick" and m.get("status") == "ok":
        ours.setdefault((m["target"], m["variant"]), []).append(m["metrics"]["iops"])
for line in open(sys.argv[2]):
    t, v, _, iops = line.split()
    hand.setdefault((t, v), []).append(float(iops))
def ms(xs):
    return f"{st.mean(xs):,.0f} ± {st.stdev(xs) if len(xs) > 1 else 0:,.0f}"
print("| target | point | fsarena IOPS (mean ± σ) | fio by hand IOPS (mean ± σ) | fsarena / fio |")
print("|---|---|---|---|---|")
for k in sorted(ours):
    if k in hand:
        print(f"| {k[0]} | {k[1]} | {ms(ours[k])} | {ms(hand[k])} | "
              f"{st.mean(ours[k]) / st.mean(hand[k]):.2f} |")
EOF
