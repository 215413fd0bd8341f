//! The readers of [`crate::formats::ToolCallFormat`]: each takes a message (trimmed,
//! reasoning removed) that must be wholly calls and returns them in order. XML-style values
//! are returned as text, for [`crate::coerce`] to type by the tool's schema.

use serde_json::{Map, Value};
use steward_protocol::ToolSpec;

use crate::formats::{DS_CALL, DS_CALLS, DS_SEP, RecoverError, ToolCallFormat};
use crate::literals::{RawCall, gemma_call, python_calls};

type Calls = Result<Vec<RawCall>, RecoverError>;

fn malformed(what: impl Into<String>) -> RecoverError {
    RecoverError::Malformed(what.into())
}

/// Blocks `OPEN body CLOSE` one after the other, separated only by whitespace; each body is
/// read by `inner`. Without `close`, a block runs to the next `OPEN` or the end.
pub(crate) fn blocks(text: &str, open: &str, close: Option<&str>, inner: impl Fn(&str) -> Calls) -> Calls {
    let mut calls = Vec::new();
    let mut rest = text.trim();
    if !rest.starts_with(open) {
        return Err(RecoverError::NotMarkup);
    }
    while !rest.is_empty() {
        let body = rest.strip_prefix(open).ok_or(RecoverError::TrailingText)?;
        let (body, after) = match close {
            Some(close) => {
                let end = body.find(close).ok_or_else(|| RecoverError::CutOff(format!("a {open} block")))?;
                (&body[..end], &body[end + close.len()..])
            }
            None => match body.find(open) {
                Some(next) => (&body[..next], &body[next..]),
                None => (body, ""),
            },
        };
        calls.extend(inner(body.trim())?);
        rest = after.trim_start();
    }
    Ok(calls)
}

/// One or more JSON values, each a call or an array of calls (see [`call_shape`]).
pub(crate) fn json_calls(text: &str) -> Calls {
    json_sequence(text)?.into_iter().map(call_shape).collect()
}

/// JSON calls, or Python-style calls when the text does not start like JSON.
pub(crate) fn json_or_python(text: &str) -> Calls {
    let t = text.trim();
    let json = t.starts_with('{') || t.strip_prefix('[').is_some_and(|r| r.trim_start().starts_with('{'));
    if json { json_calls(t) } else { python_calls(t) }
}

/// The [`crate::formats::ToolCallFormat::Json`] format: one fenced block or bare JSON.
pub(crate) fn json_message(text: &str) -> Calls {
    parse_values(text)?.into_iter().map(call_shape).collect()
}

/// The JSON values of text that is wholly JSON tool-call markup: `[TOOL_CALLS]` followed by
/// JSON, `<tool_call>` blocks, one fenced block, or bare JSON values one after the other.
/// Arrays and the `{"tool_call": …}` / `{"tool_calls": […]}` wrappers are flattened.
pub(crate) fn parse_values(text: &str) -> Result<Vec<Value>, RecoverError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(RecoverError::Empty);
    }
    if let Some(rest) = text.strip_prefix("[TOOL_CALLS]") {
        return json_sequence(rest.trim());
    }
    if text.starts_with("<tool_call>") {
        let mut values = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let inner = rest.strip_prefix("<tool_call>").ok_or(RecoverError::TrailingText)?;
            let close = inner.find("</tool_call>").ok_or_else(|| RecoverError::CutOff("a <tool_call> block".into()))?;
            values.extend(json_sequence(inner[..close].trim())?);
            rest = inner[close + "</tool_call>".len()..].trim_start();
        }
        return Ok(values);
    }
    if let Some(fenced) = text.strip_prefix("```") {
        let body = fenced.strip_suffix("```").ok_or_else(|| RecoverError::CutOff("the ``` block".into()))?;
        let body = body.strip_prefix("json").unwrap_or(body);
        if body.contains("```") {
            return Err(malformed("there is more than one ``` block"));
        }
        return json_sequence(body.trim());
    }
    json_sequence(text)
}

/// One or more JSON values one after the other, flattened.
fn json_sequence(text: &str) -> Result<Vec<Value>, RecoverError> {
    let mut values = Vec::new();
    for item in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        let value = item.map_err(|e| {
            if e.is_eof() {
                RecoverError::CutOff(format!("the JSON ({e})"))
            } else {
                malformed(format!("the JSON is malformed or followed by other text ({e})"))
            }
        })?;
        values.extend(flatten(value));
    }
    if values.is_empty() {
        return Err(malformed("there is no JSON"));
    }
    Ok(values)
}

