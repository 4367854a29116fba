//! Where this host's PostgreSQL is: Debian installs each major version's server programs in
//! `/usr/lib/postgresql/<major>/bin` (not on `PATH`), so the newest one there is used.

use std::path::{Path, PathBuf};

/// The programs a `pg` cell needs, all from one PostgreSQL installation.
pub const PROGRAMS: [&str; 4] = ["initdb", "postgres", "psql", "pgbench"];

/// A PostgreSQL installation: its `bin` directory and major version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    pub bin: PathBuf,
    pub major: u32,
}

impl Install {
    /// The path of one of its programs.
    pub fn program(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }
}

/// Where Debian puts every installed major version.
pub const DEFAULT_ROOT: &str = "/usr/lib/postgresql";
/// Environment variable naming another directory laid out like [`DEFAULT_ROOT`]
/// (`<major>/bin/{initdb,postgres,psql,pgbench}`): a PostgreSQL built by hand, or a
/// directory without one, which is how the tests see a host where PostgreSQL is missing.
pub const ROOT_ENV: &str = "FSARENA_PG_ROOT";

/// The newest installation under [`DEFAULT_ROOT`] (or `$FSARENA_PG_ROOT`) with every
/// program in [`PROGRAMS`], or the reason there is none, in one line.
pub fn locate() -> Result<Install, String> {
    match std::env::var_os(ROOT_ENV) {
        Some(dir) if !dir.is_empty() => locate_in(Path::new(&dir)),
        _ => locate_in(Path::new(DEFAULT_ROOT)),
    }
}

fn locate_in(base: &Path) -> Result<Install, String> {
    let mut found: Vec<Install> = std::fs::read_dir(base)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let major = e.file_name().to_str()?.parse().ok()?;
                    Some(Install {
                        bin: e.path().join("bin"),
                        major,
                    })
                })
                .filter(|i| PROGRAMS.iter().all(|p| i.program(p).is_file()))
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|i| i.major);
    found.pop().ok_or_else(|| {
        format!(
            "PostgreSQL is not installed ({} with {} not found): install the Debian packages \
             postgresql and postgresql-contrib (./dev deps does)",
            base.join("<version>/bin").display(),
            PROGRAMS.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_complete_installation_wins() {
        let dir = tempfile::tempdir().unwrap();
        assert!(locate_in(dir.path()).unwrap_err().contains("postgresql"));
        for (v, progs) in [
            ("13", &PROGRAMS[..]),
            ("15", &PROGRAMS[..]),
            ("16", &PROGRAMS[..2]),
        ] {
            let bin = dir.path().join(v).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            for p in progs {
                std::fs::write(bin.join(p), "").unwrap();
            }
        }
        let i = locate_in(dir.path()).unwrap();
        assert_eq!((i.major, i.bin.clone()), (15, dir.path().join("15/bin")));
    }
}
