//! How deny and ask rules that name an option read a command (SPEC T4): as a set of
//! options and a list of operands, not as words in their places.
//!
//! A command is read the way getopt, getopt_long, git's parse-options, pflag and curl read
//! theirs: short options group (`-rfv` is `-r -f -v`) and take attached values (`-XPOST`),
//! long options take `=value` or the next word and may be abbreviated (`--recur`), options
//! may follow operands (GNU permutation) until `--`, and spellings of one option are one
//! option (`-R`, `--recursive`). Which spellings are one option, which options take a value,
//! and what an option or operand implies come from the command's table
//! (`programs/command_options.rs`). Where that is not known (a program or an option without
//! a table entry, a word expanded at run time) the reading errs towards matching: an
//! option's next word is both its value and an operand that may be skipped, a group of
//! letters is both the letters and one word, a computed word may be any option.
//!
//! A rule that names an option, or two words after the program (`kubectl delete namespace`),
//! is read the same way into needs (options, with an optional value glob) and its other
//! elements into operands, which keep their order. It matches a command that sets
//! every needed option (any spelling, implied ones too, extra options allowed) and whose
//! operands fit the rule's in order (`**` at the end allows more).

use globset::GlobMatcher;

use crate::error::PolicyError;
use crate::programs::command_options::{ANY_OPTION, CommandOptions, Opt, Value, command_options};
use crate::programs::options::global_options;

/// Most readings one rule may have (each option of unknown arity followed by a word doubles
/// them); a rule with more is refused when the policy loads.
const MAX_READINGS: usize = 64;

/// One option a command sets.
#[derive(Debug)]
struct Occurrence {
    /// Its spellings, lower case.
    names: Vec<String>,
    /// A long option as written (lower case, up to `=`), which may abbreviate another.
    long: Option<String>,
    /// Values it may have, with whether each is expanded at run time.
    values: Vec<(String, bool)>,
}

#[derive(Debug)]
struct Operand {
    text: String,
    /// May not be an operand at all (a value of an option of unknown arity, a global option's).
    optional: bool,
    /// Expanded at run time: stands for any number of words.
    dynamic: bool,
    /// Another spelling of the same operand (`chmod a=rwx` is `777`).
    also: Option<String>,
}

/// A command read as options and operands.
#[derive(Debug, Default)]
pub(crate) struct OptionSet {
    occurrences: Vec<Occurrence>,
    operands: Vec<Operand>,
    /// A word expanded at run time stands where an option may: it may be any option.
    any_option: bool,
}

/// What an option does with the next word.
enum Next {
    No,
    /// The next word is its value.
    Consumed,
    /// The next word may be its value, or an operand or option of its own.
    Maybe,
}

/// An option word: starts with `-`, is not `-` or `--`.
fn is_option_word(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-') && word != "--"
}

/// The command table for `program` with `words[skip..]` as its subcommand words.
fn table_at(program: &str, words: &[&str], skip: usize) -> Option<&'static CommandOptions> {
    command_options(program, words.get(skip..).unwrap_or(&[]))
}

fn lower_names(opts: &[&Opt]) -> Vec<String> {
    let mut names: Vec<String> = opts.iter().flat_map(|o| o.names.iter()).map(|n| n.to_ascii_lowercase()).collect();
    names.dedup();
    names
}

/// The options of `table` spelled `name`: exactly, or abbreviated for long options.
fn lookup(table: Option<&CommandOptions>, name: &str) -> Vec<&'static Opt> {
    let Some(table) = table else { return Vec::new() };
    match table.exact(name) {
        Some(opt) => vec![opt],
        None => table.abbreviated(name),
    }
}

/// What the next word is to options `opts` (all read from one word with no attached value);
/// unknown options (`opts` empty) may take it.
fn next_of(opts: &[&Opt]) -> Next {
    if !opts.is_empty() && opts.iter().all(|o| o.value == Value::Required) {
        Next::Consumed
    } else if opts.is_empty() || opts.iter().any(|o| o.value == Value::Required) {
        Next::Maybe
    } else {
        Next::No
    }
}