fn flatten(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items.into_iter().flat_map(flatten).collect(),
        Value::Object(mut obj)
            if obj.len() == 1 && (obj.contains_key("tool_call") || obj.contains_key("tool_calls")) =>
        {
            match obj.remove("tool_call").or_else(|| obj.remove("tool_calls")) {
                Some(inner @ (Value::Object(_) | Value::Array(_))) => flatten(inner),
                Some(other) => vec![other],
                None => Vec::new(),
            }
        }
        other => vec![other],
    }
}

/// A JSON call: `{"name", "arguments"|"parameters", "id"?}`, Command's `{"tool_name",
/// "parameters", "tool_call_id"}`, or OpenAI's `{"type": "function", "function": {…}}`.
/// Arguments may be a string holding a JSON object; missing arguments mean `{}`. Ids written
/// by the model are not used.
pub(crate) fn call_shape(value: Value) -> Result<RawCall, RecoverError> {
    let Value::Object(mut obj) = value else { return Err(malformed("a call must be a JSON object")) };
    if let Some(Value::Object(function)) = obj.get("function")
        && obj.keys().all(|k| matches!(k.as_str(), "function" | "type" | "id"))
    {
        return call_shape(Value::Object(function.clone()));
    }
    const KEYS: &[&str] = &["name", "tool_name", "arguments", "parameters", "id", "tool_call_id", "call_id"];
    if let Some(key) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(malformed(format!("a call has an unexpected key `{key}` (only name and arguments)")));
    }
    let Some(Value::String(name)) = obj.remove("name").or_else(|| obj.remove("tool_name")) else {
        return Err(malformed("a call has no string `name`"));
    };
    let args = match (obj.remove("arguments"), obj.remove("parameters")) {
        (Some(_), Some(_)) => return Err(malformed(format!("the call to `{name}` has both arguments and parameters"))),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => Value::Object(Map::new()),
    };
    Ok(RawCall { arguments: object_arguments(&name, args)?, name })
}

/// Arguments that are an object, or a string holding one.
fn object_arguments(name: &str, args: Value) -> Result<Value, RecoverError> {
    let not_object = || RecoverError::ArgumentsNotObject(name.to_string());
    match args {
        Value::Object(_) => Ok(args),
        Value::String(s) => match serde_json::from_str::<Value>(&s).map_err(|_| not_object())? {
            v @ Value::Object(_) => Ok(v),
            _ => Err(not_object()),
        },
        _ => Err(not_object()),
    }
}

/// Arguments written as one JSON object after a name; none at all means the call was cut
/// off (these formats write `{}` for a call without arguments).
fn json_arguments(name: &str, text: &str) -> Result<Value, RecoverError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(RecoverError::CutOff(format!("the call to `{name}`")));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => object_arguments(name, v),
        Err(e) if e.is_eof() => Err(RecoverError::CutOff(format!("the arguments of `{name}`"))),
        Err(e) => Err(malformed(format!("the arguments of `{name}` are malformed ({e})"))),
    }
}

/// Apertus: a JSON array of `{"NAME": {arguments}}` objects.
pub(crate) fn keyed_calls(text: &str) -> Calls {
    json_sequence(text)?
        .into_iter()
        .map(|v| match v {
            Value::Object(obj) if obj.len() == 1 => {
                let (name, args) = obj.into_iter().next().ok_or_else(|| malformed("an empty call"))?;
                Ok(RawCall { arguments: object_arguments(&name, args)?, name })
            }
            _ => Err(malformed("an Apertus call is an object with one key, the tool name")),
        })
        .collect()
}

