//! The results store as the run sees it: opened (fresh, or resumed with what is already
//! final) before anything is provisioned, each record kept the moment it is final (in the
//! file, and in the run's memory the budget decides from), and described in one line.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::host_facts;
use super::set_aside::SetAside;
use super::team::Team;
use super::terms::{RunError, RunOptions};
use crate::plan::Plan;
use crate::report;
use crate::results::record::{CellId, CellKey};
use crate::results::store::{self, Loaded, Store};
use crate::results::{Measurement, Status};
use crate::workload::Workload;

/// What a results file holds, counted by cell.
#[derive(Debug, Default)]
pub struct Tally {
    /// Cells every point of which is recorded in final form.
    pub done: HashSet<CellId>,
    /// Final records of cells cut short (a kill -9 between the points of a sweep, a torn
    /// last line): kept, and only the missing points are measured again.
    pub points: HashSet<CellKey>,
    /// Cells cut short: (cell, points recorded, points it has).
    pub partial: Vec<(CellId, usize, u32)>,
    /// Final records that did not end `ok`, as summary lines.
    pub failures: Vec<String>,
}

/// Counts what `loaded` holds: a cell is done when none of its records is unfinished and
/// it has as many final records as it has points (records carry the count).
pub fn tally(loaded: &Loaded) -> Tally {
    let mut by_cell: HashMap<CellId, Vec<&Measurement>> = HashMap::new();
    for m in &loaded.measurements {
        by_cell.entry(m.cell_id()).or_default().push(m);
    }
    let mut t = Tally::default();
    for (k, mut ms) in by_cell {
        let of = ms.iter().filter_map(|m| m.cell_points).max();
        if of.is_some() {
            // Once a cell has point records, a record of the whole cell (interrupted or
            // failed before its points, in an earlier attempt) is superseded by them.
            ms.retain(|m| m.cell_points.is_some());
        }
        let finals: Vec<&&Measurement> = ms.iter().filter(|m| store::is_final(m)).collect();
        let complete = finals.len() == ms.len() && of.map_or(true, |n| finals.len() >= n as usize);
        for m in &finals {
            if !m.status.is_ok() {
                t.failures.push(failure_line(m));
            }
        }
        if complete {
            t.done.insert(k);
        } else {
            t.points.extend(finals.iter().map(|m| m.key()));
            if let Some(n) = of {
                t.partial.push((k, finals.len(), n));
            }
        }
    }
    t.partial.sort();
    t
}

/// An open store and what it already holds.
pub struct Opened {
    pub store: Store,
    pub tally: Tally,
    /// What the results file holds, kept in memory from here on as each record is
    /// appended ([`Recorder`]): the budget decides from it without reading the file back.
    pub state: Loaded,
}

/// Opens the results store: a new one with the host facts, or with `--resume` the existing
/// one (its torn last line cut off first, and said so) plus what it already holds in
/// final form. Either way the results directory is locked against a second writer.
pub fn open_store(
    plan: &Plan,
    opts: &RunOptions,
    skipped: &[(String, String)],
    skipped_workloads: &[(String, String)],
    zstd_ratio: Option<f64>,
) -> Result<Opened, RunError> {
    if !opts.resume {
        let plan_json = serde_json::to_value(plan).unwrap_or(serde_json::Value::Null);
        let mut facts = host_facts::gather(&opts.work_root, opts.command_line.clone(), plan_json);
        facts.skipped_targets = skipped.to_vec();
        facts.skipped_workloads = skipped_workloads.to_vec();
        facts.dataset_zstd_ratio = zstd_ratio;
        return Ok(Opened {
            store: Store::create(&opts.out, &facts)?,
            tally: Tally::default(),
            state: Loaded::new(facts),
        });
    }
    let (store, torn) = Store::reopen(&opts.out)?;
    if let Some(t) = torn {
        eprintln!(
            "fsarena: {}: removed an unterminated last line ({} bytes at offset {}, a run cut off mid-write); kept in {}",
            store.path().display(),
            t.bytes,
            t.offset,
            t.saved.display()
        );
    }
    let state = store::load(&opts.out)?;
    let tally = tally(&state);
    for (k, have, of) in &tally.partial {
        let on = k
            .dataset
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default();
        eprintln!(
            "fsarena: {} {}{on} threads {} repetition {}: {have} of {of} points recorded; measuring the rest",
            k.target,
            k.workload,
            k.threads,
            k.repetition + 1
        );
    }
    Ok(Opened {
        store,
        tally,
        state,
    })
}

