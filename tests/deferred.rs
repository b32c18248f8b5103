//! Postings written behind their records: a writer journals each write's postings and a
//! background thread moves them into the index once enough wait (4 MiB; here 64 KiB, so
//! that moves run all the time). Whatever a search starts after a write was acknowledged
//! must find it, and nothing deleted, while the moves run.

mod common;

use common::token;
use mnem::{KeywordQuery, Mnem, Namespace, OpenOptions};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn ns() -> Namespace {
    Namespace::new("app", "user")
}

fn ev(n: usize) -> String {
    let filler: Vec<String> = (0..12).map(|i| format!("word{}", (n * 7 + i) % 300)).collect();
    let text = format!("{} {} 東京 {}", token(n), filler.join(" "), token(n));
    json!({"id": format!("e{n}"), "author": "user", "timestamp": n as f64, "content": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum State {
    Added,
    /// `delete_memory` called, not yet returned.
    Deleting,
    Deleted,
}

fn adk_found(m: &Mnem, n: usize) -> bool {
    let v: Value = serde_json::from_slice(&m.search(&ns(), &token(n)).unwrap()).unwrap();
    let ids: Vec<&str> = v["memories"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert!(ids.len() <= 1, "{} matched {ids:?}", token(n));
    ids == [format!("e{n}")]
}

fn keyword_found(m: &Mnem, n: usize) -> bool {
    let hits = m.keyword_search(&ns(), &KeywordQuery::new(token(n))).unwrap();
    assert!(hits.len() <= 1, "{} matched {} episodes", token(n), hits.len());
    hits.len() == 1
}

#[test]
fn searches_find_every_acknowledged_write_while_postings_move() {
    let dir = std::env::temp_dir().join(format!("mnem-deferred-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.to_str().unwrap().to_string();
    let m = Arc::new(Mnem::open(&path, OpenOptions { create: true, ..Default::default() }).unwrap());
    // About two writes of postings: a move starts every other write, alongside the searches.
    m.set_postings_limit_for_test(64 << 10);
    const CALLS: usize = 400;
    const PER_CALL: usize = 20;
    let states: Arc<Mutex<HashMap<usize, State>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let checked = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (m, states, done) = (m.clone(), states.clone(), done.clone());
        std::thread::spawn(move || {
            for call in 0..CALLS {
                let first = call * PER_CALL;
                let lines: Vec<String> = (first..first + PER_CALL).map(ev).collect();
                m.add_events(&ns(), &format!("s{}", call % 7), &lines.join("\n"), "").unwrap();
                states.lock().unwrap().extend((first..first + PER_CALL).map(|n| (n, State::Added)));
                // Every fifth call deletes one of its events again.
                if call % 5 == 0 {
                    let n = first + call % PER_CALL;
                    states.lock().unwrap().insert(n, State::Deleting);
                    assert_eq!(m.delete_memory(&ns(), &format!("e{n}")).unwrap(), 1);
                    states.lock().unwrap().insert(n, State::Deleted);
                }
            }
            done.store(true, Ordering::SeqCst);
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (m, states, done, checked) = (m.clone(), states.clone(), done.clone(), checked.clone());
            std::thread::spawn(move || {
                let mut i = r;
                while !done.load(Ordering::SeqCst) {
                    let known: Vec<(usize, State)> = {
                        let s = states.lock().unwrap();
                        if s.is_empty() {
                            continue;
                        }
                        // The newest acknowledged writes, and an older one.
                        let newest = s.keys().max().copied().unwrap();
                        [newest, newest.saturating_sub(1), i * 7919 % (newest + 1)]
                            .iter()
                            .filter_map(|n| s.get(n).map(|st| (*n, *st)))
                            .collect()
                    };
                    for (n, before) in known {
                        let (adk, kw) = (adk_found(&m, n), keyword_found(&m, n));
                        let after = states.lock().unwrap()[&n];
                        match (before, after) {
                            (State::Added, State::Added) => assert!(adk && kw, "e{n} acknowledged, not found"),
                            (State::Deleted, _) => assert!(!adk && !kw, "e{n} deleted, still found"),
                            _ => {} // being deleted during the search: either answer is right
                        }
                        checked.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert!(checked.load(Ordering::Relaxed) > 100, "the readers ran alongside the writer");
    let states = states.lock().unwrap().clone();
    let check_all = |m: &Mnem| {
        for (&n, &st) in &states {
            assert_ne!(st, State::Deleting);
            let want = st == State::Added;
            assert_eq!((adk_found(m, n), keyword_found(m, n)), (want, want), "e{n} {st:?}");
        }
    };
    check_all(&m);
    drop(m);
    let m = Mnem::open(&path, OpenOptions::default()).unwrap();
    assert_eq!(m.stats().journal_replayed, 0, "a clean close moved every run");
    check_all(&m);
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Unit vectors of dimension 8 for episode `n` (a few directions, so that neighbours tie
/// rarely but matter).
fn vector(n: usize) -> Vec<f32> {
    (0..8).map(|i| (((n * 31 + i * 17) % 23) as f32 - 11.0) / 11.0).collect()
}

/// Every search kind's answer, as the bytes the C ABI writes.
fn answers(m: &Mnem, queries: &[String]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for q in queries {
        out.push(m.search(&ns(), q).unwrap());
        let mut b = Vec::new();
        mnem::output::write_results(&mut b, &m.keyword_search(&ns(), &KeywordQuery::new(q.clone())).unwrap());
        out.push(b);
        let mut hq = mnem::HybridQuery::new(q.clone());
        hq.vector = Some(vector(q.len()));
        let mut b = Vec::new();
        mnem::output::write_hybrid_results(&mut b, &m.hybrid_search(&ns(), &hq).unwrap());
        out.push(b);
    }
    // Every key count (postings included); the file-size estimate depends on flushes.
    let stats = mnem::NamespaceStats { approximate_file_bytes: 0, ..m.namespace_stats(&ns()).unwrap() };
    out.push(format!("{stats:?}").into_bytes());
    out
}

/// Searches that read postings from memory (none moved to the index while the store is
/// open) answer byte for byte as the same store does once its close moved them into the
/// index, through every kind of write: ADK events, episodes with vectors, re-writes, deletes.
/// Searches between the writes build the overlay piece by piece.
#[test]
fn searches_over_postings_held_in_memory_answer_as_over_the_index() {
    let dir = std::env::temp_dir().join(format!("mnem-held-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.to_str().unwrap().to_string();
    let mut queries: Vec<String> = vec!["東京".into(), "word7 word8".into(), "nothing".into()];
    for round in 0..4 {
        let held = Mnem::open(&path, OpenOptions { create: true, ..Default::default() }).unwrap();
        held.set_postings_limit_for_test(usize::MAX);
        for step in 0..5 {
            let k = round * 5 + step;
            let first = k * 30;
            let lines: Vec<String> = (first..first + 30).map(ev).collect();
            held.add_events(&ns(), &format!("s{}", k % 4), &lines.join("\n"), "").unwrap();
            let eps = (0..10)
                .map(|i| mnem::EpisodeInput {
                    id: Some(uuid::Uuid::from_u128((k * 10 + i % 7) as u128 + 1)),
                    primary: format!("{} word{} episode{}", token(k * 10 + i), i, k),
                    embedding: (i % 3 != 0).then(|| vector(k * 10 + i)),
                    ..Default::default()
                })
                .collect();
            held.put_episodes(&ns(), eps).unwrap();
            if k % 3 == 2 {
                held.delete_memory(&ns(), &format!("e{}", first - 7)).unwrap();
                held.delete_episodes(&ns(), &[uuid::Uuid::from_u128((k * 10 - 5) as u128)]).unwrap();
            }
            queries.push(token(first + 3));
            queries.push(format!("{} episode{}", token(k * 10 + 2), k));
            answers(&held, &queries);
        }
        let a = answers(&held, &queries);
        drop(held);
        let moved = Mnem::open(&path, OpenOptions::default()).unwrap();
        assert_eq!(moved.stats().journal_replayed, 0, "the close moved every run");
        let c = answers(&moved, &queries);
        for (i, (x, y)) in a.iter().zip(&c).enumerate() {
            assert_eq!(String::from_utf8_lossy(x), String::from_utf8_lossy(y), "round {round}, answer {i}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
