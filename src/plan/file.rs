//! The TOML plan file and the command-line overrides, resolved into a [`Plan`].
//!
//! ```toml
//! runs = 3                 # or "auto"
//! scale = 0.01
//! threads = [1, 2, 4]
//! workloads = ["create", "scan", "delete"]
//! targets = ["ext4", "xfs"]          # catalogue names, dir:PATH, NAME@/dev/DEVICE
//! baseline = "ext4"
//! timeout = 600                      # seconds per measurement
//!
//! [dataset]
//! profile = "small"
//! seed = 42
//!
//! [[target]]                         # a configuration of your own
//! name = "ext4-journal-noatime"
//! base = "ext4"                      # or fs = "ext4"
//! mkfs = ["-b", "4096"]
//! mount = ["data=journal", "noatime"]
//! size = "2G"
//!
//! [workload.db]                      # options handed to one workload
//! threads = 12
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::size::parse_size;
use super::target::{FsKind, Location, TargetConfig};
use super::{catalogue, Plan, PlanError, Runs};
use crate::dataset::DatasetSpec;

/// The plan file as written. Unknown keys are errors, reported with line and column.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    pub runs: Option<RunsValue>,
    pub scale: Option<f64>,
    pub threads: Option<Vec<i64>>,
    pub workloads: Option<Vec<String>>,
    pub targets: Option<Vec<String>>,
    pub baseline: Option<String>,
    pub timeout: Option<f64>,
    pub dataset: Option<DatasetTable>,
    #[serde(default, rename = "target")]
    pub custom_targets: Vec<TargetTable>,
    #[serde(default)]
    pub workload: BTreeMap<String, toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RunsValue {
    Count(i64),
    Word(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetTable {
    pub profile: Option<String>,
    pub seed: Option<u64>,
    pub duplicate_fraction: Option<f64>,
    pub compressibility: Option<f64>,
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetTable {
    pub name: String,
    /// A catalogue entry to start from.
    pub base: Option<String>,
    pub fs: Option<String>,
    #[serde(default)]
    pub mkfs: Vec<String>,
    #[serde(default)]
    pub mount: Vec<String>,
    pub size: Option<String>,
    pub device: Option<PathBuf>,
    pub dir: Option<PathBuf>,
    pub description: Option<String>,
}

/// Command-line values; `None`/empty means "not given".
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub targets: Vec<String>,
    pub workloads: Vec<String>,
    pub threads: Option<String>,
    pub runs: Option<String>,
    pub scale: Option<f64>,
    pub baseline: Option<String>,
    pub profile: Option<String>,
    pub seed: Option<u64>,
    pub dataset_dir: Option<PathBuf>,
    pub compressibility: Option<f64>,
    pub timeout: Option<f64>,
    pub size: Option<String>,
}

/// Reads and parses a plan file; errors name the file, line and column.
pub fn read_plan_file(path: &Path) -> Result<PlanFile, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse_plan_file(&text, &path.display().to_string())
}

/// Parses plan text. Separate from reading so it can be fuzzed.
pub fn parse_plan_file(text: &str, name: &str) -> Result<PlanFile, PlanError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
        PlanError::Syntax {
            path: name.to_string(),
            line,
            column,
            message: e.message().replace('\n', " ").trim().to_string(),
        }
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let upto = &text[..offset.min(text.len())];
    let line = upto.matches('\n').count() + 1;
    let column = upto.rfind('\n').map_or(upto.len(), |i| upto.len() - i - 1) + 1;
    (line, column)
}

