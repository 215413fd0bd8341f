//! A generator of shell command lines for the splitter's fuzz targets: words with quotes,
//! escapes, `$'…'`, `$"…"`, globs, brace and tilde expansion, parameters and substitutions;
//! leading assignments; redirections; lists, subshells, groups, `if`, `for`, `!`, `time`;
//! comments; unicode and control characters; and a few metacharacters inserted anywhere.
#![allow(dead_code)]

use proptest::prelude::*;
use steward_fuzz::proptest;

/// Program names the generator uses: plain programs, and builtins.
pub const NAMES: &[&str] = &[
    "ls", "cat", "grep", "git", "rm", "cargo", "wc", "sort", "head", "sed", "make", "curl", "echo", "true", "test",
    "cd", "export", "read", "kill", "set", "shift", "wait",
];
pub fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range(' ', '~'),
        1 => prop::sample::select(vec!['\t', '\n', '\r', '\x07', '\x0b', '\x0c', '\x1b', '\u{7f}']),
        1 => prop::sample::select(vec!['é', '日', '\u{a0}', '\u{2028}', '\u{feff}', '😀', 'ß', '\u{300}']),
    ]
}

pub fn text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any_char(), 0..max).prop_map(|c| c.into_iter().collect())
}

pub fn plain() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9]{0,4}",
        "-{1,2}[a-z]{1,3}",
        "[a-zA-Z0-9_.,:+@%=/-]{1,6}",
        prop::sample::select(vec!["#", "a#b", "=", "x=1", "a=~", "!", "{", "}", "in", "do", "fi", "then"])
            .prop_map(str::to_string),
    ]
}

/// One piece of a word.
pub fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => plain(),
        2 => text(6).prop_map(|t| format!("'{}'", t.replace('\'', ""))),
        2 => prop::collection::vec(
            prop_oneof![
                3 => any_char().prop_filter_map("special", |c| (!matches!(c, '"' | '\\' | '$' | '`')).then(|| c.to_string())),
                1 => prop::sample::select(vec!["\\\"", "\\\\", "\\$", "\\x", "\\`", "\\\n", "$HOME", "${X:-y}", "$1", "$", "'"])
                    .prop_map(str::to_string),
            ],
            0..5,
        )
        .prop_map(|p| format!("\"{}\"", p.concat())),
        2 => any_char().prop_map(|c| format!("\\{c}")),
        1 => prop::sample::select(vec!["\\n", "\\x41", "\\'", "\\\\", "a b", "\\t", "\\0", "\\e", "\\u00e9", "\\c@"])
            .prop_map(|t| format!("$'{t}'")),
        1 => text(4).prop_map(|t| format!("$\"{}\"", t.replace(['"', '\\', '$', '`'], ""))),
        1 => prop::sample::select(vec!["*", "?", "[ab]", "[!a]", "*.rs"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["{a,b}", "{1..3}", "{x}", "{a,}", "x{a,b}y", "{,}"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["~", "~/x", "~root", "~+", "~-"]).prop_map(str::to_string),
        1 => prop::sample::select(vec!["$HOME", "${X}", "$1", "$@", "$$", "$?", "$#", "$-", "$!", "${#X}"])
            .prop_map(str::to_string),
        1 => prop::sample::select(vec!["$(ls s)", "`ls t`", "$(cat u)", "<(ls v)"]).prop_map(str::to_string),
    ]
}

pub fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 1..4).prop_map(|p| p.concat())
}

pub fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(NAMES).prop_map(str::to_string),
        1 => prop::sample::select(NAMES).prop_map(|n| format!("'{n}'")),
        1 => prop::sample::select(NAMES).prop_map(|n| format!("\"{n}\"")),
        1 => prop::sample::select(NAMES).prop_map(|n| format!("\\{n}")),
        1 => prop::sample::select(vec!["'if'", "\\fi", "'{'", "'!'", "-o", "'time'", "\"for\""]).prop_map(str::to_string),
    ]
}

pub fn redirection() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![">", ">>", "2>", "&>", "&>>", ">|", "<>", "1>", ">&", "2>>"]).prop_flat_map(|op| (
            "[a-z]{1,3}",
            prop::bool::ANY
        )
            .prop_map(move |(f, space)| { format!("{op}{}{f}", if space { " " } else { "" }) })),
        prop::sample::select(vec!["2>&1", ">&2", "<&-", "2>/dev/null", "</dev/null", "<<<x", "<<< 'a b'", "0<&0"])
            .prop_map(str::to_string),
    ]
}

pub fn simple() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(("[A-Z][A-Z0-9_]{0,3}", prop::option::of(word())), 0..2),
        name(),
        prop::collection::vec(prop_oneof![4 => word(), 1 => redirection()], 0..5),
        prop::option::of(redirection()),
    )
        .prop_map(|(assigns, name, args, redirect)| {
            let mut parts: Vec<String> =
                assigns.into_iter().map(|(n, v)| format!("{n}={}", v.unwrap_or_default())).collect();
            parts.push(name);
            parts.extend(args);
            parts.extend(redirect);
            parts.join(" ")
        })
}

pub fn separator() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec![" && ", " || ", "; ", " | ", " |& ", " & ", "\n", "&&", ";", "|", " &&\n", "\\\n; "]),
        prop::bool::ANY,
    )
        .prop_map(|(s, tab)| if tab { s.replace(' ', "\t") } else { s.to_string() })
}

pub fn list(depth: u32) -> BoxedStrategy<String> {
    let command: BoxedStrategy<String> = if depth == 0 {
        simple().boxed()
    } else {
        prop_oneof![
            6 => simple(),
            1 => list(depth - 1).prop_map(|l| format!("( {l} )")),
            1 => list(depth - 1).prop_map(|l| format!("{{ {l}; }}")),
            1 => (list(depth - 1), list(depth - 1)).prop_map(|(c, b)| format!("if {c}; then {b}; fi")),
            1 => (prop::collection::vec(word(), 0..3), list(depth - 1))
                .prop_map(|(w, b)| format!("for x in {}; do {b}; done", w.join(" "))),
            1 => simple().prop_map(|s| format!("! {s}")),
            1 => (prop::sample::select(vec!["time ", "time -p ", "time -- ", "time -o f "]), simple())
                .prop_map(|(t, s)| format!("{t}{s}")),
            1 => list(depth - 1).prop_map(|l| format!("x=$({l})")),
        ]
        .boxed()
    };
    (command.clone(), prop::collection::vec((separator(), command), 0..3))
        .prop_map(|(first, rest)| {
            let mut line = first;
            for (sep, cmd) in rest {
                line.push_str(&sep);
                line.push_str(&cmd);
            }
            line
        })
        .boxed()
}

/// A command line: a list, an optional comment, and a few inserted metacharacters.
pub fn line() -> impl Strategy<Value = String> {
    (
        list(2),
        prop::option::of(text(8).prop_map(|t| format!(" #{}", t.replace('\n', " ")))),
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::sample::select(vec![
                    ' ', ';', '&', '|', '(', ')', '<', '>', '\'', '"', '\\', '$', '`', '#', '{', '}', '\n', '=', '~',
                ]),
            ),
            0..2,
        ),
    )
        .prop_map(|(list, comment, inserts)| {
            let mut chars: Vec<char> = list.chars().collect();
            chars.extend(comment.unwrap_or_default().chars());
            for (at, c) in inserts {
                let i = at.index(chars.len() + 1);
                chars.insert(i, c);
            }
            chars.into_iter().filter(|c| *c != '\0').collect()
        })
}
