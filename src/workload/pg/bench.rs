//! pgbench as the client: one timed run with a per-transaction log (`-l`), its summary
//! read back, and PostgreSQL's own statistics taken before and after it.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::install::Install;
use super::server::{command, Server, ROLE};
use crate::workload::ctx::Ctx;
use crate::workload::engine::confined::wait_child;
use crate::workload::error::{IoContext, WorkloadError};

/// What one pgbench run reported and logged.
#[derive(Debug, Default)]
pub struct BenchRun {
    /// Wall seconds from spawn to exit.
    pub seconds: f64,
    /// "number of transactions actually processed".
    pub processed: u64,
    /// "number of failed transactions".
    pub failed: u64,
    /// "tps = … (without initial connection time)".
    pub tps: f64,
    /// Latency of every logged transaction, microseconds, sorted.
    pub latencies_us: Vec<u64>,
    /// pgbench's own CPU seconds (user + system).
    pub client_cpu: f64,
}

/// Runs pgbench with `args` against `server`, writing its log in `dir`. `tick` runs every
/// 10 ms while it runs (the cgroup keeper); a cancel or the deadline kills it.
pub fn run(
    install: &Install,
    server: &Server,
    args: &[String],
    dir: &Path,
    ctx: &Ctx,
    tick: &mut dyn FnMut(),
) -> Result<BenchRun, WorkloadError> {
    let prefix = "pgbench_log";
    for e in fs::read_dir(dir)
        .ctx(|| format!("reading {}", dir.display()))?
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with(prefix) {
            let _ = fs::remove_file(e.path());
        }
    }
    let out_path = dir.join("pgbench.out");
    let err_path = dir.join("pgbench.err");
    let mut cmd = command(&install.program("pgbench"), None, None);
    cmd.arg("-h")
        .arg(&server.socket_dir)
        .args(["-U", ROLE])
        .args(args)
        .arg("-l")
        .arg(format!("--log-prefix={prefix}"))
        .arg("postgres")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).ctx(|| "creating pgbench.out".into())?)
        .stderr(fs::File::create(&err_path).ctx(|| "creating pgbench.err".into())?);
    let t0 = Instant::now();
    let child = cmd.spawn().ctx(|| "starting pgbench".into())?;
    let pid = child.id() as libc::pid_t;
    let (status, usage) = wait_child(ctx, pid, "waiting for pgbench", tick)?;
    let seconds = t0.elapsed().as_secs_f64();
    let exit = std::process::ExitStatus::from_raw(status);
    let out = fs::read_to_string(&out_path).unwrap_or_default();
    if !exit.success() {
        let err = fs::read_to_string(&err_path).unwrap_or_default();
        return Err(WorkloadError::Tool(format!(
            "pgbench failed ({exit}): {}",
            err.trim().lines().last().unwrap_or("")
        )));
    }
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let mut run = summary(&out)?;
    run.seconds = seconds;
    run.client_cpu = cpu(usage.ru_utime) + cpu(usage.ru_stime);
    let mut failed_logged = 0;
    for e in fs::read_dir(dir)
        .ctx(|| format!("reading {}", dir.display()))?
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with(prefix) {
            let text =
                fs::read_to_string(e.path()).ctx(|| format!("reading {}", e.path().display()))?;
            failed_logged += parse_log(&text, &mut run.latencies_us)?;
        }
    }
    run.latencies_us.sort_unstable();
    if run.latencies_us.len() as u64 != run.processed || failed_logged != run.failed {
        return Err(WorkloadError::Verify(format!(
            "pgbench says {} transactions processed and {} failed; its log holds {} and {}",
            run.processed,
            run.failed,
            run.latencies_us.len(),
            failed_logged
        )));
    }
    Ok(run)
}

/// The processed and failed counts and tps from pgbench's summary.
fn summary(out: &str) -> Result<BenchRun, WorkloadError> {
    let after = |key: &str| {
        out.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .map(|v| v.split('/').next().unwrap_or(v).to_string())
    };
    let num = |key: &str| -> Result<f64, WorkloadError> {
        after(key).and_then(|v| v.parse().ok()).ok_or_else(|| {
            WorkloadError::Tool(format!("pgbench printed no `{key}`: {}", out.trim()))
        })
    };
    Ok(BenchRun {
        processed: num("number of transactions actually processed:")? as u64,
        failed: num("number of failed transactions:").unwrap_or(0.0) as u64,
        tps: num("tps =")?,
        ..Default::default()
    })
}

