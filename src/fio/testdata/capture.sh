#!/bin/sh
# How the fio outputs in this directory were captured (fio 3.33, Debian 12, run as root).
# Only stdout is kept: that is what fsarena parses. Re-run in a scratch dir to refresh them.
set -u
d=$(mktemp -d /tmp/fio-capture.XXXXXX)
here=$(cd "$(dirname "$0")" && pwd)
cd "$d" || exit 1

# Time-based random read, io_uring, O_DIRECT, one job.
fio --name=t --filename=f1 --rw=randread --bs=4k --size=16m --iodepth=8 --ioengine=io_uring \
    --direct=1 --runtime=1 --time_based --output-format=json+ \
    > "$here/randread-4k-qd8-io_uring.json" 2>/dev/null

# Mixed random read/write, psync with iodepth 4: fio prints "note: ..." lines on stdout
# before the JSON (one per job), which the parser must skip.
fio --name=t --filename=f1 --rw=randrw --rwmixread=70 --bs=4k --size=16m --iodepth=4 --numjobs=2 \
    --group_reporting --ioengine=psync --direct=0 --runtime=1 --time_based --output-format=json+ \
    > "$here/randrw70-psync-j2-notes.json" 2>/dev/null

# Size-bounded sequential write (no runtime): io_bytes must equal size.
fio --name=w --filename=f2 --rw=write --bs=1m --size=32m --iodepth=4 --ioengine=libaio --direct=1 \
    --fallocate=none --output-format=json+ \
    > "$here/write-1m-32m-libaio.json" 2>/dev/null

# A job that fails: writes to /dev/full end with ENOSPC (error 28) and exit status 1.
fio --name=w --filename=/dev/full --rw=write --bs=4k --size=1m --ioengine=psync \
    --output-format=json+ > "$here/dev-full-enospc.json" 2>/dev/null

cd / && rm -rf "$d"
