//! Remembered facts (SPEC A5): "remember that …" stores a fact for the message's owner,
//! "forget fact N" removes the N-th one. At most [`MAX_FACTS`] facts of at most
//! [`MAX_FACT_CHARS`] characters per owner, persisted in the [`Store`], so every open session
//! of that owner sees a change at once. [`context_block`] is the text given to the model.
//!
//! A fact is kept on one line (runs of whitespace, newlines included, become one space) and is
//! redacted before it is stored: a secret in it never reaches the database or a model.

use steward_policy::Redactor;
use steward_store::{FactRecord, Store, StoreError, new_id};

/// Most facts one owner may have.
pub const MAX_FACTS: usize = 50;

/// Most characters (Unicode scalar values, not bytes) in one fact.
pub const MAX_FACT_CHARS: usize = 300;

/// A memory command found in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryCommand {
    /// "remember that …" / "remember: …": the text to remember (trimmed; may be empty, which
    /// [`remember`] refuses).
    Remember(String),
    /// "forget fact N": the 1-based position of the fact in the owner's list ([`list`]).
    Forget(usize),
}

/// Why a memory command failed. Every message is a sentence meant for the user.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The fact has no text.
    #[error("There is nothing to remember: the fact is empty.")]
    Empty,
    /// The fact is longer than [`MAX_FACT_CHARS`].
    #[error("A fact can have at most {MAX_FACT_CHARS} characters, but this one has {chars}.")]
    TooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// The owner already has [`MAX_FACTS`] facts.
    #[error("You already have {MAX_FACTS} remembered facts, the most allowed; forget one first (\"forget fact N\").")]
    Full,
    /// The owner already has exactly this fact.
    #[error("That fact is already remembered.")]
    Duplicate,
    /// No fact of the owner has that position or id.
    #[error("There is no such remembered fact; facts are numbered from 1 in the order they were remembered.")]
    NotFound,
    /// Reading or writing the facts failed.
    #[error("The remembered facts could not be read or saved: {0}")]
    Storage(#[from] StoreError),
}

impl MemoryError {
    /// A short snake_case code: `invalid` (empty, too long, duplicate), `full`, `not_found` or
    /// `storage`.
    pub fn class(&self) -> &'static str {
        match self {
            MemoryError::Empty | MemoryError::TooLong { .. } | MemoryError::Duplicate => "invalid",
            MemoryError::Full => "full",
            MemoryError::NotFound => "not_found",
            MemoryError::Storage(_) => "storage",
        }
    }
}

/// The memory command in `message`, if it is one: "remember that …", "remember: …" or
/// "forget fact N" (N ≥ 1). Case-insensitive; surrounding whitespace and one trailing period
/// are ignored. Anything else (e.g. "remembering is hard", "forget fact 0") gives `None`.
pub fn parse_command(message: &str) -> Option<MemoryCommand> {
    let message = message.trim();
    let message = message.strip_suffix('.').unwrap_or(message).trim_end();
    if let Some(rest) = strip_prefix_ci(message, "remember") {
        if let Some(text) = rest.strip_prefix(':') {
            return Some(MemoryCommand::Remember(text.trim().to_string()));
        }
        let text = word(rest, "that")?;
        return Some(MemoryCommand::Remember(text.trim().to_string()));
    }
    let rest = strip_prefix_ci(message, "forget")?;
    let number = word(rest, "fact")?.trim();
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let position: usize = number.parse().ok()?;
    (position >= 1).then_some(MemoryCommand::Forget(position))
}

/// `text` without the ASCII `prefix`, compared case-insensitively.
fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// What follows the whole word `expected` in `rest`, which must start with whitespace; `None`
/// unless `expected` is followed by whitespace or the end.
fn word<'a>(rest: &'a str, expected: &str) -> Option<&'a str> {
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let after = strip_prefix_ci(rest.trim_start(), expected)?;
    (after.is_empty() || after.starts_with(char::is_whitespace)).then_some(after)
}

