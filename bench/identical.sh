#!/usr/bin/env bash
# Every output a change that should not change behaviour must leave alone, written into one
# directory so two builds can be held side by side with `diff -r`:
#   bench/identical.sh BINARY OUTDIR
#   diff -r OUTDIR-before OUTDIR-after
# For every results directory under bench/results: `fsarena report` in each --format and the
# five report files it (re)writes; `fsarena compare` of each results directory with the next
# one in sorted order; and `fsarena run --dry-run` of the plans the test suite dry-runs.
# Reports are made on copies, so bench/results is never rewritten. Needs no root.
set -uo pipefail
bin=$(realpath "$1")
out=$2
cd "$(dirname "$0")/.."
mkdir -p "$out"
out=$(realpath "$out")
tmp=$(mktemp -d)
# The pg workload's server runs as another user, which must enter the work directory.
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
export COLUMNS=100 NO_COLOR=1

# One command's stdout, stderr and exit code, under one name.
keep() {
    local name=$1
    shift
    "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
    # A path of this machine's temporary copy says nothing about the build.
    sed -i "s#$tmp#TMP#g" "$out/$name.out" "$out/$name.err"
}

mapfile -t dirs < <(find bench/results -name results.jsonl -printf '%h\n' | sort)
for d in "${dirs[@]}"; do
    n=${d#bench/results/}
    n=${n//\//_}
    copy="$tmp/$n"
    cp -r "$d" "$copy"
    for f in table json csv markdown; do
        keep "report-$n-$f" "$bin" report "$copy" --format "$f"
    done
    for f in summary.json summary.csv summary.md report.html study.md; do
        [ -f "$copy/$f" ] && sed "s#$tmp#TMP#g" "$copy/$f" >"$out/report-$n-file-$f"
    done
done

for i in $(seq 0 $((${#dirs[@]} - 2))); do
    a=${dirs[$i]} b=${dirs[$((i + 1))]}
    n="${a#bench/results/}~${b#bench/results/}"
    n=${n//\//_}
    for f in table json csv markdown; do
        keep "compare-$n-$f" "$bin" compare "$a" "$b" --format "$f"
    done
done

w="$tmp/work"
mkdir -p "$w"
i=0
while IFS= read -r line; do
    [ -z "$line" ] && continue
    i=$((i + 1))
    # shellcheck disable=SC2086
    keep "dry-$i" "$bin" run $line --dry-run --work-dir "$w" --out "$tmp/dry-out"
    echo "$line" >"$out/dry-$i.args"
done <<'PLANS'

--verbose
study:file-management
study:database
study:copy-verify
study:fio-sweep
--target ext4 --target xfs --target btrfs --workload create,scan,delete --scale 0.2 --runs 3
--scale 0.001,0.01,0.1 --workload create,copy
--target ext4 --target xfs --workload io-quick --threads 1,4
--target ext4 --workload db --threads 1,8 --runs auto
--target ext4 --target xfs --workload replay --trace traces/git-commit.fstrace
--target ext4 --target tmpfs --workload untar,fileserver --runs auto --budget 2m
--target ext4 --fs-size 3G --workload create --files 1000
--target ext4 --target xfs --workload pg --threads 2
PLANS
echo "wrote $(ls "$out" | wc -l) files into $out"
