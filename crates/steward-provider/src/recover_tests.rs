use super::*;
use crate::assemble::ToolCallAssembler;
use crate::formats::ToolCallFormat as F;
use crate::reply::ReplyBuilder;
use serde_json::{Value, json};
use steward_protocol::{ChatRequest, ChatResponse, FinishReason, StreamDelta};

fn spec(name: &str, input_schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: String::new(),
        input_schema,
        risk: steward_protocol::RiskLevel::Low,
        writes: false,
        path_inputs: Vec::new(),
        untrusted_output: false,
    }
}

fn declared(names: &[&str]) -> Vec<ToolSpec> {
    names.iter().map(|name| spec(name, json!({"type": "object"}))).collect()
}

/// The tools every fixture may call: `edit` has integer, boolean and object parameters.
fn tools() -> Vec<ToolSpec> {
    vec![
        spec(
            "read",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": ["integer", "null"]}}}),
        ),
        spec(
            "edit",
            json!({"type": "object", "properties": {
                "path": {"type": "string"}, "line": {"type": "integer"}, "all": {"type": "boolean"},
                "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}},
            }}),
        ),
        spec("list", json!({"type": "object"})),
        spec("brave_search", json!({"type": "object", "properties": {"query": {"type": "string"}}})),
    ]
}

/// A fixture: (row of the formats table, format, text, calls as (name, arguments)).
type Fixture = (u32, F, &'static str, Vec<(&'static str, Value)>);

