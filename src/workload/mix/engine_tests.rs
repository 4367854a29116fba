use super::*;
use crate::dataset::{materialize, DatasetSpec};
use crate::workload::mix::set::initial_segments;
use crate::workload::mix::spec::parse;
use crate::workload::{dirfd::open_dir, verify};

/// A laid-down working set in a temporary directory, ready for the engine.
struct Bench {
    dir: tempfile::TempDir,
    spec: MixSpec,
    data: DatasetSpec,
    set: WorkingSet,
    states: Vec<Option<FileState>>,
}

fn bench(mix: &str, seed: u64) -> Bench {
    let spec = parse("mix.t", &mix.parse::<toml::Table>().expect("toml")).expect("mix");
    let data = DatasetSpec {
        seed,
        ..DatasetSpec::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let set = WorkingSet::new(&spec, &data);
    let mut states = set.initial(&spec, seed);
    let m = set.manifest(&data, &states);
    materialize(&data, &m, dir.path(), 2).expect("lay down");
    initial_segments(&set, &mut states, &m);
    Bench {
        dir,
        spec,
        data,
        set,
        states,
    }
}

impl Bench {
    fn run(&mut self, threads: usize) -> Result<Tally, WorkloadError> {
        let root = open_dir(self.dir.path())?;
        let check = || Ok(());
        let sh = Shared {
            root: &root,
            spec: &self.spec,
            data: &self.data,
            set: &self.set,
            check: &check,
            trace: true,
        };
        run(&sh, threads, &mut self.states)
    }

    fn verify(&self) -> Result<(), WorkloadError> {
        let m = self.set.manifest(&self.data, &self.states);
        verify::tree(self.dir.path(), &m, 2)
    }
}

const MAIL: &str = "files = 40\nprefill = 0.5\ndir_width = 3\ndir_depth = 2\ntotal_ops = 400\n\
    file_size = { dist = \"gamma\", mean = \"3K\", shape = 1.5 }\nio_size = \"1K\"\n\
    fsync = \"end\"\nops = { create = 1, write = 1, append = 2, read = 3, stat = 1, delete = 1 }\n";

#[test]
fn the_same_seed_gives_the_same_operation_sequence() {
    let a = bench(MAIL, 7).run(3).unwrap().trace;
    let b = bench(MAIL, 7).run(3).unwrap().trace;
    let c = bench(MAIL, 8).run(3).unwrap().trace;
    assert_eq!(a.len(), 400);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // Every kind of operation ran.
    for op in Op::ALL {
        assert!(a.iter().any(|(o, _)| *o == op), "{op:?} never ran");
    }
}

#[test]
fn the_final_tree_matches_the_book_and_counts_add_up() {
    let mut b = bench(MAIL, 1);
    let t = b.run(2).unwrap();
    b.verify().unwrap();
    let ops: usize = t.ops.iter().map(|l| l.0.len()).sum();
    assert_eq!(ops, 400);
    assert!(t.read_bytes > 0 && t.written_bytes > 0);
    assert!(!t.final_fsyncs.0.is_empty(), "fsync = end flushed nothing");
    // A change behind the engine's back is caught by the final check.
    let f = b.states.iter().position(Option::is_some).unwrap();
    std::fs::write(b.dir.path().join(&b.set.paths[f]), b"x").unwrap();
    assert!(matches!(b.verify(), Err(WorkloadError::Verify(_))));
}

/// The regression test for a read path that returns wrong bytes: one flipped byte in a
/// file fails the first read of it.
#[test]
fn a_read_catches_one_wrong_byte() {
    let mut b = bench(
        "files = 4\ndir_depth = 0\ntotal_ops = 50\nfile_size = \"10000\"\nio_size = \"4K\"\n\
         ops = { read = 1 }\n",
        3,
    );
    b.run(1).unwrap();
    let path = b.dir.path().join(&b.set.paths[2]);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5000] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = b.run(1).unwrap_err();
    assert!(
        matches!(&e, WorkloadError::Verify(m) if m.contains("differ")),
        "{e}"
    );
    // A file cut short is caught too.
    let mut b = bench(
        "files = 1\ndir_depth = 0\ntotal_ops = 5\nfile_size = \"10000\"\nops = { read = 1 }\n",
        3,
    );
    let path = b.dir.path().join(&b.set.paths[0]);
    std::fs::write(&path, &std::fs::read(&path).unwrap()[..9999]).unwrap();
    assert!(matches!(b.run(1), Err(WorkloadError::Verify(_))));
}

#[test]
fn a_log_appender_keeps_pace_with_the_workers() {
    let mut b = bench(
        "files = 20\ndir_depth = 1\ndir_width = 4\ntotal_ops = 300\nfile_size = \"2K\"\n\
         ops = { read = 1 }\nlog = { appenders = 1, append_size = \"100\", per_op = 0.1 }\n",
        5,
    );
    let t = b.run(3).unwrap();
    assert_eq!(t.log_appends.0.len(), 30);
    let log = b.states.last().unwrap().as_ref().unwrap();
    assert_eq!(log.size, 3000);
    b.verify().unwrap();
}
