//! `threads = "auto"` for the database workloads (`db`, `pg`): Jetstress's "auto-tuned"
//! thread count. Before the measured phase, short unmeasured trials run the engine at 1, 2,
//! 4, 8, … clients until one's p99 read latency exceeds the limit (or the top of the range
//! is reached), then bisect between the last count that passed and the first that failed.
//! The highest passing count (1 when even 1 fails: the engine cannot do better) is what the
//! measured phase runs at; the searched curve goes into the record as metrics and a note.
//!
//! The trials are never measured phases: the runner's monitor and the record see exactly one
//! measured phase, at the chosen count. A trial is short (a second by default), so its p99
//! is a noisy estimate; the chosen count is a search result, not a guarantee, and the
//! measured phase reports its own p99 beside it.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::Duration;

use crate::workload::error::WorkloadError;

/// How the engine's client count is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Threads {
    /// A fixed count.
    Fixed(usize),
    /// Searched before the measured phase.
    Auto(Search),
}

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Search {
    /// The p99 read latency a count must stay under, ms (`p99_limit_ms`, default 20).
    pub(crate) limit_ms: f64,
    /// The top of the range searched (`auto_max_threads`).
    pub(crate) max: usize,
    /// Each trial's length (`auto_trial_seconds`, default 1 s).
    pub(crate) trial: Duration,
}

impl Threads {
    /// What the search before the measured phase takes when every count up to the top
    /// passes: the doubling steps alone (1, 2, 4, … `max`), the bisection after a failure
    /// left out; none for a fixed count.
    pub(crate) fn search_seconds(&self) -> f64 {
        match self {
            Threads::Fixed(_) => 0.0,
            Threads::Auto(s) => {
                let steps = usize::BITS - s.max.max(1).leading_zeros();
                f64::from(steps) * s.trial.as_secs_f64()
            }
        }
    }
}

/// The raw option values the search is made from.
pub(crate) struct Raw<'a> {
    pub(crate) threads: Option<&'a toml::Value>,
    pub(crate) p99_limit_ms: Option<&'a toml::Value>,
    pub(crate) auto_max_threads: Option<i64>,
    pub(crate) auto_trial_seconds: Option<f64>,
}

/// Highest client count accepted anywhere.
pub(crate) const MAX_THREADS: usize = 1024;

/// Parses `threads` (an integer or `"auto"`) and the search options; `None` when `threads`
/// is absent. The search options without `threads = "auto"` are refused: they would be
/// silently ignored otherwise. `default_max` is the top of the range when not given.
pub(crate) fn parse(
    workload: &str,
    raw: &Raw,
    default_max: usize,
) -> Result<Option<Threads>, String> {
    let bad = |k: &str, v: &dyn Display, want: &str| {
        format!("[workload.{workload}]: `{k}` = {v} is not valid; expected {want}")
    };
    let threads = match raw.threads {
        None => None,
        Some(toml::Value::String(s)) if s == "auto" => Some(None),
        Some(toml::Value::Integer(i)) if (1..=MAX_THREADS as i64).contains(i) => {
            Some(Some(*i as usize))
        }
        Some(v) => {
            return Err(bad(
                "threads",
                v,
                &format!("an integer from 1 to {MAX_THREADS}, or \"auto\""),
            ))
        }
    };
    let limit_ms = match raw.p99_limit_ms {
        None => 20.0,
        Some(v) => v
            .as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .filter(|f| f.is_finite() && *f > 0.0 && *f <= 3_600_000.0)
            .ok_or_else(|| bad("p99_limit_ms", v, "milliseconds > 0, such as 20"))?,
    };
    let max = match raw.auto_max_threads {
        None => default_max,
        Some(n) if (1..=MAX_THREADS as i64).contains(&n) => n as usize,
        Some(n) => {
            return Err(bad(
                "auto_max_threads",
                &n,
                &format!("an integer from 1 to {MAX_THREADS}"),
            ))
        }
    };
    let trial = match raw.auto_trial_seconds {
        None => 1.0,
        Some(s) if (0.1..=600.0).contains(&s) => s,
        Some(s) => return Err(bad("auto_trial_seconds", &s, "seconds from 0.1 to 600")),
    };
    let search_opts = [
        ("p99_limit_ms", raw.p99_limit_ms.is_some()),
        ("auto_max_threads", raw.auto_max_threads.is_some()),
        ("auto_trial_seconds", raw.auto_trial_seconds.is_some()),
    ];
    match threads {
        Some(None) => Ok(Some(Threads::Auto(Search {
            limit_ms,
            max,
            trial: Duration::from_secs_f64(trial),
        }))),
        other => match search_opts.iter().find(|(_, given)| *given) {
            Some((k, _)) => Err(format!(
                "[workload.{workload}]: `{k}` applies only with `threads = \"auto\"`"
            )),
            None => Ok(other.flatten().map(Threads::Fixed)),
        },
    }
}

