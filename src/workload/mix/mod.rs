//! Mixes: workloads described as weighted file operations over a working set, in a format
//! users write (`[workload.mix.NAME]` tables, [`spec`]) and in which the application
//! personalities `fileserver`, `varmail` and `webserver` ship (`personalities/*.toml`,
//! Filebench's three best-known `.f` files restated).
//!
//! A run lays the working set down unmeasured ([`set`]), runs the mix with one seeded
//! stream per worker thread ([`engine`]), then checks the final tree against the engine's
//! own book (every path, size and xxh3), so a mix can never be fast by being wrong. Reads
//! are checked as they happen, and a `stat` checks the size it sees.

pub mod dist;
pub mod engine;
pub mod set;
pub mod spec;

use std::time::Instant;

use self::engine::{Shared, Tally};
use self::set::{initial_segments, WorkingSet};
use self::spec::{MixSpec, Op, Stop};
use super::contract::Workload;
use super::ctx::Ctx;
use super::error::{IoContext, WorkloadError};
use super::harness::Harness;
use super::outcome::Outcome;
use super::point::Point;
use super::prepare::{check_threads, dataset_error, prep_threads};
use super::spec::WorkloadSpec;
use super::{dirfd, verify};
use crate::fsops::{percentile, LatencyLog};

/// Side columns of a mix's tables.
const COLUMNS: &[&str] = &[
    "mb_per_s",
    "write_amplification",
    "peak_cached_bytes",
    "cpu_system_pct",
];

/// A shipped personality: a mix in the user format, embedded.
pub struct Personality {
    name: &'static str,
    describe: &'static str,
    toml: &'static str,
}

pub const FILESERVER: Personality = Personality {
    name: "fileserver",
    describe: "Filebench's file server: create, append, read whole, stat and delete over a tree, 16 threads",
    toml: include_str!("personalities/fileserver.toml"),
};
pub const VARMAIL: Personality = Personality {
    name: "varmail",
    describe: "Filebench's mail server: small files in one directory, fsync after each delivery, 16 threads",
    toml: include_str!("personalities/varmail.toml"),
};
pub const WEBSERVER: Personality = Personality {
    name: "webserver",
    describe:
        "Filebench's web server: 16 threads reading whole files, one thread appending to a log",
    toml: include_str!("personalities/webserver.toml"),
};

impl Personality {
    /// The shipped mix with the `[workload.NAME]` table's keys laid over it (a key given
    /// there replaces the shipped one whole), checked like any mix.
    pub fn mix_spec(&self, overrides: &toml::Table) -> Result<MixSpec, String> {
        let mut table: toml::Table = self
            .toml
            .parse()
            .map_err(|e| format!("{}: the shipped mix does not parse: {e}", self.name))?;
        table.extend(overrides.clone());
        spec::parse(self.name, &table)
    }

    /// The shipped TOML text, for the README and `--help`.
    pub fn text(&self) -> &'static str {
        self.toml
    }
}

impl Workload for Personality {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("ops_per_s", true),
            columns: COLUMNS,
            metric_headers: &[("ops_per_s", "ops/s")],
            // The thread count is part of the personality (`threads` in its mix, overridable).
            uses_threads: false,
            ..WorkloadSpec::new(self.name, self.describe)
        }
    }
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        self.mix_spec(table).map(|_| ())
    }
    fn run(
        &self,
        ctx: &Ctx,
        _point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let spec = self.mix_spec(ctx.options).map_err(WorkloadError::Option)?;
        run_mix(ctx, &spec.at_scale(ctx.dataset.scale), harness)
    }
}

/// Mixes users write: one point per `[workload.mix.NAME]` table.
pub struct Mix;

