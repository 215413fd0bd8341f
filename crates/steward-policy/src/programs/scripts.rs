//! Programs whose own script language can run commands or touch files the gate does not
//! see: sed's `e` command and `s///e` flag run a shell command, its `r`/`R`/`w`/`W`
//! commands and `s///w` flag read and write files named inside the script (GNU sed manual,
//! "sed scripts"; `--sandbox` rejects all of them); awk's `system()`, `|` pipes and
//! `getline` from a command run commands (POSIX awk, gawk manual "I/O Functions").

/// Why `program ARGS` may run a command or touch a file through its script, if it may.
pub(crate) fn script_runs_other_code(program: &str, args: &[String], dynamic: &[bool]) -> Option<String> {
    match program {
        "sed" | "gsed" => sed(args, dynamic),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => awk(args, dynamic),
        _ => None,
    }
}

fn sed(args: &[String], dynamic: &[bool]) -> Option<String> {
    let mut scripts: Vec<&str> = Vec::new();
    let mut given = false;
    let mut operand_script = None;
    let mut k = 0;
    let mut options = true;
    while let Some(arg) = args.get(k) {
        let computed = dynamic.get(k).copied().unwrap_or(true);
        k += 1;
        if options && arg == "--" {
            options = false;
            continue;
        }
        if options && arg == "--sandbox" {
            return None;
        }
        if options && arg.starts_with("--") {
            let (name, value) = arg.split_once('=').map_or((arg.as_str(), None), |(n, v)| (n, Some(v)));
            if "--expression".starts_with(name) && name.len() > 3 {
                given = true;
                match value.or_else(|| args.get(k).map(String::as_str)) {
                    Some(text) if value.is_some() || !dynamic.get(k).copied().unwrap_or(true) => scripts.push(text),
                    _ => return Some("its script is computed at run time".into()),
                }
                k += usize::from(value.is_none());
            } else if "--file".starts_with(name) && name.len() > 3 {
                return Some("its script is read from a file".into());
            } else if "--line-length".starts_with(name) && name.len() > 3 && value.is_none() {
                k += 1;
            }
            continue;
        }
        if options && arg.starts_with('-') && arg.len() > 1 {
            if computed {
                return Some("an option is computed at run time".into());
            }
            // Short options group; `-e`/`-f` take the rest of the word or the next one.
            for (at, letter) in arg.char_indices().skip(1) {
                let rest = &arg[at + letter.len_utf8()..];
                match letter {
                    'e' => {
                        given = true;
                        if !rest.is_empty() {
                            scripts.push(rest);
                        } else if let Some(text) = args.get(k).filter(|_| !dynamic.get(k).copied().unwrap_or(true)) {
                            scripts.push(text);
                            k += 1;
                        } else {
                            return Some("its script is computed at run time".into());
                        }
                        break;
                    }
                    'f' => return Some("its script is read from a file".into()),
                    'l' => {
                        k += usize::from(rest.is_empty());
                        break;
                    }
                    _ => {}
                }
            }
            continue;
        }
        if operand_script.is_none() {
            operand_script = Some((arg.as_str(), computed));
        }
    }
    if !given {
        match operand_script {
            Some((_, true)) => return Some("its script is computed at run time".into()),
            Some((text, false)) => scripts.push(text),
            None => {}
        }
    }
    scripts.iter().find_map(|script| sed_script(script))
}

/// The first command of a sed script that runs a command or names a file, if any; an
/// unknown command counts.
fn sed_script(script: &str) -> Option<String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let delimited = |i: &mut usize, delimiter: char| {
        while *i < chars.len() && chars[*i] != delimiter {
            *i += if chars[*i] == '\\' { 2 } else { 1 };
        }
        *i += 1;
    };
    let rest_of_line = |i: &mut usize| {
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '$' | '~' | '+' | '0'..='9' => {}
            // Address flags after a regex address.
            'I' | 'M' if i >= 2 && chars.get(i - 2) == Some(&'/') => {}
            '/' => delimited(&mut i, '/'),
            '\\' => {
                let Some(&delimiter) = chars.get(i) else { break };
                i += 1;
                delimited(&mut i, delimiter);
            }
            '#' => rest_of_line(&mut i),
            's' | 'y' => {
                let Some(&delimiter) = chars.get(i) else { return Some(format!("`{c}` has no delimiter")) };
                i += 1;
                delimited(&mut i, delimiter);
                delimited(&mut i, delimiter);
                if c == 's' {
                    while let Some(&flag) = chars.get(i).filter(|f| f.is_ascii_alphanumeric()) {
                        i += 1;
                        match flag {
                            'e' => return Some("the `s///e` flag runs the pattern space as a command".into()),
                            'w' | 'W' => return Some("the `s///w` flag writes a file".into()),
                            _ => {}
                        }
                    }
                }
            }
            'e' => return Some("the `e` command runs a command".into()),
            'r' | 'R' => return Some("the `r` command reads a file".into()),
            'w' | 'W' => return Some("the `w` command writes a file".into()),
            'a' | 'i' | 'c' | 'b' | 't' | 'T' | ':' | 'v' => rest_of_line_or_semicolon(&chars, &mut i, c),
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' | 'q' | 'Q' | 'l'
            | 'L' => {}
            other => return Some(format!("`{other}` is not a sed command Steward reads")),
        }
    }
    None
}

