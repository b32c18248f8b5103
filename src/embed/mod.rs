//! Embedders: the caller's model, registered on an open store (`Mnem::set_embedder`) or
//! given to one search (`Mnem::hybrid_search_with`). This module holds the one rule of when a
//! text needs a vector (`needs_vector`), which text of an episode is embedded
//! (`episode_text`), and `run`, the only path from mnem to an embedder: it checks what comes
//! back and turns every failure, a panic included, into `Status::EmbedderFailed`. The
//! built-in model (`"embedder": "builtin"`) is `builtin`.

pub mod builtin;

use crate::error::{Error, Result, Status};
use crate::record::{check_embedding, MAX_DIMENSION};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Turns text into a vector; lives where the caller's embedding model lives. A registered
/// embedder is called from any thread that calls mnem, concurrently: hence `Send + Sync`.
pub trait EmbeddingProvider: Send + Sync {
    fn embed(&self, text: &str) -> Result<Vec<f32>>;

    /// One vector per text, in order. The default calls `embed` for each.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|t| self.embed(t)).collect()
    }

    /// The length of every vector, when the model knows it: mnem then refuses a vector of
    /// another length as the embedder's failure.
    fn dimensions(&self) -> Option<usize> {
        None
    }

    /// The model's name, when the embedder knows it (the built-in one does).
    fn model(&self) -> Option<&str> {
        None
    }
}

/// The model of a query vector that `provider` made: the provider's own name or, when it
/// names none, the query's `vector_model` (so a caller's per-call embedder is named by its
/// query). A query naming a model other than the provider's is INVALID_ARGUMENT: it would
/// search one model's vectors with another's.
pub(crate) fn query_model(provider: &dyn EmbeddingProvider, named: Option<String>) -> Result<Option<String>> {
    match (provider.model(), named) {
        (Some(own), Some(named)) if own != named => {
            Err(Error::invalid(format!("`vector_model` is {named:?} but the embedder's model is {own:?}")))
        }
        (Some(own), _) => Ok(Some(own.to_owned())),
        (None, named) => Ok(named),
    }
}

/// The one rule of when a text needs a vector: unless it is blank, that is empty or only
/// Unicode `White_Space` characters (Rust's `char::is_whitespace`, `str::trim`). So U+001C to
/// U+001F, which Python's `str.strip` also removes, are text here. A blank hybrid query
/// returns no results and asks for no vector; a blank episode or event is not embedded.
pub fn needs_vector(text: &str) -> bool {
    !text.trim().is_empty()
}

/// The text an episode written with `"embed": true` is embedded from: its primary,
/// secondary and context texts that are not blank, in that order, joined by one newline.
pub fn episode_text(primary: &str, secondary: &str, context: &str) -> String {
    [primary, secondary, context].into_iter().filter(|t| needs_vector(t)).collect::<Vec<_>>().join("\n")
}

/// How many earlier events of its session an ADK event is embedded with by default: 2 with
/// the built-in embedder, none with the caller's (which gets each event's own text).
pub const BUILTIN_EVENT_CONTEXT: usize = 2;
/// The most `embed_context` may ask for.
pub const MAX_EVENT_CONTEXT: usize = 16;

/// The text an ADK event is embedded from with `context` > 0: the `context` events before it
/// in its session (`before`, oldest first; blank ones skipped) and the event itself, each
/// written `author: text`, joined by one space. A turn of a conversation is often an answer
/// ("Yes, twice last year") that means something only after what was asked; its author
/// says whose memory it is. With `context` 0 it is the event's text alone.
pub fn event_text(before: &[(Option<&str>, &str)], author: Option<&str>, text: &str, context: usize) -> String {
    if context == 0 {
        return text.to_string();
    }
    let said = |a: Option<&str>, t: &str| match a {
        Some(a) if !a.is_empty() => format!("{a}: {t}"),
        _ => t.to_string(),
    };
    let earlier: Vec<String> = before.iter().filter(|(_, t)| needs_vector(t)).map(|(a, t)| said(*a, t)).collect();
    let mut parts: Vec<String> = earlier[earlier.len().saturating_sub(context)..].to_vec();
    parts.push(said(author, text));
    parts.join(" ")
}

fn failed(message: impl Into<String>) -> Error {
    Error::new(Status::EmbedderFailed, message)
}