/// Adds the latencies (µs, third field) of one `-l` log's committed transactions to `lat`
/// and returns how many it marks failed.
fn parse_log(text: &str, lat: &mut Vec<u64>) -> Result<u64, WorkloadError> {
    let mut failed = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match line.split_whitespace().nth(2) {
            Some("failed") => failed += 1,
            Some(v) => lat.push(v.parse().map_err(|_| {
                WorkloadError::Tool(format!("unreadable pgbench log line: {line}"))
            })?),
            None => {
                return Err(WorkloadError::Tool(format!(
                    "short pgbench log line: {line}"
                )))
            }
        }
    }
    Ok(failed)
}

/// The statistics columns taken before and after the measured run (PostgreSQL 15 names).
const STATS: &[&str] = &[
    "w.wal_records",
    "w.wal_fpi",
    "w.wal_bytes",
    "w.wal_write",
    "w.wal_sync",
    "w.wal_write_time",
    "w.wal_sync_time",
    "b.checkpoints_timed",
    "b.checkpoints_req",
    "b.checkpoint_write_time",
    "b.checkpoint_sync_time",
    "b.buffers_checkpoint",
    "b.buffers_clean",
    "b.buffers_backend",
    "d.blks_read",
    "d.blks_hit",
    "d.blk_read_time",
    "d.blk_write_time",
    "d.xact_commit",
    "d.xact_rollback",
];

/// A snapshot of the server's cumulative statistics, keyed by column name (without the
/// table alias), plus `wal_lsn` (the WAL insert position, bytes).
pub fn snapshot(server: &Server) -> Result<BTreeMap<String, f64>, WorkloadError> {
    let sql = format!(
        "SELECT pg_current_wal_lsn(), {} FROM pg_stat_wal w, pg_stat_bgwriter b, \
         pg_stat_database d WHERE d.datname = current_database()",
        STATS.join(", ")
    );
    let row = server.sql(&sql)?;
    let f: Vec<&str> = row.trim().split('|').collect();
    if f.len() != STATS.len() + 1 {
        return Err(WorkloadError::Tool(format!(
            "unexpected statistics row: {row}"
        )));
    }
    let mut out = BTreeMap::new();
    out.insert(
        "wal_lsn".into(),
        lsn(f[0]).ok_or_else(|| WorkloadError::Tool(format!("unreadable LSN {}", f[0])))? as f64,
    );
    for (name, v) in STATS.iter().zip(&f[1..]) {
        let key = name.split_once('.').map_or(*name, |(_, k)| k);
        let v: f64 = v
            .parse()
            .map_err(|_| WorkloadError::Tool(format!("unreadable {key} = {v}")))?;
        out.insert(key.into(), v);
    }
    Ok(out)
}

/// An LSN `X/Y` (hex halves) as a byte position.
fn lsn(s: &str) -> Option<u64> {
    let (hi, lo) = s.trim().split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) + u64::from_str_radix(lo, 16).ok()?)
}

/// Waits (5 s at most) until no client backend but the asking one is connected, so the
/// backends pgbench used have exited and flushed their statistics.
pub fn wait_for_backends(server: &Server) -> Result<(), WorkloadError> {
    let t0 = Instant::now();
    loop {
        let n = server.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
             AND pid <> pg_backend_pid()",
        )?;
        if n.trim() == "0" || t0.elapsed() > Duration::from_secs(5) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// pgbench's arguments for `clients` clients for `seconds` (whole), select-only or TPC-B.
pub fn args(clients: usize, seconds: f64, select_only: bool) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "-n".into(),
        "-c".into(),
        clients.to_string(),
        "-j".into(),
        clients.min(num_cpus()).to_string(),
        "-T".into(),
        format!("{}", seconds as u64),
    ];
    if select_only {
        args.push("-S".into());
    }
    args
}

/// CPUs this process may run on, for pgbench's `-j`.
fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_log_are_read() {
        let out = "transaction type: <builtin: TPC-B (sort of)>\nscaling factor: 1\n\
                   number of transactions actually processed: 5505\n\
                   number of failed transactions: 0 (0.000%)\nlatency average = 2.174 ms\n\
                   tps = 1839.937165 (without initial connection time)\n";
        let r = summary(out).unwrap();
        assert_eq!((r.processed, r.failed, r.tps), (5505, 0, 1839.937165));
        assert!(summary("nothing").is_err());
        let mut lat = Vec::new();
        let failed = parse_log(
            "1 1 3432 0 1795436721 689786\n0 1 failed 0 1795436721 693550\n\n3 1 4877 0 1 2\n",
            &mut lat,
        )
        .unwrap();
        assert_eq!((lat, failed), (vec![3432, 4877], 1));
        assert!(parse_log("1 1 x 0\n", &mut Vec::new()).is_err());
        assert_eq!(lsn("0/2441300"), Some(0x2441300));
        assert_eq!(lsn("1/0"), Some(1 << 32));
    }
}
