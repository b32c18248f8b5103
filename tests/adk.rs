//! google-adk 2.13.0's unit tests for `InMemoryMemoryService`
//! (`tests/unittests/memory/test_in_memory_memory_service.py`), ported as `tNN_`, plus the
//! 2.13.0 behaviour those tests leave out that needs a wait (expiry) or threads; delete_memory,
//! re-added sessions, order after a reopen, memory episodes, content bytes and bad batches are
//! the conformance corpus's (adk_*, batch_atomicity). Where
//! an ADK test inspects the service's private dict, the port asserts what that dict implies
//! for search; every expectation was confirmed by running google-adk 2.13.0.

use mnem::{Mnem, Namespace, OpenOptions};
use serde_json::{json, Value};

const APP: &str = "test-app";
const USER: &str = "test-user";
const OTHER: &str = "another-user";

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

fn ns(user: &str) -> Namespace {
    Namespace::new(APP, user)
}

/// An event as `Event.model_dump_json()` writes it (nulls included).
fn ev(id: &str, author: &str, ts: f64, text: Option<&str>) -> String {
    let content = match text {
        Some(t) => json!({"parts": [{"text": t, "thought": null, "function_call": null}], "role": author}),
        None => Value::Null,
    };
    json!({"content": content, "invocation_id": "inv", "author": author, "actions": {"state_delta": {}},
           "id": id, "timestamp": ts, "branch": null})
    .to_string()
}

fn lines(events: &[String]) -> String {
    events.join("\n")
}

fn session1() -> String {
    lines(&[
        ev("event-1a", "user", 12345.0, Some("The ADK is a great toolkit.")),
        ev("event-1b", "user", 12346.0, None),
        ev("event-1c", "model", 12347.0, Some("I agree. The Agent Development Kit (ADK) rocks!")),
    ])
}

fn session2() -> String {
    ev("event-2a", "user", 54321.0, Some("I like to code in Python."))
}

fn search(m: &Mnem, user: &str, q: &str) -> Vec<Value> {
    let out = m.search(&ns(user), q).unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["memories"].as_array().unwrap().clone()
}

fn texts(results: &[Value]) -> Vec<String> {
    results.iter().map(|r| r["content"]["parts"][0]["text"].as_str().unwrap().to_string()).collect()
}

fn ids(m: &Mnem, user: &str, session: &str) -> Option<Vec<String>> {
    m.session_event_ids(&ns(user), session).unwrap()
}

#[test]
fn t01_add_session_to_memory() {
    let m = mem();
    assert_eq!(m.add_session(&ns(USER), "session-1", &session1()).unwrap(), 2);
    assert_eq!(ids(&m, USER, "session-1").unwrap(), ["event-1a", "event-1c"]);
}

#[test]
fn t02_add_events_with_explicit_events() {
    let m = mem();
    let a = ev("event-1a", "user", 12345.0, Some("The ADK is a great toolkit."));
    assert_eq!(m.add_events(&ns(USER), "session-1", &a, "").unwrap(), 1);
    assert_eq!(ids(&m, USER, "session-1").unwrap(), ["event-1a"]);
}

