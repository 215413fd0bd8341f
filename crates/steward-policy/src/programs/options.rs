//! Reading a program's global options to find the word rules call its subcommand
//! (`cargo +nightly --locked publish` → `publish`), and saying when that word cannot be
//! known: an option the program's [`OptionTable`] does not list, a word expanded at run
//! time, or any option of a program Steward has no table for.

use super::option_table::OptionTable;
use super::tables::OPTION_TABLES;

/// Why the subcommand's position cannot be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unsure {
    /// An option the program's table does not list.
    UnknownOption,
    /// A word expanded at run time where an option or the subcommand could be.
    Dynamic,
    /// An option before the first operand of a program with no table.
    NoTable,
}

/// The result of reading a program's global options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GlobalOptions {
    /// Index into the arguments of the first word after the global options: the
    /// subcommand, or where reading stopped when [`GlobalOptions::unsure`] is set.
    pub start: usize,
    /// The first risky option used, as written up to any `=`.
    pub risky: Option<String>,
    /// Set when the subcommand cannot be known from `start` on.
    pub unsure: Option<Unsure>,
    /// When the word at `start` holds an operand option with other options or its value
    /// (`-Bm`, `-mpip`, `-Ic CODE`, `--eval=CODE`): that option and its attached value, which
    /// rules see in place of the word.
    pub operand: Option<(String, Option<String>)>,
    /// The operand options of the program's table (for deciding which rules are about a
    /// subcommand).
    pub operand_options: &'static [&'static str],
    /// See [`OptionTable::every_operand`].
    pub every_operand: bool,
}

/// The table for `program` (case-insensitive; `python3.12` and `pip3.12` count as `python3`
/// and `pip3`).
pub(crate) fn table_for(program: &str) -> Option<&'static OptionTable> {
    let lower = program.to_ascii_lowercase();
    let name = match lower.split_once('.') {
        Some((head, tail))
            if (head == "python3" || head == "pip3")
                && !tail.is_empty()
                && tail.bytes().all(|b| b.is_ascii_digit()) =>
        {
            head
        }
        _ => lower.as_str(),
    };
    OPTION_TABLES.iter().find(|t| t.programs.contains(&name))
}

/// How one option word is read.
enum Step {
    /// Known; this many words (option and value).
    Words(usize, &'static str),
    /// Options grouped into one word end in an operand option (`-Bmpip`).
    Operand(String, Option<String>),
    /// Not in the table.
    Unknown,
}

impl OptionTable {
    fn listed(&self, name: &str) -> Option<&'static str> {
        [self.flags, self.with_value, self.attached_only, self.optional_number]
            .iter()
            .flat_map(|list| list.iter())
            .find(|o| **o == name)
            .copied()
    }

    /// Words option `name` (exactly as listed) takes from `next` on; `None` when that
    /// cannot be known.
    fn value_words(&self, name: &str, next: Option<(&String, bool)>) -> Option<usize> {
        if self.flags.contains(&name) {
            match next {
                Some((_, true)) if self.nopt => None,
                Some((word, false)) if self.nopt && (word == "true" || word == "false") => Some(2),
                _ => Some(1),
            }
        } else if self.with_value.contains(&name) {
            match next {
                Some((word, _)) if self.nopt && word.starts_with('-') => None,
                _ => Some(2),
            }
        } else if self.optional_number.contains(&name) {
            match next {
                Some((_, true)) => None,
                Some((word, false))
                    if word.bytes().any(|b| b.is_ascii_digit())
                        && word.bytes().all(|b| b.is_ascii_digit() || b == b'.') =>
                {
                    Some(2)
                }
                _ => Some(1),
            }
        } else {
            None
        }
    }

