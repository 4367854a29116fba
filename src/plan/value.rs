//! The typed values of run options, each read and checked the same way from a flag
//! (`--budget 5m`, clap's `FromStr`) and from a plan file (`budget = "5m"`, serde), so a
//! bad value is refused with the same reason wherever it was written, before anything is
//! provisioned. Only checks that need the whole plan (a budget with a fixed run count, an
//! age on a `dir:` target) are left to [`super::resolve`].

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::dataset::spec::ContentMix;
use crate::dataset::Profile;

/// A value a run option takes: its name in plan-file errors and how it reads text.
pub trait Setting: Sized {
    /// Names the option in a plan file's error: "invalid {WHAT} `{value}`: {why}".
    const WHAT: &'static str;
    /// Reads the text of a flag, or of a plan-file value (a list joined by commas); the
    /// error is the reason only, since clap and the plan file each name the option.
    fn parse(s: &str) -> Result<Self, String>;
}

/// Implements `FromStr` (clap) and `Deserialize` (plan file) through [`Setting::parse`].
macro_rules! setting {
    ($($t:ty),* $(,)?) => {$(
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                <$t as Setting>::parse(s)
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = d.deserialize_any(TextVisitor)?;
                <$t as Setting>::parse(&raw.text()).map_err(|why| {
                    de::Error::custom(format!(
                        "invalid {} `{}`: {why}",
                        <$t as Setting>::WHAT,
                        raw.shown()
                    ))
                })
            }
        }
    )*};
}

/// A plan-file value as text: a string or number as written, or a list of them.
enum Text {
    One(String),
    List(Vec<String>),
}

impl Text {
    /// What [`Setting::parse`] reads: a list is joined by commas, as a flag writes it.
    fn text(&self) -> String {
        match self {
            Text::One(s) => s.clone(),
            Text::List(v) => v.join(","),
        }
    }

    /// The value as the error shows it.
    fn shown(&self) -> String {
        match self {
            Text::One(s) => s.clone(),
            Text::List(v) => format!("[{}]", v.join(", ")),
        }
    }
}

/// Reads any scalar (or a list of scalars) as text, so every setting parses one form.
struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, a number, or a list of them")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text::One(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
        Ok(Text::One(v.to_string()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
        Ok(Text::One(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
        Ok(Text::One(v.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Scalar>()? {
            items.push(item.0);
        }
        Ok(Text::List(items))
    }
}

/// One element of a list value.
struct Scalar(String);

impl<'de> serde::Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match d.deserialize_any(TextVisitor)? {
            Text::One(s) => Ok(Scalar(s)),
            Text::List(_) => Err(de::Error::custom("a list inside a list")),
        }
    }
}

/// A number, or the reason it is not one.
fn number(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .map_err(|_| format!("`{s}` is not a number"))
}

/// `--runs N|auto` / `runs = N` or `"auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunCount {
    Fixed(u32),
    Auto,
}

impl Setting for RunCount {
    const WHAT: &'static str = "runs";
    fn parse(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(RunCount::Auto);
        }
        match s.parse::<i64>() {
            Ok(n) if (1..=1000).contains(&n) => Ok(RunCount::Fixed(n as u32)),
            _ => Err("use a whole number from 1 to 1000, or `auto`".into()),
        }
    }
}

/// `--threads 1,2,4` / `threads = [1, 2, 4]`: counts from 1 to 1024, at least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadList(pub Vec<usize>);

impl Setting for ThreadList {
    const WHAT: &'static str = "thread list";
    fn parse(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Err("give at least one thread count".into());
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let n: i64 = part.parse().map_err(|_| {
                "not a thread list: use positive whole numbers separated by commas, e.g. 1,2,4"
                    .to_string()
            })?;
            if !(1..=1024).contains(&n) {
                return Err(format!("{n} threads: use 1 to 1024"));
            }
            out.push(n as usize);
        }
        Ok(ThreadList(out))
    }
}

