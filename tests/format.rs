//! The on-disk format, pinned: docs/FORMAT.md describes it, these tests hold it still.
//!
//! - Golden bytes: fixed records and keys encoded by this build equal committed hex, field by
//!   field, and the hex decodes back to the same fields.
//! - A live store written through the API holds exactly the documented keys and values.
//! - A committed store, `tests/fixtures/format-v1`, opens and reads the same in every later
//!   build. `MNEM_UPDATE_FIXTURES=1` rewrites the store and its expected reading (only while
//!   FORMAT_VERSION is 1); `MNEM_UPDATE_FIXTURES=expected` rewrites only the expected reading
//!   of the committed store, for a deliberate change of search behaviour.
//!
//! Stored bytes change only together with FORMAT_VERSION: see `BUMP`.

use mnem::keys::{self, Namespace};
use mnem::record::{Episode, MAX_RECORD_BYTES, RECORD_VERSION};
use mnem::{EpisodeInput, Expiry, HybridQuery, KeywordQuery, Mnem, OpenOptions, Status, FORMAT_VERSION};
use rocksdb::{IteratorMode, Options, DB};
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// The FORMAT_VERSION that the goldens below describe.
const GOLDEN_FORMAT_VERSION: u32 = 5;

const BUMP: &str = "the on-disk format changed. Stored bytes may change only together with FORMAT_VERSION \
(src/store.rs): bump it, describe the new format in docs/FORMAT.md, and update GOLDEN_FORMAT_VERSION and \
the goldens in tests/format.rs in the same commit. Stores written by older builds must still open: keep \
tests/fixtures/format-v1 and its test passing";

const CREATE: OpenOptions = OpenOptions {
    create: true,
    read_only: false,
    sync_writes: false,
    cache_bytes: mnem::store::DEFAULT_CACHE_BYTES,
    builtin_embedder: false,
    model_dir: None,
    embed_context: None,
    write_yield_ms: None,
    compact_in_background: true,
};
const READ_ONLY: OpenOptions = OpenOptions {
    create: false,
    read_only: true,
    sync_writes: false,
    cache_bytes: mnem::store::DEFAULT_CACHE_BYTES,
    builtin_embedder: false,
    model_dir: None,
    embed_context: None,
    write_yield_ms: None,
    compact_in_background: true,
};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// Compare `got` with golden `(field, hex)` pieces; a failure names the first field that differs.
fn assert_golden(what: &str, got: &[u8], parts: &[(&str, &str)]) {
    let want: Vec<u8> = parts.iter().flat_map(|(_, h)| unhex(h)).collect();
    if got == want {
        return;
    }
    let mut at = 0;
    for (field, h) in parts {
        let n = h.len() / 2;
        let end = (at + n).min(got.len());
        if got.get(at..at + n) != Some(&unhex(h)[..]) {
            panic!(
                "{what}: field `{field}` at byte {at}: want {h}, got {}\n(whole encoding: {})\n{BUMP}",
                hex(&got[at.min(got.len())..end]),
                hex(got)
            );
        }
        at += n;
    }
    panic!("{what}: {} bytes follow the last field: {}\n{BUMP}", got.len() - at, hex(&got[at..]));
}

fn golden(parts: &[(&str, &str)]) -> Vec<u8> {
    parts.iter().flat_map(|(_, h)| unhex(h)).collect()
}

// ---- records -------------------------------------------------------------------------------

fn full_episode() -> Episode {
    Episode {
        id: Uuid::parse_str("0192f5e4-7c3a-7b21-8d4e-123456789abc").unwrap(),
        revision: 3,
        deleted: false,
        episode_type: "note".into(),
        tags: vec!["a".into(), "ü".into()],
        primary: "Hello wörld".into(),
        secondary: "2nd".into(),
        context: "ctx".into(),
        metadata: r#"{"k":1}"#.into(),
        author: Some("user".into()),
        session_id: Some("s1".into()),
        event_id: Some("e1".into()),
        timestamp: Some(1_700_000_000.5),
        created_at_ms: 1_700_000_000_000,
        updated_at_ms: 1_700_000_001_000,
        expires_at_ms: Some(1_800_000_000_000),
        content: Some(r#"{"role":"user","parts":[{"text":"Hello wörld"}]}"#.into()),
        embedding: Some(vec![0.5, -1.0, 0.25]),
    }
}

const FULL: &[(&str, &str)] = &[
    ("record version", "01"),
    ("flags: EXPIRES|TIMESTAMP|AUTHOR|SESSION|EVENT|CONTENT|EMBEDDING", "fe"),
    ("revision u64 3", "0300000000000000"),
    ("created_at_ms i64", "0068e5cf8b010000"),
    ("updated_at_ms i64", "e86be5cf8b010000"),
    ("expires_at_ms i64", "00505c18a3010000"),
    ("timestamp f64 1700000000.5", "00002040fc54d941"),
    ("episode_type 'note'", "040000006e6f7465"),
    ("primary 'Hello wörld'", "0c00000048656c6c6f2077c3b6726c64"),
    ("secondary '2nd'", "03000000326e64"),
    ("context 'ctx'", "03000000637478"),
    ("tags: u32 11, then u32 1 'a', u32 2 'ü'", "0b000000010000006102000000c3bc"),
    ("metadata '{\"k\":1}'", "070000007b226b223a317d"),
    ("author 'user'", "0400000075736572"),
    ("session_id 's1'", "020000007331"),
    ("event_id 'e1'", "020000006531"),
    (
        "content (raw JSON)",
        "310000007b22726f6c65223a2275736572222c227061727473223a5b7b2274657874223a2248656c6c6f2077c3b6726c64227d5d7d",
    ),
    ("embedding: u32 12, f32 0.5 -1.0 0.25", "0c0000000000003f000080bf0000803e"),
];

fn minimal_episode() -> Episode {
    Episode {
        id: Uuid::parse_str("0192f5e4-7c3a-7b21-8d4e-000000000001").unwrap(),
        revision: 1,
        deleted: false,
        episode_type: "episode".into(),
        tags: Vec::new(),
        primary: String::new(),
        secondary: String::new(),
        context: String::new(),
        metadata: "{}".into(),
        author: None,
        session_id: None,
        event_id: None,
        timestamp: None,
        created_at_ms: 1_700_000_000_000,
        updated_at_ms: 1_700_000_000_000,
        expires_at_ms: None,
        content: None,
        embedding: None,
    }
}

const MINIMAL: &[(&str, &str)] = &[
    ("record version", "01"),
    ("flags: none", "00"),
    ("revision u64 1", "0100000000000000"),
    ("created_at_ms i64", "0068e5cf8b010000"),
    ("updated_at_ms i64", "0068e5cf8b010000"),
    ("expires_at_ms (absent: 0)", "0000000000000000"),
    ("timestamp (absent: 0.0)", "0000000000000000"),
    ("episode_type 'episode'", "07000000657069736f6465"),
    ("primary ''", "00000000"),
    ("secondary ''", "00000000"),
    ("context ''", "00000000"),
    ("tags (none)", "00000000"),
    ("metadata '{}'", "020000007b7d"),
    ("author (absent)", "00000000"),
    ("session_id (absent)", "00000000"),
    ("event_id (absent)", "00000000"),
    ("content (absent)", "00000000"),
    ("embedding (absent)", "00000000"),
];

/// What deleting `full_episode()` at revision 3 stores: revision 4, identity and bookkeeping only.
fn tombstone_of_full() -> Episode {
    let full = full_episode();
    Episode {
        id: full.id,
        revision: 4,
        deleted: true,
        episode_type: full.episode_type,
        created_at_ms: full.created_at_ms,
        updated_at_ms: 1_700_000_002_000,
        ..minimal_episode()
    }
}

const TOMBSTONE: &[(&str, &str)] = &[
    ("record version", "01"),
    ("flags: DELETED", "01"),
    ("revision u64 4", "0400000000000000"),
    ("created_at_ms i64 (kept)", "0068e5cf8b010000"),
    ("updated_at_ms i64 (the delete)", "d06fe5cf8b010000"),
    ("expires_at_ms (absent: 0)", "0000000000000000"),
    ("timestamp (absent: 0.0)", "0000000000000000"),
    ("episode_type 'note' (kept)", "040000006e6f7465"),
    ("primary (dropped)", "00000000"),
    ("secondary (dropped)", "00000000"),
    ("context (dropped)", "00000000"),
    ("tags (dropped)", "00000000"),
    ("metadata '{}'", "020000007b7d"),
    ("author (dropped)", "00000000"),
    ("session_id (dropped)", "00000000"),
    ("event_id (dropped)", "00000000"),
    ("content (dropped)", "00000000"),
    ("embedding (dropped)", "00000000"),
];

#[test]
fn format_version_is_pinned_with_the_goldens() {
    assert_eq!(
        FORMAT_VERSION, GOLDEN_FORMAT_VERSION,
        "FORMAT_VERSION is {FORMAT_VERSION} but the goldens in tests/format.rs describe format \
         {GOLDEN_FORMAT_VERSION}: rewrite them for the new format from docs/FORMAT.md, then set \
         GOLDEN_FORMAT_VERSION"
    );
    assert_eq!(RECORD_VERSION, 1, "the record version byte: {BUMP}");
    assert_eq!(MAX_RECORD_BYTES, 64 << 20, "the record cap is documented in docs/FORMAT.md and SECURITY.md");
}

fn check_record(what: &str, e: &Episode, parts: &[(&str, &str)]) {
    let bytes = e.encode();
    assert_golden(what, &bytes, parts);
    assert_eq!(e.encoded_len(), bytes.len(), "{what}: encoded_len");
    let back =
        Episode::decode(e.id, &golden(parts)).unwrap_or_else(|err| panic!("{what}: golden does not decode: {err}"));
    assert_eq!(&back, e, "{what}: the golden bytes decode to other fields");
}

#[test]
fn full_episode_golden() {
    check_record("episode with every field", &full_episode(), FULL);
}

#[test]
fn minimal_episode_golden() {
    check_record("minimal episode", &minimal_episode(), MINIMAL);
}

#[test]
fn tombstone_golden() {
    let t = tombstone_of_full();
    check_record("tombstone", &t, TOMBSTONE);
    let bytes = t.encode();
    let full = full_episode().encode();
    // The deleted revision holds none of the text, content or vector bytes of the live one.
    for secret in ["Hello w", "2nd", "ctx", "{\"k\":1}", "parts"] {
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "tombstone keeps {secret:?}");
        assert!(full.windows(secret.len()).any(|w| w == secret.as_bytes()), "the live record holds {secret:?}");
    }
}

