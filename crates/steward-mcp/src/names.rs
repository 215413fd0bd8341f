//! Registry names for MCP tools: `SERVER__TOOL`, valid for every provider
//! (`^[a-zA-Z0-9_-]{1,64}$`, the function-name rule of the OpenAI and Anthropic tool APIs).
//!
//! Renaming is deterministic: characters outside the set become `_`; names longer than 64
//! characters are cut and end with `_` and 8 hex digits of the SHA-256 of `server/tool`; when
//! two tools still end up with the same name, the one whose `(server, tool)` sorts first keeps
//! it and every other gets the same kind of hash suffix. The mapping back to the server's real
//! tool name is kept by the caller.

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

/// Longest registry name providers accept, in characters.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// True when `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Registry names for `(server, tool)` pairs, in the order given. Server names are already
/// valid (checked by the configuration); tool names may be anything a server sends.
pub fn registry_names(pairs: &[(String, String)]) -> Vec<String> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| pairs[a].cmp(&pairs[b]));
    let mut taken = BTreeSet::new();
    let mut names = vec![String::new(); pairs.len()];
    for index in order {
        let (server, tool) = &pairs[index];
        let mut name = base_name(server, tool);
        if taken.contains(&name) {
            name = with_hash_suffix(&name, server, tool);
            // A clash of hash suffixes needs a SHA-256 prefix collision; fall back to a counter.
            let mut n = 2usize;
            while taken.contains(&name) {
                name = with_suffix(&base_name(server, tool), &format!("_{n}"));
                n += 1;
            }
        }
        taken.insert(name.clone());
        names[index] = name;
    }
    names
}

/// `server__tool` with invalid characters replaced and the length capped.
fn base_name(server: &str, tool: &str) -> String {
    let cleaned: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let cleaned = if cleaned.is_empty() { "tool".to_string() } else { cleaned };
    let name = format!("{server}__{cleaned}");
    if name.len() <= MAX_TOOL_NAME_CHARS { name } else { with_hash_suffix(&name, server, tool) }
}

fn with_hash_suffix(name: &str, server: &str, tool: &str) -> String {
    let digest = Sha256::digest(format!("{server}/{tool}").as_bytes());
    with_suffix(name, &format!("_{}", &hex::encode(digest)[..8]))
}

/// `name` cut so that `name + suffix` fits in 64 characters (`name` is ASCII here).
fn with_suffix(name: &str, suffix: &str) -> String {
    let keep = MAX_TOOL_NAME_CHARS.saturating_sub(suffix.len()).min(name.len());
    format!("{}{suffix}", &name[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(pairs: &[(&str, &str)]) -> Vec<String> {
        let owned: Vec<(String, String)> = pairs.iter().map(|(s, t)| (s.to_string(), t.to_string())).collect();
        registry_names(&owned)
    }

    #[test]
    fn plain_names_are_server_double_underscore_tool() {
        assert_eq!(names(&[("fs", "read_file"), ("gh", "get-issue")]), ["fs__read_file", "gh__get-issue"]);
    }

    #[test]
    fn dots_spaces_and_unicode_are_replaced() {
        let out = names(&[("s", "files.read"), ("s", "list all"), ("s", "größe"), ("s", "")]);
        assert_eq!(out[0], "s__files_read");
        assert_eq!(out[1], "s__list_all");
        assert_eq!(out[2], "s__gr__e");
        assert_eq!(out[3], "s__tool");
        assert!(out.iter().all(|n| is_valid_tool_name(n)));
    }

    #[test]
    fn collisions_get_a_deterministic_suffix_whatever_the_order() {
        let a = names(&[("s", "a.b"), ("s", "a b"), ("s", "a_b")]);
        let b = names(&[("s", "a_b"), ("s", "a b"), ("s", "a.b")]);
        // `a b` sorts first, so it keeps the plain name in both orders.
        assert_eq!(a[1], "s__a_b");
        assert_eq!(b[1], "s__a_b");
        assert_eq!(a[0], b[2]);
        assert_eq!(a[2], b[0]);
        let unique: BTreeSet<&String> = a.iter().collect();
        assert_eq!(unique.len(), 3);
        assert!(a.iter().all(|n| is_valid_tool_name(n)));
        // Across servers too: `x_` + `b` and `x` + `_b` both give `x___b`.
        let c = names(&[("x_", "b"), ("x", "_b")]);
        assert_ne!(c[0], c[1]);
    }

    #[test]
    fn long_names_are_cut_with_a_hash() {
        let long = "t".repeat(100);
        let other = format!("{}x", "t".repeat(99));
        let out = names(&[("server", &long), ("server", &other)]);
        assert!(out.iter().all(|n| is_valid_tool_name(n) && n.len() == 64), "{out:?}");
        assert_ne!(out[0], out[1]);
        assert_eq!(out, names(&[("server", &long), ("server", &other)]));
    }
}
