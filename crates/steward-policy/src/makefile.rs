//! The recipes `make GOAL…` runs, read from the workspace's makefile (GNU make manual,
//! "Writing Makefiles", "Writing Recipes"): the goals' rules and their prerequisites'
//! rules, recursively, with every pattern rule's recipe too. A recipe line is a shell
//! command line once its prefix characters (`@`, `-`, `+`) are removed and `$$` is `$`;
//! a variable reference becomes a word computed at run time unless the makefile sets the
//! variable once to a plain value. The makefiles read are the ones make reads: those listed in
//! `MAKEFILES`, then those given with `-f FILE`, else the folder's own. What Steward does not
//! read (an `include`, `define`, `$(eval …)`, `$(shell …)`, `.RECIPEPREFIX`, another folder
//! given by `-C`, a makefile read from standard input) is an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Largest makefile read, in bytes.
const MAX_MAKEFILE: u64 = 1024 * 1024;
/// Names GNU make looks for, in order.
const NAMES: &[&str] = &["GNUmakefile", "makefile", "Makefile"];

/// Why the recipe lines `make` runs cannot be known ([`recipes`]): a sentence for a decision's
/// reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MakeError {
    /// An argument is computed at run time.
    #[error("`{0}` is computed at run time")]
    Computed(String),
    /// An option that reads a makefile or folder Steward does not (`-C`, `--eval`, `-f -` …).
    #[error("`make {0}` reads another makefile or folder")]
    OtherMakefile(String),
    /// The makefile cannot be read.
    #[error("`{}` cannot be read: {source}", file.display())]
    Unreadable {
        /// The makefile.
        file: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The makefile uses something Steward does not read.
    #[error("`{}`: {source}", file.display())]
    Unsupported {
        /// The makefile.
        file: std::path::PathBuf,
        /// What it uses.
        source: Unsupported,
    },
    /// `.DEFAULT_GOAL` is computed.
    #[error("its `.DEFAULT_GOAL` is computed")]
    ComputedDefaultGoal,
}

/// What a makefile uses that Steward does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unsupported {
    /// A function or directive (`$(shell`, `include`, `define` …).
    #[error("`{0}` is not read by Steward")]
    Construct(String),
    /// It sets a variable that changes how recipes run (`SHELL`, `MAKEFLAGS` …).
    #[error("it sets `{0}`, which changes how recipes run")]
    Setting(String),
}

