//! `mnem_put_episodes_v2` through the C ABI functions of `mnem::ffi`: its ids follow the
//! output-buffer protocol (BUFFER_TOO_SMALL with the size, and then nothing written), and
//! it stores and answers exactly what `mnem_put_episodes` does for the same batch.

use mnem::ffi::*;
use mnem::Status;
use serde_json::Value;
use std::ffi::CStr;
use std::ptr::{null, null_mut};

const A: &str = "0190f0a0-0000-7000-8000-00000000000a";
const B: &str = "0190f0a0-0000-7000-8000-00000000000b";
const C: &str = "0190f0a0-0000-7000-8000-00000000000c";

fn s(x: &str) -> mnem_str {
    mnem_str { ptr: if x.is_empty() { null() } else { x.as_ptr() }, len: x.len() }
}

fn new_err() -> mnem_error {
    mnem_error { code: -1, detail: 7, message: [1; MNEM_ERROR_MESSAGE_CAP] }
}

fn message(e: &mnem_error) -> String {
    // SAFETY: every call NUL-terminates the message within the array.
    unsafe { CStr::from_ptr(e.message.as_ptr()) }.to_string_lossy().into_owned()
}

fn open(path: &str, flags: u32) -> *mut mnem_store {
    let mut h = null_mut();
    let mut e = new_err();
    assert_eq!(mnem_open(s(path), flags, s(""), &mut h, &mut e), Status::Ok, "{}", message(&e));
    h
}

fn memory() -> *mut mnem_store {
    open(":memory:", MNEM_OPEN_CREATE)
}

/// What one call of `mnem_put_episodes_v2` did.
#[derive(Debug)]
struct Put {
    status: Status,
    message: String,
    /// `*out_ids_len`.
    len: usize,
    /// The whole buffer given, including the 16 guard bytes past `cap`.
    buf: Vec<u8>,
}

/// `mnem_put_episodes_v2` with a buffer of `cap` bytes (and 16 guard bytes past it, never
/// to be written).
fn put_v2(h: *mut mnem_store, user: &str, jsonl: &str, cap: usize) -> Put {
    let mut buf = vec![0xAAu8; cap + 16];
    let (mut len, mut e) = (777usize, new_err());
    let status = mnem_put_episodes_v2(h, s("app"), s(user), s(jsonl), buf.as_mut_ptr(), cap, &mut len, &mut e);
    assert_eq!(e.code, status as i32);
    assert!(buf[cap..].iter().all(|&b| b == 0xAA), "written past `out_ids_cap`");
    Put { status, message: message(&e), len, buf }
}

fn ids_of(p: &Put) -> Vec<String> {
    p.buf[..p.len].chunks(16).map(|c| uuid::Uuid::from_slice(c).unwrap().to_string()).collect()
}

/// Writes `jsonl` with the protocol's loop: a size query (a non-NULL buffer of 0 bytes),
/// then exactly the reported size. Returns the ids.
fn put_v2_sized(h: *mut mnem_store, user: &str, jsonl: &str) -> Vec<String> {
    let q = put_v2(h, user, jsonl, 0);
    let p = if q.status == Status::BufferTooSmall { put_v2(h, user, jsonl, q.len) } else { q };
    assert_eq!(p.status, Status::Ok, "{}", p.message);
    ids_of(&p)
}

/// `mnem_put_episodes`, its buffer sized by counting the lines that are not blank, as the
/// bindings did. Returns the status, the message and the ids on OK.
fn put_v1(h: *mut mnem_store, user: &str, jsonl: &str) -> (Status, String, Vec<String>) {
    let lines = jsonl.split('\n').filter(|l| !l.trim_matches([' ', '\t', '\r']).is_empty()).count();
    let mut buf = vec![0u8; 16 * lines];
    let mut e = new_err();
    let st = mnem_put_episodes(h, s("app"), s(user), s(jsonl), buf.as_mut_ptr(), buf.len(), &mut e);
    let ids = buf.chunks(16).map(|c| uuid::Uuid::from_slice(c).unwrap().to_string()).collect();
    (st, message(&e), if st == Status::Ok { ids } else { Vec::new() })
}

/// A read through the output-buffer protocol, parsed.
fn read(f: impl Fn(*mut u8, usize, *mut usize, *mut mnem_error) -> Status) -> Value {
    let mut buf = vec![0u8; 1 << 20];
    let (mut len, mut e) = (0usize, new_err());
    assert_eq!(f(buf.as_mut_ptr(), buf.len(), &mut len, &mut e), Status::Ok, "{}", message(&e));
    serde_json::from_slice(&buf[..len]).unwrap()
}