/// `text` on one line: runs of whitespace become one space, none at either end.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Remembers `text` for `owner_id` and returns the stored fact.
///
/// The text is trimmed and kept on one line; it must not be empty ([`MemoryError::Empty`]) or
/// longer than [`MAX_FACT_CHARS`] characters ([`MemoryError::TooLong`]). Secrets are redacted
/// before it is stored (a fact that redaction makes too long is refused the same way). An
/// exact copy of one of the owner's facts is refused ([`MemoryError::Duplicate`]), and so is
/// a fact beyond [`MAX_FACTS`] ([`MemoryError::Full`]; the limit is enforced by the store's
/// write, so concurrent sessions cannot exceed it).
pub async fn remember(
    store: &dyn Store,
    clock: &dyn crate::clock::Clock,
    redactor: &Redactor,
    owner_id: &str,
    text: &str,
) -> Result<FactRecord, MemoryError> {
    let shown = one_line(text);
    if shown.is_empty() {
        return Err(MemoryError::Empty);
    }
    let chars = shown.chars().count();
    if chars > MAX_FACT_CHARS {
        return Err(MemoryError::TooLong { chars });
    }
    // Redact before joining lines: some secret patterns are anchored at the end of a line.
    let stored = one_line(&redactor.redact(text.trim()));
    let chars = stored.chars().count();
    if chars > MAX_FACT_CHARS {
        return Err(MemoryError::TooLong { chars });
    }
    let existing = store.facts(owner_id).await?;
    if existing.iter().any(|f| f.text == stored) {
        return Err(MemoryError::Duplicate);
    }
    if existing.len() >= MAX_FACTS {
        return Err(MemoryError::Full);
    }
    let fact = FactRecord { id: new_id("fct_"), owner_id: owner_id.to_string(), text: stored, created_at: clock.now() };
    let limit = u32::try_from(MAX_FACTS).unwrap_or(u32::MAX);
    if store.insert_fact(&fact, limit).await? { Ok(fact) } else { Err(MemoryError::Full) }
}

/// Forgets the owner's fact at 1-based `position` in [`list`] order and returns it;
/// [`MemoryError::NotFound`] when there is none (also when it was just removed elsewhere).
pub async fn forget(store: &dyn Store, owner_id: &str, position: usize) -> Result<FactRecord, MemoryError> {
    let facts = store.facts(owner_id).await?;
    let fact = position.checked_sub(1).and_then(|i| facts.into_iter().nth(i)).ok_or(MemoryError::NotFound)?;
    if store.delete_fact(owner_id, &fact.id).await? { Ok(fact) } else { Err(MemoryError::NotFound) }
}

/// Forgets the owner's fact with this id; [`MemoryError::NotFound`] when the owner has none
/// (another owner's fact is never removed).
pub async fn forget_id(store: &dyn Store, owner_id: &str, id: &str) -> Result<(), MemoryError> {
    if store.delete_fact(owner_id, id).await? { Ok(()) } else { Err(MemoryError::NotFound) }
}

/// The owner's facts, oldest first: position N in this list is "fact N".
pub async fn list(store: &dyn Store, owner_id: &str) -> Result<Vec<FactRecord>, MemoryError> {
    Ok(store.facts(owner_id).await?)
}

