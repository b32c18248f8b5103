//! Every status a C function can return is listed in its comment in `include/mnem.h`
//! ("Returns OK; ..."). Two checks, both read the header itself:
//! - structural rules derived from each signature (a status-returning function runs behind
//!   the panic guard, a store function reaches RocksDB, a mutable store is written, an
//!   `out_len` is an output buffer);
//! - every function driven through the C ABI with bad and good inputs on healthy, read-only
//!   and damaged stores: every status observed must be listed.

use mnem::ffi::*;
use mnem::keys::episode_key;
use mnem::{Namespace, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};

const APP: &str = "app";
const USER: &str = "user";
const EPISODE_ID: &str = "0190f0a0-0000-7000-8000-000000000001";
const EVENT: &str = r#"{"id":"e1","author":"user","timestamp":1700000000.0,"content":{"role":"user","parts":[{"text":"hello world"}]}}"#;

/// One `mnem_*` function of the header.
#[derive(Debug)]
struct Func {
    name: String,
    /// The declaration, from the return type to `;`, on one line, without `struct `.
    decl: String,
    /// Statuses named in the comment's "Returns ..." list.
    documented: BTreeSet<&'static str>,
}

impl Func {
    fn returns_status(&self) -> bool {
        self.decl.starts_with("mnem_status ")
    }
    /// The names of the `mnem_str` parameters, in order.
    fn str_params(&self) -> Vec<String> {
        let params = &self.decl[self.decl.find('(').unwrap() + 1..self.decl.rfind(')').unwrap()];
        params
            .split(',')
            .map(str::trim)
            .filter_map(|p| p.strip_prefix("mnem_str "))
            .map(|n| n.trim().to_string())
            .collect()
    }
    fn takes_store(&self) -> bool {
        self.decl.contains("mnem_store *store")
    }
    /// A mutable store: the function may write (`mnem_flush` only syncs, and is a no-op on a
    /// read-only handle).
    fn writes(&self) -> bool {
        self.decl.contains("(mnem_store *store") && self.name != "mnem_flush"
    }
    fn has_output_buffer(&self) -> bool {
        self.decl.contains("size_t *out_len") || self.decl.contains("size_t *out_ids_len")
    }
    /// Exported only by fault-injection builds; no storage behind them.
    fn is_fault_hook(&self) -> bool {
        self.name.starts_with("mnem_debug_")
    }
}

fn header() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mnem.h")).expect("include/mnem.h")
}

fn status_named(token: &str) -> Option<&'static str> {
    let token = token.strip_prefix("MNEM_STATUS_").unwrap_or(token);
    Status::ALL.iter().map(|s| s.name()).find(|n| *n == token)
}

/// The status list of a comment: from the first "Returns" followed by a status name to the end.
fn returns_list(doc: &str) -> Option<&str> {
    doc.match_indices("Returns ").map(|(at, _)| &doc[at + "Returns ".len()..]).find(|rest| {
        let first = rest.split(|c: char| !(c.is_ascii_uppercase() || c == '_')).next().unwrap_or("");
        status_named(first).is_some()
    })
}

/// The `mnem_*` function declarations of the header, each with the comment right above it.
fn functions(header: &str) -> BTreeMap<String, Func> {
    let mut out = BTreeMap::new();
    let mut doc: Vec<&str> = Vec::new();
    let mut lines = header.lines();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix("//") {
            doc.push(d.trim());
            continue;
        }
        let name = t.split('(').next().unwrap_or("").split_whitespace().last().unwrap_or("").trim_start_matches('*');
        if !t.starts_with('#') && t.contains('(') && name.starts_with("mnem_") {
            let mut decl = t.to_string();
            while !decl.ends_with(';') {
                decl.push(' ');
                decl.push_str(lines.next().expect("declaration ends with ;").trim());
            }
            // `struct mnem_str app` reads as `mnem_str app`.
            let decl = decl.replace("struct ", "");
            let text = doc.join(" ");
            let documented = match returns_list(&text) {
                Some(list) => list
                    .split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .filter_map(status_named)
                    .collect(),
                None => BTreeSet::new(),
            };
            out.insert(name.to_string(), Func { name: name.to_string(), decl, documented });
        }
        doc.clear();
    }
    out
}

