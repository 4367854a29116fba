//! ext4's native encryption for real: the `ext4-fscrypt` target encrypts the work directory
//! with a v2 policy, teardown removes the key, and after kill -9 `fsarena cleanup` removes the
//! key and everything else.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, leftovers, require_root, TestRoot};
use fsarena::plan::catalogue;
use fsarena::provision::fscrypt::{self, KeyId, KeyStatus};
use fsarena::provision::journal::{self, Journal, Kind, Op};
use fsarena::provision::{host, Instance, InstanceSpec, WorkDir};

fn target() -> fsarena::plan::TargetConfig {
    let t = catalogue::get("ext4-fscrypt").expect("ext4-fscrypt is in the catalogue");
    assert!(fscrypt::wanted(&t));
    if let Err(why) = host::support(&t) {
        panic!("this host cannot run the fscrypt tests: {why}");
    }
    t
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
}

#[test]
fn fscrypt_target_encrypts_its_work_directory_and_teardown_removes_the_key() {
    require_root();
    let t = target();
    let root = TestRoot::new("fscrypt");
    let work = WorkDir::create(&root.path).unwrap();
    let spec = InstanceSpec {
        target: &t,
        seq: 1,
        size: 256 << 20,
        allow_device: false,
        wipe: false,
        daemon_cpus: None,
    };
    let inst = Instance::provision(&spec, &work).unwrap();
    let mnt: PathBuf = inst.root.parent().unwrap().to_path_buf();
    assert_eq!(inst.root, mnt.join(fscrypt::ENC_DIR));

    // The policy the kernel holds is the one provenance records.
    let policy = fscrypt::get_policy(&inst.root).unwrap().expect("encrypted");
    assert_eq!(policy.version, 2);
    let enc = inst.provenance.encryption.clone().expect("provenance");
    assert_eq!(enc.policy_version, 2);
    assert_eq!(enc.contents_cipher, "AES-256-XTS");
    assert_eq!(enc.filenames_cipher, "AES-256-CTS");
    assert_eq!(enc.key_identifier, policy.key.hex());
    assert_eq!(
        fscrypt::get_policy(&mnt).unwrap(),
        None,
        "the mount root stays plain"
    );
    assert_eq!(
        fscrypt::key_status(&mnt, &policy.key).unwrap(),
        KeyStatus::Present
    );

    // A subdirectory inherits the policy, and data round-trips while the key is present.
    let sub = inst.root.join("fsarena-work");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("secret-name.txt"), b"plain text").unwrap();
    assert_eq!(fscrypt::get_policy(&sub).unwrap().unwrap().key, policy.key);
    assert_eq!(
        std::fs::read(sub.join("secret-name.txt")).unwrap(),
        b"plain text"
    );

    // A second view of the same file system (a bind mount shares the superblock and so its
    // keyring) outlives the teardown and shows what the teardown did to the key.
    let view = root.path.join("view");
    std::fs::create_dir(&view).unwrap();
    run(Command::new("mount").arg("--bind").arg(&mnt).arg(&view));
    let (_health, _res) = inst.teardown(false); // the loop stays busy (the view): not asserted
    let status = fscrypt::key_status(&view, &policy.key);
    let names: Vec<String> = std::fs::read_dir(view.join(fscrypt::ENC_DIR))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    run(Command::new("umount").arg(&view));
    assert_eq!(
        status.unwrap(),
        KeyStatus::Absent,
        "teardown removed the key"
    );
    assert_eq!(names.len(), 1, "{names:?}");
    assert_ne!(
        names[0], "fsarena-work",
        "without the key the name is ciphertext"
    );

    // The journal says so too: no key is left live.
    let entries = journal::read(&work.run.join(Journal::FILE_NAME)).unwrap();
    assert!(entries
        .iter()
        .any(|e| e.kind == Kind::Key && e.op == Op::Release));
    assert!(journal::live(&entries).iter().all(|e| e.kind != Kind::Key));
    // The loop device autoclears once the view is gone.
    let t0 = Instant::now();
    while !leftovers(&root.path).is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
}

/// The live key entry (mount point, identifier) of the run under `work`, once there is one.
fn live_key(work: &Path) -> Option<(PathBuf, KeyId)> {
    let run = std::fs::read_dir(work)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join(Journal::FILE_NAME).exists())?;
    let entries = journal::read(&run.join(Journal::FILE_NAME)).ok()?;
    journal::live(&entries).into_iter().find_map(|e| {
        let id = KeyId::parse(e.detail.as_deref()?)?;
        (e.kind == Kind::Key).then_some((e.path, id))
    })
}

#[test]
fn kill_9_leaves_a_journaled_key_that_cleanup_removes() {
    require_root();
    target();
    let root = TestRoot::new("fscrypt-kill");
    let out = root.path.join("out");
    let work = root.path.join("work");
    let mut child = Command::new(bin())
        .args(["run", "--target", "ext4-fscrypt", "--workload", "create"])
        .args(["--runs", "3", "--scale", "0.01", "--quiet"])
        .arg("--out")
        .arg(&out)
        .arg("--work-dir")
        .arg(&work)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Regression: the key seen in the journal could be gone before the kill landed (the
    // cell's teardown in between); the run is frozen while the kernel still holds it.
    let mut key = None;
    let present =
        |k: &(PathBuf, KeyId)| fscrypt::key_status(&k.0, &k.1).ok() == Some(KeyStatus::Present);
    let frozen = common::freeze_when(&mut child, 60, || {
        key = live_key(&work).filter(|k| present(k));
        key.is_some()
    });
    assert!(frozen, "no key was seen before the run ended");
    let (mnt, id) = key.expect("frozen with a key");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The key outlived the process: the kernel still holds it on the orphaned mount.
    assert_eq!(fscrypt::key_status(&mnt, &id).unwrap(), KeyStatus::Present);

    let cleaned = Command::new(bin())
        .arg("cleanup")
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cleaned.stdout);
    assert!(cleaned.status.success(), "{cleaned:?}");
    assert!(
        text.contains(&format!("removed the fscrypt key of {}", mnt.display()))
            && text.contains(&id.hex()),
        "{text}"
    );
    assert!(
        leftovers(&root.path).is_empty(),
        "{:?}",
        leftovers(&root.path)
    );
    assert!(live_key(&work).is_none());
}
