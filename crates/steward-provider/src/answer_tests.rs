use super::*;
use serde_json::json;

fn tool(name: &str, properties: Value) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: String::new(),
        input_schema: json!({"type": "object", "properties": properties}),
        risk: steward_protocol::RiskLevel::Low,
        writes: false,
        path_inputs: Vec::new(),
        untrusted_output: false,
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool("read", json!({"path": {"type": "string"}})),
        tool("list", json!({"path": {"type": ["string", "null"]}, "recursive": {"type": ["boolean", "null"]}})),
        tool("write", json!({"path": {"type": "string"}, "content": {"type": "string"}})),
        tool("git_status", json!({})),
        tool("git_diff", json!({})),
    ]
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall { id: id.to_string(), name: name.to_string(), arguments }
}

fn answer(judged: Judged) -> (String, Vec<Echo>, bool) {
    match judged {
        Judged::Answer { text, echoes, restated } => (text, echoes, restated),
        Judged::NotAnswer(why) => panic!("not an answer: {why}"),
    }
}

fn not_answer(judged: Judged) -> String {
    match judged {
        Judged::NotAnswer(why) => why,
        other => panic!("taken as an answer: {other:?}"),
    }
}

#[test]
fn an_echo_then_a_response_restatement_answers_with_what_it_holds() {
    let previous = [call("call_recovered_1", "write", json!({"path": "hello.txt", "content": "hi"}))];
    let text = "{\"name\": \"write\", \"arguments\": {\"path\": \"hello.txt\", \"content\": \"hi\"}}\n\
                {\"response\": \"created hello.txt (2 bytes)\"}";
    let (text, echoes, restated) = answer(judge_answer(text, &previous, &tools()));
    assert_eq!(text, "created hello.txt (2 bytes)");
    assert!(restated);
    assert_eq!(echoes.len(), 1);
    assert_eq!(echoes[0].call_id, "call_recovered_1");
    assert_eq!(echoes[0].name, "write");
    assert_eq!(echoes[0].format, ToolCallFormat::Json);
}

#[test]
fn an_echo_in_tags_then_the_result_and_a_closing_tool_response_answers_with_the_result() {
    let previous = [call("c1", "git_diff", json!({}))];
    let text = "<tool_call>\n{\"name\": \"git_diff\", \"arguments\": {}}\n</tool_call>\n\
                diff --git a/x.py b/x.py\n+print('hi')\n</tool_response>";
    let (text, echoes, restated) = answer(judge_answer(text, &previous, &tools()));
    assert_eq!(text, "diff --git a/x.py b/x.py\n+print('hi')");
    assert!(restated);
    assert_eq!(echoes[0].format, ToolCallFormat::Hermes);
}

#[test]
fn an_echo_then_plain_text_answers_with_the_text_and_repeated_echoes_all_go() {
    let previous = [call("c1", "read", json!({"path": "notes.txt"}))];
    let echo = "{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}";
    let text = format!("{echo}\n{echo}\nThe code word is BLUEBIRD.");
    let (text, echoes, restated) = answer(judge_answer(&text, &previous, &tools()));
    assert_eq!(text, "The code word is BLUEBIRD.");
    assert_eq!(echoes.len(), 2);
    assert!(!restated);
    let python = "[read(path=\"notes.txt\")]\nIt holds BLUEBIRD.";
    let (text, echoes, _) = answer(judge_answer(python, &previous, &tools()));
    assert_eq!(text, "It holds BLUEBIRD.");
    assert_eq!(echoes[0].format, ToolCallFormat::Pythonic);
    let error = format!("{echo}\n{{\"error\": \"`notes.txt` does not exist\"}}");
    let (text, _, restated) = answer(judge_answer(&error, &previous, &tools()));
    assert_eq!((text.as_str(), restated), ("`notes.txt` does not exist", true));
}

#[test]
fn a_call_that_is_not_the_previous_one_is_never_an_answer() {
    // git_status given list's arguments, then prose: not the call just made.
    let previous = [call("c1", "list", json!({"path": ".", "recursive": true}))];
    let text = "{\"name\": \"git_status\", \"arguments\": {}}\nThe working tree is clean.";
    assert!(not_answer(judge_answer(text, &previous, &tools())).contains("`git_status`"));
    // The same tool with other arguments is a new call, not an echo.
    let other = "{\"name\": \"list\", \"arguments\": {\"path\": \"src\"}}\nHere are the files.";
    assert!(not_answer(judge_answer(other, &previous, &tools())).contains("followed by other text"));
    // A call in the middle of prose, or at its end.
    let middle = "I will look.\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\nThen I answer.";
    assert!(not_answer(judge_answer(middle, &[], &tools())).contains("among other text"));
    let end = "Reading it now:\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    assert!(not_answer(judge_answer(end, &[], &tools())).contains("follows other text"));
    // A bare call alone that recovery did not take (another format configured, recovery off).
    let alone = "{\"name\": \"git_status\", \"arguments\": {}}";
    assert!(!not_answer(judge_answer(alone, &[], &tools())).is_empty());
}

#[test]
fn an_echo_with_nothing_after_it_is_not_an_answer() {
    let previous = [call("c1", "git_status", json!({}))];
    let text = "{\"name\": \"git_status\", \"arguments\": {}}\n</tool_response>";
    assert!(not_answer(judge_answer(text, &previous, &tools())).contains("only repeats"));
}

#[test]
fn ordinary_answers_stay_answers() {
    let previous = [call("c1", "read", json!({"path": "notes.txt"}))];
    for text in [
        "The code word is BLUEBIRD.",
        "The config is:\n```json\n{\"name\": \"demo\", \"version\": 1}\n```",
        "Call `read` with a path to see a file.",
        "<think>{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}</think>It is BLUEBIRD.",
    ] {
        let (answer, echoes, restated) = answer(judge_answer(text, &previous, &tools()));
        assert!(echoes.is_empty() && !restated, "{text}");
        assert!(!answer.is_empty(), "{text}");
    }
    // Without an echo, a `{"response": …}`-looking answer is left as it is.
    let (text, _, restated) = answer(judge_answer("Done. </tool_response>", &previous, &tools()));
    assert_eq!((text.as_str(), restated), ("Done. </tool_response>", false));
}

#[test]
fn the_marked_start_keeps_a_short_start_and_says_how_much_is_left_out() {
    assert_eq!(marked_start("  short  "), "short");
    let long = "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n".repeat(50);
    let start = marked_start(&long);
    assert!(start.starts_with("{\"name\": \"read\""));
    assert!(start.chars().count() < MARKED_START_CHARS + 80, "{start}");
    let left = long.trim().chars().count() - MARKED_START_CHARS;
    assert!(start.ends_with(&format!("{left} more characters, is left out here]")), "{start}");
}

#[test]
fn a_placeholder_copied_from_the_replys_shape_is_not_an_answer() {
    // Qwen2.5-Coder-0.5B, told to reply `{"response": "…"}`, answered `…`.
    for placeholder in ["…", "...", " … ", "—"] {
        let why = not_answer(judge_answer(placeholder, &[], &tools()));
        assert!(why.contains("holds no word"), "{placeholder}: {why}");
    }
    assert_eq!(answer(judge_answer("42", &[], &tools())).0, "42");
    assert_eq!(answer(judge_answer("", &[], &tools())).0, "", "an empty reply is judged elsewhere, as before");
}