#[test]
fn t03_add_events_without_session_id_uses_default_bucket() {
    let m = mem();
    let a = ev("event-1a", "user", 12345.0, Some("The ADK is a great toolkit."));
    m.add_events(&ns(USER), "", &a, "").unwrap();
    assert_eq!(ids(&m, USER, mnem::adk::UNKNOWN_SESSION_ID).unwrap(), ["event-1a"]);
    assert_eq!(ids(&m, USER, ""), None, "the empty id is not a bucket of its own");
    // One bucket whichever way it is named: ids deduplicate across the spellings, and it
    // keeps the position it got first (before `other`).
    m.add_session(&ns(USER), "other", &ev("o", "user", 1.0, Some("toolkit o"))).unwrap();
    let dup_and_new =
        lines(&[ev("event-1a", "user", 2.0, Some("toolkit dup")), ev("c", "user", 3.0, Some("toolkit c"))]);
    assert_eq!(m.add_events(&ns(USER), "", &dup_and_new, "").unwrap(), 1);
    let d = ev("d", "user", 3.0, Some("toolkit d"));
    assert_eq!(m.add_events(&ns(USER), mnem::adk::UNKNOWN_SESSION_ID, &d, "").unwrap(), 1);
    let order =
        |m: &Mnem| search(m, USER, "toolkit").iter().map(|r| r["id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(order(&m), ["event-1a", "c", "d", "o"]);
    assert_eq!(texts(&search(&m, USER, "dup")), Vec::<String>::new(), "first write wins");
    // A session named like the default bucket replaces it, in place.
    m.add_session(&ns(USER), mnem::adk::UNKNOWN_SESSION_ID, &ev("z", "user", 4.0, Some("toolkit z"))).unwrap();
    assert_eq!(order(&m), ["z", "o"]);
}

#[test]
fn t04_add_events_stores_what_add_session_stores() {
    // ADK's test 4 repeats test 2 under the name of a compatibility alias, which the C ABI
    // does not have. What it guards here: a delta into an empty bucket stores the same events,
    // in the same order and with the same fields, as adding the whole session.
    let (a, b) = (mem(), mem());
    a.add_session(&ns(USER), "session-1", &session1()).unwrap();
    assert_eq!(b.add_events(&ns(USER), "session-1", &session1(), "{}").unwrap(), 2);
    assert_eq!(ids(&a, USER, "session-1"), ids(&b, USER, "session-1"));
    for q in ["ADK", "toolkit", "agent development", "great rocks"] {
        assert_eq!(a.search(&ns(USER), q).unwrap(), b.search(&ns(USER), q).unwrap(), "{q}");
    }
    assert_eq!(search(&b, USER, "ADK").len(), 2);
}

#[test]
fn t05_add_events_appends_without_replacing() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    let d = ev("event-1d", "user", 12348.0, Some("A new fact."));
    assert_eq!(m.add_events(&ns(USER), "session-1", &d, "").unwrap(), 1);
    assert_eq!(ids(&m, USER, "session-1").unwrap(), ["event-1a", "event-1c", "event-1d"]);
}

#[test]
fn t06_add_events_deduplicates_event_ids_first_write_wins() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    let dup = ev("event-1a", "user", 12345.0, Some("Updated duplicate text."));
    assert_eq!(m.add_events(&ns(USER), "session-1", &dup, "").unwrap(), 0);
    assert_eq!(ids(&m, USER, "session-1").unwrap(), ["event-1a", "event-1c"]);
    assert!(search(&m, USER, "Updated").is_empty());
    assert_eq!(texts(&search(&m, USER, "toolkit")), ["The ADK is a great toolkit."]);
    // Within one batch too.
    let batch = lines(&[ev("n1", "user", 1.0, Some("first")), ev("n1", "user", 2.0, Some("second"))]);
    assert_eq!(m.add_events(&ns(USER), "session-9", &batch, "").unwrap(), 1);
    assert!(search(&m, USER, "second").is_empty());
}

#[test]
fn t07_add_session_with_no_events() {
    let m = mem();
    assert_eq!(m.add_session(&ns(USER), "session-4", "").unwrap(), 0);
    assert_eq!(ids(&m, USER, "session-4").unwrap(), Vec::<String>::new());
    // The empty bucket holds its place: events added to it later rank before later sessions'.
    m.add_session(&ns(USER), "session-1", &ev("a", "user", 1.0, Some("tea one"))).unwrap();
    m.add_events(&ns(USER), "session-4", &ev("b", "user", 2.0, Some("tea two")), "").unwrap();
    let order =
        |m: &Mnem| search(m, USER, "tea").iter().map(|r| r["id"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(order(&m), ["b", "a"]);
    // And an empty session empties its bucket.
    assert_eq!(m.add_session(&ns(USER), "session-1", "").unwrap(), 0);
    assert_eq!(order(&m), ["b"]);
}

#[test]
fn t08_search_simple_match() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    m.add_session(&ns(USER), "session-2", &session2()).unwrap();
    let r = search(&m, USER, "Python");
    assert_eq!(texts(&r), ["I like to code in Python."]);
    assert_eq!(r[0]["author"], "user");
    assert_eq!(r[0]["id"], "event-2a");
    assert_eq!(r[0]["custom_metadata"], json!({}));
}

#[test]
fn t09_search_case_insensitive_match() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    assert_eq!(texts(&search(&m, USER, "development")), ["I agree. The Agent Development Kit (ADK) rocks!"]);
}

#[test]
fn t10_search_multiple_matches() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    let mut t = texts(&search(&m, USER, "How about ADK?"));
    t.sort();
    assert_eq!(t, ["I agree. The Agent Development Kit (ADK) rocks!", "The ADK is a great toolkit."]);
}

#[test]
fn t11_search_no_match() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    assert!(search(&m, USER, "nonexistent").is_empty());
}

#[test]
fn t12_search_is_scoped_by_user() {
    let m = mem();
    m.add_session(&ns(USER), "session-1", &session1()).unwrap();
    m.add_session(&ns(OTHER), "session-3", &ev("event-3a", "user", 1.0, Some("This is a secret."))).unwrap();
    assert!(search(&m, USER, "secret").is_empty());
    assert_eq!(texts(&search(&m, OTHER, "secret")), ["This is a secret."]);
}

