//! Reference pages generated from the code, kept under `docs/reference/` and `docs/openapi.json`
//! (a test fails when a committed page differs from what the code generates;
//! `scripts/reference.sh` rewrites them).

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
}

/// Prints `page` on stdout; exit code 0.
pub fn print<C: CommandFactory>(page: Page) -> anyhow::Result<u8> {
    let text = match page {
        Page::Cli => cli::<C>(),
        Page::Events => steward_protocol::reference::events_markdown(),
        Page::Openapi => steward_server::openapi::document_json(),
    };
    print!("{text}");
    Ok(0)
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