/// One fixture per row of the formats table (some rows have two).
#[allow(
    clippy::too_many_lines,
    reason = "a table of literal fixtures, one entry per row of the formats table; split, it would no longer read as that table"
)]
fn fixtures() -> Vec<Fixture> {
    let read_a = || ("read", json!({"path": "a"}));
    let list = || ("list", json!({}));
    vec![
        (
            1,
            F::Hermes,
            "<think>Need the file.</think>\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"list\", \"arguments\": {}}\n</tool_call>",
            vec![read_a(), list()],
        ),
        (
            2,
            F::Qwen3Coder,
            "<tool_call>\n<function=edit>\n<parameter=path>\n007\n</parameter>\n<parameter=line>\n12\n</parameter>\n<parameter=all>\ntrue\n</parameter>\n<parameter=opts>\n{\"depth\": \"2\"}\n</parameter>\n</function>\n</tool_call>",
            vec![("edit", json!({"path": "007", "line": 12, "all": true, "opts": {"depth": 2}}))],
        ),
        (3, F::Json, "```json\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n```", vec![read_a()]),
        (
            4,
            F::Json,
            "{\"name\": \"read\", \"parameters\": {\"path\": \"a\", \"start_line\": \"3\"}}<|eom_id|>",
            vec![("read", json!({"path": "a", "start_line": 3}))],
        ),
        (
            5,
            F::Llama3Builtin,
            "<|python_tag|>brave_search.call(query=\"rust 2024\")",
            vec![("brave_search", json!({"query": "rust 2024"}))],
        ),
        (6, F::FunctionTag, "<function=read>{\"path\": \"a\"}</function>", vec![read_a()]),
        (
            7,
            F::Pythonic,
            "[read(path=\"a\", start_line=3), list()]",
            vec![("read", json!({"path": "a", "start_line": 3})), list()],
        ),
        (7, F::Pythonic, "<|python_start|>[read(path='a')]<|python_end|>", vec![read_a()]),
        (
            8,
            F::MistralV3,
            "[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}, \"id\": \"a1b2c3d4e\"}, {\"name\": \"list\", \"arguments\": {}, \"id\": \"a1b2c3d4e\"}]",
            vec![read_a(), list()],
        ),
        (
            9,
            F::MistralV11,
            "[THINK]Check first.[/THINK][TOOL_CALLS]read[ARGS]{\"path\": \"a\"}[TOOL_CALLS]list[ARGS]{}",
            vec![read_a(), list()],
        ),
        (
            10,
            F::DeepseekR1,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            vec![read_a()],
        ),
        (
            11,
            F::DeepseekV31,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>list<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            vec![read_a(), list()],
        ),
        (
            12,
            F::Dsml,
            "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"edit\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a</｜DSML｜parameter>\n<｜DSML｜parameter name=\"line\" string=\"false\">7</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            vec![("edit", json!({"path": "a", "line": 7}))],
        ),
        (
            13,
            F::Dsml,
            "<｜DSML｜tool_calls><｜DSML｜invoke name=\"edit\"><｜DSML｜parameter name=\"opts\" string=\"false\">{\"depth\": 1}</｜DSML｜parameter><｜DSML｜parameter name=\"all\" string=\"false\">true</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜tool_calls>",
            vec![("edit", json!({"opts": {"depth": 1}, "all": true}))],
        ),
        (
            14,
            F::Harmony,
            "<|start|>assistant<|channel|>analysis<|message|>Need to read.<|end|><|start|>assistant<|channel|>commentary to=functions.read <|constrain|>json<|message|>{\"path\": \"a\"}<|call|>",
            vec![read_a()],
        ),
        (
            15,
            F::KimiK2,
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_call_begin|>functions.list:1<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
            vec![read_a(), list()],
        ),
        (
            16,
            F::Glm45,
            "<tool_call>edit\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n<arg_key>line</arg_key>\n<arg_value>5</arg_value>\n</tool_call><tool_call>read<arg_key>path</arg_key><arg_value>a</arg_value></tool_call>",
            vec![("edit", json!({"path": "a", "line": 5})), read_a()],
        ),
        (
            17,
            F::MinimaxM2,
            "<minimax:tool_call>\n<invoke name=\"edit\">\n<parameter name=\"path\">a</parameter>\n<parameter name=\"all\">false</parameter>\n</invoke>\n</minimax:tool_call>",
            vec![("edit", json!({"path": "a", "all": false}))],
        ),
        (
            18,
            F::SeedOss,
            "<seed:tool_call>\n<function=edit>\n<parameter=path>a</parameter>\n<parameter=line>3</parameter>\n</function>\n</seed:tool_call>",
            vec![("edit", json!({"path": "a", "line": 3}))],
        ),
        (19, F::ToolCode, "```tool_code\nread(path=\"a\")\n```", vec![read_a()]),
        (
            20,
            F::FunctionGemma,
            "<start_function_call>call:edit{path:<escape>a<escape>,line:4}<end_function_call>",
            vec![("edit", json!({"path": "a", "line": 4}))],
        ),
        (21, F::Gemma4, "<|tool_call>call:read{path:<|\"|>a<|\"|>}<tool_call|>", vec![read_a()]),
        (22, F::Functools, "functools[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]", vec![read_a()]),
        (23, F::Functools, " functools[{\"name\": \"list\", \"arguments\": {}}]", vec![list()]),
        (24, F::FunctionaryV32, ">>>read\n{\"path\": \"a\"}>>>list\n{}", vec![read_a(), list()]),
        (25, F::Granite, "<|tool_call|>[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]", vec![read_a()]),
        (25, F::FunctionCall, "<function_call> {\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}", vec![read_a()]),
        (
            26,
            F::CommandR7b,
            "<|START_THINKING|>Read it.<|END_THINKING|><|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"read\", \"parameters\": {\"path\": \"a\"}}]<|END_ACTION|>",
            vec![read_a()],
        ),
        (
            27,
            F::Nemotron,
            "<TOOLCALL>[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]</TOOLCALL>",
            vec![read_a()],
        ),
        (28, F::Apertus, "<|tools_prefix|>[{\"read\": {\"path\": \"a\"}}]<|tools_suffix|>", vec![read_a()]),
        (29, F::Lfm2, "<|tool_call_start|>[read(path=\"a\")]<|tool_call_end|>", vec![read_a()]),
        (
            30,
            F::Internlm,
            "<|action_start|><|plugin|>\n{\"name\": \"read\", \"parameters\": {\"path\": \"a\"}}<|action_end|>",
            vec![read_a()],
        ),
        (
            31,
            F::Jamba,
            "<tool_calls>[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]</tool_calls>",
            vec![read_a()],
        ),
        (
            32,
            F::Json,
            "[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"list\", \"arguments\": {}}]",
            vec![read_a(), list()],
        ),
        (33, F::Olmo3, "<function_calls>\nread(path=\"a\")\nlist()\n</function_calls>", vec![read_a(), list()]),
        (
            34,
            F::Step3,
            "<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"edit\"><steptml:parameter name=\"path\">a</steptml:parameter><steptml:parameter name=\"line\">9</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
            vec![("edit", json!({"path": "a", "line": 9}))],
        ),
        (35, F::Json, "{\"tool_call\": {\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}}", vec![read_a()]),
        (
            35,
            F::Json,
            "{\"tool_calls\": [{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"list\", \"arguments\": {}}]}",
            vec![read_a(), list()],
        ),
        (
            36,
            F::FunctionCall,
            "<function_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</function_call>",
            vec![read_a()],
        ),
        (36, F::Pythonic, "read({\"path\": \"a\"})", vec![read_a()]),
        (
            36,
            F::ClineXml,
            "<read>\n<path>a</path>\n<start_line>2</start_line>\n</read>",
            vec![("read", json!({"path": "a", "start_line": 2}))],
        ),
    ]
}

