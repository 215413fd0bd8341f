//! Readers for the non-JSON argument syntaxes of text tool calls (SPEC P8): Python call
//! expressions (`[f(a=1, b="x"), g()]`, `tool.call(query="…")`, `f({"k": 1})`) and Gemma's
//! `call:f{k:<escape>v<escape>, n:5}` objects. Both produce JSON values; nothing is evaluated.

use serde_json::{Map, Number, Value};

use crate::formats::RecoverError;

/// One call read from text: the tool name as written and its arguments (a JSON object).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawCall {
    /// Tool name.
    pub name: String,
    /// Arguments; always an object.
    pub arguments: Value,
}

fn malformed(what: impl Into<String>) -> RecoverError {
    RecoverError::Malformed(what.into())
}

/// A cursor over text being read.
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), RecoverError> {
        if self.eat(s) {
            return Ok(());
        }
        if self.rest().trim().is_empty() {
            return Err(RecoverError::CutOff(format!("a Python-style call (expected `{s}`)")));
        }
        Err(malformed(format!("expected `{s}` in a Python-style call")))
    }

    /// A dotted identifier (`brave_search.call`, `read_file`).
    fn ident(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(i, c)| !(c == '_' || c == '.' || c == '-' || c.is_alphanumeric()) || (i == 0 && c.is_numeric()))
            .map_or(rest.len(), |(i, _)| i);
        if len == 0 {
            return None;
        }
        self.pos += len;
        Some(&rest[..len])
    }
}

/// Python call expressions: a list `[f(…), g(…)]`, or one or more calls separated by
/// whitespace, newlines, `;` or `,`. Keyword arguments become the object's keys; a single
/// positional dict argument is the arguments object; `tool.call(…)` names `tool`.
pub(crate) fn python_calls(text: &str) -> Result<Vec<RawCall>, RecoverError> {
    let mut c = Cursor { text: text.trim(), pos: 0 };
    let listed = c.eat("[");
    let mut calls = Vec::new();
    loop {
        c.skip_ws();
        if listed && c.eat("]") {
            break;
        }
        if !listed && c.rest().is_empty() {
            break;
        }
        calls.push(python_call(&mut c)?);
        let separated = c.eat(",") || c.eat(";");
        if listed && !separated {
            c.expect("]")?;
            break;
        }
    }
    c.skip_ws();
    if !c.rest().is_empty() {
        return Err(RecoverError::TrailingText);
    }
    if calls.is_empty() {
        return Err(RecoverError::NotMarkup);
    }
    Ok(calls)
}

fn python_call(c: &mut Cursor<'_>) -> Result<RawCall, RecoverError> {
    let name = c.ident().ok_or_else(|| malformed("a Python-style call has no function name"))?;
    let name = name.strip_suffix(".call").unwrap_or(name).to_string();
    c.expect("(")?;
    let mut args = Map::new();
    let mut positional = Vec::new();
    loop {
        if c.eat(")") {
            break;
        }
        let start = c.pos;
        let keyword = match c.ident() {
            Some(k) if c.eat("=") => Some(k.to_string()),
            _ => {
                c.pos = start;
                None
            }
        };
        let value = py_value(c)?;
        match keyword {
            Some(k) => {
                if args.insert(k.clone(), value).is_some() {
                    return Err(malformed(format!("the argument `{k}` of `{name}` is given twice")));
                }
            }
            None => positional.push(value),
        }
        if !c.eat(",") {
            c.expect(")")?;
            break;
        }
    }
    match positional.len() {
        0 => {}
        1 if args.is_empty() && positional[0].is_object() => {
            return Ok(RawCall { name, arguments: positional.remove(0) });
        }
        _ => return Err(malformed(format!("the call to `{name}` has positional arguments; only keywords name them"))),
    }
    Ok(RawCall { name, arguments: Value::Object(args) })
}

/// A Python literal: string, number, `True`/`False`/`None` (or JSON's spellings), list,
/// tuple or dict.
fn py_value(c: &mut Cursor<'_>) -> Result<Value, RecoverError> {
    c.skip_ws();
    let rest = c.rest();
    let Some(first) = rest.chars().next() else {
        return Err(RecoverError::CutOff("a Python-style call".into()));
    };
    match first {
        '"' | '\'' => py_string(c),
        '[' | '(' => {
            let close = if first == '[' { "]" } else { ")" };
            c.pos += 1;
            let mut items = Vec::new();
            loop {
                if c.eat(close) {
                    break;
                }
                items.push(py_value(c)?);
                if !c.eat(",") {
                    c.expect(close)?;
                    break;
                }
            }
            Ok(Value::Array(items))
        }
        '{' => {
            c.pos += 1;
            let mut map = Map::new();
            loop {
                if c.eat("}") {
                    break;
                }
                let key = match py_value(c)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                c.expect(":")?;
                map.insert(key, py_value(c)?);
                if !c.eat(",") {
                    c.expect("}")?;
                    break;
                }
            }
            Ok(Value::Object(map))
        }
        _ => {
            let len = rest
                .find(|ch: char| !(ch.is_alphanumeric() || matches!(ch, '-' | '+' | '.' | '_')))
                .unwrap_or(rest.len());
            let word = &rest[..len];
            c.pos += len;
            match word {
                "True" | "true" => Ok(Value::Bool(true)),
                "False" | "false" => Ok(Value::Bool(false)),
                "None" | "null" => Ok(Value::Null),
                _ => number(word).ok_or_else(|| malformed(format!("`{word}` is not a literal value"))),
            }
        }
    }
}