#[test]
fn present_but_empty_differs_from_absent_only_in_flags() {
    let absent = minimal_episode();
    let empty = Episode {
        author: Some(String::new()),
        session_id: Some(String::new()),
        event_id: Some(String::new()),
        content: Some(String::new()),
        ..minimal_episode()
    };
    let (a, e) = (absent.encode(), empty.encode());
    assert_eq!(a.len(), e.len());
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != e[i]).collect();
    assert_eq!(diff, vec![1], "only the flags byte differs");
    assert_eq!(e[1], 0x08 | 0x10 | 0x20 | 0x40, "AUTHOR|SESSION|EVENT|CONTENT: {BUMP}");
    assert_eq!(Episode::decode(empty.id, &e).unwrap(), empty);
}

#[test]
fn damaged_goldens_are_corruption() {
    let good = golden(FULL);
    let id = full_episode().id;
    let mut newer = good.clone();
    newer[0] = 2;
    let e = Episode::decode(id, &newer).unwrap_err();
    assert_eq!(e.status, Status::Corruption);
    assert!(e.message.contains("unknown record version 2"), "{}", e.message);
    let mut padded = good.clone();
    padded.push(0);
    assert_eq!(Episode::decode(id, &padded).unwrap_err().status, Status::Corruption);
    assert_eq!(Episode::decode(id, &good[..good.len() - 1]).unwrap_err().status, Status::Corruption);
    // A primary text length pointing past the end.
    let mut long = good.clone();
    let primary_len_at = 42 + 8;
    long[primary_len_at..primary_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(Episode::decode(id, &long).unwrap_err().status, Status::Corruption);
    // An embedding whose length is not a multiple of 4.
    let mut ragged = golden(MINIMAL);
    let n = ragged.len();
    ragged[n - 4..].copy_from_slice(&1u32.to_le_bytes());
    ragged.push(0);
    ragged[1] = 0x80;
    assert_eq!(Episode::decode(id, &ragged).unwrap_err().status, Status::Corruption);
}

// ---- keys ----------------------------------------------------------------------------------

#[test]
fn key_goldens() {
    let check = |what: &str, got: Vec<u8>, parts: &[(&str, &str)]| assert_golden(what, &got, parts);
    let p = Namespace::new("app", "user").prefix();
    check(
        "namespace prefix",
        p.clone(),
        &[("u32be 3", "00000003"), ("app", "617070"), ("u32be 4", "00000004"), ("user", "75736572")],
    );
    check(
        "empty namespace prefix",
        Namespace::new("", "").prefix(),
        &[("u32be 0", "00000000"), ("u32be 0", "00000000")],
    );
    check(
        "namespace with NUL and non-ASCII",
        Namespace::new("a\0/", "ü").prefix(),
        &[("u32be 3", "00000003"), ("a NUL /", "61002f"), ("u32be 2", "00000002"), ("ü", "c3bc")],
    );
    let id = Uuid::parse_str("0192f5e4-7c3a-7b21-8d4e-123456789abc").unwrap();
    let ns_hex = "000000036170700000000475736572";
    check(
        "episodes key",
        keys::episode_key(&p, &id),
        &[("prefix", ns_hex), ("uuid, RFC 4122 byte order", "0192f5e47c3a7b218d4e123456789abc")],
    );
    check("adk namespace key", adk_key(&p, adk_tag::NAMESPACE, &[]), &[("prefix", ns_hex), ("tag", "00")]);
    check(
        "adk bucket key",
        adk_key(&p, adk_tag::BUCKET, "s1".as_bytes()),
        &[("prefix", ns_hex), ("tag", "01"), ("session_id", "7331")],
    );
    check(
        "adk order key",
        adk_key(&p, adk_tag::ORDER, &order_suffix(7, 2)),
        &[("prefix", ns_hex), ("tag", "02"), ("u32be position 7", "00000007"), ("u64be seq 2", "0000000000000002")],
    );
    check(
        "adk tombstone key",
        adk_key(&p, adk_tag::TOMBSTONE, "e1".as_bytes()),
        &[("prefix", ns_hex), ("tag", "03"), ("event id", "6531")],
    );
}

// ---- a live store, read raw ----------------------------------------------------------------

fn tempdir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mnem-format-{tag}-{}", Uuid::now_v7()))
}

