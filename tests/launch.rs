//! The `launch` point of cold-read: a real program installed on the target with its shared
//! libraries and loader really runs, and its output is checked against the data set.

use fsarena::workload::{cold_read, launch, PlainHarness, Point, Workload};

mod common;
use common::Env;

#[test]
fn launch_starts_the_installed_program_and_a_short_read_is_caught() {
    let env = Env::new();
    let w = cold_read::ColdRead;
    let points = w.points(&env.ctx()).unwrap();
    assert!(points.iter().any(|p| p.variant == cold_read::LAUNCH));
    let point = Point {
        variant: cold_read::LAUNCH.into(),
        ..Point::default()
    };
    let mut h = PlainHarness::default();
    let out = w.run(&env.ctx(), &point, &mut h).unwrap();
    assert_eq!((h.dropped, h.measured), (1, 1));
    let manifest = cold_read::install_spec(&env.spec).plan().unwrap();
    // The program, its loader and at least libc and libsqlite3 were installed and counted.
    let lib = env.root.path().join("app/lib");
    let libs: Vec<String> = std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(libs.iter().any(|l| l.starts_with("libsqlite3")), "{libs:?}");
    assert!(libs.iter().any(|l| l.starts_with("ld-linux")), "{libs:?}");
    assert_eq!(
        out.files,
        manifest.files.len() as u64 + libs.len() as u64 + 1
    );
    assert!(out.seconds > 0.0);

    // The same program on the same data with one file cut short: the check names it.
    let data = env.root.path().join("data");
    let victim = &manifest.files[manifest.files.len() / 2];
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(data.join(&victim.path))
        .unwrap();
    f.set_len(victim.size / 2).unwrap();
    drop(f);
    let app = launch::install(
        &launch::host_program().unwrap(),
        &env.scratch.path().join("app"),
    )
    .unwrap();
    let ran = app.command(&data).output().unwrap();
    assert!(ran.status.success(), "{ran:?}");
    let err = launch::verify_output(&String::from_utf8_lossy(&ran.stdout), &manifest)
        .unwrap_err()
        .to_string();
    assert!(err.contains(&victim.path), "{err}");
}