fn request_for(tools: &[ToolSpec]) -> ChatRequest {
    ChatRequest {
        model: "m".into(),
        messages: Vec::new(),
        tools: tools.to_vec(),
        tool_choice: steward_protocol::ToolChoice::Auto,
        max_tokens: None,
        temperature: None,
        constrain: false,
    }
}

/// Streams `text` through a reply builder in the given pieces; returns the reply and the
/// deltas.
fn stream(pieces: &[&str], tools: &[ToolSpec], format: Option<F>, finish: &str) -> (ChatResponse, Vec<StreamDelta>) {
    let request = request_for(tools);
    let mut reply = ReplyBuilder::new(true, &request, ToolCallAssembler::default()).with_format(format);
    let mut deltas = Vec::new();
    for piece in pieces {
        reply.text.push_text(piece, &mut |d| deltas.push(d));
    }
    reply.set_finish(Some(finish));
    let response = reply.finish(&mut |d| deltas.push(d));
    (response, deltas)
}

/// The text and the reasoning the deltas carried, each concatenated.
fn shown(deltas: &[StreamDelta]) -> (String, String) {
    let mut text = String::new();
    let mut reasoning = String::new();
    for d in deltas {
        match d {
            StreamDelta::Text { text: t } => text.push_str(t),
            StreamDelta::Reasoning { text: t } => reasoning.push_str(t),
            _ => {}
        }
    }
    (text, reasoning)
}

/// Feeds `text` in every 2-way split (at every place a streamed UTF-8 delta can be cut) and
/// checks that the reply, the text shown and the reasoning shown are the same as when it
/// arrives whole. Returns the reply.
fn assert_same_however_split(text: &str, tools: &[ToolSpec], format: Option<F>) -> ChatResponse {
    let (whole, whole_deltas) = stream(&[text], tools, format, "stop");
    let whole_shown = shown(&whole_deltas);
    for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
        let (reply, deltas) = stream(&[&text[..cut], &text[cut..]], tools, format, "stop");
        assert_eq!(reply, whole, "cut at byte {cut} of {text:?}");
        assert_eq!(shown(&deltas), whole_shown, "deltas, cut at byte {cut} of {text:?}");
    }
    whole
}

fn names_and_args(calls: &[ToolCall]) -> Vec<(String, Value)> {
    calls.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect()
}

fn expected(calls: &[(&str, Value)]) -> Vec<(String, Value)> {
    calls.iter().map(|(n, a)| (n.to_string(), a.clone())).collect()
}