impl OptionSet {
    /// Reads the arguments `words` of `program` (`dynamic[i]`: `words[i]` is expanded at run
    /// time). Words before the subcommand (the program's global options, see
    /// [`global_options`]) are options and values only: none is a required operand.
    pub(crate) fn read(program: &str, words: &[String], dynamic: &[bool]) -> OptionSet {
        let skip = global_options(program, words, dynamic).start.min(words.len());
        let plain: Vec<&str> = words
            .iter()
            .zip(dynamic.iter().chain(std::iter::repeat(&true)))
            .take_while(|(_, d)| !**d)
            .map(|(w, _)| w.as_str())
            .collect();
        let table = table_at(program, &plain, skip);
        let mut set = OptionSet::default();
        let mut ended = false;
        let mut maybe_value = false;
        let mut k = 0;
        while let Some(word) = words.get(k) {
            let is_dynamic = dynamic.get(k).copied().unwrap_or(true);
            let global = k < skip;
            let optional = std::mem::take(&mut maybe_value) || global;
            k += 1;
            if is_dynamic {
                set.any_option |= !ended || table.is_some_and(|t| !t.operand_prefixes.is_empty());
                set.operands.push(Operand { text: word.clone(), optional: true, dynamic: true, also: None });
                continue;
            }
            if !ended && word == "--" {
                ended = true;
                continue;
            }
            let table = if global { None } else { table };
            if ended || !is_option_word(word) {
                for (prefix, implied) in table.map_or(&[][..], |t| t.operand_prefixes) {
                    if word.len() > prefix.len() && word.starts_with(prefix) {
                        set.imply(table, implied);
                    }
                }
                let also = file_mode(program, word);
                set.operands.push(Operand { text: word.clone(), optional, dynamic: false, also });
                continue;
            }
            let next = words.get(k).map(|w| (w.as_str(), dynamic.get(k).copied().unwrap_or(true)));
            match set.read_option(table, word, next) {
                Next::No => {}
                Next::Consumed => k += 1,
                // The next word is read again as an operand that may be skipped, or an option.
                Next::Maybe => maybe_value = true,
            }
        }
        set
    }

    /// The set without the assumption that a word expanded at run time may be any option:
    /// what the command sets for sure (for the risk score, which never errs by guessing).
    pub(crate) fn without_computed_options(mut self) -> OptionSet {
        self.any_option = false;
        self
    }

