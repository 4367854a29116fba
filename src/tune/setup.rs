//! What a tune races, fixed before the first cell and kept in `DIR/tune.json` so that
//! `--resume DIR` continues the same race: the space, the candidates (each a value per
//! parameter, made into a target), and the plan the runner walks.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::afford::Afforded;
use super::sample::Design;
use super::space::{Kind, Space};
use crate::plan::{FsKind, Location, Plan, Runs, TargetConfig};

/// The candidate that holds every parameter's default.
pub const DEFAULTS: &str = "defaults";
/// Runs every candidate gets before the race drops any: the first look.
pub const MIN_RUNS: u32 = 2;
/// The most runs one candidate gets; the sequential looks run from [`MIN_RUNS`] to it.
pub const MAX_RUNS: u32 = 12;
/// Candidates raced when `--candidates` does not say.
pub const DEFAULT_CANDIDATES: usize = 16;
/// The file in the tune's directory that holds its setup.
pub const FILE: &str = "tune.json";
/// The answer's files in the tune's directory (written by `output`, named by `text`).
pub const BEST: &str = "best.toml";
pub const ANSWER: &str = "answer.json";
pub const CHART: &str = "search.html";
/// The results directory (a run's, `fsarena report` reads it) inside the tune's.
pub const RUNS_DIR: &str = "runs";

/// One configuration raced: its name and the index of its value of each parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub name: String,
    pub levels: Vec<usize>,
}

/// A tune as set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    pub fs: FsKind,
    pub space: Space,
    pub design: Design,
    pub candidates: Vec<Candidate>,
    /// The plan the runner walks: one target per candidate, `defaults` the baseline.
    pub plan: Plan,
    pub safe_only: bool,
    pub seed: u64,
    /// The candidates asked for and those the budget paid for ([`super::afford`]); `None`
    /// in a tune set up before it was priced.
    #[serde(default)]
    pub afforded: Option<Afforded>,
}

/// A value a candidate sets that gives up safety: (parameter, value as shown — "" is
/// "(tool default)" — and what it gives up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnsafeValue {
    pub param: String,
    pub value: String,
    pub gives_up: String,
}

impl Setup {
    /// The setup of a race of `levels` (the defaults first) over `space`, on the data set,
    /// workloads and options of `base` (whose targets and runs it replaces).
    pub fn new(
        space: Space,
        levels: Vec<Vec<usize>>,
        design: Design,
        mut base: Plan,
        budget: std::time::Duration,
        safe_only: bool,
        seed: u64,
    ) -> Setup {
        let candidates: Vec<Candidate> = levels
            .into_iter()
            .enumerate()
            .map(|(i, levels)| Candidate {
                name: if i == 0 {
                    DEFAULTS.to_string()
                } else {
                    format!("c{i:02}")
                },
                levels,
            })
            .collect();
        base.targets = candidates.iter().map(|c| target(&space, c)).collect();
        base.baseline = DEFAULTS.to_string();
        base.runs = Runs::Auto {
            min: MIN_RUNS,
            max: MAX_RUNS,
            budget,
        };
        Setup {
            fs: space.fs,
            space,
            design,
            candidates,
            plan: base,
            safe_only,
            seed,
            afforded: None,
        }
    }

    /// The candidate called `name`.
    pub fn candidate(&self, name: &str) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.name == name)
    }

    /// The unsafe values candidate `c` sets, each with what it gives up.
    pub fn unsafe_values(&self, c: &Candidate) -> Vec<UnsafeValue> {
        self.space
            .params
            .iter()
            .zip(&c.levels)
            .filter_map(|(p, &i)| {
                p.unsafe_label(i).map(|why| UnsafeValue {
                    param: p.name.clone(),
                    value: p.shown(i),
                    gives_up: why.to_string(),
                })
            })
            .collect()
    }

    /// "param=value" of each parameter `c` sets away from its default ("all defaults").
    pub fn changes(&self, c: &Candidate) -> String {
        let changed: Vec<String> = self
            .space
            .params
            .iter()
            .zip(&c.levels)
            .filter(|(p, &i)| i != p.default_index())
            .map(|(p, &i)| format!("{}: {}", p.name, p.shown(i)))
            .collect();
        if changed.is_empty() {
            "all defaults".to_string()
        } else {
            changed.join("; ")
        }
    }

    /// Writes the setup into `dir` (created), durably enough to resume from.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let tmp = dir.join(format!("{FILE}.tmp"));
        std::fs::write(&tmp, text)?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(tmp, dir.join(FILE))
    }

    /// The setup a tune wrote into `dir`.
    pub fn load(dir: &Path) -> Result<Setup, String> {
        let path = dir.join(FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {e} (is it a tune's directory?)", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The target candidate `c` is made as: the space's values in parameter order, each added
/// to mkfs or mount; described by its changes from the defaults.
pub fn target(space: &Space, c: &Candidate) -> TargetConfig {
    let mut t = TargetConfig {
        name: c.name.clone(),
        fs: space.fs,
        mkfs_args: Vec::new(),
        mount_options: Vec::new(),
        location: Location::Loop,
        size: None,
        description: String::new(),
    };
    for (p, &i) in space.params.iter().zip(&c.levels) {
        match p.kind {
            Kind::Mkfs => t.mkfs_args.extend(p.args(i)),
            Kind::Mount => t.mount_options.extend(p.args(i)),
        }
    }
    t.description = format!(
        "{} tune candidate: mkfs [{}] mount [{}]",
        space.fs.name(),
        t.mkfs_args.join(" "),
        t.mount_options.join(",")
    );
    t
}