/// `mnem_get_episodes` of `ids` in namespace (app, `user`): one Episode or null per id.
fn get(h: *mut mnem_store, user: &str, ids: &[&str]) -> Vec<Value> {
    let lines = ids.iter().map(|i| format!("\"{i}\"")).collect::<Vec<_>>().join("\n");
    let v = read(|o, c, l, e| mnem_get_episodes(h, s("app"), s(user), s(&lines), o, c, l, e));
    v["episodes"].as_array().unwrap().clone()
}

/// The namespace's live records (`mnem_namespace_stats`).
fn live(h: *mut mnem_store, user: &str) -> u64 {
    read(|o, c, l, e| mnem_namespace_stats(h, s("app"), s(user), o, c, l, e))["live"].as_u64().unwrap()
}

/// An Episode without what differs between two writes of the same line: the times (an
/// expiry is kept relative to the write), and the id where the line gave none.
fn comparable(mut ep: Value, keep_id: bool) -> Value {
    let o = ep.as_object_mut().expect("an Episode object");
    o.remove("created_at_ms");
    let written = o.remove("updated_at_ms").and_then(|t| t.as_i64()).expect("updated_at_ms");
    if let Some(at) = o["expires_at_ms"].as_i64() {
        o["expires_at_ms"] = (at - written).into();
    }
    if !keep_id {
        o.remove("id");
    }
    ep
}

