//! ADK seam rules that span write paths: a `delete_memory` tombstone holds for the index
//! rebuild after reopen (for `put_episodes` of `memory` episodes: the corpus's adk_memories),
//! `add_session` replaces a bucket wholesale, batch errors name their line, and a search
//! ranks on the index that matches the records it reads, even under concurrent writes.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions, Status};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

fn ns() -> Namespace {
    Namespace::new("app", "user")
}

fn ev(id: &str, text: &str) -> String {
    json!({"id": id, "author": "user", "timestamp": 1.5, "content": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
}

fn memory(event_id: Option<&str>, text: &str) -> EpisodeInput {
    EpisodeInput {
        episode_type: "memory".into(),
        event_id: event_id.map(str::to_owned),
        content: Some(json!({"role": "user", "parts": [{"text": text}]}).to_string()),
        primary: text.into(),
        ..Default::default()
    }
}

fn search_ids(m: &Mnem, q: &str) -> Vec<String> {
    let v: Value = serde_json::from_slice(&m.search(&ns(), q).unwrap()).unwrap();
    v["memories"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn the_index_rebuild_honours_tombstones() {
    let dir = tempdir();
    let path = dir.to_str().unwrap();
    {
        let m = Mnem::open(path, OpenOptions { create: true, ..Default::default() }).unwrap();
        // What a delete followed by a re-put left behind before the check existed: the
        // memory episode and the tombstone of its id.
        m.put_episodes(&ns(), vec![memory(Some("pref-1"), "likes oolong")]).unwrap();
        // docs/FORMAT.md: namespace prefix, tag 03 (a `delete_memory` tombstone), the memory id.
        let tombstone = [&ns().prefix()[..], &[0x03], b"pref-1"].concat();
        m.store().put_raw_for_test("adk", &tombstone, b"").unwrap();
        m.store().set_format_version_for_test(1).unwrap();
    }
    let m = Mnem::open(path, OpenOptions::default()).unwrap();
    assert!(search_ids(&m, "oolong").is_empty());
    drop(m);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn add_session_replaces_tags_added_by_add_events() {
    let m = mem();
    let e = ev("e1", "the meeting is on friday");
    m.add_events(&ns(), "s1", &e, r#"{"tags":["urgent"]}"#).unwrap();
    let tagged = |m: &Mnem| {
        let q = mnem::KeywordQuery { tag: Some("urgent".into()), ..mnem::KeywordQuery::new("friday") };
        m.keyword_search(&ns(), &q).unwrap().len()
    };
    assert_eq!(tagged(&m), 1);
    // The same event re-added by add_session: the bucket is what the session says, no tags.
    assert_eq!(m.add_session(&ns(), "s1", &e).unwrap(), 1);
    assert_eq!(tagged(&m), 0);
    assert_eq!(search_ids(&m, "friday"), ["e1"]);
    assert_eq!(m.keyword_search(&ns(), &mnem::KeywordQuery::new("friday")).unwrap().len(), 1);

    // And an event first added with a TTL loses it when the session re-adds it.
    m.add_events(&ns(), "s2", &ev("e2", "dentist on monday"), r#"{"ttl_ms":1}"#).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(search_ids(&m, "dentist").is_empty());
    m.add_session(&ns(), "s2", &ev("e2", "dentist on monday")).unwrap();
    assert_eq!(search_ids(&m, "dentist"), ["e2"]);
}

#[test]
fn an_oversized_event_names_its_line() {
    let m = mem();
    let big = "x ".repeat(33 << 20);
    let batch = [ev("a", "small"), String::new(), ev("b", &big)].join("\n");
    for r in [m.add_session(&ns(), "s", &batch), m.add_events(&ns(), "s", &batch, "")] {
        let err = r.unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument);
        assert!(err.message.contains("line 3"), "{}", err.message);
    }
    assert!(search_ids(&m, "small").is_empty(), "nothing of the batch was stored");
}

/// Writers change `memory` episodes (the path that drops the namespace's ADK index) while
/// searchers check that every answer is complete: the namespace always holds at least ten
/// episodes matching the query, so every answer must have exactly ten. The writer's
/// episodes match both query words and rank first while they live, so a search ranking on
/// an index older than its snapshot would pick a deleted one and come back short.
#[test]
fn searches_see_a_consistent_index_under_concurrent_episode_writes() {
    let m = Arc::new(mem());
    let stable: Vec<EpisodeInput> = (0..12).map(|i| memory(Some(&format!("m{i}")), "shared topic")).collect();
    m.put_episodes(&ns(), stable).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let searches = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (m, stop) = (m.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let ids = m.put_episodes(&ns(), vec![memory(Some(&format!("w{i}")), "shared topic extra")]).unwrap();
                m.delete_episodes(&ns(), &ids).unwrap();
                i += 1;
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (m, stop, searches) = (m.clone(), stop.clone(), searches.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let n = search_ids(&m, "topic extra").len();
                    assert_eq!(n, 10, "a search returned {n} memories while at least 12 match");
                    searches.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let start = std::time::Instant::now();
    while searches.load(Ordering::Relaxed) < 3000 && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
}

fn tempdir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mnem-adk-rules-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_batch_over_256_mib_is_refused_before_parsing() {
    let m = mem();
    let mut big = ev("a", "small");
    big.push('\n');
    big.push_str(&" ".repeat((256 << 20) + 1 - big.len()));
    let errors = [
        m.add_session(&ns(), "s", &big).unwrap_err(),
        m.add_events(&ns(), "s", &big, "").unwrap_err(),
        mnem::input::parse_episode_lines(&big).unwrap_err(),
        mnem::input::parse_id_lines(&big).unwrap_err(),
    ];
    for e in errors {
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("268435457 bytes") && e.message.contains("split"), "{}", e.message);
    }
    big.truncate(256 << 20);
    assert_eq!(m.add_events(&ns(), "s", &big, "").unwrap(), 1, "exactly 256 MiB is accepted");
}

#[test]
fn an_embedding_over_16384_dimensions_is_refused() {
    let m = mem();
    let v = |n: usize| EpisodeInput { primary: "x".into(), embedding: Some(vec![0.5; n]), ..Default::default() };
    let e = m.put_episodes(&ns(), vec![v(16_385)]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("16385 dimensions") && e.message.contains("line 1"), "{}", e.message);
    m.put_episodes(&ns(), vec![v(16_384)]).unwrap();
    let q = mnem::HybridQuery { vector: Some(vec![0.5; 16_385]), ..mnem::HybridQuery::new("x") };
    let e = m.hybrid_search(&ns(), &q).unwrap_err();
    assert!(e.message.contains("`vector` has 16385 dimensions"), "{}", e.message);
}
