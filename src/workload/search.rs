//! `search`: find files the way `find`/`fd` do, by a glob on the name (`name` point: no
//! `statx`, `d_type` suffices) and by a size range (`size` point: one `statx` per entry,
//! asking for the size only). Runs on a warm cache (one unmeasured walk first); `scan cold`
//! covers the cold case.
//!
//! Options (`[workload.search]`): `pattern` (glob on the file name, default per profile,
//! e.g. `*.jpg` for `small`), `min_size` and `max_size` in bytes (default 2× to 16× the
//! profile's average file size, after scaling).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use serde::Deserialize;
use serde_json::json;

use super::contract::Workload;
use super::ctx::Ctx;
use super::error::WorkloadError;
use super::harness::Harness;
use super::options;
use super::outcome::Outcome;
use super::passes::measure_passes;
use super::point::Point;
use super::prepare::{dataset_error, prepare};
use super::spec::{StartState, WorkloadSpec};
use crate::dataset::{profile, Manifest};
use crate::fsops::ext_of;
use crate::fsops::{self, Dir, Kind, Need, WalkOptions};

pub struct Search;

/// What to look for.
#[derive(Debug, Clone, PartialEq)]
pub enum Query {
    /// A glob on the file name (not the path): `*`, `?`, `[a-z]`.
    Name(String),
    /// Regular files with `min <= size <= max`.
    Size { min: u64, max: u64 },
}

impl Workload for Search {
    fn spec(&self) -> WorkloadSpec {
        WorkloadSpec {
            start: StartState::DataSet,
            ..WorkloadSpec::new("search", "find files by name glob (no stat) and by size range (stat every entry); warm cache")
        }
    }
    /// Both points are warm, read-only walks that warm the tree first: the size search
    /// may follow the name search on its file system.
    fn follows_on_same_fs(&self, done: &Point, next: &Point) -> bool {
        done.variant == "name" && next.variant == "size"
    }

    /// Read-only passes over a tree laid down the same way on any file system.
    fn in_turn(&self, _point: &Point) -> bool {
        true
    }
    fn points(&self, ctx: &Ctx) -> Result<Vec<Point>, WorkloadError> {
        let (pattern, min, max) = resolve(ctx, None)?;
        Ok(vec![
            Point {
                variant: "name".into(),
                params: [("pattern".to_string(), json!(pattern))].into(),
            },
            Point {
                variant: "size".into(),
                params: [
                    ("min_size".to_string(), json!(min)),
                    ("max_size".to_string(), json!(max)),
                ]
                .into(),
            },
        ])
    }

    fn check_options(&self, table: &toml::Table) -> Result<(), String> {
        SearchOptions::from_table(table).map(drop)
    }

    fn run(
        &self,
        ctx: &Ctx,
        point: &Point,
        harness: &mut dyn Harness,
    ) -> Result<Outcome, WorkloadError> {
        let manifest = prepare(ctx)?;
        let (pattern, min, max) = resolve(ctx, Some(&manifest))?;
        let query = match point.variant.as_str() {
            "name" => Query::Name(pattern),
            "size" => Query::Size { min, max },
            other => {
                return Err(WorkloadError::Option(format!(
                    "unknown search variant {other:?}"
                )))
            }
        };
        // Warm-up walk, unmeasured, so both points see the same (warm) cache.
        search(ctx.root, ctx.threads, &query, ctx)?;
        let mut found: [Found; 2] = Default::default();
        // Warm and read-only: the pass repeats until the phase reaches the floor.
        let mut outcome = measure_passes(ctx, harness, &mut |tree| {
            let t0 = Instant::now();
            let f = search(ctx.root_of(tree), ctx.threads, &query, ctx)?;
            let mut out = Outcome {
                seconds: t0.elapsed().as_secs_f64(),
                files: f.examined,
                ..Outcome::default()
            };
            out.metrics.insert("matches".into(), f.paths.len() as f64);
            out.metrics.insert("stat_calls".into(), f.stat_calls as f64);
            found[tree.index()] = f;
            Ok(out)
        })?;
        let expected = expected(&manifest, &query)?;
        for tree in ctx.trees() {
            verify(&found[tree.index()].paths, &expected)?;
        }
        outcome.notes.push(format!("warm cache; query {query:?}"));
        Ok(outcome)
    }
}

