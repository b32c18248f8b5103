//! A registered embedder: writes that ask for vectors, ADK writes that store them, hybrid
//! search and ADK recall that embed their query, and what a failing or panicking embedder
//! does (a named status, nothing written). The embedder is a hashed bag of words (the same
//! one the conformance corpus and the binding tests use).

use mnem::{EmbeddingProvider, EpisodeInput, HybridQuery, Mnem, Namespace, OpenOptions, RecallQuery, Status};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const DIM: usize = 16;

/// Hashed bag of words: each maximal run of ASCII letters and digits, lowercased, adds 1 at
/// FNV-1a-32(word) mod DIM; a text without words is (1, 0, ..., 0).
fn hash_embed(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for w in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut h: u32 = 0x811c_9dc5;
        for b in w.to_ascii_lowercase().bytes() {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
        v[h as usize % DIM] += 1.0;
    }
    if v.iter().all(|x| *x == 0.0) {
        v[0] = 1.0;
    }
    v
}

#[derive(Default)]
struct Hashing {
    calls: AtomicUsize,
    texts: AtomicUsize,
}

impl EmbeddingProvider for Hashing {
    fn embed(&self, text: &str) -> mnem::Result<Vec<f32>> {
        self.texts.fetch_add(1, Ordering::SeqCst);
        Ok(hash_embed(text))
    }
    fn embed_batch(&self, texts: &[&str]) -> mnem::Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        texts.iter().map(|t| self.embed(t)).collect()
    }
    fn dimensions(&self) -> Option<usize> {
        Some(DIM)
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

fn ns() -> Namespace {
    Namespace::new("app", "u")
}

fn note(text: &str) -> EpisodeInput {
    EpisodeInput { primary: text.into(), embed: true, ..Default::default() }
}

fn event(id: &str, text: &str) -> String {
    serde_json::json!({"id": id, "author": "user", "timestamp": 1_700_000_000.0,
                       "content": {"role": "user", "parts": [{"text": text}]}})
    .to_string()
}

fn memory_ids(json: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(json).unwrap();
    v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()
}

const NOTES: [&str; 6] = [
    "green tea every morning",
    "the cat sleeps on the sofa",
    "tea with milk and sugar",
    "flights to Lisbon in May",
    "sofa cushions are green",
    "morning run before work",
];

#[test]
fn embed_lines_store_the_embedders_vector_of_their_text() {
    let m = mem();
    let p = Arc::new(Hashing::default());
    m.set_embedder(Some(p.clone()));
    let inputs = vec![
        note("green tea"),
        EpisodeInput {
            primary: "a".into(),
            secondary: " ".into(),
            context: "b c".into(),
            embed: true,
            ..Default::default()
        },
        EpisodeInput { primary: "no vector".into(), ..Default::default() },
    ];
    let ids = m.put_episodes(&ns(), inputs).unwrap();
    assert_eq!(p.calls.load(Ordering::SeqCst), 1, "one batch call for the write");
    let got = |i: usize| m.get_episode(&ns(), &ids[i]).unwrap().unwrap().embedding;
    assert_eq!(got(0), Some(hash_embed("green tea")));
    assert_eq!(got(1), Some(hash_embed("a\nb c")), "non-blank texts joined by a newline");
    assert_eq!(got(2), None);
}

#[test]
fn embed_is_refused_without_an_embedder_with_an_embedding_or_without_text() {
    let m = mem();
    let e = m.put_episodes(&ns(), vec![EpisodeInput::default(), note("tea")]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert_eq!(e.message, "line 2: `embed` is true but no embedder is registered on the store");
    m.set_embedder(Some(Arc::new(Hashing::default())));
    let both = EpisodeInput { embedding: Some(vec![1.0; DIM]), ..note("tea") };
    let e = m.put_episodes(&ns(), vec![both]).unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (Status::InvalidArgument, "line 1: give `embedding` or `embed`, not both")
    );
    // Blank text has no vector: the line is stored without one.
    let id = m.put_episodes(&ns(), vec![note(" \u{3000}\n")]).unwrap()[0];
    assert_eq!(m.get_episode(&ns(), &id).unwrap().unwrap().embedding, None);
    let wire = mnem::input::parse_episode_lines(r#"{"primary":"x","embed":true,"embedding":[1]}"#).unwrap_err();
    assert_eq!(wire.message, "line 1: give `embedding` or `embed`, not both");
    let wire = mnem::input::parse_episode_lines(r#"{"primary":"x","embed":1}"#).unwrap_err();
    assert_eq!(wire.message, "line 1: `embed` must be true or false");
    assert!(m.keyword_search(&ns(), &mnem::KeywordQuery::new("tea")).unwrap().is_empty(), "no tea was written");
    m.set_embedder(None);
    assert!(m.put_episodes(&ns(), vec![note("tea")]).is_err(), "removed");
}

#[test]
fn failing_and_panicking_embedders_are_embedder_failed_and_write_nothing() {
    let m = mem();
    m.put_episodes(
        &ns(),
        vec![EpisodeInput { primary: "tea".into(), embedding: Some(vec![1.0; DIM]), ..Default::default() }],
    )
    .unwrap();
    for (p, want) in [
        (Arc::new(Failing) as Arc<dyn EmbeddingProvider>, "the embedder failed: model offline"),
        (Arc::new(Panicking), "the embedder panicked: model bug"),
    ] {
        m.set_embedder(Some(p));
        let before = m.namespace_stats(&ns()).unwrap();
        let e = m.put_episodes(&ns(), vec![EpisodeInput::default(), note("more tea")]).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (Status::EmbedderFailed, want));
        let e = m.add_session(&ns(), "s", &event("e1", "tea time")).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (Status::EmbedderFailed, want));
        let e = m.add_events(&ns(), "s", &event("e2", "tea time"), "").unwrap_err();
        assert_eq!(e.status, Status::EmbedderFailed);
        let e = m.hybrid_search(&ns(), &HybridQuery::new("tea")).unwrap_err();
        assert_eq!(e.status, Status::EmbedderFailed);
        let e = m.recall(&ns(), &RecallQuery::new("tea")).unwrap_err();
        assert_eq!(e.status, Status::EmbedderFailed);
        assert_eq!(m.namespace_stats(&ns()).unwrap(), before, "the store is unchanged");
        // Queries that need no vector never call it.
        for q in [
            HybridQuery { limit: 0, ..HybridQuery::new("tea") },
            HybridQuery::new(" "),
            HybridQuery { semantic_weight: 0.0, ..HybridQuery::new("tea") },
        ] {
            m.hybrid_search(&ns(), &q).unwrap();
        }
    }
    // The store still works after the panic.
    m.set_embedder(None);
    assert_eq!(m.hybrid_search(&ns(), &HybridQuery::new("tea")).unwrap().len(), 1);
}

#[test]
fn hybrid_search_with_a_registered_embedder_equals_the_vector_passed_explicitly() {
    let m = mem();
    m.set_embedder(Some(Arc::new(Hashing::default())));
    m.put_episodes(&ns(), NOTES.iter().map(|t| note(t)).collect()).unwrap();
    for text in ["green tea", "sofa", "morning flights", "cat on a cushion", "work"] {
        for w in [0.3, 0.5, 1.0] {
            let q = HybridQuery { semantic_weight: w, ..HybridQuery::new(text) };
            let registered = m.hybrid_search(&ns(), &q).unwrap();
            let explicit =
                m.hybrid_search(&ns(), &HybridQuery { vector: Some(hash_embed(text)), ..q.clone() }).unwrap();
            assert_eq!(registered, explicit, "{text} {w}");
            assert!(registered.iter().any(|r| r.semantic_score > 0.0), "{text}: the vector channel took part");
        }
    }
    // Without an embedder, today's behaviour: the lexical channel alone.
    m.set_embedder(None);
    let lexical = m.hybrid_search(&ns(), &HybridQuery::new("green tea")).unwrap();
    assert!(lexical.iter().all(|r| r.semantic_score == 0.0) && !lexical.is_empty());
}

#[test]
fn adk_writes_store_vectors_and_embed_only_what_changed() {
    let m = mem();
    let p = Arc::new(Hashing::default());
    m.set_embedder(Some(p.clone()));
    let mut session = vec![event("e1", "I always order an oolong"), event("e2", "the train was late")];
    m.add_session(&ns(), "s1", &session.join("\n")).unwrap();
    assert_eq!(p.texts.load(Ordering::SeqCst), 2);
    // A grown session: only the new event is embedded; the stored ones keep theirs.
    session.push(event("e3", "lunch at noon"));
    m.add_session(&ns(), "s1", &session.join("\n")).unwrap();
    assert_eq!(p.texts.load(Ordering::SeqCst), 3);
    // Appending ids already stored embeds nothing.
    m.add_events(&ns(), "s1", &session.join("\n"), "").unwrap();
    assert_eq!(p.texts.load(Ordering::SeqCst), 3);
    m.add_events(&ns(), "", &event("e4", "oolong again"), "").unwrap();
    assert_eq!(p.texts.load(Ordering::SeqCst), 4);
    // The vectors are in the store: a semantic-only hybrid search with e1's vector finds it.
    let q = HybridQuery {
        vector: Some(hash_embed("I always order an oolong")),
        semantic_weight: 1.0,
        limit: 1,
        ..HybridQuery::new("x")
    };
    let hit = &m.hybrid_search(&ns(), &q).unwrap()[0];
    assert_eq!(hit.record.event_id.as_deref(), Some("e1"));
}

#[test]
fn recall_fuses_adk_ranking_with_vectors_and_follows_deletes() {
    let m = mem();
    m.set_embedder(Some(Arc::new(Hashing::default())));
    let events: Vec<String> = NOTES.iter().enumerate().map(|(i, t)| event(&format!("e{i}"), t)).collect();
    m.add_session(&ns(), "s1", &events.join("\n")).unwrap();
    // Weight 0 is ADK's ranking exactly.
    for text in ["green tea", "sofa", "the", "Lisbon"] {
        let q = RecallQuery { semantic_weight: 0.0, ..RecallQuery::new(text) };
        assert_eq!(m.recall(&ns(), &q).unwrap(), m.search(&ns(), text).unwrap(), "{text}");
    }
    // Differential: the registered embedder gives what the explicit vector gives.
    for text in ["green tea", "cushions", "sleeps"] {
        let q = RecallQuery::new(text);
        let explicit = RecallQuery { vector: Some(hash_embed(text)), ..q.clone() };
        assert_eq!(m.recall(&ns(), &q).unwrap(), m.recall(&ns(), &explicit).unwrap());
    }
    // A word no event holds: ADK finds nothing, the vector channel does (the hash of
    // "cushions" lands where "sofa cushions are green" put a word of its own).
    let q = RecallQuery { vector: Some(hash_embed("sofa cushions are green")), ..RecallQuery::new("zzz") };
    assert_eq!(memory_ids(&m.search(&ns(), "zzz").unwrap()), Vec::<String>::new());
    assert_eq!(memory_ids(&m.recall(&ns(), &q).unwrap())[0], "e4");
    // Deleted memories leave the vector channel too.
    m.delete_memory(&ns(), "e4").unwrap();
    assert!(!memory_ids(&m.recall(&ns(), &q).unwrap()).contains(&"e4".to_string()));
    m.delete_session(&ns(), "s1").unwrap();
    assert!(memory_ids(&m.recall(&ns(), &q).unwrap()).is_empty());
    // Blank text and limit 0 answer nothing; limit above 10 is refused.
    assert!(memory_ids(&m.recall(&ns(), &RecallQuery::new(" ")).unwrap()).is_empty());
    let e = m.recall(&ns(), &RecallQuery { limit: 11, ..RecallQuery::new("x") }).unwrap_err();
    assert_eq!(e.message, "`limit` must be at most 10");
}

/// A store as the Python service wrote it before recall moved into the core: events without
/// vectors, and recall copies (`adk_recall`) carrying them, with hash tokens in `secondary`.
#[test]
fn legacy_recall_copies_answer_for_their_live_events() {
    let m = mem();
    let events: Vec<String> = NOTES.iter().enumerate().map(|(i, t)| event(&format!("e{i}"), t)).collect();
    m.add_session(&ns(), "s1", &events.join("\n")).unwrap();
    let copies: Vec<EpisodeInput> = NOTES
        .iter()
        .enumerate()
        .map(|(i, t)| EpisodeInput {
            episode_type: "adk_recall".into(),
            primary: t.to_string(),
            secondary: format!("zmnemm{i:032x} zmnems{:032x}", 7),
            event_id: Some(format!("e{i}")),
            session_id: Some("s1".into()),
            content: Some(format!(r#"{{"role":"user","parts":[{{"text":"{t}"}}]}}"#)),
            embedding: Some(hash_embed(t)),
            ..Default::default()
        })
        .collect();
    m.put_episodes(&ns(), copies).unwrap();
    // A burial mark, as the old delete_memory wrote with the core's delete.
    m.put_episodes(
        &ns(),
        vec![EpisodeInput {
            episode_type: "adk_recall_deleted".into(),
            secondary: "zmnemmdead".into(),
            ..Default::default()
        }],
    )
    .unwrap();
    let q = RecallQuery { vector: Some(hash_embed("sofa cushions are green")), ..RecallQuery::new("zzz") };
    let ids = memory_ids(&m.recall(&ns(), &q).unwrap());
    assert_eq!(ids[0], "e4", "the copy's vector finds its event");
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "each memory once");
    // The answer is the event's (its content and author), not the copy's.
    let v: Value = serde_json::from_slice(&m.recall(&ns(), &q).unwrap()).unwrap();
    assert_eq!(v["memories"][0]["author"], "user");
    // The core's deletes hide the copies, with no cleanup of them.
    m.delete_memory(&ns(), "e4").unwrap();
    assert!(!memory_ids(&m.recall(&ns(), &q).unwrap()).contains(&"e4".to_string()));
    m.add_session(&ns(), "s1", &events[..2].join("\n")).unwrap();
    let left = memory_ids(&m.recall(&ns(), &q).unwrap());
    assert!(left.iter().all(|id| id == "e0" || id == "e1"), "{left:?}");
}