/// Where a cell's records go the moment each is final: stamped with the cell's timings and
/// its team, appended (durably) to the results file, and kept in the run's memory.
pub struct Recorder<'r> {
    pub store: &'r mut Store,
    pub state: &'r mut Loaded,
    pub team: &'r dyn Team,
    /// When the cell started (earlier by the time an image built ahead for it took).
    pub started: Instant,
    /// What building the cell's populated image took, once known.
    pub image_seconds: Option<f64>,
    /// Of those, the image's build by step (`Measurement::image_steps`).
    pub image_steps: std::collections::BTreeMap<String, f64>,
    /// A record could not be written: the run stops.
    pub failed: bool,
    /// The run was asked to stop (a signal).
    pub cancel: &'r AtomicBool,
    /// The `--max-steal` rule this try of the cell is judged by; `None` when it is off.
    pub set_aside: Option<SetAside>,
}

impl Recorder<'_> {
    /// Keeps `m`; false when it could not be written. The store is the point of the run:
    /// it then stops rather than measure into the void.
    pub fn keep(&mut self, m: &mut Measurement) -> bool {
        if cut_by_the_stop(m, self.cancel.load(Ordering::SeqCst), forced_stop()) {
            if let Some(e) = m.error.take() {
                m.notes.push(format!("cut by the interruption: {e}"));
            }
            m.status = Status::Interrupted;
            m.error = Some("interrupted".into());
        }
        if let Some(rule) = &self.set_aside {
            rule.judge(m);
        }
        m.cell_seconds = Some(self.started.elapsed().as_secs_f64());
        m.image_seconds = self.image_seconds;
        m.image_steps = self.image_steps.clone();
        self.team.stamp(m);
        match self.store.append(m) {
            Ok(()) => {
                self.state.record(m.clone());
                true
            }
            Err(e) => {
                eprintln!("fsarena: cannot write {}: {e}", self.store.path().display());
                self.failed = true;
                false
            }
        }
    }
}

/// Set once a second signal's cleanup has begun removing the run's mounts and loop
/// devices under it: from then on a failure the run meets is that cleanup's doing.
static FORCED_STOP: AtomicBool = AtomicBool::new(false);

/// Tells the recorder that a second signal is removing the run's resources now (`cli`'s
/// signal handler calls it before its cleanup starts).
pub fn force_stop() {
    FORCED_STOP.store(true, Ordering::SeqCst);
}

fn forced_stop() -> bool {
    FORCED_STOP.load(Ordering::SeqCst)
}

/// Whether a record that did not end `ok` is the interruption's and not a verdict: a tool
/// that died of a signal while fsarena was asked to stop (a signal sent to the whole
/// process group), or any failure once a second signal's cleanup began removing the cell's
/// loop device and mounts under it (a populate's mount then fails with "can't read
/// superblock": issue 39's campaign, 1 of 62 tries, which `--resume` then kept as final).
fn cut_by_the_stop(m: &Measurement, asked: bool, forced: bool) -> bool {
    let failed = matches!(m.status, Status::Error | Status::Invalid | Status::Eio);
    (asked && store::killed_by_signal(m)) || (forced && failed)
}

/// The summary line of a record that did not end `ok`.
pub fn failure_line(m: &Measurement) -> String {
    format!(
        "{} {}{}{} threads {} repetition {}: {}",
        m.target,
        m.workload,
        m.dataset
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default(),
        if m.variant.is_empty() {
            String::new()
        } else {
            format!(" [{}]", m.variant)
        },
        m.threads,
        m.repetition + 1,
        m.status.with_error(m.error.as_deref())
    )
}

