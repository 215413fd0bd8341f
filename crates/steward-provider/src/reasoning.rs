//! Reasoning written into the assistant text (SPEC P8): `<think>…</think>`, Magistral's
//! `[THINK]…[/THINK]`, Command's `<|START_THINKING|>…<|END_THINKING|>` and the harmony
//! `analysis` channel; a lone `</think>` (the template opened the block) makes everything
//! before it reasoning. Harmony's framing tokens (`<|start|>assistant`, `<|channel|>final
//! <|message|>`, `<|end|>`, `<|return|>`), Command's `<|START_RESPONSE|>`/`<|END_RESPONSE|>`
//! and Llama's end-of-turn tokens are dropped.
//!
//! [`Splitter`] reads the text as it streams: a tag split across chunks is held back until it
//! is complete, so the output is the same however the text was cut.

/// Reasoning wrappers: opening tag, closing tag.
const WRAPPERS: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("[THINK]", "[/THINK]"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel|>analysis<|message|>", "<|end|>"),
];

/// Tokens that frame a message and are neither text nor reasoning.
const DROPPED: &[&str] = &[
    "<|start|>assistant",
    "<|channel|>final<|message|>",
    "<|return|>",
    "<|end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|START_RESPONSE|>",
    "<|END_RESPONSE|>",
];

/// A closing tag without its opening tag: what came before it was reasoning.
const LONE_CLOSE: &str = "</think>";

/// What the splitter found in a piece of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Assistant text.
    Text(String),
    /// Part of the current reasoning block.
    Reasoning(String),
    /// The current reasoning block ended.
    BlockEnd,
    /// A lone `</think>`: all text so far was reasoning.
    TextWasReasoning,
}

/// Splits streamed assistant text into text and reasoning.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    pending: String,
    /// The closing tag of the open reasoning block.
    open: Option<&'static str>,
    /// A reasoning block was opened at some point.
    seen_reasoning: bool,
}

impl Splitter {
    /// Reads `piece`, returning what is certain so far; a possible tag at the end is held.
    pub fn push(&mut self, piece: &str) -> Vec<Piece> {
        self.pending.push_str(piece);
        let mut out = Vec::new();
        loop {
            match self.open {
                Some(close) => match self.pending.find(close) {
                    Some(at) => {
                        let inner: String = self.pending.drain(..at + close.len()).collect();
                        push_piece(&mut out, Piece::Reasoning(inner[..at].to_string()));
                        out.push(Piece::BlockEnd);
                        self.open = None;
                    }
                    None => {
                        let keep = partial_suffix(&self.pending, &[close]);
                        let ready: String = self.pending.drain(..self.pending.len() - keep).collect();
                        push_piece(&mut out, Piece::Reasoning(ready));
                        return out;
                    }
                },
                None => {
                    let Some((at, tag)) = self.first_tag() else {
                        let keep = partial_suffix(&self.pending, &all_tags());
                        let ready: String = self.pending.drain(..self.pending.len() - keep).collect();
                        push_piece(&mut out, Piece::Text(ready));
                        return out;
                    };
                    let before: String = self.pending.drain(..at).collect();
                    self.pending.drain(..tag.len());
                    push_piece(&mut out, Piece::Text(before));
                    if let Some((_, close)) = WRAPPERS.iter().find(|(open, _)| *open == tag) {
                        self.open = Some(close);
                        self.seen_reasoning = true;
                    } else if tag == LONE_CLOSE && !self.seen_reasoning {
                        self.seen_reasoning = true;
                        out.push(Piece::TextWasReasoning);
                    }
                }
            }
        }
    }

    /// Ends the text: a held partial tag is text (or reasoning inside an open block), and an
    /// open block ends.
    pub fn finish(&mut self) -> Vec<Piece> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        if self.open.take().is_some() {
            push_piece(&mut out, Piece::Reasoning(rest));
            out.push(Piece::BlockEnd);
        } else {
            push_piece(&mut out, Piece::Text(rest));
        }
        out
    }

    /// The earliest complete tag in the pending text (the longest one at that place).
    fn first_tag(&self) -> Option<(usize, &'static str)> {
        all_tags()
            .into_iter()
            .filter_map(|tag| self.pending.find(tag).map(|at| (at, tag)))
            .min_by_key(|&(at, tag)| (at, usize::MAX - tag.len()))
    }
}

