//! A file system's option space, as data: the mkfs and mount options `fsarena tune` may
//! set, their values, the default of each, and the values that give up a safety guarantee,
//! each with what it gives up. Built in per file system (`spaces/*.toml`, embedded), and
//! extended or replaced by the user's `--space FILE` in the same format. Everything is
//! checked before anything is provisioned: unknown keys, a default or an `unsafe` label
//! that names no value, a mount value that is not one option, and (where the tool has a dry
//! run) every mkfs value put through it.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::plan::file::parse_plan_file_as;
use crate::plan::fs_size::DEFAULT_FS_SIZE;
use crate::plan::{FsKind, TargetConfig};

/// Whether a parameter is given to mkfs or to mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Mkfs,
    Mount,
}

/// One parameter and its values (each as written: one mount option, or mkfs arguments
/// split at spaces; "" adds nothing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    pub name: String,
    pub kind: Kind,
    /// One line on what it changes.
    #[serde(default)]
    pub about: String,
    pub values: Vec<String>,
    pub default: String,
    /// Value → what it gives up. A value named here is never reported without it.
    #[serde(default, rename = "unsafe", skip_serializing_if = "BTreeMap::is_empty")]
    pub unsafe_: BTreeMap<String, String>,
}

impl Param {
    /// The index of the default value.
    pub fn default_index(&self) -> usize {
        self.values
            .iter()
            .position(|v| *v == self.default)
            .unwrap_or(0)
    }

    /// What value `i` gives up, when it is unsafe.
    pub fn unsafe_label(&self, i: usize) -> Option<&str> {
        self.unsafe_.get(&self.values[i]).map(String::as_str)
    }

    /// Value `i` as a reader sees it ("" is the tool's default).
    pub fn shown(&self, i: usize) -> String {
        match self.values[i].as_str() {
            "" => "(tool default)".to_string(),
            v => v.to_string(),
        }
    }

    /// The arguments value `i` adds to its kind's list.
    pub fn args(&self, i: usize) -> Vec<String> {
        match self.kind {
            Kind::Mkfs => self.values[i]
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            Kind::Mount if self.values[i].is_empty() => Vec::new(),
            Kind::Mount => vec![self.values[i].clone()],
        }
    }
}

/// A space file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpaceFile {
    fs: Option<String>,
    /// A user's file replaces the built-in space instead of extending it.
    #[serde(default)]
    replace: bool,
    #[serde(default)]
    param: Vec<Param>,
}

/// The option space of one file system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Space {
    pub fs: FsKind,
    pub params: Vec<Param>,
}

/// Why a space cannot be used: one line, naming the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    #[error("{0}")]
    Syntax(String),
    #[error("cannot read space file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: parameter `{param}`: {why}")]
    Param {
        file: String,
        param: String,
        why: String,
    },
    #[error("{0}")]
    Other(String),
}

/// The built-in space text of `fs`, when there is one.
fn builtin_text(fs: FsKind) -> Option<&'static str> {
    match fs {
        FsKind::Ext4 => Some(include_str!("spaces/ext4.toml")),
        FsKind::Xfs => Some(include_str!("spaces/xfs.toml")),
        FsKind::Btrfs => Some(include_str!("spaces/btrfs.toml")),
        _ => None,
    }
}

/// The file systems with a built-in space.
pub fn tunable() -> Vec<&'static str> {
    FsKind::PROVISIONABLE
        .into_iter()
        .filter(|k| builtin_text(*k).is_some())
        .map(FsKind::name)
        .collect()
}

fn parse(text: &str, name: &str) -> Result<SpaceFile, SpaceError> {
    parse_plan_file_as::<SpaceFile>(text, name).map_err(|e| SpaceError::Syntax(e.to_string()))
}