#[test]
fn every_row_of_the_formats_table_is_recovered_detected_configured_and_streamed() {
    let tools = tools();
    let mut rows: Vec<u32> = Vec::new();
    for (row, format, text, calls) in fixtures() {
        rows.push(row);
        let want = expected(&calls);
        for setting in [None, Some(format)] {
            let r = recover_with_format(text, &tools, setting);
            assert_eq!(names_and_args(&r.tool_calls), want, "row {row} ({format}, setting {setting:?}): {text}");
            assert_eq!(r.format, Some(format), "row {row}");
            assert_eq!(r.text, "", "row {row}");
            // Every recovered call is reported, naming the format.
            assert_eq!(r.repairs.len(), r.tool_calls.len(), "row {row}");
            assert!(r.repairs.iter().all(|x| x.format == format.name()), "row {row}: {:?}", r.repairs);
            let reply = assert_same_however_split(text, &tools, setting);
            assert_eq!(names_and_args(&reply.tool_calls), want, "row {row} streamed");
            assert_eq!(reply.finish_reason, Some(FinishReason::ToolCalls));
            assert_eq!(reply.text, "");
            let (_, deltas) = stream(&[text], &tools, setting, "stop");
            assert_eq!(shown(&deltas).0, "", "row {row}: no markup is shown as text");
        }
    }
    rows.dedup();
    assert_eq!(rows, (1..=36).collect::<Vec<_>>(), "a fixture for every row, in order");
}

#[test]
fn a_configured_format_reads_only_that_format() {
    let tools = tools();
    for (row, format, text, _) in fixtures() {
        // Another format than the one written: the text stays text, and says why.
        let other = if format == F::Hermes { F::KimiK2 } else { F::Hermes };
        let r = recover_with_format(text, &tools, Some(other));
        assert!(r.tool_calls.is_empty(), "row {row} read as {other}");
        let (shown_text, _) = split_think(text);
        let err = parse_calls(&shown_text, &tools, Some(other)).expect_err("other format");
        assert!(matches!(err, RecoverError::OtherFormat { found, .. } if found == format), "row {row}: {err}");
    }
}

/// Trap: calls cut off before they closed (output limit, `finish_reason: tool_calls` from
/// llama-cpp-python, a server's healed partial JSON) are never run with partial arguments.
#[test]
fn a_call_cut_anywhere_is_never_recovered_with_partial_arguments() {
    let tools = tools();
    for (row, format, text, calls) in fixtures() {
        let want = expected(&calls);
        for cut in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
            let got = names_and_args(&recover_with_format(&text[..cut], &tools, Some(format)).tool_calls);
            assert!(want.starts_with(&got), "row {row}, cut at {cut}: {:?} gave {got:?}", &text[..cut]);
        }
        // Reported as tool_calls by the server, cut by the output limit: no call, and the text
        // is unusable markup, not an answer.
        let cut = &text[..text.char_indices().map(|(i, _)| i).nth_back(3).unwrap_or(0)];
        let (reply, _) = stream(&[cut], &tools, Some(format), "tool_calls");
        if reply.tool_calls.len() < want.len() {
            assert!(reply.tool_calls.is_empty() || want.starts_with(&names_and_args(&reply.tool_calls)));
        }
    }
    let (reply, _) = stream(&["<tool_call>{\"name\": \"read\", \"arguments\": {\"pa"], &tools, None, "tool_calls");
    assert!(reply.tool_calls.is_empty());
    let why = crate::markup::unparsed_tool_markup(&reply.text, &tools).expect("unusable markup");
    assert!(why.contains("cut off"), "{why}");
}

/// Trap: several calls in one message each get their own id, even when the model wrote the
/// same id twice (Mistral's 9-character ids).
#[test]
fn several_calls_get_distinct_ids() {
    let tools = tools();
    let (_, _, text, _) = fixtures().into_iter().find(|f| f.0 == 8).expect("row 8");
    let r = recover_text_tool_calls(text, &tools);
    let ids: Vec<&str> = r.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_recovered_1", "call_recovered_2"]);
}

