use super::*;
use serde_json::json;
use steward_protocol::{ChatRequest, Message, RiskLevel, StreamDelta};

use crate::assemble::ToolCallAssembler;
use crate::reply::ReplyBuilder;

fn tool(name: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        input_schema: schema,
        risk: RiskLevel::Safe,
        writes: false,
        path_inputs: Vec::new(),
        untrusted_output: false,
    }
}

fn tools() -> Vec<ToolSpec> {
    vec![
        tool(
            "read",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "file to read"},
                "limit": {"type": "integer"}
            }, "required": ["path"]}),
        ),
        tool(
            "edit",
            json!({"type": "object", "properties": {
                "path": {"type": "string"}, "old": {"type": "string"}, "new": {"type": "string"}
            }, "required": ["path", "old", "new"]}),
        ),
        tool("git_status", json!({"type": "object", "properties": {}})),
    ]
}

fn schema(choice: &ToolChoice) -> Value {
    serde_json::from_str(&reply_schema_text(&tools(), choice).expect("something to constrain")).expect("valid JSON")
}

fn allows(schema: &Value, reply: Value) -> bool {
    jsonschema::validator_for(schema).expect("a valid schema").is_valid(&reply)
}

#[test]
fn the_reply_schema_allows_exactly_a_call_of_an_offered_tool_or_an_answer() {
    let s = schema(&ToolChoice::Auto);
    assert!(allows(&s, json!({"name": "read", "arguments": {"path": "notes.txt"}})));
    assert!(allows(&s, json!({"name": "read", "arguments": {"path": "notes.txt", "limit": 3}})));
    assert!(allows(&s, json!({"name": "git_status", "arguments": {}})));
    assert!(allows(&s, json!({"response": "The code word is PELICAN."})));
    // What small models wrote unconstrained: none of it can be written now.
    assert!(!allows(&s, json!({"name": "mul", "arguments": {"a": 2, "b": 3}})), "a name not offered");
    assert!(!allows(&s, json!({"name": "git_status", "arguments": {"path": ".", "recursive": true}})), "extra keys");
    assert!(!allows(&s, json!({"name": "read", "arguments": {}})), "a required argument missing");
    assert!(!allows(&s, json!({"name": "read", "arguments": {"path": 7}})), "a value of the wrong type");
    let dump = json!({"name": "edit", "arguments": {"type": "object", "properties": {"path": {"type": "string"}}}});
    assert!(!allows(&s, dump), "a tool's own schema as its arguments");
    assert!(!allows(&s, json!({"name": "read", "arguments": {"path": "a"}, "response": "both"})));
    assert!(!allows(&s, json!({"error": "no"})));
    assert!(!allows(&s, json!("plain text")));
}

#[test]
fn a_forced_choice_narrows_the_schema_and_none_leaves_nothing_to_constrain() {
    let named = schema(&ToolChoice::Named("edit".into()));
    assert!(allows(&named, json!({"name": "edit", "arguments": {"path": "a", "old": "b", "new": "c"}})));
    assert!(!allows(&named, json!({"name": "read", "arguments": {"path": "a"}})));
    assert!(!allows(&named, json!({"response": "done"})), "a forced call cannot be an answer");
    let required = schema(&ToolChoice::Required);
    assert!(allows(&required, json!({"name": "read", "arguments": {"path": "a"}})));
    assert!(!allows(&required, json!({"response": "done"})));
    assert_eq!(reply_schema_text(&tools(), &ToolChoice::None), None);
    assert_eq!(reply_schema_text(&[], &ToolChoice::Auto), None);
    assert_eq!(reply_schema_text(&tools(), &ToolChoice::Named("gone".into())), None);
}

