//! From a raw command to the program that really runs: leading assignments removed,
//! transparent wrappers opened, the program's path reduced to its (link-resolved) base name,
//! and `sh -c SCRIPT` parsed recursively.

use std::path::Path;

use super::parse::{RawCommand, RawWord, parse_script};
use super::{ShellError, SimpleCommand, unparseable};
use crate::programs::{
    SHELL_LONG_WITH_VALUE, Wrapper, is_name, is_shell, option_name, runs_dynamic_code, wrapper_named,
};

/// Most wrappers opened around one program (`env time nice …`).
const MAX_WRAPPERS: usize = 16;

/// Placeholder for the words a wrapper such as `xargs` appends at run time.
pub(crate) const APPENDED: &str = "…";

/// Appends the simple command(s) `raw` stands for to `out`; `inherited` is the environment
/// set by an enclosing `sh -c` command.
pub(crate) fn normalize(
    raw: RawCommand,
    dir: Option<&Path>,
    inherited: &[(String, String)],
    out: &mut Vec<SimpleCommand>,
) -> Result<(), ShellError> {
    let RawCommand { words, mut outputs, inputs, depth } = raw;
    let mut env = inherited.to_vec();
    let mut start = 0;
    while let Some(word) = words.get(start)
        && let Some(at) = word.assign_at
        && let Some(name) = word.text.get(..at)
        && is_name(name.strip_suffix('+').unwrap_or(name))
    {
        env.push((name.trim_end_matches('+').to_string(), word.text[at + 1..].to_string()));
        start += 1;
    }
    let mut rest = &words[start..];
    let mut appended = false;
    for _ in 0..MAX_WRAPPERS {
        let Some(first) = rest.first() else {
            if !outputs.is_empty() || !inputs.is_empty() {
                out.push(SimpleCommand {
                    argv: Vec::new(),
                    program: String::new(),
                    redirects: outputs,
                    inputs,
                    dynamic: Vec::new(),
                    env,
                });
            }
            return Ok(());
        };
        if first.dynamic {
            return Err(unparseable(format!("the program name `{}` is computed at run time", first.text)));
        }
        if first.text.is_empty() {
            return Err(unparseable("the program name is empty"));
        }
        let program = program_name(&first.text, dir);
        if runs_dynamic_code(&program) {
            return Err(unparseable(format!("`{program}` runs code built at run time")));
        }
        if let Some(wrapper) = wrapper_named(&program).filter(|_| super::wrappers_opened()) {
            if let Some(k) = open_wrapper(wrapper, &rest[1..], &mut env, &mut outputs)? {
                appended |= wrapper.appends_args;
                rest = &rest[1 + k..];
                continue;
            }
        } else if is_shell(&program)
            && let Some(k) = shell_script(&rest[1..])?
        {
            let script = &rest[1 + k];
            if script.dynamic {
                return Err(unparseable(format!("the `{program} -c` script is computed at run time")));
            }
            // A login shell re-reads profile files before the script: keep the shell itself as
            // a part of its own so the gate sees it (case B12).
            let flags: Vec<String> = rest[1..1 + k].iter().map(|w| w.text.clone()).collect();
            if flags.iter().any(|f| f == "--login" || (f.starts_with('-') && !f.starts_with("--") && f.contains('l'))) {
                let mut argv = vec![program.clone()];
                argv.extend(flags);
                let dynamic = vec![false; argv.len()];
                out.push(SimpleCommand {
                    argv,
                    program: program.clone(),
                    redirects: Vec::new(),
                    inputs: Vec::new(),
                    dynamic,
                    env: env.clone(),
                });
            }
            for mut cmd in parse_script(&script.text, depth + 1)? {
                cmd.outputs.extend(outputs.iter().cloned());
                cmd.inputs.extend(inputs.iter().cloned());
                normalize(cmd, dir, &env, out)?;
            }
            return Ok(());
        }
        let mut argv: Vec<String> = rest.iter().map(|w| w.text.clone()).collect();
        let mut dynamic: Vec<bool> = rest.iter().map(|w| w.dynamic).collect();
        if appended {
            argv.push(APPENDED.to_string());
            dynamic.push(true);
        }
        out.push(SimpleCommand { argv, program, redirects: outputs, inputs, dynamic, env });
        return Ok(());
    }
    Err(unparseable(format!("more than {MAX_WRAPPERS} wrapper programs around one command")))
}

