//! `[[lsp]]` entries: the language servers behind the `lsp_*` tools (SPEC T11; what they do
//! is in `steward-tools`'s `lsp` module).

use serde::{Deserialize, Serialize};

/// One `[[lsp]]`: a language server for the files with the given extensions.
///
/// ```toml
/// [[lsp]]
/// name = "pyright"
/// command = ["pyright-langserver", "--stdio"]   # argv; the server speaks LSP on stdio
/// extensions = ["py", "pyi"]
/// language_id = "python"
/// initialization_options = {}                   # sent with `initialize`
/// settings = { python = { analysis = { typeCheckingMode = "basic" } } }
/// ```
///
/// The server runs in the sandbox like any other program (no network, secret files covered,
/// `$HOME` hidden, the workspace read-only), started when a tool first needs it. Only the
/// user's configuration and trusted workspaces may declare one.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LspServerConfig {
    /// Name, shown in tool results and errors (letters, digits, `-`, `_`).
    pub name: String,
    /// The program and its arguments (no shell); the server must speak LSP on stdin/stdout.
    pub command: Vec<String>,
    /// File extensions it serves, without the dot (`py`, `ts`); no two servers share one.
    pub extensions: Vec<String>,
    /// The LSP language id of its documents (`python`, `typescript`).
    pub language_id: String,
    /// `initializationOptions` of the `initialize` request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization_options: Option<serde_json::Value>,
    /// The answers to the server's `workspace/configuration` requests, by dotted section
    /// (`{ python = { analysis = { … } } }` answers the section `python.analysis`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
    /// Let the server create Unix sockets (default false: the sandbox's seccomp filter refuses
    /// them; a server that talks to a helper process over one needs it).
    #[serde(default)]
    pub unix_sockets: bool,
}

impl LspServerConfig {
    /// True when this server serves `path` (by its extension, compared without case).
    pub fn serves(&self, path: &str) -> bool {
        let Some(ext) = std::path::Path::new(path).extension().and_then(|e| e.to_str()) else { return false };
        self.extensions.iter().any(|e| e.eq_ignore_ascii_case(ext))
    }
}

/// The first problem of a set of `[[lsp]]` entries: an empty or badly spelled name, a name
/// used twice, an empty command or language id, no extensions, an extension that has a dot or
/// that two servers claim.
pub(super) fn check_lsp(servers: &[LspServerConfig]) -> Result<(), String> {
    let mut extensions: Vec<(String, &str)> = Vec::new();
    for (index, server) in servers.iter().enumerate() {
        let name = &server.name;
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("lsp `{name}`: a name is letters, digits, `-` and `_`"));
        }
        if servers[..index].iter().any(|other| other.name == *name) {
            return Err(format!("lsp `{name}` is defined twice"));
        }
        if server.command.first().is_none_or(|program| program.trim().is_empty()) {
            return Err(format!("lsp `{name}`: command is empty; give the program and its arguments"));
        }
        if server.language_id.trim().is_empty() {
            return Err(format!("lsp `{name}`: language_id is empty (e.g. `python`, `typescript`)"));
        }
        if server.extensions.is_empty() {
            return Err(format!("lsp `{name}`: extensions is empty; list the file extensions it serves"));
        }
        for ext in &server.extensions {
            if ext.is_empty() || ext.contains('.') || ext.contains('/') {
                return Err(format!("lsp `{name}`: extension `{ext}` must be a bare extension such as `py`"));
            }
            let lower = ext.to_ascii_lowercase();
            if let Some((_, other)) = extensions.iter().find(|(e, _)| *e == lower) {
                return Err(format!("lsp `{name}`: extension `{ext}` is already served by `{other}`"));
            }
            extensions.push((lower, name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, ext: &[&str]) -> LspServerConfig {
        LspServerConfig {
            name: name.into(),
            command: vec!["srv".into()],
            extensions: ext.iter().map(|e| e.to_string()).collect(),
            language_id: "x".into(),
            initialization_options: None,
            settings: None,
            unix_sockets: false,
        }
    }

    #[test]
    fn names_commands_and_extensions_are_checked() {
        assert!(check_lsp(&[server("py", &["py", "pyi"]), server("ts", &["ts"])]).is_ok());
        assert!(check_lsp(&[server("a b", &["py"])]).unwrap_err().contains("letters"));
        assert!(check_lsp(&[server("a", &["py"]), server("a", &["ts"])]).unwrap_err().contains("twice"));
        assert!(check_lsp(&[server("a", &[".py"])]).unwrap_err().contains("bare extension"));
        assert!(check_lsp(&[server("a", &["py"]), server("b", &["PY"])]).unwrap_err().contains("served by `a`"));
        let mut empty = server("a", &["py"]);
        empty.command.clear();
        assert!(check_lsp(&[empty]).unwrap_err().contains("command is empty"));
        assert!(server("a", &["py"]).serves("src/App.PY"));
        assert!(!server("a", &["py"]).serves("src/app.pyc"));
    }

    #[test]
    fn only_the_user_and_trusted_workspaces_declare_servers() {
        let user = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let entry = |name: &str, ext: &str| {
            format!(
                "[[lsp]]\nname = \"{name}\"\ncommand = [\"{name}-server\"]\nextensions = [\"{ext}\"]\nlanguage_id = \"{name}\"\nsettings = {{ python = {{ analysis = {{ mode = \"basic\" }} }} }}\n"
            )
        };
        std::fs::write(user.path().join("a.toml"), entry("pyright", "py")).unwrap();
        std::fs::create_dir(ws.path().join(".steward")).unwrap();
        std::fs::write(ws.path().join(".steward/config.toml"), entry("evil", "ts")).unwrap();
        let c = super::super::Config::load(Some(user.path()), ws.path()).unwrap();
        let names: Vec<&str> = c.lsp.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pyright"], "an untrusted workspace cannot add a program to run");
        assert!(c.warnings.iter().any(|w| w.contains("`lsp` ignored")), "{:?}", c.warnings);
        assert_eq!(c.lsp[0].settings, Some(serde_json::json!({"python": {"analysis": {"mode": "basic"}}})));

        let trust = format!("[trust]\nworkspaces = [\"{}\"]\n", ws.path().display());
        std::fs::write(user.path().join("trust.toml"), trust).unwrap();
        let c = super::super::Config::load(Some(user.path()), ws.path()).unwrap();
        let names: Vec<&str> = c.lsp.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["pyright", "evil"], "a trusted workspace's entries add up with the user's");

        std::fs::write(ws.path().join(".steward/config.toml"), entry("again", "py")).unwrap();
        let err = super::super::Config::load(Some(user.path()), ws.path()).unwrap_err().to_string();
        assert!(err.contains("already served by `pyright`"), "{err}");
    }
}