/// Ask `provider` for the vectors of `texts` and check them: one per text, each a valid
/// embedding (`check_embedding`) of the provider's `dimensions` when it states them, all of
/// one length. Any failure, an error or a panic of the provider included, is
/// `EmbedderFailed` with a message naming it; nothing has been written then.
pub fn run(provider: &dyn EmbeddingProvider, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let vectors = match catch_unwind(AssertUnwindSafe(|| provider.embed_batch(texts))) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) if e.status == Status::EmbedderFailed => return Err(e),
        Ok(Err(e)) => return Err(failed(format!("the embedder failed: {}", e.message))),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            return Err(failed(format!("the embedder panicked: {what}")));
        }
    };
    if vectors.len() != texts.len() {
        return Err(failed(format!("the embedder returned {} vectors for {} texts", vectors.len(), texts.len())));
    }
    let want = provider.dimensions().or(vectors.first().map(Vec::len));
    for (i, v) in vectors.iter().enumerate() {
        check_embedding(v).map_err(|e| failed(format!("the embedder's vector {}: {}", i + 1, e.message)))?;
        if Some(v.len()) != want {
            return Err(failed(format!(
                "the embedder's vector {} has {} dimensions; expected {}",
                i + 1,
                v.len(),
                want.unwrap_or(0)
            )));
        }
    }
    debug_assert!(vectors.iter().all(|v| v.len() <= MAX_DIMENSION));
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Vec<Vec<f32>>, Option<usize>);
    impl EmbeddingProvider for Fixed {
        fn embed(&self, _: &str) -> Result<Vec<f32>> {
            unreachable!()
        }
        fn embed_batch(&self, _: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(self.0.clone())
        }
        fn dimensions(&self) -> Option<usize> {
            self.1
        }
    }

    struct Panics;
    impl EmbeddingProvider for Panics {
        fn embed(&self, _: &str) -> Result<Vec<f32>> {
            panic!("model exploded")
        }
    }

    #[test]
    fn blank_is_unicode_white_space_only() {
        for blank in ["", " ", "\t\n\r\u{b}\u{c}", "\u{85}\u{a0}\u{2028}\u{3000}"] {
            assert!(!needs_vector(blank), "{blank:?}");
        }
        for text in ["a", " x ", "\u{1c}", "\u{1f}", "\u{200b}", "."] {
            assert!(needs_vector(text), "{text:?}");
        }
        assert_eq!(episode_text("a", " ", "c"), "a\nc");
        assert_eq!(episode_text("", "", ""), "");
    }

    #[test]
    fn event_text_takes_the_last_context_events_with_their_authors() {
        let before = [(Some("a"), "one"), (None, "two"), (Some("b"), " "), (Some(""), "three")];
        assert_eq!(event_text(&before, Some("b"), "four", 0), "four");
        assert_eq!(event_text(&before, Some("b"), "four", 1), "three b: four");
        assert_eq!(event_text(&before, Some("b"), "four", 2), "two three b: four");
        assert_eq!(event_text(&before, None, "four", 9), "a: one two three four");
        assert_eq!(event_text(&[], Some("u"), "x", 2), "u: x");
    }

    #[test]
    fn every_bad_answer_is_embedder_failed() {
        let cases: Vec<(Box<dyn EmbeddingProvider>, &str)> = vec![
            (Box::new(Fixed(vec![vec![1.0]], None)), "2 texts"),
            (Box::new(Fixed(vec![vec![1.0], vec![0.0]], None)), "zero vector"),
            (Box::new(Fixed(vec![vec![1.0], vec![f32::NAN]], None)), "finite"),
            (Box::new(Fixed(vec![vec![1.0], vec![1.0, 2.0]], None)), "vector 2 has 2 dimensions; expected 1"),
            (Box::new(Fixed(vec![vec![1.0], vec![1.0]], Some(3))), "vector 1 has 1 dimensions; expected 3"),
            (Box::new(Panics), "panicked: model exploded"),
        ];
        for (p, want) in cases {
            let e = run(&*p, &["a", "b"]).unwrap_err();
            assert_eq!(e.status, Status::EmbedderFailed, "{}", e.message);
            assert!(e.message.contains(want), "{} lacks {want}", e.message);
        }
        let ok = run(&Fixed(vec![vec![1.0, 0.0], vec![0.0, 2.0]], Some(2)), &["a", "b"]).unwrap();
        assert_eq!(ok, vec![vec![1.0, 0.0], vec![0.0, 2.0]]);
    }
}