/// Three episodes among blank lines: empty, spaces and tabs, CR, a final newline.
fn batch() -> String {
    [
        "".to_string(),
        format!(r#"{{"id":"{A}","primary":"apple tart"}}"#),
        " \t ".to_string(),
        format!(r#"{{"id":"{B}","primary":"banana bread","tags":["t"]}}"#),
        "\r".to_string(),
        format!(r#"{{"id":"{C}","primary":"cherry pie","ttl_ms":3600000}}"#),
        "".to_string(),
    ]
    .join("\n")
}

#[test]
fn a_buffer_too_small_reports_the_size_and_writes_nothing() {
    let h = memory();
    for cap in [0, 16, 47] {
        let p = put_v2(h, "u", &batch(), cap);
        assert_eq!((p.status, p.len), (Status::BufferTooSmall, 48), "cap {cap}: {}", p.message);
        assert!(p.buf.iter().all(|&b| b == 0xAA), "cap {cap}: `out_ids` touched on BUFFER_TOO_SMALL");
        assert!(p.message.contains("48") && p.message.contains("nothing was written"), "{}", p.message);
        assert_eq!(get(h, "u", &[A, B, C]), vec![Value::Null; 3], "cap {cap}: an episode was written");
        assert_eq!(live(h, "u"), 0);
    }
    let p = put_v2(h, "u", &batch(), 48);
    assert_eq!((p.status, p.len, p.message.as_str()), (Status::Ok, 48, ""));
    assert_eq!(ids_of(&p), [A, B, C]);
    let eps = get(h, "u", &[A, B, C]);
    let primaries: Vec<_> = eps.iter().map(|e| (e["primary"].as_str().unwrap(), e["revision"].as_u64())).collect();
    assert_eq!(primaries, [("apple tart", Some(1)), ("banana bread", Some(1)), ("cherry pie", Some(1))]);
    // A larger buffer than needed: the ids, and `*out_ids_len` says how many bytes they are.
    let p = put_v2(h, "u", &format!(r#"{{"id":"{A}","primary":"apple crumble"}}"#), 64);
    assert_eq!((p.status, p.len), (Status::Ok, 16));
    assert_eq!(ids_of(&p), [A]);
    assert!(p.buf[16..64].iter().all(|&b| b == 0xAA), "written past the ids");
    assert_eq!(get(h, "u", &[A])[0]["revision"], 2);
    mnem_free(h);
}

#[test]
fn the_retry_after_buffer_too_small_writes_each_episode_once() {
    // Lines without `id` get new UUIDs: had the first call written, they would be stored twice.
    let h = memory();
    let jsonl = "{\"primary\":\"one\"}\n\n{\"primary\":\"two\"}\n{\"primary\":\"three\"}";
    let p = put_v2(h, "u", jsonl, 16);
    assert_eq!((p.status, p.len), (Status::BufferTooSmall, 48));
    let p = put_v2(h, "u", jsonl, p.len);
    assert_eq!(p.status, Status::Ok, "{}", p.message);
    let ids = ids_of(&p);
    assert_eq!(live(h, "u"), 3);
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let eps = get(h, "u", &refs);
    assert_eq!(eps.iter().map(|e| e["primary"].as_str().unwrap()).collect::<Vec<_>>(), ["one", "two", "three"]);
    mnem_free(h);
}

#[test]
fn null_ids_are_not_wanted_and_the_size_is_still_reported() {
    let h = memory();
    let (mut len, mut e) = (777usize, new_err());
    let st = mnem_put_episodes_v2(h, s("app"), s("u"), s(&batch()), null_mut(), 0, &mut len, &mut e);
    assert_eq!((st, len, message(&e).as_str()), (Status::Ok, 48, ""));
    assert_eq!(live(h, "u"), 3);
    let st = mnem_put_episodes_v2(h, s("app"), s("v"), s(r#"{"primary":"x"}"#), null_mut(), 0, null_mut(), &mut e);
    assert_eq!(st, Status::Ok);
    assert_eq!(live(h, "v"), 1);
    // An empty batch needs no bytes: any buffer fits, and nothing is written.
    let p = put_v2(h, "w", "", 0);
    assert_eq!((p.status, p.len), (Status::Ok, 0));
    let p = put_v2(h, "w", "\n \t\n\r\n", 0);
    assert_eq!((p.status, p.len), (Status::Ok, 0));
    mnem_free(h);
}

#[test]
fn bad_pointers_are_invalid_and_write_nothing() {
    let h = memory();
    let jsonl = format!(r#"{{"id":"{A}","primary":"apple"}}"#);
    let mut buf = [0u8; 16];
    let (mut len, mut e) = (777usize, new_err());
    let st = mnem_put_episodes_v2(h, s("app"), s("u"), s(&jsonl), null_mut(), 16, &mut len, &mut e);
    assert_eq!((st, len), (Status::InvalidArgument, 0));
    assert!(message(&e).contains("`out_ids` is NULL"), "{}", message(&e));
    let st = mnem_put_episodes_v2(h, s("app"), s("u"), s(&jsonl), buf.as_mut_ptr(), 16, null_mut(), &mut e);
    assert_eq!(st, Status::InvalidArgument);
    assert!(message(&e).contains("`out_ids_len` is NULL"), "{}", message(&e));
    len = 777;
    let st = mnem_put_episodes_v2(null_mut(), s("app"), s("u"), s(&jsonl), buf.as_mut_ptr(), 16, &mut len, &mut e);
    assert_eq!((st, len), (Status::InvalidArgument, 0));
    assert!(message(&e).contains("`store` is NULL"), "{}", message(&e));
    assert_eq!(get(h, "u", &[A]), [Value::Null]);
    mnem_free(h);
}

#[test]
fn a_bad_line_is_named_before_any_size_and_writes_nothing() {
    let h = memory();
    let jsonl = format!("{{\"id\":\"{A}\"}}\n\n \n{{\"primary\":\"x\",\"colour\":1}}");
    for cap in [0, 64] {
        let p = put_v2(h, "u", &jsonl, cap);
        assert_eq!((p.status, p.len), (Status::InvalidArgument, 0), "cap {cap}");
        assert!(p.message.contains("line 4") && p.message.contains("colour"), "{}", p.message);
        assert!(p.buf.iter().all(|&b| b == 0xAA));
    }
    let bad_utf8 = b"{\"primary\":\"a\"}\n{\"primary\":\"\xff\"}";
    let (mut len, mut e, mut buf) = (777usize, new_err(), [0u8; 32]);
    let jsonl = mnem_str { ptr: bad_utf8.as_ptr(), len: bad_utf8.len() };
    let st = mnem_put_episodes_v2(h, s("app"), s("u"), jsonl, buf.as_mut_ptr(), 32, &mut len, &mut e);
    assert_eq!((st, len), (Status::InvalidArgument, 0));
    assert!(message(&e).contains("line 2"), "{}", message(&e));
    assert_eq!(live(h, "u"), 0);
    mnem_free(h);
}

#[test]
fn checks_that_need_the_store_come_after_the_size() {
    // The size is known from the parse; the store's own refusals come with a buffer that fits.
    let h = memory();
    assert_eq!(put_v2_sized(h, "u", r#"{"primary":"v","embedding":[1.0,0.0]}"#).len(), 1);
    let three = r#"{"primary":"w","embedding":[1.0,0.0,0.0]}"#;
    assert_eq!(put_v2(h, "u", three, 0).status, Status::BufferTooSmall);
    let p = put_v2(h, "u", three, 16);
    assert_eq!((p.status, p.len), (Status::InvalidArgument, 0));
    assert!(p.message.contains("line 1") && p.message.contains("dimensions"), "{}", p.message);
    assert!(p.buf.iter().all(|&b| b == 0xAA));
    assert_eq!(live(h, "u"), 1);
    mnem_free(h);

    let dir = std::env::temp_dir().join(format!("mnem-ffi-{}-ro", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    mnem_free(open(dir.to_str().unwrap(), MNEM_OPEN_CREATE));
    let ro = open(dir.to_str().unwrap(), MNEM_OPEN_READ_ONLY);
    assert_eq!(put_v2(ro, "u", &batch(), 0).status, Status::BufferTooSmall);
    let p = put_v2(ro, "u", &batch(), 48);
    assert_eq!((p.status, p.len), (Status::ReadOnly, 0));
    mnem_free(ro);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same batches through both functions, each into its own store: the same statuses and
/// messages, the same ids where the lines give them, and the same records stored.
#[test]
fn it_stores_and_answers_what_put_episodes_does() {
    let batches = [
        batch(),
        format!("{{\"id\":\"{A}\",\"primary\":\"a\"}}\n\n{{\"primary\":\"generated\"}}\n\t\r\n{{\"context\":\"c\"}}\n"),
        "{\"primary\":\"crlf\"}\r\n{\"primary\":\"lines\"}\r\n".to_string(),
        format!("{{\"id\":\"{B}\",\"primary\":\"again\",\"metadata\":{{\"k\":[1, 2]}}}}\n{{\"id\":\"{B}\"}}"),
        "   ".to_string(),
        String::new(),
        // Refused: a bad line after blank lines (named by its number, blanks counted), and a
        // dimension the namespace does not have.
        "\n\n{\"primary\":\"x\",\"ttl_ms\":0}".to_string(),
        "{\"primary\":\"v\",\"embedding\":[1.0]}\n{\"primary\":\"w\",\"embedding\":[1.0,2.0]}".to_string(),
        "not json".to_string(),
    ];
    let (old, new) = (memory(), memory());
    for (i, jsonl) in batches.iter().enumerate() {
        let user = format!("u{i}");
        let (st, msg, old_ids) = put_v1(old, &user, jsonl);
        let q = put_v2(new, &user, jsonl, 0);
        let p = if q.status == Status::BufferTooSmall { put_v2(new, &user, jsonl, q.len) } else { q };
        assert_eq!((p.status, p.message.as_str()), (st, msg.as_str()), "batch {i}: {jsonl:?}");
        let new_ids = if p.status == Status::Ok { ids_of(&p) } else { Vec::new() };
        assert_eq!(new_ids.len(), old_ids.len(), "batch {i}");
        let given: Vec<Option<String>> = jsonl
            .split('\n')
            .filter(|l| !l.trim_matches([' ', '\t', '\r']).is_empty())
            .map(|l| serde_json::from_str::<Value>(l).ok().and_then(|v| v["id"].as_str().map(String::from)))
            .collect();
        for (k, (o, n)) in old_ids.iter().zip(&new_ids).enumerate() {
            match &given[k] {
                Some(id) => assert_eq!((o, n), (id, id), "batch {i}, id {k}"),
                None => assert_ne!(o, n, "batch {i}, id {k}: generated ids are new UUIDs"),
            }
        }
        let o: Vec<&str> = old_ids.iter().map(String::as_str).collect();
        let n: Vec<&str> = new_ids.iter().map(String::as_str).collect();
        let (o, n) = (get(old, &user, &o), get(new, &user, &n));
        for (k, (o, n)) in o.into_iter().zip(n).enumerate() {
            assert!(!o.is_null() && !n.is_null(), "batch {i}: episode {k} not stored");
            let keep_id = given[k].is_some();
            assert_eq!(comparable(o, keep_id), comparable(n, keep_id), "batch {i}, episode {k}");
        }
        assert_eq!(live(old, &user), live(new, &user), "batch {i}");
    }
    mnem_free(old);
    mnem_free(new);
}

/// An error found against the store (a vector of the wrong dimension, a deleted id) names
/// the line the caller wrote, blank lines counted, as a parse error does: in both functions.
#[test]
fn store_side_errors_name_the_callers_line() {
    let h = memory();
    assert_eq!(put_v2(h, "u", r#"{"primary": "a", "embedding": [1, 0]}"#, 16).status, Status::Ok);
    let jsonl = "\n{\"primary\": \"b\"}\n\n{\"primary\": \"c\", \"embedding\": [1, 0, 0]}\n";
    let v2 = put_v2(h, "u", jsonl, 64);
    let (st, msg, _) = put_v1(h, "u", jsonl);
    for (status, message) in [(v2.status, v2.message), (st, msg)] {
        assert_eq!(status, Status::InvalidArgument);
        assert!(message.starts_with("line 4: `embedding` has 3 dimensions"), "{message}");
    }
    // A parse error on the same line says the same line.
    let bad = "\n{\"primary\": \"b\"}\n\n{\"primary\": 5}\n";
    assert!(put_v2(h, "u", bad, 64).message.starts_with("line 4:"));
    assert_eq!(live(h, "u"), 1, "nothing of the refused batches was written");
    mnem_free(h);
}
