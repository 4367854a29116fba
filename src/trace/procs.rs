//! What each recorded thread's paths are relative to: its working directory and its
//! descriptor table. strace's `-y` prints the path of almost every descriptor (and
//! `AT_FDCWD`'s directory) itself; this is what a line without one falls back on. Threads
//! that share a table (`CLONE_FILES`, `CLONE_THREAD`) or a directory (`CLONE_FS`) point at
//! one; a fork gets a copy of its parent's.

use std::collections::HashMap;

use super::strace::{Fd, AT_FDCWD};

/// The tables of every recorded thread.
#[derive(Debug)]
pub struct Procs {
    /// A thread's (directory index, table index).
    threads: HashMap<u32, (usize, usize)>,
    cwds: Vec<String>,
    tables: Vec<HashMap<i32, String>>,
    /// Where the command started: a thread first seen before its parent's fork returned
    /// starts here.
    start_cwd: String,
}

impl Procs {
    pub fn new(start_cwd: &str) -> Procs {
        Procs {
            threads: HashMap::new(),
            cwds: Vec::new(),
            tables: Vec::new(),
            start_cwd: start_cwd.to_string(),
        }
    }

    fn of(&mut self, tid: u32) -> (usize, usize) {
        if let Some(&ids) = self.threads.get(&tid) {
            return ids;
        }
        self.cwds.push(self.start_cwd.clone());
        self.tables.push(HashMap::new());
        let ids = (self.cwds.len() - 1, self.tables.len() - 1);
        self.threads.insert(tid, ids);
        ids
    }

    /// A new thread or process: `share_fs`/`share_files` as its clone flags said.
    pub fn spawn(&mut self, parent: u32, child: u32, share_fs: bool, share_files: bool) {
        if self.threads.contains_key(&child) {
            return;
        }
        let (cwd, table) = self.of(parent);
        let cwd = if share_fs {
            cwd
        } else {
            self.cwds.push(self.cwds[cwd].clone());
            self.cwds.len() - 1
        };
        let table = if share_files {
            table
        } else {
            self.tables.push(self.tables[table].clone());
            self.tables.len() - 1
        };
        self.threads.insert(child, (cwd, table));
    }

    pub fn set_cwd(&mut self, tid: u32, path: String) {
        let (cwd, _) = self.of(tid);
        self.cwds[cwd] = path;
    }

    pub fn set_fd(&mut self, tid: u32, fd: i32, path: String) {
        let (_, table) = self.of(tid);
        self.tables[table].insert(fd, path);
    }

    pub fn close(&mut self, tid: u32, fd: i32) {
        let (_, table) = self.of(tid);
        self.tables[table].remove(&fd);
    }

    /// A descriptor's path: the one `-y` printed (remembered for later lines), else the
    /// table's; `AT_FDCWD` is the working directory.
    pub fn fd_path(&mut self, tid: u32, fd: &Fd) -> Option<String> {
        let (cwd, table) = self.of(tid);
        match (&fd.path, fd.num) {
            (Some(path), AT_FDCWD) => {
                self.cwds[cwd] = path.clone();
                Some(path.clone())
            }
            (Some(path), num) => {
                self.tables[table].insert(num, path.clone());
                Some(path.clone())
            }
            (None, AT_FDCWD) => Some(self.cwds[cwd].clone()),
            (None, num) => self.tables[table].get(&num).cloned(),
        }
    }

    /// `path` as the call named it, made absolute against `dir` (a `*at` call's directory
    /// descriptor; the working directory when `None`), `.` and `..` folded.
    pub fn absolute(&mut self, tid: u32, dir: Option<&Fd>, path: &str) -> Option<String> {
        if path.starts_with('/') {
            return Some(normalize(path));
        }
        let base = match dir {
            Some(fd) => self.fd_path(tid, fd)?,
            None => self.fd_path(
                tid,
                &Fd {
                    num: AT_FDCWD,
                    path: None,
                },
            )?,
        };
        if !base.starts_with('/') {
            return None;
        }
        Some(normalize(&format!("{base}/{path}")))
    }
}

/// An absolute path with `.`, `..` and repeated or trailing `/` folded away (by name, as
/// strace printed it; a `..` through a symlink is taken as written).
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => parts.push(name),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(num: i32, path: Option<&str>) -> Fd {
        Fd {
            num,
            path: path.map(str::to_string),
        }
    }

    #[test]
    fn paths_fold_dots_and_slashes() {
        assert_eq!(normalize("/a/./b//c/../d/"), "/a/b/d");
        assert_eq!(normalize("/.."), "/");
    }

    #[test]
    fn relative_paths_follow_the_thread_s_directory_and_descriptors() {
        let mut procs = Procs::new("/r");
        assert_eq!(procs.absolute(1, None, "a/../b").as_deref(), Some("/r/b"));
        procs.set_cwd(1, "/r/sub".into());
        assert_eq!(procs.absolute(1, None, "x").as_deref(), Some("/r/sub/x"));
        // A -y path is learned: the same number later without one resolves to it.
        let dir = fd(5, Some("/r/d"));
        assert_eq!(
            procs.absolute(1, Some(&dir), "f").as_deref(),
            Some("/r/d/f")
        );
        assert_eq!(
            procs.absolute(1, Some(&fd(5, None)), "g").as_deref(),
            Some("/r/d/g")
        );
        assert_eq!(procs.absolute(1, Some(&fd(9, None)), "g"), None);
    }

    #[test]
    fn threads_share_and_forks_copy() {
        let mut procs = Procs::new("/r");
        procs.set_fd(1, 3, "/r/a".into());
        procs.spawn(1, 2, true, true);
        procs.spawn(1, 3, false, false);
        procs.set_fd(2, 4, "/r/b".into());
        procs.set_cwd(3, "/r/c".into());
        assert_eq!(procs.fd_path(1, &fd(4, None)).as_deref(), Some("/r/b"));
        assert_eq!(procs.fd_path(3, &fd(3, None)).as_deref(), Some("/r/a"));
        assert_eq!(procs.fd_path(3, &fd(4, None)), None);
        assert_eq!(procs.absolute(1, None, "x").as_deref(), Some("/r/x"));
        procs.close(2, 3);
        assert_eq!(procs.fd_path(1, &fd(3, None)), None);
    }
}