    /// Records the option(s) `word` sets; says what it does with `next`.
    fn read_option(&mut self, table: Option<&CommandOptions>, word: &str, next: Option<(&str, bool)>) -> Next {
        let next_value = |how: &Next| match (how, next) {
            (Next::No, _) | (_, None) => Vec::new(),
            (_, Some((text, dynamic))) => vec![(text.to_string(), dynamic)],
        };
        let words_table = table.is_some_and(|t| t.words);
        if word.starts_with("--") || words_table {
            let (name, attached) = match word.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (word, None),
            };
            let opts = lookup(table, name);
            let how = if attached.is_some() { Next::No } else { next_of(&opts) };
            let mut values = next_value(&how);
            values.extend(attached.map(|v| (v.to_string(), false)));
            // A long option not spelled in full may abbreviate one the table does not list.
            let exact = table.is_some_and(|t| t.exact(name).is_some());
            let long = (name.starts_with("--") && !exact).then(|| name.to_ascii_lowercase());
            self.push(table, &opts, name, long, values);
            return how;
        }
        if let Some(opt) = table.and_then(|t| t.exact(word)) {
            let how = next_of(&[opt]);
            let values = next_value(&how);
            self.push(table, &[opt], word, None, values);
            return how;
        }
        if table.is_none() {
            // A program Steward has no table for: the word may be one option (`-delete`,
            // `-auto-approve=true`).
            let (name, attached) = match word.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (word, None),
            };
            let mut values = next_value(&Next::Maybe);
            values.extend(attached.map(|v| (v.to_string(), false)));
            self.push(None, &[], name, None, values);
        }
        let body = &word[1..];
        for (at, letter) in body.char_indices() {
            let rest = &body[at + letter.len_utf8()..];
            let short = format!("-{letter}");
            let opt = table.and_then(|t| t.exact(&short));
            let mut values: Vec<(String, bool)> = Vec::new();
            if !rest.is_empty() {
                values.push((rest.to_string(), false));
                if let Some(stripped) = rest.strip_prefix('=') {
                    values.push((stripped.to_string(), false));
                }
            }
            match opt {
                Some(opt) if opt.value == Value::None => self.push(table, &[opt], &short, None, Vec::new()),
                Some(opt) => {
                    let how = if rest.is_empty() && opt.value == Value::Required { Next::Consumed } else { Next::No };
                    values.extend(next_value(&how));
                    self.push(table, &[opt], &short, None, values);
                    return how;
                }
                None => {
                    let how = if rest.is_empty() { Next::Maybe } else { Next::No };
                    values.extend(next_value(&how));
                    self.push(table, &[], &short, None, values);
                    if rest.is_empty() {
                        return how;
                    }
                }
            }
        }
        Next::No
    }

    /// Records options `opts` (or, when empty, the unknown option `written`) and what they imply.
    fn push(
        &mut self,
        table: Option<&CommandOptions>,
        opts: &[&Opt],
        written: &str,
        long: Option<String>,
        values: Vec<(String, bool)>,
    ) {
        let names = if opts.is_empty() { vec![written.to_ascii_lowercase()] } else { lower_names(opts) };
        self.occurrences.push(Occurrence { names, long, values });
        for implied in opts.iter().flat_map(|o| o.implies.iter()) {
            self.imply(table, implied);
        }
    }

    /// Records an implied option, `name` or `name=value`.
    fn imply(&mut self, table: Option<&CommandOptions>, implied: &str) {
        if implied == ANY_OPTION {
            self.any_option = true;
            return;
        }
        let (name, value) = match implied.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (implied, None),
        };
        let names = match table.and_then(|t| t.exact(name)) {
            Some(opt) => lower_names(&[opt]),
            None => vec![name.to_ascii_lowercase()],
        };
        let values = value.map(|v| vec![(v.to_string(), false)]).unwrap_or_default();
        self.occurrences.push(Occurrence { names, long: None, values });
    }

    fn has(&self, need: &Need) -> bool {
        self.any_option
            || self.occurrences.iter().any(|o| {
                need.meets(o)
                    && need
                        .value
                        .as_ref()
                        .is_none_or(|glob| o.values.iter().any(|(v, dynamic)| *dynamic || glob.matches(v)))
            })
    }
}

/// A rule element that is not an option: `*` or a case-insensitive glob.
#[derive(Clone)]
enum Elem {
    Any,
    Glob(GlobMatcher),
}

impl Elem {
    fn matches(&self, text: &str) -> bool {
        match self {
            Elem::Any => true,
            Elem::Glob(glob) => glob.is_match(text),
        }
    }
}

/// An option a rule needs: one of its spellings (lower case), and a value when given.
#[derive(Clone)]
struct Need {
    names: Vec<String>,
    value: Option<Elem>,
}

impl Need {
    /// A shared spelling, or the command's long option, not spelled in full, abbreviating one
    /// of the need's.
    fn meets(&self, o: &Occurrence) -> bool {
        self.names.iter().any(|n| {
            o.names.contains(n)
                || o.long.as_deref().is_some_and(|l| l.len() > 2 && n.starts_with("--") && n.starts_with(l))
        })
    }
}

/// One way to read a rule.
#[derive(Clone, Default)]
struct Reading {
    needs: Vec<Need>,
    operands: Vec<Elem>,
}

/// A compiled rule's option reading.
pub(crate) struct OptionPattern {
    readings: Vec<Reading>,
    /// The rule ended in `**`.
    rest: bool,
}

/// An option no table knows, as its spellings: a word of several letters may be read with
/// one dash or two (Go's `flag` package reads `-auto-approve` and `--auto-approve` alike).
fn dash_twins(name: &str) -> Vec<String> {
    let name = name.to_ascii_lowercase();
    let bare = name.trim_start_matches('-');
    if bare.chars().count() < 2 {
        return vec![name];
    }
    let twin = if name.starts_with("--") { format!("-{bare}") } else { format!("--{bare}") };
    vec![name, twin]
}

