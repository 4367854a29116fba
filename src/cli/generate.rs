//! `fsarena completions SHELL` and `fsarena man`: both generated from the clap definitions,
//! so they can never disagree with the options the program takes.

use clap::CommandFactory;

use super::output::emit;
use super::Cli;

/// The completion script for `shell`, on stdout (e.g. `fsarena completions bash >
/// /etc/bash_completion.d/fsarena`).
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "fsarena", &mut buf);
    emit(&String::from_utf8_lossy(&buf))
}

/// The roff man page, on stdout (`fsarena man > fsarena.1; man ./fsarena.1`).
pub fn man() -> anyhow::Result<()> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut buf)?;
    emit(&String::from_utf8_lossy(&buf))
}
