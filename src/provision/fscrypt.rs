//! ext4's native encryption (fscrypt), driven through the kernel's ioctls: the database study
//! compared a file system with and without disk encryption, and device-mapper is not on every
//! machine, but fscrypt is wherever ext4 was built with it.
//!
//! A target asks for it with the ext4 feature `-O encrypt` in its mkfs arguments. After the
//! mount, fsarena adds the run's key to the file system's keyring
//! (`FS_IOC_ADD_ENCRYPTION_KEY`), makes [`ENC_DIR`] and sets a v2 policy on it
//! (`FS_IOC_SET_ENCRYPTION_POLICY`, AES-256-XTS for contents, AES-256-CTS for names) while it
//! is still empty; the instance's root is that directory, so everything a workload writes is
//! encrypted. A copy of a populated image already holds the directory and its policy: the same
//! key unlocks it. Teardown removes the key (`FS_IOC_REMOVE_ENCRYPTION_KEY`) before the
//! unmount; the key is journaled (its identifier, never its bytes) so `fsarena cleanup` removes
//! it after kill -9 as well.
//!
//! The key is 64 random bytes drawn once per process: it exists only in this run's memory and
//! the kernel's keyring, never on disk, and no passphrase is asked for.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::OnceLock;

use crate::plan::{FsKind, TargetConfig};
use crate::results::Encryption;

/// The directory under the mount point that carries the policy (and is the instance's root).
pub const ENC_DIR: &str = "fsarena-encrypted";
/// Policy version set: v2 (keys in the file system's keyring, HKDF-derived per-file keys).
pub const POLICY_VERSION: u8 = 2;
/// Cipher of file contents (`FSCRYPT_MODE_AES_256_XTS`).
pub const CONTENTS_CIPHER: &str = "AES-256-XTS";
/// Cipher of file names (`FSCRYPT_MODE_AES_256_CTS`).
pub const FILENAMES_CIPHER: &str = "AES-256-CTS";

const MODE_AES_256_XTS: u8 = 1;
const MODE_AES_256_CTS: u8 = 4;
/// `FSCRYPT_POLICY_FLAGS_PAD_32`: names padded to 32 bytes (what `fscrypt` the tool sets).
const FLAGS_PAD_32: u8 = 0x03;
const KEY_SPEC_TYPE_IDENTIFIER: u32 = 2;
const KEY_SIZE: usize = 64;

// _IOR('f', 19, struct fscrypt_policy_v1) — the size encoded is the v1 struct's, for
// historical reasons; the kernel reads the version byte and then the right struct.
const FS_IOC_SET_ENCRYPTION_POLICY: u64 = 0x800c_6613;
const FS_IOC_GET_ENCRYPTION_POLICY_EX: u64 = 0xc009_6616;
const FS_IOC_ADD_ENCRYPTION_KEY: u64 = 0xc050_6617;
const FS_IOC_REMOVE_ENCRYPTION_KEY: u64 = 0xc040_6618;
const FS_IOC_GET_ENCRYPTION_KEY_STATUS: u64 = 0xc080_661a;

#[repr(C)]
#[derive(Clone, Copy)]
struct KeySpecifier {
    kind: u32,
    reserved: u32,
    /// The union of the kernel's struct: a v2 identifier uses the first 16 bytes.
    u: [u8; 32],
}

#[repr(C)]
struct AddKeyArg {
    key_spec: KeySpecifier,
    raw_size: u32,
    key_id: u32,
    reserved: [u32; 8],
    raw: [u8; KEY_SIZE],
}

#[repr(C)]
struct RemoveKeyArg {
    key_spec: KeySpecifier,
    removal_status_flags: u32,
    reserved: [u32; 5],
}

#[repr(C)]
struct KeyStatusArg {
    key_spec: KeySpecifier,
    reserved: [u32; 6],
    status: u32,
    status_flags: u32,
    user_count: u32,
    out_reserved: [u32; 13],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PolicyV2 {
    version: u8,
    contents_mode: u8,
    filenames_mode: u8,
    flags: u8,
    log2_data_unit_size: u8,
    reserved: [u8; 3],
    identifier: [u8; 16],
}

#[repr(C)]
struct GetPolicyExArg {
    policy_size: u64,
    policy: PolicyV2,
}

/// A v2 key identifier (the kernel derives it from the key; it is not secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyId(pub [u8; 16]);

impl KeyId {
    /// Lower-case hex, as journaled.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`KeyId::hex`]'s output.
    pub fn parse(s: &str) -> Option<KeyId> {
        if s.len() != 32 || !s.is_ascii() {
            return None;
        }
        let mut id = [0u8; 16];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(KeyId(id))
    }

