//! Opening, locking, format versions, read-only handles and persistence.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions, Status};

fn tempdir(tag: &str) -> String {
    std::env::temp_dir().join(format!("mnem-{tag}-{}", uuid::Uuid::now_v7())).to_string_lossy().into_owned()
}

const CREATE: OpenOptions =
    OpenOptions { create: true, read_only: false, sync_writes: false, cache_bytes: mnem::store::DEFAULT_CACHE_BYTES };
const READ_ONLY: OpenOptions =
    OpenOptions { create: false, read_only: true, sync_writes: false, cache_bytes: mnem::store::DEFAULT_CACHE_BYTES };

fn note(text: &str) -> EpisodeInput {
    EpisodeInput { primary: text.into(), ..Default::default() }
}

#[test]
fn missing_store_without_create_is_not_found() {
    let dir = tempdir("missing");
    let e = Mnem::open(&dir, OpenOptions::default()).err().unwrap();
    assert_eq!(e.status, Status::NotFound);
    assert!(!std::path::Path::new(&dir).exists(), "nothing was created");
    assert_eq!(Mnem::open(&dir, READ_ONLY).err().unwrap().status, Status::NotFound);
}

#[test]
fn second_open_is_busy_until_the_first_closes() {
    let dir = tempdir("busy");
    let first = Mnem::open(&dir, CREATE).unwrap();
    let e = Mnem::open(&dir, CREATE).err().unwrap();
    assert_eq!(e.status, Status::Busy, "{e}");
    assert_eq!(Mnem::open(&dir, READ_ONLY).err().unwrap().status, Status::Busy);
    drop(first);
    Mnem::open(&dir, OpenOptions::default()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writes_persist_and_read_only_refuses_writes() {
    let dir = tempdir("persist");
    let ns = Namespace::new("app", "user");
    let id = {
        let m = Mnem::open(&dir, OpenOptions { sync_writes: true, ..CREATE }).unwrap();
        let ids = m.put_episodes(&ns, vec![note("remember the milk")]).unwrap();
        m.flush().unwrap();
        ids[0]
    };
    let m = Mnem::open(&dir, READ_ONLY).unwrap();
    assert_eq!(m.get_episode(&ns, &id).unwrap().unwrap().primary, "remember the milk");
    let e = m.put_episodes(&ns, vec![note("x")]).unwrap_err();
    assert_eq!(e.status, Status::ReadOnly);
    assert_eq!(m.delete_episodes(&ns, &[id]).unwrap_err().status, Status::ReadOnly);
    assert_eq!(m.add_session(&ns, "s", "").unwrap_err().status, Status::ReadOnly);
    assert_eq!(m.add_events(&ns, "s", "", "").unwrap_err().status, Status::ReadOnly);
    assert_eq!(m.delete_memory(&ns, "x").unwrap_err().status, Status::ReadOnly);
    assert_eq!(m.search(&ns, "milk").unwrap(), br#"{"memories":[]}"#);
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn newer_format_is_incompatible() {
    let dir = tempdir("format");
    {
        let m = Mnem::open(&dir, CREATE).unwrap();
        m.store().set_format_version_for_test(mnem::FORMAT_VERSION + 1).unwrap();
    }
    let e = Mnem::open(&dir, OpenOptions::default()).err().unwrap();
    assert_eq!(e.status, Status::Incompatible, "{e}");
    assert_eq!(Mnem::open(&dir, READ_ONLY).err().unwrap().status, Status::Incompatible);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn create_with_read_only_is_rejected() {
    let e = Mnem::open(
        &tempdir("flags"),
        OpenOptions {
            create: true,
            read_only: true,
            sync_writes: false,
            cache_bytes: mnem::store::DEFAULT_CACHE_BYTES,
        },
    )
    .err()
    .unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
}

#[test]
fn memory_stores_are_separate_and_behave_alike() {
    let a = Mnem::open(":memory:", CREATE).unwrap();
    let b = Mnem::open(":memory:", CREATE).unwrap();
    let ns = Namespace::new("", "");
    let id = a.put_episodes(&ns, vec![note("only in a")]).unwrap()[0];
    a.flush().unwrap();
    assert!(a.get_episode(&ns, &id).unwrap().is_some());
    assert!(b.get_episode(&ns, &id).unwrap().is_none());
}

#[test]
fn revisions_tombstones_and_expiry() {
    let m = Mnem::open(":memory:", CREATE).unwrap();
    let ns = Namespace::new("a", "u");
    let id = m.put_episodes(&ns, vec![note("v1")]).unwrap()[0];
    let first = m.get_episode(&ns, &id).unwrap().unwrap();
    assert_eq!((first.revision, first.id.get_version_num()), (1, 7));
    let upd = EpisodeInput { id: Some(id), ..note("v2") };
    m.put_episodes(&ns, vec![upd.clone(), EpisodeInput { primary: "v3".into(), ..upd.clone() }]).unwrap();
    let cur = m.get_episode(&ns, &id).unwrap().unwrap();
    assert_eq!((cur.revision, cur.primary.as_str(), cur.created_at_ms), (3, "v3", first.created_at_ms));
    assert_eq!(m.delete_episodes(&ns, &[id, id]).unwrap(), 1);
    assert_eq!(m.delete_episodes(&ns, &[id]).unwrap(), 0);
    assert!(m.get_episode(&ns, &id).unwrap().is_none());
    let e = m.put_episodes(&ns, vec![upd]).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("line 1") && e.message.contains("deleted"), "{}", e.message);
    let past = EpisodeInput { expiry: mnem::Expiry::At(1), ..note("expired") };
    let gone = m.put_episodes(&ns, vec![past]).unwrap()[0];
    assert!(m.get_episode(&ns, &gone).unwrap().is_none());
}

#[test]
fn a_bad_line_rejects_the_whole_batch() {
    let m = Mnem::open(":memory:", CREATE).unwrap();
    let ns = Namespace::new("a", "u");
    let jsonl = "{\"primary\":\"ok\"}\n{\"primary\":\"ok\",\"colour\":1}\n";
    let e = mnem::input::parse_episode_lines(jsonl).unwrap_err();
    assert!(e.message.contains("line 2") && e.message.contains("colour"), "{}", e.message);
    let dim2 = EpisodeInput { embedding: Some(vec![1.0, 0.0]), ..note("a") };
    let dim3 = EpisodeInput { embedding: Some(vec![1.0, 0.0, 0.0]), ..note("b") };
    let e = m.put_episodes(&ns, vec![dim2, dim3]).unwrap_err();
    assert!(e.message.contains("line 2"), "{}", e.message);
    assert!(m.keyword_search(&ns, &mnem::KeywordQuery::new("a b")).unwrap().is_empty());
}

#[test]
fn records_larger_than_the_largest_page_budget_are_rejected() {
    let m = Mnem::open(":memory:", CREATE).unwrap();
    let ns = Namespace::new("a", "u");
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

#[test]
fn a_memory_store_cannot_be_opened_read_only() {
    let e = Mnem::open(":memory:", READ_ONLY).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains(":memory:"), "{}", e.message);
}
