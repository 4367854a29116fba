//! Reading a plan file into [`Settings`] (errors name the file, line and column), and
//! target specs (`--target`, `targets = [...]`, `[[target]]`) turned into
//! [`TargetConfig`]s. Parsing only: [`super::resolve`] combines the file with the command
//! line into a [`Plan`](super::Plan).

use std::path::{Path, PathBuf};

use super::settings::{Settings, TargetTable};
use super::size::parse_size;
use super::target::{FsKind, Location, TargetConfig};
use super::{catalogue, PlanError};

/// Reads and parses a plan file; errors name the file, line and column.
pub fn read_plan_file(path: &Path) -> Result<Settings, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlanError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse_plan_file(&text, &path.display().to_string())
}

/// Parses plan text. Separate from reading so it can be fuzzed.
pub fn parse_plan_file(text: &str, name: &str) -> Result<Settings, PlanError> {
    parse_plan_file_as(text, name)
}

/// Parses TOML text named `name` into `T` (a plan, or another file in the plan's style
/// such as `fsarena tune`'s option space); errors name the file, line and column.
pub fn parse_plan_file_as<T: serde::de::DeserializeOwned>(
    text: &str,
    name: &str,
) -> Result<T, PlanError> {
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

/// The longest target name accepted.
pub const MAX_NAME: usize = 64;

/// A target name is a row of every table and a key of every result: letters, digits and
/// `._+-`, not starting with `.` or `-`, 1 to [`MAX_NAME`] characters — so no newline
/// splits a table and no `/` or `..` reaches a path.
pub fn check_name(name: &str) -> Result<(), PlanError> {
    let bad = |why: &str| PlanError::Invalid {
        what: "target name",
        value: name.escape_debug().to_string(),
        why: why.to_string(),
    };
    if name.is_empty() {
        return Err(bad("give the target a name"));
    }
    if name.chars().count() > MAX_NAME {
        return Err(bad(&format!("use at most {MAX_NAME} characters")));
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err(bad("a name may not start with `.` or `-`"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c))
    {
        return Err(bad("use only letters, digits and . _ + -"));
    }
    Ok(())
}

/// A path in a target spec (`dir:PATH`, `NAME@/dev/X`) becomes the target's name: no
/// control characters (a newline would split every table).
fn check_spec_path(spec: &str) -> Result<(), PlanError> {
    if spec.chars().any(char::is_control) {
        return Err(PlanError::Invalid {
            what: "target",
            value: spec.escape_debug().to_string(),
            why: "a path with control characters (newline, tab, …) cannot name a target".into(),
        });
    }
    Ok(())
}

/// Parses `--target` specs: a catalogue name, `dir:PATH`, or `NAME@/dev/DEVICE`.
pub fn parse_target_spec(spec: &str) -> Result<TargetConfig, PlanError> {
    check_spec_path(spec)?;
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

/// Builds a `[[target]]` table into a target: from a catalogue `base` or a bare `fs`,
/// with its own mkfs and mount options, size, and device or directory.
pub fn custom_target(t: &TargetTable) -> Result<TargetConfig, PlanError> {
    check_name(&t.name)?;
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
                location: Location::default_for(kind),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn target_specs() {
        let d = parse_target_spec("dir:/mnt/x").unwrap();
        assert_eq!(d.location, Location::Dir("/mnt/x".into()));
        let b = parse_target_spec("xfs@/dev/sdz").unwrap();
        assert_eq!(b.location, Location::Device("/dev/sdz".into()));
        assert!(parse_target_spec("xfs@sdz").is_err());
    }
}
