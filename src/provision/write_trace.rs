//! Which blocks a cell wrote to its copy of a populated image, so that the next cell can be
//! given the master's bytes again by copying back only those blocks instead of the whole
//! image (at the studies' scale a whole copy is gigabytes per cell; a cell that scans,
//! touches or deletes writes megabytes).
//!
//! The kernel's block tracepoint `block_rq_issue` sees every request a loop device is sent.
//! A private trace instance (a directory under tracefs' `instances/`, with its own ring
//! buffer; a [`Recorder`], kept for one clone after another) records only the write,
//! write-zeroes and discard requests of one device, from just after the device is attached
//! until just before it is detached. The record is
//! believed only if nothing was lost: the ring buffer dropped and overwrote no event, and
//! its sectors add up *exactly* to what the device's own counters in `/proc/diskstats`
//! say it wrote and discarded over the same span. Anything else is an error, and the caller
//! copies the whole image as before — never a restore from a partial record.
//!
//! Costs nothing measurable while a cell runs: one filtered tracepoint per request, no
//! reader until the cell is over.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::monitor::diskstats::{self, DiskCounters};
use crate::sys::DevId;

/// The tracepoint that sees every request a block device is sent.
const EVENT: &str = "events/block/block_rq_issue";

/// Ring-buffer size per CPU: room for ~200,000 requests per CPU (an event is ~80 bytes), more
/// than a cell of the studies sends; a cell that sends more is copied whole.
const BUFFER_KB_PER_CPU: u64 = 16 * 1024;

/// Never more than this for all CPUs together, however many there are.
const BUFFER_KB_TOTAL: u64 = 512 * 1024;

/// The prefix of every trace instance fsarena makes (cleanup removes only these).
pub const INSTANCE_PREFIX: &str = "fsarena-";

/// A trace instance made once and used for one write trace after another: one master's
/// clones, which are never attached two at a time. Making an instance (its ring buffers)
/// and removing one (RCU grace periods) costs ~65 ms; arming a kept one for the next
/// device, and reading what it recorded through `trace_pipe`, ~1 ms. At ~230 clones in the
/// default run, that is ~15 s of its wall time.
#[derive(Debug)]
pub struct Recorder {
    instance: PathBuf,
}

/// A running record of one device's writes, on a [`Recorder`]'s instance.
#[derive(Debug)]
pub struct WriteTrace {
    instance: PathBuf,
    dev: DevId,
    start: DiskCounters,
    /// The instance's lost-event counters when this trace started (they never reset).
    lost: u64,
}

/// Where the system's tracefs is mounted, if it is: at `/sys/kernel/tracing` or under debugfs.
/// Never a tracefs mounted somewhere else — another fsarena run's per-clone mount would be
/// found too, and unmounted under this run's trace when that clone is done.
pub fn mounted_tracefs() -> Option<PathBuf> {
    const SYSTEM: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    super::mounts::read()
        .into_iter()
        .find(|m| m.fstype == "tracefs" && SYSTEM.iter().any(|s| m.target == Path::new(s)))
        .map(|m| m.target)
}

/// The device number as the kernel's trace events hold it (`MKDEV`: major << 20 | minor).
fn kernel_dev(dev: DevId) -> u64 {
    (u64::from(dev.major) << 20) | u64::from(dev.minor)
}

/// `dev`'s counters now.
fn counters(dev: DevId) -> io::Result<DiskCounters> {
    let text = fs::read_to_string("/proc/diskstats")?;
    let mut out = [None];
    diskstats::find_devices(&text, &[dev], &mut out);
    let [found] = out;
    found.ok_or_else(|| io::Error::other(format!("{dev} is not in /proc/diskstats")))
}