/// The progress line of a finished point: its key metric, or what went wrong. The figure is
/// shown as the report shows it (three significant digits and its unit): one decimal made
/// a 23 ms cold load read "0.0".
pub fn describe(m: &Measurement, w: &dyn Workload) -> String {
    let (key, _) = w.spec().key_metric;
    match (m.status, m.metrics.get(key)) {
        (Status::Ok, Some(v)) => {
            let (value, header) = (report::value(key, *v), report::header(key));
            // "2.04 s", not "2.04 s seconds": the value's unit already says it.
            let rest = match header.strip_prefix("seconds") {
                Some(rest) if value.ends_with(" s") => rest.trim_start(),
                _ => header.as_str(),
            };
            format!("ok {value} {rest}").trim_end().to_string()
        }
        (Status::Ok, None) => "ok".to_string(),
        (s, _) => format!(
            "{}{}",
            s.as_str(),
            m.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39's campaign, the one broken try: a second Ctrl-C while the populated image
    /// was built; its cleanup removed the loop device under the populate, whose mount failed
    /// and was recorded `error`, which `--resume` kept as final (exit 1 every time).
    #[test]
    fn a_failure_after_a_second_signal_is_the_interruptions_not_a_verdict() {
        let m = Measurement {
            status: Status::Error,
            error: Some("cannot populate the image: mount: can't read superblock".into()),
            ..Measurement::default()
        };
        assert!(cut_by_the_stop(&m, true, true));
        assert!(
            !cut_by_the_stop(&m, true, false),
            "a first signal alone keeps a real failure"
        );
        assert!(!cut_by_the_stop(&m, false, false));
        let ok = Measurement::default();
        assert!(
            !cut_by_the_stop(&ok, true, true),
            "a measurement that ended ok stays ok"
        );
    }

    /// `--resume` measures again a point set aside whose retry the run did not reach, and
    /// only that point: the cell's other points are final.
    #[test]
    fn a_disturbed_point_left_last_is_measured_again_on_resume_and_only_it() {
        let point = |variant: &str, status| Measurement {
            target: "ext4".into(),
            workload: "scan".into(),
            variant: variant.into(),
            cell_points: Some(2),
            status,
            ..Measurement::default()
        };
        let mut loaded = Loaded::default();
        loaded.record(point("cold", Status::Ok));
        loaded.record(point("warm", Status::Disturbed));
        let t = tally(&loaded);
        assert!(t.done.is_empty(), "the cell is not done");
        assert_eq!(t.points.len(), 1);
        assert!(t.points.contains(&point("cold", Status::Ok).key()));
        assert!(t.failures.is_empty(), "set aside is not a failure");
        loaded.record(point("warm", Status::Ok));
        assert_eq!(tally(&loaded).done.len(), 1);
        assert_eq!(loaded.set_aside.len(), 1);
    }

    /// An `ok` record of one metric.
    fn ok_with(metric: &str, value: f64) -> Measurement {
        Measurement {
            status: Status::Ok,
            metrics: [(metric.to_string(), value)].into(),
            ..Measurement::default()
        }
    }

    #[test]
    fn a_short_figure_keeps_its_digits_and_unit_in_the_progress_line() {
        let m = ok_with("seconds_per_pass", 0.0234);
        let line = describe(&m, &crate::workload::cold_read::ColdRead);
        assert_eq!(line, "ok 0.023 s per pass");
        let m = ok_with("files_per_s", 43_586.9);
        assert_eq!(
            describe(&m, &crate::workload::touch::Touch),
            "ok 43.6k files/s"
        );
    }

    /// The findings' copy cells read "ok 2.04 s seconds": the unit said twice.
    #[test]
    fn a_time_in_seconds_is_not_followed_by_the_word_seconds() {
        let m = ok_with("seconds", 2.04);
        assert_eq!(describe(&m, &crate::workload::copy::CopyTree), "ok 2.04 s");
    }
}
