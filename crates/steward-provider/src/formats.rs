//! The tool-call formats local models write as text (SPEC P8), as a table: one
//! [`ToolCallFormat`] per syntax, each with the markers that open it and its reader.
//!
//! A provider reads the format its configuration names (`tool_call_format = "hermes"` on a
//! `[providers.NAME]` table, or one per model, see [`ToolCallFormatSetting`]); when none is
//! named, the format is detected from how the message starts ([`detect`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use steward_protocol::ToolSpec;

/// A text tool-call format. The wire names (snake case) are what `tool_call_format` takes;
/// aliases name the server parsers and model families that write the same thing.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallFormat {
    /// Hermes 2 Pro, Qwen2.5/3, QwQ, Granite 4, ERNIE 4.5, MiMo:
    /// `<tool_call>{"name": "f", "arguments": {…}}</tool_call>`, one block per call.
    #[serde(alias = "qwen3", alias = "qwen2_5", alias = "granite4", alias = "ernie45", alias = "mimo")]
    Hermes,
    /// Qwen3-Coder, Qwen3.5+: `<tool_call><function=f><parameter=k>v</parameter></function></tool_call>`;
    /// values are text typed by the schema.
    #[serde(alias = "qwen3_xml", alias = "qwen35")]
    Qwen3Coder,
    /// Bare JSON: `{"name": "f", "arguments"|"parameters": {…}}`, an array of them (xLAM),
    /// several in a row, a fenced ```` ```json ```` block (Qwen2.5-Coder), llama.cpp's generic
    /// `{"tool_call": …}` / `{"tool_calls": […]}` (its `{"response": "…"}` is an answer).
    #[serde(alias = "llama3_json", alias = "xlam", alias = "generic", alias = "qwen2_5_coder", alias = "fenced")]
    Json,
    /// Llama 3.1 built-in tools: `<|python_tag|>brave_search.call(query="…")` (or JSON after
    /// the tag).
    #[serde(alias = "llama3_builtin_tools")]
    Llama3Builtin,
    /// Llama 3.1 custom functions, Functionary v3.1: `<function=f>{"k": "v"}</function>`.
    #[serde(alias = "functionary_v3_1")]
    FunctionTag,
    /// Llama 3.2 / Llama 4 / Python style: `[f(a=1, b="x"), g()]`, optionally inside
    /// `<|python_start|>…<|python_end|>`; also `f({"k": 1})`.
    #[serde(alias = "llama4_pythonic")]
    Pythonic,
    /// Mistral v3 tokenizer, Mistral Nemo: `[TOOL_CALLS][{"name": "f", "arguments": {…}, "id": "a1b2c3d4e"}]`.
    #[serde(alias = "mistral_nemo", alias = "mistral")]
    MistralV3,
    /// Mistral v11+ (Small 3.2, Devstral, Magistral, Ministral): `[TOOL_CALLS]f[ARGS]{…}` per call.
    #[serde(alias = "magistral", alias = "ministral", alias = "devstral")]
    MistralV11,
    /// DeepSeek R1 / V3-0324: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f`,
    /// a newline, a ```` ```json ```` block, `<｜tool▁call▁end｜><｜tool▁calls▁end｜>`.
    #[serde(alias = "deepseek_v3")]
    DeepseekR1,
    /// DeepSeek V3.1: `<｜tool▁call▁begin｜>f<｜tool▁sep｜>{…}<｜tool▁call▁end｜>` inside the calls section.
    #[serde(alias = "deepseek_v31")]
    DeepseekV31,
    /// DeepSeek V3.2 / V4 DSML: `<｜DSML｜function_calls>` (or `tool_calls`) holding
    /// `<｜DSML｜invoke name="f"><｜DSML｜parameter name="k" string="true">v</｜DSML｜parameter>…`;
    /// `string="false"` values are JSON.
    #[serde(alias = "deepseek_v32", alias = "deepseek_v4")]
    Dsml,
    /// gpt-oss harmony: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`.
    #[serde(alias = "gpt_oss", alias = "openai")]
    Harmony,
    /// Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`.
    #[serde(alias = "kimi")]
    KimiK2,
    /// GLM-4.5/4.6/4.7: `<tool_call>f<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`;
    /// values are text typed by the schema.
    #[serde(alias = "glm46", alias = "glm47")]
    Glm45,
    /// MiniMax-M2: `<minimax:tool_call><invoke name="f"><parameter name="k">v</parameter></invoke></minimax:tool_call>`.
    #[serde(alias = "minimax")]
    MinimaxM2,
    /// Seed-OSS: `<seed:tool_call><function=f><parameter=k>v</parameter></function></seed:tool_call>`.
    SeedOss,
    /// Gemma 3: Python calls or JSON in a ```` ```tool_code ```` block.
    #[serde(alias = "gemma3")]
    ToolCode,
    /// FunctionGemma: `<start_function_call>call:f{k:<escape>v<escape>}<end_function_call>`.
    FunctionGemma,
    /// Gemma 4: `<|tool_call>call:f{k:<|"|>v<|"|>}<tool_call|>`.
    Gemma4,
    /// Phi-4-mini, FireFunction v2: `functools[{"name": "f", "arguments": {…}}]`.
    #[serde(alias = "phi4_mini_json", alias = "firefunction_v2")]
    Functools,
    /// Functionary v3.2: `>>>f` + newline + `{…}` per call.
    FunctionaryV32,
    /// Granite 3.x: `<|tool_call|>[{"name": "f", "arguments": {…}}]`.
    Granite,
    /// granite-20b-fc and ad-hoc harnesses: `<function_call>{…}` (closing tag optional).
    #[serde(alias = "granite_20b_fc")]
    FunctionCall,
    /// Command R7B / Command A: `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {…}}]<|END_ACTION|>`.
    #[serde(alias = "command_a", alias = "cohere")]
    CommandR7b,
    /// Nemotron Nano v2/3: `<TOOLCALL>[{"name": "f", "arguments": {…}}]</TOOLCALL>`.
    #[serde(alias = "nemotron_v2", alias = "nemotron_json")]
    Nemotron,
    /// Apertus: `<|tools_prefix|>[{"f": {…}}]<|tools_suffix|>`.
    Apertus,
    /// LFM2: `<|tool_call_start|>[f(a=1)]<|tool_call_end|>` (or JSON inside).
    Lfm2,
    /// InternLM2/3: `<|action_start|><|plugin|>{"name": "f", "parameters": {…}}<|action_end|>`.
    #[serde(alias = "internlm2", alias = "internlm3")]
    Internlm,
    /// Jamba, Hunyuan-A13B, Apriel 1.5: `<tool_calls>[{"name": "f", "arguments": {…}}]</tool_calls>`.
    #[serde(alias = "hunyuan_a13b", alias = "apriel")]
    Jamba,
    /// OLMo 3: Python calls inside `<function_calls>…</function_calls>`.
    Olmo3,
    /// Step-3 / 3.5: `<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="f"><steptml:parameter name="k">v</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>`.
    #[serde(alias = "step3p5")]
    Step3,
    /// Cline/Continue style per-tool XML: `<read_file><path>a</path></read_file>` for a declared
    /// tool `read_file`; values are text typed by the schema.
    #[serde(alias = "cline")]
    ClineXml,
}