/// `<function=NAME>…</function>` blocks, each possibly inside `WRAP_OPEN … WRAP_CLOSE`: the
/// body is a JSON object (Llama 3.1 custom functions) or `<parameter=KEY>value</parameter>`
/// pairs (Qwen3-Coder, Seed-OSS).
pub(crate) fn function_blocks(text: &str, wrap_open: &str, wrap_close: &str) -> Calls {
    const OPEN: &str = "<function=";
    const CLOSE: &str = "</function>";
    let mut calls = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let wrapped = rest.starts_with(wrap_open);
        if wrapped {
            rest = rest[wrap_open.len()..].trim_start();
        }
        let after = rest.strip_prefix(OPEN).ok_or(if calls.is_empty() && !wrapped {
            RecoverError::NotMarkup
        } else {
            RecoverError::TrailingText
        })?;
        let end_of_name = after.find('>').ok_or_else(|| RecoverError::CutOff("a <function=…> tag".into()))?;
        let name = after[..end_of_name].trim().to_string();
        let inner = &after[end_of_name + 1..];
        let close = inner.find(CLOSE).ok_or_else(|| RecoverError::CutOff(format!("the <function={name}> block")))?;
        let body = inner[..close].trim();
        rest = inner[close + CLOSE.len()..].trim_start();
        if wrapped {
            rest = rest
                .strip_prefix(wrap_close)
                .ok_or_else(|| RecoverError::CutOff(format!("a {wrap_open} block")))?
                .trim_start();
        }
        let arguments =
            if body.starts_with('{') { json_arguments(&name, body)? } else { Value::Object(params_eq(&name, body)?) };
        calls.push(RawCall { name, arguments });
    }
    Ok(calls)
}

/// `<parameter=KEY>value</parameter>` pairs.
fn params_eq(name: &str, body: &str) -> Result<Map<String, Value>, RecoverError> {
    let mut map = Map::new();
    let mut rest = body;
    while !rest.is_empty() {
        let after = rest
            .strip_prefix("<parameter=")
            .ok_or_else(|| malformed(format!("the <function={name}> block holds text outside <parameter=…> tags")))?;
        let end_of_key = after.find('>').ok_or_else(|| RecoverError::CutOff("a <parameter=…> tag".into()))?;
        let key = after[..end_of_key].trim();
        let inner = &after[end_of_key + 1..];
        let close = inner.find("</parameter>").ok_or_else(|| RecoverError::CutOff(format!("the parameter `{key}`")))?;
        insert(&mut map, name, key, Value::String(xml_text(&inner[..close])))?;
        rest = inner[close + "</parameter>".len()..].trim_start();
    }
    Ok(map)
}

/// An XML value: the text without one leading and one trailing newline.
fn xml_text(v: &str) -> String {
    let v = v.strip_prefix('\n').unwrap_or(v);
    v.strip_suffix('\n').unwrap_or(v).to_string()
}

fn insert(map: &mut Map<String, Value>, name: &str, key: &str, value: Value) -> Result<(), RecoverError> {
    if map.insert(key.to_string(), value).is_some() {
        return Err(malformed(format!("the parameter `{key}` of `{name}` is given twice")));
    }
    Ok(())
}

/// The value of `attr="…"` at the start of a tag's attribute text.
fn attribute<'a>(tag: &'a str, attr: &str) -> Option<&'a str> {
    let at = tag.find(&format!("{attr}=\""))? + attr.len() + 2;
    let end = tag[at..].find('"')?;
    Some(&tag[at..at + end])
}

/// `INVOKE"name">` … `INVOKE_CLOSE` blocks holding `PARAM"key"( string="…")?>value PARAM_CLOSE`
/// pairs (MiniMax, DSML, Step-3). A `string="false"` value is JSON.
pub(crate) fn invokes(text: &str, invoke: &str, invoke_close: &str, param: &str, param_close: &str) -> Calls {
    let mut calls = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let after = rest.strip_prefix(invoke).ok_or(RecoverError::TrailingText)?;
        let gt = after.find('>').ok_or_else(|| RecoverError::CutOff("an invoke tag".into()))?;
        let name = attribute(&format!("name={}", &after[..gt]), "name")
            .ok_or_else(|| malformed("an invoke tag has no name"))?
            .to_string();
        let inner = &after[gt + 1..];
        let close = inner.find(invoke_close).ok_or_else(|| RecoverError::CutOff(format!("the call to `{name}`")))?;
        let mut body = inner[..close].trim();
        rest = inner[close + invoke_close.len()..].trim_start();
        let mut map = Map::new();
        while !body.is_empty() {
            let p = body
                .strip_prefix(param)
                .ok_or_else(|| malformed(format!("the call to `{name}` holds text outside parameters")))?;
            let gt = p.find('>').ok_or_else(|| RecoverError::CutOff("a parameter tag".into()))?;
            let tag = format!("name={}", &p[..gt]);
            let key = attribute(&tag, "name").ok_or_else(|| malformed("a parameter has no name"))?.to_string();
            let v = &p[gt + 1..];
            let end = v.find(param_close).ok_or_else(|| RecoverError::CutOff(format!("the parameter `{key}`")))?;
            let text = xml_text(&v[..end]);
            let value = if attribute(&tag, "string") == Some("false") {
                serde_json::from_str(text.trim())
                    .map_err(|e| malformed(format!("the JSON value of `{key}` is malformed ({e})")))?
            } else {
                Value::String(text)
            };
            insert(&mut map, &name, &key, value)?;
            body = v[end + param_close.len()..].trim_start();
        }
        calls.push(RawCall { name, arguments: Value::Object(map) });
    }
    Ok(calls)
}