    fn spec(&self) -> KeySpecifier {
        let mut u = [0u8; 32];
        u[..16].copy_from_slice(&self.0);
        KeySpecifier {
            kind: KEY_SPEC_TYPE_IDENTIFIER,
            reserved: 0,
            u,
        }
    }
}

/// Whether the kernel still holds a key for a file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    Absent,
    Present,
    /// Removed, but files that were open still use it.
    IncompletelyRemoved,
}

/// What a directory's policy says, read back from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub version: u8,
    pub contents_cipher: &'static str,
    pub filenames_cipher: &'static str,
    pub key: KeyId,
}

/// Whether `t` asks for fscrypt: ext4 made with the `encrypt` feature (`-O encrypt`,
/// possibly among other features; `^encrypt` turns it off).
pub fn wanted(t: &TargetConfig) -> bool {
    t.fs == FsKind::Ext4
        && t.mkfs_args.windows(2).any(|w| {
            w[0] == "-O"
                && w[1]
                    .split(',')
                    .any(|f| f.trim() == "encrypt" || f.trim() == "+encrypt")
        })
}

/// Why this kernel cannot run an fscrypt target, or `Ok`.
pub fn kernel_support() -> Result<(), String> {
    if Path::new("/sys/fs/ext4/features/encryption").exists() {
        Ok(())
    } else {
        Err("the kernel's ext4 has no encryption (fscrypt): /sys/fs/ext4/features/encryption is missing".into())
    }
}

/// The run's key: 64 random bytes drawn from the OS once per process, kept only in memory.
fn run_key() -> io::Result<&'static [u8; KEY_SIZE]> {
    static KEY: OnceLock<[u8; KEY_SIZE]> = OnceLock::new();
    if let Some(k) = KEY.get() {
        return Ok(k);
    }
    let mut k = [0u8; KEY_SIZE];
    rand::RngCore::try_fill_bytes(&mut rand::rngs::OsRng, &mut k).map_err(io::Error::other)?;
    Ok(KEY.get_or_init(|| k))
}

