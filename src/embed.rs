//! Embedders: the caller's model, registered on an open store (`Mnem::set_embedder`) or
//! given to one search (`Mnem::hybrid_search_with`). This module holds the one rule of when a
//! text needs a vector (`needs_vector`), which text of an episode is embedded
//! (`episode_text`), and `run`, the only path from mnem to an embedder: it checks what comes
//! back and turns every failure, a panic included, into `Status::EmbedderFailed`.

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