/// The text given to the model each round: `Remembered facts:` followed by one numbered line
/// per fact (`1. …`), in [`list`] order; `None` when there are no facts.
pub fn context_block(facts: &[FactRecord]) -> Option<String> {
    if facts.is_empty() {
        return None;
    }
    let mut block = String::from("Remembered facts:");
    for (i, fact) in facts.iter().enumerate() {
        block.push_str(&format!("\n{}. {}", i + 1, one_line(&fact.text)));
    }
    Some(block)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use steward_store::{SqliteStore, StoreOptions};

    use super::*;

    async fn open(dir: &Path) -> SqliteStore {
        SqliteStore::open(&dir.join("steward.db"), StoreOptions::default()).await.unwrap()
    }

    fn remember_cmd(text: &str) -> Option<MemoryCommand> {
        Some(MemoryCommand::Remember(text.to_string()))
    }

    #[test]
    fn parse_recognises_the_commands() {
        assert_eq!(parse_command("remember that the tests use nextest"), remember_cmd("the tests use nextest"));
        assert_eq!(parse_command("  Remember That Alice owns the CI.  "), remember_cmd("Alice owns the CI"));
        assert_eq!(parse_command("REMEMBER:deploys go out on Fridays."), remember_cmd("deploys go out on Fridays"));
        assert_eq!(parse_command("remember:   version is 1.2.3."), remember_cmd("version is 1.2.3"));
        assert_eq!(parse_command("remember\tthat\nit is é漢"), remember_cmd("it is é漢"));
        assert_eq!(parse_command("remember that"), remember_cmd(""));
        assert_eq!(parse_command("forget fact 3"), Some(MemoryCommand::Forget(3)));
        assert_eq!(parse_command(" Forget FACT 12. "), Some(MemoryCommand::Forget(12)));
        assert_eq!(parse_command("forget   fact\t1"), Some(MemoryCommand::Forget(1)));
    }

    #[test]
    fn parse_ignores_everything_else() {
        for message in [
            "remembering is hard",
            "remember thatcher",
            "remember the milk",
            "please remember that x",
            "remember",
            "forget fact x",
            "forget fact 0",
            "forget fact",
            "forget fact -1",
            "forget fact +1",
            "forget fact 1 and 2",
            "forget fact 99999999999999999999999999",
            "forget facts 1",
            "forgetfact 1",
            "forget it",
            "",
            "é",
        ] {
            assert_eq!(parse_command(message), None, "{message:?}");
        }
    }

    #[tokio::test]
    async fn the_fifty_first_fact_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path()).await;
        let redactor = Redactor::default();
        for i in 1..=MAX_FACTS {
            remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", &format!("fact number {i}"))
                .await
                .unwrap();
        }
        let err = remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", "one more").await.unwrap_err();
        assert!(matches!(err, MemoryError::Full), "{err}");
        assert_eq!(err.class(), "full");
        assert!(err.to_string().contains("50"), "{err}");
        let facts = list(&store, "local:alice").await.unwrap();
        assert_eq!(facts.len(), MAX_FACTS);
        assert_eq!(facts[0].text, "fact number 1");
        assert_eq!(facts[49].text, "fact number 50");

        let removed = forget(&store, "local:alice", 2).await.unwrap();
        assert_eq!(removed.text, "fact number 2");
        remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", "one more").await.unwrap();
        let facts = list(&store, "local:alice").await.unwrap();
        assert_eq!((facts.len(), facts[1].text.as_str()), (MAX_FACTS, "fact number 3"));
        assert_eq!(facts[49].text, "one more");
    }

    #[tokio::test]
    async fn length_is_counted_in_characters() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path()).await;
        let redactor = Redactor::default();
        let exact = "é".repeat(MAX_FACT_CHARS); // 600 bytes, 300 characters
        let fact = remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", &format!("  {exact}\n"))
            .await
            .unwrap();
        assert_eq!(fact.text, exact);
        let over = "漢".repeat(MAX_FACT_CHARS + 1);
        let err = remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", &over).await.unwrap_err();
        assert!(matches!(err, MemoryError::TooLong { chars: 301 }), "{err}");
        assert_eq!(err.class(), "invalid");
        let message = err.to_string();
        assert!(message.contains("300") && message.contains("301"), "{message}");
        assert_eq!(list(&store, "local:alice").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn empty_and_duplicate_facts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path()).await;
        let redactor = Redactor::default();
        let err = remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", " \n\t ").await.unwrap_err();
        assert!(matches!(err, MemoryError::Empty), "{err}");
        assert_eq!(err.class(), "invalid");
        remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", "the main branch is trunk")
            .await
            .unwrap();
        let err =
            remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", " the main  branch is\ntrunk ")
                .await
                .unwrap_err();
        assert!(matches!(err, MemoryError::Duplicate), "{err}");
        assert_eq!(err.class(), "invalid");
        remember(&store, &crate::clock::SystemClock, &redactor, "local:bob", "the main branch is trunk").await.unwrap();
        assert_eq!(list(&store, "local:alice").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn owners_are_isolated() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path()).await;
        let redactor = Redactor::default();
        let alices =
            remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", "alice reviews the store crate")
                .await
                .unwrap();
        assert!(list(&store, "local:bob").await.unwrap().is_empty());

        let err = forget_id(&store, "local:bob", &alices.id).await.unwrap_err();
        assert!(matches!(err, MemoryError::NotFound), "{err}");
        assert_eq!(err.class(), "not_found");
        assert!(matches!(forget(&store, "local:bob", 1).await, Err(MemoryError::NotFound)));
        assert_eq!(list(&store, "local:alice").await.unwrap(), vec![alices.clone()]);

        assert!(matches!(forget(&store, "local:alice", 0).await, Err(MemoryError::NotFound)));
        assert!(matches!(forget(&store, "local:alice", 2).await, Err(MemoryError::NotFound)));
        forget_id(&store, "local:alice", &alices.id).await.unwrap();
        assert!(list(&store, "local:alice").await.unwrap().is_empty());
        assert!(matches!(forget_id(&store, "local:alice", &alices.id).await, Err(MemoryError::NotFound)));
    }

    #[tokio::test]
    async fn secrets_are_redacted_before_they_are_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("steward.db");
        let redactor = Redactor::new(["correct-horse-battery".to_string()]);
        let openai = format!("sk-proj-{}", "a1B2c3D4e5".repeat(4));
        let aws = "AKIAIOSFODNN7EXAMPLE";
        {
            let store = open(dir.path()).await;
            let text = format!("my key is {openai} and aws {aws}, password correct-horse-battery");
            let fact = remember(&store, &crate::clock::SystemClock, &redactor, "local:alice", &text).await.unwrap();
            assert_eq!(fact.text, "my key is [REDACTED] and aws [REDACTED], password [REDACTED]");
            assert_eq!(list(&store, "local:alice").await.unwrap(), vec![fact]);
            store.flush().await.unwrap();
        }
        let raw = std::fs::read(&path).unwrap();
        let wal = std::fs::read(dir.path().join("steward.db-wal")).unwrap_or_default();
        for bytes in [raw, wal] {
            let haystack = String::from_utf8_lossy(&bytes);
            for secret in [openai.as_str(), aws, "correct-horse-battery"] {
                assert!(!haystack.contains(secret), "{secret} reached the database file");
            }
        }
    }

    #[test]
    fn context_block_numbers_the_facts() {
        assert_eq!(context_block(&[]), None);
        let fact = |text: &str| FactRecord {
            id: new_id("fct_"),
            owner_id: "local:alice".into(),
            text: text.into(),
            created_at: chrono::Utc::now(),
        };
        let block = context_block(&[fact("tests use nextest"), fact("deploys on\nFridays")]).unwrap();
        assert_eq!(block, "Remembered facts:\n1. tests use nextest\n2. deploys on Fridays");
    }

    #[test]
    fn every_error_is_a_sentence_with_a_class() {
        let storage = MemoryError::from(StoreError::Closed { path: ":memory:".into() });
        assert_eq!(storage.class(), "storage");
        for err in [
            MemoryError::Empty,
            MemoryError::TooLong { chars: 301 },
            MemoryError::Full,
            MemoryError::Duplicate,
            MemoryError::NotFound,
            storage,
        ] {
            let message = err.to_string();
            assert!(message.starts_with(char::is_uppercase), "{message}");
            assert!(!err.class().is_empty() && err.class().bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
    }
}