/// DeepSeek V3.2/V4 DSML.
pub(crate) fn dsml(text: &str) -> Calls {
    let inner = |b: &str| {
        invokes(b, "<｜DSML｜invoke name=", "</｜DSML｜invoke>", "<｜DSML｜parameter name=", "</｜DSML｜parameter>")
    };
    if text.starts_with("<｜DSML｜tool_calls>") {
        blocks(text, "<｜DSML｜tool_calls>", Some("</｜DSML｜tool_calls>"), inner)
    } else {
        blocks(text, "<｜DSML｜function_calls>", Some("</｜DSML｜function_calls>"), inner)
    }
}

/// Mistral v11+: `[TOOL_CALLS]NAME[ARGS]{…}` (or `[TOOL_CALLS]NAME[CALL_ID]id[ARGS]{…}`) per call.
pub(crate) fn mistral_v11(text: &str) -> Calls {
    blocks(text, "[TOOL_CALLS]", None, |body| {
        let (head, args) =
            body.split_once("[ARGS]").ok_or_else(|| RecoverError::CutOff("a [TOOL_CALLS] call".into()))?;
        let name = head.split_once("[CALL_ID]").map_or(head, |(n, _)| n).trim();
        Ok(vec![RawCall { name: name.to_string(), arguments: json_arguments(name, args)? }])
    })
}

/// DeepSeek R1 / V3 and V3.1 calls, inside the calls section.
pub(crate) fn deepseek(text: &str) -> Calls {
    let one = |body: &str| {
        let (kind, rest) = body.split_once(DS_SEP).ok_or_else(|| RecoverError::CutOff("a DeepSeek call".into()))?;
        let fenced = rest.split_once('\n').filter(|(_, f)| f.trim_start().starts_with("```"));
        let (name, args) = match (kind.trim(), fenced) {
            ("function", Some((name, fence))) => {
                let fence = fence.trim();
                let body = fence
                    .strip_prefix("```")
                    .and_then(|f| f.strip_suffix("```"))
                    .ok_or_else(|| RecoverError::CutOff("a DeepSeek ```json block".into()))?;
                (name.trim(), body.strip_prefix("json").unwrap_or(body))
            }
            (name, _) => (name, rest),
        };
        Ok(vec![RawCall { name: name.to_string(), arguments: json_arguments(name, args)? }])
    };
    let section = |body: &str| blocks(body, DS_CALL.0, Some(DS_CALL.1), one);
    if text.starts_with(DS_CALLS.0) { blocks(text, DS_CALLS.0, Some(DS_CALLS.1), section) } else { section(text) }
}

/// gpt-oss harmony: `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`
/// per call (the recipient may also stand in the role header); the closing `<|call|>` may be
/// missing when the server stripped the stop token.
pub(crate) fn harmony(text: &str) -> Calls {
    let mut calls = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        rest = rest.strip_prefix("<|start|>").map_or(rest, |r| r.strip_prefix("assistant").unwrap_or(r));
        let (header, after) =
            rest.split_once("<|message|>").ok_or_else(|| RecoverError::CutOff("a harmony message header".into()))?;
        if !header.contains("<|channel|>") && !header.trim_start().starts_with("to=") {
            return Err(RecoverError::TrailingText);
        }
        let to =
            header.find("to=").ok_or_else(|| malformed("a harmony message has no recipient (to=functions.NAME)"))?;
        let recipient = header[to + 3..].split(|c: char| c.is_whitespace() || c == '<').next().unwrap_or("");
        let name = recipient.strip_prefix("functions.").unwrap_or(recipient).to_string();
        let (body, next) = match after.find("<|call|>") {
            Some(end) => (&after[..end], &after[end + "<|call|>".len()..]),
            None => (after, ""),
        };
        calls.push(RawCall { arguments: json_arguments(&name, body)?, name });
        rest = next.trim_start();
    }
    Ok(calls)
}

