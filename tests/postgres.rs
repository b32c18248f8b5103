//! The PostgreSQL backend against the RocksDB one and against itself from many processes.
//! Needs a server: `MNEM_TEST_PG_URI` (scripts/test starts one with scripts/pg-server);
//! without it every test says it skipped. Each test works in schemas of its own.

use mnem::{EpisodeInput, HybridQuery, KeywordQuery, Mnem, Namespace, OpenOptions, Status};
use std::process::Command;
use uuid::Uuid;
mod common;
use common::{pg_server, place, with_schema, Rng};

fn create() -> OpenOptions {
    OpenOptions { create: true, ..Default::default() }
}

const WORDS: [&str; 16] = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "东京",
    "café",
    "naïve",
    "ünïcode",
    "kilo",
    "lima",
    "mike",
    "zulu",
];

fn text(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| r.pick(&WORDS)).collect::<Vec<_>>().join(" ")
}

fn vector(r: &mut Rng) -> Vec<f32> {
    (0..8).map(|_| r.normal() as f32).collect()
}

/// The same writes, in the same order, to `m`: ADK sessions and events, episodes with
/// vectors, deletes of both kinds.
fn write_all(m: &Mnem, seed: u64) -> Vec<Uuid> {
    let ns = Namespace::new("app", "user");
    let mut r = Rng(seed);
    for s in 0..6 {
        let events: Vec<String> = (0..40)
            .map(|i| {
                serde_json::json!({"id": format!("e{s}-{i}"), "author": if i % 2 == 0 {"user"} else {"model"},
                    "timestamp": 1000.0 + f64::from(s * 100 + i),
                    "content": {"role": "user", "parts": [{"text": text(&mut r, 12)}]}})
                .to_string()
            })
            .collect();
        m.add_events(&ns, &format!("s{s}"), &events.join("\n"), "").unwrap();
    }
    m.delete_memory(&ns, "e2-3").unwrap();
    let mut ids = Vec::new();
    for b in 0..5 {
        let inputs: Vec<EpisodeInput> = (0..50)
            .map(|i| EpisodeInput {
                id: Some(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 | (b * 1000 + i) as u128)),
                primary: text(&mut r, 8),
                secondary: text(&mut r, 3),
                tags: vec![format!("t{}", i % 3)],
                embedding: Some(vector(&mut r)),
                ..Default::default()
            })
            .collect();
        ids.extend(m.put_episodes(&ns, inputs).unwrap());
    }
    m.delete_episodes(&ns, &ids[10..20]).unwrap();
    ids
}