/// Every format, in detection order (a more specific opener before a shorter one).
pub const ALL: &[ToolCallFormat] = &[
    ToolCallFormat::Qwen3Coder,
    ToolCallFormat::Glm45,
    ToolCallFormat::Hermes,
    ToolCallFormat::Llama3Builtin,
    ToolCallFormat::FunctionTag,
    ToolCallFormat::MistralV3,
    ToolCallFormat::MistralV11,
    ToolCallFormat::DeepseekR1,
    ToolCallFormat::DeepseekV31,
    ToolCallFormat::Dsml,
    ToolCallFormat::Harmony,
    ToolCallFormat::KimiK2,
    ToolCallFormat::MinimaxM2,
    ToolCallFormat::SeedOss,
    ToolCallFormat::ToolCode,
    ToolCallFormat::FunctionGemma,
    ToolCallFormat::Gemma4,
    ToolCallFormat::Functools,
    ToolCallFormat::FunctionaryV32,
    ToolCallFormat::Granite,
    ToolCallFormat::FunctionCall,
    ToolCallFormat::CommandR7b,
    ToolCallFormat::Nemotron,
    ToolCallFormat::Apertus,
    ToolCallFormat::Lfm2,
    ToolCallFormat::Internlm,
    ToolCallFormat::Jamba,
    ToolCallFormat::Olmo3,
    ToolCallFormat::Step3,
    ToolCallFormat::Pythonic,
    ToolCallFormat::Json,
    ToolCallFormat::ClineXml,
];

