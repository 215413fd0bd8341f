//! Reference pages generated from the code, kept under `docs/reference/` and `docs/openapi.json`
//! (a test fails when a committed page differs from what the code generates;
//! `scripts/reference.sh` rewrites them).

use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

/// A generated reference page.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Page {
    /// Every command, argument and option, from the clap definitions (`docs/reference/cli.md`).
    Cli,
    /// Every JSON event and its fields, from the protocol types (`docs/reference/events.md`).
    Events,
    /// The OpenAPI document of `steward serve`'s JSON API, from its routes and types
    /// (`docs/openapi.json`).
    Openapi,
    /// Every configuration key: type, default, which layer may set it, from the configuration
    /// types and the loader's rules (`docs/reference/configuration.md`).
    Config,
    /// The manual page `steward(1)` in roff, from the clap definitions (`docs/reference/steward.1`);
    /// with `--out DIR`, one page per command (`steward.1`, `steward-run.1`, …) written there.
    Man,
}

/// Prints `page` on stdout, or with `out` (manual pages only) writes the pages into that folder
/// (created if missing) and names them on stdout; exit code 0. Errors: `out` with another page,
/// or a folder or file that cannot be written.
pub fn print<C: CommandFactory>(page: Page, out: Option<&Path>) -> anyhow::Result<u8> {
    if let Some(dir) = out {
        let Page::Man = page else {
            return Err(super::UsageError("--out is for `steward reference man` only".into()).into());
        };
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the folder", dir.display()))?;
        clap_mangen::generate_to(C::command(), dir)
            .with_context(|| format!("{}: cannot write the manual pages", dir.display()))?;
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .with_context(|| format!("{}: cannot list the folder", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("steward") && n.ends_with(".1"))
            .collect();
        names.sort();
        for name in names {
            println!("{}", dir.join(name).display());
        }
        return Ok(0);
    }
    let text = match page {
        Page::Cli => cli::<C>(),
        Page::Events => steward_protocol::reference::events_markdown(),
        Page::Openapi => steward_server::openapi::document_json(),
        Page::Config => steward_config::reference::configuration_markdown(),
        Page::Man => man::<C>()?,
    };
    print!("{text}");
    Ok(0)
}

/// The manual page of `steward` itself (its subcommands listed with their summaries), without
/// a date so that it only changes when the commands do.
fn man<C: CommandFactory>() -> anyhow::Result<String> {
    let mut buffer = Vec::new();
    clap_mangen::Man::new(C::command()).render(&mut buffer).context("rendering the manual page")?;
    String::from_utf8(buffer).context("the manual page is not UTF-8")
}

/// The CLI reference in Markdown: a title, then every subcommand with its usage, arguments and
/// options as `--help` shows them (hidden commands left out).
fn cli<C: CommandFactory>() -> String {
    let options = clap_markdown::MarkdownOptions::new()
        .title("Command-line reference".to_string())
        .show_footer(false)
        .show_table_of_contents(true);
    let body = clap_markdown::help_markdown_custom::<C>(&options);
    format!(
        "<!-- Generated from the code by `steward reference cli` (scripts/reference.sh); do not edit. -->\n\n{}\n",
        body.trim_end()
    )
}
