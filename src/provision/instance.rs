//! One provisioned file system, made fresh for a measurement cell.
//!
//! Every step that creates something pushes its undo onto a stack (after journaling it), so
//! an error half-way, a normal teardown, and `Drop` during a panic all unwind the same way
//! (`teardown` runs that stack).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::command::Cmd;
use super::journal::{Journal, Kind, Op};
use super::mkfs::{mkfs_cmd, mkfs_version_cached};
use super::removals::Removals;
use super::undo::Undo;
use super::workdir::WorkDir;
use super::{blank, error::ProvisionError, fscrypt, guard, host, loopdev, mounts};
use crate::plan::{FsKind, Location, TargetConfig};
use crate::results::Provenance;
use crate::sys::cpus::CpuList;
use crate::sys::{steps, DevId};

/// What to provision for one cell.
#[derive(Debug, Clone)]
pub struct InstanceSpec<'a> {
    pub target: &'a TargetConfig,
    /// Unique within the run; names the image and mount point.
    pub seq: u64,
    /// Image or tmpfs size in bytes (ignored for devices and directories).
    pub size: u64,
    /// Allow formatting a named block device at all.
    pub allow_device: bool,
    /// Allow formatting a device that carries a signature.
    pub wipe: bool,
    /// The CPUs the mount is made on, so a file system's user-space daemon (ntfs-3g,
    /// exfat-fuse) runs there beside the cell's work (`plan::cpus`); `None`: anywhere.
    pub daemon_cpus: Option<CpuList>,
}

impl InstanceSpec<'_> {
    /// [`InstanceSpec::seq`]'s bit for a cell's log file system ([`crate::runner`]'s log home).
    pub const LOG: u64 = 1 << 63;
    /// [`InstanceSpec::seq`]'s bit for the baseline's file system beside a cell's (in turn).
    pub const BESIDE: u64 = 1 << 62;

    /// The image's and mount point's name: the target's made file-safe, what the file
    /// system is to its cell when it is not the cell's own (`log`, `beside`), and the cell's
    /// number, so a run's directory reads `ext4-beside-12` beside `xfs-12`.
    pub fn name(&self) -> String {
        let role = match (self.seq & Self::LOG != 0, self.seq & Self::BESIDE != 0) {
            (true, _) => "log-",
            (false, true) => "beside-",
            (false, false) => "",
        };
        let seq = self.seq & !(Self::LOG | Self::BESIDE);
        format!("{}-{role}{seq}", sanitize(&self.target.name))
    }
}

/// A mounted, fresh file system (or a fresh directory on an existing one).
pub struct Instance {
    /// Where workloads may work: the mount point, or fsarena's subdirectory of a `dir:`.
    pub root: PathBuf,
    /// Devices for the monitor: the target's block device first, then the disk under it.
    pub devices: Vec<DevId>,
    pub provenance: Provenance,
    pub(super) fs: FsKind,
    /// The block device to check after unmounting.
    pub(super) check_device: Option<PathBuf>,
    pub(super) undo: Vec<Undo>,
    pub(super) journal: Arc<Journal>,
    /// [`InstanceSpec::daemon_cpus`], kept for the mount.
    pub(super) daemon_cpus: Option<CpuList>,
    /// Where its image goes to be removed once detached ([`Removals`]).
    pub(super) removals: Arc<Removals>,
}