/// Trap: `parameters` and `arguments` both name the arguments, never both at once.
#[test]
fn parameters_and_arguments_are_the_same_key_but_not_both() {
    let d = declared(&["read"]);
    for text in [r#"{"name":"read","parameters":{"path":"a"}}"#, r#"{"name":"read","arguments":{"path":"a"}}"#] {
        assert_eq!(recover_text_tool_calls(text, &d).tool_calls[0].arguments, json!({"path": "a"}));
    }
    let err = parse_calls(r#"{"name":"read","parameters":{},"arguments":{}}"#, &d, None).expect_err("both");
    assert!(err.to_string().contains("both arguments and parameters"), "{err}");
}

/// Trap: DeepSeek's tokens use the full-width bar `｜` and `▁`; ASCII look-alikes are not
/// its tokens, and a stream cut inside a multi-byte token at the byte level reads the same.
#[test]
fn deepseek_tokens_are_full_width_and_survive_byte_splits() {
    let tools = tools();
    let ascii =
        "<|tool calls begin|><|tool call begin|>read<|tool sep|>{\"path\": \"a\"}<|tool call end|><|tool calls end|>";
    assert!(recover_text_tool_calls(ascii, &tools).tool_calls.is_empty());
    let fixture = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let body = format!(
        "data: {}\n\ndata: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": fixture}}]})
    );
    let request = request_for(&tools);
    let bytes = body.as_bytes();
    for cut in 0..=bytes.len() {
        let pieces = [bytes[..cut].to_vec(), bytes[cut..].to_vec()];
        let (reply, _) = crate::fuzzing::read_stream(crate::fuzzing::Protocol::OpenAi, &pieces, &request, true);
        let reply = reply.expect("reply");
        assert_eq!(names_and_args(&reply.tool_calls), vec![("read".to_string(), json!({"path": "a"}))], "cut {cut}");
    }
}

/// Trap: XML formats write every value as text; the schema gives it its type, and a value the
/// schema declares a string stays a string.
#[test]
fn xml_values_take_the_schema_types() {
    let tools = tools();
    for (format, text) in [
        (
            F::Qwen3Coder,
            "<tool_call><function=edit><parameter=path>12</parameter><parameter=line>12</parameter><parameter=all>false</parameter><parameter=opts>{\"depth\": 3}</parameter></function></tool_call>",
        ),
        (
            F::Glm45,
            "<tool_call>edit<arg_key>path</arg_key><arg_value>12</arg_value><arg_key>line</arg_key><arg_value>12</arg_value><arg_key>all</arg_key><arg_value>false</arg_value><arg_key>opts</arg_key><arg_value>{\"depth\": 3}</arg_value></tool_call>",
        ),
        (
            F::MinimaxM2,
            "<minimax:tool_call><invoke name=\"edit\"><parameter name=\"path\">12</parameter><parameter name=\"line\">12</parameter><parameter name=\"all\">false</parameter><parameter name=\"opts\">{\"depth\": 3}</parameter></invoke></minimax:tool_call>",
        ),
        (
            F::Dsml,
            "<｜DSML｜function_calls><｜DSML｜invoke name=\"edit\"><｜DSML｜parameter name=\"path\" string=\"true\">12</｜DSML｜parameter><｜DSML｜parameter name=\"line\" string=\"true\">12</｜DSML｜parameter><｜DSML｜parameter name=\"all\" string=\"true\">false</｜DSML｜parameter><｜DSML｜parameter name=\"opts\" string=\"true\">{\"depth\": 3}</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
        ),
    ] {
        let r = recover_with_format(text, &tools, Some(format));
        assert_eq!(
            r.tool_calls[0].arguments,
            json!({"path": "12", "line": 12, "all": false, "opts": {"depth": 3}}),
            "{format}"
        );
        assert!(r.repairs[0].detail.contains("`line`") && r.repairs[0].detail.contains("`opts`"), "{:?}", r.repairs);
        assert!(!r.repairs[0].detail.contains("`path`"), "{:?}", r.repairs);
    }
    // Not unambiguous: left as written for the gate's schema check to refuse.
    let r = recover_with_format(
        "<tool_call><function=edit><parameter=line>twelve</parameter></function></tool_call>",
        &tools,
        None,
    );
    assert_eq!(r.tool_calls[0].arguments, json!({"line": "twelve"}));
}

