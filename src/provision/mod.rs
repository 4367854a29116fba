//! Provisioning: turn a [`TargetConfig`](crate::plan::TargetConfig) into a mounted, fresh file
//! system, and take it down again without leaving anything behind.
//!
//! Every image, loop device, mount and directory is written to the run's [`journal`] *before*
//! it is created, so `fsarena cleanup` can remove what a killed run left, and nothing else.

pub mod aging;
pub mod blank;
pub mod cgroup;
pub mod cleanup;
pub mod clone_trace;
pub mod command;
pub mod dry_mkfs;
mod error;
mod first_copy;
pub mod fragment;
pub mod fsck;
pub mod fscrypt;
pub mod guard;
pub mod host;
pub mod image_copy;
pub mod instance;
pub mod journal;
pub mod loopdev;
pub mod master;
pub mod mkfs;
pub mod mounts;
pub mod planned;
pub mod removals;
pub mod reuse;
mod teardown;
mod traced;
mod undo;
pub mod workdir;
pub mod write_trace;

pub use error::ProvisionError;
pub use instance::{Instance, InstanceSpec};
pub use master::MasterImage;
pub use workdir::WorkDir;