impl ToolCallFormat {
    /// The configuration name, e.g. `hermes`, `qwen3_coder`, `deepseek_v31`.
    pub fn name(self) -> &'static str {
        use ToolCallFormat::*;
        match self {
            Hermes => "hermes",
            Qwen3Coder => "qwen3_coder",
            Json => "json",
            Llama3Builtin => "llama3_builtin",
            FunctionTag => "function_tag",
            Pythonic => "pythonic",
            MistralV3 => "mistral_v3",
            MistralV11 => "mistral_v11",
            DeepseekR1 => "deepseek_r1",
            DeepseekV31 => "deepseek_v31",
            Dsml => "dsml",
            Harmony => "harmony",
            KimiK2 => "kimi_k2",
            Glm45 => "glm45",
            MinimaxM2 => "minimax_m2",
            SeedOss => "seed_oss",
            ToolCode => "tool_code",
            FunctionGemma => "function_gemma",
            Gemma4 => "gemma4",
            Functools => "functools",
            FunctionaryV32 => "functionary_v32",
            Granite => "granite",
            FunctionCall => "function_call",
            CommandR7b => "command_r7b",
            Nemotron => "nemotron",
            Apertus => "apertus",
            Lfm2 => "lfm2",
            Internlm => "internlm",
            Jamba => "jamba",
            Olmo3 => "olmo3",
            Step3 => "step3",
            ClineXml => "cline_xml",
        }
    }

    /// The markers a message in this format starts with (after reasoning and whitespace).
    /// Python-style and per-tool XML formats start with a declared tool's name instead.
    pub fn openers(self) -> &'static [&'static str] {
        use ToolCallFormat::*;
        match self {
            Hermes | Glm45 => &["<tool_call>"],
            Qwen3Coder => &["<tool_call>", "<function="],
            Json => &["{", "[", "```"],
            Llama3Builtin => &["<|python_tag|>"],
            FunctionTag => &["<function="],
            Pythonic => &["[", "<|python_start|>"],
            MistralV3 | MistralV11 => &["[TOOL_CALLS]"],
            DeepseekR1 | DeepseekV31 => &["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>"],
            Dsml => &["<｜DSML｜function_calls>", "<｜DSML｜tool_calls>"],
            Harmony => &["<|channel|>commentary", " to=", "to="],
            KimiK2 => &["<|tool_calls_section_begin|>"],
            MinimaxM2 => &["<minimax:tool_call>"],
            SeedOss => &["<seed:tool_call>"],
            ToolCode => &["```tool_code"],
            FunctionGemma => &["<start_function_call>"],
            Gemma4 => &["<|tool_call>"],
            Functools => &["functools["],
            FunctionaryV32 => &[">>>"],
            Granite => &["<|tool_call|>"],
            FunctionCall => &["<function_call>"],
            CommandR7b => &["<|START_ACTION|>"],
            Nemotron => &["<TOOLCALL>"],
            Apertus => &["<|tools_prefix|>"],
            Lfm2 => &["<|tool_call_start|>"],
            Internlm => &["<|action_start|>"],
            Jamba => &["<tool_calls>"],
            Olmo3 => &["<function_calls>"],
            Step3 => &["<｜tool_calls_begin｜>"],
            ClineXml => &[],
        }
    }

    /// Whether `text` (trimmed, reasoning removed) starts the way this format does.
    pub(crate) fn claims(self, text: &str, tools: &[ToolSpec]) -> bool {
        use ToolCallFormat::*;
        let after = |open: &str| text.strip_prefix(open).map(str::trim_start);
        match self {
            Hermes => after("<tool_call>").is_some_and(|r| r.starts_with('{') || r.starts_with('[')),
            Qwen3Coder => {
                after("<tool_call>").is_some_and(|r| r.starts_with("<function="))
                    || after("<function=")
                        .is_some_and(|r| r.split_once('>').is_some_and(|(_, b)| !b.trim_start().starts_with('{')))
            }
            Glm45 => after("<tool_call>").is_some_and(|r| !r.is_empty() && !r.starts_with(['{', '[', '<'])),
            FunctionTag => after("<function=")
                .is_some_and(|r| r.split_once('>').is_some_and(|(_, b)| b.trim_start().starts_with('{'))),
            MistralV3 => after("[TOOL_CALLS]").is_some_and(|r| r.starts_with('[') || r.starts_with('{')),
            MistralV11 => after("[TOOL_CALLS]").is_some_and(|r| !r.starts_with('[') && !r.starts_with('{')),
            DeepseekR1 => deepseek_is_fenced(text),
            DeepseekV31 => self.openers().iter().any(|o| text.starts_with(o)) && !deepseek_is_fenced(text),
            Harmony => {
                text.starts_with("<|channel|>commentary") || text.starts_with("to=") || text.starts_with("<|start|>")
            }
            Pythonic => {
                text.starts_with("<|python_start|>")
                    || text.strip_prefix('[').is_some_and(|r| starts_with_call(r.trim_start(), tools, false))
                    || starts_with_call(text, tools, true)
            }
            Json => text.starts_with(['{', '[']) || (text.starts_with("```") && !text.starts_with("```tool_code")),
            ClineXml => text.strip_prefix('<').is_some_and(|r| {
                tools.iter().any(|t| r.strip_prefix(t.name.as_str()).is_some_and(|r| r.starts_with('>')))
            }),
            _ => self.openers().iter().any(|o| text.starts_with(o)),
        }
    }

    /// The format named `name` (a configuration name or one of its aliases).
    pub fn from_name(name: &str) -> Option<Self> {
        ToolCallFormat::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name)).ok()
    }
}