fn has_glob_meta(text: &str) -> bool {
    text.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

impl OptionPattern {
    /// The option reading of a rule's `argv`, or `None` when the rule names neither an
    /// option nor two words after the program (`["ls", "*"]`, `["git", "push", "**"]`), or
    /// names an option through a glob (`-*`): such rules are matched only as written. `compile`
    /// builds an element's glob. Errors: [`PolicyError::BadArgvRule`] for a rule with more
    /// than [`MAX_READINGS`] readings, glob errors from `compile`.
    pub(crate) fn compile(
        rule: &str,
        argv: &[String],
        compile: &dyn Fn(&str) -> Result<GlobMatcher, PolicyError>,
    ) -> Result<Option<OptionPattern>, PolicyError> {
        let Some((program, elements)) = argv.split_first() else { return Ok(None) };
        let rest = elements.last().is_some_and(|e| e == "**");
        let elements = if rest { &elements[..elements.len() - 1] } else { elements };
        let options: Vec<&String> = elements.iter().filter(|e| is_option_word(e)).collect();
        let operands = elements.iter().filter(|e| !is_option_word(e) && *e != "--").count();
        if (options.is_empty() && operands < 2)
            || options.iter().any(|e| has_glob_meta(e.split_once('=').map_or(e, |(name, _)| name)))
        {
            return Ok(None);
        }
        let words: Vec<&str> = elements.iter().map(String::as_str).collect();
        let (skip, table) = if has_glob_meta(program) {
            (0, None)
        } else {
            let skip = global_options(program, elements, &vec![false; elements.len()]).start.min(words.len());
            (skip, table_at(program, &words, skip))
        };
        let elem = |text: &str| -> Result<Elem, PolicyError> {
            Ok(if text == "*" { Elem::Any } else { Elem::Glob(compile(text)?) })
        };
        let reader = RuleReader { rule, words: &words, skip, table, elem: &elem };
        let mut readings = Vec::new();
        reader.expand(0, false, Reading::default(), &mut readings)?;
        Ok(Some(OptionPattern { readings, rest }))
    }

    /// Whether some reading of the rule fits `set`.
    pub(crate) fn matches(&self, set: &OptionSet) -> bool {
        self.readings
            .iter()
            .any(|r| r.needs.iter().all(|n| set.has(n)) && operands_fit(&r.operands, &set.operands, self.rest))
    }
}

struct RuleReader<'a> {
    rule: &'a str,
    words: &'a [&'a str],
    skip: usize,
    table: Option<&'static CommandOptions>,
    elem: &'a dyn Fn(&str) -> Result<Elem, PolicyError>,
}