#[test]
fn t13_search_does_not_collide_on_slash_in_identifiers() {
    let m = mem();
    let e = ev("event-3a", "user", 1.0, Some("This is a secret."));
    m.add_session(&Namespace::new("app/other-user", "user"), "s", &e).unwrap();
    let out = m.search(&Namespace::new("app", "other-user/user"), "secret").unwrap();
    assert_eq!(out, br#"{"memories":[]}"#);
}

fn nfd(s: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    s.nfd().collect()
}

#[test]
fn t14_search_non_latin_22_cases() {
    let cases: Vec<(String, String, usize)> = vec![
        ("私の名前は太郎です".into(), "太郎".into(), 1),
        ("私の名前は太郎です".into(), "天気".into(), 0),
        ("我喜欢机器学习".into(), "机器学习".into(), 1),
        ("我喜欢机器学习".into(), "天气预报".into(), 0),
        ("제 이름은 민수입니다".into(), "민수입니다".into(), 1),
        ("Меня зовут Алексей".into(), "Алексей".into(), 1),
        ("太郎 works at ABC Corp".into(), "太郎".into(), 1),
        ("太郎 works at ABC Corp".into(), "ABC".into(), 1),
        ("私はPythonでADKを使っています".into(), "Python".into(), 1),
        ("私はPythonでADKを使っています".into(), "adk".into(), 1),
        ("我用Python写代码".into(), "python".into(), 1),
        ("私はPythonでADKを使っています".into(), "使って".into(), 1),
        ("私はPythonでADKを使っています".into(), "Java".into(), 0),
        ("I like to code in Python.".into(), "thon".into(), 0),
        ("私はPythonでADKを使っています".into(), "thon".into(), 0),
        (nfd("私はCaféでADKを使っています"), "Café".into(), 1),
        (nfd("私はCaféでADKを使っています"), "café".into(), 1),
        (nfd("私はCaféでADKを使っています"), "Ruby".into(), 0),
        (nfd("Meet at the Café"), "Café".into(), 1),
        ("Meet at the Café".into(), nfd("Café"), 1),
        (nfd("プログラミングを学ぶ"), "プログラミング".into(), 1),
        (nfd("제 이름은 민수입니다"), "민수입니다".into(), 1),
    ];
    assert_eq!(cases.len(), 22);
    for (text, query, expected) in cases {
        let m = mem();
        m.add_session(&ns(USER), "s", &ev("event-i18n", "user", 1.0, Some(&text))).unwrap();
        assert_eq!(search(&m, USER, &query).len(), expected, "{text:?} / {query:?}");
    }
}

#[test]
fn t15_search_ranks_by_number_of_matching_words() {
    let m = mem();
    let s = lines(&[
        ev("ranked-a", "user", 1.0, Some("The deploy is ready.")),
        ev("ranked-b", "user", 2.0, Some("Ready.")),
        ev("ranked-c", "user", 3.0, Some("The deploy status is ready.")),
    ]);
    m.add_session(&ns(USER), "s", &s).unwrap();
    assert_eq!(
        texts(&search(&m, USER, "deploy status ready")),
        ["The deploy status is ready.", "The deploy is ready.", "Ready."]
    );
}

#[test]
fn t16_search_returns_at_most_ten_memories() {
    let m = mem();
    let mut events: Vec<String> =
        (0..20).map(|i| ev(&format!("n{i}"), "user", i as f64, Some(&format!("note {i} about work")))).collect();
    events.push(ev("backlog", "user", 99.0, Some("the backlog note about work")));
    m.add_session(&ns(USER), "s", &lines(&events)).unwrap();
    let mut want = vec!["the backlog note about work".to_string()];
    want.extend((0..9).map(|i| format!("note {i} about work")));
    assert_eq!(texts(&search(&m, USER, "work backlog note")), want);
}

#[test]
fn t17_thread_safe_against_concurrent_writes() {
    let m = mem();
    for i in 0..50 {
        m.add_session(
            &ns(USER),
            &format!("early-{i}"),
            &ev(&format!("e{i}"), "user", 1.0, Some(&format!("fact about early-{i}"))),
        )
        .unwrap();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..500 {
                let e = ev(&format!("w{i}"), "user", 1.0, Some(&format!("fact about writer-{i}")));
                m.add_session(&ns(USER), &format!("writer-{i}"), &e).unwrap();
            }
        });
        for _ in 0..2 {
            s.spawn(|| {
                for _ in 0..500 {
                    let r = search(&m, USER, "fact");
                    assert_eq!(r.len(), 10);
                }
            });
        }
    });
    // Ties keep insertion order: the early sessions came first.
    assert_eq!(search(&m, USER, "fact")[0]["id"], "e0");
}