/// What one trial measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Trial {
    pub(crate) threads: usize,
    /// p99 read latency, ms; `None` when the trial made no read (which never passes).
    pub(crate) p99_ms: Option<f64>,
    pub(crate) tps: f64,
}

/// Runs the search: doubling from 1 while counts pass, then bisecting between the last pass
/// and the first failure. Returns the chosen count and every trial, by count.
pub(crate) fn search(
    s: &Search,
    trial: &mut dyn FnMut(usize) -> Result<Trial, WorkloadError>,
) -> Result<(usize, Vec<Trial>), WorkloadError> {
    let mut curve = Vec::new();
    let mut passes = |n: usize, curve: &mut Vec<Trial>| -> Result<bool, WorkloadError> {
        let t = trial(n)?;
        curve.push(t);
        Ok(t.p99_ms.is_some_and(|p| p <= s.limit_ms))
    };
    let (mut good, mut bad) = (None, None);
    let mut n = 1;
    loop {
        if passes(n, &mut curve)? {
            good = Some(n);
            if n >= s.max {
                break;
            }
            n = (n * 2).min(s.max);
        } else {
            bad = Some(n);
            break;
        }
    }
    while let (Some(g), Some(b)) = (good, bad) {
        if b - g <= 1 {
            break;
        }
        let mid = g + (b - g) / 2;
        if passes(mid, &mut curve)? {
            good = Some(mid);
        } else {
            bad = Some(mid);
        }
    }
    curve.sort_by_key(|t| t.threads);
    Ok((good.unwrap_or(1), curve))
}

