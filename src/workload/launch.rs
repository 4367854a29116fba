//! The `launch` point of `cold-read`: the study timed a program *starting* (exec, mapping its
//! shared libraries, page faults, reading its data), not files being read one by one. So a
//! real program and every shared library `ldd` lists are installed on the target, together
//! with the dynamic loader, and the program is started through the target's loader with the
//! target's library directory from a cold cache, timed to its exit.
//!
//! The program is the SQLite shell (`sqlite3`: six shared libraries): at start-up it walks
//! the application's data with its built-in `fsdir` table and reads every file whole
//! (`length(data)`). Its output — every file's path and size — is checked against the data
//! set's manifest, so it cannot be fast by doing less.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::WorkloadError;
use crate::dataset::Manifest;

/// The program launched, and the Debian package that provides it.
pub const PROGRAM: &str = "sqlite3";
pub const PACKAGE: &str = "sqlite3";

/// What the program runs: every regular file under its working directory, path and size.
const QUERY: &str =
    "SELECT name, length(data) FROM fsdir('.') WHERE (mode & 61440) = 32768 ORDER BY name;";

/// A program installed on the target with its libraries and loader.
#[derive(Debug)]
pub struct Installed {
    pub program: PathBuf,
    pub loader: PathBuf,
    pub libdir: PathBuf,
    /// Bytes of program, libraries and loader.
    pub bytes: u64,
    /// Number of files (program, libraries, loader).
    pub files: usize,
}

/// Where the program lives on this host.
pub fn host_program() -> Result<PathBuf, WorkloadError> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(PROGRAM))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            WorkloadError::Unsupported(format!(
                "{PROGRAM} is missing (install the Debian package {PACKAGE})"
            ))
        })
}

/// The libraries and the loader `ldd` lists for a program: (file name, host path), the
/// loader last. The vDSO (no file) is skipped.
pub fn parse_ldd(text: &str) -> Result<(Vec<(String, PathBuf)>, PathBuf), String> {
    let mut libs = Vec::new();
    let mut loader = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some((name, rest)) = line.split_once("=>") {
            let path = rest.split_whitespace().next().unwrap_or("");
            if path == "not" {
                return Err(format!("a library is missing: {line}"));
            }
            if path.starts_with('/') {
                libs.push((name.trim().to_string(), PathBuf::from(path)));
            }
        } else if let Some(p) = line
            .split_whitespace()
            .next()
            .filter(|p| p.starts_with('/'))
        {
            loader = Some(PathBuf::from(p));
        }
    }
    let loader = loader.ok_or("no dynamic loader in ldd's output (a static program?)")?;
    Ok((libs, loader))
}

fn copy(from: &Path, to: &Path) -> Result<u64, WorkloadError> {
    std::fs::copy(from, to).map_err(|e| {
        WorkloadError::io(
            format!("installing {} as {}", from.display(), to.display()),
            e,
        )
    })
}

/// Installs `program`, its libraries and its loader under `dir` (`bin/`, `lib/`).
pub fn install(program: &Path, dir: &Path) -> Result<Installed, WorkloadError> {
    let out = crate::sys::helper_command("ldd")
        .arg(program)
        .output()
        .map_err(|e| WorkloadError::io("running ldd", e))?;
    if !out.status.success() {
        return Err(WorkloadError::Tool(format!(
            "ldd {} failed: {}",
            program.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let (libs, host_loader) =
        parse_ldd(&String::from_utf8_lossy(&out.stdout)).map_err(WorkloadError::Tool)?;
    let (bin, libdir) = (dir.join("bin"), dir.join("lib"));
    for d in [&bin, &libdir] {
        std::fs::create_dir_all(d)
            .map_err(|e| WorkloadError::io(format!("creating {}", d.display()), e))?;
    }
    let name = |p: &Path| p.file_name().map(|n| n.to_owned()).unwrap_or_default();
    let installed_program = bin.join(name(program));
    let loader = libdir.join(name(&host_loader));
    let mut bytes = copy(program, &installed_program)?;
    bytes += copy(&host_loader, &loader)?;
    for (soname, from) in &libs {
        bytes += copy(from, &libdir.join(soname))?;
    }
    Ok(Installed {
        program: installed_program,
        loader,
        libdir,
        bytes,
        files: libs.len() + 2,
    })
}

impl Installed {
    /// The command that starts the program through the installed loader, with only the
    /// installed libraries (no ld.so cache), in `cwd`, with an empty environment.
    pub fn command(&self, cwd: &Path) -> Command {
        let mut c = Command::new(&self.loader);
        c.arg("--inhibit-cache")
            .arg("--library-path")
            .arg(&self.libdir)
            .arg(&self.program)
            .args(["-batch", "-noheader", "-separator", "|", ":memory:", QUERY])
            .current_dir(cwd)
            .env_clear();
        // A group of its own: a terminal's Ctrl-C reaches fsarena only (issue 39).
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }
}

/// Checks the program's output: one `./PATH|SIZE` line per file of the manifest, no more.
pub fn verify_output(stdout: &str, manifest: &Manifest) -> Result<(), WorkloadError> {
    let want: BTreeMap<&str, u64> = manifest
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.size))
        .collect();
    let mut seen = 0usize;
    for line in stdout.lines() {
        let (name, size) = line
            .rsplit_once('|')
            .ok_or_else(|| WorkloadError::Verify(format!("{PROGRAM} printed `{line}`")))?;
        let name = name.strip_prefix("./").unwrap_or(name);
        let size: u64 = size
            .parse()
            .map_err(|_| WorkloadError::Verify(format!("{PROGRAM} printed `{line}`")))?;
        match want.get(name) {
            Some(&s) if s == size => seen += 1,
            Some(&s) => {
                return Err(WorkloadError::Verify(format!(
                    "{PROGRAM} read {size} bytes of {name}, which holds {s}"
                )))
            }
            None => {
                return Err(WorkloadError::Verify(format!(
                    "{PROGRAM} found {name}, which the data set does not hold"
                )))
            }
        }
    }
    if seen == want.len() {
        Ok(())
    } else {
        Err(WorkloadError::Verify(format!(
            "{PROGRAM} listed {seen} files of {}",
            want.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_libraries_and_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffc)\n\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x7f1)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f2)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f3)\n";
        let (libs, loader) = parse_ldd(text).unwrap();
        assert_eq!(libs.len(), 2);
        assert_eq!(libs[0].0, "libz.so.1");
        assert_eq!(loader, PathBuf::from("/lib64/ld-linux-x86-64.so.2"));
        assert!(parse_ldd("\tlibfoo.so => not found\n").is_err());
        assert!(parse_ldd("\tnot a dynamic executable\n").is_err());
    }

    fn manifest() -> Manifest {
        Manifest {
            files: ["a/x", "b"]
                .iter()
                .enumerate()
                .map(|(i, p)| crate::dataset::FileEntry {
                    path: p.to_string(),
                    size: 10 * (i as u64 + 1),
                    content: 0,
                    hash: 0,
                })
                .collect(),
            ..Manifest::default()
        }
    }

    #[test]
    fn output_must_list_every_file_with_its_size() {
        let m = manifest();
        assert!(verify_output("./a/x|10\n./b|20\n", &m).is_ok());
        assert!(verify_output("./a/x|10\n", &m).is_err(), "a file missing");
        assert!(
            verify_output("./a/x|10\n./b|19\n", &m).is_err(),
            "short read"
        );
        assert!(
            verify_output("./a/x|10\n./b|20\n./c|1\n", &m).is_err(),
            "extra"
        );
        assert!(verify_output("garbage\n", &m).is_err());
    }
}