/// The base name of the program `text`; see [`SimpleCommand::program`].
pub(crate) fn program_name(text: &str, dir: Option<&Path>) -> String {
    if !text.contains('/') {
        return text.to_string();
    }
    let path = Path::new(text);
    let full = if path.is_absolute() { Some(path.to_path_buf()) } else { dir.map(|d| d.join(path)) };
    let resolved = full.and_then(|p| p.canonicalize().ok());
    resolved
        .as_deref()
        .and_then(Path::file_name)
        .or_else(|| path.file_name())
        .map_or_else(|| text.to_string(), |name| name.to_string_lossy().into_owned())
}

/// Skips a wrapper's options; returns the index in `args` of the program it runs, or `None`
/// when it runs none (`env` alone, `command -v x`).
fn open_wrapper(
    wrapper: &Wrapper,
    args: &[RawWord],
    env: &mut Vec<(String, String)>,
    outputs: &mut Vec<String>,
) -> Result<Option<usize>, ShellError> {
    let name = wrapper.name;
    let mut k = 0;
    let mut options = true;
    let mut positional = wrapper.positional;
    while let Some(word) = args.get(k) {
        let text = word.text.as_str();
        let is_option = options && text.starts_with('-') && (text.len() > 1 || wrapper.flags.contains(&"-"));
        if is_option {
            if word.dynamic {
                return Err(unparseable(format!("an option of `{name}` is computed at run time")));
            }
            if text == "--" {
                options = false;
                k += 1;
                continue;
            }
            let option = option_name(text);
            let short = text.get(..2).filter(|_| !text.starts_with("--"));
            if wrapper.refused.contains(&option) || short.is_some_and(|s| wrapper.refused.contains(&s)) {
                return Err(unparseable(format!("`{name} {option}` is not supported")));
            }
            if wrapper.no_exec.contains(&option) {
                return Ok(None);
            }
            if wrapper.flags.contains(&option) {
                k += 1;
                continue;
            }
            let (key, value, step) = if wrapper.with_value.contains(&option) {
                if option.len() < text.len() {
                    (option, text[option.len() + 1..].to_string(), 1)
                } else {
                    let Some(value) = args.get(k + 1) else {
                        return Err(unparseable(format!("`{name} {option}` has no value")));
                    };
                    (option, value.text.clone(), 2)
                }
            } else if let Some(short) = short
                && wrapper.with_value.contains(&short)
            {
                (short, text[2..].to_string(), 1)
            } else if wrapper.numeric_options && text[1..].chars().all(|c| c.is_ascii_digit()) {
                (option, String::new(), 1)
            } else {
                return Err(unparseable(format!("`{name}` option `{text}` is not understood")));
            };
            if wrapper.writes_value.contains(&key) {
                outputs.push(value);
            }
            k += step;
            continue;
        }
        if wrapper.assignments
            && positional == wrapper.positional
            && let Some((var, value)) = text.split_once('=')
            && is_name(var)
        {
            env.push((var.to_string(), value.to_string()));
            k += 1;
            continue;
        }
        if positional > 0 {
            positional -= 1;
            options = false;
            k += 1;
            continue;
        }
        return Ok(Some(k));
    }
    Ok(None)
}

/// For a shell's arguments: the index of the `-c` script, or `None` without `-c`.
fn shell_script(args: &[RawWord]) -> Result<Option<usize>, ShellError> {
    let mut has_c = false;
    let mut k = 0;
    while let Some(word) = args.get(k) {
        let text = word.text.as_str();
        if !((text.starts_with('-') || text.starts_with('+')) && text.len() > 1) {
            break;
        }
        if word.dynamic {
            return Err(unparseable("a shell option is computed at run time"));
        }
        if text == "--" {
            k += 1;
            break;
        }
        if text.starts_with("--") {
            let takes_value = SHELL_LONG_WITH_VALUE.contains(&text) && !text.contains('=');
            k += if takes_value { 2 } else { 1 };
            continue;
        }
        let letters = &text[1..];
        if text.starts_with('-') && letters.contains('c') {
            has_c = true;
        }
        k += 1 + letters.chars().filter(|c| matches!(c, 'o' | 'O')).count();
    }
    if !has_c {
        return Ok(None);
    }
    if k < args.len() { Ok(Some(k)) } else { Err(unparseable("`-c` is given without a script")) }
}