/// The space of `fs`: the built-in one, with the user's `file` over it (its parameters
/// replace those of the same name and add the others; `replace = true` drops the built-in
/// ones), then checked ([`check`]). A file system without a built-in space needs a file.
pub fn load(fs: FsKind, file: Option<&Path>) -> Result<Space, SpaceError> {
    let builtin = match builtin_text(fs) {
        Some(t) => parse(t, &format!("built-in {}.toml", fs.name()))?,
        None if file.is_some() => SpaceFile {
            fs: None,
            replace: true,
            param: Vec::new(),
        },
        None => {
            return Err(SpaceError::Other(format!(
                "{} has no built-in option space (built in: {}); write one and pass --space FILE",
                fs.name(),
                tunable().join(", ")
            )))
        }
    };
    let mut params = builtin.param;
    let mut source = format!("built-in {}.toml", fs.name());
    if let Some(path) = file {
        source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SpaceError::Read {
            path: source.clone(),
            source: e,
        })?;
        let user = parse(&text, &source)?;
        if let Some(named) = &user.fs {
            if FsKind::parse(named) != Some(fs) {
                return Err(SpaceError::Other(format!(
                    "{source}: the space is for `{named}`, not {}",
                    fs.name()
                )));
            }
        }
        if user.replace {
            params.clear();
        }
        for p in user.param {
            match params.iter_mut().find(|q| q.name == p.name) {
                Some(q) => *q = p,
                None => params.push(p),
            }
        }
    }
    let space = Space { fs, params };
    check(&space, &source)?;
    Ok(space)
}

