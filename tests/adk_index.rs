//! `mnem_search` over its persisted index equals ADK's reference algorithm (re-tokenize every
//! stored event for every query), through a random history of appends, session re-adds,
//! `delete_memory`, expiring events and `memory` episodes written, re-written and deleted
//! by `put_episodes`; and again after the store is closed and reopened.

use mnem::adk::tokenizer;
use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions};
use serde_json::{json, Value};
use uuid::Uuid;
mod common;
use common::{places, Rng};

const ATOMS: [&str; 33] = [
    "tea",
    "Tea",
    "東京",
    "大阪",
    "東京タワー",
    "İstanbul",
    "stanbul",
    "Straße",
    "ΟΔΟΣ",
    "οδος",
    "café",
    "cafe\u{301}",
    "हिन्दी",
    "ह",
    "x²y",
    "a‿b",
    "Ｐｙｔｈｏｎ",
    "python",
    "2024年に",
    "ﬁnance",
    "...",
    "",
    "naïveテスト",
    "テスト",
    "москва",
    "Москваcity",
    "_",
    "under_score",
    "K",
    "\u{212A}elvin",
    // Every char of a token, not the token: no substring match.
    "京東",
    "トスmテ",
    // Non-ASCII chars no query token holds.
    "it’s…😀",
];

const SESSIONS: usize = 5;

fn text(rng: &mut Rng) -> String {
    let n = rng.below(6);
    let sep = [" ", "", ", ", "-"][rng.below(4)];
    let t: Vec<&str> = (0..n).map(|_| ATOMS[rng.below(ATOMS.len())]).collect();
    t.join(sep)
}

/// What should be searchable, in ADK's tie order: session buckets in first-insertion order,
/// each in insertion order, then `memory` episodes in UUID order.
#[derive(Default)]
struct Model {
    /// Session name and its `(id, text)` events, by bucket position.
    buckets: Vec<(String, Vec<(String, String)>)>,
    /// `(uuid, memory id, text)`, kept in UUID order.
    memories: Vec<(Uuid, String, String)>,
}

impl Model {
    fn bucket(&mut self, session: &str) -> &mut Vec<(String, String)> {
        if let Some(i) = self.buckets.iter().position(|b| b.0 == session) {
            return &mut self.buckets[i].1;
        }
        self.buckets.push((session.to_string(), Vec::new()));
        &mut self.buckets.last_mut().expect("just pushed").1
    }

    fn rows(&self) -> Vec<(&str, &str)> {
        let events = self.buckets.iter().flat_map(|b| b.1.iter().map(|(id, t)| (id.as_str(), t.as_str())));
        events.chain(self.memories.iter().map(|(_, id, t)| (id.as_str(), t.as_str()))).collect()
    }

    /// ADK's `search_memory`, literally.
    fn search(&self, query: &str) -> Vec<String> {
        let q = tokenizer::words_lower(query);
        let mut hits: Vec<(usize, &str)> = Vec::new();
        for (id, t) in self.rows() {
            let words = tokenizer::searchable_words(t);
            if words.is_empty() {
                continue;
            }
            let hay = tokenizer::haystack(t);
            let score = q.iter().filter(|w| words.contains(w) || (!w.is_ascii() && hay.contains(w.as_str()))).count();
            if score > 0 {
                hits.push((score, id));
            }
        }
        hits.sort_by_key(|h| std::cmp::Reverse(h.0));
        hits.into_iter().take(10).map(|(_, id)| id.to_string()).collect()
    }
}

