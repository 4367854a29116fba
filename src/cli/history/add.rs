//! `fsarena history add DIR…`: results directories made before (or elsewhere, or whose run
//! could not register) imported into the history. A directory with no results file is
//! searched for the results directories below it (`bench/results`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;

use super::super::exit::{EXIT_FAILED, EXIT_OK};
use super::super::output::emit;
use super::place::{parse_label, Place};
use crate::history::capture::capture;
use crate::results::store::FILE_NAME;

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Results directories, or directories holding them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// A label given to every run added (repeatable).
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
    pub labels: Vec<(String, String)>,
    #[command(flatten)]
    pub place: Place,
}

/// How deep below a named directory results directories are looked for.
const DEPTH: usize = 4;

pub fn run(a: AddArgs) -> Result<i32> {
    let mut found = Vec::new();
    for d in &a.dirs {
        if !d.is_dir() {
            bail!("{}: no such directory", d.display());
        }
        let before = found.len();
        results_dirs(d, DEPTH, &mut found);
        if found.len() == before {
            bail!("{}: holds no {FILE_NAME}", d.display());
        }
    }
    let mut store = a.place.open()?;
    let labels: BTreeMap<String, String> = a.labels.iter().cloned().collect();
    let (mut added, mut updated, mut failed) = (0, 0, 0);
    let mut text = String::new();
    for d in &found {
        match capture(d, &labels).and_then(|c| Ok((c.run.id.clone(), store.add(&c)?))) {
            Ok((id, true)) => {
                added += 1;
                text.push_str(&format!("added {id} {}\n", d.display()));
            }
            Ok((id, false)) => {
                updated += 1;
                text.push_str(&format!("updated {id} {}\n", d.display()));
            }
            Err(e) => {
                failed += 1;
                eprintln!("fsarena: not added: {e}");
            }
        }
    }
    text.push_str(&format!(
        "{added} added, {updated} already kept (updated), {failed} not added; history: {}\n",
        store.location()
    ));
    emit(&text)?;
    Ok(if failed == 0 { EXIT_OK } else { EXIT_FAILED })
}

/// `dir` when it holds a results file, else the results directories below it (sorted).
fn results_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if dir.join(FILE_NAME).is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    if depth == 0 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    subs.sort();
    for s in subs {
        results_dirs(&s, depth - 1, out);
    }
}