/// Kimi K2: calls `functions.NAME:IDX<|tool_call_argument_begin|>{…}` in a section.
pub(crate) fn kimi(text: &str) -> Calls {
    let one = |body: &str| {
        let (id, args) = body
            .split_once("<|tool_call_argument_begin|>")
            .ok_or_else(|| RecoverError::CutOff("a Kimi call".into()))?;
        let id = id.trim();
        let name = id.strip_prefix("functions.").unwrap_or(id);
        let name = name.rsplit_once(':').map_or(name, |(n, _)| n);
        Ok(vec![RawCall { name: name.to_string(), arguments: json_arguments(name, args)? }])
    };
    blocks(text, "<|tool_calls_section_begin|>", Some("<|tool_calls_section_end|>"), |s| {
        blocks(s, "<|tool_call_begin|>", Some("<|tool_call_end|>"), one)
    })
}

/// GLM-4.5/4.7: `<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value>…</tool_call>`.
pub(crate) fn glm(text: &str) -> Calls {
    blocks(text, "<tool_call>", Some("</tool_call>"), |body| {
        let split = body.find("<arg_key>").unwrap_or(body.len());
        let name = body[..split].trim().to_string();
        if name.is_empty() || name.contains(['<', '{']) {
            return Err(malformed("a GLM call has no tool name"));
        }
        let mut map = Map::new();
        let mut rest = body[split..].trim();
        while !rest.is_empty() {
            let after = rest
                .strip_prefix("<arg_key>")
                .ok_or_else(|| malformed(format!("the call to `{name}` holds text outside arguments")))?;
            let (key, after) =
                after.split_once("</arg_key>").ok_or_else(|| RecoverError::CutOff("an <arg_key>".into()))?;
            let after = after
                .trim_start()
                .strip_prefix("<arg_value>")
                .ok_or_else(|| RecoverError::CutOff(format!("the value of `{key}`")))?;
            let (value, after) = after
                .split_once("</arg_value>")
                .ok_or_else(|| RecoverError::CutOff(format!("the value of `{key}`")))?;
            insert(&mut map, &name, key.trim(), Value::String(xml_text(value)))?;
            rest = after.trim_start();
        }
        Ok(vec![RawCall { name, arguments: Value::Object(map) }])
    })
}

/// Functionary v3.2: `>>>NAME` + newline + JSON per call; a `>>>all` segment is text.
pub(crate) fn functionary_v32(text: &str) -> Calls {
    blocks(text, ">>>", None, |body| {
        let (name, args) = body.split_once('\n').unwrap_or((body, ""));
        let name = name.trim();
        if name == "all" {
            return Err(malformed("a >>>all segment is text, and a call written as text must be the whole message"));
        }
        Ok(vec![RawCall { name: name.to_string(), arguments: json_arguments(name, args)? }])
    })
}

/// `<function_call>` followed by JSON, the closing tag optional; repeated.
pub(crate) fn function_call(text: &str) -> Calls {
    blocks(text, "<function_call>", None, |body| json_calls(body.strip_suffix("</function_call>").unwrap_or(body)))
}

/// Step-3: `function<｜tool_sep｜>` and a `<steptml:invoke>` per call, inside the section.
pub(crate) fn step3(text: &str) -> Calls {
    blocks(text, "<｜tool_calls_begin｜>", Some("<｜tool_calls_end｜>"), |s| {
        blocks(s, "<｜tool_call_begin｜>", Some("<｜tool_call_end｜>"), |c| {
            let body = c.trim().strip_prefix("function").unwrap_or(c).trim_start();
            let body =
                body.strip_prefix("<｜tool_sep｜>").ok_or_else(|| malformed("a Step-3 call has no separator"))?;
            invokes(
                body,
                "<steptml:invoke name=",
                "</steptml:invoke>",
                "<steptml:parameter name=",
                "</steptml:parameter>",
            )
        })
    })
}