/// Trap: reasoning wrappers (`<think>`, a lone `</think>`, `[THINK]`, harmony `analysis`,
/// `<|START_THINKING|>`) are reasoning: markup inside them is never a call and never an
/// answer, however the stream was cut.
#[test]
fn markup_inside_reasoning_is_never_a_call_nor_an_answer() {
    let tools = tools();
    let call = "<tool_call>{\"name\": \"edit\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    for text in [
        format!("<think>Maybe {call}</think>The answer is 4."),
        format!("Maybe {call}</think>The answer is 4."),
        format!("[THINK]Maybe {call}[/THINK]The answer is 4."),
        format!("<|START_THINKING|>Maybe {call}<|END_THINKING|>The answer is 4."),
        format!(
            "<|start|>assistant<|channel|>analysis<|message|>Maybe {call}<|end|><|start|>assistant<|channel|>final<|message|>The answer is 4.<|return|>"
        ),
    ] {
        let r = recover_text_tool_calls(&text, &tools);
        assert!(r.tool_calls.is_empty(), "{text}");
        assert_eq!(r.text, "The answer is 4.", "{text}");
        assert!(r.reasoning.contains("<tool_call>"), "{text}");
        assert_eq!(crate::markup::unparsed_tool_markup(&text, &tools), None, "{text}");
        // Streamed in two pieces anywhere: the same reply, and no reasoning shown as text.
        let whole = stream(&[&text], &tools, None, "stop").0;
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let (reply, deltas) = stream(&[&text[..cut], &text[cut..]], &tools, None, "stop");
            assert_eq!(reply, whole, "cut {cut}");
            let (_, reasoning) = shown(&deltas);
            assert!(reasoning.contains("Maybe <tool_call>"), "cut {cut}: {deltas:?}");
            if !text.starts_with("Maybe") {
                assert_eq!(shown(&deltas).0, "The answer is 4.", "cut {cut}");
            }
        }
    }
    // A unclosed block at the end (output limit) is still reasoning.
    let r = recover_text_tool_calls(&format!("<think>{call}"), &tools);
    assert!(r.tool_calls.is_empty() && r.text.is_empty());
    // After the reasoning, the call itself is recovered.
    let r = recover_text_tool_calls(&format!("plan</think>\n{call}"), &tools);
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.reasoning, "plan");
}

#[test]
fn llama_cpp_generic_response_is_an_answer() {
    let tools = tools();
    let r = recover_text_tool_calls("{\"response\": \"All done.\"}", &tools);
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.text, "All done.");
    let (reply, deltas) = stream(&["{\"respo", "nse\": \"All done.\"}"], &tools, None, "stop");
    assert_eq!(reply.text, "All done.");
    assert_eq!(shown(&deltas).0, "All done.");
}

#[test]
fn several_bare_json_calls_in_a_row_are_all_recovered() {
    let d = declared(&["read", "list"]);
    for text in [
        r#"{"name":"read","arguments":{"path":"a"}}{"name":"list","arguments":{"path":"."}}"#,
        "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n\n{\"name\": \"list\", \"arguments\": {\"path\": \".\"}}",
        r#"[TOOL_CALLS][{"name":"read","arguments":{"path":"a"},"id":"a1b2c3d4e"},{"name":"list","arguments":{"path":"."}}]"#,
        r#"{"tool_calls":[{"name":"read","arguments":{"path":"a"}},{"name":"list","arguments":{"path":"."}}]}"#,
    ] {
        let r = recover_text_tool_calls(text, &d);
        let names: Vec<&str> = r.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["read", "list"], "{text}");
        assert_eq!(r.tool_calls[1].id, "call_recovered_2");
        assert_eq!(r.text, "");
    }
    // One undeclared call spoils the lot: nothing of it runs.
    let r = recover_text_tool_calls(r#"{"name":"read","arguments":{}} {"name":"rm","arguments":{}}"#, &d);
    assert!(r.tool_calls.is_empty());
}

#[test]
fn string_values_are_coerced_to_the_schema_scalar_types_and_reported() {
    let edit = spec(
        "edit",
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "line": {"type": "integer"},
            "ratio": {"type": ["number", "null"]},
            "all": {"type": "boolean"},
            "label": {"type": ["string", "integer"]},
        }}),
    );
    let r = recover_text_tool_calls(
        r#"{"name":"edit","arguments":{"path":"1","line":"1","ratio":"0.5","all":"true","label":"7"}}"#,
        std::slice::from_ref(&edit),
    );
    assert_eq!(r.tool_calls[0].arguments, json!({"path":"1","line":1,"ratio":0.5,"all":true,"label":"7"}));
    assert_eq!(r.repairs.len(), 1);
    assert_eq!(r.repairs[0].call_id, "call_recovered_1");
    assert_eq!(r.repairs[0].format, "json");
    for field in ["`line`", "`ratio`", "`all`"] {
        assert!(r.repairs[0].detail.contains(field), "{}", r.repairs[0].detail);
    }
    let r = recover_text_tool_calls(r#"{"name":"edit","arguments":{"line":"one","all":"yes"}}"#, &[edit]);
    assert_eq!(r.tool_calls[0].arguments, json!({"line":"one","all":"yes"}));
    assert_eq!(r.repairs[0].detail, "");
}