/// A target name made safe for image and mount-point file names.
pub(super) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Instance {
    /// Creates a fresh file system for one cell. On error, whatever was made is undone.
    pub fn provision(spec: &InstanceSpec, work: &WorkDir) -> Result<Instance, ProvisionError> {
        let t = spec.target;
        let mut inst = Instance::empty(t, work);
        inst.daemon_cpus = spec.daemon_cpus.clone();
        let name = spec.name();
        match &t.location {
            Location::Loop => inst.on_loop(spec, work, &name)?,
            Location::Device(d) => inst.on_device(spec, work, d, &name)?,
            Location::Memory => inst.on_tmpfs(spec, work, &name)?,
            Location::Dir(p) => inst.in_dir(work, p, spec.seq)?,
        }
        Ok(inst)
    }

    /// An instance with nothing made yet.
    pub(super) fn empty(t: &TargetConfig, work: &WorkDir) -> Instance {
        Instance {
            root: PathBuf::new(),
            devices: Vec::new(),
            provenance: Provenance {
                kernel: host::kernel_release(),
                ..Provenance::default()
            },
            fs: t.fs,
            check_device: None,
            undo: Vec::new(),
            journal: Arc::clone(&work.journal),
            daemon_cpus: None,
            removals: Arc::clone(&work.removals),
        }
    }

    pub(super) fn journal(
        &self,
        op: Op,
        kind: Kind,
        path: &Path,
        detail: Option<&str>,
    ) -> Result<(), ProvisionError> {
        self.journal
            .record(op, kind, path, detail)
            .map_err(|e| ProvisionError::io("cannot write the run journal", e))
    }

    pub(super) fn on_loop(
        &mut self,
        spec: &InstanceSpec,
        work: &WorkDir,
        name: &str,
    ) -> Result<(), ProvisionError> {
        let img = image_path(work, name)?;
        self.journal(Op::Create, Kind::Image, &img, None)?;
        if let Some(blank) = work.blanks.get(&spec.target.name, spec.size) {
            return self.on_blank(spec, work, name, &img, blank);
        }
        let f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&img)
            .map_err(|e| ProvisionError::io(format!("cannot create {}", img.display()), e))?;
        self.undo.push(Undo::RemoveFile(img.clone()));
        f.set_len(spec.size)
            .map_err(|e| ProvisionError::io(format!("cannot size {}", img.display()), e))?;
        drop(f);
        let dev = steps::timed("losetup", || self.attach(&img, None))?;
        self.mkfs(spec.target, &dev, true)?;
        // A cell's (not a master's, made on other threads) first fresh one is the blank.
        if spec.seq != 0 {
            let mkfs = (&self.provenance.mkfs_command, &self.provenance.mkfs_version);
            (work.blanks).after_mkfs(spec.target, spec.size, &img, mkfs, &self.journal);
        }
        self.mount_device(spec.target, work, &dev, name)
    }

    /// [`Instance::on_loop`] from the target's blank ([`blank`]): the image `img` (already
    /// journaled) a copy of it, attached and mounted.
    fn on_blank(
        &mut self,
        spec: &InstanceSpec,
        work: &WorkDir,
        name: &str,
        img: &Path,
        blank: blank::Blank,
    ) -> Result<(), ProvisionError> {
        self.undo.push(Undo::RemoveFile(img.to_path_buf()));
        blank.copy_to(img)?;
        let dev = steps::timed("losetup", || self.attach(img, None))?;
        self.provenance.mkfs_command = blank.mkfs_command;
        self.provenance.mkfs_version = blank.mkfs_version;
        self.provenance.notes.push(blank::NOTE.into());
        self.mount_device(spec.target, work, &dev, name)
    }

    /// Attaches the image `img` (already journaled and on the undo stack) to a loop device,
    /// with the logical sector size `sector` when given, and records it in the provenance;
    /// returns the device path.
    pub(super) fn attach(
        &mut self,
        img: &Path,
        sector: Option<u32>,
    ) -> Result<String, ProvisionError> {
        let md = fs::metadata(img).map_err(|e| ProvisionError::io("cannot stat the image", e))?;
        let backing = DevId::from_dev_t(md.dev());
        self.provenance.location = "loop".into();
        self.provenance.image_bytes = Some(md.len());

        // One span with the journal entries: a second Ctrl-C's sweep sees the device.
        let lo = super::journal::creating(|| {
            self.journal(Op::Create, Kind::Loop, img, None)?;
            let lo = loopdev::attach(img, sector)?;
            self.undo.push(Undo::Detach {
                dev: lo.path.clone(),
                image: img.to_path_buf(),
            });
            self.journal
                .record(
                    Op::Create,
                    Kind::Loop,
                    img,
                    Some(&lo.path.display().to_string()),
                )
                .map_err(|e| ProvisionError::io("cannot write the run journal", e))
                .map(|()| lo)
        })?;
        self.provenance.loop_device = Some(lo.path.display().to_string());
        self.provenance.loop_direct_io = Some(lo.direct_io);
        if !lo.direct_io {
            self.provenance.notes.push(
                "the loop driver refused direct I/O: the host page cache also caches the image"
                    .into(),
            );
        }
        self.provenance.block_device = Some(lo.dev.to_string());
        self.provenance.backing_device = Some(backing.to_string());
        self.devices = vec![lo.dev, backing];
        Ok(lo.path.display().to_string())
    }

    fn on_device(
        &mut self,
        spec: &InstanceSpec,
        work: &WorkDir,
        d: &Path,
        name: &str,
    ) -> Result<(), ProvisionError> {
        if !spec.allow_device {
            return Err(ProvisionError::Refused {
                device: d.display().to_string(),
                reasons: vec!["formatting a named block device needs --allow-device".into()],
            });
        }
        // Re-checked before every mkfs: something may have mounted it since the last cell.
        let dev = guard::check_device(d, spec.wipe, &work.root)?;
        self.provenance.location = "device".into();
        self.provenance.block_device = Some(dev.to_string());
        self.provenance.image_bytes = guard::sysfs_name(dev)
            .and_then(|n| fs::read_to_string(format!("/sys/class/block/{n}/size")).ok())
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map(|sectors| sectors * 512);
        self.devices = vec![dev];
        let path = fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf());
        self.format_and_mount(spec.target, work, &path.display().to_string(), name, false)
    }

    pub(super) fn make_mountpoint(
        &mut self,
        work: &WorkDir,
        name: &str,
    ) -> Result<PathBuf, ProvisionError> {
        let mnt = work
            .subdir("mnt")
            .map_err(|e| ProvisionError::io("cannot create the mount directory", e))?
            .join(name);
        self.journal(Op::Create, Kind::Dir, &mnt, None)?;
        fs::create_dir(&mnt)
            .map_err(|e| ProvisionError::io(format!("cannot create {}", mnt.display()), e))?;
        self.undo.push(Undo::RemoveDir(mnt.clone()));
        Ok(mnt)
    }

    pub(super) fn mount(&mut self, cmd: Cmd, mnt: &Path) -> Result<(), ProvisionError> {
        // One span: a second Ctrl-C's sweep never falls between the entry and the mount.
        super::journal::creating(|| {
            self.journal(Op::Create, Kind::Mount, mnt, None)?;
            steps::timed("mount", || cmd.run_on("mount", self.daemon_cpus.as_ref()))?;
            self.undo.push(Undo::Unmount(mnt.to_path_buf()));
            Ok(())
        })?;
        self.provenance.mount_command = Some(cmd.argv());
        match mounts::find(mnt) {
            Some(m) => {
                self.provenance.fs_type = m.fstype;
                self.provenance.mount_options = Some(m.options);
            }
            None => {
                return Err(ProvisionError::Unsupported(format!(
                    "`{cmd}` succeeded but nothing is mounted at {}",
                    mnt.display()
                )))
            }
        }
        self.root = mnt.to_path_buf();
        Ok(())
    }

    fn format_and_mount(
        &mut self,
        t: &TargetConfig,
        work: &WorkDir,
        dev: &str,
        name: &str,
        sparse: bool,
    ) -> Result<(), ProvisionError> {
        self.mkfs(t, dev, sparse)?;
        self.mount_device(t, work, dev, name)
    }

    /// Makes the target's file system on `dev` (on a fresh sparse image: `sparse`).
    fn mkfs(&mut self, t: &TargetConfig, dev: &str, sparse: bool) -> Result<(), ProvisionError> {
        if let Some(cmd) = mkfs_cmd(t, dev, sparse) {
            steps::timed("mkfs", || cmd.run(t.fs.package().unwrap_or("?")))?;
            self.provenance.mkfs_command = Some(cmd.argv());
            self.provenance.mkfs_version = mkfs_version_cached(t.fs);
        }
        Ok(())
    }

    /// Mounts the file system on `dev` with the target's options, at a new mount point.
    pub(super) fn mount_device(
        &mut self,
        t: &TargetConfig,
        work: &WorkDir,
        dev: &str,
        name: &str,
    ) -> Result<(), ProvisionError> {
        self.check_device = Some(PathBuf::from(dev));
        let mnt = self.make_mountpoint(work, name)?;
        let cmd = mounts::mount_cmd(host::mount_type(t.fs), &t.mount_options, dev, &mnt);
        self.mount(cmd, &mnt)?;
        if fscrypt::wanted(t) {
            self.encrypt_root(&mnt)?;
        }
        Ok(())
    }

    /// Adds the run's key to the file system at `mnt` and makes the instance's root its
    /// encrypted directory: set up here, on an empty directory, when the file system is new;
    /// found with its policy (and unlocked by the same key) on a copy of a populated image.
    fn encrypt_root(&mut self, mnt: &Path) -> Result<(), ProvisionError> {
        let failed = |what: &str, e: std::io::Error| {
            ProvisionError::Unsupported(format!("fscrypt: cannot {what} on {}: {e}", mnt.display()))
        };
        self.journal(Op::Create, Kind::Key, mnt, None)?;
        let id = match fscrypt::add_run_key(mnt) {
            Ok(id) => id,
            Err(e) => {
                let _ = self.journal.record(Op::Release, Kind::Key, mnt, None);
                return Err(failed("add the key", e));
            }
        };
        self.journal(Op::Create, Kind::Key, mnt, Some(&id.hex()))?;
        self.undo.push(Undo::RemoveKey {
            mnt: mnt.to_path_buf(),
            id,
        });
        let dir = mnt.join(fscrypt::ENC_DIR);
        if !dir.exists() {
            // Inside the new file system: it goes with it, like the workload's own files.
            fs::create_dir(&dir)
                .map_err(|e| ProvisionError::io(format!("cannot create {}", dir.display()), e))?;
            fscrypt::set_policy(&dir, &id).map_err(|e| failed("set the policy", e))?;
        }
        let policy = fscrypt::get_policy(&dir)
            .map_err(|e| failed("read the policy", e))?
            .filter(|p| p.key == id)
            .ok_or_else(|| {
                ProvisionError::Unsupported(format!(
                    "fscrypt: {} is not encrypted with the run's key",
                    dir.display()
                ))
            })?;
        self.provenance.encryption = Some(fscrypt::provenance(&policy));
        self.root = dir;
        Ok(())
    }

    fn on_tmpfs(
        &mut self,
        spec: &InstanceSpec,
        work: &WorkDir,
        name: &str,
    ) -> Result<(), ProvisionError> {
        self.provenance.location = "tmpfs".into();
        self.provenance.image_bytes = Some(spec.size);
        let mnt = self.make_mountpoint(work, name)?;
        let mut opts = vec![format!("size={}", spec.size)];
        opts.extend(spec.target.mount_options.iter().cloned());
        let cmd = mounts::mount_cmd("tmpfs", &opts, "tmpfs", &mnt);
        self.mount(cmd, &mnt)
    }

    fn in_dir(&mut self, work: &WorkDir, parent: &Path, seq: u64) -> Result<(), ProvisionError> {
        self.provenance.location = "dir".into();
        let sub = parent.join(format!("fsarena-{}-{seq}", work.id()));
        self.journal(Op::Create, Kind::Dir, &sub, Some("tree"))?;
        fs::create_dir(&sub)
            .map_err(|e| ProvisionError::io(format!("cannot create {}", sub.display()), e))?;
        self.undo.push(Undo::RemoveTree(sub.clone()));
        self.adopt_dir(parent, sub)
    }

    /// A directory another MPI rank provisioned in a `dir:` target the ranks share
    /// (`--rank-dirs shared`): this rank works in it but neither journals nor removes it —
    /// the rank that made it does both, after the ranks' last barrier on it.
    pub fn joined(
        t: &TargetConfig,
        work: &WorkDir,
        sub: &Path,
    ) -> Result<Instance, ProvisionError> {
        let Location::Dir(parent) = &t.location else {
            return Err(ProvisionError::io(
                "only a dir: target can be shared by ranks",
                std::io::Error::from(std::io::ErrorKind::Unsupported),
            ));
        };
        let mut inst = Instance::empty(t, work);
        inst.provenance.location = "dir".into();
        inst.adopt_dir(parent, sub.to_path_buf())?;
        Ok(inst)
    }

    /// Describes the fresh directory `sub` of a `dir:` target (device, file system) and
    /// makes it this instance's root.
    fn adopt_dir(&mut self, parent: &Path, sub: PathBuf) -> Result<(), ProvisionError> {
        let md =
            fs::metadata(&sub).map_err(|e| ProvisionError::io("cannot stat the directory", e))?;
        let dev = DevId::from_dev_t(md.dev());
        self.provenance.backing_device = Some(dev.to_string());
        if Path::new(&format!("/sys/dev/block/{dev}")).exists() {
            self.devices = vec![dev];
            self.provenance.block_device = Some(dev.to_string());
        } else {
            self.provenance.notes.push(format!(
                "{} is on device {dev}, which is not a block device in sysfs (network or virtual file system): no device figures",
                parent.display()
            ));
        }
        if let Some(m) = mounts::read()
            .into_iter()
            .filter(|m| sub.starts_with(&m.target))
            .max_by_key(|m| m.target.components().count())
        {
            self.provenance.fs_type = m.fstype;
            self.provenance.mount_options = Some(m.options);
        }
        self.root = sub;
        Ok(())
    }

    /// The file system this instance holds.
    pub fn fs(&self) -> FsKind {
        self.fs
    }
}

/// Where the image `name` lives (`images/`), once no removal holds it ([`Removals::wait_for`]).
pub(super) fn image_path(work: &WorkDir, name: &str) -> Result<PathBuf, ProvisionError> {
    let images = work
        .subdir("images")
        .map_err(|e| ProvisionError::io("cannot create the image directory", e))?;
    let img = images.join(format!("{name}.img"));
    work.removals.wait_for(&img);
    Ok(img)
}
