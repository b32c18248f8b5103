//! Store management through the Rust API: forgetting a namespace (its bytes gone from the
//! files) and deleting one ADK session (search as if it had never been added).

use mnem::{EpisodeInput, KeywordQuery, Mnem, Namespace, OpenOptions};
use serde_json::json;

fn kq(text: &str, limit: usize) -> KeywordQuery {
    let mut q = KeywordQuery::new(text);
    q.limit = limit;
    q
}

fn tempdir(tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mnem-admin-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.to_string_lossy().into_owned()
}

fn open(path: &str) -> Mnem {
    Mnem::open(path, OpenOptions { create: true, ..Default::default() }).unwrap()
}

fn ev(id: &str, ts: f64, text: &str) -> String {
    json!({"id": id, "author": "user", "timestamp": ts, "content": {"parts": [{"text": text}], "role": "user"}})
        .to_string()
}

/// Does any file under `dir` contain `needle`?
fn files_contain(dir: &str, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_file() && std::fs::read(&p).unwrap().windows(needle.len()).any(|w| w == needle) {
            hits.push(p.display().to_string());
        }
    }
    hits
}

fn fill(m: &Mnem, ns: &Namespace, word: &str) {
    let events: Vec<String> =
        (0..50).map(|i| ev(&format!("{word}-{i}"), 1000.0 + i as f64, &format!("{word} note {i}"))).collect();
    m.add_session(ns, "s1", &events.join("\n")).unwrap();
    let inputs = (0..50)
        .map(|i| EpisodeInput {
            primary: format!("{word} episode {i}"),
            embedding: Some(vec![1.0, i as f32, 0.5]),
            ..Default::default()
        })
        .collect();
    m.put_episodes(ns, inputs).unwrap();
}

#[test]
fn forget_removes_every_key_and_the_bytes_from_the_files() {
    let dir = tempdir("forget");
    let (gone, kept) = (Namespace::new("app", "gone"), Namespace::new("app", "kept"));
    {
        let m = open(&dir);
        fill(&m, &gone, "zyxforgotten");
        fill(&m, &kept, "qwvremembered");
        m.flush().unwrap();
    }
    // Table files (not only the log) hold both namespaces before the forget.
    {
        let m = open(&dir);
        assert!(!files_contain(&dir, b"zyxforgotten").is_empty());
        let q = kq("zyxforgotten", 100);
        assert_eq!(m.keyword_search(&gone, &q).unwrap().len(), 100);
        let f = m.forget_namespace(&gone).unwrap();
        assert_eq!(f.episodes, 100);
        assert!(m.keyword_search(&gone, &q).unwrap().is_empty());
        assert_eq!(m.search(&gone, "zyxforgotten").unwrap(), br#"{"memories":[]}"#);
        assert_eq!(m.session_event_ids(&gone, "s1").unwrap(), None);
        let q2 = kq("qwvremembered", 100);
        assert_eq!(m.keyword_search(&kept, &q2).unwrap().len(), 100);
        // Forgetting again is a no-op; the namespace can be written anew, with a new dimension.
        assert_eq!(m.forget_namespace(&gone).unwrap().episodes, 0);
        let again = EpisodeInput { primary: "fresh".into(), embedding: Some(vec![1.0, 2.0]), ..Default::default() };
        m.put_episodes(&gone, vec![again]).unwrap();
        assert_eq!(m.keyword_search(&gone, &kq("fresh", 10)).unwrap().len(), 1);
    }
    assert_eq!(files_contain(&dir, b"zyxforgotten"), Vec::<String>::new());
    assert!(!files_contain(&dir, b"qwvremembered").is_empty(), "the control namespace's text is still stored");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn forget_on_a_read_only_handle_is_refused() {
    let dir = tempdir("forget-ro");
    let ns = Namespace::new("a", "u");
    fill(&open(&dir), &ns, "word");
    let m = Mnem::open(&dir, OpenOptions { read_only: true, ..Default::default() }).unwrap();
    assert_eq!(m.forget_namespace(&ns).unwrap_err().status, mnem::Status::ReadOnly);
    assert_eq!(m.delete_session(&ns, "s1").unwrap_err().status, mnem::Status::ReadOnly);
    drop(m);
    let _ = std::fs::remove_dir_all(&dir);
}

fn session(tag: &str, n: usize, words: &[&str]) -> String {
    (0..n)
        .map(|i| {
            ev(
                &format!("{tag}-{i}"),
                100.0 * i as f64,
                &format!("{} {} {tag}", words[i % words.len()], words[(i + 1) % words.len()]),
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_deleted_session_ranks_as_if_never_added() {
    let words = ["alpha", "beta", "gamma", "delta", "shared"];
    let ns = Namespace::new("app", "user");
    let (a, b) = (open(":memory:"), open(":memory:"));
    let s1 = session("one", 8, &words);
    let s2 = session("two", 9, &words[1..]);
    let s3 = session("three", 7, &words[2..]);
    a.add_session(&ns, "s1", &s1).unwrap();
    a.add_session(&ns, "s2", &s2).unwrap();
    a.add_events(&ns, "s2", &ev("extra", 5.0, "alpha shared extra"), "").unwrap();
    a.add_session(&ns, "s3", &s3).unwrap();
    b.add_session(&ns, "s1", &s1).unwrap();
    b.add_session(&ns, "s3", &s3).unwrap();
    assert_eq!(a.delete_session(&ns, "s2").unwrap(), 10);
    assert_eq!(a.delete_session(&ns, "s2").unwrap(), 0);
    assert_eq!(a.delete_session(&ns, "never").unwrap(), 0);
    assert_eq!(a.session_event_ids(&ns, "s2").unwrap(), None);
    let queries =
        ["alpha", "beta", "gamma delta", "shared", "two", "extra", "alpha beta gamma delta shared", "one three"];
    for q in queries {
        assert_eq!(a.search(&ns, q).unwrap(), b.search(&ns, q).unwrap(), "query {q:?}");
    }
    // Added again, the session goes after every existing bucket, as in a store that adds it now.
    a.add_session(&ns, "s2", &s2).unwrap();
    b.add_session(&ns, "s2", &s2).unwrap();
    for q in queries {
        assert_eq!(a.search(&ns, q).unwrap(), b.search(&ns, q).unwrap(), "query {q:?} after re-adding");
    }
    let q2 = kq("two", 100);
    assert_eq!(a.keyword_search(&ns, &q2).unwrap().len(), b.keyword_search(&ns, &q2).unwrap().len());
}
