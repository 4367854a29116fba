//! `--dry-run` for provisioning: the commands a cell would run, as text, from the same
//! helpers [`Instance`](super::Instance) uses so the description cannot drift from the deed.

use std::path::Path;

use super::instance::InstanceSpec;
use super::mkfs::mkfs_cmd;
use super::workdir::run_id;
use super::{host, loopdev, mounts};
use crate::plan::size::human_bytes;
use crate::plan::Location;

/// The commands a cell would run, for `--dry-run`. Touches nothing.
pub fn planned_commands(spec: &InstanceSpec, run_dir: &Path) -> Vec<String> {
    let t = spec.target;
    let name = spec.name();
    let mnt = run_dir.join("mnt").join(&name);
    let mut out = Vec::new();
    let sparse = t.location == Location::Loop;
    let mount_from = |dev: &str, out: &mut Vec<String>| {
        if let Some(m) = mkfs_cmd(t, dev, sparse) {
            out.push(m.to_string());
        }
        out.push(format!("mkdir {}", mnt.display()));
        out.push(
            mounts::mount_cmd(host::mount_type(t.fs), &t.mount_options, dev, &mnt).to_string(),
        );
    };
    match &t.location {
        Location::Loop => {
            let img = run_dir.join("images").join(format!("{name}.img"));
            out.push(format!(
                "create sparse image {} ({})",
                img.display(),
                human_bytes(spec.size)
            ));
            out.push(loopdev::attach_cmd(&img, None).to_string());
            mount_from("/dev/loopN", &mut out);
            out.push(format!(
                "... measure ...; umount {}; read-only fsck; losetup -d /dev/loopN; rm {}",
                mnt.display(),
                img.display()
            ));
        }
        Location::Device(d) => {
            out.push(format!(
                "check {} is not mounted, swap, held, the root disk, or signed{}",
                d.display(),
                if spec.wipe {
                    " (signatures allowed: --wipe)"
                } else {
                    ""
                }
            ));
            mount_from(&d.display().to_string(), &mut out);
            out.push(format!(
                "... measure ...; umount {}; read-only fsck",
                mnt.display()
            ));
        }
        Location::Memory => {
            let mut opts = vec![format!("size={}", spec.size)];
            opts.extend(t.mount_options.iter().cloned());
            out.push(format!("mkdir {}", mnt.display()));
            out.push(mounts::mount_cmd("tmpfs", &opts, "tmpfs", &mnt).to_string());
            out.push(format!("... measure ...; umount {}", mnt.display()));
        }
        Location::Dir(p) => {
            let sub = p.join(format!("fsarena-{}-{}", run_id(run_dir), spec.seq));
            out.push(format!("mkdir {}", sub.display()));
            out.push(format!("... measure ...; rm -r {}", sub.display()));
        }
    }
    out
}

/// The mkfs and mount command lines that make target `t` on a user's block `device`
/// mounted at `mnt`, as fsarena would run them there (a device is no fresh sparse image:
/// no flags that skip zeroing or discards). What `fsarena tune` hands a sysadmin to apply.
pub fn device_commands(
    t: &crate::plan::TargetConfig,
    device: &str,
    mnt: &Path,
) -> (Option<String>, String) {
    let mkfs = mkfs_cmd(t, device, false).map(|c| c.to_string());
    let mount = mounts::mount_cmd(host::mount_type(t.fs), &t.mount_options, device, mnt);
    (mkfs, mount.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: the baseline's file system beside a cell was named by its number with
    /// bit 62 set (`ext4-4611686018427387907`), a log's by bit 63; the name says the role.
    #[test]
    fn a_companions_mount_point_says_what_it_is_to_its_cell() {
        let ext4 = crate::plan::catalogue::get("ext4").unwrap();
        let spec = |seq| InstanceSpec {
            target: &ext4,
            seq,
            size: 1 << 30,
            allow_device: false,
            wipe: false,
            daemon_cpus: None,
        };
        let mounts = |seq| planned_commands(&spec(seq), Path::new("/run")).join("\n");
        assert!(mounts(3).contains("/run/mnt/ext4-3"), "{}", mounts(3));
        let beside = mounts(3 | InstanceSpec::BESIDE);
        assert!(beside.contains("/run/mnt/ext4-beside-3"), "{beside}");
        let log = mounts(3 | InstanceSpec::LOG);
        assert!(log.contains("/run/mnt/ext4-log-3"), "{log}");
    }
}
