//! What the corpus cannot say of writes: a new revision keeps the first one's `created_at_ms`
//! (the corpus matches times as any integer), and an episode or event over 64 MiB stored is
//! refused. Opening, locking, formats, read-only handles, revisions, tombstones and expiry
//! are the conformance corpus's (open_*, persistence, memory_stores_independent, episodes_*);
//! a newer on-disk format is tests/c/test_mnem.c's fixture.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions, Status};

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

fn note(text: &str) -> EpisodeInput {
    EpisodeInput { primary: text.into(), ..Default::default() }
}

#[test]
fn a_revision_keeps_the_creation_time() {
    let (m, ns) = (mem(), Namespace::new("a", "u"));
    let id = m.put_episodes(&ns, vec![note("v1")]).unwrap()[0];
    let first = m.get_episode(&ns, &id).unwrap().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    m.put_episodes(&ns, vec![EpisodeInput { id: Some(id), ..note("v2") }]).unwrap();
    let cur = m.get_episode(&ns, &id).unwrap().unwrap();
    assert_eq!((cur.revision, cur.created_at_ms), (2, first.created_at_ms));
    assert!(cur.updated_at_ms > first.updated_at_ms);
}

#[test]
fn records_larger_than_the_largest_page_budget_are_rejected() {
    let (m, ns) = (mem(), Namespace::new("a", "u"));
    let big = "x".repeat(64 << 20);
    let e = m.put_episodes(&ns, vec![note("ok"), note(&big)]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("bytes stored"), "{}", e.message);
    let line = format!(r#"{{"id":"big","content":{{"parts":[{{"text":"{big}"}}]}}}}"#);
    let e = m.add_session(&ns, "s", &line).unwrap_err();
    assert!(e.message.contains("\"big\""), "{}", e.message);
    assert!(m.keyword_search(&ns, &mnem::KeywordQuery::new("ok")).unwrap().is_empty(), "nothing was written");
    assert_eq!(m.session_event_ids(&ns, "s").unwrap(), None);
}
