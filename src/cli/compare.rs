//! `fsarena compare A B [--fail-if-worse PCT]`: the plans checked alike before any report
//! is built ([`super::same_plan`]), the comparison on stdout, and the regression gate's
//! verdict in the exit code.

use std::path::Path;

use anyhow::{bail, Result};

use super::exit::{EXIT_FAILED, EXIT_OK, EXIT_UNDECIDED};
use super::output::{emit, OutputArgs};
use super::same_plan;
use crate::report::model::compare::{worse_than, Comparison};
use crate::report::model::section::{threads_phrase, threads_told};

/// `compare --fail-if-worse PCT [--allow-missing]`: the regression gate's settings.
#[derive(Debug, Clone, Copy)]
pub struct Gate {
    pub pct: f64,
    /// Points A measured that B has no `ok` figure for pass (named on stderr all the same).
    pub allow_missing: bool,
}

/// `fsarena compare A B`: refused (exit 2) when the two directories ran different plans,
/// unless `allow_different_plans`: then the differences are named on stderr and only the
/// points both plans measured alike are compared. With a [`Gate`]: exit 1 and one stderr
/// line per key metric worse by more than its PCT %, and per point of A that B lacks or
/// has no `ok` run of (unless `allow_missing`); else exit [`EXIT_UNDECIDED`] when a row
/// had too few runs to be decided at all, each named; else 0.
pub fn compare(
    dir_a: &Path,
    dir_b: &Path,
    margin: Option<f64>,
    gate: Option<Gate>,
    allow_different_plans: bool,
    output: &OutputArgs,
) -> Result<i32> {
    let left_out = check_plans(dir_a, dir_b, allow_different_plans)?;
    let (text, c) = crate::report::compare_text_leaving_out(
        dir_a,
        dir_b,
        margin,
        output.format(),
        output.color(),
        &left_out,
    )?;
    emit(&text)?;
    match gate {
        None => Ok(EXIT_OK),
        Some(gate) => Ok(verdict(&c, gate, allow_different_plans)),
    }
}

/// The workloads left out of the comparison (run with other options by the two plans);
/// an error naming the first difference when the plans differ and that is not allowed.
fn check_plans(dir_a: &Path, dir_b: &Path, allowed: bool) -> Result<Vec<String>> {
    let (la, lb) = (
        crate::results::store::load(dir_a)?,
        crate::results::store::load(dir_b)?,
    );
    let d = same_plan::differences(&la.host.plan, &lb.host.plan);
    if d.is_empty() {
        return Ok(Vec::new());
    }
    if !allowed {
        let more = match d.lines.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        bail!(
            "{} and {} ran different plans: {}{more}; compare runs of the same plan, or add --allow-different-plans to compare only what they share",
            dir_a.display(),
            dir_b.display(),
            d.lines[0]
        );
    }
    for line in &d.lines {
        eprintln!("fsarena: different plans: {line}");
    }
    for w in &d.workloads_apart {
        eprintln!("fsarena: not compared: {w} (the plans ran it with other options)");
    }
    Ok(d.workloads_apart)
}

/// The gate's exit code for comparison `c`, each reason named on stderr. Points outside
/// the common plan (`--allow-different-plans`) are missing by design and pass, as with
/// `--allow-missing`.
fn verdict(c: &Comparison, gate: Gate, different_plans: bool) -> i32 {
    let Gate { pct, allow_missing } = gate;
    let worse = worse_than(c, pct);
    for r in &worse {
        eprintln!(
            "fsarena: worse by more than {pct} %: {}{}, {}: {} {:+.1} %",
            r.point(),
            threads_phrase(threads_told(&r.workload, r.threads)),
            r.target,
            r.metric,
            r.pct_diff.unwrap_or(f64::NAN)
        );
    }
    let pass_missing = allow_missing || different_plans;
    let said = match (allow_missing, different_plans) {
        (true, _) => "ignored (--allow-missing)",
        (false, true) => "ignored (--allow-different-plans)",
        _ => "no figure in B",
    };
    for m in &c.missing {
        eprintln!("fsarena: {said}: {}", m.line());
    }
    if !worse.is_empty() || (!pass_missing && !c.missing.is_empty()) {
        // Beside the failures, so a gate's log shows when the machine moved too.
        for n in c.host_notes() {
            eprintln!("fsarena: note: {n}");
        }
        return EXIT_FAILED;
    }
    let undecidable: Vec<_> = c.rows.iter().filter(|r| r.decision.is_none()).collect();
    if undecidable.is_empty() {
        return EXIT_OK;
    }
    for r in &undecidable {
        eprintln!(
            "fsarena: cannot decide (too few runs): {}{}, {}: {}",
            r.point(),
            threads_phrase(threads_told(&r.workload, r.threads)),
            r.target,
            r.metric
        );
    }
    eprintln!(
        "fsarena: the gate could not decide {} of {} comparisons (too few ok runs on a side; at least 2 each): nothing found worse, nothing shown fine (exit {EXIT_UNDECIDED})",
        undecidable.len(),
        c.rows.len()
    );
    EXIT_UNDECIDED
}