fn write(path: &Path, what: &str) -> io::Result<()> {
    fs::write(path, what).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl Recorder {
    /// Makes the instance `tracefs/instances/<name>` (the caller journals that path first),
    /// its event off.
    pub fn create(instance: &Path) -> io::Result<Recorder> {
        fs::create_dir(instance)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", instance.display())))?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        let kb = BUFFER_KB_PER_CPU.min(BUFFER_KB_TOTAL / cpus.max(1));
        match write(&instance.join("buffer_size_kb"), &kb.to_string()) {
            Ok(()) => Ok(Recorder {
                instance: instance.to_path_buf(),
            }),
            Err(e) => {
                let _ = remove_instance(instance);
                Err(e)
            }
        }
    }

    /// The instance's directory.
    pub fn instance(&self) -> &Path {
        &self.instance
    }

    /// Starts recording `dev`'s writes. Call before anything writes to `dev`, and only once
    /// the last trace on this recorder has finished.
    pub fn start(&self, dev: DevId) -> io::Result<WriteTrace> {
        let event = self.instance.join(EVENT);
        // Whatever an unfinished earlier trace left is not this device's.
        write(&event.join("enable"), "0")?;
        drain(&self.instance)?;
        let lost = lost_events(&self.instance)?;
        let filter = format!(
            "dev == {} && (rwbs ~ \"*W*\" || rwbs ~ \"*D*\")",
            kernel_dev(dev)
        );
        write(&event.join("filter"), &filter)?;
        write(&event.join("enable"), "1")?;
        Ok(WriteTrace {
            instance: self.instance.clone(),
            dev,
            start: counters(dev)?,
            lost,
        })
    }

    /// Removes the instance.
    pub fn remove(self) -> io::Result<()> {
        remove_instance(&self.instance)
    }
}

impl WriteTrace {
    /// Stops recording and returns the byte ranges `[start, end)` the device was sent writes
    /// or discards for, sorted and merged — or why the record cannot be trusted. Call after
    /// the last write (unmounted, checked), before detaching. The instance stays, off and
    /// empty, for the next trace.
    pub fn finish(self) -> Result<Vec<(u64, u64)>, String> {
        let end = counters(self.dev).map_err(|e| e.to_string())?;
        write(&self.instance.join(EVENT).join("enable"), "0").map_err(|e| e.to_string())?;
        let text = drain(&self.instance).map_err(|e| e.to_string())?;
        let lost = lost_events(&self.instance)
            .map_err(|e| e.to_string())?
            .saturating_sub(self.lost);
        if lost > 0 || text.contains("[LOST ") {
            return Err(format!("the trace lost {lost} events (ring buffer full)"));
        }
        let (ranges, written, discarded) = parse(&text);
        let delta = end.since(&self.start);
        if written != delta.write_sectors || discarded != delta.discard_sectors {
            return Err(format!(
                "the trace saw {written} sectors written and {discarded} discarded, the device \
                 counted {} and {}",
                delta.write_sectors, delta.discard_sectors
            ));
        }
        Ok(merge(ranges))
    }
}

/// Reads and so empties the instance's buffers (`trace_pipe`, without waiting for more):
/// clearing them through `trace` instead waits for an RCU grace period (~25 ms).
fn drain(instance: &Path) -> io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = instance.join("trace_pipe");
    let mut pipe = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Events the instance's per-CPU buffers dropped or overwrote.
fn lost_events(instance: &Path) -> io::Result<u64> {
    let mut lost = 0;
    for cpu in fs::read_dir(instance.join("per_cpu"))? {
        let stats = fs::read_to_string(cpu?.path().join("stats"))?;
        for line in stats.lines() {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            if matches!(key.trim(), "overrun" | "commit overrun" | "dropped events") {
                lost += value.trim().parse::<u64>().unwrap_or(u64::MAX / 4);
            }
        }
    }
    Ok(lost)
}

/// The byte ranges of the trace's requests, and their sectors written and discarded. A line
/// reads `… block_rq_issue: 7,0 WS 4096 () 2048 + 8 be,0,4 [comm]`: `rwbs` is the second
/// field (`W` a write or write-zeroes, `D` a discard), the sector stands before ` + `, the
/// count after it; 512-byte sectors, whatever the device's logical block size.
fn parse(text: &str) -> (Vec<(u64, u64)>, u64, u64) {
    let (mut ranges, mut written, mut discarded) = (Vec::new(), 0u64, 0u64);
    for line in text.lines() {
        let Some((_, event)) = line.split_once("block_rq_issue: ") else {
            continue;
        };
        let rwbs = event.split_whitespace().nth(1).unwrap_or("");
        let Some((before, after)) = event.split_once(" + ") else {
            continue;
        };
        let sector = before
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse::<u64>().ok());
        let count = after
            .split_whitespace()
            .next()
            .and_then(|s| s.parse::<u64>().ok());
        let (Some(sector), Some(count)) = (sector, count) else {
            continue;
        };
        if count == 0 {
            continue;
        }
        if rwbs.contains('D') {
            discarded += count;
        } else if rwbs.contains('W') {
            written += count;
        } else {
            continue;
        }
        ranges.push((sector * 512, (sector + count) * 512));
    }
    (ranges, written, discarded)
}

