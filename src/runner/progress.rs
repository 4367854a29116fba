//! Progress: a bar with target, workload, repetition and ETA on a terminal; one plain line
//! per cell otherwise (CI logs stay readable); nothing with `--quiet`. The ETA is the
//! runner's: the remaining cells priced at what cells of the same target and workload cost
//! so far (an ntfs cell costs ten of a tmpfs one), not an equal share per cell.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The run's progress display; how it shows depends on the terminal and `--quiet`.
pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    total: u64,
    n: u64,
    label: String,
    eta: Option<std::time::Duration>,
}

impl Progress {
    /// A display for `total` cells.
    pub fn new(total: u64, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{spinner} [{bar:30}] {pos}/{len} cells  {prefix}  {msg}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style);
            b
        });
        Progress {
            bar,
            plain: !quiet && !tty,
            total,
            n: 0,
            label: String::new(),
            eta: None,
        }
    }

    /// Sets the estimated time to the end of the run.
    pub fn set_eta(&mut self, eta: Option<std::time::Duration>) {
        self.eta = eta;
        if let Some(b) = &self.bar {
            b.set_prefix(eta_text(eta));
        }
    }

    /// Adds `more` cells (an extra `--runs auto` repetition).
    pub fn grow(&mut self, more: u64) {
        self.total += more;
        if let Some(b) = &self.bar {
            b.set_length(self.total);
        }
    }

    /// Shows which cell is running.
    pub fn start_cell(&mut self, target: &str, workload: &str, rep: u32, threads: usize) {
        self.label = format!("{target} {workload} threads {threads} repetition {rep}");
        if let Some(b) = &self.bar {
            b.set_message(self.label.clone());
        }
    }

    /// Shows which point of the cell is running.
    pub fn point(&mut self, variant: &str) {
        if let Some(b) = &self.bar {
            if !variant.is_empty() {
                b.set_message(format!("{} [{variant}]", self.label));
            }
        }
    }

    /// Counts a cell as done, with its one-line result.
    pub fn finish_cell(&mut self, result: &str) {
        self.n += 1;
        if let Some(b) = &self.bar {
            b.inc(1);
        } else if self.plain {
            self.println(&format!(
                "[{}/{}] {}: {result} ({})",
                self.n,
                self.total,
                self.label,
                eta_text(self.eta)
            ));
        }
    }

    /// Prints a line without tearing the bar.
    pub fn println(&self, line: &str) {
        // Wrapped to the terminal like the report (the budget's messages are long).
        let width = crate::report::output_width();
        let wrapped = crate::report::wrap_lines(line, width, 2);
        let line = wrapped.trim_end_matches('\n');
        match &self.bar {
            Some(b) => b.println(line),
            None if self.plain => eprintln!("{line}"),
            None => {}
        }
    }

    /// Removes the bar at the end of the run.
    pub fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// "ETA 3m 10s", or "ETA ?" before anything has been timed.
fn eta_text(eta: Option<std::time::Duration>) -> String {
    match eta {
        Some(d) => format!(
            "ETA {}",
            humantime::format_duration(std::time::Duration::from_secs(d.as_secs()))
        ),
        None => "ETA ?".into(),
    }
}

/// The image builds announce themselves on the run's display, like everything else.
impl crate::golden::announce::Announce for Progress {
    fn println(&self, line: &str) {
        Progress::println(self, line)
    }
}