/// The search result.
#[derive(Debug, Clone, Default)]
pub struct Found {
    /// Matching files, relative, sorted by path bytes.
    pub paths: Vec<String>,
    /// Regular files looked at.
    pub examined: u64,
    pub stat_calls: u64,
}

fn glob(pattern: &str) -> Result<glob::Pattern, WorkloadError> {
    glob::Pattern::new(pattern)
        .map_err(|e| WorkloadError::Option(format!("search pattern {pattern:?}: {e}")))
}

const GLOB_OPTIONS: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// Runs `query` over the tree at `root`. Allocates only for matches.
pub fn search(
    root: &Path,
    threads: usize,
    query: &Query,
    ctx: &Ctx,
) -> Result<Found, WorkloadError> {
    let pat = match query {
        Query::Name(p) => Some(glob(p)?),
        Query::Size { .. } => None,
    };
    let need = if pat.is_some() {
        Need::NONE
    } else {
        Need::SIZE
    };
    let opts = WalkOptions::new(threads, need);
    let (stats, parts) =
        fsops::walk_with(root, &opts, Vec::new, |out: &mut Vec<String>, d: &Dir| {
            ctx.check()?;
            for e in d.entries().filter(|e| e.kind == Kind::File) {
                let hit = match (&pat, query) {
                    (Some(p), _) => std::str::from_utf8(e.name_bytes())
                        .is_ok_and(|n| p.matches_with(n, GLOB_OPTIONS)),
                    (None, Query::Size { min, max }) => (*min..=*max).contains(&e.meta.size),
                    (None, Query::Name(_)) => false,
                };
                if hit {
                    out.push(d.path_of(e.name).to_string_lossy().into_owned());
                }
            }
            Ok::<(), WorkloadError>(())
        })?;
    let mut paths: Vec<String> = parts.into_iter().flatten().collect();
    paths.sort_unstable();
    Ok(Found {
        paths,
        examined: stats.files,
        stat_calls: stats.stat_calls,
    })
}

/// The manifest's answer to `query`, sorted.
pub fn expected(manifest: &Manifest, query: &Query) -> Result<Vec<String>, WorkloadError> {
    let pat = match query {
        Query::Name(p) => Some(glob(p)?),
        Query::Size { .. } => None,
    };
    let mut v: Vec<String> = manifest
        .files
        .iter()
        .filter(|f| match (&pat, query) {
            (Some(p), _) => {
                let name = f.path.rsplit_once('/').map_or(f.path.as_str(), |(_, n)| n);
                p.matches_with(name, GLOB_OPTIONS)
            }
            (None, Query::Size { min, max }) => (*min..=*max).contains(&f.size),
            (None, Query::Name(_)) => false,
        })
        .map(|f| f.path.clone())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Checks a search result against the expected answer, exactly.
pub fn verify(found: &[String], expected: &[String]) -> Result<(), WorkloadError> {
    if found == expected {
        return Ok(());
    }
    let missing: Vec<&String> = expected
        .iter()
        .filter(|p| !found.contains(p))
        .take(5)
        .collect();
    let extra: Vec<&String> = found
        .iter()
        .filter(|p| !expected.contains(p))
        .take(5)
        .collect();
    Err(WorkloadError::Verify(format!(
        "search found {} files, expected {}; missing e.g. {missing:?}, unexpected e.g. {extra:?}",
        found.len(),
        expected.len()
    )))
}

/// `[workload.search]`: each key overrides its default (see [`resolve`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchOptions {
    /// Glob on the file name.
    pub pattern: Option<String>,
    /// Smallest size of the `size` point, in bytes.
    pub min_size: Option<u64>,
    /// Largest size of the `size` point, in bytes.
    pub max_size: Option<u64>,
}

