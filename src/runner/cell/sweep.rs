//! Every point of one cell, each on its own freshly made file system (a second point must
//! not find the first one's files, caches or free-space layout), its record handed on the
//! moment that file system has passed (or failed) its check.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

use super::context::CellRun;
use super::fresh::{self, retire, settle, Fresh};
use super::point::measure_point;
use crate::provision::MasterImage;
use crate::results::{Measurement, Status};
use crate::runner::progress::Progress;
use crate::workload::Point;

/// What a cell produced: its records, the first `emitted` of which were already handed
/// to the caller's `emit` as each point finished.
pub struct CellOutput {
    pub records: Vec<Measurement>,
    pub emitted: usize,
    /// The file system kept as the target's populated image (`CellRun::keep_image`), boxed:
    /// a cell's output is also an early return's error.
    pub image: Option<Box<MasterImage>>,
}

impl From<Vec<Measurement>> for CellOutput {
    fn from(records: Vec<Measurement>) -> Self {
        CellOutput {
            records,
            emitted: 0,
            image: None,
        }
    }
}

/// Measures every point of the cell `c`. Each point's record goes to `emit` the moment its
/// file system has passed (or failed) its check, so a kill -9 in a long sweep loses at
/// most the point in progress; `emit` returns false when the record could not be kept, and
/// the cell stops. Never panics on the workload's behalf and always yields at least one
/// record, unless every point was already recorded.
pub fn measure_points(
    c: &CellRun,
    progress: &mut Progress,
    emit: &mut dyn FnMut(&mut Measurement) -> bool,
) -> CellOutput {
    // What this thread timed before the cell (a populated image it built) is not the cell's.
    let _ = crate::sys::steps::take();
    let empty = toml::Table::new();
    let options = c
        .plan
        .workload_options
        .get(c.workload.spec().name)
        .unwrap_or(&empty);
    let (first, points) = match first_fs_and_points(c, options) {
        Ok(found) => found,
        Err(out) => return out,
    };
    let mut sweep = Sweep {
        c,
        options,
        points: &points,
        emit,
        current: kept_for_first_point(c, first, &points),
        pending: Vec::new(),
        records: Vec::new(),
        emitted: 0,
        skipped: 0,
        image: None,
    };
    for (i, p) in points.iter().enumerate() {
        if sweep.point(i, p, progress).is_break() {
            break;
        }
    }
    sweep.finish()
}

/// The cell's first file system and the points the workload asks of it (some depend on
/// it: an io sweep sizes its large file from the target's free space), once every process
/// of the team has as many; else the cell's one record of why not.
fn first_fs_and_points(
    c: &CellRun,
    options: &toml::Table,
) -> Result<(Fresh, Vec<Point>), CellOutput> {
    let f = match fresh::provision(c, 0, &Point::default()) {
        Ok(f) => f,
        Err(failure) => return Err(c.fail(c.agree_failure(failure)).into()),
    };
    let points = match c.workload.points(&f.ctx(c, options)) {
        Ok(p) if p.is_empty() => Ok(vec![Point::default()]),
        other => other,
    };
    let agreed = match points {
        Ok(p) => c.team.agree_cell(&c.step("start"), Ok(p.len())).map(|()| p),
        Err(e) => Err(c.agree_failure((e.status(), e.to_string(), Vec::new()))),
    };
    match agreed {
        Ok(points) => Ok((f, points)),
        Err((status, e, notes)) => {
            let mut m = c.base();
            m.status = status;
            m.error = Some(e);
            m.notes = notes;
            m.provenance = f.inst.provenance.clone();
            retire(f, std::slice::from_mut(&mut m), &c.spec.target.name);
            Err(vec![m].into())
        }
    }
}

/// The first file system was made for `Point::default()`: a first point that wants the
/// other kind (a populated copy, or an empty one) gets its own, and this one goes.
fn kept_for_first_point(c: &CellRun, first: Fresh, points: &[Point]) -> Option<Fresh> {
    let kind = |p: &Point| (c.master_for(p).is_some(), c.beside_for(p).is_some());
    if points
        .first()
        .is_some_and(|p| kind(p) != kind(&Point::default()))
    {
        retire(first, &mut [c.base()], &c.spec.target.name);
        return None;
    }
    Some(first)
}

/// A cell's points in progress.
struct Sweep<'s, 'c> {
    c: &'s CellRun<'c>,
    options: &'s toml::Table,
    points: &'s [Point],
    emit: &'s mut dyn FnMut(&mut Measurement) -> bool,
    /// The file system the next point runs on, when it is already made.
    current: Option<Fresh>,
    /// Points measured on `current` that a following point shares it with: their records
    /// wait for its check.
    pending: Vec<Measurement>,
    records: Vec<Measurement>,
    /// How many of `records` went to `emit`.
    emitted: usize,
    /// Points already recorded in final form (`--resume`), not measured again.
    skipped: usize,
    /// The file system kept as the target's populated image, once one is.
    image: Option<MasterImage>,
}

