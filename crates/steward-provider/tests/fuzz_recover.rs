//! Fuzz target `recover`: text tool-call recovery and the markup check, in the JSON and
//! tag formats (bare JSON objects, arrays, several in a row, `{"tool_call": …}`,
//! `{"tool_calls": […]}`, `[TOOL_CALLS]`, `<function=NAME>{…}</function>`,
//! `<function=NAME><parameter=K>v</parameter></function>`, `<tool_call>` blocks, fenced code
//! blocks), with `<think>` blocks and whitespace around.
//!
//! Invariants: recovery never yields a call to an undeclared tool, nor arguments that are not
//! an object; text is empty exactly when calls were recovered; calls written with declared
//! names come back as written; a well-formed call naming an undeclared tool is not recovered
//! and is reported as unused tool markup; nothing panics on arbitrary text.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use steward_fuzz::proptest;
use steward_protocol::{RiskLevel, ToolSpec};
use steward_provider::recover::split_think;
use steward_provider::{recover_text_tool_calls, unparsed_tool_markup};

const DECLARED: &[&str] = &["read_file", "list_dir", "shell_command", "apply_patch"];
const UNDECLARED: &[&str] = &["rm", "delete_all", "read", "Read_file", "read_files", "shell"];

fn tools() -> Vec<ToolSpec> {
    DECLARED
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: format!("{n} tool"),
            input_schema: json!({"type": "object"}),
            risk: RiskLevel::Low,
            writes: false,
            path_inputs: vec![],
            untrusted_output: false,
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Object,
    Array,
    Concatenated,
    ToolCallWrapper,
    ToolCallsWrapper,
    Mistral,
    Llama,
    Qwen,
    Hermes,
    Fenced,
}

const FORMATS: &[Format] = &[
    Format::Object,
    Format::Array,
    Format::Concatenated,
    Format::ToolCallWrapper,
    Format::ToolCallsWrapper,
    Format::Mistral,
    Format::Llama,
    Format::Qwen,
    Format::Hermes,
    Format::Fenced,
];

#[derive(Debug, Clone)]
struct Call {
    name: String,
    arguments: Map<String, Value>,
}

#[derive(Debug, Clone)]
struct Case {
    format: Format,
    calls: Vec<Call>,
    think: Option<String>,
    pad: String,
}

/// Whether the format carries one call only.
fn single(format: Format) -> bool {
    matches!(format, Format::Object | Format::ToolCallWrapper)
}

fn value(qwen: bool) -> BoxedStrategy<Value> {
    if qwen {
        return "[a-zA-Z0-9 ._/-]{0,12}".prop_map(Value::String).boxed();
    }
    prop_oneof![
        any::<String>().prop_map(Value::String),
        "[a-z <>/{}\\[\\]\"]{0,12}".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        prop::collection::vec("[a-z]{0,4}", 0..3).prop_map(|v| json!(v)),
    ]
    .boxed()
}

fn call(declared: bool, qwen: bool) -> impl Strategy<Value = Call> {
    let names = if declared { DECLARED } else { UNDECLARED };
    (prop::sample::select(names), prop::collection::btree_map("[a-z_]{1,8}", value(qwen), 0..4))
        .prop_map(|(name, args)| Call { name: name.to_string(), arguments: args.into_iter().collect() })
}

fn case(declared: bool) -> impl Strategy<Value = Case> {
    (prop::sample::select(FORMATS), prop::option::of("[a-z <>\n]{0,20}"), "[ \n\t]{0,3}").prop_flat_map(
        move |(format, think, pad)| {
            let count = if single(format) { 1..2 } else { 1..4 };
            prop::collection::vec(call(declared, format == Format::Qwen), count).prop_map(move |calls| Case {
                format,
                calls,
                think: think.clone(),
                pad: pad.clone(),
            })
        },
    )
}

fn object(c: &Call) -> Value {
    json!({"name": c.name, "arguments": c.arguments})
}