/// Per-tool XML: `<TOOL><key>value</key>…</TOOL>` for declared tools.
pub(crate) fn cline(text: &str, tools: &[ToolSpec]) -> Calls {
    let mut calls = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let tool = tools
            .iter()
            .find(|t| {
                rest.strip_prefix('<').and_then(|r| r.strip_prefix(t.name.as_str())).is_some_and(|r| r.starts_with('>'))
            })
            .ok_or(if calls.is_empty() { RecoverError::NotMarkup } else { RecoverError::TrailingText })?;
        let name = tool.name.clone();
        let body = &rest[name.len() + 2..];
        let close = format!("</{name}>");
        let end = body.find(&close).ok_or_else(|| RecoverError::CutOff(format!("the <{name}> block")))?;
        let mut inner = body[..end].trim();
        rest = body[end + close.len()..].trim_start();
        let mut map = Map::new();
        while !inner.is_empty() {
            let after = inner
                .strip_prefix('<')
                .ok_or_else(|| malformed(format!("the <{name}> block holds text outside tags")))?;
            let gt = after.find('>').ok_or_else(|| RecoverError::CutOff("a tag".into()))?;
            let key = &after[..gt];
            let value = &after[gt + 1..];
            let end =
                value.find(&format!("</{key}>")).ok_or_else(|| RecoverError::CutOff(format!("the <{key}> value")))?;
            insert(&mut map, &name, key, Value::String(xml_text(&value[..end])))?;
            inner = value[end + key.len() + 3..].trim_start();
        }
        calls.push(RawCall { name, arguments: Value::Object(map) });
    }
    Ok(calls)
}

/// Reads `text` (trimmed, reasoning removed), which must be wholly calls in `format`.
pub(crate) fn parse(format: ToolCallFormat, text: &str, tools: &[ToolSpec]) -> Calls {
    use ToolCallFormat::*;
    match format {
        Hermes => blocks(text, "<tool_call>", Some("</tool_call>"), json_calls),
        Qwen3Coder | FunctionTag => function_blocks(text, "<tool_call>", "</tool_call>"),
        SeedOss => function_blocks(text, "<seed:tool_call>", "</seed:tool_call>"),
        Json => json_message(text),
        Llama3Builtin => blocks(text, "<|python_tag|>", None, json_or_python),
        Pythonic => match text.strip_prefix("<|python_start|>") {
            Some(_) => blocks(text, "<|python_start|>", Some("<|python_end|>"), json_or_python),
            None => json_or_python(text),
        },
        MistralV3 => blocks(text, "[TOOL_CALLS]", None, json_calls),
        MistralV11 => mistral_v11(text),
        DeepseekR1 | DeepseekV31 => deepseek(text),
        Dsml => dsml(text),
        Harmony => harmony(text),
        KimiK2 => kimi(text),
        Glm45 => glm(text),
        MinimaxM2 => blocks(text, "<minimax:tool_call>", Some("</minimax:tool_call>"), |b| {
            invokes(b, "<invoke name=", "</invoke>", "<parameter name=", "</parameter>")
        }),
        ToolCode => blocks(text, "```tool_code", Some("```"), json_or_python),
        FunctionGemma => blocks(text, "<start_function_call>", Some("<end_function_call>"), |b| {
            gemma_call(b, "<escape>").map(|c| vec![c])
        }),
        Gemma4 => blocks(text, "<|tool_call>", Some("<tool_call|>"), |b| gemma_call(b, "<|\"|>").map(|c| vec![c])),
        Functools => blocks(text, "functools", None, json_calls),
        FunctionaryV32 => functionary_v32(text),
        Granite => blocks(text, "<|tool_call|>", None, json_calls),
        FunctionCall => function_call(text),
        CommandR7b => blocks(text, "<|START_ACTION|>", Some("<|END_ACTION|>"), json_calls),
        Nemotron => blocks(text, "<TOOLCALL>", Some("</TOOLCALL>"), json_calls),
        Apertus => blocks(text, "<|tools_prefix|>", Some("<|tools_suffix|>"), keyed_calls),
        Lfm2 => blocks(text, "<|tool_call_start|>", Some("<|tool_call_end|>"), json_or_python),
        Internlm => blocks(text, "<|action_start|>", Some("<|action_end|>"), |b| {
            json_calls(b.trim_start().strip_prefix("<|plugin|>").unwrap_or(b))
        }),
        Jamba => blocks(text, "<tool_calls>", Some("</tool_calls>"), json_calls),
        Olmo3 => blocks(text, "<function_calls>", Some("</function_calls>"), json_or_python),
        Step3 => step3(text),
        ClineXml => cline(text, tools),
    }
}