#[test]
fn the_schema_text_keeps_the_order_a_model_writes_in() {
    let text = reply_schema_text(&tools(), &ToolChoice::Auto).unwrap();
    let edit = &text[text.find("\"const\":\"edit\"").unwrap()..];
    assert!(edit.find("\"arguments\"").is_some(), "{text}");
    // Grammar-based servers make the model write properties in the schema's order: the name
    // before the arguments, and required arguments in the order the tool declares them.
    let (path, old, new) =
        (edit.find("\"path\":").unwrap(), edit.find("\"old\":").unwrap(), edit.find("\"new\":").unwrap());
    assert!(path < old && old < new, "{edit}");
    let read = &text[text.find("\"const\":\"read\"").unwrap()..];
    assert!(read.find("\"path\":").unwrap() < read.find("\"limit\":").unwrap(), "required first: {read}");
    let name = text.find("\"name\":{\"const\"").unwrap();
    assert!(name < text.find("\"arguments\":").unwrap());
    // A property named twice in `required` (or not at all) is written once.
    let odd =
        tool("odd", json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a", "b"]}));
    let text = reply_schema_text(&[odd], &ToolChoice::Required).unwrap();
    assert!(serde_json::from_str::<Value>(&text).is_ok(), "{text}");
    assert_eq!(text.matches("\"a\":{").count(), 1, "{text}");
}

fn request() -> ChatRequest {
    ChatRequest {
        model: "qwen".into(),
        messages: vec![Message::system("You are Steward."), Message::user("read notes.txt")],
        tools: tools(),
        tool_choice: ToolChoice::Auto,
        max_tokens: Some(256),
        temperature: None,
        constrain: false,
    }
}

fn constrained_body(kind: ServerKind) -> (String, Value) {
    let req = request();
    let mut body = crate::openai::render_request(&req, "qwen", true, None, None);
    let text = constrain(&mut body, &req, kind).expect("constrained");
    let sent: Value = serde_json::from_str(&text).expect("the body is JSON");
    (text, sent)
}

#[test]
fn a_constrained_request_lists_the_tools_in_the_system_message_and_carries_the_schema() {
    let (text, sent) = constrained_body(ServerKind::LlamaCpp);
    assert!(sent.get("tools").is_none() && sent.get("tool_choice").is_none(), "{sent}");
    assert_eq!(sent["max_tokens"], 256);
    assert_eq!(sent["stream"], true);
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are Steward.\n\nReply with exactly one JSON object"), "{system}");
    assert!(system.contains("- read: The read tool. Arguments: {"), "{system}");
    assert!(system.contains("{\"response\": \"…\"}"), "{system}");
    assert_eq!(sent["messages"][1]["content"], "read notes.txt");
    assert!(allows(&sent["json_schema"], json!({"name": "read", "arguments": {"path": "a"}})));
    assert!(sent.get("response_format").is_none());
    // The schema goes in as written, its order kept.
    assert!(text.contains("\"json_schema\":{\"anyOf\":[{\"type\":\"object\",\"properties\":{\"name\""), "{text}");

    let (_, sent) = constrained_body(ServerKind::Ollama);
    assert!(sent.get("json_schema").is_none());
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "reply");
    let schema = &sent["response_format"]["json_schema"]["schema"];
    assert!(allows(schema, json!({"response": "hi"})));

    // After a tool result, the model is reminded that it may answer now; a forced call is not.
    let mut req = request();
    req.messages.push(Message::assistant(
        "",
        vec![steward_protocol::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "notes.txt"}),
        }],
    ));
    req.messages.push(Message::tool_result("c1", "The code word is PELICAN.\n", false));
    let mut body = crate::openai::render_request(&req, "qwen", false, None, None);
    let sent: Value = serde_json::from_str(&constrain(&mut body, &req, ServerKind::LlamaCpp).unwrap()).unwrap();
    assert_eq!(sent["messages"][3]["content"], format!("The code word is PELICAN.\n\n\n{ANSWER_REMINDER}"));
    assert_eq!(sent["messages"][2]["tool_calls"][0]["function"]["name"], "read", "earlier calls stay native");
    req.tool_choice = ToolChoice::Required;
    let mut body = crate::openai::render_request(&req, "qwen", false, None, None);
    let sent: Value = serde_json::from_str(&constrain(&mut body, &req, ServerKind::LlamaCpp).unwrap()).unwrap();
    assert_eq!(sent["messages"][3]["content"], "The code word is PELICAN.\n");

    // Without a system message, one is added for the listing.
    let mut req = request();
    req.messages.remove(0);
    let mut body = crate::openai::render_request(&req, "qwen", false, None, None);
    let sent: Value = serde_json::from_str(&constrain(&mut body, &req, ServerKind::Vllm).unwrap()).unwrap();
    assert_eq!(sent["messages"][0]["role"], "system");
    assert!(sent["messages"][0]["content"].as_str().unwrap().starts_with("Reply with exactly one JSON object"));
}