/// The named mixes of a `[workload.mix]` table, each checked.
pub fn mixes(table: &toml::Table) -> Result<Vec<(String, MixSpec)>, String> {
    if table.is_empty() {
        return Err(
            "[workload.mix]: describe at least one mix as a [workload.mix.NAME] table \
                    (see the README's \"Workloads you write\")"
                .into(),
        );
    }
    table
        .iter()
        .map(|(name, v)| {
            let toml::Value::Table(t) = v else {
                return Err(format!(
                    "[workload.mix]: `{name}` is not a mix; write each mix as a [workload.mix.NAME] table"
                ));
            };
            if name.is_empty()
                || name.len() > 40
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(format!(
                    "[workload.mix.{name}]: a mix name is 1 to 40 letters, digits, `-` or `_`"
                ));
            }
            Ok((name.clone(), spec::parse(&format!("mix.{name}"), t)?))
        })
        .collect()
}

impl Workload for Mix {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            key_metric: ("ops_per_s", true),
            columns: COLUMNS,
            ..WorkloadSpec::new("mix", "mixes you describe in [workload.mix.NAME] tables: weighted file operations over a working set")
        }
    }
    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        mixes(table).map(|_| ())
    }
    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        Ok(mixes(ctx.options)
            .map_err(WorkloadError::Option)?
            .into_iter()
            .map(|(name, _)| Point {
                variant: name.clone(),
                params: [("mix".to_string(), serde_json::Value::String(name))].into(),
            })
            .collect())
    }
    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let spec = mixes(ctx.options)
            .map_err(WorkloadError::Option)?
            .into_iter()
            .find(|(name, _)| *name == point.variant)
            .map(|(_, s)| s)
            .ok_or_else(|| WorkloadError::Option(format!("no mix named `{}`", point.variant)))?;
        run_mix(ctx, &spec.at_scale(ctx.dataset.scale), harness)
    }
}

/// Lays the working set down (unmeasured), runs the mix under `harness.measure`, then
/// checks the final tree against the engine's book.
pub fn run_mix(
    ctx: &Ctx,
    spec: &MixSpec,
    harness: &mut dyn Harness,
) -> Result<Outcome, WorkloadError> {
    let threads = spec.threads.unwrap_or(ctx.threads).max(1);
    if spec.files < threads as u64 {
        return Err(WorkloadError::Option(format!(
            "the working set ({} files) is smaller than the {threads} threads sharing it",
            spec.files
        )));
    }
    let set = WorkingSet::new(spec, ctx.dataset);
    let mut states = set.initial(spec, ctx.dataset.seed);
    let pool = crate::fsops::pool(prep_threads(ctx))?;
    let initial = pool.install(|| set.manifest(ctx.dataset, &states));
    ctx.check()?;
    let stop = || ctx.check().is_err();
    crate::dataset::materialize_timed(
        ctx.dataset,
        &initial,
        ctx.root,
        prep_threads(ctx),
        false,
        &stop,
    )
    .map_err(|e| ctx.check().err().unwrap_or_else(|| dataset_error(e)))?;
    crate::sys::syncfs(ctx.root).ctx(|| format!("syncfs {}", ctx.root.display()))?;
    initial_segments(&set, &mut states, &initial);

    let root = dirfd::open_dir(ctx.root)?;
    let check = || ctx.check();
    let shared = Shared {
        root: &root,
        spec,
        data: ctx.dataset,
        set: &set,
        check: &check,
        trace: false,
    };
    let outcome = harness.measure(&mut || {
        let t0 = Instant::now();
        let tally = engine::run(&shared, threads, &mut states)?;
        Ok(outcome(spec, threads, t0.elapsed().as_secs_f64(), tally))
    })?;
    let expected = pool.install(|| set.manifest(ctx.dataset, &states));
    verify::tree(ctx.root, &expected, check_threads(ctx))?;
    let mut outcome = outcome;
    outcome
        .metrics
        .insert("files_at_end".into(), expected.files.len() as f64);
    Ok(outcome)
}