/// A duration a user typed: `5m`, `90s`, `1h 30m`, `500ms` (humantime), or a bare number
/// of seconds.
fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(secs) => Duration::try_from_secs_f64(secs).ok(),
        Err(_) => humantime::parse_duration(t).ok(),
    }
    .ok_or_else(|| "use a duration such as 90s, 5m, 1h 30m or 500ms".into())
}

/// `--budget` / `budget = "5m"`: the wall time an `auto` run may spend, above zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget(pub Duration);

impl Setting for Budget {
    const WHAT: &'static str = "budget";
    fn parse(s: &str) -> Result<Self, String> {
        let d = duration(s)?;
        if d.is_zero() {
            return Err("use a positive duration such as 5m".into());
        }
        Ok(Budget(d))
    }
}

/// `--phase-floor` / `phase_floor = "0.25s"`: at most a minute (0 turns the floor off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseFloor(pub Duration);

impl Setting for PhaseFloor {
    const WHAT: &'static str = "phase floor";
    fn parse(s: &str) -> Result<Self, String> {
        let d = duration(s)?;
        if d > Duration::from_secs(60) {
            return Err("use at most 60s (0 turns the floor off)".into());
        }
        Ok(PhaseFloor(d))
    }
}

/// `--scale` / `scale = 0.01` or `scale = [0.01, 0.1]`: one scale or a series of distinct
/// ones, each above 0 and at most 100 (1 = the full-size data sets). Several run every cell
/// on the data set at each scale, and the report checks each verdict across them.
#[derive(Debug, Clone, PartialEq)]
pub struct Scales(pub Vec<f64>);

impl Setting for Scales {
    const WHAT: &'static str = "scale";
    fn parse(s: &str) -> Result<Self, String> {
        distinct(s, |t| {
            let v = number(t)?;
            match v.is_finite() && v > 0.0 && v <= 100.0 {
                true => Ok(v),
                false => Err(format!(
                    "`{t}`: use a number above 0 and at most 100 (1 = the full-size data sets)"
                )),
            }
        })
        .map(Scales)
    }
}

/// A comma list of at least one item, each read by `item`, none twice.
fn distinct<T: PartialEq>(
    s: &str,
    item: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    for t in s.split(',').map(str::trim) {
        if t.is_empty() {
            return Err(format!("`{s}`: an empty item in the list"));
        }
        let v = item(t)?;
        if out.contains(&v) {
            return Err(format!("`{t}` is named twice"));
        }
        out.push(v);
    }
    Ok(out)
}

/// `--files 2500` / `files = [2500, 25000]`: the data set stated by its file count, one
/// or a series; each is the profile at the scale that holds about that many files.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCounts(pub Vec<u64>);

impl Setting for FileCounts {
    const WHAT: &'static str = "files";
    fn parse(s: &str) -> Result<Self, String> {
        distinct(s, |t| match t.parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("`{t}`: use a whole number of files above 0")),
        })
        .map(FileCounts)
    }
}

/// `--data 40G` / `data = "40G"` (or a list): the data set stated by its total bytes; each
/// is the profile at the scale whose expected total is about that.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSizes(pub Vec<u64>);

impl Setting for DataSizes {
    const WHAT: &'static str = "data";
    fn parse(s: &str) -> Result<Self, String> {
        distinct(s, super::size::parse_size).map(DataSizes)
    }
}

/// `--file-size 4K` / `file_size = "4K"`: every generated file exactly this size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSize(pub u64);

impl Setting for FileSize {
    const WHAT: &'static str = "file_size";
    fn parse(s: &str) -> Result<Self, String> {
        let min = crate::dataset::profile::MIN_FILE_SIZE;
        match super::size::parse_whole_size(s)? {
            b if b < min => Err(format!("`{s}`: files are at least {min} bytes")),
            b => Ok(FileSize(b)),
        }
    }
}

/// `--timeout` / `timeout = 600`: a positive number of seconds per measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout(pub Duration);

impl Setting for Timeout {
    const WHAT: &'static str = "timeout";
    fn parse(s: &str) -> Result<Self, String> {
        number(s)
            .ok()
            .and_then(|v| Duration::try_from_secs_f64(v).ok())
            .filter(|d| !d.is_zero())
            .map(Timeout)
            .ok_or_else(|| "use a positive number of seconds".into())
    }
}

