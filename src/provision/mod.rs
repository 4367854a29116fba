//! Provisioning targets.