/// The recipe lines `make ARGS` runs in `dir`, with `makefiles` the value of the `MAKEFILES`
/// variable it gets (`None`: unset). make reads, in order, each file `MAKEFILES` lists (a
/// missing one is skipped, and none gives the default goal), then the makefiles given with
/// `-f FILE` (`--file`, `--makefile`), else the first of `GNUmakefile`, `makefile`,
/// `Makefile` in `dir`; relative names are taken from `dir`. Errors: why the recipes cannot be
/// known (a listed file that cannot be read or uses what Steward does not read among them).
pub(crate) fn recipes(
    args: &[String],
    dynamic: &[bool],
    dir: &Path,
    makefiles: Option<&str>,
) -> Result<Vec<String>, MakeError> {
    let mut goals = Vec::new();
    let mut given: Vec<String> = Vec::new();
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        if dynamic.get(k).copied().unwrap_or(true) {
            return Err(MakeError::Computed(arg.clone()));
        }
        k += 1;
        let name = arg.split_once('=').map_or(arg.as_str(), |(n, _)| n);
        if ["-f", "--file", "--makefile"].contains(&name) || (arg.starts_with("-f") && !arg.starts_with("--")) {
            let value = match (arg.split_once('='), arg.strip_prefix("-f")) {
                (Some((_, value)), _) if arg.starts_with("--") => value.to_string(),
                (_, Some(attached)) if !attached.is_empty() => attached.to_string(),
                _ => {
                    let Some(next) = args.get(k) else { return Err(MakeError::OtherMakefile(arg.clone())) };
                    if dynamic.get(k).copied().unwrap_or(true) {
                        return Err(MakeError::Computed(next.clone()));
                    }
                    k += 1;
                    next.clone()
                }
            };
            if value == "-" {
                return Err(MakeError::OtherMakefile(format!("{arg} -")));
            }
            given.push(value);
            continue;
        }
        if ["-C", "--directory", "-E", "--eval", "-I", "--include-dir"].contains(&name)
            || (arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(['f', 'C', 'E', 'I']))
        {
            return Err(MakeError::OtherMakefile(arg.clone()));
        }
        if !arg.starts_with('-') && !arg.contains('=') && !arg.chars().all(|c| c.is_ascii_digit()) {
            goals.push(arg.clone());
        }
    }
    let extra: Vec<std::path::PathBuf> = makefiles
        .unwrap_or("")
        .split_whitespace()
        .map(|f| dir.join(f))
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    let main: Vec<std::path::PathBuf> = if given.is_empty() {
        NAMES.iter().map(|n| dir.join(n)).find(|p| p.symlink_metadata().is_ok()).into_iter().collect()
    } else {
        given.iter().map(|f| dir.join(f)).collect()
    };
    if main.is_empty() && extra.is_empty() {
        return Ok(Vec::new());
    }
    let mut text = String::new();
    let mut first_of_main = None;
    for (index, file) in extra.iter().chain(&main).enumerate() {
        use std::io::Read;
        let mut one = String::new();
        std::fs::File::open(file)
            .and_then(|f| f.take(MAX_MAKEFILE).read_to_string(&mut one))
            .map_err(|source| MakeError::Unreadable { file: file.clone(), source })?;
        parse(&one).map_err(|source| MakeError::Unsupported { file: file.clone(), source })?;
        if index == extra.len() {
            first_of_main = Some(text.len());
        }
        text.push_str(&one);
        text.push('\n');
    }
    let mut makefile = parse(&text).map_err(|source| MakeError::Unsupported {
        file: main.first().or(extra.first()).cloned().unwrap_or_default(),
        source,
    })?;
    // The default goal never comes from a `MAKEFILES` file.
    makefile.first = match first_of_main {
        Some(at) => parse(&text[at..]).ok().and_then(|m| m.first),
        None => None,
    };
    // `make NAME=value` overrides the makefile's own setting.
    for arg in args.iter().filter(|a| !a.starts_with('-')) {
        if let Some((name, value)) = arg.split_once('=') {
            let name = name.trim_end_matches([':', '?', '+', '!']);
            makefile.variables.insert(name.to_string(), (!value.contains('$')).then(|| value.to_string()));
        }
    }
    if goals.is_empty() {
        match makefile.variables.get(".DEFAULT_GOAL") {
            Some(Some(goal)) => goals.extend(goal.split_whitespace().map(str::to_string)),
            Some(None) => return Err(MakeError::ComputedDefaultGoal),
            None => goals.extend(makefile.first.clone()),
        }
    }
    let mut seen = BTreeSet::new();
    let mut lines = Vec::new();
    let mut todo = goals;
    while let Some(target) = todo.pop() {
        if !seen.insert(target.clone()) {
            continue;
        }
        if target.contains('$') {
            // A computed prerequisite may be any target.
            lines.extend(makefile.rules.values().flat_map(|rule| rule.recipe.iter().cloned()));
            continue;
        }
        if let Some(rule) = makefile.rules.get(&target) {
            todo.extend(rule.prerequisites.iter().cloned());
            lines.extend(rule.recipe.iter().cloned());
        }
    }
    lines.extend(makefile.pattern_recipes.iter().cloned());
    Ok(lines.iter().map(|line| shell_line(line, &makefile.variables)).collect())
}

#[derive(Default)]
struct Rule {
    prerequisites: Vec<String>,
    recipe: Vec<String>,
}

#[derive(Default)]
struct Makefile {
    rules: BTreeMap<String, Rule>,
    pattern_recipes: Vec<String>,
    /// Variables set once, to a value without references.
    variables: BTreeMap<String, Option<String>>,
    first: Option<String>,
}

fn parse(text: &str) -> Result<Makefile, Unsupported> {
    let mut out = Makefile::default();
    let mut current: Vec<String> = Vec::new();
    let mut joined = String::new();
    for raw in text.lines() {
        if let Some(head) = raw.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            continue;
        }
        joined.push_str(raw);
        let line = std::mem::take(&mut joined);
        for needle in ["$(eval", "${eval", "$(shell", "${shell", "$(call", "${call", ".RECIPEPREFIX", "!="] {
            if line.contains(needle) {
                return Err(Unsupported::Construct(needle.to_string()));
            }
        }
        if let Some(recipe) = line.strip_prefix('\t') {
            if current.is_empty() {
                continue;
            }
            push_recipe(&mut out, &current, recipe);
            continue;
        }
        let trimmed = line.trim();
        let word = trimmed.split_whitespace().next().unwrap_or("");
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if matches!(word, "include" | "-include" | "sinclude" | "define" | "vpath" | "load" | "-load") {
            return Err(Unsupported::Construct(word.to_string()));
        }
        if matches!(word, "ifeq" | "ifneq" | "ifdef" | "ifndef" | "else" | "endif" | "export" | "unexport" | "override")
            && !trimmed.contains(':')
        {
            continue;
        }
        let assign = trimmed.find('=').filter(|at| !trimmed[..*at].contains(':') || trimmed[..*at].ends_with(':'));
        if let Some(at) = assign {
            let name = trimmed[..at].trim_end_matches([':', '?', '+', '!']).trim();
            let name = name.rsplit(' ').next().unwrap_or(name).to_string();
            let value = trimmed[at + 1..].trim().to_string();
            if ["SHELL", ".SHELLFLAGS", "MAKEFLAGS", "MAKEFILES", "MAKE", ".RECIPEPREFIX"].contains(&name.as_str()) {
                return Err(Unsupported::Setting(name));
            }
            let plain = !value.contains('$') && trimmed.as_bytes().get(at.wrapping_sub(1)) != Some(&b'+');
            let entry = out.variables.entry(name).or_insert_with(|| plain.then(|| value.clone()));
            if entry.as_deref() != Some(value.as_str()) || !plain {
                *entry = None;
            }
            current.clear();
            continue;
        }
        let Some((targets, rest)) = trimmed.split_once(':') else {
            current.clear();
            continue;
        };
        let rest = rest.trim_start_matches(':');
        let (prerequisites, inline) = rest.split_once(';').map_or((rest, None), |(p, r)| (p, Some(r)));
        current = targets.split_whitespace().map(str::to_string).collect();
        let prerequisites: Vec<String> =
            prerequisites.split_whitespace().filter(|p| *p != "|").map(str::to_string).collect();
        for target in &current {
            if out.first.is_none() && !target.starts_with('.') && !target.contains('%') {
                out.first = Some(target.clone());
            }
            out.rules.entry(target.clone()).or_default().prerequisites.extend(prerequisites.iter().cloned());
        }
        if let Some(recipe) = inline {
            push_recipe(&mut out, &current, recipe);
        }
    }
    Ok(out)
}