/// `--margin` / `margin = 5`: a percentage strictly between 0 and 100.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Margin(pub f64);

impl Setting for Margin {
    const WHAT: &'static str = "margin";
    fn parse(s: &str) -> Result<Self, String> {
        let v = number(s)?;
        if v.is_finite() && v > 0.0 && v < 100.0 {
            Ok(Margin(v))
        } else {
            Err("use a percentage greater than 0 and less than 100".into())
        }
    }
}

/// `--age PCT` / `age = 60`: a fill level above 0 and below [`super::MAX_AGE_PCT`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgePct(pub f64);

impl Setting for AgePct {
    const WHAT: &'static str = "age";
    fn parse(s: &str) -> Result<Self, String> {
        let v = number(s)?;
        if !(v.is_finite() && v > 0.0 && v < super::MAX_AGE_PCT) {
            return Err(format!(
                "use a fill level in % above 0 and below {}",
                super::MAX_AGE_PCT
            ));
        }
        Ok(AgePct(v))
    }
}

/// `--age-free-extent 64K` / `age_free_extent = "64K"`: the size of the pieces aging cuts
/// the free space into, from one 4 KiB block to 64 MiB (a larger piece is no longer
/// fragmentation a file of the data sets would meet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgeFreeExtent(pub u64);

impl Setting for AgeFreeExtent {
    const WHAT: &'static str = "age_free_extent";
    fn parse(s: &str) -> Result<Self, String> {
        let v = super::size::parse_size(s)?;
        if !(4096..=64 << 20).contains(&v) {
            return Err("use a size from 4K to 64M".into());
        }
        Ok(AgeFreeExtent(v))
    }
}

/// A fraction from 0 to 1, or the reason it is not one.
fn fraction(s: &str) -> Result<f64, String> {
    match number(s)? {
        v if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("use a fraction from 0 to 1".into()),
    }
}

/// `--compressibility` / `compressibility = 0.5`: the share of generated content that
/// compresses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Compressibility(pub f64);

impl Setting for Compressibility {
    const WHAT: &'static str = "compressibility";
    fn parse(s: &str) -> Result<Self, String> {
        fraction(s).map(Compressibility)
    }
}

/// `duplicate_fraction = 0.1`: the share of generated files planted as duplicates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuplicateFraction(pub f64);

impl Setting for DuplicateFraction {
    const WHAT: &'static str = "duplicate_fraction";
    fn parse(s: &str) -> Result<Self, String> {
        fraction(s).map(DuplicateFraction)
    }
}

/// `--content` / `content = "typed"`: what generated files hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Content(pub ContentMix);

impl Setting for Content {
    const WHAT: &'static str = "content";
    fn parse(s: &str) -> Result<Self, String> {
        ContentMix::parse(s)
            .map(Content)
            .ok_or_else(|| "valid: typed (bytes by file type), random".into())
    }
}

/// `--profile a,b` / `profile = "small"` or `["small", "medium"]`: distinct profiles, at
/// least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profiles(pub Vec<Profile>);

impl Setting for Profiles {
    const WHAT: &'static str = "profile";
    fn parse(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Err("name at least one profile".into());
        }
        let mut out = Vec::new();
        for p in s.split(',').map(str::trim) {
            let profile: Profile = serde_json::from_value(serde_json::Value::String(p.into()))
                .map_err(|_| {
                    format!("`{p}`: use small, medium, large, huge, bigfolder or smallfolder")
                })?;
            if out.contains(&profile) {
                return Err(format!("`{p}` is named twice"));
            }
            out.push(profile);
        }
        Ok(Profiles(out))
    }
}

/// `--fs-size 16G` / `fs_size = "16G"`: the size of every loop image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSize(pub u64);

impl Setting for ImageSize {
    const WHAT: &'static str = "fs_size";
    fn parse(s: &str) -> Result<Self, String> {
        super::size::parse_size(s).map(ImageSize)
    }
}