/// Every status a RocksDB error can become (the match lists every `ErrorKind`, so a new kind
/// in a RocksDB upgrade fails to compile here).
fn storage_statuses() -> BTreeSet<&'static str> {
    use rocksdb::ErrorKind::*;
    let kinds = [
        NotFound,
        Corruption,
        NotSupported,
        InvalidArgument,
        IOError,
        MergeInProgress,
        Incomplete,
        ShutdownInProgress,
        TimedOut,
        Aborted,
        Busy,
        Expired,
        TryAgain,
        CompactionTooLarge,
        ColumnFamilyDropped,
        Unknown,
    ];
    for k in &kinds {
        match k {
            NotFound | Corruption | NotSupported | InvalidArgument | IOError | MergeInProgress | Incomplete
            | ShutdownInProgress | TimedOut | Aborted | Busy | Expired | TryAgain | CompactionTooLarge
            | ColumnFamilyDropped | Unknown => {}
        }
    }
    kinds.iter().map(|k| mnem::store::storage_status(k).name()).collect()
}

/// What the structure of a declaration says the function must document.
fn required(f: &Func) -> BTreeSet<&'static str> {
    let mut need = BTreeSet::new();
    if !f.returns_status() {
        return need;
    }
    need.extend(["INVALID_ARGUMENT", "INTERNAL"]);
    if !f.is_fault_hook() {
        need.insert("OK");
    }
    // `mnem_stats` reads in-memory counters only, `mnem_set_embedder` and
    // `mnem_set_named_embedder` set the handle's embedder: they never reach the storage.
    let no_storage = ["mnem_stats", "mnem_set_embedder", "mnem_set_named_embedder"];
    if (f.takes_store() || f.name == "mnem_open") && !f.is_fault_hook() && !no_storage.contains(&f.name.as_str()) {
        need.extend(storage_statuses());
        need.insert("CORRUPTION");
    }
    if f.writes() && !f.is_fault_hook() {
        need.insert("READ_ONLY");
    }
    if f.has_output_buffer() {
        need.insert("BUFFER_TOO_SMALL");
    }
    need
}

#[test]
fn every_function_documents_what_its_signature_implies() {
    let funcs = functions(&header());
    assert!(funcs.len() >= 16, "found only {:?}", funcs.keys());
    let mut missing = Vec::new();
    for f in funcs.values() {
        let need = required(f);
        let lacking: Vec<_> = need.difference(&f.documented).collect();
        if !lacking.is_empty() {
            missing.push(format!("{}: {lacking:?}", f.name));
        }
    }
    assert!(missing.is_empty(), "include/mnem.h does not list every status:\n{}", missing.join("\n"));
}

// ---- driving every function through the C ABI ----

fn s(x: &str) -> mnem_str {
    mnem_str { ptr: x.as_ptr(), len: x.len() }
}

fn new_error() -> mnem_error {
    mnem_error { code: -1, detail: 7, message: [1; MNEM_ERROR_MESSAGE_CAP] }
}

