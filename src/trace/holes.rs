//! An initial file's holes: where its data lies, as `SEEK_DATA` and `SEEK_HOLE` found it when
//! record took the initial state. A program that walks a file's data (`cp --sparse`, `tar -S`,
//! a backup tool) asks the file system where the data is; laid down whole, the replay's file
//! would answer otherwise (`SEEK_DATA` past the last data finds data where the program's found
//! ENXIO). A file with no hole keeps nothing, so traces of ordinary files stay as small as
//! before; a file with more than [`MAX_DATA_RANGES`] pieces of data keeps the first ones and
//! the rest of it as one piece of data, so one entry's line stays bounded.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The most pieces of data one initial file keeps: 256 pieces of `[offset, length]` take
/// at most about 11 KB of its line (`bounds::MAX_LINE` is 4 MiB).
pub const MAX_DATA_RANGES: usize = 256;

/// One piece of a file's data: `[offset, length]` in bytes.
pub type DataRange = [u64; 2];

/// Where a file's data lies: `None` when it has no hole (the whole file is data, what a
/// trace without the field says too), else its pieces of data in order, and whether more
/// than [`MAX_DATA_RANGES`] were found (the last piece then runs to the file's end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub data: Vec<DataRange>,
    pub cut: bool,
}

/// The data of the file at `path` of `meta`, when it has a hole. A file that takes as many
/// blocks as its size has none and is not opened (the check `cp` makes first); one that
/// cannot be opened or sought is kept whole, as before holes were kept.
pub fn find(path: &Path, meta: &std::fs::Metadata) -> Option<Found> {
    let size = meta.len();
    if size == 0 || meta.blocks().saturating_mul(512) >= size {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let found = walk(&file, size).ok()?;
    (found.data != [[0, size]]).then_some(found)
}

/// `SEEK_DATA` and `SEEK_HOLE` from the start to `size`.
fn walk(file: &std::fs::File, size: u64) -> rustix::io::Result<Found> {
    use rustix::fs::{seek, SeekFrom};
    let mut data = Vec::new();
    let mut at = 0u64;
    while at < size {
        let start = match seek(file, SeekFrom::Data(at)) {
            Ok(p) => p.min(size),
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(e),
        };
        if start >= size {
            break;
        }
        if data.len() + 1 == MAX_DATA_RANGES {
            data.push([start, size - start]);
            let cut = seek(file, SeekFrom::Hole(start))?.min(size) < size;
            return Ok(Found { data, cut });
        }
        let end = seek(file, SeekFrom::Hole(start))?.min(size);
        data.push([start, end - start]);
        at = end;
    }
    Ok(Found { data, cut: false })
}

/// Why an initial entry's `data` cannot be a file's: more pieces than kept, a piece that is
/// empty, out of order or overlapping the one before, or one that ends past the file's
/// `size` (every offset a trace holds stays within the file it applies to).
pub fn check(size: Option<u64>, data: &[DataRange]) -> Result<(), String> {
    let Some(size) = size else {
        return Err("`data` on an entry that is not a file with a `size`".into());
    };
    if data.len() > MAX_DATA_RANGES {
        return Err(format!(
            "`data` holds {} pieces: at most {MAX_DATA_RANGES} are kept",
            data.len()
        ));
    }
    let mut end = 0u64;
    for &[off, len] in data {
        if len == 0 || off < end {
            return Err(format!(
                "`data` piece [{off}, {len}]: empty, or before the end of the one before ({end})"
            ));
        }
        end = match off.checked_add(len) {
            Some(e) if e <= size => e,
            _ => {
                return Err(format!(
                    "`data` piece [{off}, {len}]: ends past the file's `size` {size}"
                ))
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    /// A sparse file's data is found piece by piece, a whole file's not at all, and a file
    /// of more pieces than kept ends in one piece to its end, said to be cut.
    #[test]
    fn a_sparse_file_s_data_is_found_and_a_whole_file_keeps_none() {
        let dir = std::env::temp_dir().join(format!("fsarena-holes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sparse = dir.join("sparse");
        let f = std::fs::File::create(&sparse).unwrap();
        f.set_len(32 << 20).unwrap();
        f.write_all_at(&[1u8; 1 << 20], 8 << 20).unwrap();
        f.sync_all().unwrap();
        let whole = dir.join("whole");
        std::fs::write(&whole, vec![1u8; 1 << 20]).unwrap();
        let many = dir.join("many");
        let m = std::fs::File::create(&many).unwrap();
        let pieces = MAX_DATA_RANGES as u64 + 10;
        m.set_len(pieces * (1 << 20)).unwrap();
        for i in 0..pieces {
            m.write_all_at(&[1u8; 4096], i * (1 << 20)).unwrap();
        }
        m.sync_all().unwrap();
        let find_at = |p: &Path| find(p, &std::fs::metadata(p).unwrap());
        let (s, w, n) = (find_at(&sparse), find_at(&whole), find_at(&many));
        let _ = std::fs::remove_dir_all(&dir);
        // tmpfs and ext4 both keep holes; a file system that keeps none finds no hole.
        if let Some(s) = s {
            assert_eq!(s.data, [[8 << 20, 1 << 20]]);
            assert!(!s.cut);
            let n = n.unwrap();
            assert_eq!(n.data.len(), MAX_DATA_RANGES);
            assert!(n.cut);
            let last = n.data[MAX_DATA_RANGES - 1];
            assert_eq!(last[0] + last[1], pieces * (1 << 20));
        }
        assert_eq!(w, None);
    }

    #[test]
    fn pieces_past_the_file_out_of_order_or_too_many_are_refused() {
        assert!(check(Some(100), &[[0, 10], [50, 50]]).is_ok());
        assert!(check(Some(100), &[]).is_ok());
        for (size, bad, says) in [
            (Some(100), vec![[50, 51]], "ends past the file's `size` 100"),
            (Some(100), vec![[10, 0]], "empty"),
            (Some(100), vec![[50, 10], [40, 5]], "before the end"),
            (Some(100), vec![[u64::MAX, 2]], "ends past"),
            (None, vec![[0, 1]], "not a file"),
            (Some(1 << 20), vec![[0, 1]; MAX_DATA_RANGES + 1], "at most"),
        ] {
            let e = check(size, &bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
