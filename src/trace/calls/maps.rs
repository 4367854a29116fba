//! Shared, writable mappings of files under the root: strace sees the `mmap` and the
//! `msync`, never the stores between them. A range a program `msync`s is known to have
//! reached the file (with its length), so it becomes a trace record; a mapping unmapped (or
//! left at exit) without one is I/O the trace cannot hold, and is counted so record and
//! every replay say so. Mappings are keyed by address across all processes: two processes
//! mapping at the same address at once would be confused, which the counts make visible.

use std::collections::BTreeMap;

/// One shared, writable mapping of a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// The file's absolute path when it was mapped.
    pub path: String,
    /// The file offset the mapping starts at.
    pub offset: u64,
    pub len: u64,
    /// Whether any part of it was `msync`ed.
    pub synced: bool,
}

/// The shared, writable file mappings alive now, by start address.
#[derive(Debug, Default)]
pub struct Maps {
    live: BTreeMap<u64, Mapping>,
    /// Mappings that ended (unmapped) without a single `msync`.
    pub ended_unsynced: u64,
}

/// The range of a file an `msync` of `[addr, addr + len)` names.
#[derive(Debug, Clone, PartialEq)]
pub struct Synced {
    pub path: String,
    pub offset: u64,
    pub len: u64,
}

impl Maps {
    pub fn map(&mut self, addr: u64, mapping: Mapping) {
        self.live.insert(addr, mapping);
    }

    /// The file range under `[addr, addr + len)`, cut at the mapping's end; `None` when no
    /// shared file mapping holds `addr` (an anonymous or private one: nothing reaches a file).
    pub fn msync(&mut self, addr: u64, len: u64) -> Option<Synced> {
        let (&start, m) = self.live.range_mut(..=addr).next_back()?;
        let into = addr - start;
        if into >= m.len {
            return None;
        }
        m.synced = true;
        Some(Synced {
            path: m.path.clone(),
            offset: m.offset + into,
            len: len.min(m.len - into),
        })
    }

    /// Forgets the mappings that start inside `[addr, addr + len)`, counting those never
    /// synced.
    pub fn unmap(&mut self, addr: u64, len: u64) {
        let gone: Vec<u64> = self
            .live
            .range(addr..addr.saturating_add(len))
            .map(|(a, _)| *a)
            .collect();
        for a in gone {
            if let Some(m) = self.live.remove(&a) {
                self.ended_unsynced += u64::from(!m.synced);
            }
        }
    }

    /// Mappings never synced: those unmapped and those still mapped when the program ended.
    pub fn never_synced(&self) -> u64 {
        self.ended_unsynced + self.live.values().filter(|m| !m.synced).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(path: &str) -> Mapping {
        Mapping {
            path: path.into(),
            offset: 8192,
            len: 16384,
            synced: false,
        }
    }

    #[test]
    fn an_msync_names_the_file_range_under_it_cut_at_the_mapping_end() {
        let mut maps = Maps::default();
        maps.map(0x1000_0000, mapping("/r/db-shm"));
        let s = maps.msync(0x1000_1000, 1 << 20).unwrap();
        assert_eq!(
            (s.path.as_str(), s.offset, s.len),
            ("/r/db-shm", 12288, 12288)
        );
        assert_eq!(maps.msync(0x2000_0000, 4096), None);
        assert_eq!(maps.never_synced(), 0);
    }

    #[test]
    fn mappings_never_synced_are_counted_unmapped_or_left() {
        let mut maps = Maps::default();
        maps.map(0x1000_0000, mapping("/r/a"));
        maps.map(0x2000_0000, mapping("/r/b"));
        maps.map(0x3000_0000, mapping("/r/c"));
        maps.msync(0x3000_0000, 4096);
        maps.unmap(0x1000_0000, 16384);
        assert_eq!(maps.ended_unsynced, 1);
        // b is still mapped at the end, c was synced.
        assert_eq!(maps.never_synced(), 2);
    }
}
