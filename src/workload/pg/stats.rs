//! After the measured run: the workload's check of its own work, and the per-file figures
//! (data files vs WAL) from PostgreSQL's statistics.

use std::collections::BTreeMap;

use super::bench::BenchRun;
use super::options::Config;
use super::server::Server;
use crate::workload::error::WorkloadError;

/// Rows pgbench puts in `pgbench_accounts` per scale unit.
const ACCOUNTS_PER_SCALE: u64 = 100_000;

/// What the check found.
pub struct Checked {
    pub accounts: u64,
    pub note: String,
}

/// The check: no failed transaction, every account row present, and the database agrees
/// with pgbench: TPC-B inserts one history row per transaction and moves the same delta
/// into an account, a teller and a branch, so the history count equals the transactions
/// pgbench reported and the four sums agree; select-only leaves both untouched. The
/// server's own commit counter must cover every reported transaction. `trial_transactions`:
/// those of the unmeasured `threads = "auto"` trials before the run.
pub fn verify(
    srv: &Server,
    cfg: &Config,
    r: &BenchRun,
    select_only: bool,
    trial_transactions: u64,
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> Result<Checked, WorkloadError> {
    if r.failed != 0 {
        return Err(WorkloadError::Verify(format!(
            "{} pgbench transactions failed",
            r.failed
        )));
    }
    let row = srv.sql(
        "SELECT (SELECT count(*) FROM pgbench_accounts), (SELECT count(*) FROM pgbench_history), \
         (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts), \
         (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches), \
         (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers), \
         (SELECT coalesce(sum(delta), 0) FROM pgbench_history)",
    )?;
    let v: Vec<i64> = row
        .trim()
        .split('|')
        .map(|x| x.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| WorkloadError::Tool(format!("unreadable check row {row:?}")))?;
    let [accounts, history, a, b, t, d] = v[..] else {
        return Err(WorkloadError::Tool(format!("unexpected check row {row:?}")));
    };
    let want_accounts = u64::from(cfg.pgbench_scale) * ACCOUNTS_PER_SCALE;
    if accounts as u64 != want_accounts {
        return Err(WorkloadError::Verify(format!(
            "pgbench_accounts holds {accounts} rows, expected {want_accounts} (scale {})",
            cfg.pgbench_scale
        )));
    }
    // TPC-B trials of a `threads = "auto"` search left their history rows too.
    let want_history = if select_only {
        0
    } else {
        (r.processed + trial_transactions) as i64
    };
    if history != want_history || a != b || b != t || t != d || (select_only && a != 0) {
        return Err(WorkloadError::Verify(format!(
            "pgbench_history holds {history} rows for {want_history} transactions; balance sums \
             accounts {a}, branches {b}, tellers {t}, history deltas {d}"
        )));
    }
    let commits = after["xact_commit"] - before["xact_commit"];
    if commits < r.processed as f64 {
        return Err(WorkloadError::Verify(format!(
            "the server counted {commits} commits for {} reported transactions",
            r.processed
        )));
    }
    Ok(Checked {
        accounts: accounts as u64,
        note: format!(
            "verified: 0 failed; {accounts} accounts; {history} history rows = transactions; \
             balance sums agree ({a}); {commits} server commits ≥ {} transactions",
            r.processed
        ),
    })
}

/// Totals the outcome needs beyond the metrics.
pub struct Io {
    pub wal_bytes: u64,
    pub db_read_bytes: u64,
}

/// Per-file figures over the measured run, into `m`: data-file reads (count, mean latency,
/// bytes each, hit ratio) from `pg_stat_database`, WAL writes and fsyncs (count, mean
/// latency, bytes per write) from `pg_stat_wal`, checkpoints from `pg_stat_bgwriter`.
/// Latencies are the server's own timing around its syscalls (`track_io_timing`,
/// `track_wal_io_timing`), so they include page cache hits below PostgreSQL.
pub fn per_file(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    block: f64,
    m: &mut BTreeMap<String, f64>,
) -> Io {
    let d = |k: &str| {
        (after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0)).max(0.0)
    };
    let per = |total: f64, n: f64| (n > 0.0).then(|| total / n);
    let wal_bytes = d("wal_lsn");
    m.insert("wal_bytes".into(), wal_bytes);
    m.insert("wal_records".into(), d("wal_records"));
    m.insert("wal_full_page_images".into(), d("wal_fpi"));
    m.insert(
        "checkpoints".into(),
        d("checkpoints_timed") + d("checkpoints_req"),
    );
    m.insert("checkpoint_buffers_written".into(), d("buffers_checkpoint"));
    m.insert("bgwriter_buffers_written".into(), d("buffers_clean"));
    m.insert("backend_buffers_written".into(), d("buffers_backend"));
    let reads = d("blks_read");
    m.insert("db_reads".into(), reads);
    m.insert("db_read_bytes_per_io".into(), block);
    if let Some(l) = per(d("blk_read_time"), reads) {
        m.insert("db_read_latency_ms".into(), l);
    }
    if let Some(h) = per(d("blks_hit") * 100.0, d("blks_hit") + reads) {
        m.insert("shared_buffers_hit_pct".into(), h);
    }
    m.insert("db_backend_write_ms".into(), d("blk_write_time"));
    m.insert("checkpoint_write_ms".into(), d("checkpoint_write_time"));
    m.insert("checkpoint_sync_ms".into(), d("checkpoint_sync_time"));
    let (writes, syncs) = (d("wal_write"), d("wal_sync"));
    m.insert("wal_writes".into(), writes);
    m.insert("wal_syncs".into(), syncs);
    if let Some(l) = per(d("wal_write_time"), writes) {
        m.insert("wal_write_latency_ms".into(), l);
    }
    if let Some(l) = per(d("wal_sync_time"), syncs) {
        m.insert("wal_sync_latency_ms".into(), l);
    }
    if let Some(b) = per(d("wal_bytes"), writes) {
        m.insert("wal_bytes_per_write".into(), b);
    }
    Io {
        wal_bytes: wal_bytes as u64,
        db_read_bytes: (reads * block) as u64,
    }
}
