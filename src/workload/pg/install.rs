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

/// The newest installation under `/usr/lib/postgresql` with every program in [`PROGRAMS`],
/// or the reason there is none, in one line.
pub fn locate() -> Result<Install, String> {
    locate_in(Path::new("/usr/lib/postgresql"))
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
