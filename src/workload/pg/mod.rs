//! PostgreSQL for the coming `pg` workload (issue 13, step 2). So far only the part
//! `doctor` reports: where this host's PostgreSQL programs are ([`install`]). The workload
//! itself — initdb as an unprivileged user on the target, a server on a private Unix
//! socket inside the engine's memory cgroup, pgbench — is not registered yet.

pub mod install;