/// `--rank-dirs own|shared` / `rank_dirs = "shared"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankDirsChoice(pub super::RankDirs);

impl RankDirsChoice {
    /// The flag's parser: lists the two modes in `--help` and in its error.
    pub fn flag() -> impl clap::builder::TypedValueParser<Value = RankDirsChoice> {
        use clap::builder::TypedValueParser;
        clap::builder::PossibleValuesParser::new(["own", "shared"]).try_map(|s| s.parse())
    }
}

impl Setting for RankDirsChoice {
    const WHAT: &'static str = "rank_dirs";
    fn parse(s: &str) -> Result<Self, String> {
        super::RankDirs::parse(s)
            .map(RankDirsChoice)
            .ok_or_else(|| {
                "use own (each MPI rank in its own subtree) or shared (all ranks in one tree)"
                    .into()
            })
    }
}

/// `--in-turn on|off` / `in_turn = "off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InTurnChoice(pub bool);

impl InTurnChoice {
    /// The flag's parser: lists the two choices in `--help` and in its error.
    pub fn flag() -> impl clap::builder::TypedValueParser<Value = InTurnChoice> {
        use clap::builder::TypedValueParser;
        clap::builder::PossibleValuesParser::new(["on", "off"]).try_map(|s| s.parse())
    }
}

impl Setting for InTurnChoice {
    const WHAT: &'static str = "in_turn";
    fn parse(s: &str) -> Result<Self, String> {
        match s.trim() {
            "on" => Ok(InTurnChoice(true)),
            "off" => Ok(InTurnChoice(false)),
            _ => Err("use on (read-only points measured in turn with the baseline) or off".into()),
        }
    }
}

/// `--cpus auto|all` / `cpus = "all"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpusChoice(pub super::cpus::Cpus);

impl CpusChoice {
    /// The flag's parser: lists the two choices in `--help` and in its error.
    pub fn flag() -> impl clap::builder::TypedValueParser<Value = CpusChoice> {
        use clap::builder::TypedValueParser;
        clap::builder::PossibleValuesParser::new(["auto", "all"]).try_map(|s| s.parse())
    }
}

impl Setting for CpusChoice {
    const WHAT: &'static str = "cpus";
    fn parse(s: &str) -> Result<Self, String> {
        super::cpus::Cpus::parse(s).map(CpusChoice).ok_or_else(|| {
            "use auto (a cell of fewer threads than CPUs on CPUs of its own) or all (anywhere)"
                .into()
        })
    }
}

/// `--max-steal PCT|off` / `max_steal = 20`: the share of the CPU (%, above 0 and up to
/// 100) a hypervisor may keep from a measured phase before it is measured again; `off`
/// (`None`) keeps every measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxSteal(pub Option<f64>);

impl Setting for MaxSteal {
    const WHAT: &'static str = "max_steal";
    fn parse(s: &str) -> Result<Self, String> {
        if s.trim() == "off" {
            return Ok(MaxSteal(None));
        }
        match number(s) {
            Ok(v) if v.is_finite() && v > 0.0 && v <= 100.0 => Ok(MaxSteal(Some(v))),
            _ => Err("use a percentage above 0 and up to 100, or off".into()),
        }
    }
}

setting!(
    MaxSteal,
    RunCount,
    ThreadList,
    Budget,
    PhaseFloor,
    Scales,
    FileCounts,
    DataSizes,
    FileSize,
    Timeout,
    Margin,
    AgePct,
    AgeFreeExtent,
    Compressibility,
    DuplicateFraction,
    Content,
    Profiles,
    ImageSize,
    RankDirsChoice,
    CpusChoice,
    InTurnChoice,
);

/// `--dataset dir:PATH`: your own directory as the data set (in a plan file, `[dataset]`
/// `dir = PATH`).
pub fn dataset_dir(s: &str) -> Result<PathBuf, String> {
    s.strip_prefix("dir:")
        .map(PathBuf::from)
        .ok_or_else(|| "--dataset takes dir:PATH (your own directory as the data set)".into())
}

#[cfg(test)]
mod tests;