impl Sweep<'_, '_> {
    /// How many points the cell has, as each record carries it.
    fn of(&self) -> u32 {
        self.points.len() as u32
    }

    /// Point `i` (`p`): skipped when already recorded, else measured on its file system;
    /// `Break` when the cell stops (interrupted, or a record could not be kept).
    fn point(&mut self, i: usize, p: &Point, progress: &mut Progress) -> ControlFlow<()> {
        let c = self.c;
        let mut probe = c.base_for(p);
        probe.cell_points = Some(self.of());
        if c.recorded.contains(&probe.key()) {
            self.skipped += 1;
            return ControlFlow::Continue(());
        }
        if c.cancel.load(Ordering::SeqCst) {
            return self.interrupted(probe);
        }
        let shared = !self.pending.is_empty();
        let f = match self.current.take() {
            Some(f) => f,
            None => match fresh::provision(c, i, p) {
                Ok(f) => f,
                Err(failure) => return self.unprovisioned(i, probe, failure),
            },
        };
        progress.point(&p.variant);
        let mut m = measure_point(c, &f.ctx(c, self.options), p, i, &f);
        m.cell_points = Some(self.of());
        if shared {
            m.notes.push(format!(
                "measured on the file system of the point before it ({}), which only read it",
                self.points[i - 1].variant
            ));
        }
        self.pending.push(m);
        if self.follows(i, p) {
            // The next point finds the data set in place, whether this point's file system
            // came with it (a copy of the populated image) or this point wrote it, and in
            // the caches as far as this one read it.
            self.current = Some(Fresh {
                populated: true,
                follows: true,
                ..f
            });
            return ControlFlow::Continue(());
        }
        self.settle(f)
    }

    /// Whether point `i + 1` runs on the file system point `i` (`p`) leaves: a read-only
    /// point leaves it to the next one where the workload says the next one starts from
    /// what it leaves, and only alone (the ranks of a job agree on every provisioning step).
    fn follows(&self, i: usize, p: &Point) -> bool {
        let c = self.c;
        self.points.get(i + 1).is_some_and(|next| {
            c.team.is_alone()
                && self.pending.iter().all(|m| m.status == Status::Ok)
                && c.workload.follows_on_same_fs(p, next)
                && !c.recorded.contains(&c.point_key(next, self.of()))
        })
    }

    /// An interrupt before point `probe`: what is measured is settled, and the point is
    /// recorded `interrupted` so `--resume` knows this cell is unfinished and runs it again.
    fn interrupted(&mut self, mut probe: Measurement) -> ControlFlow<()> {
        if let Some(f) = self.current.take() {
            self.settle(f)?;
        }
        probe.status = Status::Interrupted;
        probe.error = Some("interrupted before this point ran".into());
        self.records.push(probe);
        ControlFlow::Break(())
    }

    /// Point `i` (`probe`) whose file system could not be made: recorded with why, after
    /// taking its part in the team's steps of the point.
    fn unprovisioned(
        &mut self,
        i: usize,
        mut probe: Measurement,
        (status, e, notes): crate::runner::failure::Failure,
    ) -> ControlFlow<()> {
        probe.status = status;
        probe.error = Some(e);
        probe.notes = notes;
        self.c.skip_point(i, &mut probe);
        let kept = (self.emit)(&mut probe);
        self.records.push(probe);
        if !kept {
            return ControlFlow::Break(());
        }
        self.emitted = self.records.len();
        ControlFlow::Continue(())
    }

    /// Retires `f` and hands on the records measured on it; `Break` when one of them could
    /// not be kept.
    fn settle(&mut self, f: Fresh) -> ControlFlow<()> {
        let target = &self.c.spec.target.name;
        let keep = self
            .c
            .keep_image
            .clone()
            .filter(|_| self.image.is_none())
            .map(|origin| (origin, self.c.work));
        let (kept, image) = settle(
            f,
            &mut self.pending,
            (target, keep),
            self.emit,
            &mut self.records,
        );
        self.image = self.image.take().or(image);
        if !kept {
            return ControlFlow::Break(());
        }
        self.emitted = self.records.len();
        ControlFlow::Continue(())
    }

    /// The cell's records once its points are done: the last file system retired, and a
    /// cell interrupted before its first point still recorded as such.
    fn finish(mut self) -> CellOutput {
        if let Some(f) = self.current.take() {
            let _ = self.settle(f);
        }
        if self.records.is_empty() && self.skipped == 0 {
            return self
                .c
                .fail((
                    Status::Interrupted,
                    "interrupted before the first point".into(),
                    Vec::new(),
                ))
                .into();
        }
        CellOutput {
            records: self.records,
            emitted: self.emitted,
            image: self.image.map(Box::new),
        }
    }
}
