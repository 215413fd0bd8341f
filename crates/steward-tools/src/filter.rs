//! Output filters (SPEC T8): regular expressions that rewrite a tool's output before the
//! model sees it.
//!
//! ```toml
//! [[output_filter]]
//! tool = "cargo_*"                 # optional glob over tool names (default: every tool)
//! pattern = "(?m)^\\s+Compiling .*\\n"   # Rust `regex` syntax (linear time, no backtracking)
//! replacement = ""                 # `$1`, `${name}` refer to groups; default ""
//! ```
//!
//! Filters apply in configuration order (user files first, then the workspace's), each to the
//! result of the previous one, every match replaced. The orchestrator applies them to the
//! redacted output of a successful call, before capping it to `max_tool_output_chars`; the
//! audit record keeps the SHA-256 of the unfiltered output.

use std::borrow::Cow;

use steward_config::CompiledFilter as Filter;
use steward_config::OutputFilterConfig;

/// An `[[output_filter]]` that does not compile (`OutputFilters::new`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FilterError {
    /// The setting that is wrong: `tool` (a bad glob) or `pattern` (a bad regular expression).
    pub setting: &'static str,
    /// What is wrong, naming the filter's text.
    pub message: String,
}

/// The compiled filters of a configuration.
#[derive(Default)]
pub struct OutputFilters {
    filters: Vec<Filter>,
}

impl std::fmt::Debug for OutputFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputFilters").field("filters", &self.filters.len()).finish()
    }
}

impl OutputFilters {
    /// Compiles `configs` in order. Errors: the first bad glob or regex.
    pub fn new(configs: &[OutputFilterConfig]) -> Result<Self, FilterError> {
        let filters = configs
            .iter()
            .map(|c| c.compile().map_err(|(setting, message)| FilterError { setting, message }))
            .collect::<Result<_, _>>()?;
        Ok(OutputFilters { filters })
    }

    /// `text` after every filter that applies to `tool`; borrowed when nothing changed.
    pub fn apply<'a>(&self, tool: &str, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for filter in &self.filters {
            if filter.tool.as_ref().is_some_and(|glob| !glob.is_match(tool)) {
                continue;
            }
            if let Cow::Owned(changed) = filter.pattern.replace_all(&out, filter.replacement.as_str()) {
                out = Cow::Owned(changed);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(tool: Option<&str>, pattern: &str, replacement: &str) -> OutputFilterConfig {
        OutputFilterConfig { tool: tool.map(String::from), pattern: pattern.into(), replacement: replacement.into() }
    }

    #[test]
    fn filters_apply_in_order_to_matching_tools_only() {
        let filters = OutputFilters::new(&[
            filter(Some("cargo_*"), r"(?m)^\s+Compiling .*\n", ""),
            filter(None, r"token=(\w+)", "token=<$1-hidden>"),
        ])
        .unwrap();
        let text = "   Compiling a v1\nok token=abc\n";
        assert_eq!(filters.apply("cargo_test", text), "ok token=<abc-hidden>\n");
        assert_eq!(filters.apply("read", text), "   Compiling a v1\nok token=<abc-hidden>\n");
        assert!(matches!(filters.apply("read", "nothing"), Cow::Borrowed(_)));
    }

    #[test]
    fn bad_regex_and_glob_are_refused_naming_the_key() {
        assert_eq!(filter(None, "(", "").validate().unwrap_err().0, "pattern");
        assert_eq!(filter(Some("a[b"), "x", "").validate().unwrap_err().0, "tool");
    }
}