#[test]
fn auto_constrains_retries_only_on_a_local_server_the_probe_recognised() {
    use ConstrainedSetting::*;
    let when = |c: Constraint| c.when;
    assert_eq!(when(decide(Auto, true, Some(ServerKind::LlamaCpp))), Constrained::Retries);
    assert_eq!(when(decide(Auto, true, Some(ServerKind::Ollama))), Constrained::Retries);
    assert_eq!(when(decide(Auto, true, Some(ServerKind::Vllm))), Constrained::Retries);
    assert_eq!(when(decide(Auto, true, Some(ServerKind::Other))), Constrained::Never);
    assert_eq!(when(decide(Auto, true, None)), Constrained::Never, "not asked");
    assert_eq!(when(decide(Auto, false, Some(ServerKind::LlamaCpp))), Constrained::Never, "a cloud provider");
    assert_eq!(when(decide(On, false, None)), Constrained::Every);
    assert_eq!(when(decide(Off, true, Some(ServerKind::LlamaCpp))), Constrained::Never);
    let auto = decide(Auto, true, Some(ServerKind::LlamaCpp));
    assert_eq!(auto.why, "the replies after an unusable one (llama.cpp)");
    assert!(auto.applies(true) && !auto.applies(false), "auto constrains what the run asks to");
    assert!(decide(On, true, None).applies(false));
    assert!(!decide(Off, true, Some(ServerKind::LlamaCpp)).applies(true));
    assert_eq!(decide(Auto, false, None).why, "off (not a server on this machine)");
    assert_eq!(decide(Auto, true, Some(ServerKind::LlamaCpp)).kind, ServerKind::LlamaCpp);
}

/// What a constrained reply of `text`, ending with `finish`, becomes.
fn read_reply(text: &str, finish: &str) -> steward_protocol::ChatResponse {
    let req = request();
    let mut reply = ReplyBuilder::new(false, &req, ToolCallAssembler::default()).constrained();
    let mut deltas: Vec<StreamDelta> = Vec::new();
    reply.text.push_text(text, &mut |d| deltas.push(d));
    reply.set_finish(Some(finish));
    reply.finish(&mut |d| deltas.push(d))
}

#[test]
fn a_constrained_reply_is_read_as_one_call_or_the_answer_even_with_recovery_off() {
    let call = read_reply("{\"name\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}", "stop");
    assert!(call.constrained);
    assert_eq!(call.tool_calls.len(), 1, "{call:?}");
    assert_eq!(call.tool_calls[0].name, "read");
    assert_eq!(call.tool_calls[0].arguments, json!({"path": "notes.txt"}));
    assert_eq!(call.repairs[0].format, "json");
    assert_eq!(call.text, "");

    let answer = read_reply("{\"response\": \"The code word is \\\"PELICAN\\\".\"}", "stop");
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.text, "The code word is \"PELICAN\".");

    // Cut by the output limit inside the answer: the answer so far, cut short.
    let cut = read_reply("{\"response\": \"The code word is PELI", "length");
    assert_eq!(cut.text, "The code word is PELI");
    assert_eq!(cut.finish_reason, Some(steward_protocol::FinishReason::Length));
    // Cut inside a call: no call, and not an answer either.
    let cut = read_reply("{\"name\": \"read\", \"arguments\": {\"pa", "length");
    assert!(cut.tool_calls.is_empty());
    assert!(cut.text.starts_with("{\"name\""), "{cut:?}");
}

#[test]
fn partial_answers_decode_their_escapes() {
    assert_eq!(partial_response("{\"response\": \"a\\nb \\u00e9"), Some("a\nb é".to_string()));
    assert_eq!(partial_response(" { \"response\" : \"done\"}"), Some("done".to_string()));
    assert_eq!(partial_response("{\"response\": \"ab\\u00"), Some("ab".to_string()), "an escape cut short");
    assert_eq!(partial_response("{\"response\": \"ab\\"), Some("ab".to_string()));
    assert_eq!(partial_response("{\"response\": \""), None);
    assert_eq!(partial_response("{\"name\": \"read\""), None);
    assert_eq!(partial_response("The answer"), None);
}