impl RuleReader<'_> {
    fn expand(&self, k: usize, ended: bool, mut cur: Reading, out: &mut Vec<Reading>) -> Result<(), PolicyError> {
        if out.len() >= MAX_READINGS {
            return Err(PolicyError::BadArgvRule {
                rule: self.rule.to_string(),
                message: format!(
                    "more than {MAX_READINGS} ways to read its options; write values attached (`--opt=value`)"
                ),
            });
        }
        let Some(word) = self.words.get(k).copied() else {
            out.push(cur);
            return Ok(());
        };
        if !ended && word == "--" {
            return self.expand(k + 1, true, cur, out);
        }
        if ended || !is_option_word(word) {
            cur.operands.push((self.elem)(word)?);
            return self.expand(k + 1, ended, cur, out);
        }
        let table = if k < self.skip { None } else { self.table };
        let next = self.words.get(k + 1).copied().filter(|w| !is_option_word(w) && *w != "--");
        for (needs, used) in self.option(table, word, next)? {
            let mut reading = cur.clone();
            reading.needs.extend(needs);
            self.expand(k + used, ended, reading, out)?;
        }
        Ok(())
    }

    /// The ways to read option word `word` (needs, and words used: 1, or 2 with its value).
    fn option(
        &self,
        table: Option<&CommandOptions>,
        word: &str,
        next: Option<&str>,
    ) -> Result<Vec<(Vec<Need>, usize)>, PolicyError> {
        let need = |names: Vec<String>, value: Option<Elem>| Need { names, value };
        // A whole word: long, a single-dash word of a `words` table, or a listed word.
        let whole = word.starts_with("--") || table.is_some_and(|t| t.words || t.exact(word).is_some());
        let mut out = Vec::new();
        if whole || table.is_none() {
            let (name, attached) = match word.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (word, None),
            };
            let opts = lookup(table, name);
            let names = if opts.is_empty() { dash_twins(name) } else { lower_names(&opts) };
            if let Some(value) = attached {
                out.push((vec![need(names, Some((self.elem)(value)?))], 1));
            } else {
                self.with_next(&mut out, need(names, None), next_of(&opts), next)?;
            }
            // A single letter (`-o`) reads the same as a word.
            if whole || word.chars().count() <= 2 {
                return Ok(out);
            }
        }
        // Letters, read with the table.
        let body = &word[1..];
        let mut needs = Vec::new();
        let mut letters = body.char_indices().peekable();
        while let Some((at, letter)) = letters.next() {
            let rest = &body[at + letter.len_utf8()..];
            let short = format!("-{letter}");
            let opt = table.and_then(|t| t.exact(&short));
            match opt {
                Some(opt) if opt.value == Value::None => needs.push(need(lower_names(&[opt]), None)),
                Some(opt) => {
                    let names = lower_names(&[opt]);
                    if !rest.is_empty() {
                        let value = rest.strip_prefix('=').unwrap_or(rest);
                        needs.push(need(names, Some((self.elem)(value)?)));
                        out.push((needs, 1));
                    } else {
                        let mut tail = Vec::new();
                        self.with_next(&mut tail, need(names, None), next_of(&[opt]), next)?;
                        out.extend(tail.into_iter().map(|(n, used)| ([needs.clone(), n].concat(), used)));
                    }
                    return Ok(out);
                }
                None => {
                    if at == 0 && !rest.is_empty() && table.is_none() {
                        // The first letter with the rest as its value (`-XPOST`).
                        let value = rest.strip_prefix('=').unwrap_or(rest);
                        out.push((vec![need(vec![short.to_ascii_lowercase()], Some((self.elem)(value)?))], 1));
                    }
                    let last = letters.peek().is_none();
                    let this = need(vec![short.to_ascii_lowercase()], None);
                    if last {
                        let mut tail = Vec::new();
                        self.with_next(&mut tail, this, Next::Maybe, next)?;
                        out.extend(tail.into_iter().map(|(n, used)| ([needs.clone(), n].concat(), used)));
                        return Ok(out);
                    }
                    needs.push(this);
                }
            }
        }
        out.push((needs, 1));
        Ok(out)
    }

    /// Adds the readings of `need` with the following rule element `next` per `how`.
    fn with_next(
        &self,
        out: &mut Vec<(Vec<Need>, usize)>,
        need: Need,
        how: Next,
        next: Option<&str>,
    ) -> Result<(), PolicyError> {
        match (how, next) {
            (Next::Consumed, Some(value)) => {
                out.push((vec![Need { value: Some((self.elem)(value)?), ..need }], 2));
            }
            (Next::Maybe, Some(value)) => {
                out.push((vec![Need { value: Some((self.elem)(value)?), ..need.clone() }], 2));
                out.push((vec![need], 1));
            }
            _ => out.push((vec![need], 1)),
        }
        Ok(())
    }
}

/// Whether the rule's operands fit the command's in order: an optional operand may be
/// skipped, a computed one stands for any number of words; `rest` allows more at the end.
fn operands_fit(rule: &[Elem], command: &[Operand], rest: bool) -> bool {
    let (m, n) = (rule.len(), command.len());
    // fit[i][j]: rule[i..] fits command[j..].
    let mut fit = vec![vec![false; n + 1]; m + 1];
    for j in (0..=n).rev() {
        for i in (0..=m).rev() {
            fit[i][j] = if j == n {
                i == m
            } else {
                let op = &command[j];
                let skip = op.optional || (i == m && rest);
                (skip && fit[i][j + 1])
                    || (i < m
                        && (if op.dynamic {
                            fit[i + 1][j] || fit[i + 1][j + 1]
                        } else {
                            (rule[i].matches(&op.text) || op.also.as_deref().is_some_and(|a| rule[i].matches(a)))
                                && fit[i + 1][j + 1]
                        }))
            };
        }
    }
    fit[0][0]
}