/// Parses `--target` specs: a catalogue name, `dir:PATH`, or `NAME@/dev/DEVICE`.
pub fn parse_target_spec(spec: &str) -> Result<TargetConfig, PlanError> {
    if let Some(path) = spec.strip_prefix("dir:") {
        if path.is_empty() {
            return Err(PlanError::Invalid {
                what: "target",
                value: spec.into(),
                why: "dir: needs a path, e.g. dir:/mnt/nfs".into(),
            });
        }
        return Ok(TargetConfig {
            name: spec.to_string(),
            fs: FsKind::Existing,
            mkfs_args: vec![],
            mount_options: vec![],
            location: Location::Dir(PathBuf::from(path)),
            size: None,
            description: format!("existing directory {path}"),
        });
    }
    let (name, device) = match spec.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (spec, None),
    };
    let mut t = catalogue::get(name).ok_or_else(|| PlanError::UnknownTarget {
        name: name.to_string(),
        valid: catalogue::names().join(", "),
    })?;
    if let Some(dev) = device {
        if !t.fs.needs_device() {
            return Err(PlanError::Invalid {
                what: "target",
                value: spec.into(),
                why: format!("{} does not live on a block device", t.fs.name()),
            });
        }
        if !dev.starts_with("/dev/") {
            return Err(PlanError::Invalid {
                what: "target",
                value: spec.into(),
                why: "the device must be a path under /dev, e.g. ext4@/dev/sdb".into(),
            });
        }
        t.location = Location::Device(PathBuf::from(dev));
        t.name = spec.to_string();
    }
    Ok(t)
}

fn custom_target(t: &TargetTable) -> Result<TargetConfig, PlanError> {
    let mut cfg = match (&t.base, &t.fs) {
        (Some(base), None) => catalogue::get(base).ok_or_else(|| PlanError::UnknownTarget {
            name: base.clone(),
            valid: catalogue::names().join(", "),
        })?,
        (None, Some(fs)) => {
            let kind = FsKind::parse(fs).ok_or_else(|| PlanError::UnknownFs {
                name: fs.clone(),
                valid: FsKind::PROVISIONABLE
                    .iter()
                    .map(|k| k.name())
                    .chain(["dir"])
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
            TargetConfig {
                name: String::new(),
                fs: kind,
                mkfs_args: vec![],
                mount_options: vec![],
                location: match kind {
                    FsKind::Tmpfs => Location::Memory,
                    _ => Location::Loop,
                },
                size: None,
                description: String::new(),
            }
        }
        _ => {
            return Err(PlanError::Invalid {
                what: "target",
                value: t.name.clone(),
                why: "give exactly one of `base` (a catalogue name) or `fs`".into(),
            })
        }
    };
    cfg.name = t.name.clone();
    cfg.mkfs_args.extend(t.mkfs.iter().cloned());
    cfg.mount_options.extend(t.mount.iter().cloned());
    if let Some(s) = &t.size {
        cfg.size = Some(parse_size(s).map_err(|why| PlanError::Invalid {
            what: "size",
            value: s.clone(),
            why,
        })?);
    }
    match (&t.device, &t.dir) {
        (Some(_), Some(_)) => {
            return Err(PlanError::Invalid {
                what: "target",
                value: t.name.clone(),
                why: "give `device` or `dir`, not both".into(),
            })
        }
        (Some(d), None) => cfg.location = Location::Device(d.clone()),
        (None, Some(d)) => {
            cfg.fs = FsKind::Existing;
            cfg.location = Location::Dir(d.clone());
        }
        (None, None) => {}
    }
    if cfg.fs == FsKind::Existing && !matches!(cfg.location, Location::Dir(_)) {
        return Err(PlanError::Invalid {
            what: "target",
            value: t.name.clone(),
            why: "fs = \"dir\" needs `dir = \"/path\"`".into(),
        });
    }
    cfg.description = t.description.clone().unwrap_or_else(|| {
        format!(
            "{} mkfs [{}] mount [{}]",
            cfg.fs.name(),
            cfg.mkfs_args.join(" "),
            cfg.mount_options.join(",")
        )
    });
    Ok(cfg)
}

/// Parses `1,2,4` into thread counts.
pub fn parse_threads(s: &str) -> Result<Vec<usize>, PlanError> {
    let bad = |why: &str| PlanError::Invalid {
        what: "thread list",
        value: s.to_string(),
        why: why.to_string(),
    };
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let n: i64 = part
            .parse()
            .map_err(|_| bad("use positive whole numbers separated by commas, e.g. 1,2,4"))?;
        out.push(check_threads(n).map_err(|why| bad(&why))?);
    }
    if out.is_empty() {
        return Err(bad("empty"));
    }
    Ok(out)
}

fn check_threads(n: i64) -> Result<usize, String> {
    if !(1..=1024).contains(&n) {
        return Err(format!("{n} threads: use 1 to 1024"));
    }
    Ok(n as usize)
}

fn parse_runs(s: &str) -> Result<Runs, PlanError> {
    if s == "auto" {
        return Ok(Runs::Auto { min: 3, max: 10 });
    }
    match s.parse::<i64>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(Runs::Fixed(n as u32)),
        _ => Err(PlanError::Invalid {
            what: "runs",
            value: s.to_string(),
            why: "use a whole number from 1 to 1000, or `auto`".into(),
        }),
    }
}

