//! Measurements the machine disturbed, set aside and measured again: the runner's side of
//! [`crate::stats::disturbed`]. A record whose phase the hypervisor kept more of the CPU
//! from than `--max-steal` allows is recorded `disturbed` (kept in the results, left out
//! of the statistics) while its cell has a try left; the cell's disturbed points are then
//! measured again on fresh file systems. The last try's record is kept in the statistics
//! however disturbed, marked so, and the report says how many.

use super::budget::Group;
use crate::plan::cells::Cell;
use crate::results::record::CellKey;
use crate::results::store;
use crate::results::{Measurement, Status};
use crate::stats::disturbed::{PhaseCpu, KEPT_DISTURBED};

/// How many times a cell is measured again at most when its measurements are disturbed:
/// steal comes in bursts of minutes, and a run must end.
pub const MAX_RETRIES: u32 = 2;

/// The rule one try of a cell is judged by.
#[derive(Debug, Clone, Copy)]
pub struct SetAside {
    /// `--max-steal`, % of the machine's CPU time.
    pub max_steal_pct: f64,
    /// CPUs of the machine (the host facts').
    pub cpus: usize,
    /// Whether the cell has a try left: a disturbed record is then set aside, else kept.
    pub retry_left: bool,
}

impl SetAside {
    /// Judges the `ok` record `m` of one try: disturbed, it becomes `disturbed` (with why)
    /// when a try is left, else it stays `ok` with the [`KEPT_DISTURBED`] mark and a note.
    pub fn judge(&self, m: &mut Measurement) {
        if m.status != Status::Ok {
            return;
        }
        let Some(cpu) = PhaseCpu::of(&m.metrics, self.cpus) else {
            return;
        };
        if !cpu.disturbed(self.max_steal_pct) {
            return;
        }
        let why = format!(
            "the hypervisor kept {:.0} % of the CPU ({:.2} CPU-s) during the phase, over the \
             {:.0} % --max-steal allows",
            cpu.steal_pct,
            cpu.stolen_seconds(),
            self.max_steal_pct
        );
        if self.retry_left {
            m.status = Status::Disturbed;
            m.error = Some(format!("{why}: set aside and measured again"));
        } else {
            m.metrics.insert(KEPT_DISTURBED.into(), 1.0);
            m.notes.push(format!(
                "{why}, as in every try of this cell: kept all the same"
            ));
        }
    }
}

/// Whether a try's records ask for another (one of them was set aside), and if so the
/// points that are final and not measured again: only those set aside are.
pub fn retry(records: &[Measurement]) -> Option<Vec<CellKey>> {
    (records.iter().any(|m| m.status == Status::Disturbed)).then(|| {
        (records.iter())
            .filter(|m| store::is_final(m))
            .map(Measurement::key)
            .collect()
    })
}

/// The progress line of a cell measured again: its `retry`-th further try.
pub fn again_line(g: &Group, cell: &Cell, retry: u32) -> String {
    format!(
        "{} {} repetition {}: disturbed by the hypervisor (CPU steal over \
         --max-steal); measuring it again ({retry} of {MAX_RETRIES})",
        g.target,
        g.workload,
        cell.repetition + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(seconds: f64, steal_pct: f64) -> Measurement {
        Measurement {
            metrics: [
                ("seconds".to_string(), seconds),
                ("cpu_steal_pct".to_string(), steal_pct),
            ]
            .into(),
            ..Measurement::default()
        }
    }

    #[test]
    fn a_disturbed_phase_is_set_aside_while_a_try_is_left_then_kept_and_marked() {
        let rule = SetAside {
            max_steal_pct: 20.0,
            cpus: 2,
            retry_left: true,
        };
        let mut m = phase(1.5, 38.0);
        rule.judge(&mut m);
        assert_eq!(m.status, Status::Disturbed);
        assert!(
            m.error.as_deref().unwrap().contains("38 %"),
            "{:?}",
            m.error
        );
        let calm = phase(1.0, 0.0);
        let kept = retry(&[calm.clone(), m]).expect("a retry");
        assert_eq!(
            kept,
            vec![calm.key()],
            "the calm point is not measured again"
        );
        let mut last = phase(1.5, 38.0);
        SetAside {
            retry_left: false,
            ..rule
        }
        .judge(&mut last);
        assert_eq!(last.status, Status::Ok);
        assert_eq!(last.metrics[KEPT_DISTURBED], 1.0);
        let mut calm = phase(1.5, 5.0);
        rule.judge(&mut calm);
        assert_eq!(calm.status, Status::Ok);
        assert!(!calm.metrics.contains_key(KEPT_DISTURBED));
        assert_eq!(retry(&[calm]), None);
    }

    #[test]
    fn a_failed_record_is_left_as_it_is() {
        let mut m = Measurement {
            status: Status::Eio,
            ..phase(1.5, 38.0)
        };
        SetAside {
            max_steal_pct: 20.0,
            cpus: 2,
            retry_left: true,
        }
        .judge(&mut m);
        assert_eq!(m.status, Status::Eio);
    }
}