/// For `chmod`: a mode operand written another way, as the octal mode it surely sets
/// (chmod(1): octal with leading zeros, or symbolic `[ugoa]*[+=-][rwx]*` clauses read from a
/// mode of 000, so `a+rwx`, `ugo=rwx` and `0777` are `777`). `None` for other words.
fn file_mode(program: &str, word: &str) -> Option<String> {
    if !program.eq_ignore_ascii_case("chmod") {
        return None;
    }
    if !word.is_empty() && word.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        let trimmed = word.trim_start_matches('0');
        return Some(format!("{:0>3}", trimmed));
    }
    let mut mode = 0u32;
    for clause in word.split(',') {
        let at = clause.find(['+', '=', '-'])?;
        let (who, rest) = clause.split_at(at);
        let mut mask = 0u32;
        for w in who.chars() {
            mask |= match w {
                'u' => 0o700,
                'g' => 0o070,
                'o' => 0o007,
                'a' => 0o777,
                _ => return None,
            };
        }
        if mask == 0 {
            mask = 0o777;
        }
        let op = rest.chars().next()?;
        let mut bits = 0u32;
        for p in rest[1..].chars() {
            bits |= match p {
                'r' => 0o444,
                'w' => 0o222,
                'x' | 'X' => 0o111,
                's' | 't' => 0,
                _ => return None,
            };
        }
        match op {
            '+' => mode |= bits & mask,
            '=' => mode = (mode & !mask) | (bits & mask),
            _ => mode &= !(bits & mask),
        }
    }
    Some(format!("{mode:o}"))
}

#[cfg(test)]
mod tests {
    use globset::GlobBuilder;

    use super::*;

    fn pattern(argv: &str) -> OptionPattern {
        let argv: Vec<String> = argv.split(' ').map(str::to_string).collect();
        let compile = |glob: &str| -> Result<GlobMatcher, PolicyError> {
            Ok(GlobBuilder::new(glob).case_insensitive(true).build().unwrap().compile_matcher())
        };
        OptionPattern::compile("r", &argv, &compile).unwrap().unwrap()
    }

    fn command(line: &str) -> OptionSet {
        let words: Vec<String> = line.split(' ').map(str::to_string).collect();
        let dynamic: Vec<bool> = words.iter().map(|w| w.starts_with('$')).collect();
        OptionSet::read(&words[0], &words[1..], &dynamic[1..])
    }

    #[test]
    fn rules_are_read_with_the_command_table() {
        // Known arity: one reading.
        assert_eq!(pattern("curl -X POST **").readings.len(), 1);
        assert_eq!(pattern("rm -rf **").readings.len(), 1);
        assert_eq!(pattern("rm -rf **").readings[0].needs.len(), 2);
        // `-o` of a program with no table may take `x` or not; `-ab` may be one word or two letters.
        assert_eq!(pattern("frob -o x").readings.len(), 2);
        assert!(pattern("frob -ab **").readings.len() >= 2);
        // Rules naming no option and fewer than two words have no option reading.
        let argv = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        let compile = |_: &str| -> Result<GlobMatcher, PolicyError> { unreachable!() };
        assert!(OptionPattern::compile("r", &argv("git push **"), &compile).unwrap().is_none());
        assert!(OptionPattern::compile("r", &argv("rm -* x"), &compile).unwrap().is_none());
    }

    #[test]
    fn commands_are_read_as_their_programs_read_them() {
        let post = pattern("curl -X POST **");
        for line in ["curl -sSXPOST u", "curl u --request=POST", "curl --requ POST u", "curl -d x u", "curl $M u"] {
            assert!(post.matches(&command(line)), "{line}");
        }
        for line in ["curl -H -XPOST u", "curl -X GET u", "curl u -- -XPOST"] {
            assert!(!post.matches(&command(line)), "{line}");
        }
        let set = command("git push -o ci.skip origin +main");
        assert_eq!(set.operands.iter().map(|o| o.text.as_str()).collect::<Vec<_>>(), ["push", "origin", "+main"]);
        assert!(set.occurrences.iter().any(|o| o.names.contains(&"--force".to_string())));
    }
}