/// Skips the argument of `a`/`i`/`c` (to the end of the line, `\` continuing it) or of a
/// label command (to `;` or the end of the line).
fn rest_of_line_or_semicolon(chars: &[char], i: &mut usize, command: char) {
    let text = matches!(command, 'a' | 'i' | 'c');
    while *i < chars.len() && chars[*i] != '\n' && (text || chars[*i] != ';') {
        *i += if text && chars[*i] == '\\' { 2 } else { 1 };
    }
}

fn awk(args: &[String], dynamic: &[bool]) -> Option<String> {
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        if dynamic.get(k).copied().unwrap_or(true) {
            return Some("its program or an option is computed at run time".into());
        }
        k += 1;
        match arg.as_str() {
            "--" => break,
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec" => {
                return Some(format!("`{arg}` makes it read or load program code from a file"));
            }
            "-v" | "-F" | "--assign" | "--field-separator" => k += 1,
            a if a.starts_with('-') && a.len() > 1 => {
                if a.starts_with("-f") || a.starts_with("--file=") {
                    return Some(format!("`{arg}` makes it read program code from a file"));
                }
            }
            _ => {
                k -= 1;
                break;
            }
        }
    }
    let program = args.get(k)?;
    if dynamic.get(k).copied().unwrap_or(true) {
        return Some("its program is computed at run time".into());
    }
    ["system", "|", "getline", "@load", ">"]
        .iter()
        .find(|needle| program.contains(**needle))
        .map(|needle| format!("its program uses `{needle}`, which can run a command or write a file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(program: &str, args: &[&str]) -> Option<String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        script_runs_other_code(program, &args, &vec![false; args.len()])
    }

    /// Found by the `policy_match` fuzz target: a short-option group with a letter of more than
    /// one byte (`sed -é`) sliced the word inside that letter and panicked.
    #[test]
    fn sed_option_group_with_a_multibyte_letter_does_not_panic() {
        assert_eq!(check("sed", &["-é", "p", "f"]), None);
        assert_eq!(check("sed", &["-né", "p"]), None);
        assert!(check("sed", &["-ée", "1e id"]).is_some(), "the `e` after `é` still takes the next script");
        assert!(check("sed", &["-éee id"]).is_some(), "`-é` then `e` with the rest `e id` as its script");
    }

    #[test]
    fn sed_commands_that_run_or_touch_files_are_found() {
        for args in [
            &["1e rm -rf x", "f"][..],
            &["-n", "s/a/b/e", "f"],
            &["-e", "p", "-e", "s/a/b/w out", "f"],
            &["-ne", "/x/r .env", "f"],
            &["--expression=$!w out", "f"],
            &["-f", "script.sed", "f"],
            &["-i", "1{e id\n}", "f"],
        ] {
            assert!(check("sed", args).is_some(), "{args:?}");
        }
        for args in [
            &["-n", "s/a/b/gp", "f"][..],
            &["-i", "s|/usr/e|/opt/e|g; /^#/d", "f"],
            &["--sandbox", "1e id", "f"],
            &["-E", "s/(a|b)+/x/2", "f"],
            &["/start/,/end/{s/a/b/;p}", "f"],
            &["1i\\header", "f"],
            &["y/abc/xyz/", "f"],
        ] {
            assert_eq!(check("sed", args), None, "{args:?}");
        }
    }

    #[test]
    fn awk_programs_that_run_commands_are_found() {
        assert!(check("awk", &["BEGIN{system(\"id\")}"]).is_some());
        assert!(check("awk", &["{print | \"sh\"}", "f"]).is_some());
        assert!(check("gawk", &["-f", "x.awk", "f"]).is_some());
        assert_eq!(check("awk", &["-F:", "{print $1}", "/etc/passwd"]), None);
        assert_eq!(check("awk", &["-v", "n=1", "NR==n", "f"]), None);
    }
}