    fn step(&self, arg: &str, next: Option<(&String, bool)>) -> Step {
        if let Some(name) = self.listed(arg) {
            return match self.value_words(name, next) {
                Some(words) => Step::Words(words, name),
                None => Step::Unknown,
            };
        }
        if let Some((head, value)) = arg.split_once('=') {
            if self.operand_options.contains(&head) {
                return Step::Operand(head.to_string(), Some(value.to_string()));
            }
            if let Some(name) = self.listed(head) {
                return Step::Words(1, name);
            }
        }
        if arg.starts_with("--") || arg.len() <= 2 {
            return Step::Unknown;
        }
        if let Some(short) = arg.get(..2)
            && !self.clusters
            && self.operand_options.contains(&short)
        {
            return Step::Operand(short.to_string(), arg.get(2..).map(str::to_string));
        }
        if !self.clusters {
            // `-Cdir`: an attached value of a two-character option.
            return match arg.get(..2).and_then(|short| self.listed(short)) {
                Some(name) if !self.flags.contains(&name) || self.attached_only.contains(&name) => Step::Words(1, name),
                _ => Step::Unknown,
            };
        }
        let mut letters = arg.char_indices().skip(1);
        while let Some((at, letter)) = letters.next() {
            let rest = &arg[at + letter.len_utf8()..];
            let short = format!("-{letter}");
            if self.operand_options.contains(&short.as_str()) {
                return Step::Operand(short, (!rest.is_empty()).then(|| rest.to_string()));
            }
            let Some(name) = self.listed(&short) else { return Step::Unknown };
            let value = [self.with_value, self.attached_only, self.optional_number].iter().any(|l| l.contains(&name));
            if value && !rest.is_empty() {
                return Step::Words(1, name);
            }
            if value && !self.flags.contains(&name) && !self.attached_only.contains(&name) {
                return match self.value_words(name, next) {
                    Some(words) => Step::Words(words, name),
                    None => Step::Unknown,
                };
            }
            if letters.clone().next().is_none() {
                return Step::Words(1, name);
            }
        }
        Step::Unknown
    }
}

/// Reads the global options of `program ARGS`. `dynamic[i]` says whether `args[i]` expands
/// at run time. Option reading ends at the first word that is not an option (the
/// subcommand), at `-`, at an operand option or a [`OptionTable::stops`] word; it ends
/// unsure at an unknown option, a computed word, or, for a program with no table, at any
/// option before the first operand (or a computed first word).
pub(crate) fn global_options(program: &str, args: &[String], dynamic: &[bool]) -> GlobalOptions {
    let mut out = GlobalOptions {
        start: 0,
        risky: None,
        unsure: None,
        operand: None,
        operand_options: &[],
        every_operand: false,
    };
    let is_dynamic = |k: usize| dynamic.get(k).copied().unwrap_or(true);
    let Some(table) = table_for(program) else {
        if let Some(first) = args.first() {
            if is_dynamic(0) {
                out.unsure = Some(Unsure::Dynamic);
            } else if first.starts_with('-') && first != "-" {
                out.unsure = Some(Unsure::NoTable);
            }
        }
        return out;
    };
    out.operand_options = table.operand_options;
    out.every_operand = table.every_operand;
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        out.start = k;
        if is_dynamic(k) {
            out.unsure = Some(Unsure::Dynamic);
            return out;
        }
        if table.toolchain && arg.len() > 1 && arg.starts_with('+') {
            k += 1;
            continue;
        }
        if table.assignments
            && let Some((name, _)) = arg.split_once('=')
            && super::is_name(name)
        {
            out.risky.get_or_insert_with(|| format!("{name}="));
            k += 1;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" || table.stops.contains(&arg.as_str()) {
            return out;
        }
        if table.operand_options.contains(&arg.as_str()) {
            return out;
        }
        let next = args.get(k + 1).map(|word| (word, is_dynamic(k + 1)));
        match table.step(arg, next) {
            Step::Words(words, name) => {
                if table.risky.contains(&name) {
                    out.risky.get_or_insert_with(|| name.to_string());
                }
                k += words;
            }
            Step::Operand(option, value) => {
                out.operand = Some((option, value));
                return out;
            }
            Step::Unknown => {
                out.unsure = Some(Unsure::UnknownOption);
                return out;
            }
        }
    }
    out.start = k.min(args.len());
    out
}

