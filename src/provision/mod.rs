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
mod undo;
pub mod workdir;
pub mod write_trace;

pub use instance::{Instance, InstanceSpec};
pub use master::MasterImage;
pub use workdir::WorkDir;

/// Why a target could not be provisioned or taken down.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("`{command}` failed ({status}): {stderr}")]
    Tool {
        command: String,
        status: String,
        /// The lines of its output that name the error (one line).
        stderr: String,
        /// Everything it printed, kept with the record.
        output: String,
    },
    #[error("`{program}` not found: install the Debian package {package}")]
    MissingTool { program: String, package: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("refusing to touch {device}: {}", reasons.join("; "))]
    Refused {
        device: String,
        reasons: Vec<String>,
    },
    #[error("not enough free space in {path}: need {need}, have {free}")]
    Space {
        path: String,
        need: String,
        free: String,
    },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl ProvisionError {
    /// A failed tool's whole output, for the record (its error line holds only the
    /// meaningful part).
    pub fn tool_output(&self) -> Option<&str> {
        match self {
            ProvisionError::Tool { output, .. } if !output.is_empty() => Some(output),
            _ => None,
        }
    }

    /// An I/O error with what fsarena was doing when it happened.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        ProvisionError::Io {
            context: context.into(),
            source,
        }
    }
}