fn message(e: &mnem_error) -> String {
    let bytes: Vec<u8> = e.message.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A valid value for a `mnem_str` parameter, by its name in the header.
fn valid(param: &str) -> String {
    match param {
        "app" => APP.into(),
        "user" => USER.into(),
        "session_id" => "s1".into(),
        "events_jsonl" => EVENT.into(),
        "custom_metadata_json" => String::new(),
        "memory_id" => "e1".into(),
        "query" => "hello".into(),
        "query_json" => r#"{"text":"hello"}"#.into(),
        "episodes_jsonl" => format!(r#"{{"id":"{EPISODE_ID}","context":"hello there"}}"#),
        "ids_jsonl" => format!("\"{EPISODE_ID}\""),
        "list_query_json" => r#"{"limit":10}"#.into(),
        "cursor" => String::new(),
        "model" => "model-a".into(),
        "dest" => backup_dir().to_string_lossy().into_owned(),
        "export_jsonl" => concat!(
            r#"{"type":"header","mnem_export":1,"format":2,"scope":"store"}"#,
            "\n",
            r#"{"type":"namespace","app_name":"app","user_id":"imported","next_bucket":0,"dimension":null}"#,
            "\n",
            r#"{"type":"end","namespaces":1,"episodes":0}"#
        )
        .into(),
        other => panic!("no valid value for parameter `{other}`: teach this test"),
    }
}

/// Where `mnem_backup` writes (its first call succeeds, later ones find it existing).
fn backup_dir() -> PathBuf {
    std::env::temp_dir().join(format!("mnem-statuses-{}-backup", std::process::id()))
}

/// The inputs of one call of a store function.
struct Call {
    store: *mut mnem_store,
    args: Vec<mnem_str>,
    /// Capacity of the output buffer (`out` or `out_ids`).
    cap: usize,
    null_out: bool,
    null_out_len: bool,
}

/// Whether `mnem_hybrid_search_with` is driven with `failing_embedder` (else with none).
static FAIL_EMBEDDER: AtomicBool = AtomicBool::new(false);

/// An embedder that always fails: `mnem_hybrid_search_with` must report it.
unsafe extern "C" fn failing_embedder(
    _: *mut std::ffi::c_void,
    _: mnem_str,
    _: *mut f32,
    _: usize,
    _: *mut usize,
    err: *mut mnem_error,
) -> i32 {
    let msg = b"no model\0";
    // SAFETY: mnem passes a writable `mnem_error`.
    unsafe { std::ptr::copy_nonoverlapping(msg.as_ptr().cast(), (*err).message.as_mut_ptr(), msg.len()) };
    1
}

/// Call `name` and check the rules every call keeps: `err.code` is the status, and a
/// failed call leaves `*out_len` (unless BUFFER_TOO_SMALL) and counters at 0.
fn call(name: &str, c: &Call) -> Status {
    let mut err = new_error();
    let mut buf = vec![0u8; c.cap];
    let out = if c.null_out { null_mut() } else { buf.as_mut_ptr() };
    let mut len = 77usize;
    let out_len: *mut usize = if c.null_out_len { null_mut() } else { &mut len };
    let mut count = 77u64;
    let (store, a) = (c.store, &c.args);
    let st = match name {
        "mnem_flush" => mnem_flush(store, &mut err),
        "mnem_add_session" => mnem_add_session(store, a[0], a[1], a[2], a[3], &mut count, &mut err),
        "mnem_add_events" => mnem_add_events(store, a[0], a[1], a[2], a[3], a[4], &mut count, &mut err),
        "mnem_delete_memory" => mnem_delete_memory(store, a[0], a[1], a[2], &mut count, &mut err),
        "mnem_search" => mnem_search(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_put_episodes" => mnem_put_episodes(store, a[0], a[1], a[2], out, c.cap, &mut err),
        "mnem_put_episodes_v2" => mnem_put_episodes_v2(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_delete_episodes" => mnem_delete_episodes(store, a[0], a[1], a[2], &mut count, &mut err),
        "mnem_keyword_search" => mnem_keyword_search(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_lexical_page" => mnem_lexical_page(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_substring_search" => mnem_substring_search(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_hybrid_search" => mnem_hybrid_search(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_hybrid_search_with" => {
            let embed = if FAIL_EMBEDDER.load(Ordering::SeqCst) { Some(failing_embedder as _) } else { None };
            mnem_hybrid_search_with(store, a[0], a[1], a[2], embed, null_mut(), out, c.cap, out_len, &mut err)
        }
        "mnem_recall" => mnem_recall(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_set_embedder" => mnem_set_embedder(store, None, null_mut(), &mut err),
        "mnem_set_named_embedder" => {
            // With an embedder, so that the name is checked; removed at once, so that no
            // later call of another function embeds.
            let st = mnem_set_named_embedder(store, a[0], Some(failing_embedder as _), null_mut(), &mut err);
            mnem_set_embedder(store, None, null_mut(), &mut new_error());
            st
        }
        "mnem_stats" => mnem_stats(store, out, c.cap, out_len, &mut err),
        "mnem_forget_namespace" => mnem_forget_namespace(store, a[0], a[1], &mut err),
        "mnem_compact" => mnem_compact(store, &mut err),
        "mnem_delete_session" => mnem_delete_session(store, a[0], a[1], a[2], &mut count, &mut err),
        "mnem_get_episodes" => mnem_get_episodes(store, a[0], a[1], a[2], out, c.cap, out_len, &mut err),
        "mnem_list_namespaces" => mnem_list_namespaces(store, a[0], out, c.cap, out_len, &mut err),
        "mnem_namespace_stats" => mnem_namespace_stats(store, a[0], a[1], out, c.cap, out_len, &mut err),
        "mnem_backup" => mnem_backup(store, a[0], &mut err),
        "mnem_check" => mnem_check(store, out, c.cap, out_len, &mut err),
        "mnem_export" => mnem_export(store, a[0], a[1], 0, out, c.cap, out_len, &mut err),
        "mnem_export_page" => mnem_export_page(store, a[0], a[1], 0, a[2], 1 << 20, out, c.cap, out_len, &mut err),
        "mnem_import" => mnem_import(store, a[0], &mut count, &mut err),
        other => panic!("{other} takes a store but this test has no driver for it: add one"),
    };
    assert_eq!(err.code, st as i32, "{name}: err.code");
    assert_eq!(err.detail, 0, "{name}: err.detail");
    if st != Status::Ok {
        assert!(!message(&err).is_empty(), "{name}: {} without a message", st.name());
        if count != 77 {
            assert_eq!(count, 0, "{name}: counter after {}", st.name());
        }
        if st != Status::BufferTooSmall && len != 77 {
            assert_eq!(len, 0, "{name}: *out_len after {}", st.name());
        }
    }
    st
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mnem-statuses-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn open(path: &str, flags: u32) -> (Status, *mut mnem_store) {
    let mut store = null_mut();
    let mut err = new_error();
    let st = mnem_open(s(path), flags, s(""), &mut store, &mut err);
    assert_eq!(err.code, st as i32);
    assert_eq!(st == Status::Ok, !store.is_null(), "mnem_open: handle iff OK");
    (st, store)
}

fn open_ok(path: &Path, flags: u32) -> *mut mnem_store {
    let (st, store) = open(path.to_str().unwrap(), flags);
    assert_eq!(st, Status::Ok, "opening {path:?}");
    store
}

/// A store whose episode record and ADK bucket entry are not what mnem wrote.
fn damaged_store(dir: &Path) {
    let h = open_ok(dir, MNEM_OPEN_CREATE);
    let put = valid("episodes_jsonl");
    let args = vec![s(APP), s(USER), s(&put)];
    assert_eq!(
        call("mnem_put_episodes", &Call { store: h, args, cap: 0, null_out: true, null_out_len: false }),
        Status::Ok
    );
    let mut n = 0;
    let st = mnem_add_session(h, s(APP), s(USER), s("s1"), s(EVENT), &mut n, null_mut());
    assert_eq!((st, n), (Status::Ok, 1));
    mnem_free(h);

    let prefix = Namespace::new(APP, USER).prefix();
    let id = uuid::Uuid::parse_str(EPISODE_ID).unwrap();
    let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), dir, ["default", "meta", "episodes", "adk", "index"])
        .expect("raw RocksDB open of the store");
    db.put_cf(db.cf_handle("episodes").unwrap(), episode_key(&prefix, &id), b"\x07 not a record").unwrap();
    db.put_cf(db.cf_handle("adk").unwrap(), [&prefix[..], &[0x01], b"s1"].concat(), b"?").unwrap();
    // The ADK index's keys of `e1` (docs/FORMAT.md), at bucket 0 seq 0, are malformed: its
    // entry (tag 0x20), which searches read, and its memory-id key (tag 0x25), where
    // `delete_memory` finds its targets.
    let place = [0u8; 12];
    db.put_cf(db.cf_handle("index").unwrap(), mnem::keys::index_key(&prefix, 0x20, &place), b"?").unwrap();
    let mut memid = 2u32.to_be_bytes().to_vec();
    memid.extend_from_slice(b"e1");
    memid.extend_from_slice(&place);
    db.put_cf(db.cf_handle("index").unwrap(), mnem::keys::index_key(&prefix, 0x25, &memid), b"?").unwrap();
    db.flush_cf(db.cf_handle("index").unwrap()).unwrap();
    db.flush_cf(db.cf_handle("episodes").unwrap()).unwrap();
    db.flush_cf(db.cf_handle("adk").unwrap()).unwrap();
}

fn record(seen: &mut BTreeMap<String, BTreeSet<&'static str>>, name: &str, st: Status) {
    seen.entry(name.to_string()).or_default().insert(st.name());
}

fn drive_open(seen: &mut BTreeMap<String, BTreeSet<&'static str>>) {
    let mut rec = |st: Status| record(seen, "mnem_open", st);
    let (st, h) = open(":memory:", MNEM_OPEN_CREATE);
    rec(st);
    mnem_free(h);
    let mut err = new_error();
    rec(mnem_open(s(":memory:"), MNEM_OPEN_CREATE, s(""), null_mut(), &mut err));
    let mut h = null_mut();
    let bad = mnem_str { ptr: b"\xff".as_ptr(), len: 1 };
    let null = mnem_str { ptr: std::ptr::null(), len: 3 };
    for (path, flags, opts) in [
        (bad, MNEM_OPEN_CREATE, s("")),
        (null, MNEM_OPEN_CREATE, s("")),
        (s(":memory:"), MNEM_OPEN_CREATE, bad),
        (s(":memory:"), MNEM_OPEN_CREATE, s(r#"{"sync":true}"#)),
        (s(":memory:"), 8, s("")),
        (s(":memory:"), MNEM_OPEN_CREATE | MNEM_OPEN_READ_ONLY, s("")),
        (s(":memory:"), MNEM_OPEN_READ_ONLY, s("")),
        (s(""), MNEM_OPEN_CREATE, s("")),
    ] {
        let st = mnem_open(path, flags, opts, &mut h, &mut err);
        rec(st);
        mnem_free(h);
    }

    let missing = temp_dir("missing");
    rec(open(missing.to_str().unwrap(), 0).0);
    rec(open(missing.to_str().unwrap(), MNEM_OPEN_READ_ONLY).0);

    let file = temp_dir("file");
    std::fs::write(&file, b"not a directory").unwrap();
    rec(open(file.to_str().unwrap(), MNEM_OPEN_CREATE).0);
    std::fs::remove_file(&file).unwrap();

    let busy = temp_dir("busy");
    let first = open_ok(&busy, MNEM_OPEN_CREATE);
    rec(open(busy.to_str().unwrap(), 0).0);
    rec(open(busy.to_str().unwrap(), MNEM_OPEN_READ_ONLY).0);
    mnem_free(first);

    let newer = temp_dir("newer");
    {
        let opts = mnem::OpenOptions { create: true, ..Default::default() };
        let m = mnem::Mnem::open(newer.to_str().unwrap(), opts).unwrap();
        m.store().set_format_version_for_test(mnem::FORMAT_VERSION + 1).unwrap();
    }
    rec(open(newer.to_str().unwrap(), 0).0);
    rec(open(newer.to_str().unwrap(), MNEM_OPEN_READ_ONLY).0);

    let malformed = temp_dir("malformed");
    mnem_free(open_ok(&malformed, MNEM_OPEN_CREATE));
    {
        let db = rocksdb::DB::open_cf(
            &rocksdb::Options::default(),
            &malformed,
            ["default", "meta", "episodes", "adk", "index"],
        )
        .unwrap();
        db.put_cf(db.cf_handle("meta").unwrap(), b"format_version", b"bad").unwrap();
    }
    rec(open(malformed.to_str().unwrap(), 0).0);

    for d in [busy, newer, malformed] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn every_status_a_function_returns_is_documented() {
    let funcs = functions(&header());
    let mut seen: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    drive_open(&mut seen);

    let healthy_dir = temp_dir("healthy");
    let healthy = open_ok(&healthy_dir, MNEM_OPEN_CREATE);
    let ro_dir = temp_dir("ro");
    mnem_free(open_ok(&ro_dir, MNEM_OPEN_CREATE));
    let read_only = open_ok(&ro_dir, MNEM_OPEN_READ_ONLY);
    let damaged_dir = temp_dir("damaged");
    damaged_store(&damaged_dir);
    let damaged = open_ok(&damaged_dir, 0);

    let mut store_funcs: Vec<&Func> =
        funcs.values().filter(|f| f.returns_status() && f.takes_store() && !f.is_fault_hook()).collect();
    // Forgetting the namespace removes the damage the other drivers must meet: it goes last.
    store_funcs.sort_by_key(|f| f.name == "mnem_forget_namespace");
    assert!(store_funcs.len() >= 11, "{store_funcs:?}");
    for f in &store_funcs {
        let params = f.str_params();
        let values: Vec<String> = params.iter().map(|p| valid(p)).collect();
        let good: Vec<mnem_str> = values.iter().map(|v| s(v)).collect();
        let base =
            |store, args: Vec<mnem_str>| Call { store, args, cap: 1 << 16, null_out: false, null_out_len: false };
        let mut run = |c: Call| record(&mut seen, &f.name, call(&f.name, &c));

        run(base(healthy, good.clone()));
        run(Call { cap: 0, ..base(healthy, good.clone()) });
        run(Call { cap: 1, ..base(healthy, good.clone()) });
        run(Call { null_out: true, cap: 5, ..base(healthy, good.clone()) });
        run(Call { null_out_len: true, ..base(healthy, good.clone()) });
        run(base(null_mut(), good.clone()));
        for i in 0..good.len() {
            for bad in [mnem_str { ptr: b"{\xff".as_ptr(), len: 2 }, mnem_str { ptr: std::ptr::null(), len: 3 }] {
                let mut args = good.clone();
                args[i] = bad;
                run(base(healthy, args));
            }
        }
        run(base(read_only, good.clone()));
        run(base(damaged, good.clone()));
        if f.name == "mnem_hybrid_search_with" {
            FAIL_EMBEDDER.store(true, Ordering::SeqCst);
            run(base(healthy, good.clone()));
            FAIL_EMBEDDER.store(false, Ordering::SeqCst);
        }
    }
    for h in [healthy, read_only, damaged] {
        mnem_free(h);
    }
    for d in [healthy_dir, ro_dir, damaged_dir] {
        std::fs::remove_dir_all(d).unwrap();
    }
    let _ = std::fs::remove_dir_all(backup_dir());

    // The driver must reach what it claims to: otherwise a missing status could hide.
    for f in &store_funcs {
        let got = &seen[&f.name];
        let mut want = BTreeSet::from(["OK", "INVALID_ARGUMENT"]);
        // These read no record or index value (flush, stats, forget, backup, import, the
        // namespace list reads keys and counters) or report damage in their output (check).
        let no_record_reads = [
            "mnem_flush",
            "mnem_stats",
            "mnem_forget_namespace",
            "mnem_compact",
            "mnem_backup",
            "mnem_import",
            "mnem_list_namespaces",
            "mnem_check",
            "mnem_set_embedder",
            "mnem_set_named_embedder",
        ];
        if !no_record_reads.contains(&f.name.as_str()) {
            want.insert("CORRUPTION");
        }
        if f.writes() {
            want.insert("READ_ONLY");
        }
        if f.has_output_buffer() {
            want.insert("BUFFER_TOO_SMALL");
        }
        if f.name == "mnem_hybrid_search_with" {
            want.insert("EMBEDDER_FAILED");
        }
        assert!(got.is_superset(&want), "{}: observed {got:?}, expected at least {want:?}", f.name);
    }
    let want_open = BTreeSet::from(["OK", "INVALID_ARGUMENT", "NOT_FOUND", "BUSY", "IO", "CORRUPTION", "INCOMPATIBLE"]);
    assert!(seen["mnem_open"].is_superset(&want_open), "mnem_open: observed {:?}", seen["mnem_open"]);

    let mut undocumented = Vec::new();
    for (name, statuses) in &seen {
        eprintln!("{name} returned {statuses:?}");
        let f = funcs.get(name).unwrap_or_else(|| panic!("{name} is not in include/mnem.h"));
        let lacking: Vec<_> = statuses.difference(&f.documented).collect();
        if !lacking.is_empty() {
            undocumented.push(format!("{name} returned {lacking:?}; documents {:?}", f.documented));
        }
    }
    assert!(undocumented.is_empty(), "statuses returned but not documented:\n{}", undocumented.join("\n"));
}