/// The index of the subcommand of `program ARGS` after its global options (see
/// [`global_options`]; where reading stopped when the options are not all known) and the
/// first risky option used.
pub(crate) fn subcommand_args(program: &str, args: &[String], dynamic: &[bool]) -> (usize, Option<String>) {
    let options = global_options(program, args, dynamic);
    (options.start, options.risky)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn read(program: &str, line: &str) -> GlobalOptions {
        let args = strings(&line.split_whitespace().collect::<Vec<_>>());
        let dynamic: Vec<bool> = args.iter().map(|a| a.starts_with('$')).collect();
        global_options(program, &args, &dynamic)
    }

    #[test]
    fn git_global_options_are_skipped() {
        let table = [
            ("-C dir push", 2, None),
            ("-c k=v push", 2, Some("-c")),
            ("--git-dir=x push", 1, None),
            ("--git-dir x push", 2, None),
            ("--no-pager -C d log", 3, None),
            ("--no-lazy-fetch --shallow-file f --no-advice push", 4, None),
            ("--attr-source=HEAD --list-cmds=main", 2, None),
            ("--exec-path=/x push", 1, Some("--exec-path")),
            ("--exec-path", 1, Some("--exec-path")),
            ("--config-env=a=B push", 1, Some("--config-env")),
            ("--version", 0, None),
            ("-v push", 0, None),
            ("push -C", 0, None),
        ];
        for (line, start, risky) in table {
            let got = read("git", line);
            assert_eq!((got.start, got.risky.as_deref(), got.unsure), (start, risky, None), "git {line}");
        }
    }

    #[test]
    fn option_forms_of_every_kind_are_read() {
        let table = [
            ("cargo", "+nightly --locked -vv publish", 3),
            ("cargo", "-Zunstable-options --config=a=b -C dir publish", 4),
            ("rustup", "-v +stable self uninstall", 2),
            ("npm", "--prefix dir -w pkg --registry=https://r publish", 5),
            ("pnpm", "-C dir --filter=a -w publish", 4),
            ("docker", "-H unix:///s -lwarn --context=x -D push", 5),
            ("kubectl", "-nprod --context c -v=5 delete", 4),
            ("terraform", "-chdir=infra destroy", 1),
            ("make", "-C dir -j4 -sk -j 2 -l deploy", 7),
            ("make", "-j deploy", 1),
            ("make", "CC=x -Oline deploy", 2),
            ("go", "-C=dir run", 1),
            ("go", "--C dir run", 2),
            ("python3", "-u -X dev -W ignore -m pip", 5),
            ("systemctl", "--user -H host stop", 3),
            ("npm", "--force true -g false --prefix x publish", 6),
        ];
        for (program, line, start) in table {
            let got = read(program, line);
            assert_eq!((got.start, got.unsure), (start, None), "{program} {line}");
        }
    }

    #[test]
    fn grouped_operand_options_are_split() {
        let got = read("python3", "-Bmpip install");
        assert_eq!((got.start, got.operand), (0, Some(("-m".into(), Some("pip".into())))));
        let got = read("python", "-I -c code");
        assert_eq!((got.start, got.operand), (1, None));
        let got = read("bun", "--silent --eval=code");
        assert_eq!((got.start, got.operand), (1, Some(("--eval".into(), Some("code".into())))));
        let got = read("bun", "-ecode");
        assert_eq!((got.start, got.operand), (0, Some(("-e".into(), Some("code".into())))));
    }

    #[test]
    fn unknown_options_and_computed_words_make_the_subcommand_unsure() {
        let table = [
            ("cargo", "--frobnicate publish", 0, Unsure::UnknownOption),
            ("cargo", "--locked --frob=1 publish", 1, Unsure::UnknownOption),
            ("git", "-x push", 0, Unsure::UnknownOption),
            ("terraform", "-chdir infra destroy", 0, Unsure::UnknownOption),
            ("npm", "$OPT publish", 0, Unsure::Dynamic),
            ("make", "-j $N deploy", 0, Unsure::UnknownOption),
            ("npm", "-g $X publish", 0, Unsure::UnknownOption),
            ("npm", "--prefix -w test publish", 0, Unsure::UnknownOption),
            ("foo", "--x sub", 0, Unsure::NoTable),
            ("foo", "$X sub", 0, Unsure::Dynamic),
        ];
        for (program, line, start, unsure) in table {
            let got = read(program, line);
            assert_eq!((got.start, got.unsure), (start, Some(unsure)), "{program} {line}");
        }
        assert_eq!(read("ls", "src -l").unsure, None);
    }

    #[test]
    fn versioned_interpreter_names_use_their_table() {
        assert!(table_for("python3.12").is_some());
        assert!(table_for("PIP3.11").is_some());
        assert!(table_for("python3.x").is_none());
    }
}