impl SearchOptions {
    /// Parses and checks the table: the pattern must be a glob, and a size range given in
    /// full must not be upside down. (A bound against its default is checked in
    /// [`resolve`], which knows the data set.)
    pub fn from_table(table: &toml::Table) -> Result<SearchOptions, String> {
        let o: SearchOptions = options::parse("search", table)?;
        if let Some(p) = &o.pattern {
            glob(p).map_err(|e| format!("[workload.search]: {}", option_text(e)))?;
        }
        if let (Some(min), Some(max)) = (o.min_size, o.max_size) {
            check_range(min, max).map_err(|e| format!("[workload.search]: {}", option_text(e)))?;
        }
        Ok(o)
    }
}

fn option_text(e: WorkloadError) -> String {
    match e {
        WorkloadError::Option(msg) => msg,
        other => other.to_string(),
    }
}

fn check_range(min: u64, max: u64) -> Result<(), WorkloadError> {
    if min > max {
        return Err(WorkloadError::Option(format!(
            "search.min_size ({min}) is above search.max_size ({max})"
        )));
    }
    Ok(())
}

/// The pattern and size range from the options, or the defaults: per profile for generated
/// data sets; for a `source_dir`, the most common extension and 2×–16× the mean size
/// (these need the manifest, so `points` shows placeholders until it exists).
fn resolve(ctx: &Ctx, manifest: Option<&Manifest>) -> Result<(String, u64, u64), WorkloadError> {
    let opts = SearchOptions::from_table(ctx.options).map_err(WorkloadError::Option)?;
    let (pattern, min, max) = match (&ctx.dataset.source_dir, manifest) {
        (None, _) => {
            let shape = profile::scaled_shape(ctx.dataset.profile, ctx.dataset.scale)
                .map_err(dataset_error)?;
            let (min, max) = profile::default_search_sizes(ctx.dataset.profile, ctx.dataset.scale)
                .map_err(dataset_error)?;
            (shape.search_pattern.to_string(), min, max)
        }
        (Some(_), Some(m)) => source_defaults(m),
        (Some(_), None) => ("*".to_string(), 0, u64::MAX),
    };
    let pattern = opts.pattern.unwrap_or(pattern);
    let min = opts.min_size.unwrap_or(min);
    let max = opts.max_size.unwrap_or(max);
    check_range(min, max)?;
    Ok((pattern, min, max))
}

fn source_defaults(m: &Manifest) -> (String, u64, u64) {
    let mut counts: BTreeMap<&[u8], usize> = BTreeMap::new();
    for f in &m.files {
        if let Some(ext) = ext_of(
            f.path
                .rsplit_once('/')
                .map_or(f.path.as_str(), |(_, n)| n)
                .as_bytes(),
        ) {
            *counts.entry(ext).or_default() += 1;
        }
    }
    let pattern = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map_or("*".to_string(), |(e, _)| {
            format!("*.{}", String::from_utf8_lossy(e))
        });
    let mean = m.total_bytes() / (m.files.len() as u64).max(1);
    (pattern, 2 * mean, 16 * mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(src: &str) -> Result<(), String> {
        Search.check_options(&src.parse::<toml::Table>().expect("test table"))
    }

    #[test]
    fn options_are_checked_before_anything_runs() {
        check("").unwrap();
        check("pattern = \"*.rs\"\nmin_size = 1\nmax_size = 10").unwrap();
        for bad in [
            "pattern = \"[\"",
            "pattern = 3",
            "min_size = 10\nmax_size = 5",
            "min_size = -1",
            "max_size = 1.5",
        ] {
            let e = check(bad).unwrap_err();
            assert!(e.starts_with("[workload.search]: "), "{bad}: {e}");
        }
        let e = check("patern = \"*\"").unwrap_err();
        assert!(e.contains("valid: pattern, min_size, max_size"), "{e}");
    }
}
