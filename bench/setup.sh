#!/usr/bin/env bash
# Installs the peer tools bench/files.sh, bench/io.sh and bench/agree.sh compare fsarena with.
# Debian packages through apt-get; Rust tools Debian lacks through `cargo install --locked`
# (a crate that fails to build is skipped, said, and its column left out of the tables).
# Re-runnable: apt-get and cargo install skip what is already there.
set -uo pipefail

if [[ $EUID -ne 0 ]]; then
    echo "setup.sh: run as root (apt-get)" >&2
    exit 2
fi

apt_pkgs=(hyperfine fd-find jdupes rmlint rsync coreutils findutils fio xxhash strace jq fsmark)
echo "== apt-get: ${apt_pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || echo "setup.sh: apt-get update failed; trying the cached lists" >&2
apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" || {
    echo "setup.sh: apt-get install failed" >&2
    exit 1
}

# Crate name → the binary it installs.
declare -A crates=([dua-cli]=dua [fclones]=fclones [parallel-disk-usage]=pdu [xcp]=xcp)
export PATH="$HOME/.cargo/bin:$PATH"
failed=()
for crate in dua-cli fclones parallel-disk-usage xcp; do
    bin=${crates[$crate]}
    if command -v "$bin" >/dev/null; then
        echo "== $crate: $(command -v "$bin") already installed"
        continue
    fi
    echo "== cargo install --locked $crate"
    # -j 2: other engineers share this machine; the build is not what we measure.
    if ! cargo install --locked -j 2 "$crate"; then
        echo "setup.sh: cargo install $crate failed; benchmarks will skip $bin" >&2
        failed+=("$crate")
    fi
done

echo "== versions"
for t in hyperfine fdfind jdupes rmlint rsync cp du find fio xxhsum dua pdu fclones xcp; do
    if command -v "$t" >/dev/null; then
        printf '%-10s %s\n' "$t" "$("$t" --version 2>&1 | head -n1)"
    else
        printf '%-10s MISSING\n' "$t"
    fi
done
if ((${#failed[@]})); then
    echo "setup.sh: not installed: ${failed[*]}" >&2
fi
exit 0
