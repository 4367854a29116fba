//! One point of a cell: the workload run under the monitor, and what happened made into
//! its measurement.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::context::CellRun;
use super::fresh::Fresh;
use crate::results::{InTurn, LogPlacement, Measurement, Status};
use crate::runner::harness::MonitoredHarness;
use crate::runner::{assemble, host_facts};
use crate::sys::steps;
use crate::workload::{Ctx, Outcome, Point, WorkloadError};

/// Runs one point under the monitor and turns what happened into a measurement, the same
/// on every process of the team.
pub fn measure_point(c: &CellRun, ctx: &Ctx, p: &Point, index: usize, f: &Fresh) -> Measurement {
    let log_device = f.log.as_ref().and_then(|(l, _)| l.devices.first().copied());
    let step = c.step(&format!("point {index}"));
    let mut h = MonitoredHarness::new(
        &f.inst.devices,
        log_device,
        ctx.root,
        c.plan.phase_floor,
        c.team,
        step.clone(),
    );
    h.cpus = c.placement();
    h.removals = Some(&c.work.removals);
    h.in_memory = f.inst.provenance.location == "tmpfs";
    h.device = f
        .inst
        .provenance
        .loop_device
        .as_deref()
        .map(std::path::Path::new);
    // Taken before the workload runs: the record is made after it, and its start is this.
    let started_unix = host_facts::now_unix();
    let before = steps::take();
    let t0 = Instant::now();
    // A panic in the workload (its own code, or a worker's it passes on) is this point's
    // error: the cell then tears down as after any failure, and the run goes on.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        c.workload.run(ctx, p, &mut h)
    }))
    .unwrap_or_else(|payload| Err(WorkloadError::from_panic("the workload", payload)));
    let ran = t0.elapsed().as_secs_f64();
    if h.observed.measured == 0 {
        let why = match &result {
            Err(e) => e.to_string(),
            Ok(_) => "internal: the workload measured no phase".into(),
        };
        h.stand_in(&why);
    }
    let mut m = record_of(c, p, f, &mut h);
    m.started_unix = started_unix;
    match result {
        Ok(outcome) if h.observed.measured == 1 => measured(c, (&mut m, f), &outcome, &mut h),
        Ok(_) => {
            m.status = Status::Error;
            m.error = Some(format!(
                "internal: workload measured {} phases instead of one",
                h.observed.measured
            ));
        }
        Err(e) => failed(c, ctx, f, &mut m, e),
    }
    m.harness_seconds = harness_steps(before, (t0, ran), &h, &m);
    c.team
        .agree_point(&step, &mut m, h.observed.failed_elsewhere);
    m
}

/// The record of point `p` before its outcome: where it ran (the file system's, and the
/// log target's, provenance) and the notes the harness and the monitor made.
fn record_of(c: &CellRun, p: &Point, f: &Fresh, h: &mut MonitoredHarness) -> Measurement {
    let mut m = c.base_for(p);
    m.provenance = f.inst.provenance.clone();
    m.provenance.cpus = h.cpus.clone();
    if let (Some((l, _)), Some(spec)) = (&f.log, c.log_spec) {
        m.provenance.log = Some(Box::new(LogPlacement {
            target: spec.target.name.clone(),
            provenance: l.provenance.clone(),
        }));
    }
    m.notes = std::mem::take(&mut h.observed.notes);
    m.host_probe_ms = h.observed.probe_ms;
    if crate::runner::preflight::log_target(c.plan, c.workload.spec().name)
        == Some(c.spec.target.name.as_str())
    {
        m.notes.push(format!(
            "{} is the plan's log_target: the log stays beside the data here",
            c.spec.target.name
        ));
    }
    if let Some(r) = &h.observed.monitor {
        m.notes.extend(r.warnings.iter().cloned());
    }
    m
}

/// A phase measured once, as it should be: its metrics, notes and monitor series.
fn measured(
    c: &CellRun,
    (m, f): (&mut Measurement, &Fresh),
    outcome: &Outcome,
    h: &mut MonitoredHarness,
) {
    m.metrics = assemble::metrics(outcome, &h.observed);
    if let Some(note) = assemble::below_floor(&mut m.metrics, c.plan.phase_floor) {
        m.notes.push(note);
    }
    if let Some(note) = assemble::reads_from_memory(&mut m.metrics, outcome) {
        m.notes.push(note);
    }
    if let Some(note) = assemble::writes_absorbed(&mut m.metrics, outcome) {
        m.notes.push(note);
    }
    let fuse = m.provenance.fs_type.starts_with("fuse");
    if let Some(note) = assemble::fsyncs_on_device(&mut m.metrics, outcome, fuse) {
        m.notes.push(note);
    }
    m.notes.extend(outcome.notes.iter().cloned());
    m.in_turn = in_turn_of(f, outcome);
    m.series = h
        .observed
        .monitor
        .take()
        .map(|r| r.series)
        .unwrap_or_default();
}

