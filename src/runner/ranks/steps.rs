//! The steps at which the ranks of a job meet and agree, so a failure on one rank becomes
//! the same failure on every rank and cells, stopped targets and records stay identical:
//! the start of a cell, before and after each measured phase, the end of each point, and
//! each budget round.

use super::exchange::{exchange, first_failure, status_from, status_name};
use super::job::Ranks;
use crate::cluster;
use crate::results::{Measurement, Status};
use crate::runner::budget::{BudgetError, Group};
use crate::runner::failure::Failure;
use crate::runner::phase::{Figures, Observed};
use crate::workload::Outcome;

/// The groups of a `--runs auto` round, as rank 0 (which holds the results) decided them:
/// `decided` is read on rank 0 only; empty ends the budget, and rank 0's failure to decide
/// ends the run, on every rank.
pub fn round_from_root(
    decided: Option<Result<Vec<Group>, BudgetError>>,
) -> Result<Vec<Group>, BudgetError> {
    type Wire = (String, String, u32, Option<String>);
    let said: Result<Vec<Wire>, String> = match decided {
        None => Ok(Vec::new()),
        Some(Ok(groups)) => Ok(groups
            .into_iter()
            .map(|g| (g.target, g.workload, g.threads, g.dataset))
            .collect()),
        Some(Err(BudgetError::Decide(why))) => Err(why),
    };
    let bytes = serde_json::to_vec(&said).unwrap_or_default();
    let got: Result<Vec<Wire>, String> = serde_json::from_slice(&cluster::from_root(&bytes))
        .unwrap_or_else(|e| Err(format!("rank 0 sent a round this rank cannot read ({e})")));
    let groups = got.map_err(BudgetError::Decide)?;
    Ok(groups
        .into_iter()
        .map(|(target, workload, threads, dataset)| Group {
            target,
            workload,
            dataset,
            threads,
        })
        .collect())
}

/// At the start of a cell: whether each rank has its file system and `points` ready. When
/// any rank failed, every rank gets that (lowest) rank's failure, word for word, with a note
/// naming the rank, so all record and stop the same.
pub fn agree_cell(ranks: &Ranks, step: &str, mine: Result<usize, &Failure>) -> Result<(), Failure> {
    let said = mine
        .map_err(|(s, e, n)| serde_json::to_string(&(status_name(*s), e, n)).unwrap_or_default());
    let all = exchange(step, said);
    if let Some((k, text)) = first_failure(&all) {
        let (s, e, mut notes): (String, String, Vec<String>) =
            serde_json::from_str(&text).unwrap_or(("error".into(), text, Vec::new()));
        notes.push(format!(
            "failed on {} of {} ranks",
            ranks.who(k),
            ranks.world.size
        ));
        return Err((status_from(&s), e, notes));
    }
    let counts: Vec<usize> = all.into_iter().flatten().collect();
    if counts.iter().any(|&c| c != counts[0]) {
        return Err((
            Status::Error,
            format!("the ranks found different points for this cell ({counts:?}): a point list that depends on each rank's free space cannot run under MPI"),
            Vec::new(),
        ));
    }
    Ok(())
}

/// The barrier before a measured phase: `Err` with the first rank that is not ready (the
/// phase is then not run anywhere).
pub fn before_phase(ranks: &Ranks, step: &str, ready: Result<(), String>) -> Result<(), String> {
    match first_failure(&exchange(&format!("{step} before"), ready)) {
        Some((k, e)) if k != ranks.world.rank => Err(format!("{}: {e}", ranks.who(k))),
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The barrier after a measured phase: every rank's figures, or the first rank's failure.
pub fn after_phase(
    ranks: &Ranks,
    step: &str,
    mine: Result<Figures, String>,
) -> Result<Vec<Figures>, String> {
    let all = exchange(&format!("{step} after"), mine);
    match first_failure(&all) {
        Some((k, e)) if k != ranks.world.rank => Err(format!("{}: {e}", ranks.who(k))),
        Some((_, e)) => Err(e),
        None => Ok(all.into_iter().flatten().collect()),
    }
}

/// The job's phase from every rank's figures: the phase lasts as long as its slowest rank
/// (its work and its `syncfs`), files and bytes add up (so rates are aggregate), and each
/// rank's seconds are kept as min / median / max. The monitor's figures stay this rank's.
pub fn combine(outcome: &mut Outcome, seen: &mut Observed, all: &[Figures]) {
    let total = |f: &Figures| f.work_seconds + f.syncfs_seconds;
    let Some(slowest) = all.iter().max_by(|a, b| total(a).total_cmp(&total(b))) else {
        return;
    };
    outcome.seconds = slowest.work_seconds;
    seen.wall_seconds = slowest.work_seconds;
    seen.syncfs_seconds = slowest.syncfs_seconds;
    outcome.files = all.iter().map(|f| f.files).sum();
    outcome.logical_read_bytes = all.iter().map(|f| f.read_bytes).sum();
    outcome.logical_write_bytes = all.iter().map(|f| f.write_bytes).sum();
    let mut secs: Vec<f64> = all.iter().map(total).collect();
    secs.sort_by(f64::total_cmp);
    let n = secs.len();
    let median = if n % 2 == 1 {
        secs[n / 2]
    } else {
        (secs[n / 2 - 1] + secs[n / 2]) / 2.0
    };
    for (k, v) in [
        ("rank_seconds_min", secs[0]),
        ("rank_seconds_median", median),
        ("rank_seconds_max", secs[n - 1]),
        ("ranks", n as f64),
    ] {
        outcome.metrics.insert(k.into(), v);
    }
}

/// The end of a point: when any rank's record is not `ok`, every rank records the lowest
/// such rank's status and error, so rank 0's record tells the truth about the whole job.
/// A rank's own failure wins over one it only saw from another rank (`echoed`).
pub fn agree_point(ranks: &Ranks, step: &str, m: &mut Measurement, echoed: bool) {
    let mine: Result<(), String> = if m.status == Status::Ok {
        Ok(())
    } else {
        Err(serde_json::to_string(&(
            status_name(m.status),
            m.error.clone().unwrap_or_default(),
            echoed,
        ))
        .unwrap_or_default())
    };
    let all = exchange(&format!("{step} end"), mine);
    let failed: Vec<(usize, (String, String, bool))> = all
        .iter()
        .enumerate()
        .filter_map(|(k, r)| {
            let t = r.as_ref().err()?;
            Some((
                k,
                serde_json::from_str(t).unwrap_or(("error".into(), t.clone(), false)),
            ))
        })
        .collect();
    let chosen = failed
        .iter()
        .find(|(_, (_, _, echo))| !echo)
        .or(failed.first());
    let Some((k, (s, e, _))) = chosen else {
        return;
    };
    if *k == ranks.world.rank {
        return;
    }
    m.status = status_from(s);
    m.error = Some(format!("{}: {e}", ranks.who(*k)));
    m.metrics.clear();
    m.series.clear();
}