#[test]
fn every_search_answers_as_on_rocksdb() {
    if pg_server().is_none() {
        return;
    }
    let pg_place = place("postgresql", "same");
    let pg_uri = &pg_place.uri;
    let dir = std::env::temp_dir().join(format!("mnem-pg-same-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rocks = Mnem::open(dir.to_str().unwrap(), create()).unwrap();
    let pg = Mnem::open(pg_uri, create()).unwrap();
    assert_eq!(write_all(&rocks, 7), write_all(&pg, 7));
    let ns = Namespace::new("app", "user");
    let mut r = Rng(99);
    for q in 0..40 {
        let query = text(&mut r, 1 + q % 3);
        assert_eq!(rocks.search(&ns, &query).unwrap(), pg.search(&ns, &query).unwrap(), "search {query:?}");
        // ADK events get a new UUID in each store, and equal scores are ordered by UUID: the
        // results compare by their event id (or UUID) and score, in score order.
        let kq = KeywordQuery { limit: 1000, ..KeywordQuery::new(&query) };
        let ranked = |m: &Mnem| -> Vec<(String, f64)> {
            let hits = m.keyword_search(&ns, &kq).unwrap();
            assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
            let mut out: Vec<(String, f64)> = hits
                .into_iter()
                .map(|h| (h.record.event_id.clone().unwrap_or_else(|| h.record.id.to_string()), h.score))
                .collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out
        };
        let want = ranked(&rocks);
        assert!(!want.is_empty(), "{query:?}");
        assert_eq!(want, ranked(&pg), "keyword_search {query:?}");
        // The episodes with vectors have the same ids in both stores (fusion depends on the
        // lexical ranks, which equal scores order by UUID).
        let hq = HybridQuery {
            vector: Some(vector(&mut r)),
            episode_type: Some(EpisodeInput::default().episode_type),
            ..HybridQuery::new(&query)
        };
        let fused = |m: &Mnem| -> Vec<(String, f64)> {
            let mut out: Vec<(String, f64)> = m
                .hybrid_search(&ns, &HybridQuery { limit: 1000, ..hq.clone() })
                .unwrap()
                .into_iter()
                .map(|h| (h.record.event_id.clone().unwrap_or_else(|| h.record.id.to_string()), h.score))
                .collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out
        };
        assert_eq!(fused(&rocks), fused(&pg), "hybrid_search {query:?}");
    }
    // An export of one imports into the other: the same answers again.
    let mut export = Vec::new();
    pg.export(None, &mut export, &mut |_, _| {}).unwrap();
    let export = String::from_utf8(export).unwrap();
    let dir2 = dir.with_extension("import");
    let _ = std::fs::remove_dir_all(&dir2);
    let imported = Mnem::open(dir2.to_str().unwrap(), create()).unwrap();
    imported.import(&export, &mut |_, _| {}).unwrap();
    for query in ["alpha", "东京 café", "zulu kilo"] {
        assert_eq!(imported.search(&ns, query).unwrap(), pg.search(&ns, query).unwrap());
    }
    drop((rocks, imported));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

/// Words whose non-ASCII chars and char pairs recur across words, so that a token's pairs
/// or chars hold many places that do not contain it.
const SCRIPTS: [&str; 14] =
    ["москва", "москве", "вам", "сква", "東京", "京都", "東", "都市", "naïve", "naïf", "aïoli", "straße", "ße", "tea"];

/// Posting lists longer than a page of the PostgreSQL cursor (and texts checked in many
/// batches): `mnem_search` and keyword search answer as on RocksDB, for whole words, parts of
/// words, one char and two, and words found nowhere.
#[test]
fn long_posting_lists_answer_as_on_rocksdb() {
    if pg_server().is_none() {
        return;
    }
    let pg_place = place("postgresql", "long");
    let dir = std::env::temp_dir().join(format!("mnem-pg-long-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rocks = Mnem::open(dir.to_str().unwrap(), create()).unwrap();
    let pg = Mnem::open(&pg_place.uri, create()).unwrap();
    let ns = Namespace::new("app", "user");
    let mut r = Rng(5);
    for s in 0..100 {
        let events: Vec<String> = (0..20)
            .map(|i| {
                let words: Vec<&str> = (0..1 + r.below(6)).map(|_| r.pick(&SCRIPTS)).collect();
                serde_json::json!({"id": format!("e{s}-{i}"), "author": "user", "timestamp": f64::from(s * 20 + i),
                    "content": {"role": "user", "parts": [{"text": words.join(" ")}]}})
                .to_string()
            })
            .collect();
        for m in [&rocks, &pg] {
            m.add_events(&ns, &format!("s{}", s % 7), &events.join("\n"), "").unwrap();
        }
    }
    let mut queries: Vec<String> = SCRIPTS.iter().map(|w| w.to_string()).collect();
    queries.extend(
        ["оскв", "ва", "в", "京", "京東", "aï", "ï", "ïf", "ß", "москва 東京 tea", "сква naïf", "zzz ва"]
            .map(String::from),
    );
    for q in 0..30 {
        let n = 1 + q % 3;
        queries.push((0..n).map(|_| r.pick(&SCRIPTS)).collect::<Vec<_>>().join(" "));
    }
    let mut found = 0;
    for query in &queries {
        let want = rocks.search(&ns, query).unwrap();
        found += usize::from(want.len() > 20);
        assert_eq!(want, pg.search(&ns, query).unwrap(), "search {query:?}");
        // Every hit: ties are ordered by UUID, and events have other UUIDs in the other store.
        let kq = KeywordQuery { limit: 5000, ..KeywordQuery::new(query) };
        let ranked = |m: &Mnem| -> Vec<(Option<String>, f64)> {
            let mut out: Vec<(Option<String>, f64)> =
                m.keyword_search(&ns, &kq).unwrap().into_iter().map(|h| (h.record.event_id, h.score)).collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out
        };
        let (a, b) = (ranked(&rocks), ranked(&pg));
        assert!(a == b, "keyword_search {query:?}: {} hits on RocksDB, {} on PostgreSQL", a.len(), b.len());
    }
    assert!(found > queries.len() / 2, "most queries find memories: {found} of {}", queries.len());
    drop(rocks);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Keyword search reads whole posting lists in long pages (as many rows per statement as a
/// bound allows, shared among the query's words): a word in 20,000 episodes takes more than
/// one page alone, and in a query of many words every list takes several. The hits and scores
/// are RocksDB's.
#[test]
fn whole_lists_longer_than_a_page_rank_as_on_rocksdb() {
    if pg_server().is_none() {
        return;
    }
    let places = [place("rocksdb", "whole"), place("postgresql", "whole")];
    let (rocks, pg) = (places[0].open(), places[1].open());
    let ns = Namespace::new("app", "user");
    let mut r = Rng(21);
    for b in 0..20u128 {
        let inputs: Vec<EpisodeInput> = (0..1000u128)
            .map(|i| EpisodeInput {
                id: Some(Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 | (b * 1000 + i))),
                primary: format!("common {}", text(&mut r, 1 + (i % 4) as usize)),
                ..Default::default()
            })
            .collect();
        for m in [&rocks, &pg] {
            m.put_episodes(&ns, inputs.clone()).unwrap();
        }
    }
    let every_word = WORDS.join(" ");
    for query in ["common", "common alpha", every_word.as_str(), "common 东京 zulu"] {
        let kq = KeywordQuery { limit: 25_000, ..KeywordQuery::new(query) };
        let ranked = |m: &Mnem| -> Vec<(Uuid, f64)> {
            m.keyword_search(&ns, &kq).unwrap().into_iter().map(|h| (h.record.id, h.score)).collect()
        };
        let (a, b) = (ranked(&rocks), ranked(&pg));
        assert!(a.len() > 4_000, "{query:?} finds {} episodes", a.len());
        assert!(a == b, "keyword_search {query:?}: {} hits on RocksDB, {} on PostgreSQL", a.len(), b.len());
    }
}

/// A write inserts the postings it adds as new rows (no search of the primary key first);
/// should one be stored already (a stray key: here written by hand), the write is applied
/// again as upserts, whole: nothing is refused, and every answer is RocksDB's.
#[test]
fn a_posting_already_stored_is_overwritten_not_refused() {
    if pg_server().is_none() {
        return;
    }
    let places = [place("rocksdb", "stray"), place("postgresql", "stray")];
    let (rocks, pg) = (places[0].open(), places[1].open());
    let ns = Namespace::new("app", "user");
    let id = Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0042);
    // docs/FORMAT.md: namespace prefix ‖ 11 ‖ u32be(len) ‖ term ‖ UUID -> u32le tf ‖ u64le dl.
    let mut key = Vec::new();
    for part in ["app", "user"] {
        key.extend_from_slice(&(part.len() as u32).to_be_bytes());
        key.extend_from_slice(part.as_bytes());
    }
    key.push(0x11);
    key.extend_from_slice(&5u32.to_be_bytes());
    key.extend_from_slice(b"alpha");
    key.extend_from_slice(id.as_bytes());
    let stray = [9u32.to_le_bytes().as_slice(), 99u64.to_le_bytes().as_slice()].concat();
    pg.store().put_raw_for_test("index", &key, &stray).unwrap();
    let episodes = |m: &Mnem| {
        let other = EpisodeInput { primary: "alpha charlie".into(), ..Default::default() };
        let mine = EpisodeInput { id: Some(id), primary: "alpha bravo alpha".into(), ..Default::default() };
        m.put_episodes(&ns, vec![other, mine]).unwrap();
    };
    episodes(&rocks);
    episodes(&pg);
    for query in ["alpha", "bravo", "charlie", "alpha bravo"] {
        let scores = |m: &Mnem| -> Vec<(String, f64)> {
            m.keyword_search(&ns, &KeywordQuery::new(query))
                .unwrap()
                .into_iter()
                .map(|h| (h.record.primary.clone(), h.score))
                .collect()
        };
        assert_eq!(scores(&rocks), scores(&pg), "keyword_search {query:?}");
    }
}

/// The URI's `options` reach the server after mnem's own session settings (here, one that
/// makes the session refuse writes): a write is READ_ONLY, a search answers.
#[test]
fn the_uris_options_reach_every_session() {
    if pg_server().is_none() {
        return;
    }
    let p = place("postgresql", "options");
    let ns = Namespace::new("app", "user");
    p.open().put_episodes(&ns, vec![EpisodeInput { primary: "alpha".into(), ..Default::default() }]).unwrap();
    let uri = format!("{}&options=-c%20default_transaction_read_only%3Don", p.uri);
    let m = Mnem::open(&uri, OpenOptions::default()).unwrap();
    let e = m.put_episodes(&ns, vec![EpisodeInput { primary: "bravo".into(), ..Default::default() }]).unwrap_err();
    assert_eq!(e.status, Status::ReadOnly, "{e}");
    assert_eq!(m.keyword_search(&ns, &KeywordQuery::new("alpha")).unwrap().len(), 1);
}

/// A search's snapshot ends as the search returns: its ROLLBACK is sent without waiting for
/// the answer, and the server runs it then, not at the session's next use, so no session of
/// the store stays inside a transaction (which would hold back vacuum) while it is idle.
#[test]
fn a_search_leaves_no_transaction_open() {
    let Some(server) = pg_server() else { return };
    let p = place("postgresql", "ended");
    let app = format!("mnem_test_ended_{}", std::process::id());
    let m = Mnem::open(&format!("{}&application_name={app}", p.uri), create()).unwrap();
    let ns = Namespace::new("app", "user");
    m.put_episodes(&ns, vec![EpisodeInput { primary: "alpha bravo".into(), ..Default::default() }]).unwrap();
    assert_eq!(m.keyword_search(&ns, &KeywordQuery::new("alpha")).unwrap().len(), 1);
    let event = serde_json::json!({"id": "e1", "author": "user", "timestamp": 1.0,
        "content": {"role": "user", "parts": [{"text": "alpha"}]}});
    m.add_events(&ns, "s1", &event.to_string(), "").unwrap();
    let found: serde_json::Value = serde_json::from_slice(&m.search(&ns, "alpha").unwrap()).unwrap();
    assert_eq!(found["memories"].as_array().map(Vec::len), Some(1), "{found}");
    let mut c = postgres::Client::connect(&server, postgres::NoTls).expect("the test connects");
    let states = |c: &mut postgres::Client| -> Vec<String> {
        c.query("SELECT state FROM pg_stat_activity WHERE application_name = $1", &[&app])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, Option<String>>(0).unwrap_or_default())
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut seen = states(&mut c);
    while seen.iter().any(|s| s != "idle") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        seen = states(&mut c);
    }
    assert!(!seen.is_empty(), "the store keeps its sessions pooled");
    assert!(seen.iter().all(|s| s == "idle"), "sessions after the searches: {seen:?}");
}

/// A write's namespace lock is released as the write returns: the unlock is sent without
/// waiting for its answer, and the server runs it then, not at the session's next use, so a
/// writer of the namespace in another store (another process) is never kept waiting by an
/// idle one. With a short `statement_timeout` (the lock wait's bound too), a lock left held
/// would make the other store's write fail as BUSY.
#[test]
fn a_write_releases_its_namespace_at_once() {
    let Some(server) = pg_server() else { return };
    let p = place("postgresql", "unlocked");
    let app = format!("mnem_test_unlocked_{}", std::process::id());
    let uri = format!("{}&application_name={app}&statement_timeout=3000", p.uri);
    let (a, b) = (Mnem::open(&uri, create()).unwrap(), Mnem::open(&uri, OpenOptions::default()).unwrap());
    let ns = Namespace::new("app", "user");
    for i in 0..6 {
        let m = if i % 2 == 0 { &a } else { &b };
        m.put_episodes(&ns, vec![EpisodeInput { primary: format!("alpha {i}"), ..Default::default() }]).unwrap();
    }
    assert_eq!(a.keyword_search(&ns, &KeywordQuery::new("alpha")).unwrap().len(), 6);
    let mut c = postgres::Client::connect(&server, postgres::NoTls).expect("the test connects");
    let held = |c: &mut postgres::Client| -> i64 {
        c.query_one(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid \
             WHERE l.locktype = 'advisory' AND s.application_name = $1",
            &[&app],
        )
        .unwrap()
        .get(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while held(&mut c) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(held(&mut c), 0, "advisory locks held by the idle stores");
}

#[test]
fn opening_names_what_is_wrong_and_never_the_password() {
    let Some(uri) = pg_server() else { return };
    let e = Mnem::open(&with_schema(&uri, "never_created"), OpenOptions::default()).err().unwrap();
    assert_eq!(e.status, Status::NotFound, "{}", e.message);
    let pw = uri.split_once("://").and_then(|(_, r)| r.split_once('@')).and_then(|(u, _)| u.split_once(':'));
    if let Some((_, pw)) = pw {
        assert!(!e.message.contains(pw), "{}", e.message);
        let wrong = uri.replacen(&format!(":{pw}@"), ":wrong-password@", 1);
        let e = Mnem::open(&wrong, create()).err().unwrap();
        assert!(!e.message.contains("wrong-password"), "{}", e.message);
        assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
        assert!(e.message.contains("password authentication failed"), "{}", e.message);
    }
    let e = Mnem::open(&with_schema(&uri, "Bad;Name"), create()).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument, "{}", e.message);
}

/// A child process of `processes_share_one_store`: writes batches to the shared namespace and
/// to its own, deleting some of what it wrote, and prints each acknowledged id.
#[test]
fn child_writer() {
    let (Ok(uri), Ok(me)) = (std::env::var("MNEM_PG_CHILD_URI"), std::env::var("MNEM_PG_CHILD")) else { return };
    let me: u128 = me.parse().unwrap();
    let m = Mnem::open(&uri, OpenOptions::default()).unwrap();
    let shared = Namespace::new("app", "shared");
    let own = Namespace::new("app", format!("own{me}"));
    let mut r = Rng(me as u64 + 1);
    for b in 0..20u128 {
        for ns in [&shared, &own] {
            let inputs: Vec<EpisodeInput> = (0..5u128)
                .map(|i| EpisodeInput {
                    id: Some(Uuid::from_u128((me << 64) | (b << 8) | i)),
                    primary: format!("common {}", text(&mut r, 6)),
                    ..Default::default()
                })
                .collect();
            for id in m.put_episodes(ns, inputs).unwrap() {
                println!("ACK {} {id}", ns.user_id);
            }
        }
        if b % 4 == 3 {
            let gone = Uuid::from_u128((me << 64) | ((b - 1) << 8));
            assert_eq!(m.delete_episodes(&shared, &[gone]).unwrap(), 1);
            println!("DEL shared {gone}");
        }
    }
}

#[test]
fn processes_share_one_store() {
    if pg_server().is_none() {
        return;
    }
    let pg_place = place("postgresql", "procs");
    let pg_uri = &pg_place.uri;
    drop(Mnem::open(pg_uri, create()).unwrap());
    let exe = std::env::current_exe().unwrap();
    let running: Vec<_> = (1..=4)
        .map(|i| {
            Command::new(&exe)
                .args(["child_writer", "--exact", "--nocapture", "--test-threads=1"])
                .env("MNEM_PG_CHILD_URI", pg_uri)
                .env("MNEM_PG_CHILD", (i + 10).to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut acked: Vec<(String, Uuid)> = Vec::new();
    let mut deleted: Vec<(String, Uuid)> = Vec::new();
    for c in running {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "a child failed: {}", String::from_utf8_lossy(&out.stdout));
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            // The harness's own "test child_writer ... " may precede the first line.
            let at = line.find("ACK ").or_else(|| line.find("DEL ")).unwrap_or(line.len());
            let parts: Vec<&str> = line[at..].split(' ').collect();
            match parts[..] {
                ["ACK", ns, id] => acked.push((ns.to_string(), id.parse().unwrap())),
                ["DEL", ns, id] => deleted.push((ns.to_string(), id.parse().unwrap())),
                _ => {}
            }
        }
    }
    assert_eq!(acked.len(), 4 * 20 * 2 * 5);
    let m = Mnem::open(pg_uri, OpenOptions::default()).unwrap();
    // A serial replay of the surviving episodes, on RocksDB, ranks them identically.
    let dir = std::env::temp_dir().join(format!("mnem-pg-serial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let serial = Mnem::open(dir.to_str().unwrap(), create()).unwrap();
    for (user, id) in &acked {
        let ns = Namespace::new("app", user.as_str());
        let got = m.get_episode(&ns, id).unwrap();
        assert_eq!(got.is_some(), !deleted.contains(&(user.clone(), *id)), "{user} {id}");
        if let Some(e) = got {
            let input = EpisodeInput { id: Some(*id), primary: e.primary.clone(), ..Default::default() };
            serial.put_episodes(&ns, vec![input]).unwrap();
        }
    }
    for user in ["shared", "own11", "own14"] {
        let ns = Namespace::new("app", user);
        for q in ["common", "alpha bravo", "东京"] {
            let kq = KeywordQuery { limit: 1000, ..KeywordQuery::new(q) };
            let ranked = |m: &Mnem| -> Vec<(Uuid, f64)> {
                m.keyword_search(&ns, &kq).unwrap().into_iter().map(|h| (h.record.id, h.score)).collect()
            };
            assert_eq!(ranked(&m), ranked(&serial), "{user} {q:?}");
        }
    }
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tls_is_verified_against_the_servers_ca() {
    if pg_server().is_none() {
        return;
    }
    let Ok(verify) = std::env::var("MNEM_TEST_PG_VERIFY_URI") else {
        eprintln!("skipped: MNEM_TEST_PG_VERIFY_URI is not set");
        return;
    };
    let tls_place = place("postgresql", "tls");
    let (plain, schema) = (&tls_place.uri, tls_place.schema().unwrap());
    let m = Mnem::open(&with_schema(&verify, schema), create()).unwrap();
    m.put_episodes(&Namespace::new("a", "u"), vec![EpisodeInput { primary: "over tls".into(), ..Default::default() }])
        .unwrap();
    drop(m);
    let required = Mnem::open(&format!("{plain}&sslmode=require"), OpenOptions::default()).unwrap();
    assert_eq!(required.keyword_search(&Namespace::new("a", "u"), &KeywordQuery::new("tls")).unwrap().len(), 1);
    // A CA that did not sign the server's certificate: the handshake fails, nothing opens.
    let other_ca = std::env::temp_dir().join(format!("mnem-other-ca-{}.crt", std::process::id()));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=other"])
        .arg("-keyout")
        .arg(other_ca.with_extension("key"))
        .arg("-out")
        .arg(&other_ca)
        .output()
        .unwrap();
    assert!(made.status.success());
    let ca = verify.split("sslrootcert=").nth(1).unwrap().split('&').next().unwrap().to_string();
    let wrong = with_schema(&verify.replace(&ca, other_ca.to_str().unwrap()), schema);
    let e = Mnem::open(&wrong, OpenOptions::default()).err().expect("a foreign CA is refused");
    assert_eq!(e.status, Status::Busy, "{}", e.message);
    let _ = std::fs::remove_file(&other_ca);
    let _ = std::fs::remove_file(other_ca.with_extension("key"));
}
