//! Everything the command line prints on stdout goes through [`emit`], which turns a closed
//! pipe (`fsarena list | head -1`) into a quiet end instead of the panic of `println!`; and
//! the `--format` / `--color` choices shared by `run`, `report` and `compare`.

use std::io::{IsTerminal, Write};
use std::sync::LazyLock;

use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};

use crate::report::Format;

/// Stdout was closed by its reader: nothing more can be said there, and nothing is wrong.
#[derive(Debug, thiserror::Error)]
#[error("stdout is closed")]
pub struct ClosedPipe;

/// Writes `text` to stdout and flushes it. A reader that went away ([`ClosedPipe`]) is not
/// an error the user must see; any other failure (a full disk behind a redirection) is.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ClosedPipe.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Whether an error only says that stdout was closed.
pub fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.downcast_ref::<ClosedPipe>().is_some()
}

/// Errors print as one line: the chain joined with ": ", each cause once (most errors
/// already print their source).
pub fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain().map(|c| c.to_string()) {
        if !parts.iter().any(|p| p.contains(&c)) {
            parts.push(c);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// `--format`: a format of the report's registry that prints on stdout, named as the
/// registry names it, so a new format needs no line here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatArg(pub Format);

/// The formats `--format` offers, read once from the report's registry.
static FORMATS: LazyLock<Vec<FormatArg>> = LazyLock::new(|| Format::all().map(FormatArg).collect());

impl ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        &FORMATS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.help()))
    }
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// Colour when stdout is a terminal and NO_COLOR is not set.
    Auto,
    Always,
    Never,
}

/// The output options of `run`, `report` and `compare`.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// What to print on stdout (progress and warnings stay on stderr).
    #[arg(long, value_enum, default_value = "table")]
    pub format: FormatArg,
    /// Colour in tables: auto honours NO_COLOR and a stdout that is not a terminal.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    pub color: ColorArg,
}

impl OutputArgs {
    /// Whether the table is coloured.
    pub fn color(&self) -> bool {
        match self.color {
            ColorArg::Always => true,
            ColorArg::Never => false,
            ColorArg::Auto => {
                std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").map_or(true, |v| v.is_empty())
            }
        }
    }
    pub fn format(&self) -> Format {
        self.format.0
    }
}
