//! `fsarena completions SHELL` and `fsarena man`: both generated from the clap definitions,
//! so they can never disagree with the options the program takes.

use super::output::emit;

/// The completion script of `cmd` (fsarena's) for `shell`, on stdout (e.g. `fsarena completions bash >
/// /etc/bash_completion.d/fsarena`).
pub fn completions(shell: clap_complete::Shell, mut cmd: clap::Command) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "fsarena", &mut buf);
    emit(&String::from_utf8_lossy(&buf))
}

/// The roff man page of `cmd` (fsarena's), on stdout (`fsarena man > fsarena.1; man ./fsarena.1`).
pub fn man(cmd: clap::Command) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    emit(&String::from_utf8_lossy(&buf))
}