fn check_fraction(what: &'static str, v: f64) -> Result<f64, PlanError> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(PlanError::Invalid {
            what,
            value: v.to_string(),
            why: "use a fraction from 0 to 1".into(),
        })
    }
}

/// Resolves file + flags into a plan. `workload_names` are the valid workloads; `available`
/// filters the default targets to those the host supports (explicit targets are kept, so
/// the runner can say why one cannot run).
pub fn resolve(
    file: Option<PlanFile>,
    o: &Overrides,
    workload_names: &[&str],
    available: &dyn Fn(&TargetConfig) -> bool,
) -> Result<Plan, PlanError> {
    let f = file.unwrap_or_default();

    // Targets: flags replace the file's list; custom [[target]] tables are always added.
    let mut targets = Vec::new();
    let specs = if !o.targets.is_empty() {
        Some(o.targets.clone())
    } else {
        f.targets.clone()
    };
    for spec in specs.iter().flatten() {
        targets.push(parse_target_spec(spec)?);
    }
    for t in &f.custom_targets {
        targets.push(custom_target(t)?);
    }
    if targets.is_empty() {
        targets = catalogue::defaults()
            .into_iter()
            .filter(|t| available(t))
            .collect();
    }
    if targets.is_empty() {
        return Err(PlanError::NoTargets);
    }
    if let Some(s) = &o.size {
        let bytes = parse_size(s).map_err(|why| PlanError::Invalid {
            what: "size",
            value: s.clone(),
            why,
        })?;
        for t in &mut targets {
            t.size = Some(bytes);
        }
    }
    let mut seen = std::collections::HashSet::new();
    for t in &targets {
        if !seen.insert(t.name.clone()) {
            return Err(PlanError::DuplicateTarget(t.name.clone()));
        }
    }

    // Workloads: each flag may hold a comma list.
    let mut workloads: Vec<String> = if !o.workloads.is_empty() {
        o.workloads
            .iter()
            .flat_map(|w| w.split(','))
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect()
    } else if let Some(w) = &f.workloads {
        w.clone()
    } else {
        super::DEFAULT_WORKLOADS
            .iter()
            .filter(|w| workload_names.contains(w))
            .map(|w| w.to_string())
            .collect()
    };
    if workloads.iter().any(|w| w == "all") {
        workloads = workload_names.iter().map(|w| w.to_string()).collect();
    }
    for w in &workloads {
        if !workload_names.contains(&w.as_str()) {
            return Err(PlanError::UnknownWorkload {
                name: w.clone(),
                valid: workload_names.join(", "),
            });
        }
    }
    if workloads.is_empty() {
        return Err(PlanError::Invalid {
            what: "workload list",
            value: String::new(),
            why: format!("name at least one of: {}", workload_names.join(", ")),
        });
    }
    for name in f.workload.keys() {
        if !workload_names.contains(&name.as_str()) {
            return Err(PlanError::UnknownWorkload {
                name: name.clone(),
                valid: workload_names.join(", "),
            });
        }
    }

    let threads = match (&o.threads, &f.threads) {
        (Some(s), _) => parse_threads(s)?,
        (None, Some(list)) => list
            .iter()
            .map(|&n| {
                check_threads(n).map_err(|why| PlanError::Invalid {
                    what: "threads",
                    value: n.to_string(),
                    why,
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        (None, None) => vec![1],
    };
    if threads.is_empty() {
        return Err(PlanError::Invalid {
            what: "threads",
            value: "[]".into(),
            why: "give at least one thread count".into(),
        });
    }

    let runs = match (&o.runs, &f.runs) {
        (Some(s), _) => parse_runs(s)?,
        (None, Some(RunsValue::Count(n))) => parse_runs(&n.to_string())?,
        (None, Some(RunsValue::Word(w))) => parse_runs(w)?,
        (None, None) => Runs::Fixed(super::DEFAULT_RUNS),
    };

    let scale = o.scale.or(f.scale).unwrap_or(super::DEFAULT_SCALE);
    if !(scale.is_finite() && scale > 0.0 && scale <= 100.0) {
        return Err(PlanError::Invalid {
            what: "scale",
            value: scale.to_string(),
            why: "use a number above 0 and at most 100 (1 = the full-size data sets)".into(),
        });
    }

    let ds = f.dataset.unwrap_or_default();
    let mut dataset = DatasetSpec {
        scale,
        ..DatasetSpec::default()
    };
    if let Some(p) = o.profile.as_ref().or(ds.profile.as_ref()) {
        dataset.profile =
            serde_json::from_value(serde_json::Value::String(p.clone())).map_err(|_| {
                PlanError::Invalid {
                    what: "profile",
                    value: p.clone(),
                    why: "use small, medium, large, huge, bigfolder or smallfolder".into(),
                }
            })?;
    }
    if let Some(seed) = o.seed.or(ds.seed) {
        dataset.seed = seed;
    }
    if let Some(v) = ds.duplicate_fraction {
        dataset.duplicate_fraction = check_fraction("duplicate_fraction", v)?;
    }
    if let Some(v) = o.compressibility.or(ds.compressibility) {
        dataset.compressibility = check_fraction("compressibility", v)?;
    }
    dataset.source_dir = o.dataset_dir.clone().or(ds.dir);

    let baseline = match o.baseline.as_ref().or(f.baseline.as_ref()) {
        Some(b) if targets.iter().any(|t| &t.name == b) => b.clone(),
        Some(b) => return Err(PlanError::UnknownBaseline(b.clone())),
        None => targets[0].name.clone(),
    };

    let timeout_s = o
        .timeout
        .or(f.timeout)
        .unwrap_or(super::DEFAULT_TIMEOUT.as_secs_f64());
    let timeout = Duration::try_from_secs_f64(timeout_s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| PlanError::Invalid {
            what: "timeout",
            value: timeout_s.to_string(),
            why: "use a positive number of seconds".into(),
        })?;

    Ok(Plan {
        targets,
        workloads,
        threads,
        runs,
        dataset,
        baseline,
        timeout,
        workload_options: f.workload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: &[&str] = &["create", "scan", "delete"];

    fn all(_: &TargetConfig) -> bool {
        true
    }

    #[test]
    fn unknown_key_names_line_and_column() {
        let text = "runs = 3\nscale = 0.1\nbogus = 1\n";
        let err = parse_plan_file(text, "p.toml").unwrap_err().to_string();
        assert!(err.starts_with("p.toml:3:1:"), "{err}");
        assert!(err.contains("bogus"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn syntax_error_is_one_line() {
        let err = parse_plan_file("runs = [1,\n", "x.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("x.toml:"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn flags_override_file() {
        let f = parse_plan_file(
            "runs = 5\nthreads = [1, 2]\nworkloads = [\"scan\"]\ntargets = [\"xfs\", \"ext4\"]\n",
            "p",
        )
        .unwrap();
        let o = Overrides {
            runs: Some("2".into()),
            ..Default::default()
        };
        let p = resolve(Some(f), &o, W, &all).unwrap();
        assert_eq!(p.runs, Runs::Fixed(2));
        assert_eq!(p.threads, vec![1, 2]);
        assert_eq!(p.workloads, vec!["scan"]);
        assert_eq!(p.baseline, "xfs");
    }

    #[test]
    fn custom_target_from_base() {
        let f = parse_plan_file(
            "[[target]]\nname = \"mine\"\nbase = \"ext4\"\nmount = [\"noatime\"]\nsize = \"2G\"\n",
            "p",
        )
        .unwrap();
        let p = resolve(Some(f), &Overrides::default(), W, &all).unwrap();
        assert_eq!(p.targets.len(), 1);
        assert_eq!(p.targets[0].mount_options, vec!["noatime"]);
        assert_eq!(p.targets[0].size, Some(2 << 30));
    }

    #[test]
    fn bad_inputs_are_refused() {
        let o = |f: fn(&mut Overrides)| {
            let mut o = Overrides::default();
            f(&mut o);
            resolve(None, &o, W, &all)
                .map(|_| ())
                .unwrap_err()
                .to_string()
        };
        assert!(o(|o| o.targets = vec!["zfs".into()]).contains("unknown target `zfs`"));
        assert!(o(|o| o.workloads = vec!["scan,frobnicate".into()]).contains("frobnicate"));
        assert!(o(|o| o.threads = Some("1,0".into())).contains("1 to 1024"));
        assert!(o(|o| o.threads = Some("two".into())).contains("thread list"));
        assert!(o(|o| o.runs = Some("0".into())).contains("runs"));
        assert!(o(|o| o.scale = Some(-1.0)).contains("scale"));
        assert!(o(|o| o.baseline = Some("zzz".into())).contains("baseline"));
        assert!(o(|o| o.targets = vec!["ext4".into(), "ext4".into()]).contains("two targets"));
        assert!(o(|o| o.targets = vec!["tmpfs@/dev/sdb".into()]).contains("block device"));
    }

    #[test]
    fn target_specs() {
        let d = parse_target_spec("dir:/mnt/x").unwrap();
        assert_eq!(d.location, Location::Dir("/mnt/x".into()));
        let b = parse_target_spec("xfs@/dev/sdz").unwrap();
        assert_eq!(b.location, Location::Device("/dev/sdz".into()));
        assert!(parse_target_spec("xfs@sdz").is_err());
    }

    #[test]
    fn default_targets_follow_availability() {
        let only_ext4 = |t: &TargetConfig| t.fs == FsKind::Ext4;
        let p = resolve(None, &Overrides::default(), W, &only_ext4).unwrap();
        assert_eq!(p.targets.len(), 1);
        assert_eq!(p.workloads, vec!["create", "scan", "delete"]);
        let none = |_: &TargetConfig| false;
        assert!(matches!(
            resolve(None, &Overrides::default(), W, &none),
            Err(PlanError::NoTargets)
        ));
    }
}

#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn all(_: &TargetConfig) -> bool {
        true
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Arbitrary text never panics the parser, and every error is one line.
        #[test]
        fn any_text_parses_or_errs_in_one_line(text in "\\PC{0,300}") {
            match parse_plan_file(&text, "p.toml") {
                Ok(f) => { let _ = resolve(Some(f), &Overrides::default(), &["scan"], &all); }
                Err(e) => prop_assert!(!e.to_string().contains('\n')),
            }
        }

        /// TOML-shaped input with plan keys and random values never panics resolution.
        #[test]
        fn plan_shaped_text_never_panics(
            runs in prop_oneof![Just("3".to_string()), Just("\"auto\"".to_string()), "-?[0-9]{1,12}".prop_map(|s| s), "\"[a-z]{0,6}\"".prop_map(|s| s)],
            scale in prop_oneof![Just("0.01".to_string()), "-?[0-9]{1,6}\\.[0-9]{0,4}".prop_map(|s| s), Just("nan".to_string()), Just("inf".to_string())],
            threads in proptest::collection::vec(-5i64..2000, 0..4),
            target in "[a-z0-9:@/._-]{0,20}",
            size in "[0-9]{0,12}[KMGTQ]?i?B?",
        ) {
            let text = format!(
                "runs = {runs}\nscale = {scale}\nthreads = {threads:?}\ntargets = [\"{target}\"]\n[[target]]\nname = \"x\"\nbase = \"ext4\"\nsize = \"{size}\"\n"
            );
            if let Ok(f) = parse_plan_file(&text, "p.toml") {
                if let Err(e) = resolve(Some(f), &Overrides::default(), &["scan"], &all) {
                    prop_assert!(!e.to_string().contains('\n'));
                }
            }
        }
    }
}