/// Every `(key, value)` of a column family, in key order, read with RocksDB directly.
fn raw_cf(dir: &Path, cf: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let cfs = DB::list_cf(&Options::default(), dir).expect("list column families");
    let db = DB::open_cf_for_read_only(&Options::default(), dir, &cfs, false).expect("raw open");
    let handle = db.cf_handle(cf).expect("column family");
    db.iterator_cf(handle, IteratorMode::Start)
        .map(|kv| {
            let (k, v) = kv.expect("raw read");
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn event_line(id: &str, text: &str, ts: f64) -> String {
    format!(
        r#"{{"id":"{id}","author":"user","timestamp":{ts},"invocation_id":"inv-{id}","content":{{"role":"user","parts":[{{"text":"{text}"}}]}}}}"#
    )
}

#[test]
fn a_live_store_holds_exactly_the_documented_keys_and_values() {
    let dir = tempdir("live");
    let ns = Namespace::new("app", "user");
    let note_id = Uuid::parse_str("0192f5e4-7c3a-7b21-8d4e-00000000000a").unwrap();
    {
        let m = Mnem::open(dir.to_str().unwrap(), CREATE).unwrap();
        let events = [event_line("e1", "first", 1_700_000_000.25), event_line("e2", "the blue heron", 1_700_000_001.5)];
        assert_eq!(m.add_session(&ns, "s1", &events.join("\n")).unwrap(), 2);
        assert_eq!(m.delete_memory(&ns, "e1").unwrap(), 1);
        let note = EpisodeInput {
            id: Some(note_id),
            episode_type: "note".into(),
            tags: vec!["t".into()],
            primary: "vector note".into(),
            metadata: Some(r#"{"k": [1, 2]}"#.into()),
            expiry: Expiry::At(4_102_444_800_000),
            embedding: Some(vec![1.0, 0.0, 0.5]),
            embedding_model: Some("golden-model".into()),
            ..EpisodeInput::default()
        };
        m.put_episodes(&ns, vec![note]).unwrap();
    }
    let p = ns.prefix();
    let mut cfs = DB::list_cf(&Options::default(), &dir).unwrap();
    cfs.sort();
    assert_eq!(cfs, ["adk", "default", "episodes", "index", "meta"], "column families: {BUMP}");
    assert!(raw_cf(&dir, "default").is_empty());

    let mut dim_key = b"dim:".to_vec();
    dim_key.extend_from_slice(&p);
    let meta = raw_cf(&dir, "meta");
    // The dimension, then the name of the model that made the vectors.
    let want_meta = vec![
        (dim_key, [&3u32.to_le_bytes()[..], b"golden-model"].concat()),
        (b"format_version".to_vec(), 5u32.to_le_bytes().to_vec()),
    ];
    assert_eq!(meta, want_meta, "meta column family: {BUMP}");

    // The episodes, in UUID order within the namespace; event UUIDs are fresh v7s, so find
    // each by what it is.
    let episodes = raw_cf(&dir, "episodes");
    assert_eq!(episodes.len(), 3);
    let mut by_event = std::collections::HashMap::new();
    for (k, v) in &episodes {
        assert_eq!(&k[..p.len()], &p[..], "episode keys start with the namespace prefix");
        let id = Uuid::from_slice(&k[p.len()..]).expect("16 UUID bytes end the key");
        let e = Episode::decode(id, v).unwrap();
        assert_eq!(&e.encode(), v, "a stored record re-encodes to its own bytes");
        by_event
            .insert(e.event_id.clone().unwrap_or_else(|| if e.deleted { "deleted".into() } else { "note".into() }), e);
    }
    let e1 = &by_event["deleted"];
    let want_e1 = Episode {
        id: e1.id,
        revision: 2,
        deleted: true,
        episode_type: "event".into(),
        created_at_ms: e1.created_at_ms,
        updated_at_ms: e1.updated_at_ms,
        ..minimal_episode()
    };
    assert_eq!(e1, &want_e1, "a deleted ADK event keeps identity and bookkeeping only");
    let e2 = &by_event["e2"];
    let want_e2 = Episode {
        id: e2.id,
        revision: 1,
        deleted: false,
        episode_type: "event".into(),
        tags: Vec::new(),
        primary: "the blue heron".into(),
        secondary: String::new(),
        context: String::new(),
        metadata: r#"{"invocation_id":"inv-e2"}"#.into(),
        author: Some("user".into()),
        session_id: Some("s1".into()),
        event_id: Some("e2".into()),
        timestamp: Some(1_700_000_001.5),
        created_at_ms: e2.created_at_ms,
        updated_at_ms: e2.created_at_ms,
        expires_at_ms: None,
        content: Some(r#"{"role":"user","parts":[{"text":"the blue heron"}]}"#.into()),
        embedding: None,
    };
    assert_eq!(e2, &want_e2, "how an ADK event maps onto an episode");
    let note = &by_event["note"];
    assert_eq!(note.id, note_id);
    assert_eq!(note.metadata, r#"{"k": [1, 2]}"#, "metadata is stored as written");
    assert_eq!((note.expires_at_ms, note.embedding.as_deref()), (Some(4_102_444_800_000), Some(&[1.0, 0.0, 0.5][..])));

    let adk = raw_cf(&dir, "adk");
    let key = |tag: u8, rest: &[u8]| adk_key(&p, tag, rest);
    let mut bucket = 0u32.to_le_bytes().to_vec();
    bucket.extend_from_slice(&2u64.to_le_bytes());
    let want_adk = vec![
        (key(adk_tag::NAMESPACE, &[]), 1u32.to_le_bytes().to_vec()),
        (key(adk_tag::BUCKET, b"s1"), bucket),
        // e1's order entry (position 0, seq 0) went with it; e2 keeps seq 1.
        (key(adk_tag::ORDER, &order_suffix(0, 1)), e2.id.as_bytes().to_vec()),
        (key(adk_tag::TOMBSTONE, b"e1"), Vec::new()),
    ];
    assert_eq!(adk, want_adk, "adk column family: {BUMP}");
    check_index_cf(&dir, &p, e2.id, note_id);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn lp(b: &[u8]) -> Vec<u8> {
    let mut v = (b.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(b);
    v
}

fn lp_le(b: &[u8]) -> Vec<u8> {
    let mut v = (b.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(b);
    v
}

/// The `index` column family of the live store above: e2 ("the blue heron", an ADK event at
/// bucket 0, sequence 1) and the note ("vector note", type note, tag t, an expiry, a vector).
fn check_index_cf(dir: &Path, p: &[u8], e2: Uuid, note: Uuid) {
    let index = raw_cf(dir, "index");
    let key = |tag: u8, rest: &[u8]| keys::index_key(p, tag, rest);
    let cat = |parts: &[&[u8]]| parts.concat();
    const EXPIRY: i64 = 4_102_444_800_000;

    // BM25: tags 10-13.
    let e2_doc = cat(&[
        &3u64.to_le_bytes(),
        &[0],
        &lp_le(b"event"),
        &0u32.to_le_bytes(),
        &3u32.to_le_bytes(),
        &lp_le(b"blue"),
        &1u32.to_le_bytes(),
        &lp_le(b"heron"),
        &1u32.to_le_bytes(),
        &lp_le(b"the"),
        &1u32.to_le_bytes(),
    ]);
    let note_doc = cat(&[
        &2u64.to_le_bytes(),
        &[1],
        &EXPIRY.to_le_bytes(),
        &lp_le(b"note"),
        &1u32.to_le_bytes(),
        &lp_le(b"t"),
        &2u32.to_le_bytes(),
        &lp_le(b"note"),
        &1u32.to_le_bytes(),
        &lp_le(b"vector"),
        &1u32.to_le_bytes(),
    ]);
    let posting = |term: &[u8], id: Uuid| key(0x11, &cat(&[&lp(term), id.as_bytes()]));
    let e2_post = cat(&[&1u32.to_le_bytes(), &3u64.to_le_bytes()]);
    let note_post = cat(&[&1u32.to_le_bytes(), &2u64.to_le_bytes(), &EXPIRY.to_le_bytes()]);
    let counter = |docs: u64, len: u64| cat(&[&docs.to_le_bytes(), &len.to_le_bytes()]);
    let mut want_bm25 = vec![
        (key(0x10, e2.as_bytes()), e2_doc),
        (key(0x10, note.as_bytes()), note_doc),
        (posting(b"blue", e2), e2_post.clone()),
        (posting(b"heron", e2), e2_post.clone()),
        (posting(b"note", note), note_post.clone()),
        (posting(b"the", e2), e2_post),
        (posting(b"vector", note), note_post),
        (key(0x12, &[0]), counter(2, 5)),
        (key(0x12, &cat(&[&[1], &lp(b"event")])), counter(1, 3)),
        (key(0x12, &cat(&[&[1], &lp(b"note")])), counter(1, 2)),
        (key(0x12, &cat(&[&[2], &lp(b"t")])), counter(1, 2)),
        (key(0x12, &cat(&[&[3], &lp(b"note"), &lp(b"t")])), counter(1, 2)),
        (
            key(0x13, &cat(&[&((EXPIRY as u64) ^ (1 << 63)).to_be_bytes(), note.as_bytes()])),
            cat(&[&2u64.to_le_bytes(), &lp_le(b"note"), &1u32.to_le_bytes(), &lp_le(b"t")]),
        ),
    ];
    want_bm25.sort();
    let in_range = |lo: u8, hi: u8| -> Vec<(Vec<u8>, Vec<u8>)> {
        index.iter().filter(|(k, _)| (lo..=hi).contains(&k[p.len()])).cloned().collect()
    };
    assert_eq!(in_range(0x10, 0x1f), want_bm25, "index column family, BM25 keys: {BUMP}");

    // ADK search index: tags 20-25, keys only (values: docs/FORMAT.md). The note is not an
    // ADK memory, so only e2 is there; its text is ASCII, so it has no char postings.
    let place = order_suffix(0, 1);
    let mut want_adk: Vec<Vec<u8>> =
        vec![key(0x20, &place), key(0x21, e2.as_bytes()), key(0x25, &cat(&[&lp(b"e2"), &place]))];
    for w in mnem::adk::tokenizer::searchable_words("the blue heron") {
        want_adk.push(key(0x22, &cat(&[&lp(w.as_bytes()), &place])));
    }
    want_adk.sort();
    let got_adk: Vec<Vec<u8>> = in_range(0x20, 0x2f).into_iter().map(|(k, _)| k).collect();
    assert_eq!(got_adk, want_adk, "index column family, ADK keys: {BUMP}");
    let mut words = mnem::adk::tokenizer::searchable_words("the blue heron");
    words.sort();
    let mut e2_adk_doc = cat(&[&[12], &place, &lp_le(b"e2"), &(words.len() as u32).to_le_bytes()]);
    for w in &words {
        e2_adk_doc.extend_from_slice(&lp_le(w.as_bytes()));
    }
    // No chars, no pairs.
    e2_adk_doc.extend_from_slice(&cat(&[&0u32.to_le_bytes(), &0u32.to_le_bytes()]));
    let doc = index.iter().find(|(k, _)| k == &key(0x21, e2.as_bytes())).map(|(_, v)| v);
    assert_eq!(doc, Some(&e2_adk_doc), "index column family, ADK document value: {BUMP}");

    // HNSW graph: tags 30-33; the note's vector is node 0.
    let graph = in_range(0x30, 0x3f);
    let got: Vec<&[u8]> = graph.iter().map(|(k, _)| &k[p.len()..]).collect();
    let want: Vec<Vec<u8>> = vec![
        vec![0x30],
        cat(&[&[0x31], &0u32.to_be_bytes()]),
        cat(&[&[0x32], &0u32.to_be_bytes()]),
        cat(&[&[0x33], note.as_bytes()]),
    ];
    assert_eq!(got, want.iter().map(Vec::as_slice).collect::<Vec<_>>(), "index column family, graph keys: {BUMP}");
    let header = &graph[0].1;
    assert_eq!(header.len(), 26, "graph header");
    assert_eq!(header[0], 1, "graph layout version");
    assert_eq!(
        &header[1..17],
        cat(&[&3u32.to_le_bytes(), &1u32.to_le_bytes(), &1u32.to_le_bytes(), &0u32.to_le_bytes()])
    );
    let norm = (1.0f64 + 0.25).sqrt();
    let unit: Vec<u8> = [1.0f64, 0.0, 0.5].iter().flat_map(|x| ((x / norm) as f32).to_le_bytes()).collect();
    assert_eq!(graph[1].1, unit, "a node's vector is the unit vector, f32le");
    assert_eq!(graph[3].1, 0u32.to_be_bytes(), "the episode's node");
    assert_eq!(index.len(), want_bm25.len() + want_adk.len() + 4, "nothing else in the index column family: {BUMP}");
}

/// The ADK index of a non-ASCII text: its chars (`23`), its char pairs (`26`: adjacent chars a
/// token may hold, one at least non-ASCII), its haystack (`24`), and the lists of both in
/// its document (`21`).
#[test]
fn adk_chars_and_char_pairs_are_keyed_as_documented() {
    let dir = tempdir("pairs");
    let ns = Namespace::new("app", "user");
    {
        let m = Mnem::open(dir.to_str().unwrap(), CREATE).unwrap();
        m.add_session(&ns, "s1", &event_line("e1", "Café 東京!", 1_700_000_000.0)).unwrap();
    }
    let p = ns.prefix();
    let index = raw_cf(&dir, "index");
    let key = |tag: u8, rest: &[u8]| keys::index_key(&p, tag, rest);
    let place = order_suffix(0, 0);
    let cp = |c: char| (c as u32).to_be_bytes();
    let of_tag =
        |tag: u8| -> Vec<(Vec<u8>, Vec<u8>)> { index.iter().filter(|(k, _)| k[p.len()] == tag).cloned().collect() };
    let chars: Vec<Vec<u8>> = of_tag(0x23).into_iter().map(|(k, _)| k).collect();
    let mut want: Vec<Vec<u8>> = ['é', '京', '東'].iter().map(|&c| key(0x23, &[&cp(c)[..], &place].concat())).collect();
    want.sort();
    assert_eq!(chars, want, "char postings: {BUMP}");
    let pairs: Vec<Vec<u8>> = of_tag(0x26).into_iter().map(|(k, _)| k).collect();
    let mut want: Vec<Vec<u8>> =
        [('f', 'é'), ('東', '京')].iter().map(|&(a, b)| key(0x26, &[&cp(a)[..], &cp(b), &place].concat())).collect();
    want.sort();
    assert_eq!(pairs, want, "char pair postings: {BUMP}");
    assert!(of_tag(0x26).iter().all(|(_, v)| v.is_empty()), "pair postings of an entry that never expires are empty");
    assert_eq!(of_tag(0x24), vec![(key(0x24, &place), "café 東京!".as_bytes().to_vec())], "haystack: {BUMP}");
    let doc = &of_tag(0x21)[0].1;
    let mut tail = 3u32.to_le_bytes().to_vec();
    for c in ['é', '京', '東'] {
        tail.extend_from_slice(&(c as u32).to_le_bytes());
    }
    tail.extend_from_slice(&2u32.to_le_bytes());
    for (a, b) in [('f', 'é'), ('東', '京')] {
        tail.extend_from_slice(&(a as u32).to_le_bytes());
        tail.extend_from_slice(&(b as u32).to_le_bytes());
    }
    assert!(doc.ends_with(&tail), "a document lists its chars, then its pairs: {BUMP}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run of held postings, decoded by the layout docs/FORMAT.md gives: `u32le` key length,
/// key, `1` (put) or `0` (delete), and for a put `u32le` value length and value.
fn decode_run(run: &[u8]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut at = 0;
    let mut take = |n: usize| {
        at += n;
        run[at - n..at].to_vec()
    };
    let len = |v: Vec<u8>| u32::from_le_bytes(v.try_into().unwrap()) as usize;
    let mut out = Vec::new();
    let mut read = 0;
    while read < run.len() {
        let n = len(take(4));
        let key = take(n);
        let op = take(1)[0];
        let value = match op {
            1 => {
                let n = len(take(4));
                Some(take(n))
            }
            0 => None,
            _ => panic!("op byte {op}"),
        };
        read += 4 + n + 1 + value.as_ref().map_or(0, |v| 4 + v.len());
        out.push((key, value));
    }
    out
}

/// While a writer is open, each write's posting changes (BM25 term postings, ADK word and
/// char postings) wait in one journal entry of the `meta` column family, and only there; a
/// clean close moves them into the `index` column family with the same keys and values and
/// deletes the entry.
#[test]
fn held_postings_are_journaled_as_documented() {
    let dir = tempdir("journal");
    let ns = Namespace::new("app", "user");
    let m = Mnem::open(dir.to_str().unwrap(), CREATE).unwrap();
    m.add_session(&ns, "s1", &event_line("e1", "blue heron", 1_700_000_000.25)).unwrap();
    let journal: Vec<(Vec<u8>, Vec<u8>)> =
        raw_cf(&dir, "meta").into_iter().filter(|(k, _)| k.starts_with(b"journal/")).collect();
    assert_eq!(journal.len(), 1, "one entry per write: {BUMP}");
    assert_eq!(journal[0].0, [b"journal/".as_slice(), &0u64.to_be_bytes()].concat(), "{BUMP}");
    let ops = decode_run(&journal[0].1);
    assert!(ops.windows(2).all(|w| w[0].0 < w[1].0), "keys ascending");
    let p = ns.prefix();
    let tags: Vec<u8> = ops.iter().map(|(k, _)| k[p.len()]).collect();
    // "blue" and "heron": two BM25 postings and two ADK word postings; no char postings.
    assert_eq!(tags, [0x11, 0x11, 0x22, 0x22], "{BUMP}");
    assert!(ops.iter().all(|(k, v)| k.starts_with(&p) && v.is_some()));
    let index = raw_cf(&dir, "index");
    assert!(ops.iter().all(|(k, _)| index.iter().all(|(ik, _)| ik != k)), "not in the index while held");
    drop(m);
    let index = raw_cf(&dir, "index");
    for (k, v) in &ops {
        assert!(index.contains(&(k.clone(), v.clone().unwrap())), "{k:?} moved into the index");
    }
    assert!(raw_cf(&dir, "meta").iter().all(|(k, _)| !k.starts_with(b"journal/")), "the entry is deleted");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- the committed v1 store ----------------------------------------------------------------

fn fixture_dir_of(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/format-v{version}"))
}

fn expected_path_of(version: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/format-v{version}.expected"))
}

fn fixture_dir() -> PathBuf {
    fixture_dir_of(1)
}

fn expected_path() -> PathBuf {
    expected_path_of(1)
}

fn fixture_id(n: u8) -> Uuid {
    Uuid::from_bytes([0x01, 0x92, 0xf5, 0xe4, 0x7c, 0x3a, 0x7b, 0x21, 0x8d, 0x4e, 0, 0, 0, 0, 0, n])
}

/// The namespaces of the fixture: an ordinary one and one of odd bytes.
fn fixture_namespaces() -> [Namespace; 2] {
    [Namespace::new("app", "user"), Namespace::new("a\0/b", "ü")]
}

/// Write the fixture's contents: every kind of record and key the format has.
fn write_fixture_contents(m: &Mnem) {
    let [ns, odd] = fixture_namespaces();
    let s1 = [
        event_line("e1", "the blue heron fishes", 1_700_000_000.25),
        event_line("e2", "a river stone", 1_700_000_001.5),
        r#"{"id":"skipped","author":"user","timestamp":1700000002.0}"#.to_string(),
        event_line("e3", "日本の川", 1_700_000_003.0),
    ];
    m.add_session(&ns, "s1", &s1.join("\n")).unwrap();
    m.add_session(&ns, "s2", &event_line("e4", "heron and stone", 1_700_000_004.0)).unwrap();
    m.add_events(
        &ns,
        "",
        &event_line("e5", "no session heron", 1_700_000_005.0),
        r#"{"tags":["x"],"ttl_ms":4000000000000}"#,
    )
    .unwrap();
    m.delete_memory(&ns, "e2").unwrap();
    let full = |n: u8| EpisodeInput {
        id: Some(fixture_id(n)),
        episode_type: "note".into(),
        tags: vec!["a".into(), "ü".into()],
        primary: "heron notes".into(),
        secondary: "second text".into(),
        context: "context text".into(),
        metadata: Some(r#"{"k":1}"#.into()),
        author: Some("agent".into()),
        session_id: Some("s9".into()),
        event_id: Some("n1".into()),
        timestamp: Some(1_700_000_010.125),
        expiry: Expiry::At(4_102_444_800_000),
        content: Some(r#"{"any":["json",1.50]}"#.into()),
        embedding: Some(vec![1.0, 0.0, 0.5]),
        embed: false,
        embedding_model: None,
    };
    let plain =
        |n: u8, text: &str| EpisodeInput { id: Some(fixture_id(n)), primary: text.into(), ..EpisodeInput::default() };
    m.put_episodes(
        &ns,
        vec![
            full(1),
            plain(2, "minimal stone"),
            plain(3, "revision one"),
            EpisodeInput { embedding: Some(vec![0.0, 1.0, 0.0]), ..plain(4, "to be deleted") },
            EpisodeInput { expiry: Expiry::At(1), ..plain(5, "long expired") },
            EpisodeInput {
                episode_type: "memory".into(),
                content: Some(r#"{"role":"user","parts":[{"text":"a remembered heron"}]}"#.into()),
                ..plain(6, "a remembered heron")
            },
        ],
    )
    .unwrap();
    m.put_episodes(&ns, vec![plain(3, "revision two"), plain(3, "revision three")]).unwrap();
    m.delete_episodes(&ns, &[fixture_id(4)]).unwrap();
    m.add_session(&odd, "ß", &event_line("o1", "odd namespace heron", 1_700_000_020.0)).unwrap();
    m.put_episodes(&odd, vec![plain(7, "odd stone")]).unwrap();
}

/// Texts in other scripts (from format 3 on): what a non-ASCII token matches as a substring.
fn write_multilingual_contents(m: &Mnem) {
    let [ns, odd] = fixture_namespaces();
    let s3 = [
        event_line("m1", "Встреча в Москве перенесена на пятницу", 1_700_000_030.0),
        event_line("m2", "Москва — столица России", 1_700_000_031.0),
        event_line("m3", "東京タワーの近くでランチ", 1_700_000_032.0),
        event_line("m4", "東京 と 京都", 1_700_000_033.0),
        event_line("m5", "ΟΔΟΣ Σ κόσμε", 1_700_000_034.0),
        event_line("m6", "İstanbul ve İzmir", 1_700_000_035.0),
        event_line("m7", "café crème brûlée", 1_700_000_036.0),
        event_line("m8", "Straße und Fluß", 1_700_000_037.0),
    ];
    m.add_session(&ns, "s3", &s3.join("\n")).unwrap();
    m.add_events(&ns, "s3", &event_line("m9", "временная заметка", 1_700_000_038.0), r#"{"ttl_ms":4000000000000}"#)
        .unwrap();
    m.delete_memory(&ns, "m2").unwrap();
    m.put_episodes(
        &ns,
        vec![EpisodeInput {
            id: Some(fixture_id(8)),
            episode_type: "memory".into(),
            content: Some(r#"{"role":"user","parts":[{"text":"заметка о Москве и 京都"}]}"#.into()),
            ..EpisodeInput::default()
        }],
    )
    .unwrap();
    m.add_session(&odd, "s3", &event_line("o2", "über Größe 日本語", 1_700_000_040.0)).unwrap();
}

/// Queries whose non-ASCII tokens are one char, two, or more, found whole or inside words.
const MULTILINGUAL_QUERIES: &[&str] = &[
    "москве",
    "москв",
    "в",
    "ва",
    "москва столица",
    "пятницу встреча",
    "東京",
    "京",
    "東京タワー",
    "タワー",
    "の",
    "京都",
    "οδος",
    "ς",
    "κόσμε",
    "σ",
    "istanbul",
    "i̇stanbul",
    "i̇",
    "izmir",
    "café",
    "fé",
    "crème brûlée",
    "straße",
    "ß",
    "fluß",
    "заметка",
    "временная",
    "über",
    "größe",
    "日本",
    "本語",
    "川",
    "本の川",
    "heron",
    "stone river",
    "ü",
    "ьн",
    "xyzé",
    "東京タワーの近くでランチ",
    "タワーの近くで",
    "タワーの近くでディナー",
];

/// `mnem_search`'s answer to each multilingual query in each fixture namespace.
fn adk_answers(dir: &Path) -> Vec<String> {
    let m = Mnem::open(dir.to_str().unwrap(), READ_ONLY).unwrap();
    let mut out = Vec::new();
    for ns in fixture_namespaces() {
        for q in MULTILINGUAL_QUERIES {
            out.push(format!("{ns:?} {q:?}: {}", String::from_utf8(m.search(&ns, q).unwrap()).unwrap()));
        }
    }
    out
}

/// The char pair postings (tag `26`) of a store: keys, and whether each carries an expiry.
fn pair_postings(dir: &Path) -> Vec<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    for (k, v) in raw_cf(dir, "index") {
        if keys::namespace_len(&k).is_some_and(|n| k[n] == 0x26) {
            out.push((k, v.len()));
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path, keep: impl Fn(&str) -> bool) {
    std::fs::create_dir_all(to).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(from).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    for name in names.into_iter().filter(|n| keep(n)) {
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
}

/// RocksDB's info logs and lock files are not part of a store's data.
fn is_data_file(name: &str) -> bool {
    !(name.starts_with("LOG") || name == "LOCK" || name == "mnem.lock")
}

/// Write `tests/fixtures/format-v{version}` and its expected reading: only a build of that
/// format may.
fn regenerate_fixture(version: u32) {
    assert_eq!(
        FORMAT_VERSION, version,
        "tests/fixtures/format-v{version} is a store of format {version}: never regenerate it with another"
    );
    let work = tempdir("fixture-gen");
    {
        let m = Mnem::open(work.to_str().unwrap(), CREATE).unwrap();
        write_fixture_contents(&m);
        if version >= 3 {
            write_multilingual_contents(&m);
        }
    }
    // Move everything from the write-ahead log into table files, so that the fixture
    // exercises RocksDB's (LZ4-compressed) tables as well.
    {
        let mut opts = Options::default();
        opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        let families = DB::list_cf(&opts, &work).unwrap();
        let db = DB::open_cf(&opts, &work, &families).unwrap();
        for cf in &families {
            db.flush_cf(db.cf_handle(cf).unwrap()).unwrap();
        }
    }
    let dir = fixture_dir_of(version);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // RocksDB keeps its last two options files; the store opens with either, keep one.
    let options = std::fs::read_dir(&work).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    let newest_options = options.filter(|n| n.starts_with("OPTIONS-")).max().unwrap();
    copy_dir(&work, &dir, |n| is_data_file(n) && (!n.starts_with("OPTIONS-") || n == newest_options));
    std::fs::remove_dir_all(&work).unwrap();
    let copy = tempdir("fixture-read");
    copy_dir(&dir, &copy, |_| true);
    std::fs::write(expected_path_of(version), read_fixture(&copy).join("\n") + "\n").unwrap();
    std::fs::remove_dir_all(&copy).unwrap();
}

/// Everything this build reads from a copy of the fixture, one fact a line. ADK timestamps
/// are left out: they are formatted in the process's time zone.
fn read_fixture(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let records = raw_cf(dir, "episodes");
    let m = Mnem::open(dir.to_str().unwrap(), READ_ONLY).unwrap();
    for (key, value) in &records {
        let (ns, id) = split_episode_key(key);
        let mut stored = Vec::new();
        Episode::decode(id, value).unwrap().write_json(&mut stored);
        let visible = m.get_episode(&ns, &id).unwrap().map(|e| {
            let mut j = Vec::new();
            e.write_json(&mut j);
            String::from_utf8(j).unwrap()
        });
        out.push(format!("record {:?} {}", ns, String::from_utf8(stored).unwrap()));
        out.push(format!("visible {id}: {}", visible.is_some()));
    }
    for ns in fixture_namespaces() {
        for session in ["s1", "s2", "__unknown_session_id__", "ß", "none"] {
            out.push(format!("session {ns:?} {session:?}: {:?}", m.session_event_ids(&ns, session).unwrap()));
        }
        for q in ["heron", "stone river", "日本", "remembered", "absent"] {
            let raw = String::from_utf8(m.search(&ns, q).unwrap()).unwrap();
            let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
            let mut line = raw.clone();
            for mem in v["memories"].as_array().unwrap().iter().filter(|m| m["timestamp"].is_string()) {
                let local = serde_json::to_string(&mem["timestamp"]).unwrap();
                line = line.replacen(&format!("\"timestamp\":{local}"), "\"timestamp\":\"(local time)\"", 1);
            }
            out.push(format!("search {ns:?} {q:?}: {line}"));
        }
        let kw: Vec<String> = m
            .keyword_search(&ns, &KeywordQuery::new("heron stone"))
            .unwrap()
            .iter()
            .map(|r| r.record.id.to_string())
            .collect();
        out.push(format!("keyword {ns:?}: {kw:?}"));
        let hq = HybridQuery { vector: Some(vec![1.0, 0.1, 0.4]), semantic_weight: 1.0, ..HybridQuery::new("heron") };
        let hy: Vec<String> = m.hybrid_search(&ns, &hq).unwrap().iter().map(|r| r.record.id.to_string()).collect();
        out.push(format!("semantic {ns:?}: {hy:?}"));
    }
    out
}

/// The namespace and UUID of an episodes key, parsed by the documented layout.
fn split_episode_key(key: &[u8]) -> (Namespace, Uuid) {
    let mut at = 0;
    let mut part = || {
        let n = u32::from_be_bytes(key[at..at + 4].try_into().unwrap()) as usize;
        let s = std::str::from_utf8(&key[at + 4..at + 4 + n]).unwrap().to_string();
        at += 4 + n;
        s
    };
    let (app, user) = (part(), part());
    assert_eq!(key.len(), at + 16, "episodes key: prefix then 16 bytes");
    (Namespace::new(app, user), Uuid::from_slice(&key[at..]).unwrap())
}

#[test]
fn the_format_v1_fixture_opens_and_reads_the_same() {
    if std::env::var_os("MNEM_UPDATE_FIXTURES").is_some_and(|v| v == "1") && FORMAT_VERSION == 1 {
        regenerate_fixture(1);
    }
    assert!(
        fixture_dir().join("CURRENT").is_file(),
        "tests/fixtures/format-v1 is missing; MNEM_UPDATE_FIXTURES=1 writes it"
    );
    // Opening may write (the lock file, RocksDB's logs), so work on a copy.
    let dir = tempdir("fixture");
    copy_dir(&fixture_dir(), &dir, |_| true);
    // A format-1 store has no indexes: a read-only open cannot build them and says so; the
    // first read-write open builds them, once, and records format 2.
    let e = Mnem::open(dir.to_str().unwrap(), READ_ONLY).err().expect("a read-only open of format 1 fails");
    assert_eq!(e.status, mnem::Status::Incompatible);
    assert!(e.message.contains("format 1") && e.message.contains("read-write"), "{}", e.message);
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        let s = m.stats();
        assert_eq!((s.opened_format, s.indexes_built), (1, 2), "both namespaces indexed at the upgrade");
    }
    let meta = raw_cf(&dir, "meta");
    let current = (b"format_version".to_vec(), FORMAT_VERSION.to_le_bytes().to_vec());
    assert!(meta.contains(&current), "upgraded to the current format");
    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
    assert_eq!((m.stats().opened_format, m.stats().indexes_built), (FORMAT_VERSION, 0), "the upgrade happens once");
    drop(m);
    let got = read_fixture(&dir);
    if std::env::var_os("MNEM_UPDATE_FIXTURES").is_some_and(|v| v == "expected") {
        std::fs::write(expected_path(), got.join("\n") + "\n").unwrap();
    }
    let want = std::fs::read_to_string(expected_path()).unwrap();
    let want: Vec<&str> = want.lines().collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            w,
            "tests/fixtures/format-v1.expected line {}: this build reads the v1 store differently. A format \
             change must keep reading format 1 as before; a deliberate change of search behaviour may \
             rewrite the expected reading (MNEM_UPDATE_FIXTURES=expected; review its diff)",
            i + 1
        );
    }
    assert_eq!(got.len(), want.len(), "tests/fixtures/format-v1.expected: a different number of facts");

    // The upgraded store keeps the rules of its records: tombstoned ADK ids stay
    // blocked, deleted episode ids stay unusable, the namespace's vector dimension holds.
    let [ns, _] = fixture_namespaces();
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        assert_eq!(m.add_events(&ns, "s1", &event_line("e2", "back again", 1.0), "").unwrap(), 0);
        let e =
            m.put_episodes(&ns, vec![EpisodeInput { id: Some(fixture_id(4)), ..EpisodeInput::default() }]).unwrap_err();
        assert!(e.message.contains("deleted"), "{}", e.message);
        let wrong_dim = EpisodeInput { embedding: Some(vec![1.0, 2.0]), ..EpisodeInput::default() };
        assert!(m.put_episodes(&ns, vec![wrong_dim]).unwrap_err().message.contains("have 3"));
        let update =
            EpisodeInput { id: Some(fixture_id(3)), primary: "revision four".into(), ..EpisodeInput::default() };
        m.put_episodes(&ns, vec![update]).unwrap();
        assert_eq!(m.get_episode(&ns, &fixture_id(3)).unwrap().unwrap().revision, 4);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The facts of `tests/fixtures/format-v{version}.expected`, compared line by line with `got`.
fn assert_reads_as_expected(version: u32, got: &[String]) {
    let want = std::fs::read_to_string(expected_path_of(version)).unwrap();
    let want: Vec<&str> = want.lines().collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            w,
            "tests/fixtures/format-v{version}.expected line {}: this build reads the store differently",
            i + 1
        );
    }
    assert_eq!(got.len(), want.len(), "tests/fixtures/format-v{version}.expected: a different number of facts");
}

/// A format-2 store (indexes persisted, every posting written with its records) reads the
/// same read-only, as it is, and after a read-write open, which records the current format
/// without building anything.
#[test]
fn the_format_v2_fixture_opens_and_reads_the_same() {
    if std::env::var_os("MNEM_UPDATE_FIXTURES").is_some_and(|v| v == "1") && FORMAT_VERSION == 2 {
        regenerate_fixture(2);
    }
    assert!(
        fixture_dir_of(2).join("CURRENT").is_file(),
        "tests/fixtures/format-v2 is missing; a build of format 2 writes it with MNEM_UPDATE_FIXTURES=1"
    );
    let dir = tempdir("fixture-v2");
    copy_dir(&fixture_dir_of(2), &dir, |_| true);
    assert_reads_as_expected(2, &read_fixture(&dir));
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        let s = m.stats();
        assert_eq!((s.opened_format, s.indexes_built), (2, 0), "format 2 has its indexes: nothing is built");
    }
    let meta = raw_cf(&dir, "meta");
    assert!(meta.contains(&(b"format_version".to_vec(), FORMAT_VERSION.to_le_bytes().to_vec())), "format recorded");
    assert_reads_as_expected(2, &read_fixture(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A format-3 store (its ADK index without char pairs) reads the same read-only, as it is
/// (non-ASCII tokens found by their chars, every candidate's text checked), and after a
/// read-write open, which adds the pairs from the index's own texts: every search answers as
/// before, and the pairs are those this build writes for the same writes.
#[test]
fn the_format_v3_fixture_gains_char_pairs_and_reads_the_same() {
    if std::env::var_os("MNEM_UPDATE_FIXTURES").is_some_and(|v| v == "1") && FORMAT_VERSION == 3 {
        regenerate_fixture(3);
    }
    assert!(
        fixture_dir_of(3).join("CURRENT").is_file(),
        "tests/fixtures/format-v3 is missing; a build of format 3 writes it with MNEM_UPDATE_FIXTURES=1"
    );
    let dir = tempdir("fixture-v3");
    copy_dir(&fixture_dir_of(3), &dir, |_| true);
    assert!(pair_postings(&dir).is_empty(), "format 3 has no char pairs");
    assert_reads_as_expected(3, &read_fixture(&dir));
    let by_chars = adk_answers(&dir);
    let found = by_chars.iter().filter(|a| a.contains("\"id\"")).count();
    assert!(found > MULTILINGUAL_QUERIES.len() / 2, "many queries find something: {found}");
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        assert_eq!((m.stats().opened_format, m.stats().indexes_built), (3, 0), "nothing rebuilt from records");
    }
    let meta = raw_cf(&dir, "meta");
    assert!(meta.contains(&(b"format_version".to_vec(), FORMAT_VERSION.to_le_bytes().to_vec())), "format recorded");
    let pairs = pair_postings(&dir);
    assert!(!pairs.is_empty(), "the upgrade adds char pairs");
    assert_eq!(adk_answers(&dir), by_chars, "searches by char pairs answer as by chars");
    assert_reads_as_expected(3, &read_fixture(&dir));

    let fresh = tempdir("fixture-v3-fresh");
    {
        let m = Mnem::open(fresh.to_str().unwrap(), CREATE).unwrap();
        write_fixture_contents(&m);
        write_multilingual_contents(&m);
    }
    assert_eq!(pair_postings(&fresh), pairs, "the upgrade adds the pairs this build writes");
    assert_eq!(adk_answers(&fresh), by_chars);

    // An upgrade begun again (the format record set back) leaves documents that have their
    // pairs as they are.
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        m.store().set_format_version_for_test(3).unwrap();
    }
    drop(Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap());
    assert_eq!(pair_postings(&dir), pairs);
    assert_eq!(adk_answers(&dir), by_chars);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&fresh).unwrap();
}

/// A format-4 store (before the namespace's vector record named its model) reads the same
/// read-only and after a read-write open, which only records the new format: its vectors
/// count as the caller's (no model named), so a caller's vectors still join them and the
/// built-in model's would not.
#[test]
fn the_format_v4_fixture_opens_and_reads_the_same() {
    if std::env::var_os("MNEM_UPDATE_FIXTURES").is_some_and(|v| v == "1") && FORMAT_VERSION == 4 {
        regenerate_fixture(4);
    }
    assert!(
        fixture_dir_of(4).join("CURRENT").is_file(),
        "tests/fixtures/format-v4 is missing; a build of format 4 writes it with MNEM_UPDATE_FIXTURES=1"
    );
    let dir = tempdir("fixture-v4");
    copy_dir(&fixture_dir_of(4), &dir, |_| true);
    assert_reads_as_expected(4, &read_fixture(&dir));
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        let s = m.stats();
        assert_eq!((s.opened_format, s.indexes_built), (4, 0), "nothing is rebuilt");
    }
    let meta = raw_cf(&dir, "meta");
    assert!(meta.contains(&(b"format_version".to_vec(), FORMAT_VERSION.to_le_bytes().to_vec())), "format recorded");
    assert_reads_as_expected(4, &read_fixture(&dir));
    {
        let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
        let [ns, _] = fixture_namespaces();
        let caller = EpisodeInput { embedding: Some(vec![0.5, 0.5, 0.0]), ..EpisodeInput::default() };
        m.put_episodes(&ns, vec![caller]).unwrap();
        let named = EpisodeInput {
            embedding: Some(vec![0.5, 0.5, 0.0]),
            embedding_model: Some("some-model".into()),
            ..EpisodeInput::default()
        };
        let err = m.put_episodes(&ns, vec![named]).unwrap_err();
        assert_eq!(err.status, Status::InvalidArgument);
        assert!(err.message.contains("one model's vectors"), "{}", err.message);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An upgrade interrupted part-way leaves format 1 recorded and some index keys written;
/// the next read-write open clears them and builds the indexes again, so searches read as
/// after a whole upgrade. Simulated: an upgraded copy is set back to format 1 with a stray
/// index key (a posting of a document that does not exist) and a missing one.
#[test]
fn an_interrupted_upgrade_starts_over() {
    let dir = tempdir("upgrade-again");
    copy_dir(&fixture_dir(), &dir, |_| true);
    let path = dir.to_str().unwrap();
    drop(Mnem::open(path, OpenOptions::default()).unwrap());
    let want = read_fixture(&dir);
    let [ns, _] = fixture_namespaces();
    let stray = keys::index_key(&ns.prefix(), 0x11, &[&5u32.to_be_bytes()[..], b"stray", &[7u8; 16]].concat());
    {
        let m = Mnem::open(path, OpenOptions::default()).unwrap();
        m.store().set_format_version_for_test(1).unwrap();
        m.store().put_raw_for_test("index", &stray, &[1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        let counters = keys::index_key(&ns.prefix(), 0x12, &[0]);
        m.store().put_raw_for_test("index", &counters, &[0u8; 16]).unwrap();
    }
    let m = Mnem::open(path, OpenOptions::default()).unwrap();
    assert_eq!((m.stats().opened_format, m.stats().indexes_built), (1, 2));
    drop(m);
    assert!(!raw_cf(&dir, "index").iter().any(|(k, _)| k == &stray), "the stray key is gone");
    assert_eq!(read_fixture(&dir), want, "the store reads as after a whole upgrade");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An `adk` key as docs/FORMAT.md spells it: the namespace prefix, the kind's tag, the rest.
fn adk_key(prefix: &[u8], tag: u8, rest: &[u8]) -> Vec<u8> {
    [prefix, &[tag], rest].concat()
}

/// docs/FORMAT.md's tags of `adk` keys.
mod adk_tag {
    pub const NAMESPACE: u8 = 0x00;
    pub const BUCKET: u8 = 0x01;
    pub const ORDER: u8 = 0x02;
    pub const TOMBSTONE: u8 = 0x03;
}

/// An order key's suffix (docs/FORMAT.md): u32be position, u64be sequence.
fn order_suffix(position: u32, seq: u64) -> Vec<u8> {
    [&position.to_be_bytes()[..], &seq.to_be_bytes()].concat()
}
