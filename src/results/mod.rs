//! The results store: one JSON line per measurement, appended and fsynced the moment it
//! finishes, so an interrupted run never loses what it already measured.

pub mod budget_stop;
pub mod record;
pub mod store;

pub use budget_stop::{Beyond, BudgetStop};
pub use record::{
    condition, Aging, CloneOrigin, Encryption, Fragmentation, Fragmenting, Health, HostFacts,
    InTurn, LogPlacement, Measurement, Provenance, Record, RunEnd, Status,
};