fn number(word: &str) -> Option<Value> {
    if let Ok(n) = word.parse::<i64>() {
        return Some(Value::from(n));
    }
    word.parse::<f64>().ok().filter(|f| f.is_finite()).and_then(Number::from_f64).map(Value::Number)
}

/// A quoted Python string (single, double or triple quotes) with the common escapes.
fn py_string(c: &mut Cursor<'_>) -> Result<Value, RecoverError> {
    let rest = c.rest();
    let quote = if rest.starts_with("\"\"\"") {
        "\"\"\""
    } else if rest.starts_with("'''") {
        "'''"
    } else {
        &rest[..1]
    };
    let body = &rest[quote.len()..];
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, ch)) = chars.next() {
        if body[i..].starts_with(quote) {
            c.pos += quote.len() + i + quote.len();
            return Ok(Value::String(out));
        }
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next().map(|(_, e)| e) {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => break,
        }
    }
    Err(RecoverError::CutOff("a quoted string".into()))
}

/// Gemma's call objects: `f{k:<Q>text<Q>, n:5, flag:true, o:{…}, l:[…]}` where `<Q>` is the
/// string delimiter token (`<escape>` for FunctionGemma, `<|"|>` for Gemma 4). Returns the
/// name and the arguments.
pub(crate) fn gemma_call(text: &str, quote: &str) -> Result<RawCall, RecoverError> {
    let text = text.trim();
    let body = text.strip_prefix("call:").ok_or_else(|| malformed("a Gemma call does not start with `call:`"))?;
    let open = body.find('{').ok_or_else(|| RecoverError::CutOff("a Gemma call".into()))?;
    let name = body[..open].trim().to_string();
    let mut c = Cursor { text: body, pos: open };
    let arguments = gemma_value(&mut c, quote)?;
    c.skip_ws();
    if !c.rest().is_empty() {
        return Err(RecoverError::TrailingText);
    }
    Ok(RawCall { name, arguments })
}

fn gemma_value(c: &mut Cursor<'_>, quote: &str) -> Result<Value, RecoverError> {
    c.skip_ws();
    if c.eat(quote) {
        let rest = c.rest();
        let end = rest.find(quote).ok_or_else(|| RecoverError::CutOff("a Gemma string".into()))?;
        c.pos += end + quote.len();
        return Ok(Value::String(rest[..end].to_string()));
    }
    if c.eat("{") {
        let mut map = Map::new();
        loop {
            if c.eat("}") {
                break;
            }
            let key = if c.eat(quote) {
                let rest = c.rest();
                let end = rest.find(quote).ok_or_else(|| RecoverError::CutOff("a Gemma key".into()))?;
                c.pos += end + quote.len();
                rest[..end].to_string()
            } else {
                c.ident().ok_or_else(|| malformed("a Gemma object has a key that is not a name"))?.to_string()
            };
            c.expect(":")?;
            map.insert(key, gemma_value(c, quote)?);
            if !c.eat(",") {
                c.expect("}")?;
                break;
            }
        }
        return Ok(Value::Object(map));
    }
    if c.eat("[") {
        let mut items = Vec::new();
        loop {
            if c.eat("]") {
                break;
            }
            items.push(gemma_value(c, quote)?);
            if !c.eat(",") {
                c.expect("]")?;
                break;
            }
        }
        return Ok(Value::Array(items));
    }
    let rest = c.rest();
    let len = rest.find([',', '}', ']']).unwrap_or(rest.len());
    let word = rest[..len].trim();
    if word.is_empty() {
        return Err(RecoverError::CutOff("a Gemma call".into()));
    }
    c.pos += len;
    Ok(match word {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => number(word).unwrap_or_else(|| Value::String(word.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_calls_become_json_arguments() {
        let calls =
            python_calls(r#"[read(path="a\"b", n=1, f=1.5, ok=True, none=None, l=[1, 'x'], d={"k": (1, 2)}), list()]"#)
                .expect("calls");
        assert_eq!(calls[0].name, "read");
        assert_eq!(
            calls[0].arguments,
            json!({"path": "a\"b", "n": 1, "f": 1.5, "ok": true, "none": null, "l": [1, "x"], "d": {"k": [1, 2]}})
        );
        assert_eq!(calls[1], RawCall { name: "list".into(), arguments: json!({}) });
        let calls = python_calls("brave_search.call(query=\"\"\"rust\"\"\")").expect("builtin");
        assert_eq!(calls[0], RawCall { name: "brave_search".into(), arguments: json!({"query": "rust"}) });
        let calls = python_calls(r#"read({"path": "a"})"#).expect("dict argument");
        assert_eq!(calls[0].arguments, json!({"path": "a"}));
        for bad in ["read(\"a\")", "[read(path=\"a\")", "read(path=os.remove)", "read(path=\"a\") and more", "[]"] {
            assert!(python_calls(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn gemma_objects_read_strings_numbers_and_nesting() {
        let call = gemma_call(
            "call:edit{path:<escape>a, b<escape>,line:3,all:true,o:{k:<escape>v<escape>},l:[1,2]}",
            "<escape>",
        )
        .expect("call");
        assert_eq!(call.name, "edit");
        assert_eq!(call.arguments, json!({"path": "a, b", "line": 3, "all": true, "o": {"k": "v"}, "l": [1, 2]}));
        let call = gemma_call("call:read{path:<|\"|>src/{x}.rs<|\"|>}", "<|\"|>").expect("gemma 4");
        assert_eq!(call.arguments, json!({"path": "src/{x}.rs"}));
        assert!(gemma_call("call:read{path:<escape>cut", "<escape>").is_err_and(|e| e.is_cut_off()));
    }
}