fn event(id: &str, text: &str) -> String {
    json!({"id": id, "author": "user", "timestamp": 1.0, "content": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
}

fn memory(id: Uuid, memory_id: &str, text: &str) -> EpisodeInput {
    EpisodeInput {
        id: Some(id),
        episode_type: "memory".into(),
        event_id: Some(memory_id.into()),
        content: Some(json!({"parts": [{"text": text}]}).to_string()),
        ..Default::default()
    }
}

fn found(m: &Mnem, ns: &Namespace, q: &str) -> Vec<String> {
    let v: Value = serde_json::from_slice(&m.search(ns, q).unwrap()).unwrap();
    v["memories"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

fn check(m: &Mnem, ns: &Namespace, model: &Model, rng: &mut Rng, queries: usize) {
    // Let the events written with a 1 ms TTL expire.
    std::thread::sleep(std::time::Duration::from_millis(3));
    for _ in 0..queries {
        let n = 1 + rng.below(3);
        let q: Vec<&str> = (0..n).map(|_| ATOMS[rng.below(ATOMS.len())]).collect();
        let q = q.join(" ");
        assert_eq!(found(m, ns, &q), model.search(&q), "query {q:?}");
    }
}

/// One random step of the history.
fn step(m: &Mnem, ns: &Namespace, model: &mut Model, rng: &mut Rng, counter: &mut u64) {
    let mut fresh = || {
        *counter += 1;
        *counter
    };
    let session = format!("s{}", rng.below(SESSIONS));
    match rng.below(20) {
        0..=11 => {
            let events: Vec<(String, String)> =
                (0..1 + rng.below(3)).map(|_| (format!("e{}", fresh()), text(rng))).collect();
            let body: Vec<String> = events.iter().map(|(id, t)| event(id, t)).collect();
            assert_eq!(m.add_events(ns, &session, &body.join("\n"), "").unwrap(), events.len() as u64);
            model.bucket(&session).extend(events);
        }
        12 => {
            // Expired before the next search: never found.
            let body = event(&format!("e{}", fresh()), &text(rng));
            m.add_events(ns, &session, &body, r#"{"ttl_ms": 1}"#).unwrap();
            model.bucket(&session);
        }
        13 => {
            // Re-add the session: some events kept, one re-written, one new.
            let mut events = model.bucket(&session).clone();
            if !events.is_empty() {
                let i = rng.below(events.len());
                events[i].1 = text(rng);
                events.truncate(i + 1 + rng.below(events.len() - i));
            }
            events.push((format!("e{}", fresh()), text(rng)));
            let body: Vec<String> = events.iter().map(|(id, t)| event(id, t)).collect();
            assert_eq!(m.add_session(ns, &session, &body.join("\n")).unwrap(), events.len() as u64);
            *model.bucket(&session) = events;
        }
        14 | 15 => {
            let rows: Vec<String> = model.rows().into_iter().map(|r| r.0.to_string()).collect();
            if rows.is_empty() {
                return;
            }
            let id = rows[rng.below(rows.len())].clone();
            assert!(m.delete_memory(ns, &id).unwrap() >= 1);
            for b in &mut model.buckets {
                b.1.retain(|e| e.0 != id);
            }
            model.memories.retain(|e| e.1 != id);
        }
        16 | 17 => {
            let k = fresh();
            let (id, mid, text) = (Uuid::from_u128(k as u128), format!("m{k}"), text(rng));
            m.put_episodes(ns, vec![memory(id, &mid, &text)]).unwrap();
            model.memories.push((id, mid, text));
        }
        18 => {
            if model.memories.is_empty() {
                return;
            }
            let i = rng.below(model.memories.len());
            model.memories[i].2 = text(rng);
            let (id, mid, text) = &model.memories[i];
            m.put_episodes(ns, vec![memory(*id, mid, text)]).unwrap();
        }
        _ => {
            if model.memories.is_empty() {
                return;
            }
            let (id, _, _) = model.memories.remove(rng.below(model.memories.len()));
            assert_eq!(m.delete_episodes(ns, &[id]).unwrap(), 1);
        }
    }
}

#[test]
fn search_equals_the_reference_scan_through_a_random_history_and_a_reopen() {
    for place in places("adk_reference_scan") {
        eprintln!("backend: {}", place.backend);
        let ns = Namespace::new("app", "user");
        let mut rng = Rng(0x1234_5678);
        let mut model = Model::default();
        let mut counter = 0;
        {
            let m = place.open();
            for round in 0..4 {
                for _ in 0..100 {
                    step(&m, &ns, &mut model, &mut rng, &mut counter);
                }
                check(&m, &ns, &model, &mut rng, 100 + round * 50);
            }
            // Another namespace's writes are invisible here.
            let other = Namespace::new("app", "other");
            m.add_events(&other, "s0", &event("x1", "tea 東京 python"), "").unwrap();
            check(&m, &ns, &model, &mut rng, 50);
        }
        let m = Mnem::open(&place.uri, OpenOptions::default()).unwrap();
        check(&m, &ns, &model, &mut rng, 300);
    }
}

#[test]
fn session_event_ids_and_delete_memory_read_the_persisted_index() {
    for place in places("adk_event_ids") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "user");
        let body = [event("a", "tea"), event("b", "東京"), event("c", "")].join("\n");
        m.add_events(&ns, "s", &body, "").unwrap();
        m.add_events(&ns, "t", &event("b", "again"), "").unwrap();
        m.add_events(&ns, "s", &event("a", "duplicate id: not added"), "").unwrap();
        assert_eq!(m.session_event_ids(&ns, "s").unwrap(), Some(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(m.session_event_ids(&ns, "nope").unwrap(), None);
        // `b` is in two buckets: both go.
        assert_eq!(m.delete_memory(&ns, "b").unwrap(), 2);
        assert_eq!(m.session_event_ids(&ns, "s").unwrap(), Some(vec!["a".into(), "c".into()]));
        assert_eq!(m.session_event_ids(&ns, "t").unwrap(), Some(vec![]));
        assert_eq!(found(&m, &ns, "東京 again tea"), ["a"]);
        assert_eq!(m.delete_memory(&ns, "b").unwrap(), 0);
    }
}
