//! fsarena: a file-system benchmark lab for Linux.
//!
//! Data flows one way: [`plan`] → [`provision`] → [`dataset`] → [`workload`] (+ [`monitor`])
//! → [`results`] → [`stats`] → [`report`]. The [`runner`] walks a plan through that pipeline;
//! the binary in `main.rs` is a thin shell over [`cli`].

pub mod bench_op;
pub mod cli;
pub mod cluster;
pub mod cost;
pub mod dataset;
pub mod doctor;
pub mod fio;
pub mod fsops;
pub mod golden;
pub mod history;
pub mod monitor;
pub mod plan;
pub mod provision;
pub mod report;
pub mod results;
pub mod runner;
pub mod stats;
pub mod sys;
pub mod trace;
pub mod tune;
pub mod workload;