/// The checks that need no tool: names, values, default and labels.
pub fn check(space: &Space, file: &str) -> Result<(), SpaceError> {
    let bad = |p: &Param, why: String| SpaceError::Param {
        file: file.to_string(),
        param: p.name.clone(),
        why,
    };
    if space.params.is_empty() {
        return Err(SpaceError::Other(format!(
            "{file}: the space has no parameter"
        )));
    }
    let mut names = std::collections::HashSet::new();
    for p in &space.params {
        if !names.insert(p.name.as_str()) {
            return Err(bad(p, "named twice".into()));
        }
        if p.name.is_empty()
            || !p
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad(p, "a name uses letters, digits and - _ .".into()));
        }
        if p.values.len() < 2 {
            return Err(bad(p, "give at least two values".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for v in &p.values {
            if !seen.insert(v.as_str()) {
                return Err(bad(p, format!("value `{v}` is listed twice")));
            }
            if p.kind == Kind::Mount && (v.contains(',') || v.chars().any(char::is_whitespace)) {
                return Err(bad(
                    p,
                    format!("mount value `{v}` must be one option (no comma, no space)"),
                ));
            }
            if v.chars().any(char::is_control) {
                return Err(bad(
                    p,
                    format!("value `{}` holds a control character", v.escape_debug()),
                ));
            }
        }
        if !p.values.contains(&p.default) {
            return Err(bad(
                p,
                format!("default `{}` is not one of its values", p.default),
            ));
        }
        if let Some(v) = p.unsafe_.keys().find(|v| !p.values.contains(v)) {
            return Err(bad(
                p,
                format!("`unsafe` labels `{v}`, which is not one of its values"),
            ));
        }
        if let Some((v, _)) = p.unsafe_.iter().find(|(_, why)| why.trim().is_empty()) {
            return Err(bad(
                p,
                format!("the `unsafe` label of `{v}` must say what it gives up"),
            ));
        }
    }
    Ok(())
}

/// Leaves out every unsafe value (`--safe-only`); a parameter whose default is unsafe
/// cannot be tuned safely and is refused, and one left with a single value is dropped.
pub fn safe_only(space: &mut Space) -> Result<(), SpaceError> {
    for p in &mut space.params {
        if p.unsafe_.contains_key(&p.default) {
            return Err(SpaceError::Other(format!(
                "parameter `{}`: its default `{}` is labelled unsafe, so --safe-only leaves no default",
                p.name, p.default
            )));
        }
        let labels = std::mem::take(&mut p.unsafe_);
        p.values.retain(|v| !labels.contains_key(v));
    }
    space.params.retain(|p| p.values.len() > 1);
    if space.params.is_empty() {
        return Err(SpaceError::Other(
            "--safe-only leaves no parameter with two safe values".into(),
        ));
    }
    Ok(())
}

/// Every mkfs value put through the tool's dry run (`provision::dry_mkfs`) on a target of
/// the defaults plus that value, on a file system of `size` bytes. A value refused at this
/// size that the tool takes on a file system of the default size does not fit it (`-J
/// size=1024`, a 1 GiB journal, on a 1 GiB file system): it is left out of the space, and
/// each one left out is said in one line of the result (a parameter left with one value is
/// left out too). A value refused at any size, or a default refused at this one, is an
/// error naming it, the size and the tool's words: nothing to race without it.
pub fn fit_mkfs_values(
    space: &mut Space,
    defaults: &TargetConfig,
    size: u64,
    dir: &Path,
) -> Result<Vec<String>, SpaceError> {
    let shown = crate::plan::size::human_bytes(size);
    let mut dropped = Vec::new();
    for p in space.params.iter().filter(|p| p.kind == Kind::Mkfs) {
        for i in 0..p.values.len() {
            let t = with_mkfs_value(space, defaults, &p.name, i);
            let Err(why) = crate::provision::dry_mkfs::check(&t, size, dir) else {
                continue;
            };
            let refused = |why: String| SpaceError::Param {
                file: "space".into(),
                param: p.name.clone(),
                why,
            };
            let fits_larger = size < DEFAULT_FS_SIZE
                && crate::provision::dry_mkfs::check(&t, DEFAULT_FS_SIZE, dir).is_ok();
            if !fits_larger {
                let v = &p.values[i];
                return Err(refused(format!("value `{v}` is refused by mkfs: {why}")));
            }
            if i == p.default_index() {
                return Err(refused(format!(
                    "its default `{}` does not fit a {shown} file system (--fs-size): {why}",
                    p.values[i]
                )));
            }
            dropped.push((p.name.clone(), p.values[i].clone(), why));
        }
    }
    let mut lines = Vec::new();
    for (param, value, why) in dropped {
        if let Some(p) = space.params.iter_mut().find(|p| p.name == param) {
            p.values.retain(|v| *v != value);
            p.unsafe_.remove(&value);
        }
        lines.push(format!(
            "parameter `{param}`: value `{value}` is left out, it does not fit a {shown} file system (--fs-size): {why}"
        ));
    }
    space.params.retain(|p| p.values.len() > 1);
    Ok(lines)
}

/// The target of `defaults` with the mkfs arguments of every parameter's default, except
/// `param`'s value `i`.
fn with_mkfs_value(space: &Space, defaults: &TargetConfig, param: &str, i: usize) -> TargetConfig {
    let mut t = defaults.clone();
    t.mkfs_args = space
        .params
        .iter()
        .filter(|q| q.kind == Kind::Mkfs)
        .flat_map(|q| {
            q.args(if q.name == param {
                i
            } else {
                q.default_index()
            })
        })
        .collect();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fsarena tune ext4 --fs-size 1G` exited 2: the space's `-J size=1024` (a 1 GiB
    /// journal) cannot be made on a 1 GiB file system, and one value refused stopped the
    /// tune. Now that value is left out, said in one line, and the rest is raced.
    #[test]
    fn tune_at_1g_leaves_out_the_journal_that_does_not_fit() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = load(FsKind::Ext4, None).unwrap();
        let before = s.clone();
        let defaults = crate::plan::catalogue::get("ext4").unwrap();
        let lines = fit_mkfs_values(&mut s, &defaults, 1 << 30, dir.path()).unwrap();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("`-J size=1024`") && lines[0].contains("1.0 GiB"),
            "{lines:?}"
        );
        let journal = s.params.iter().find(|p| p.name == "journal-size").unwrap();
        assert_eq!(journal.values, ["", "-J size=64"]);
        let others = |x: &Space| -> Vec<Param> {
            x.params
                .iter()
                .filter(|p| p.name != "journal-size")
                .cloned()
                .collect()
        };
        assert_eq!(others(&s), others(&before));
        // At the default size every value fits.
        let mut full = before.clone();
        assert!(
            fit_mkfs_values(&mut full, &defaults, DEFAULT_FS_SIZE, dir.path())
                .unwrap()
                .is_empty()
        );
        assert_eq!(full, before);
    }

    #[test]
    fn every_builtin_space_reads_and_checks() {
        for fs in [FsKind::Ext4, FsKind::Xfs, FsKind::Btrfs] {
            let s = load(fs, None).unwrap();
            assert!(s.params.len() >= 5, "{}", fs.name());
            assert!(s.params.iter().all(|p| p.values.contains(&p.default)));
        }
        assert!(load(FsKind::F2fs, None).is_err());
    }

    #[test]
    fn unsafe_values_are_labelled_and_safe_only_leaves_them_out() {
        let mut s = load(FsKind::Ext4, None).unwrap();
        let data = s.params.iter().find(|p| p.name == "data").unwrap();
        let wb = data
            .values
            .iter()
            .position(|v| v == "data=writeback")
            .unwrap();
        assert!(data.unsafe_label(wb).unwrap().contains("crash"));
        safe_only(&mut s).unwrap();
        assert!(s.params.iter().all(|p| p.unsafe_.is_empty()));
        assert!(!s
            .params
            .iter()
            .any(|p| p.values.iter().any(|v| v == "nobarrier")));
        assert!(
            !s.params.iter().any(|p| p.name == "barrier"),
            "one value left: dropped"
        );
    }

    fn file_with(text: &str) -> Result<Space, SpaceError> {
        let dir = std::env::temp_dir().join(format!("fsarena-space-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.toml", text.len()));
        std::fs::write(&path, text).unwrap();
        let r = load(FsKind::Ext4, Some(&path));
        let _ = std::fs::remove_file(&path);
        r
    }

    #[test]
    fn a_bad_space_file_is_one_line_naming_what_is_wrong() {
        let unknown = "[[param]]\nname = \"x\"\nkind = \"mount\"\nvalues = [\"a\", \"b\"]\ndefault = \"a\"\nbogus = 1\n";
        let e = file_with(unknown).unwrap_err().to_string();
        assert!(e.contains("bogus") && e.contains(":6:"), "{e}");
        let default =
            "[[param]]\nname = \"x\"\nkind = \"mount\"\nvalues = [\"a\", \"b\"]\ndefault = \"c\"\n";
        let e = file_with(default).unwrap_err().to_string();
        assert!(e.contains("`x`") && e.contains("default `c`"), "{e}");
        let label = "[[param]]\nname = \"x\"\nkind = \"mount\"\nvalues = [\"a\", \"b\"]\ndefault = \"a\"\nunsafe = { c = \"oops\" }\n";
        assert!(file_with(label)
            .unwrap_err()
            .to_string()
            .contains("labels `c`"));
        let two = "[[param]]\nname = \"x\"\nkind = \"mount\"\nvalues = [\"a,b\", \"b\"]\ndefault = \"b\"\n";
        assert!(file_with(two)
            .unwrap_err()
            .to_string()
            .contains("one option"));
        for e in [unknown, default, label, two] {
            assert!(!file_with(e).unwrap_err().to_string().contains('\n'));
        }
    }

    #[test]
    fn a_space_file_extends_or_replaces_the_builtin_one() {
        let add = "fs = \"ext4\"\n[[param]]\nname = \"atime\"\nkind = \"mount\"\nvalues = [\"relatime\", \"noatime\"]\ndefault = \"relatime\"\n[[param]]\nname = \"sync\"\nkind = \"mount\"\nvalues = [\"\", \"sync\"]\ndefault = \"\"\n";
        let s = file_with(add).unwrap();
        let builtin = load(FsKind::Ext4, None).unwrap();
        assert_eq!(s.params.len(), builtin.params.len() + 1);
        assert_eq!(
            s.params
                .iter()
                .find(|p| p.name == "atime")
                .unwrap()
                .values
                .len(),
            2
        );
        let only = format!("replace = true\n{add}");
        assert_eq!(file_with(&only).unwrap().params.len(), 2);
        let other = "fs = \"xfs\"\n[[param]]\nname = \"a\"\nkind = \"mount\"\nvalues = [\"\", \"noatime\"]\ndefault = \"\"\n";
        assert!(file_with(other)
            .unwrap_err()
            .to_string()
            .contains("not ext4"));
    }
}