fn push_piece(out: &mut Vec<Piece>, piece: Piece) {
    match &piece {
        Piece::Text(s) | Piece::Reasoning(s) if s.is_empty() => {}
        _ => out.push(piece),
    }
}

fn all_tags() -> Vec<&'static str> {
    WRAPPERS.iter().map(|(open, _)| *open).chain(DROPPED.iter().copied()).chain([LONE_CLOSE]).collect()
}

/// The length of the longest end of `text` that is a proper beginning of one of `tags`.
fn partial_suffix(text: &str, tags: &[&str]) -> usize {
    tags.iter()
        .flat_map(|tag| (1..tag.len()).filter(move |&k| tag.is_char_boundary(k)).map(move |k| &tag[..k]))
        .filter(|prefix| text.ends_with(prefix))
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// Text and reasoning of a whole message, as [`Accumulated`] collects them.
#[derive(Debug, Default)]
pub(crate) struct Accumulated {
    /// Assistant text, reasoning removed.
    pub text: String,
    /// Finished reasoning blocks, each trimmed.
    pub blocks: Vec<String>,
    /// The reasoning block being read.
    pub current: String,
}

impl Accumulated {
    /// Applies one piece.
    pub fn apply(&mut self, piece: &Piece) {
        match piece {
            Piece::Text(s) => self.text.push_str(s),
            Piece::Reasoning(s) => self.current.push_str(s),
            Piece::BlockEnd => {
                let block = std::mem::take(&mut self.current);
                self.blocks.push(block.trim().to_string());
            }
            Piece::TextWasReasoning => {
                let text = std::mem::take(&mut self.text);
                self.blocks.push(text.trim().to_string());
            }
        }
    }

    /// The reasoning blocks that are not empty, joined by newlines.
    pub fn reasoning(&self) -> String {
        let blocks: Vec<&str> = self.blocks.iter().map(String::as_str).filter(|b| !b.is_empty()).collect();
        blocks.join("\n")
    }
}

/// Splits a whole message: `(text without reasoning, trimmed; reasoning blocks joined by
/// newlines)`.
pub fn split_think(text: &str) -> (String, String) {
    let mut splitter = Splitter::default();
    let mut acc = Accumulated::default();
    for piece in splitter.push(text).iter().chain(splitter.finish().iter()) {
        acc.apply(piece);
    }
    (acc.text.trim().to_string(), acc.reasoning())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wrapper_is_reasoning_and_framing_tokens_are_dropped() {
        for (text, shown, reasoning) in [
            ("<think>I should read a.</think>\nAnswer", "Answer", "I should read a."),
            ("Hi <think>x</think>there", "Hi there", "x"),
            ("plan first</think>Answer", "Answer", "plan first"),
            ("<think>cut off", "", "cut off"),
            ("no tags", "no tags", ""),
            ("[THINK]mistral thinks[/THINK]Done.", "Done.", "mistral thinks"),
            (
                "<|START_THINKING|>cohere thinks<|END_THINKING|><|START_RESPONSE|>Done.<|END_RESPONSE|>",
                "Done.",
                "cohere thinks",
            ),
            (
                "<|start|>assistant<|channel|>analysis<|message|>harmony thinks<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>",
                "Done.",
                "harmony thinks",
            ),
            ("<think>a</think><think>b</think>c", "c", "a\nb"),
        ] {
            assert_eq!(split_think(text), (shown.to_string(), reasoning.to_string()), "{text}");
        }
    }

    #[test]
    fn a_tag_split_anywhere_is_still_a_tag() {
        let text = "<think>ponder</think>Answer [THINK]more[/THINK] end";
        let whole = split_think(text);
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let mut s = Splitter::default();
            let mut acc = Accumulated::default();
            for p in s.push(&text[..cut]).iter().chain(s.push(&text[cut..]).iter()).chain(s.finish().iter()) {
                acc.apply(p);
            }
            assert_eq!((acc.text.trim().to_string(), acc.reasoning()), whole, "cut at {cut}");
        }
    }
}