fn push_recipe(out: &mut Makefile, targets: &[String], recipe: &str) {
    let recipe = recipe.trim_start_matches(['@', '-', '+', ' ', '\t']).to_string();
    if recipe.trim().is_empty() {
        return;
    }
    for target in targets {
        // Pattern rules, `.DEFAULT`, and targets whose name is computed may run for any goal.
        if target.contains('%') || target.contains('$') || target == ".DEFAULT" {
            out.pattern_recipes.push(recipe.clone());
        } else {
            out.rules.entry(target.clone()).or_default().recipe.push(recipe.clone());
        }
    }
}

/// A recipe line as the shell command line make runs: `$$` → `$`, a reference to a plain
/// variable → its value, any other reference → `${MAKE_VARIABLE}` (computed at run time).
fn shell_line(line: &str, variables: &BTreeMap<String, Option<String>>) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let Some(&next) = chars.get(i + 1) else {
            out.push('$');
            break;
        };
        if next == '$' {
            out.push('$');
            i += 2;
            continue;
        }
        let (name, end) = if next == '(' || next == '{' {
            let close = if next == '(' { ')' } else { '}' };
            let mut depth = 0;
            let mut j = i + 1;
            while j < chars.len() {
                if chars[j] == next {
                    depth += 1;
                } else if chars[j] == close {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                j += 1;
            }
            (chars[i + 2..j.min(chars.len())].iter().collect::<String>(), j + 1)
        } else {
            (next.to_string(), i + 2)
        };
        match variables.get(&name) {
            Some(Some(value)) => out.push_str(value),
            _ => out.push_str("${MAKE_VARIABLE}"),
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goals(text: &str, args: &[&str]) -> Result<Vec<String>, MakeError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Makefile"), text).unwrap();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        recipes(&args, &vec![false; args.len()], dir.path(), None)
    }

    #[test]
    fn recipes_of_goals_and_prerequisites_are_read() {
        let text = "NPM = npm\nall: build\nbuild: gen\n\t@$(NPM) run build\ngen:\n\t-echo $$HOME $@\n\
                    deploy: build ; npm publish\nclean:\n\trm -r dist\n";
        assert_eq!(goals(text, &[]).unwrap(), ["npm run build", "echo $HOME ${MAKE_VARIABLE}"]);
        assert_eq!(
            goals(text, &["-j4", "deploy"]).unwrap(),
            ["npm publish", "npm run build", "echo $HOME ${MAKE_VARIABLE}"]
        );
        assert_eq!(goals(text, &["clean"]).unwrap(), ["rm -r dist"]);
        assert!(goals("include other.mk\nall:\n\ttrue\n", &[]).is_err());
        assert!(goals("X != id\nall:\n\ttrue\n", &[]).is_err());
        assert!(goals("all:\n\ttrue\n", &["-f", "other.mk"]).is_err(), "a missing -f file cannot be read");
        assert!(goals("all:\n\ttrue\n", &["-C", "sub"]).is_err());
        assert!(goals("SHELL := ./x\nall:\n\ttrue\n", &[]).is_err());
        // The default goal may be set; computed targets and prerequisites may be any.
        assert_eq!(goals(".DEFAULT_GOAL := b\na:\n\tx\nb:\n\ty\n", &[]).unwrap(), ["y"]);
        assert_eq!(goals("T := d\n$(T): ; npm publish\nd:\n", &["d"]).unwrap(), ["npm publish"]);
        assert_eq!(goals("a: $(D)\n\tx\nd:\n\ty\n", &["a"]).unwrap(), ["x", "x", "y"]);
    }
}