/// The search's result in the record: `auto_threads`, the limit, and per trial
/// `auto_curve_N_p99_ms` and `auto_curve_N_tps` (the curve, readable in summary.csv and the
/// JSON), plus a note that says the curve in one line.
pub(crate) fn record(
    s: &Search,
    chosen: usize,
    curve: &[Trial],
    what: &str,
    m: &mut BTreeMap<String, f64>,
    notes: &mut Vec<String>,
) {
    m.insert("auto_threads".into(), chosen as f64);
    m.insert("auto_p99_limit_ms".into(), s.limit_ms);
    m.insert("auto_trials".into(), curve.len() as f64);
    for t in curve {
        if let Some(p) = t.p99_ms {
            m.insert(format!("auto_curve_{}_p99_ms", t.threads), p);
        }
        m.insert(format!("auto_curve_{}_tps", t.threads), t.tps);
    }
    let steps: Vec<String> = curve
        .iter()
        .map(|t| {
            let p = t.p99_ms.map_or("no reads".into(), |p| format!("{p:.2} ms"));
            format!("{} → p99 {p}, {:.0} tps", t.threads, t.tps)
        })
        .collect();
    notes.push(format!(
        "threads = \"auto\": {chosen} chosen, the highest count (of 1 to {}) whose p99 {what} \
         stayed under {} ms in unmeasured {:.1} s trials: {}",
        s.max,
        s.limit_ms,
        s.trial.as_secs_f64(),
        steps.join("; ")
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw<'a>(threads: Option<&'a toml::Value>, limit: Option<&'a toml::Value>) -> Raw<'a> {
        Raw {
            threads,
            p99_limit_ms: limit,
            auto_max_threads: None,
            auto_trial_seconds: None,
        }
    }

    #[test]
    fn options_parse_and_refuse() {
        let auto = toml::Value::String("auto".into());
        let four = toml::Value::Integer(4);
        assert_eq!(parse("db", &raw(None, None), 64), Ok(None));
        assert_eq!(
            parse("db", &raw(Some(&four), None), 64),
            Ok(Some(Threads::Fixed(4)))
        );
        let Ok(Some(Threads::Auto(s))) = parse("db", &raw(Some(&auto), None), 64) else {
            panic!()
        };
        assert_eq!(
            (s.limit_ms, s.max, s.trial),
            (20.0, 64, Duration::from_secs(1))
        );
        let half = toml::Value::Float(0.5);
        let Ok(Some(Threads::Auto(s))) = parse("db", &raw(Some(&auto), Some(&half)), 64) else {
            panic!()
        };
        assert_eq!(s.limit_ms, 0.5);
        for (t, l) in [
            (Some(toml::Value::String("fast".into())), None),
            (Some(toml::Value::Integer(0)), None),
            (Some(auto.clone()), Some(toml::Value::Integer(-1))),
            (Some(auto.clone()), Some(toml::Value::String("20".into()))),
            // A limit without the search would be ignored: refused.
            (None, Some(toml::Value::Integer(20))),
            (Some(four.clone()), Some(toml::Value::Integer(20))),
        ] {
            let e = parse("pg", &raw(t.as_ref(), l.as_ref()), 64).unwrap_err();
            assert!(e.starts_with("[workload.pg]: ") && !e.contains('\n'), "{e}");
        }
    }

    /// A fake engine whose p99 is the count in ms: the search finds the highest count under
    /// the limit by doubling and bisecting, trying each count once.
    #[test]
    fn search_doubles_then_bisects() {
        let s = |limit_ms, max| Search {
            limit_ms,
            max,
            trial: Duration::from_millis(1),
        };
        let mut tried = Vec::new();
        let mut engine = |n: usize| {
            tried.push(n);
            Ok(Trial {
                threads: n,
                p99_ms: Some(n as f64),
                tps: 10.0 * n as f64,
            })
        };
        let (chosen, curve) = search(&s(11.0, 64), &mut engine).unwrap();
        assert_eq!(chosen, 11);
        assert_eq!(tried, [1, 2, 4, 8, 16, 12, 10, 11]);
        let counts: Vec<usize> = curve.iter().map(|t| t.threads).collect();
        assert_eq!(counts, [1, 2, 4, 8, 10, 11, 12, 16]);
        let mut engine = |n: usize| {
            Ok(Trial {
                threads: n,
                p99_ms: Some(n as f64),
                tps: 1.0,
            })
        };
        assert_eq!(search(&s(0.5, 64), &mut engine).unwrap().0, 1);
        assert_eq!(search(&s(1e9, 6), &mut engine).unwrap().0, 6);
        let mut none = |n: usize| {
            Ok(Trial {
                threads: n,
                p99_ms: None,
                tps: 1.0,
            })
        };
        assert_eq!(
            search(&s(1e9, 6), &mut none).unwrap(),
            (1, vec![none(1).unwrap()])
        );
        let mut m = BTreeMap::new();
        let mut notes = Vec::new();
        let (chosen, curve) = search(&s(11.0, 64), &mut engine).unwrap();
        record(
            &s(11.0, 64),
            chosen,
            &curve,
            "read latency",
            &mut m,
            &mut notes,
        );
        assert_eq!(m["auto_threads"], 11.0);
        assert_eq!(m["auto_curve_16_p99_ms"], 16.0);
        assert_eq!(m["auto_trials"], 8.0);
        assert!(notes[0].contains("11 chosen"), "{notes:?}");
    }
}