/// Sorts ranges and merges those that overlap or touch.
pub fn merge(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Stops and removes a trace instance (a no-op if it is gone). The kernel refuses to
/// remove one whose files are open; nothing of fsarena's keeps them open.
pub fn remove_instance(instance: &Path) -> io::Result<()> {
    let _ = fs::write(instance.join(EVENT).join("enable"), "0");
    match fs::remove_dir(instance) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// Removes the instance called `name` wherever tracefs is mounted, mounting it at `spare`
/// (a directory it makes and removes) for the moment when the system has no tracefs
/// mount: for `fsarena cleanup`, whose journal names an instance under a mount that may be
/// gone. Returns whether there was one to remove.
pub fn remove_instance_named(name: &str, spare: &Path) -> io::Result<bool> {
    if !name.starts_with(INSTANCE_PREFIX) {
        return Ok(false);
    }
    let remove = |tracefs: &Path| -> io::Result<bool> {
        let dir = instance_path(tracefs, name);
        let there = dir.exists();
        remove_instance(&dir).map(|()| there)
    };
    if let Some(t) = mounted_tracefs() {
        return remove(&t);
    }
    fs::create_dir_all(spare)?;
    let flags = rustix::mount::MountFlags::empty();
    rustix::mount::mount("nodev", spare, "tracefs", flags, None).map_err(io::Error::from)?;
    let removed = remove(spare);
    let unmounted = rustix::mount::unmount(spare, rustix::mount::UnmountFlags::empty())
        .map_err(io::Error::from);
    let _ = fs::remove_dir(spare);
    let removed = removed?;
    unmounted.map(|()| removed)
}

/// Where the trace instance called `name` lives under the tracefs mounted at `tracefs`.
pub fn instance_path(tracefs: &Path, name: &str) -> PathBuf {
    tracefs.join("instances").join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_discards_are_counted_and_reads_and_flushes_ignored() {
        let text = "\
# tracer: nop
           mount-1 [001] .....  1.0: block_rq_issue: 7,0 WS 4096 () 0 + 8 be,0,4 [mount]
    jbd2/loop0-8-2 [000] .....  1.1: block_rq_issue: 7,0 WSM 524288 () 1050328 + 1024 be,0,3 [jbd2/loop0-8]
     kworker/0:1-3 [000] .....  1.2: block_rq_issue: 7,0 FWS 0 () 0 + 0 be,0,3 [kworker/0:1]
     kworker/0:1-3 [000] .....  1.3: block_rq_issue: 7,0 D 0 () 4096 + 2048 none,0,0 [kworker/0:1]
     kworker/0:1-3 [000] .....  1.4: block_rq_issue: 7,0 RA 4096 () 9000 + 8 none,0,0 [kworker/0:1]
";
        let (ranges, written, discarded) = parse(text);
        assert_eq!(written, 8 + 1024);
        assert_eq!(discarded, 2048);
        assert_eq!(
            ranges,
            vec![
                (0, 4096),
                (1050328 * 512, (1050328 + 1024) * 512),
                (4096 * 512, 6144 * 512)
            ]
        );
    }

    #[test]
    fn ranges_that_overlap_or_touch_merge() {
        assert_eq!(
            merge(vec![(8, 16), (0, 8), (20, 30), (25, 40), (50, 60)]),
            vec![(0, 16), (20, 40), (50, 60)]
        );
        assert!(merge(Vec::new()).is_empty());
    }

    #[test]
    fn the_kernel_device_number_puts_the_major_above_twenty_bits() {
        assert_eq!(kernel_dev(DevId { major: 7, minor: 0 }), 7 << 20);
        assert_eq!(kernel_dev(DevId { major: 7, minor: 3 }), (7 << 20) | 3);
    }
}
