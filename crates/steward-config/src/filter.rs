//! `[[output_filter]]` entries (SPEC T8; how they apply is in `steward-tools`'s `filter` module).

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Serialize};

/// One `[[output_filter]]` as written.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputFilterConfig {
    /// Glob over tool names (`*` any characters); absent: every tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// The regular expression.
    pub pattern: String,
    /// What each match becomes (`$1`, `${name}` expand to groups; `$$` is a literal `$`).
    #[serde(default)]
    pub replacement: String,
}

impl OutputFilterConfig {
    /// Checks the glob and the regex. Errors: the problem, naming the key (`tool` or
    /// `pattern`) first so the loader can find its line.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.compile().map(|_| ())
    }

    /// The compiled glob and regex. Errors as for [`OutputFilterConfig::validate`].
    pub fn compile(&self) -> Result<CompiledFilter, (&'static str, String)> {
        let tool = match &self.tool {
            None => None,
            Some(glob) => Some(
                Glob::new(glob)
                    .map_err(|e| ("tool", format!("output_filter: bad tool glob `{glob}`: {}", e.kind())))?
                    .compile_matcher(),
            ),
        };
        let pattern = regex::Regex::new(&self.pattern)
            .map_err(|e| ("pattern", format!("output_filter: bad pattern `{}`: {e}", self.pattern)))?;
        Ok(CompiledFilter { tool, pattern, replacement: self.replacement.clone() })
    }
}

/// One filter, compiled.
pub struct CompiledFilter {
    /// Tool names it applies to (`None`: every tool).
    pub tool: Option<GlobMatcher>,
    /// The regular expression.
    pub pattern: regex::Regex,
    /// What each match becomes.
    pub replacement: String,
}