#[test]
fn t18_ingested_memories_do_not_follow_caller_mutations() {
    // ADK mutates the caller's event after ingesting it. Here the caller's buffer is changed
    // in place and then sent again, as ADK would see the mutated event: a delta to the same
    // session changes nothing (first write wins); elsewhere it is a new memory; re-adding the
    // session replaces the bucket.
    for via_session in [true, false] {
        let m = mem();
        let mut line = ev("jasmine", "user", 1.0, Some("I prefer jasmine tea."));
        if via_session {
            m.add_session(&ns(USER), "tea", &line).unwrap();
        } else {
            m.add_events(&ns(USER), "tea", &line, "").unwrap();
        }
        let at = line.find("jasmine tea").unwrap();
        line.replace_range(at..at + 7, "oolong");
        let at = line.find(r#""author":"user""#).unwrap();
        line.replace_range(at..at + 15, r#""author":"mutated""#);
        let original = |m: &Mnem| {
            let r = search(m, USER, "jasmine");
            assert_eq!(texts(&r), ["I prefer jasmine tea."], "via_session {via_session}");
            assert_eq!(r[0]["author"], "user");
        };
        original(&m);
        assert_eq!(m.add_events(&ns(USER), "tea", &line, "").unwrap(), 0);
        original(&m);
        assert!(search(&m, USER, "oolong").is_empty());
        assert_eq!(m.add_events(&ns(USER), "", &line, "").unwrap(), 1);
        original(&m);
        let r = search(&m, USER, "oolong");
        assert_eq!((texts(&r), &r[0]["author"]), (vec!["I prefer oolong tea.".to_string()], &json!("mutated")));
        m.add_session(&ns(USER), "tea", &line).unwrap();
        assert!(search(&m, USER, "jasmine").is_empty());
        assert_eq!(search(&m, USER, "oolong").len(), 2);
    }
}

#[test]
fn t19_retrieved_memories_do_not_mutate_storage() {
    // ADK clears the parts of a returned memory and searches again. Here the returned memory,
    // changed, goes back in as an event of the same session: emptied (no parts: ignored, as
    // ADK ignores it) or edited (a known id: first write wins). Storage keeps the original.
    for via_session in [true, false] {
        let m = mem();
        let line = ev("jasmine", "user", 1.0, Some("I prefer jasmine tea."));
        if via_session {
            m.add_session(&ns(USER), "tea", &line).unwrap();
        } else {
            m.add_events(&ns(USER), "tea", &line, "").unwrap();
        }
        let returned = |m: &Mnem| search(m, USER, "jasmine").remove(0);
        let as_event = |mem: &Value, author: &str| {
            json!({"id": mem["id"], "author": author, "timestamp": 1.0, "content": mem["content"]}).to_string()
        };
        let mut emptied = returned(&m);
        emptied["content"]["parts"] = json!([]);
        assert_eq!(m.add_events(&ns(USER), "tea", &as_event(&emptied, "user"), "").unwrap(), 0);
        let mut edited = returned(&m);
        edited["content"]["parts"][0]["text"] = json!("I prefer oolong tea.");
        assert_eq!(m.add_events(&ns(USER), "tea", &as_event(&edited, "model"), "").unwrap(), 0);
        let r = search(&m, USER, "jasmine");
        assert_eq!(texts(&r), ["I prefer jasmine tea."], "via_session {via_session}");
        assert_eq!(r[0]["author"], "user");
        assert!(search(&m, USER, "oolong").is_empty());
        assert_eq!(ids(&m, USER, "tea").unwrap(), ["jasmine"]);
    }
}

#[test]
fn custom_metadata_ttl_expires_events() {
    let m = mem();
    m.add_events(&ns(USER), "s", &ev("t", "user", 1.0, Some("ephemeral tea")), r#"{"ttl_ms":1,"ignored":true}"#)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(search(&m, USER, "tea").is_empty());
    // Expired events no longer block their id.
    assert_eq!(m.add_events(&ns(USER), "s", &ev("t", "user", 1.0, Some("lasting tea")), "").unwrap(), 1);
    assert_eq!(texts(&search(&m, USER, "tea")), ["lasting tea"]);
}

#[test]
fn searches_and_episode_writes_on_one_namespace_do_not_deadlock() {
    // Regression: a search held the index map while waiting for a namespace index that a
    // `put_episodes` held while waiting for the map.
    let m = std::sync::Arc::new(mem());
    m.add_session(&ns(USER), "s", &ev("e", "user", 1.0, Some("tea"))).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for w in 0..3 {
        let (m, tx) = (m.clone(), tx.clone());
        std::thread::spawn(move || {
            for i in 0..300 {
                if w == 0 {
                    let e = mnem::EpisodeInput { primary: format!("tea {i}"), ..Default::default() };
                    let id = m.put_episodes(&ns(USER), vec![e]).unwrap()[0];
                    m.delete_episodes(&ns(USER), &[id]).unwrap();
                } else {
                    assert_eq!(search(&m, USER, "tea").len(), 1);
                }
            }
            tx.send(()).unwrap();
        });
    }
    for _ in 0..3 {
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("a thread is stuck: deadlock");
    }
}
