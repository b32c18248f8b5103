//! Store management through the Rust API: forgetting a namespace (its bytes gone from the
//! files) and deleting one ADK session (search as if it had never been added).

use mnem::{EpisodeInput, KeywordQuery, Mnem, Namespace, OpenOptions};
use serde_json::json;
mod common;
use common::{backends, open_new};

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
fn compact_erases_what_deletes_left_in_the_files() {
    let dir = tempdir("compact");
    let ns = Namespace::new("app", "u");
    {
        let m = open(&dir);
        let events = |word: &str| {
            (0..30).map(|i| ev(&format!("{word}-{i}"), i as f64, &format!("{word} said {i}"))).collect::<Vec<_>>()
        };
        m.add_session(&ns, "gone", &events("zyxdeleted").join("\n")).unwrap();
        m.add_session(&ns, "kept", &events("qwvkept").join("\n")).unwrap();
        m.flush().unwrap();
    }
    let m = open(&dir);
    // The word alone: LZ4 may store a phrase as a literal and a back-reference (to an event
    // id, say), but a word's first occurrence in a block is a literal.
    assert!(!files_contain(&dir, b"zyxdeleted").is_empty());
    assert_eq!(m.delete_session(&ns, "gone").unwrap(), 30);
    // A delete hides the text at once; older table files keep its bytes until a compaction.
    assert!(!files_contain(&dir, b"zyxdeleted").is_empty());
    m.compact().unwrap();
    assert_eq!(files_contain(&dir, b"zyxdeleted said"), Vec::<String>::new());
    // One word, not a phrase: LZ4 may split a phrase into a literal and a back-reference.
    assert!(!files_contain(&dir, b"qwvkept").is_empty(), "the kept session's text is still stored");
    let found: serde_json::Value = serde_json::from_slice(&m.search(&ns, "qwvkept").unwrap()).unwrap();
    assert_eq!(found["memories"].as_array().unwrap().len(), 10);
    drop(m);
    let m = Mnem::open(&dir, OpenOptions { read_only: true, ..Default::default() }).unwrap();
    assert_eq!(m.compact().unwrap_err().status, mnem::Status::ReadOnly);
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
    for backend in backends() {
        eprintln!("backend: {backend}");
        let mut held = Vec::new();
        let words = ["alpha", "beta", "gamma", "delta", "shared"];
        let ns = Namespace::new("app", "user");
        let (a, b) = (
            open_new(&mut held, backend, "a_deleted_session_ranks_"),
            open_new(&mut held, backend, "a_deleted_session_ranks_"),
        );
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
}

fn export(m: &Mnem, only: Option<&Namespace>) -> String {
    let mut out = Vec::new();
    m.export(only, &mut out, &mut |_, _| {}).unwrap();
    String::from_utf8(out).unwrap()
}

/// Two namespaces with every kind of state: ADK sessions (one re-added shorter), events with
/// tags and expiry, a `delete_memory` tombstone, episodes with vectors, metadata and revisions,
/// deleted episodes (and their vectors), ADK memories.
fn varied(m: &Mnem) -> Vec<Namespace> {
    let nss = vec![Namespace::new("app", "u1"), Namespace::new("app/x", "u:2\0")];
    for (k, ns) in nss.iter().enumerate() {
        let words = ["river", "stone", "cloud", "ember", "maple", "ångström", "naïve"];
        m.add_session(ns, "s1", &session("a", 12, &words)).unwrap();
        m.add_session(ns, "s2", &session("b", 9, &words[2..])).unwrap();
        m.add_session(ns, "s1", &session("a", 10, &words)).unwrap();
        let meta = r#"{"ttl_ms": 86400000, "tags": ["t1"]}"#;
        m.add_events(ns, "", &session("c", 5, &words[1..]), meta).unwrap();
        m.delete_memory(ns, "b-3").unwrap();
        let inputs: Vec<EpisodeInput> = (0..40)
            .map(|i| EpisodeInput {
                primary: format!("{} {} item {i}", words[i % 7], words[(i * 3) % 7]),
                secondary: "second".into(),
                tags: vec![format!("tag{}", i % 3)],
                metadata: Some(format!(r#"{{"n": {i}, "x": [1.50, "é"]}}"#)),
                embedding: Some(vec![(i as f32 * 0.37).sin(), (i as f32).cos(), 0.1 + k as f32]),
                timestamp: Some(1700000000.123456 + i as f64),
                ..Default::default()
            })
            .collect();
        let ids = m.put_episodes(ns, inputs).unwrap();
        m.delete_episodes(ns, &ids[..5]).unwrap();
        let update = EpisodeInput {
            id: Some(ids[7]),
            primary: "river updated".into(),
            embedding: Some(vec![0.5, 0.5, 0.5]),
            ..Default::default()
        };
        m.put_episodes(ns, vec![update]).unwrap();
        let memory = EpisodeInput {
            episode_type: "memory".into(),
            event_id: Some("mem-1".into()),
            content: Some(r#"{"parts":[{"text":"river memory"}]}"#.into()),
            primary: "river memory".into(),
            ..Default::default()
        };
        m.put_episodes(ns, vec![memory]).unwrap();
    }
    nss
}

fn answers(m: &Mnem, ns: &Namespace) -> Vec<String> {
    let mut out = Vec::new();
    for q in ["river", "stone cloud", "ember", "ångström", "naïve maple", "item", "memory", "second"] {
        out.push(String::from_utf8(m.search(ns, q).unwrap()).unwrap());
        let mut buf = Vec::new();
        mnem::output::write_results(&mut buf, &m.keyword_search(ns, &kq(q, 50)).unwrap());
        out.push(String::from_utf8(buf).unwrap());
        let mut hq = mnem::HybridQuery::new(q);
        hq.vector = Some(vec![0.3, 0.9, 0.2]);
        hq.limit = 20;
        let mut buf = Vec::new();
        mnem::output::write_hybrid_results(&mut buf, &m.hybrid_search(ns, &hq).unwrap());
        out.push(String::from_utf8(buf).unwrap());
        let mut buf = Vec::new();
        mnem::output::write_page(&mut buf, &m.search_memory_lexical(ns, &mnem::LexicalQuery::new(q)).unwrap());
        out.push(String::from_utf8(buf).unwrap());
    }
    out.push(format!("{:?}", m.session_event_ids(ns, "s1").unwrap()));
    out.push(format!("{:?}", m.session_event_ids(ns, "__unknown_session_id__").unwrap()));
    out
}

#[test]
fn export_then_import_reproduces_records_order_and_every_answer() {
    for backend in backends() {
        eprintln!("backend: {backend}");
        let mut held = Vec::new();
        let src = open_new(&mut held, backend, "export_then_import_repro");
        let nss = varied(&src);
        let text = export(&src, None);
        assert!(text.starts_with(r#"{"type":"header","mnem_export":1,"#), "{}", &text[..80]);
        let dst = open_new(&mut held, backend, "export_then_import_repro");
        let t = dst.import(&text, &mut |_, _| {}).unwrap();
        assert_eq!(t.namespaces, 2);
        assert_eq!(export(&dst, None), text, "the imported store exports the same bytes");
        for ns in &nss {
            assert!(answers(&src, ns) == answers(&dst, ns), "{ns:?}: answers differ after the round trip");
            let (a, b) = (src.namespace_stats(ns).unwrap(), dst.namespace_stats(ns).unwrap());
            assert_eq!(
                (a.records, a.live, a.deleted, a.buckets, a.bucket_events, a.memory_tombstones),
                (b.records, b.live, b.deleted, b.buckets, b.bucket_events, b.memory_tombstones)
            );
            assert_eq!((a.bm25_index, a.adk_index, a.adk), (b.bm25_index, b.adk_index, b.adk));
            // The same writes continue the same way after the round trip.
            for m in [&src, &dst] {
                m.add_session(ns, "s3", &session("d", 4, &["river", "zeta"])).unwrap();
                m.add_events(ns, "s1", &ev("late", 9.0, "river late"), "").unwrap();
            }
            // New writes mint new UUIDs, so compare what does not show them: ADK answers and buckets.
            for q in ["river", "zeta", "late", "stone"] {
                assert!(src.search(ns, q).unwrap() == dst.search(ns, q).unwrap(), "{ns:?} {q:?} after more writes");
            }
            assert_eq!(src.session_event_ids(ns, "s1").unwrap(), dst.session_event_ids(ns, "s1").unwrap());
        }
        // One namespace alone.
        let one = open_new(&mut held, backend, "export_then_import_repro");
        one.import(&export(&src, Some(&nss[1])), &mut |_, _| {}).unwrap();
        assert!(answers(&one, &nss[1]) == answers(&src, &nss[1]), "one namespace's answers differ");
        assert_eq!(one.list_namespaces(None, 10).unwrap().namespaces.len(), 1);
    }
}

#[test]
fn a_bad_import_names_its_line_and_writes_nothing() {
    for backend in backends() {
        eprintln!("backend: {backend}");
        let mut held = Vec::new();
        let src = open_new(&mut held, backend, "a_bad_import_names_its_l");
        let nss = varied(&src);
        let text = export(&src, None);
        let lines: Vec<&str> = text.lines().collect();
        let dst = open_new(&mut held, backend, "a_bad_import_names_its_l");
        let before = export(&dst, None);
        let damaged = |at: usize, with: &str| {
            let mut l = lines.clone();
            l[at] = with;
            l.join("\n")
        };
        let cases = [
            (damaged(5, "{\"type\":\"episode\""), "line 6"),
            (damaged(3, r#"{"type":"bucket","session_id":"s9","position":99,"next_seq":1}"#), "line 4"),
            (damaged(0, r#"{"type":"header","mnem_export":2}"#), "line 1"),
            (damaged(7, r#"{"type":"wat"}"#), "line 8"),
            (lines[..lines.len() - 1].join("\n"), "truncated"),
            (
                damaged(lines.len() - 1, r#"{"type":"end","namespaces":2,"episodes":1}"#),
                &format!("line {}", lines.len()),
            ),
        ];
        for (input, want) in &cases {
            let e = dst.import(input, &mut |_, _| {}).unwrap_err();
            assert_eq!(e.status, mnem::Status::InvalidArgument, "{want}: {}", e.message);
            assert!(e.message.contains(want), "want {want:?} in {:?}", e.message);
            assert_eq!(export(&dst, None), before, "nothing written ({want})");
        }
        // A namespace that already holds data is refused before anything is written.
        dst.put_episodes(&nss[1], vec![EpisodeInput { primary: "mine".into(), ..Default::default() }]).unwrap();
        let before = export(&dst, None);
        let e = dst.import(&text, &mut |_, _| {}).unwrap_err();
        assert!(e.message.contains("already holds data"), "{}", e.message);
        assert_eq!(export(&dst, None), before);
    }
}

#[test]
fn namespaces_page_in_key_order_and_stats_count() {
    for backend in backends() {
        eprintln!("backend: {backend}");
        let mut held = Vec::new();
        let m = open_new(&mut held, backend, "namespaces_page_in_key_o");
        let nss = varied(&m);
        m.add_session(&Namespace::new("b", "only-a-bucket"), "s", "").unwrap();
        let mut all = Vec::new();
        let mut after = None;
        loop {
            let p = m.list_namespaces(after.as_ref(), 1).unwrap();
            assert!(p.namespaces.len() <= 1);
            all.extend(p.namespaces);
            match p.next_after {
                Some(a) => after = Some(a),
                None => break,
            }
        }
        let names: Vec<Namespace> = all.iter().map(|n| n.namespace.clone()).collect();
        assert_eq!(names, vec![Namespace::new("b", "only-a-bucket"), nss[0].clone(), nss[1].clone()]);
        // 40 episodes - 5 deleted + 1 memory + 10 + 9 - 1 (delete_memory) + 5 events.
        assert_eq!(all[1].episodes, 59);
        let s = m.namespace_stats(&nss[0]).unwrap();
        assert_eq!((s.live, s.buckets, s.bucket_events, s.memory_tombstones, s.dimension), (59, 3, 23, 1, Some(3)));
        // 5 deleted episodes, 2 events dropped by the shorter re-add, 1 removed by delete_memory.
        assert_eq!(s.deleted, 5 + 2 + 1);
        assert!(s.bm25_index.keys > 0 && s.adk_index.keys > 0 && s.vector_index.keys > 0);
        assert!(m.list_namespaces(None, 0).is_err() && m.list_namespaces(None, 1001).is_err());
    }
}

#[test]
fn export_pages_concatenate_to_the_export() {
    for backend in backends() {
        eprintln!("backend: {backend}");
        let mut held = Vec::new();
        let m = open_new(&mut held, backend, "export_pages_concatenate");
        let nss = varied(&m);
        for only in [None, Some(&nss[1])] {
            let whole = export(&m, only);
            for max in [1u64, 700, 5000, u64::MAX] {
                let (mut all, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
                loop {
                    let next = m.export_page(only, cursor.as_deref(), max, &mut all).unwrap();
                    pages += 1;
                    match next {
                        Some(c) => cursor = Some(c),
                        None => break,
                    }
                }
                assert!(String::from_utf8(all).unwrap() == whole, "pages of {max} bytes");
                if max == 1 {
                    // A namespace's own lines (namespace, buckets, tombstones) come as one unit.
                    let lines = whole.lines().count();
                    assert!(pages <= lines && pages + 10 > lines, "{pages} pages of {lines} lines");
                }
            }
        }
        let mut sink = Vec::new();
        for bad in ["", "zz", "01", "0200000000000000000000000000000000000000000000"] {
            let e = m.export_page(None, Some(bad), 10, &mut sink).unwrap_err();
            assert!(e.message.contains("cursor"), "{bad:?}: {}", e.message);
        }
        // An order line naming an episode its namespace does not hold is refused by line.
        let text = export(&m, Some(&nss[0]));
        let at = text.lines().position(|l| l.starts_with(r#"{"type":"order""#)).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let v: serde_json::Value = serde_json::from_str(&lines[at]).unwrap();
        lines[at] = json!({"type": "order", "position": v["position"], "seq": v["seq"], "id": "01900000-0000-7000-8000-000000000000"}).to_string();
        let e = open_new(&mut held, backend, "export_pages_concatenate")
            .import(&lines.join("\n"), &mut |_, _| {})
            .unwrap_err();
        assert!(e.message.contains(&format!("line {}", at + 1)), "{}", e.message);
    }
}

/// A writer holds its latest postings in memory and in its journal (written to the index in
/// large sorted runs): a view opened meanwhile reads the journal into an overlay, so every
/// search kind answers as the writer does, deleted and re-written episodes included.
#[test]
fn a_view_beside_a_writer_sees_the_postings_it_holds() {
    let path = tempdir("view-journal");
    let writer = open(&path);
    let nss = varied(&writer);
    let view = Mnem::open_view(&path, OpenOptions::default()).unwrap();
    assert!(view.stats().journal_replayed > 0, "the writer held postings when the view opened");
    for ns in &nss {
        assert_eq!(answers(&view, ns), answers(&writer, ns), "{ns:?}");
    }
    drop(view);
    drop(writer);
    let reopened = open(&path);
    assert_eq!(reopened.stats().journal_replayed, 0, "a clean close leaves no journal");
    drop(reopened);
    std::fs::remove_dir_all(&path).unwrap();
}

/// A damaged journal entry of held postings is CORRUPTION: `check` reports it, and an open,
/// which would write it to the index, refuses to.
#[test]
fn a_damaged_journal_entry_is_corruption() {
    let path = tempdir("journal-damage");
    let m = open(&path);
    m.add_session(&Namespace::new("app", "u"), "s1", &ev("e1", 1.0, "heron")).unwrap();
    assert!(m.check(&mut |_| {}).problem.is_none());
    let key = [b"journal/".as_slice(), &1_000_000u64.to_be_bytes()].concat();
    m.store().put_raw_for_test("meta", &key, &[9, 0, 0, 0, b'k']).unwrap();
    let problem = m.check(&mut |_| {}).problem.expect("the damaged entry is found");
    assert_eq!(problem.status, mnem::Status::Corruption);
    assert!(problem.message.contains("journal entry"), "{}", problem.message);
    drop(m);
    let e = Mnem::open(&path, OpenOptions::default()).err().expect("the open refuses the damaged journal");
    assert_eq!(e.status, mnem::Status::Corruption, "{}", e.message);
    std::fs::remove_dir_all(&path).unwrap();
}