/// The baseline's side of a point measured in turn: its figures from the phase, and where
/// its passes ran.
fn in_turn_of(f: &Fresh, outcome: &Outcome) -> Option<Box<InTurn>> {
    let (inst, t) = f.beside.as_ref().filter(|_| !outcome.in_turn.is_empty())?;
    Some(Box::new(InTurn {
        target: t.target.clone(),
        metrics: outcome.in_turn.clone(),
        provenance: inst.provenance.clone(),
    }))
}

/// A workload that failed: its status and error, an interrupt named as such however the
/// workload saw it, and an I/O error on a loop image put down to a full host disk when it
/// is one.
fn failed(c: &CellRun, ctx: &Ctx, f: &Fresh, m: &mut Measurement, e: WorkloadError) {
    let e = if ctx.cancel.load(Ordering::SeqCst) && !matches!(e, WorkloadError::Interrupted) {
        WorkloadError::Interrupted
    } else {
        e
    };
    m.status = e.status();
    let host = (m.status == Status::Eio && f.inst.provenance.location == "loop")
        .then(|| c.work.out_of_space())
        .flatten();
    m.error = Some(host.map_or_else(|| e.to_string(), |why| format!("{e}; {why}")));
}

/// The harness's steps of point `m` so far: `before` (its file system's provisioning), those
/// timed while the workload ran (the host probe, the monitor's start and stop), the
/// workload's own unmeasured time (the `ran` seconds from `started`, outside the phase and
/// its `syncfs`) split where the phase was: `workload_prepare` before it (laying down or
/// warming a tree, a source read back), `workload_check` after it (the workload's check of
/// its work), and `phase_edges`, the harness's own time around the phase that no step names
/// (the team's barrier, the CPU binding, the figures); and `phase_aside`, what the phase set
/// aside from its seconds (cache drops between cold passes). A workload that never reached
/// its phase spent all of it preparing. (Until 2026-11-29 the three were one step,
/// `workload_unmeasured`.)
fn harness_steps(
    mut before: BTreeMap<String, f64>,
    (started, ran): (Instant, f64),
    h: &MonitoredHarness,
    m: &Measurement,
) -> BTreeMap<String, f64> {
    let during = steps::take();
    let phase = h.observed.wall_seconds + h.observed.syncfs_seconds;
    let outside = (ran - phase - during.values().sum::<f64>()).max(0.0);
    for (step, s) in during {
        *before.entry(step).or_insert(0.0) += s;
    }
    let (prepare, check) = split_unmeasured(started, ran, h.observed.entered, h.observed.left);
    let prepare = prepare.min(outside);
    let check = check.min(outside - prepare);
    before.insert("workload_prepare".into(), prepare);
    before.insert("workload_check".into(), check);
    before.insert("phase_edges".into(), outside - prepare - check);
    if let Some(measured) = m.metrics.get("seconds") {
        before.insert("phase_aside".into(), (phase - measured).max(0.0));
    }
    before
}

/// The workload's seconds before the harness first took its phase (`entered`) and after the
/// harness last gave it back (`left`), of the `ran` seconds from `started`: all of them
/// before, when it never handed one over.
fn split_unmeasured(
    started: Instant,
    ran: f64,
    entered: Option<Instant>,
    left: Option<Instant>,
) -> (f64, f64) {
    let Some(entered) = entered else {
        return (ran, 0.0);
    };
    let prepare = entered.saturating_duration_since(started).as_secs_f64();
    let check = left.map_or(0.0, |l| {
        (ran - l.saturating_duration_since(started).as_secs_f64()).max(0.0)
    });
    (prepare, check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What a workload does outside its phase is split at the phase: before it, its
    /// preparation; after it, its check; and one that never reached a phase only prepared.
    #[test]
    fn a_workloads_unmeasured_time_is_split_at_its_phase() {
        let started = Instant::now();
        let at = |s: f64| started + Duration::from_secs_f64(s);
        let (prepare, check) = split_unmeasured(started, 10.0, Some(at(3.0)), Some(at(7.5)));
        assert!((prepare - 3.0).abs() < 1e-6, "{prepare}");
        assert!((check - 2.5).abs() < 1e-6, "{check}");
        assert_eq!(split_unmeasured(started, 4.0, None, None), (4.0, 0.0));
        // A phase that never gave the work back (an error inside it) leaves no check.
        let (prepare, check) = split_unmeasured(started, 4.0, Some(at(1.0)), None);
        assert!(
            (prepare - 1.0).abs() < 1e-6 && check == 0.0,
            "{prepare} {check}"
        );
    }
}
