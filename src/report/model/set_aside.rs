//! The measurements a run set aside because the hypervisor disturbed them
//! ([`crate::stats::disturbed`]), counted for the report's one line and `summary.json`.

use serde::Serialize;

use crate::results::store::Loaded;
use crate::results::{Measurement, Status};
use crate::stats::disturbed::KEPT_DISTURBED;

/// What the run set aside, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetAside {
    /// Measurements recorded `disturbed`: left out of the statistics.
    pub count: usize,
    /// Of those, how many no later try replaced (the run ended first: `--resume` measures
    /// them again).
    pub not_measured_again: usize,
    /// Measurements kept in the statistics although disturbed: every try of their cell was.
    pub kept_disturbed: usize,
    /// The share of the CPU the hypervisor kept in the phases set aside, %: least and most.
    pub steal_min_pct: Option<f64>,
    pub steal_max_pct: Option<f64>,
}

/// What `loaded` set aside; `None` when nothing was.
pub fn of(loaded: &Loaded) -> Option<SetAside> {
    let open: Vec<&Measurement> = (loaded.measurements.iter())
        .filter(|m| m.status == Status::Disturbed)
        .collect();
    let aside: Vec<&Measurement> = loaded
        .set_aside
        .iter()
        .chain(open.iter().copied())
        .collect();
    let kept_disturbed = (loaded.measurements.iter())
        .filter(|m| m.status.is_ok() && m.metrics.contains_key(KEPT_DISTURBED))
        .count();
    if aside.is_empty() && kept_disturbed == 0 {
        return None;
    }
    let steal: Vec<f64> = (aside.iter())
        .filter_map(|m| m.metrics.get("cpu_steal_pct").copied())
        .collect();
    Some(SetAside {
        count: aside.len(),
        not_measured_again: open.len(),
        kept_disturbed,
        steal_min_pct: steal.iter().copied().reduce(f64::min),
        steal_max_pct: steal.iter().copied().reduce(f64::max),
    })
}

/// The report's one line: "2 measurements set aside and measured again: the hypervisor
/// kept 34–42 % of the CPU during them (over --max-steal)", and what was kept anyway.
pub fn line(s: &SetAside) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut out = format!(
        "{} measurement{} set aside as disturbed and measured again, left out of the statistics",
        s.count,
        plural(s.count)
    );
    if let (Some(lo), Some(hi)) = (s.steal_min_pct, s.steal_max_pct) {
        let range = if (hi - lo).abs() < 0.5 {
            format!("{hi:.0}")
        } else {
            format!("{lo:.0}–{hi:.0}")
        };
        out.push_str(&format!(
            ": the hypervisor kept {range} % of the CPU during them (over --max-steal)"
        ));
    }
    if s.not_measured_again > 0 {
        out.push_str(&format!(
            "; {} not yet measured again (finish with --resume)",
            s.not_measured_again
        ));
    }
    if s.kept_disturbed > 0 {
        out.push_str(&format!(
            "; {} kept although disturbed, every try of its cell having been",
            s.kept_disturbed
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::store::{self, Store};
    use crate::results::HostFacts;

    fn run(rep: u32, seconds: f64, steal: f64, status: Status) -> Measurement {
        Measurement {
            target: "ext4".into(),
            fs: "ext4".into(),
            workload: "sync".into(),
            repetition: rep,
            threads: 1,
            status,
            metrics: [
                ("seconds".to_string(), seconds),
                ("cpu_steal_pct".to_string(), steal),
            ]
            .into(),
            ..Measurement::default()
        }
    }

    /// The disturbed try stays in results.jsonl, the statistics see only its replacement,
    /// and the report counts it.
    #[test]
    fn a_disturbed_measurement_is_kept_in_the_file_and_left_out_of_the_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::create(dir.path(), &HostFacts::default()).unwrap();
        for m in [
            run(0, 1.47, 38.0, Status::Disturbed),
            run(0, 0.19, 0.0, Status::Ok),
            run(1, 0.18, 2.0, Status::Ok),
            run(2, 0.27, 0.0, Status::Ok),
        ] {
            s.append(&m).unwrap();
        }
        drop(s);
        let text = std::fs::read_to_string(dir.path().join(store::FILE_NAME)).unwrap();
        assert!(text.contains("\"status\":\"disturbed\""), "{text}");
        assert_eq!(text.lines().count(), 5, "host + 4 measurements");
        let loaded = store::load(dir.path()).unwrap();
        assert_eq!(loaded.measurements.len(), 3);
        assert_eq!(loaded.set_aside.len(), 1);
        let groups = crate::stats::aggregate::aggregate(&loaded.measurements, "ext4", 0.05);
        let secs = &groups[0].metrics["seconds"];
        assert_eq!(groups[0].ok, 3);
        assert!(
            secs.summary.max < 1.0,
            "the disturbed 1.47 s is not in: {secs:?}"
        );
        let report = crate::report::model::report::build(&loaded, None);
        let aside = report.set_aside.clone().expect("counted");
        assert_eq!((aside.count, aside.not_measured_again), (1, 0));
        assert_eq!(aside.steal_max_pct, Some(38.0));
        let json = crate::report::export::json::render(&report).unwrap();
        assert!(json.contains("\"set_aside\""), "summary.json carries it");
        assert!(line(&aside).starts_with("1 measurement set aside"));
        assert!(line(&aside).contains("38 % of the CPU"));
    }

    #[test]
    fn a_run_without_disturbance_says_nothing_and_one_cut_short_says_resume() {
        let mut l = Loaded::default();
        l.record(run(0, 0.2, 1.0, Status::Ok));
        assert_eq!(of(&l), None);
        l.record(run(1, 1.4, 30.0, Status::Disturbed));
        let s = of(&l).unwrap();
        assert_eq!((s.count, s.not_measured_again), (1, 1));
        assert!(line(&s).contains("--resume"));
    }
}
