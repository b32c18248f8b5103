//! What only the Rust API's embedders do: `embed_batch`, called once for all the vectors of a
//! write, and providers that fail with an error of another status or panic (EMBEDDER_FAILED,
//! nothing written, the store still usable). What embedding does (the texts embedded, the
//! vectors stored, refusals, failures, hybrid search and recall) is the conformance corpus's
//! (tests/conformance/cases/embed_*.json, recall_legacy_copies.json).

use mnem::{EmbeddingProvider, EpisodeInput, HybridQuery, Mnem, Namespace, OpenOptions, RecallQuery, Status};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Default)]
struct Counting {
    batches: AtomicUsize,
    texts: AtomicUsize,
}

impl EmbeddingProvider for Counting {
    fn embed(&self, _: &str) -> mnem::Result<Vec<f32>> {
        self.texts.fetch_add(1, Ordering::SeqCst);
        Ok(vec![1.0, 0.5])
    }
    fn embed_batch(&self, texts: &[&str]) -> mnem::Result<Vec<Vec<f32>>> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        texts.iter().map(|t| self.embed(t)).collect()
    }
}

struct Failing;
impl EmbeddingProvider for Failing {
    fn embed(&self, _: &str) -> mnem::Result<Vec<f32>> {
        Err(mnem::Error::new(Status::Io, "model offline"))
    }
}

struct Panicking;
impl EmbeddingProvider for Panicking {
    fn embed(&self, _: &str) -> mnem::Result<Vec<f32>> {
        panic!("model bug")
    }
}

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

fn note(text: &str) -> EpisodeInput {
    EpisodeInput { primary: text.into(), embed: true, ..Default::default() }
}

const EVENTS: &str = concat!(
    r#"{"id":"e1","content":{"parts":[{"text":"tea time"}]}}"#,
    "\n",
    r#"{"id":"e2","content":{"parts":[{"text":"the train"}]}}"#
);

#[test]
fn a_write_asks_for_all_its_vectors_in_one_batch() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    let p = Arc::new(Counting::default());
    m.set_embedder(Some(p.clone()));
    m.put_episodes(&ns, vec![note("green tea"), note("the cat"), EpisodeInput::default()]).unwrap();
    assert_eq!((p.batches.load(Ordering::SeqCst), p.texts.load(Ordering::SeqCst)), (1, 2));
    m.add_session(&ns, "s", EVENTS).unwrap();
    assert_eq!((p.batches.load(Ordering::SeqCst), p.texts.load(Ordering::SeqCst)), (2, 4));
}

#[test]
fn failing_and_panicking_providers_are_embedder_failed_and_write_nothing() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    let tea = EpisodeInput { primary: "tea".into(), embedding: Some(vec![1.0, 0.0]), ..Default::default() };
    m.put_episodes(&ns, vec![tea]).unwrap();
    for (p, want) in [
        (Arc::new(Failing) as Arc<dyn EmbeddingProvider>, "the embedder failed: model offline"),
        (Arc::new(Panicking), "the embedder panicked: model bug"),
    ] {
        m.set_embedder(Some(p));
        let before = m.namespace_stats(&ns).unwrap();
        let e = m.put_episodes(&ns, vec![EpisodeInput::default(), note("more tea")]).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (Status::EmbedderFailed, want));
        let e = m.add_session(&ns, "s", EVENTS).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (Status::EmbedderFailed, want));
        assert_eq!(m.add_events(&ns, "s", EVENTS, "").unwrap_err().status, Status::EmbedderFailed);
        assert_eq!(m.hybrid_search(&ns, &HybridQuery::new("tea")).unwrap_err().status, Status::EmbedderFailed);
        assert_eq!(m.recall(&ns, &RecallQuery::new("tea")).unwrap_err().status, Status::EmbedderFailed);
        assert_eq!(m.namespace_stats(&ns).unwrap(), before, "the store is unchanged");
    }
    // The store still works after the panic.
    m.set_embedder(None);
    assert_eq!(m.hybrid_search(&ns, &HybridQuery::new("tea")).unwrap().len(), 1);
}
