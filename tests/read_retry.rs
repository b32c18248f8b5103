//! The output protocol's retry: a read whose answer did not fit is answered again from what
//! was kept, without reading again, unless a write came in between (through this handle or,
//! on PostgreSQL, another), which makes it read again. A hybrid search of text asks the
//! embedder once per read, so the embedder's calls count the reads. On RocksDB and, with
//! `MNEM_TEST_PG_URI`, on PostgreSQL.

use mnem::ffi::*;
use mnem::Status;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
mod common;
use common::places;

fn view(s: &str) -> mnem_str {
    mnem_str { ptr: if s.is_empty() { ptr::null() } else { s.as_ptr() }, len: s.len() }
}

fn new_err() -> mnem_error {
    mnem_error { code: 0, detail: 0, message: [0; MNEM_ERROR_MESSAGE_CAP] }
}

/// Counts its calls (`user_data`: an `AtomicUsize`); 4-d vectors from the text's bytes.
unsafe extern "C" fn counting_embed(
    user_data: *mut c_void,
    text: mnem_str,
    out: *mut f32,
    out_cap: usize,
    out_len: *mut usize,
    _err: *mut mnem_error,
) -> i32 {
    // SAFETY: user_data is the test's `AtomicUsize`, alive while the store is; text, out and
    // out_len are valid for the call (include/mnem.h).
    unsafe {
        (*user_data.cast::<AtomicUsize>()).fetch_add(1, Ordering::SeqCst);
        let t = if text.len == 0 { &[][..] } else { std::slice::from_raw_parts(text.ptr, text.len) };
        let mut v = [1.0f32; 4];
        for (i, b) in t.iter().enumerate() {
            v[i % 4] += f32::from(*b) / 256.0;
        }
        *out_len = 4;
        if out_cap < 4 {
            return Status::BufferTooSmall as i32;
        }
        ptr::copy_nonoverlapping(v.as_ptr(), out, 4);
        0
    }
}

struct Handle(*mut mnem_store);

impl Handle {
    fn open(path: &str, calls: &AtomicUsize) -> Handle {
        let (mut h, mut e) = (ptr::null_mut(), new_err());
        assert_eq!(mnem_open(view(path), MNEM_OPEN_CREATE, view(""), &mut h, &mut e), Status::Ok);
        let user_data = ptr::from_ref(calls).cast_mut().cast::<c_void>();
        assert_eq!(mnem_set_embedder(h, Some(counting_embed), user_data, &mut e), Status::Ok);
        Handle(h)
    }

    fn put(&self, texts: &[&str]) {
        let lines: Vec<String> = texts.iter().map(|t| serde_json::json!({ "primary": t }).to_string()).collect();
        let mut e = new_err();
        let st =
            mnem_put_episodes(self.0, view("app"), view("user"), view(&lines.join("\n")), ptr::null_mut(), 0, &mut e);
        assert_eq!(st, Status::Ok);
    }

    /// A hybrid search of `text` into `cap` bytes: the status, the size, the answer.
    fn search(&self, cap: usize) -> (Status, usize, String) {
        let query = r#"{"text": "alpha", "limit": 10}"#;
        let (mut buf, mut len, mut e) = (vec![0u8; cap], 0usize, new_err());
        let out = if cap == 0 { ptr::null_mut() } else { buf.as_mut_ptr() };
        let st = mnem_hybrid_search(self.0, view("app"), view("user"), view(query), out, cap, &mut len, &mut e);
        buf.truncate(if st == Status::Ok { len } else { 0 });
        (st, len, String::from_utf8(buf).unwrap())
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        mnem_free(self.0);
    }
}

/// `writer`: the handle that writes between two reads (`reader` itself on RocksDB).
fn check(reader: &Handle, writer: &Handle, calls: &AtomicUsize) {
    reader.put(&["alpha one", "alpha two", "bravo"]);
    let reads = || calls.load(Ordering::SeqCst);

    // Sized, then retried: one read.
    let before = reads();
    let (st, need, _) = reader.search(0);
    assert_eq!(st, Status::BufferTooSmall);
    assert_eq!(reads(), before + 1, "the size query reads");
    let (st, len, first) = reader.search(need);
    assert_eq!((st, len), (Status::Ok, need));
    assert_eq!(reads(), before + 1, "the retry is answered from what was kept");
    assert!(first.contains("alpha one") && !first.contains("alpha three"));

    // Sized, a write, then retried: the retry reads again and sees the write.
    let (st, need, _) = reader.search(0);
    assert_eq!(st, Status::BufferTooSmall);
    writer.put(&["alpha three"]);
    let before = reads();
    let (st, _, _) = reader.search(need);
    assert_eq!(reads(), before + 1, "a write since makes the kept answer stale");
    let answer = if st == Status::Ok {
        reader.search(need).2
    } else {
        assert_eq!(st, Status::BufferTooSmall);
        let (_, need, _) = reader.search(0);
        reader.search(need).2
    };
    assert!(answer.contains("alpha three"), "the answer after the write has it: {answer}");
}

/// On RocksDB one handle reads and writes; on PostgreSQL a second handle writes.
#[test]
fn a_retry_reads_again_only_after_a_write() {
    for p in places("retry") {
        let calls = AtomicUsize::new(0);
        let reader = Handle::open(&p.uri, &calls);
        if p.backend == "postgresql" {
            check(&reader, &Handle::open(&p.uri, &calls), &calls);
        } else {
            check(&reader, &reader, &calls);
        }
    }
}