impl std::fmt::Display for ToolCallFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `text` starts with `NAME(` for a declared tool `NAME` (or, when `dotted`, `NAME.call(`).
fn starts_with_call(text: &str, tools: &[ToolSpec], dotted: bool) -> bool {
    tools.iter().any(|t| {
        text.strip_prefix(t.name.as_str()).is_some_and(|r| r.starts_with('(') || (dotted && r.starts_with(".call(")))
    })
}

/// The format `text` (trimmed, reasoning removed) is written in, by how it starts; `None` when
/// it starts like none of them.
pub fn detect(text: &str, tools: &[ToolSpec]) -> Option<ToolCallFormat> {
    ALL.iter().copied().find(|f| f.claims(text, tools))
}

/// True when `rest` (the start of a message, reasoning removed, trimmed at the start) could
/// still grow into calls in `format` (any format when `None`), so a stream holds it back.
pub(crate) fn could_start(rest: &str, format: Option<ToolCallFormat>, tools: &[ToolSpec]) -> bool {
    let formats: &[ToolCallFormat] = match &format {
        Some(f) => std::slice::from_ref(f),
        None => ALL,
    };
    let prefix_of = |marker: &str| rest.starts_with(marker) || marker.starts_with(rest);
    formats.iter().any(|f| match f {
        ToolCallFormat::Pythonic => {
            prefix_of("<|python_start|>") || {
                let body = rest.strip_prefix('[').map(str::trim_start).unwrap_or(rest);
                (body.is_empty() && rest.starts_with('['))
                    || tools
                        .iter()
                        .any(|t| body.starts_with(t.name.as_str()) || (!body.is_empty() && t.name.starts_with(body)))
            }
        }
        ToolCallFormat::ClineXml => rest.strip_prefix('<').is_some_and(|body| {
            tools.iter().any(|t| {
                let tag = format!("{}>", t.name);
                body.starts_with(&tag) || tag.starts_with(body)
            })
        }),
        ToolCallFormat::Harmony => prefix_of("<|channel|>commentary") || prefix_of("to=") || prefix_of("<|start|>"),
        other => other.openers().iter().any(|o| prefix_of(o)),
    })
}