fn write(case: &Case) -> String {
    let objects: Vec<String> = case.calls.iter().map(|c| object(c).to_string()).collect();
    let body = match case.format {
        Format::Object => objects.concat(),
        Format::Array => format!("[{}]", objects.join(", ")),
        Format::Concatenated => objects.join("\n"),
        Format::ToolCallWrapper => json!({"tool_call": object(&case.calls[0])}).to_string(),
        Format::ToolCallsWrapper => {
            json!({"tool_calls": case.calls.iter().map(object).collect::<Vec<_>>()}).to_string()
        }
        Format::Mistral => format!("[TOOL_CALLS][{}]", objects.join(",")),
        Format::Llama => case
            .calls
            .iter()
            .map(|c| format!("<function={}>{}</function>", c.name, Value::Object(c.arguments.clone())))
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Qwen => case
            .calls
            .iter()
            .map(|c| {
                let params: String = c
                    .arguments
                    .iter()
                    .map(|(k, v)| format!("<parameter={k}>\n{}\n</parameter>\n", v.as_str().unwrap_or_default()))
                    .collect();
                format!("<tool_call>\n<function={}>\n{params}</function>\n</tool_call>", c.name)
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Hermes => {
            objects.iter().map(|o| format!("<tool_call>\n{o}\n</tool_call>")).collect::<Vec<_>>().join("\n")
        }
        Format::Fenced => format!("```json\n[{}]\n```", objects.join(",")),
    };
    let think =
        case.think.as_ref().map(|t| format!("<think>{}</think>", t.replace("</think>", ""))).unwrap_or_default();
    format!("{think}{}{body}{}", case.pad, case.pad)
}

/// What holds for any text.
fn check_any(text: &str, tools: &[ToolSpec]) -> Result<(), TestCaseError> {
    let got = recover_text_tool_calls(text, tools);
    for call in &got.tool_calls {
        prop_assert!(DECLARED.contains(&call.name.as_str()), "a call to the undeclared tool {:?}", call.name);
        prop_assert!(call.arguments.is_object(), "arguments that are not an object: {}", call.arguments);
    }
    prop_assert_eq!(got.text.is_empty() && !got.tool_calls.is_empty(), !got.tool_calls.is_empty());
    if got.tool_calls.is_empty() {
        // llama.cpp's generic `{"response": "…"}` is the answer it holds.
        let shown = split_think(text).0;
        let answer = match serde_json::from_str::<Value>(&shown) {
            Ok(Value::Object(o)) if o.len() == 1 => {
                o.get("response").and_then(Value::as_str).filter(|r| !r.trim().is_empty()).map(str::to_string)
            }
            _ => None,
        };
        prop_assert_eq!(&got.text, &answer.unwrap_or(shown), "unrecovered text is not the text without reasoning");
    }
    let _ = unparsed_tool_markup(text, tools);
    Ok(())
}

fn check_case((good, bad): (Case, Case)) -> Result<(), TestCaseError> {
    let tools = tools();
    let text = write(&good);
    check_any(&text, &tools)?;
    let got = recover_text_tool_calls(&text, &tools);
    prop_assert_eq!(got.tool_calls.len(), good.calls.len(), "{:?} recovers {:?}", text, got.tool_calls);
    for (call, want) in got.tool_calls.iter().zip(&good.calls) {
        prop_assert_eq!(&call.name, &want.name);
        prop_assert_eq!(&call.arguments, &Value::Object(want.arguments.clone()), "arguments change in {:?}", text);
    }
    let text = write(&bad);
    check_any(&text, &tools)?;
    let got = recover_text_tool_calls(&text, &tools);
    prop_assert!(got.tool_calls.is_empty(), "{text:?} recovers calls to undeclared tools");
    prop_assert!(unparsed_tool_markup(&text, &tools).is_some(), "{text:?} is not reported as tool markup");
    Ok(())
}

#[test]
fn fuzz_recover() {
    let tools = tools();
    steward_fuzz::run(
        "recover",
        prop_oneof![
            3 => (case(true), case(false)).prop_map(Ok),
            1 => prop_oneof![
                any::<String>(),
                "[{}\\[\\]\":, a-z<>=/_`\n]{0,80}",
                (case(true), any::<prop::sample::Index>(), "[{}\\[\\]\"<>/,]").prop_map(|(c, at, junk)| {
                    let mut text = write(&c);
                    let mut i = at.index(text.len() + 1);
                    while !text.is_char_boundary(i) {
                        i -= 1;
                    }
                    text.insert_str(i, &junk);
                    text
                }),
            ]
            .prop_map(Err),
        ],
        |bytes| vec![Err(String::from_utf8_lossy(bytes).into_owned())],
        |input: Result<(Case, Case), String>| match input {
            Ok(pair) => check_case(pair),
            Err(text) => check_any(&text, &tools),
        },
    );
}
