//! [`ProvisionError`], the one error of provisioning, below every file that returns it.

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
