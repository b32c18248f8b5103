//! The built-in embedder (`"embedder": "builtin"`): its vectors against those of the model's
//! reference implementation (sentence-transformers over PyTorch, recorded in
//! tests/fixtures/minilm/reference.json by make_reference.py beside it), and what a store
//! opened with it does: ADK events and episodes get vectors in their write, each event's with
//! the two before it in its session, and hybrid search and recall take text alone.
//!
//! The model is installed by `scripts/model` (the README's test command runs it and sets
//! MNEM_MODEL_DIR); without it these tests fail, naming what to run.

use mnem::embed::builtin::{self, Builtin, DIMENSIONS, MODEL_NAME};
use mnem::{EmbeddingProvider, EpisodeInput, HybridQuery, Mnem, Namespace, OpenOptions, RecallQuery, Status};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

fn model_dir() -> PathBuf {
    builtin::find_model_dir(None, None).unwrap_or_else(|e| panic!("{} (run scripts/model)", e.message))
}

fn open_builtin(context: Option<usize>) -> Mnem {
    let opts = OpenOptions {
        create: true,
        builtin_embedder: true,
        model_dir: Some(model_dir()),
        embed_context: context,
        ..Default::default()
    };
    Mnem::open(":memory:", opts).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn vectors_equal_the_reference_implementation() {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/minilm/reference.json")).expect("reference.json");
    assert_eq!(fixture["model"], MODEL_NAME);
    let texts: Vec<&str> = fixture["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let want: Vec<Vec<f64>> = serde_json::from_value(fixture["vectors"].clone()).unwrap();
    let model = Builtin::load(&model_dir()).unwrap();
    // In one batch (padded, sorted by length) and one text at a time: the same vectors.
    let batch = model.embed_batch(&texts).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let one = model.embed(text).unwrap();
        assert_eq!(one.len(), DIMENSIONS);
        for (got, label) in [(&batch[i], "batch"), (&one, "alone")] {
            let worst = got.iter().zip(&want[i]).map(|(g, w)| (f64::from(*g) - w).abs()).fold(0.0, f64::max);
            assert!(worst <= 1e-5, "{text:?} ({label}): a component differs from the reference by {worst}");
        }
    }
    // The reference's own check: related sentences are close, unrelated ones are not.
    assert!(cosine(&batch[0], &batch[1]) > 0.7);
    assert!(cosine(&batch[0], &batch[7]) < 0.3);
}

#[test]
fn open_refuses_a_missing_model_and_unknown_embedders() {
    let dir = tempdir();
    let store = dir.join("store");
    let missing = dir.join("no-model-here");
    let opts =
        OpenOptions { create: true, builtin_embedder: true, model_dir: Some(missing.clone()), ..Default::default() };
    let e = Mnem::open(store.to_str().unwrap(), opts).err().unwrap();
    assert_eq!(e.status, Status::EmbedderFailed);
    assert!(e.message.contains(&missing.display().to_string()) && e.message.contains("model_dir"), "{}", e.message);
    assert!(!store.exists(), "a failed load opens (and creates) nothing");
    let cases = [
        (r#"{"embedder":"mini"}"#, "`embedder` must be \"builtin\" or \"none\""),
        (r#"{"embedder":true}"#, "`embedder` must be"),
        (r#"{"model_dir":""}"#, "`model_dir` must not be empty"),
        (r#"{"embed_context":17}"#, "`embed_context` must be an integer from 0 to 16"),
        (r#"{"embed_context":-1}"#, "`embed_context` must be"),
    ];
    for (json, want) in cases {
        let e = mnem_open_json(json).err().unwrap();
        assert_eq!(e.0, Status::InvalidArgument as i32, "{json}");
        assert!(e.1.contains(want), "{json}: {}", e.1);
    }
    assert!(mnem_open_json(r#"{"embedder":"none","embed_context":3}"#).is_ok());
}

/// `mnem_open` of `:memory:` with `options`: Ok, or the status and message.
fn mnem_open_json(options: &str) -> Result<(), (i32, String)> {
    use mnem::ffi::*;
    let view = |s: &str| mnem_str { ptr: s.as_ptr(), len: s.len() };
    let mut h: *mut mnem_store = std::ptr::null_mut();
    let mut err = mnem_error { code: 0, detail: 0, message: [0; MNEM_ERROR_MESSAGE_CAP] };
    let st = mnem_open(view(":memory:"), MNEM_OPEN_CREATE, view(options), &mut h, &mut err);
    if st == Status::Ok {
        mnem_free(h);
        return Ok(());
    }
    // SAFETY: mnem_open wrote a NUL-terminated message into `err`.
    let msg = unsafe { std::ffi::CStr::from_ptr(err.message.as_ptr()) }.to_string_lossy().into_owned();
    Err((st as i32, msg))
}

fn tempdir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("mnem-builtin-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn event(id: &str, author: &str, text: &str) -> String {
    serde_json::json!({"id": id, "author": author, "timestamp": 1_700_000_000.0,
        "content": {"role": "user", "parts": [{"text": text}]}})
    .to_string()
}

#[test]
fn events_are_embedded_with_the_two_before_them_and_text_alone_finds_them() {
    let m = open_builtin(None);
    let ns = Namespace::new("app", "u");
    let model = m.embedder().unwrap();
    assert_eq!(model.model(), Some(MODEL_NAME));
    let first = [
        event("q1", "Ana", "Where did you go on holiday last summer?"),
        event("a1", "Ben", "We went hiking in the Alps, near Chamonix."),
        event("q2", "Ana", "Did you bring the dog?"),
    ];
    m.add_session(&ns, "s1", &first.join("\n")).unwrap();
    // Appended events are embedded with what the session holds before them.
    m.add_events(&ns, "s1", &event("a2", "Ben", "Yes, twice, she loved the snow."), "").unwrap();
    let want = [
        ("q1", "Ana: Where did you go on holiday last summer?".to_string()),
        (
            "a1",
            "Ana: Where did you go on holiday last summer? Ben: We went hiking in the Alps, near Chamonix.".into(),
        ),
        ("q2", "Ana: Where did you go on holiday last summer? Ben: We went hiking in the Alps, near Chamonix. Ana: Did you bring the dog?".into()),
        ("a2", "Ben: We went hiking in the Alps, near Chamonix. Ana: Did you bring the dog? Ben: Yes, twice, she loved the snow.".into()),
    ];
    // The query has text only: the store's model embeds it.
    let q = HybridQuery { limit: 10, semantic_weight: 1.0, ..HybridQuery::new("mountain trip with a pet") };
    let found = m.hybrid_search(&ns, &q).unwrap();
    assert_eq!(found.len(), 4);
    for (id, text) in &want {
        let r = found.iter().find(|r| r.record.event_id.as_deref() == Some(*id)).unwrap();
        let stored = r.record.embedding.as_ref().unwrap();
        let expected = model.embed(text).unwrap();
        assert!(cosine(stored, &expected) > 0.99999, "{id}: not the vector of {text:?}");
    }
    assert_eq!(found[0].record.event_id.as_deref(), Some("a2"), "the answer about the dog in the snow is nearest");
    // Recall (ADK's ranking fused with the vectors) also takes text alone.
    let recalled = String::from_utf8(m.recall(&ns, &RecallQuery::new("snowy holiday with the dog")).unwrap()).unwrap();
    assert!(recalled.contains("\"a2\""), "{recalled}");
    // Episodes written with "embed" get the model's vector of their text.
    let ids = m
        .put_episodes(
            &ns,
            vec![EpisodeInput { primary: "a note about the Alps".into(), embed: true, ..Default::default() }],
        )
        .unwrap();
    let ep = m.get_episode(&ns, &ids[0]).unwrap().unwrap();
    assert!(cosine(ep.embedding.as_ref().unwrap(), &model.embed("a note about the Alps").unwrap()) > 0.99999);
}

/// What a caller's embedder is asked for: each event's own text by default, the composed
/// text when the store is opened with `embed_context`.
#[test]
fn embed_context_is_the_callers_choice_with_their_own_embedder() {
    #[derive(Default)]
    struct Recording(Mutex<Vec<String>>);
    impl EmbeddingProvider for Recording {
        fn embed(&self, text: &str) -> mnem::Result<Vec<f32>> {
            self.0.lock().unwrap().push(text.to_string());
            Ok(vec![1.0, 0.0])
        }
    }
    let ns = Namespace::new("app", "u");
    let events = [event("1", "a", "one"), event("2", "b", "two"), event("3", "a", "three")].join("\n");
    for (context, want) in [
        (None, vec!["one", "two", "three"]),
        (Some(0), vec!["one", "two", "three"]),
        (Some(1), vec!["a: one", "a: one b: two", "b: two a: three"]),
    ] {
        let m =
            Mnem::open(":memory:", OpenOptions { create: true, embed_context: context, ..Default::default() }).unwrap();
        let r = Arc::new(Recording::default());
        m.set_embedder(Some(r.clone()));
        m.add_session(&ns, "s", &events).unwrap();
        assert_eq!(*r.0.lock().unwrap(), want, "embed_context {context:?}");
    }
}

/// A read-only view (`MNEM_OPEN_VIEW`) opened with the built-in embedder has it too: text
/// alone finds what the writer stored with its vectors.
#[test]
fn a_view_opened_with_the_builtin_embedder_embeds_its_queries() {
    let dir = tempdir();
    let path = dir.join("store");
    let path = path.to_str().unwrap();
    {
        let opts =
            OpenOptions { create: true, builtin_embedder: true, model_dir: Some(model_dir()), ..Default::default() };
        let m = Mnem::open(path, opts).unwrap();
        let note = |t: &str| EpisodeInput { primary: t.into(), embed: true, ..Default::default() };
        m.put_episodes(&Namespace::new("a", "u"), vec![note("Alice prefers green tea"), note("the printer is broken")])
            .unwrap();
    }
    let view = Mnem::open_view(
        path,
        OpenOptions { builtin_embedder: true, model_dir: Some(model_dir()), ..Default::default() },
    )
    .unwrap();
    let q = HybridQuery { limit: 1, ..HybridQuery::new("a hot drink") };
    let found = view.hybrid_search(&Namespace::new("a", "u"), &q).unwrap();
    assert_eq!(found[0].record.primary, "Alice prefers green tea");
    assert!(found[0].semantic_score > 0.0 && found[0].keyword_score == 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_builtin_models_vectors_are_recorded_as_its_own() {
    let m = open_builtin(None);
    let ns = Namespace::new("app", "u");
    m.add_session(&ns, "s", &event("e1", "user", "green tea at noon")).unwrap();
    let s = m.namespace_stats(&ns).unwrap();
    assert_eq!((s.dimension, s.embedding_model.as_deref()), (Some(384), Some("all-MiniLM-L6-v2")));
    // A vector the caller made, unnamed, cannot join them; named as the same model, it can.
    let v: Vec<f32> = (0..384).map(|i| (i % 7) as f32 - 3.0).collect();
    let mine = |model: Option<&str>| EpisodeInput {
        primary: "mine".into(),
        embedding: Some(v.clone()),
        embedding_model: model.map(str::to_owned),
        ..EpisodeInput::default()
    };
    let e = m.put_episodes(&ns, vec![mine(None)]).unwrap_err();
    assert!(e.message.contains("\"all-MiniLM-L6-v2\""), "{}", e.message);
    m.put_episodes(&ns, vec![mine(Some("all-MiniLM-L6-v2"))]).unwrap();
}