#[test]
fn anything_else_stays_text() {
    let d = declared(&["read"]);
    for text in [
        r#"{"name": "rm", "arguments": {}}"#,
        r#"[{"name": "read"}, {"name": "rm"}]"#,
        r#"Call {"name": "read", "arguments": {}} now"#,
        r#"{"name": "read", "arguments": {}, "extra": 1}"#,
        r#"{"name": "read", "arguments": [1]}"#,
        r#"{"name": "read", "arguments": {}"#,
        "<tool_call>{\"name\": \"read\"}</tool_call> and then prose",
        "```json\n{\"name\": \"read\"}\n```\n```json\n{\"name\": \"read\"}\n```",
        "```python\nprint(1)\n```",
        "<function=read>prose<parameter=path>a</parameter></function>",
        "<function=read><parameter=path>a</parameter></function> and more",
        "[read(path=\"a\"), rm()]",
        "read(path=os.remove('x'))",
        ">>>all\nJust text.",
        "{}",
        "[]",
        "The answer is 42.",
    ] {
        let r = recover_text_tool_calls(text, &d);
        assert!(r.tool_calls.is_empty(), "{text}");
        assert_eq!(r.text, text.trim(), "{text}");
    }
}

#[test]
fn plain_answers_stream_at_once_and_possible_markup_is_held() {
    let tools = tools();
    let (_, deltas) = stream(&["Hello", " world"], &tools, None, "stop");
    assert_eq!(deltas, vec![StreamDelta::Text { text: "Hello".into() }, StreamDelta::Text { text: " world".into() }]);
    // With a configured format, only that format's opener is held back.
    let request = request_for(&tools);
    for (format, piece, held) in
        [(Some(F::KimiK2), "{\"a\"", false), (None, "{\"a\"", true), (Some(F::KimiK2), "<|tool_calls_sec", true)]
    {
        let mut reply = ReplyBuilder::new(true, &request, ToolCallAssembler::default()).with_format(format);
        let mut deltas = Vec::new();
        reply.text.push_text(piece, &mut |d| deltas.push(d));
        assert_eq!(deltas.is_empty(), held, "{format:?} {piece}");
    }
}

/// `reasoning_content` / `reasoning` fields of an OpenAI-compatible stream are reasoning: shown
/// as reasoning deltas, never text, and markup in them is never a call; a `<think>` tag split
/// across two chunks is still reasoning.
#[test]
fn reasoning_fields_and_split_think_tags_in_a_stream_are_reasoning() {
    let tools = tools();
    let request = request_for(&tools);
    let chunk = |delta: Value| format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta}]}));
    let body = [
        chunk(json!({"reasoning_content": "Maybe <tool_call>{\"name\": \"edit\", "})),
        chunk(json!({"reasoning": "\"arguments\": {}}</tool_call>"})),
        chunk(json!({"content": "<thi"})),
        chunk(json!({"content": "nk>tagged</th"})),
        chunk(json!({"content": "ink>Four."})),
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_string(),
    ]
    .concat();
    let (reply, deltas) =
        crate::fuzzing::read_stream(crate::fuzzing::Protocol::OpenAi, &[body.into_bytes()], &request, true);
    let reply = reply.expect("reply");
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.text, "Four.");
    assert!(
        reply.reasoning.contains("Maybe <tool_call>") && reply.reasoning.ends_with("tagged"),
        "{}",
        reply.reasoning
    );
    let (text, reasoning) = shown(&deltas);
    assert_eq!(text, "Four.");
    assert!(reasoning.contains("</tool_call>") && reasoning.contains("tagged"), "{reasoning}");
}