/// The outcome of a measured mix: ops/s, and per operation its count and p50/p99/p99.9/max
/// latency.
fn outcome(spec: &MixSpec, threads: usize, seconds: f64, tally: Tally) -> Outcome {
    let mut out = Outcome {
        seconds,
        logical_read_bytes: tally.read_bytes,
        logical_write_bytes: tally.written_bytes,
        fsyncs: tally.fsyncs,
        ..Outcome::default()
    };
    let m = &mut out.metrics;
    let mut total = 0u64;
    let logs = Op::ALL
        .iter()
        .map(|o| o.name())
        .zip(tally.ops)
        .chain([("log_append", tally.log_appends)]);
    for (name, log) in logs {
        total += log.0.len() as u64;
        add_latency(m, name, log);
    }
    add_latency(m, "final_fsync", tally.final_fsyncs);
    out.files = total;
    m.insert("ops".into(), total as f64);
    if seconds > 0.0 {
        m.insert("ops_per_s".into(), total as f64 / seconds);
    }
    m.insert("substituted_ops".into(), tally.substituted as f64);
    m.insert("redrawn_ops".into(), tally.redrawn as f64);
    m.insert("worker_threads".into(), threads as f64);
    m.insert("working_set_files".into(), spec.files as f64);
    if let Stop::Time(d) = spec.stop {
        m.insert("planned_seconds".into(), d.as_secs_f64());
    }
    out.notes.push(
        "each operation's latency covers open, every read or write (and fsync per the mix), and close"
            .into(),
    );
    if tally.substituted > 0 {
        out.notes.push(format!(
            "{} operations found nothing to act on in 64 draws and ran as a create (or, with no free slot, a rewrite)",
            tally.substituted
        ));
    }
    out
}

/// `{name}_ops` and its `_p50_us`, `_p99_us`, `_p999_us`, `_max_us` (nothing if none ran).
pub(crate) fn add_latency(
    m: &mut std::collections::BTreeMap<String, f64>,
    name: &str,
    mut log: LatencyLog,
) {
    if log.0.is_empty() {
        return;
    }
    log.0.sort_unstable();
    m.insert(format!("{name}_ops"), log.0.len() as f64);
    for (q, label) in [(0.5, "p50"), (0.99, "p99"), (0.999, "p999"), (1.0, "max")] {
        m.insert(
            format!("{name}_{label}_us"),
            percentile(&log.0, q) as f64 / 1000.0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(src: &str) -> toml::Table {
        src.parse().expect("toml")
    }

    #[test]
    fn the_shipped_personalities_are_valid_mixes_in_the_user_format() {
        for p in [FILESERVER, VARMAIL, WEBSERVER] {
            let s = p.mix_spec(&toml::Table::new()).unwrap();
            assert!(s.scaled, "{}", p.name);
            // The same text is accepted as a user's [workload.mix.NAME] table.
            let mine = table(&format!("[{}]\n{}", p.name, p.text()));
            assert_eq!(mixes(&mine).unwrap()[0].1, s);
        }
        let web = WEBSERVER.mix_spec(&toml::Table::new()).unwrap();
        assert_eq!(web.log.map(|l| l.appenders), Some(1));
        assert_eq!(
            VARMAIL.mix_spec(&toml::Table::new()).unwrap().fsync,
            spec::Fsync::EachFile
        );
    }

    #[test]
    fn a_personality_takes_overrides_and_refuses_typos() {
        let s = VARMAIL
            .mix_spec(&table("threads = 4\nfiles = 500"))
            .unwrap();
        assert_eq!((s.threads, s.files), (Some(4), 500));
        let e = VARMAIL.mix_spec(&table("thread = 4")).unwrap_err();
        assert!(
            e.starts_with("[workload.varmail]: unknown option `thread`"),
            "{e}"
        );
    }

    #[test]
    fn mix_tables_must_be_named_mixes() {
        assert!(mixes(&toml::Table::new())
            .unwrap_err()
            .contains("at least one mix"));
        assert!(mixes(&table("files = 3"))
            .unwrap_err()
            .contains("`files` is not a mix"));
        let e = mixes(&table("[a]\nfiles = 3\ntotal_ops = 5\nops = { reed = 1 }")).unwrap_err();
        assert!(
            e.starts_with("[workload.mix.a]: `ops`: unknown operation `reed`"),
            "{e}"
        );
        let ok = mixes(&table(
            "[b]\nfiles = 3\nduration = \"1s\"\nops = { read = 1 }",
        ))
        .unwrap();
        assert_eq!(ok[0].0, "b");
    }
}