fn ioctl<T>(f: &File, request: u64, arg: &mut T) -> io::Result<()> {
    // SAFETY: `arg` is a live, exclusively borrowed #[repr(C)] struct laid out as the kernel's
    // for `request` (sizes checked in the tests against the sizes encoded in the numbers).
    let r = unsafe { libc::ioctl(f.as_raw_fd(), request as _, arg as *mut T) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn open_dir(p: &Path) -> io::Result<File> {
    File::open(p)
}

/// Adds the run's key to the keyring of the file system mounted at `mnt`.
pub fn add_run_key(mnt: &Path) -> io::Result<KeyId> {
    add_key(mnt, run_key()?)
}

/// Adds `raw` to the keyring of the file system holding `mnt`; returns its identifier.
pub fn add_key(mnt: &Path, raw: &[u8; KEY_SIZE]) -> io::Result<KeyId> {
    let f = open_dir(mnt)?;
    let mut arg = AddKeyArg {
        key_spec: KeySpecifier {
            kind: KEY_SPEC_TYPE_IDENTIFIER,
            reserved: 0,
            u: [0; 32],
        },
        raw_size: KEY_SIZE as u32,
        key_id: 0,
        reserved: [0; 8],
        raw: *raw,
    };
    let r = ioctl(&f, FS_IOC_ADD_ENCRYPTION_KEY, &mut arg);
    // Do not leave a copy of the key on this stack frame longer than needed.
    arg.raw = [0; KEY_SIZE];
    r?;
    let mut id = [0u8; 16];
    id.copy_from_slice(&arg.key_spec.u[..16]);
    Ok(KeyId(id))
}

/// Removes the key `id` from the file system holding `mnt`. Returns whether files still
/// open kept it in use (then it goes when they are closed).
pub fn remove_key(mnt: &Path, id: &KeyId) -> io::Result<bool> {
    let f = open_dir(mnt)?;
    let mut arg = RemoveKeyArg {
        key_spec: id.spec(),
        removal_status_flags: 0,
        reserved: [0; 5],
    };
    ioctl(&f, FS_IOC_REMOVE_ENCRYPTION_KEY, &mut arg)?;
    // FSCRYPT_KEY_REMOVAL_STATUS_FLAG_FILES_BUSY
    Ok(arg.removal_status_flags & 1 != 0)
}

/// Whether the file system holding `mnt` has the key `id`.
pub fn key_status(mnt: &Path, id: &KeyId) -> io::Result<KeyStatus> {
    let f = open_dir(mnt)?;
    let mut arg = KeyStatusArg {
        key_spec: id.spec(),
        reserved: [0; 6],
        status: 0,
        status_flags: 0,
        user_count: 0,
        out_reserved: [0; 13],
    };
    ioctl(&f, FS_IOC_GET_ENCRYPTION_KEY_STATUS, &mut arg)?;
    match arg.status {
        1 => Ok(KeyStatus::Absent),
        2 => Ok(KeyStatus::Present),
        3 => Ok(KeyStatus::IncompletelyRemoved),
        s => Err(io::Error::other(format!("unknown key status {s}"))),
    }
}

/// Sets a v2 policy (AES-256-XTS / AES-256-CTS) keyed by `id` on the empty directory `dir`.
pub fn set_policy(dir: &Path, id: &KeyId) -> io::Result<()> {
    let f = open_dir(dir)?;
    let mut p = PolicyV2 {
        version: POLICY_VERSION,
        contents_mode: MODE_AES_256_XTS,
        filenames_mode: MODE_AES_256_CTS,
        flags: FLAGS_PAD_32,
        identifier: id.0,
        ..PolicyV2::default()
    };
    ioctl(&f, FS_IOC_SET_ENCRYPTION_POLICY, &mut p)
}

fn cipher_name(mode: u8) -> &'static str {
    match mode {
        MODE_AES_256_XTS => CONTENTS_CIPHER,
        MODE_AES_256_CTS => FILENAMES_CIPHER,
        _ => "other",
    }
}

/// The policy of `dir`, or `None` when it is not encrypted.
pub fn get_policy(dir: &Path) -> io::Result<Option<Policy>> {
    let f = open_dir(dir)?;
    let mut arg = GetPolicyExArg {
        policy_size: std::mem::size_of::<PolicyV2>() as u64,
        policy: PolicyV2::default(),
    };
    match ioctl(&f, FS_IOC_GET_ENCRYPTION_POLICY_EX, &mut arg) {
        Ok(()) => Ok(Some(Policy {
            version: arg.policy.version,
            contents_cipher: cipher_name(arg.policy.contents_mode),
            filenames_cipher: cipher_name(arg.policy.filenames_mode),
            key: KeyId(arg.policy.identifier),
        })),
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What provenance records of a policy read back from the kernel.
pub fn provenance(p: &Policy) -> Encryption {
    Encryption {
        method: "fscrypt".into(),
        policy_version: p.version,
        contents_cipher: p.contents_cipher.into(),
        filenames_cipher: p.filenames_cipher.into(),
        key_identifier: KeyId::hex(&p.key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// The struct sizes must be the ones encoded in the ioctl numbers (bits 16..30).
    #[test]
    fn ioctl_structs_have_the_kernels_sizes() {
        let size = |req: u64| ((req >> 16) & 0x3fff) as usize;
        assert_eq!(size_of::<KeySpecifier>(), 40);
        assert_eq!(
            size_of::<AddKeyArg>() - KEY_SIZE,
            size(FS_IOC_ADD_ENCRYPTION_KEY)
        );
        assert_eq!(
            size_of::<RemoveKeyArg>(),
            size(FS_IOC_REMOVE_ENCRYPTION_KEY)
        );
        assert_eq!(
            size_of::<KeyStatusArg>(),
            size(FS_IOC_GET_ENCRYPTION_KEY_STATUS)
        );
        assert_eq!(size_of::<PolicyV2>(), 24);
        assert_eq!(size(FS_IOC_SET_ENCRYPTION_POLICY), 12);
        assert_eq!(size(FS_IOC_GET_ENCRYPTION_POLICY_EX), 9);
    }

    #[test]
    fn key_identifiers_round_trip_through_hex() {
        let id = KeyId([0xab; 16]);
        assert_eq!(KeyId::parse(&id.hex()), Some(id));
        assert_eq!(KeyId::parse("zz"), None);
        assert_eq!(KeyId::parse(&"g".repeat(32)), None);
    }

    #[test]
    fn only_ext4_with_the_encrypt_feature_wants_fscrypt() {
        let mut t = crate::plan::catalogue::get("ext4").unwrap();
        assert!(!wanted(&t));
        t.mkfs_args = vec!["-O".into(), "bigalloc,encrypt".into()];
        assert!(wanted(&t));
        t.mkfs_args = vec!["-O".into(), "^encrypt".into()];
        assert!(!wanted(&t));
        let mut x = crate::plan::catalogue::get("xfs").unwrap();
        x.mkfs_args = vec!["-O".into(), "encrypt".into()];
        assert!(!wanted(&x));
    }
}