/// `tool_call_format` of a `[providers.NAME]` table: one format for every model
/// (`tool_call_format = "hermes"`), or a table from model id to format where a key ending in
/// `*` matches ids starting with what comes before it (`"qwen3-coder*" = "qwen3_coder"`,
/// `"*" = "hermes"`). A model no entry names has its format detected.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(untagged)]
pub enum ToolCallFormatSetting {
    /// The same format for every model.
    One(ToolCallFormat),
    /// Model id or `prefix*` → format.
    PerModel(BTreeMap<String, ToolCallFormat>),
}

impl ToolCallFormatSetting {
    /// The format for `model`: the entry naming it exactly, else the longest matching
    /// `prefix*` entry, else `None` (detect).
    pub fn for_model(&self, model: &str) -> Option<ToolCallFormat> {
        match self {
            ToolCallFormatSetting::One(f) => Some(*f),
            ToolCallFormatSetting::PerModel(map) => map.get(model).copied().or_else(|| {
                map.iter()
                    .filter_map(|(k, f)| k.strip_suffix('*').filter(|p| model.starts_with(p)).map(|p| (p.len(), *f)))
                    .max_by_key(|(len, _)| *len)
                    .map(|(_, f)| f)
            }),
        }
    }
}

impl<'de> Deserialize<'de> for ToolCallFormatSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        fn format<E: serde::de::Error>(name: &str) -> Result<ToolCallFormat, E> {
            ToolCallFormat::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = ALL.iter().map(|f| f.name()).collect();
                E::custom(format!("unknown tool_call_format `{name}` (one of: {})", names.join(", ")))
            })
        }
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ToolCallFormatSetting;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a tool-call format name, or a table from model id to format name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                format(v).map(ToolCallFormatSetting::One)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((model, name)) = map.next_entry::<String, String>()? {
                    out.insert(model, format(&name)?);
                }
                Ok(ToolCallFormatSetting::PerModel(out))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Why text could not be read as tool calls, in words a model can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecoverError {
    /// Nothing but whitespace (or reasoning).
    #[error("the message is empty")]
    Empty,
    /// The text starts like none of the formats (or not like the configured one).
    #[error("the message is not written in a tool-call format Steward reads")]
    NotMarkup,
    /// The text starts like `format` but this provider is set to read another one.
    #[error(
        "the message is written in the {found} format, but this provider is set to read {configured} (tool_call_format)"
    )]
    OtherFormat {
        /// The format the text starts like.
        found: ToolCallFormat,
        /// The configured format.
        configured: ToolCallFormat,
    },
    /// A call or a block is not complete (output limit, stream cut).
    #[error("{0} is not closed (cut off?)")]
    CutOff(String),
    /// Markup that is not well formed.
    #[error("{0}")]
    Malformed(String),
    /// Text follows or sits between the calls.
    #[error("there is text between or after the calls, and a call written as text must be the whole message")]
    TrailingText,
    /// A call's arguments are not a JSON object.
    #[error("the arguments of `{0}` are not a JSON object")]
    ArgumentsNotObject(String),
    /// A call names a tool that was not offered.
    #[error("`{name}` is not one of the offered tools ({offered})")]
    UndeclaredTool {
        /// The name written.
        name: String,
        /// The offered tools, comma separated.
        offered: String,
    },
}

impl RecoverError {
    /// True when the markup was cut off before it closed.
    pub fn is_cut_off(&self) -> bool {
        matches!(self, RecoverError::CutOff(_))
    }
}

pub(crate) const DS_CALLS: (&str, &str) = ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>");
pub(crate) const DS_CALL: (&str, &str) = ("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>");
pub(crate) const DS_SEP: &str = "<｜tool▁sep｜>";

/// Whether DeepSeek markup is R1's: `function<｜tool▁sep｜>NAME` and a fenced block.
pub(crate) fn deepseek_is_fenced(text: &str) -> bool {
    text.trim_start().starts_with(DS_CALLS.0) && text.contains(&format!("function{DS_SEP}")) && text.contains("```")
}
