use super::*;
use crate::provision::journal;

/// A copy started while the master is still being checked (`seal_copying`).
fn copy_ahead(dir: &Path) -> (SpareCopy, Sender<bool>, Arc<Reuse>, PathBuf) {
    let master = dir.join("ext4-master.img");
    let f = fs::File::create(&master).unwrap();
    f.set_len(1 << 20).unwrap();
    std::io::Write::write_all(&mut &f, &[7u8; 8192]).unwrap();
    let journal = Arc::new(Journal::open(&dir.join("journal.jsonl")).unwrap());
    let reuse: Arc<Reuse> = Arc::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let job = SpareCopy {
        spare: first_clone_path(&master),
        master,
        reuse: Arc::clone(&reuse),
        journal,
        sealed: rx,
    };
    (job, tx, reuse, dir.join("ext4-master-first-clone.img"))
}

#[test]
fn a_copy_made_beside_the_check_is_offered_once_the_master_is_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let (job, sealed, reuse, spare) = copy_ahead(dir.path());
    sealed.send(true).unwrap();
    job.run();
    let (offered, why) = reuse.take();
    assert!(why.is_none(), "{why:?}");
    assert_eq!(offered.map(|s| s.path), Some(spare.clone()));
    assert_eq!(fs::read(&spare).unwrap()[..8192], [7u8; 8192]);
}

#[test]
fn a_copy_of_a_master_that_failed_its_check_is_removed_not_offered() {
    for verdict in [Some(false), None] {
        let dir = tempfile::tempdir().unwrap();
        let (job, sealed, reuse, spare) = copy_ahead(dir.path());
        match verdict {
            Some(v) => sealed.send(v).unwrap(),
            None => drop(sealed), // the seal ended without a verdict
        }
        job.run();
        assert!(reuse.take().0.is_none(), "no cell may start on it");
        assert!(!spare.exists(), "the copy is removed");
        let live = journal::live(&journal::read(&dir.path().join("journal.jsonl")).unwrap());
        assert!(live.is_empty(), "its journal entry is released: {live:?}");
    }
}
