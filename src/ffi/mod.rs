//! The C ABI, documented in `include/mnem.h` (generated from this module's doc comments).
//! Each function converts its arguments, delegates to `Mnem` and converts the result; no
//! logic lives here. This module (with `sys`) holds all of mnem's `unsafe`.
//!
//! Conventions every function follows: a panic never crosses the boundary (it becomes
//! `MNEM_STATUS_INTERNAL` and poisons the handle); NULL pointers and invalid UTF-8 are
//! `MNEM_STATUS_INVALID_ARGUMENT`; outputs go to caller-owned buffers.

#![allow(non_camel_case_types)]
// The signatures are the published C API's and cannot be regrouped.
#![allow(clippy::too_many_arguments)]

mod admin;
pub use admin::*;
mod embed;
pub use embed::*;
#[cfg(feature = "fault-injection")]
mod fault;
pub mod sys;

use crate::error::{Error, Result, Status};
use crate::keys::Namespace;
use crate::lexical::{KeywordQuery, LexicalQuery};
use crate::store::SequenceScope;
use crate::wire::query;
use crate::{HybridQuery, Mnem, OpenOptions};
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};

/// The version of this ABI; `mnem_abi_version()` returns it.
pub const MNEM_ABI_VERSION: u32 = 1;
/// Size of `mnem_error.message`, NUL included.
pub const MNEM_ERROR_MESSAGE_CAP: usize = 512;
/// `mnem_open` flag: create the store if it does not exist.
pub const MNEM_OPEN_CREATE: u32 = 1;
/// `mnem_open` flag: open for reading only; every write returns `MNEM_STATUS_READ_ONLY`.
pub const MNEM_OPEN_READ_ONLY: u32 = 2;
/// `mnem_open` flag: a read-only view that works beside a process holding the store open for
/// writing: it takes no lock, sees the store as it was at open, and refuses every write with
/// `MNEM_STATUS_READ_ONLY` (implies `MNEM_OPEN_READ_ONLY`).
pub const MNEM_OPEN_VIEW: u32 = 4;

/// An open store. Opaque; created by `mnem_open`, destroyed by `mnem_free`.
pub struct mnem_store {
    mnem: Mnem,
    poisoned: AtomicBool,
    /// Answers that did not fit their buffer, kept for the same call again (`Kept`).
    kept: Kept,
}

/// The answers of read calls that returned BUFFER_TOO_SMALL, one per calling thread: the same
/// call again from that thread (same function, same arguments) with nothing written to the
/// store in between gets the kept answer instead of reading the store again. Any other read
/// call from the thread drops it.
#[derive(Default)]
struct Kept(parking_lot::Mutex<Vec<KeptAnswer>>);

struct KeptAnswer {
    thread: std::thread::ThreadId,
    call: Vec<u8>,
    /// The store's write sequence when the answer was read: a write since makes it stale.
    sequence: u64,
    answer: Vec<u8>,
}

/// Threads whose answers are kept at once, and the bytes kept in all (the oldest go first;
/// an answer larger than that is not kept).
const KEPT_THREADS: usize = 16;
const KEPT_BYTES: usize = 64 << 20;

impl Kept {
    /// Whether an answer of this thread is kept.
    fn holds(&self) -> bool {
        let me = std::thread::current().id();
        self.0.lock().iter().any(|k| k.thread == me)
    }

    /// This thread's kept answer for `call` at `sequence`, if any; this thread's entry goes.
    fn take(&self, call: &[u8], sequence: u64) -> Option<Vec<u8>> {
        let me = std::thread::current().id();
        let mut kept = self.0.lock();
        let i = kept.iter().position(|k| k.thread == me)?;
        let k = kept.remove(i);
        (k.call == call && k.sequence == sequence).then_some(k.answer)
    }

    fn keep(&self, call: Vec<u8>, sequence: u64, answer: Vec<u8>) {
        if answer.len() > KEPT_BYTES {
            return;
        }
        let mut kept = self.0.lock();
        let mut total: usize = kept.iter().map(|k| k.answer.len()).sum();
        while !kept.is_empty() && (kept.len() == KEPT_THREADS || total + answer.len() > KEPT_BYTES) {
            total -= kept.remove(0).answer.len();
        }
        kept.push(KeptAnswer { thread: std::thread::current().id(), call, sequence, answer });
    }
}

/// A read call's function and arguments: the key of its kept answer. None when an argument
/// is not a readable string (the call then fails on it, and nothing is kept).
struct Call(Option<Vec<u8>>);

impl Call {
    fn new(function: &str) -> Call {
        let mut key = Vec::new();
        crate::codec::push_bytes(&mut key, function.as_bytes());
        Call(Some(key))
    }

    /// Calls whose answers are not kept (cheap ones that change without writes).
    fn unkept() -> Call {
        Call(None)
    }

    fn str(mut self, s: mnem_str) -> Call {
        let bytes = if s.ptr.is_null() {
            (s.len == 0).then_some([].as_slice())
        } else if s.len > isize::MAX as usize {
            None
        } else {
            // SAFETY: non-NULL, and the caller guarantees `len` readable bytes at `ptr` for
            // the duration of the call (the `mnem_str` rule of include/mnem.h); the slice is
            // copied and does not outlive it.
            Some(unsafe { std::slice::from_raw_parts(s.ptr, s.len) })
        };
        match (&mut self.0, bytes) {
            (Some(key), Some(b)) => crate::codec::push_bytes(key, b),
            _ => self.0 = None,
        }
        self
    }

    fn num(mut self, n: u64) -> Call {
        if let Some(key) = &mut self.0 {
            key.extend_from_slice(&n.to_le_bytes());
        }
        self
    }
}

/// A borrowed UTF-8 string: `len` bytes at `ptr`, no NUL needed. `ptr` may be NULL only
/// when `len` is 0. mnem never keeps it after the call returns.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct mnem_str {
    pub ptr: *const u8,
    pub len: usize,
}

/// Error details, filled by every fallible function when the pointer is not NULL.
#[repr(C)]
pub struct mnem_error {
    /// Equal to the returned status.
    pub code: i32,
    /// Reserved; 0.
    pub detail: u32,
    /// NUL-terminated UTF-8 naming the problem (truncated at a character boundary to fit);
    /// empty on success.
    pub message: [c_char; MNEM_ERROR_MESSAGE_CAP],
}

fn fill_error(err: *mut mnem_error, status: Status, message: &str) {
    if err.is_null() {
        return;
    }
    let mut n = message.len().min(MNEM_ERROR_MESSAGE_CAP - 1);
    while !message.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: `err` is non-NULL and, as include/mnem.h requires of `err`, points to a writable
    // `mnem_error`; we write within its `message` array (n < CAP) and its scalar fields.
    unsafe {
        (*err).code = status as i32;
        (*err).detail = 0;
        let msg = (*err).message.as_mut_ptr();
        std::ptr::copy_nonoverlapping(message.as_ptr().cast::<c_char>(), msg, n);
        *msg.add(n) = 0;
    }
}

/// Run `f` behind the panic boundary and report its outcome through `err`.
fn guard(err: *mut mnem_error, store: Option<&mnem_store>, f: impl FnOnce() -> Result<()>) -> Status {
    if let Some(s) = store {
        if s.poisoned.load(Ordering::Acquire) {
            fill_error(err, Status::Internal, "the handle is poisoned by an earlier internal error; free it");
            return Status::Internal;
        }
    }
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            fill_error(err, Status::Ok, "");
            Status::Ok
        }
        Ok(Err(e)) => {
            fill_error(err, e.status, &e.message);
            e.status
        }
        Err(panic) => {
            if let Some(s) = store {
                s.poisoned.store(true, Ordering::Release);
            }
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            fill_error(err, Status::Internal, &format!("internal error (panic): {what}"));
            Status::Internal
        }
    }
}

fn text<'a>(s: mnem_str, what: &str) -> Result<&'a str> {
    if s.ptr.is_null() {
        if s.len == 0 {
            return Ok("");
        }
        return Err(Error::invalid(format!("`{what}` is NULL with length {}", s.len)));
    }
    if s.len > isize::MAX as usize {
        return Err(Error::invalid(format!("`{what}` has an impossible length")));
    }
    // SAFETY: non-NULL, and the caller guarantees `len` readable bytes at `ptr` for the
    // duration of the call (the `mnem_str` rule of include/mnem.h); the slice does not outlive it.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    std::str::from_utf8(bytes)
        .map_err(|e| Error::invalid(format!("`{what}` is not valid UTF-8 (at byte {})", e.valid_up_to())))
}

/// Like `text`, for a JSON Lines batch: invalid UTF-8 is reported with its line number.
fn jsonl<'a>(s: mnem_str, what: &str) -> Result<&'a str> {
    let e = match text(s, what) {
        Ok(t) => return Ok(t),
        Err(e) => e,
    };
    if s.ptr.is_null() || s.len > isize::MAX as usize {
        return Err(e);
    }
    // SAFETY: as in `text`, which has just read the same bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    let Err(bad) = std::str::from_utf8(bytes) else { return Err(e) };
    let at = bad.valid_up_to();
    let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
    Err(Error::invalid(format!("`{what}` line {line} is not valid UTF-8 (at byte {at}); nothing was written")))
}

fn namespace(app: mnem_str, user: mnem_str) -> Result<Namespace> {
    let app = text(app, "app_name")?;
    let user = text(user, "user_id")?;
    crate::keys::check_component("app_name", app)?;
    crate::keys::check_component("user_id", user)?;
    Ok(Namespace::new(app, user))
}

fn store_ref<'a>(store: *const mnem_store) -> Option<&'a mnem_store> {
    // SAFETY: a non-NULL handle came from `mnem_open` and, by the THREADS rule of
    // include/mnem.h, is not freed while any call on it runs.
    unsafe { store.as_ref() }
}

fn need_store(store: Option<&mnem_store>) -> Result<&Mnem> {
    store.map(|s| &s.mnem).ok_or_else(|| Error::invalid("`store` is NULL"))
}

fn set_count(out: *mut u64, n: u64) {
    // SAFETY: a non-NULL counter pointer points to a writable u64 (include/mnem.h).
    if let Some(o) = unsafe { out.as_mut() } {
        *o = n;
    }
}

/// Output buffer triple, checked once at entry so that `*out_len` is 0 on every failure
/// other than `BUFFER_TOO_SMALL`.
struct Out {
    out: *mut u8,
    cap: usize,
    len: *mut usize,
}

impl Out {
    fn new(out: *mut u8, cap: usize, len: *mut usize) -> Result<Out> {
        if len.is_null() {
            return Err(Error::invalid("`out_len` is NULL"));
        }
        // SAFETY: non-NULL `out_len` points to a writable size_t (include/mnem.h).
        unsafe { *len = 0 };
        if out.is_null() && cap > 0 {
            return Err(Error::invalid("`out` is NULL but `out_cap` is not 0"));
        }
        Ok(Out { out, cap, len })
    }

    fn write(&self, bytes: &[u8]) -> Result<()> {
        if bytes.len() > self.cap {
            // SAFETY: checked non-NULL in `new`.
            unsafe { *self.len = bytes.len() };
            return Err(Error::new(
                Status::BufferTooSmall,
                format!("the result needs {} bytes; `out_cap` is {}", bytes.len(), self.cap),
            ));
        }
        if !bytes.is_empty() {
            // SAFETY: `out` is non-NULL (cap >= len > 0) and the caller guarantees `cap`
            // writable bytes; we write `bytes.len() <= cap` of them.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.out, bytes.len()) };
        }
        // SAFETY: checked non-NULL in `new`.
        unsafe { *self.len = bytes.len() };
        Ok(())
    }
}

/// A read that fills an output buffer. An answer that does not fit is kept for the same
/// call again (`Kept`), so that growing the buffer does not cost a second read.
fn read_call(
    store: *const mnem_store,
    call: Call,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
    f: impl FnOnce(&Mnem) -> Result<Vec<u8>>,
) -> Status {
    let s = store_ref(store);
    let status = guard(err, s, || {
        let o = Out::new(out, out_cap, out_len)?;
        let m = need_store(s)?;
        let kept = &s.expect("need_store checked it").kept;
        let Some(call) = call.0 else { return o.write(&f(m)?) };
        // The sequence is read before any snapshot of the answer: here when an answer is kept
        // (to check it), else by the backend as the read takes its first snapshot (on
        // PostgreSQL, a round trip saved).
        let mut sequence = None;
        let mut answer = None;
        if kept.holds() {
            let now = m.store().write_sequence();
            answer = kept.take(&call, now);
            sequence = Some(now);
        }
        let bytes = match answer {
            Some(answer) => answer,
            None => {
                let scope = SequenceScope::enter();
                let bytes = f(m)?;
                sequence = sequence.or(scope.sequence());
                bytes
            }
        };
        let written = o.write(&bytes);
        if let (Err(e), Some(sequence)) = (&written, sequence) {
            if e.status == Status::BufferTooSmall {
                kept.keep(call, sequence, bytes);
            }
        }
        written
    });
    if status != Status::Ok && status != Status::BufferTooSmall && !out_len.is_null() {
        // SAFETY: non-NULL `out_len` points to a writable size_t (include/mnem.h).
        unsafe { *out_len = 0 };
    }
    status
}

/// The ABI version of the library: compare with `MNEM_ABI_VERSION` from the header.
#[no_mangle]
pub extern "C" fn mnem_abi_version() -> u32 {
    MNEM_ABI_VERSION
}

/// The library version, a static NUL-terminated string such as "0.1.0". Never free it.
#[no_mangle]
pub extern "C" fn mnem_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The name of a status without its `MNEM_STATUS_` prefix ("OK", "INVALID_ARGUMENT", ...),
/// or "UNKNOWN" for any other integer; static, never free it.
#[no_mangle]
pub extern "C" fn mnem_status_name(status: i32) -> *const c_char {
    Status::from_code(status).map_or(c"UNKNOWN", Status::c_name).as_ptr()
}

/// A one-line description of a status ("stored data is damaged", ...), or "unknown status"
/// for any other integer; static, never free it. `mnem_error.message` is more specific: use
/// this only where no message is at hand.
#[no_mangle]
pub extern "C" fn mnem_status_message(status: i32) -> *const c_char {
    Status::from_code(status).map_or(c"unknown status", Status::default_message).as_ptr()
}

fn parse_open_options(json: &str, flags: u32) -> Result<OpenOptions> {
    let unknown = flags & !(MNEM_OPEN_CREATE | MNEM_OPEN_READ_ONLY | MNEM_OPEN_VIEW);
    if unknown != 0 {
        return Err(Error::invalid(format!("unknown flag bits 0x{unknown:x} in `flags`")));
    }
    let opts = OpenOptions {
        create: flags & MNEM_OPEN_CREATE != 0,
        read_only: flags & (MNEM_OPEN_READ_ONLY | MNEM_OPEN_VIEW) != 0,
        ..OpenOptions::default()
    };
    crate::wire::admin::parse_open_options(json, opts)
}

/// Open the store at `path` (a directory), or an in-process store for the path `:memory:`.
///
/// `flags`: `MNEM_OPEN_CREATE` creates a missing store; `MNEM_OPEN_READ_ONLY` refuses every
/// write (the two cannot be combined). `options_json`: empty for defaults, or an object:
/// `{"sync_writes": bool}` (default false) fsyncs every write batch before the write returns;
/// without it, writes survive a process crash but the last ones may be lost on power loss
/// until `mnem_flush`. `{"cache_bytes": N}` (default 268435456 = 256 MiB, at least 1048576)
/// bounds what mnem caches in memory: index blocks and loaded vector graphs (`mnem_stats`).
/// `{"embedder": "builtin"}` registers the built-in embedder (all-MiniLM-L6-v2, 384
/// dimensions, run inside mnem; `"none"`, the default, registers nothing): writes that ask
/// for vectors and every ADK event then get one, and hybrid search and recall embed a query
/// that has text and no `"vector"`, as with `mnem_set_embedder`. Its model is the folder
/// `{"model_dir": "..."}`, else `$MNEM_MODEL_DIR`, else the one installed beside the library
/// (`models/all-MiniLM-L6-v2` next to it, or `../share/mnem/models/all-MiniLM-L6-v2`), else
/// under `/usr/local/share/mnem/models` or `/usr/share/mnem/models`; a model that is missing
/// or unreadable fails the open with EMBEDDER_FAILED naming where it looked, and opens
/// nothing. `{"embed_context": N}` (0 to 16; default 2 with the built-in embedder, else 0):
/// an ADK event is embedded from the N events before it in its session and itself, each
/// written `author: text`, joined by one space (0: its text alone).
/// `{"write_yield_ms": N}` (0 to 1000; default 5, and 0 on PostgreSQL): the longest a write
/// waits, before it starts, for the searches of this handle running when it arrived, so that
/// a writer that writes without pause does not take the CPU they need; later searches do not
/// hold it back, and with none running it does not wait. 0: writes never wait.
///
/// `MNEM_OPEN_VIEW` opens a read-only view instead, beside a writer (another process or
/// handle may hold the store open for writing; a normal open would be BUSY): every read
/// answers from the state at open, including writes acknowledged but not yet flushed; open
/// a new view to see later ones. Table files the writer deletes meanwhile stay readable (the
/// view keeps one descriptor per table file open).
///
/// On success `*out_store` is the handle; free it once with `mnem_free`. On failure it is NULL.
/// Returns OK; INVALID_ARGUMENT (NULL `out_store`, unknown flag bits, both flags, `:memory:`
/// with `MNEM_OPEN_READ_ONLY`, bad path or options, unknown option key); NOT_FOUND (no store, no `MNEM_OPEN_CREATE`); BUSY (already
/// open in this or another process); INCOMPATIBLE (newer on-disk format, or a format-1 store
/// opened read-only); EMBEDDER_FAILED (the built-in embedder's model); CORRUPTION; IO; INTERNAL.
///
/// A store written by a build before persisted indexes (format 1) gets its indexes at its
/// first read-write open, which then takes time in proportion to its records (once;
/// `mnem_stats` reports `opened_format` 1 and `indexes_built`). A format-2 store opens as it
/// is, and so does a format-3 one; the first read-write open of either adds the char pairs
/// of its `mnem_search` index (time in proportion to its non-ASCII texts, once) and records
/// format 4.
#[no_mangle]
pub extern "C" fn mnem_open(
    path: mnem_str,
    flags: u32,
    options_json: mnem_str,
    out_store: *mut *mut mnem_store,
    err: *mut mnem_error,
) -> Status {
    guard(err, None, || {
        if out_store.is_null() {
            return Err(Error::invalid("`out_store` is NULL"));
        }
        set_handle(out_store, std::ptr::null_mut());
        #[cfg(feature = "fault-injection")]
        fault::open_hook();
        let path = text(path, "path")?;
        let opts = parse_open_options(text(options_json, "options_json")?, flags)?;
        let mnem = if flags & MNEM_OPEN_VIEW != 0 { Mnem::open_view(path, opts)? } else { Mnem::open(path, opts)? };
        let handle =
            Box::into_raw(Box::new(mnem_store { mnem, poisoned: AtomicBool::new(false), kept: Kept::default() }));
        set_handle(out_store, handle);
        Ok(())
    })
}

/// The store's statistics as a JSON object:
/// `{"format": N, "opened_format": N, "indexes_built": N, "journal_replayed": N,
/// "cache_bytes": N, "graph_cache": C, "block_cache": C}` where each C is `{"budget_bytes",
/// "used_bytes", "entries", "hits", "misses", "hit_rate", "evictions"}`. `format` is the
/// on-disk format this build writes; `opened_format` the one the store had at open (lower
/// when this open upgraded it, building the indexes of `indexes_built` namespaces from their
/// records). `journal_replayed` counts the writes whose index postings a writer that stopped
/// without closing (a crash, a kill) had not yet moved from its journal into the index, or
/// had moved since its last flush to table files (such a move is not logged): this open moved
/// them (read-only: read them into memory, so that searches find them).
/// `cache_bytes` is the open option: a quarter of it is RocksDB's block cache (index postings
/// and records), the rest holds loaded vector graphs (`graph_cache`), least recently used
/// first out, across namespaces. Counters count since open.
/// Returns OK; BUFFER_TOO_SMALL (`*out_len` = bytes needed); INVALID_ARGUMENT; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_stats(
    store: *const mnem_store,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    read_call(store, Call::unkept(), out, out_cap, out_len, err, |m| Ok(m.stats_json()))
}

/// Make every write acknowledged so far durable (fsync of the write-ahead log).
/// A no-op on a read-only handle.
/// Returns OK; INVALID_ARGUMENT (NULL store); BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_flush(store: *mut mnem_store, err: *mut mnem_error) -> Status {
    let s = store_ref(store);
    guard(err, s, || need_store(s)?.flush())
}

/// Close and free a handle. NULL is a no-op. Call it once, after every other call on the
/// handle has returned; the handle is invalid afterwards.
#[no_mangle]
pub extern "C" fn mnem_free(store: *mut mnem_store) {
    if store.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| drop(take_handle(store))));
}

fn set_handle(out_store: *mut *mut mnem_store, handle: *mut mnem_store) {
    // SAFETY: callers pass a non-NULL `out_store`, which include/mnem.h requires to
    // point to a writable pointer.
    unsafe { *out_store = handle };
}

fn take_handle(store: *mut mnem_store) -> Box<mnem_store> {
    // SAFETY: the non-NULL handle came from `Box::into_raw` in `mnem_open` and, as
    // include/mnem.h requires of `mnem_free`, is freed once with no call running on it.
    unsafe { Box::from_raw(store) }
}

fn copy_ids(out_ids: *mut u8, ids: &[uuid::Uuid]) {
    for (i, id) in ids.iter().enumerate() {
        // SAFETY: callers checked `out_ids` non-NULL with `16 * ids.len()` writable bytes;
        // each copy writes 16 bytes at offset 16 * i.
        unsafe { std::ptr::copy_nonoverlapping(id.as_bytes().as_ptr(), out_ids.add(16 * i), 16) };
    }
}

/// ADK `add_session_to_memory`: replace the bucket of `session_id` in namespace
/// `(app, user)` with the events of `events_jsonl` (one ADK `Event` JSON object per line,
/// as `Event.model_dump_json()` writes it). Events without `content` or with empty
/// `content.parts` are skipped, as are ids removed by `mnem_delete_memory`. The bucket is
/// replaced wholesale: afterwards it holds exactly these events, stored as this function
/// stores them (no tags, no expiry), whatever `mnem_add_events` stored for the same ids
/// before. A bucket that already exists keeps its place in the tie order of `mnem_search`.
/// `*out_stored` (may be NULL) receives the number of events the bucket now holds.
/// With an embedder registered (`mnem_set_embedder`), each event with text is stored with the
/// vector of its searchable text, in the same batch (an event stored before with the same
/// text keeps its vector, without a call).
/// Returns OK; INVALID_ARGUMENT (NULL store, invalid UTF-8, a line that is not a JSON object,
/// named by its number, an event over 64 MiB stored, a vector of another dimension than the
/// namespace's: nothing is stored); EMBEDDER_FAILED (nothing is stored); READ_ONLY; BUSY;
/// IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_add_session(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    session_id: mnem_str,
    events_jsonl: mnem_str,
    out_stored: *mut u64,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    set_count(out_stored, 0);
    guard(err, s, || {
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let n = m.add_session(&ns, text(session_id, "session_id")?, jsonl(events_jsonl, "events_jsonl")?)?;
        set_count(out_stored, n);
        Ok(())
    })
}

/// ADK `add_events_to_memory`: append events to the bucket of `session_id` (empty means
/// `__unknown_session_id__`). An event whose id is already in the bucket, earlier in the
/// batch, or removed by `mnem_delete_memory` is skipped: first write wins.
/// `custom_metadata_json`: empty or a JSON object; mnem reads `ttl_ms` (integer > 0: the
/// events expire), `tags` (array of strings) and `episode_type` (string, default "event")
/// and ignores other keys. `*out_added` (may be NULL) receives the number appended. With an
/// embedder registered, the appended events are stored with their vectors, as in
/// `mnem_add_session`.
/// Returns OK; INVALID_ARGUMENT (as for `mnem_add_session`, or a mistyped known metadata key);
/// EMBEDDER_FAILED; READ_ONLY; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_add_events(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    session_id: mnem_str,
    events_jsonl: mnem_str,
    custom_metadata_json: mnem_str,
    out_added: *mut u64,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    set_count(out_added, 0);
    guard(err, s, || {
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let n = m.add_events(
            &ns,
            text(session_id, "session_id")?,
            jsonl(events_jsonl, "events_jsonl")?,
            text(custom_metadata_json, "custom_metadata_json")?,
        )?;
        set_count(out_added, n);
        Ok(())
    })
}

/// ADK `delete_memory` (google-adk 2.13.0): remove every memory reported with id
/// `memory_id` from every bucket of the namespace, and block that id from later adds for
/// good. An empty id is a no-op; an id that removes nothing records no tombstone.
/// `*out_deleted` (may be NULL) receives the number removed.
/// Returns OK; INVALID_ARGUMENT; READ_ONLY; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_delete_memory(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    memory_id: mnem_str,
    out_deleted: *mut u64,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    set_count(out_deleted, 0);
    guard(err, s, || {
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let n = m.delete_memory(&ns, text(memory_id, "memory_id")?)?;
        set_count(out_deleted, n);
        Ok(())
    })
}

/// ADK `search_memory`, ranked exactly like google-adk 2.13.0's `InMemoryMemoryService`:
/// writes `{"memories":[{"id","content","author","timestamp","custom_metadata":{}}...]}`,
/// at most 10, best first. Ties keep insertion order: session buckets in the order they
/// were first added, events in bucket order; `memory` episodes (ADK `add_memory`, written
/// with `mnem_put_episodes`) come after every bucket, in UUID order. `content` is the JSON
/// that was ingested, byte for byte; `timestamp` is formatted in the process's local time
/// zone like Python's `datetime.fromtimestamp(ts).isoformat()`.
/// Returns OK; BUFFER_TOO_SMALL (`*out_len` = bytes needed); INVALID_ARGUMENT; BUSY;
/// IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_search(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_search").str(app).str(user).str(query);
    read_call(store, call, out, out_cap, out_len, err, |m| m.search(&namespace(app, user)?, text(query, "query")?))
}

/// Create or update episodes: one JSON object per line of `episodes_jsonl` with keys
/// `id` (UUID; omitted: a new UUIDv7), `episode_type` (default "episode"), `tags`,
/// `primary`, `secondary`, `context` (the searchable text), `metadata` (object),
/// `author`, `session_id`, `event_id`, `timestamp` (seconds), `expires_at_ms` or `ttl_ms`,
/// `content` (any JSON), `embedding_model` (the name of the model that made `embedding`; the
/// namespace's first vector fixes its model, and a vector of another model, or unnamed
/// against a named one, is INVALID_ARGUMENT; the store's embedder names its own, the built-in
/// one "all-MiniLM-L6-v2"), `embedding` (array of 1 to 16,384 numbers: the namespace's first
/// vector fixes the dimension) or `embed` (true: the store's embedder, `mnem_set_embedder`,
/// embeds the episode's non-blank primary, secondary and context texts joined by "\n",
/// before the write takes the writers' lock; all three blank: no vector). An existing id becomes a new revision; a deleted id cannot be reused.
/// An episode of type "memory" is an ADK memory, reported by `mnem_search` under its
/// `event_id` (else its UUID): a line whose memory id was removed by `mnem_delete_memory`
/// is refused (INVALID_ARGUMENT naming the line, nothing written), so a deleted memory
/// never returns, whichever call writes it.
/// The whole batch is validated, then written atomically.
/// `out_ids` receives the 16 raw bytes of each line's id in line order; NULL with
/// `out_ids_cap` 0 when not wanted. (`mnem_put_episodes_v2` reports the size it needs.)
/// An episode may take at most 64 MiB stored (the lexical page's largest byte budget, so
/// that paging always progresses).
/// Returns OK; INVALID_ARGUMENT (unknown key, bad value, dimension mismatch, deleted id,
/// an episode over 64 MiB, `out_ids_cap` < 16 × lines, `embed` with `embedding` or
/// without a registered embedder: the message names the line and field, nothing
/// is written); EMBEDDER_FAILED (nothing is written); READ_ONLY; BUSY; IO; CORRUPTION;
/// INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_put_episodes(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    episodes_jsonl: mnem_str,
    out_ids: *mut u8,
    out_ids_cap: usize,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    guard(err, s, || {
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let (lines, inputs) =
            crate::wire::episode::parse_numbered_episode_lines(jsonl(episodes_jsonl, "episodes_jsonl")?)?;
        if out_ids.is_null() && out_ids_cap > 0 {
            return Err(Error::invalid("`out_ids` is NULL but `out_ids_cap` is not 0"));
        }
        let need = inputs.len().saturating_mul(16);
        if !out_ids.is_null() && out_ids_cap < need {
            return Err(Error::invalid(format!(
                "`out_ids_cap` is {out_ids_cap}; {} lines need {need} bytes",
                inputs.len()
            )));
        }
        let ids = m.put_episode_lines(&ns, inputs, Some(&lines))?;
        if !out_ids.is_null() {
            copy_ids(out_ids, &ids);
        }
        Ok(())
    })
}

/// `mnem_put_episodes` with the ids through the output-buffer protocol of every other
/// output, so that a caller need not count the batch's lines to size `out_ids`. The lines,
/// their checks and the atomic write are those of `mnem_put_episodes`, which stays as it
/// is for the programs written against it.
/// Once the whole batch has parsed, `*out_ids_len` receives 16 × its lines (blank lines have
/// no id): the size of the ids, 16 raw bytes per line's id in line order, which OK writes
/// to `out_ids`. When `out_ids` is not NULL and `out_ids_cap` is smaller, the call returns
/// BUFFER_TOO_SMALL and writes nothing, neither the episodes nor `out_ids`: call again with
/// `*out_ids_len` bytes (the size depends on the batch alone, so it fits). Nothing is
/// written because a write cannot be repeated safely (a line without `id` would get a
/// second new episode, one with an `id` a second revision) while a parse can: the retry
/// costs only a parse. A non-NULL `out_ids` with `out_ids_cap` 0 asks the size without
/// writing anything. `out_ids` NULL with `out_ids_cap` 0: the ids are not wanted; the
/// episodes are written and `*out_ids_len` still reports 16 × lines. `out_ids_len` may be
/// NULL only when `out_ids` is; on any status but OK and BUFFER_TOO_SMALL it is 0. The
/// size is reported before the checks that need the store (a read-only handle, a vector's
/// dimension, a deleted id, an episode over 64 MiB): the retry may meet them.
/// Returns OK; BUFFER_TOO_SMALL (`*out_ids_len` = bytes needed; nothing written);
/// INVALID_ARGUMENT (as `mnem_put_episodes`, or `out_ids` NULL with `out_ids_cap` not 0,
/// or `out_ids_len` NULL with `out_ids` not NULL: nothing written); READ_ONLY; BUSY; IO;
/// CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_put_episodes_v2(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    episodes_jsonl: mnem_str,
    out_ids: *mut u8,
    out_ids_cap: usize,
    out_ids_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    fn set_size(out: *mut usize, n: usize) {
        // SAFETY: a non-NULL `out_ids_len` points to a writable size_t (include/mnem.h).
        if let Some(l) = unsafe { out.as_mut() } {
            *l = n;
        }
    }
    let set_len = |n: usize| set_size(out_ids_len, n);
    // 0 first, so that a poisoned handle (which `guard` refuses before the closure) leaves 0.
    set_len(0);
    let s = store_ref(store);
    let status = guard(err, s, || {
        if out_ids.is_null() && out_ids_cap > 0 {
            return Err(Error::invalid("`out_ids` is NULL but `out_ids_cap` is not 0"));
        }
        if !out_ids.is_null() && out_ids_len.is_null() {
            return Err(Error::invalid("`out_ids_len` is NULL but `out_ids` is not"));
        }
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let (lines, inputs) =
            crate::wire::episode::parse_numbered_episode_lines(jsonl(episodes_jsonl, "episodes_jsonl")?)?;
        let need = inputs.len().saturating_mul(16);
        set_len(need);
        if !out_ids.is_null() && out_ids_cap < need {
            return Err(Error::new(
                Status::BufferTooSmall,
                format!(
                    "the ids of {} lines need {need} bytes; `out_ids_cap` is {out_ids_cap}; nothing was written",
                    inputs.len()
                ),
            ));
        }
        let ids = m.put_episode_lines(&ns, inputs, Some(&lines))?;
        if !out_ids.is_null() {
            copy_ids(out_ids, &ids);
        }
        Ok(())
    });
    if status != Status::Ok && status != Status::BufferTooSmall {
        set_len(0);
    }
    status
}

/// Delete episodes: one JSON string UUID per line. Each becomes a tombstone (a new revision
/// without its text, content or vector); unknown or already deleted ids are skipped.
/// `*out_deleted` (may be NULL) receives the number deleted.
/// Returns OK; INVALID_ARGUMENT (a line that is not a UUID string, named); READ_ONLY; BUSY;
/// IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_delete_episodes(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    ids_jsonl: mnem_str,
    out_deleted: *mut u64,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    set_count(out_deleted, 0);
    guard(err, s, || {
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let ids = crate::input::parse_id_lines(jsonl(ids_jsonl, "ids_jsonl")?)?;
        let n = m.delete_episodes(&ns, &ids)?;
        set_count(out_deleted, n);
        Ok(())
    })
}

/// BM25 over every visible episode of the namespace (primary, secondary and context text;
/// k1 1.2, b 0.75, f64). Query `{"text", "limit" (0-1000, default 10), "episode_type",
/// "tag"}` and the hit filters below; text without terms or limit 0 returns no results. Writes
/// `{"results":[{"record":Episode,"score":f64}...]}`, score descending, ties by UUID.
/// Hit filters (keyword, substring and hybrid queries, and `mnem_recall`): `"session_id"` and
/// `"author"` (the record's equal this), `"since"` (inclusive) and `"until"` (exclusive): the
/// record's time, its `timestamp` or else its creation time, in seconds since the Unix epoch
/// (`since` after `until` is INVALID_ARGUMENT), and `"min_score"` (the hit's score is at
/// least this; not for substring search). They choose which hits are returned and change no
/// score: BM25's statistics stay those of the corpus `episode_type` and `tag` choose.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (unknown key, bad value, text over 4096
/// bytes or 64 terms); BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_keyword_search(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query_json: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_keyword_search").str(app).str(user).str(query_json);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let q = KeywordQuery::parse(text(query_json, "query_json")?)?;
        let mut out = Vec::new();
        query::write_results(&mut out, &m.keyword_search(&ns, &q)?);
        Ok(out)
    })
}

/// One bounded BM25 page: a scan of the namespace's records in UUID order after `after`,
/// over one snapshot and one visibility time, until `scan_limit` records or
/// `scan_bytes_limit` stored bytes. Query `{"text" (1-4096 bytes, 1-64 distinct terms),
/// "limit" (1-100, default 10), "after" (UUID or null), "episode_type", "tag",
/// "scan_limit" (1-10000, default 10000), "scan_bytes_limit" (1-67108864, default 8388608)}`.
/// Deleted, expired and filtered-out records count as scanned but add neither hits nor
/// statistics. Writes `{"hits":[{"record","score"}...], "matched_records", "corpus_records",
/// "scanned_records", "scanned_bytes", "next_after", "exhaustive"}`: `next_after` is the last
/// visited UUID when a record was left unvisited (else null); `exhaustive` is true only for a
/// request without `after` that visited everything. Statistics are local to the page: scores
/// of different pages do not merge. Bytes count stored record values, not keys, indexes or
/// the one look-ahead record.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (any rule above, an unknown key, a
/// malformed `after`, blank or punctuation-only text, a byte budget that cannot fit the first
/// record: the message names the field); BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_lexical_page(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query_json: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_lexical_page").str(app).str(user).str(query_json);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let q = LexicalQuery::parse(text(query_json, "query_json")?)?;
        let mut out = Vec::new();
        query::write_page(&mut out, &m.search_memory_lexical(&ns, &q)?);
        Ok(out)
    })
}

/// Substring search (Rust: `Mnem::search_episodes`): visible episodes whose primary,
/// secondary or context text contains `text`, compared in lowercase. Query `{"text"
/// (non-empty), "limit" (0-1000, default 10), "episode_type", "tag"}` and the hit filters of
/// `mnem_keyword_search` but `min_score`; limit 0 returns no
/// results. Writes `{"results":[{"record":Episode}...]}` in ascending UUID order (roughly
/// creation order).
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_substring_search(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query_json: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_substring_search").str(app).str(user).str(query_json);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let q = KeywordQuery::parse(text(query_json, "query_json")?)?;
        let mut out = Vec::new();
        query::write_episodes(&mut out, &m.search_episodes(&ns, &q)?);
        Ok(out)
    })
}

/// Hybrid search: BM25 and approximate nearest neighbours (HNSW, cosine) fused by weighted
/// reciprocal rank fusion. Query `{"text", "vector" (optional array of up to 16,384 numbers),
/// "limit" (0-1000, default 10), "semantic_weight" (finite, 0-1, default 0.5; anything else
/// is INVALID_ARGUMENT, never clamped), "candidates" (per-channel multiplier of `limit`,
/// default 4, saturating), "episode_type", "tag", "vector_model" (the model that made `vector`,
/// or that the embedder embeds `text` with when the embedder names none: a namespace holds one
/// model's vectors, see `mnem_put_episodes`)}` and the hit filters of
/// `mnem_keyword_search`, which apply to both channels (`min_score` to the fused score).
/// Lexical weight = 1 - semantic_weight; a
/// zero-weight channel takes no part; without `vector`, or without a live vector in the
/// namespace (all deleted or expired counts as none), the lexical weight is 1. Without `vector`
/// and with an embedder registered (`mnem_set_embedder`), the embedder embeds `text` when the
/// search can use a vector (text not blank, limit and `semantic_weight` not 0); its failure
/// is EMBEDDER_FAILED. Each channel contributes `w / (60 + rank)` (rank from 1), summed
/// in f64, ties by ascending UUID. Limit 0 or blank text (empty or only Unicode White_Space)
/// returns no results. Writes
/// `{"results":[{"record","score","keyword_score","semantic_score"}...]}` where the last two
/// are the rank contributions, not raw BM25 or similarity.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (weight, vector dimension, unknown key...);
/// EMBEDDER_FAILED; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_hybrid_search(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query_json: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    // An embedder registered since changes what the same query answers.
    let changes = store_ref(store).map_or(0, |s| s.mnem.embedder_changes());
    let call = Call::new("mnem_hybrid_search").str(app).str(user).str(query_json).num(changes);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let q = HybridQuery::parse(text(query_json, "query_json")?)?;
        let mut out = Vec::new();
        query::write_hybrid_results(&mut out, &m.hybrid_search(&ns, &q)?);
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::null_mut;

    fn s(x: &str) -> mnem_str {
        mnem_str { ptr: x.as_ptr(), len: x.len() }
    }

    fn new_error() -> mnem_error {
        mnem_error { code: -1, detail: 7, message: [1; MNEM_ERROR_MESSAGE_CAP] }
    }

    fn message(e: &mnem_error) -> String {
        // SAFETY: `fill_error` always NUL-terminates within the array.
        unsafe { std::ffi::CStr::from_ptr(e.message.as_ptr()) }.to_string_lossy().into_owned()
    }

    fn open_memory() -> *mut mnem_store {
        let mut store = null_mut();
        let mut err = new_error();
        assert_eq!(mnem_open(s(":memory:"), MNEM_OPEN_CREATE, s(""), &mut store, &mut err), Status::Ok);
        assert_eq!((err.code, err.detail, message(&err).as_str()), (0, 0, ""));
        store
    }

    #[test]
    fn a_panic_becomes_internal_and_poisons_the_handle() {
        let store = open_memory();
        let mut err = new_error();
        let status = guard(&mut err, store_ref(store), || panic!("boom"));
        assert_eq!(status, Status::Internal);
        assert!(message(&err).contains("boom"));
        let mut len = 99;
        let st = mnem_search(store, s("a"), s("u"), s("q"), null_mut(), 0, &mut len, &mut err);
        assert_eq!((st, err.code, len), (Status::Internal, Status::Internal as i32, 0));
        assert_eq!(mnem_flush(store, &mut err), Status::Internal);
        mnem_free(store);
    }

    #[test]
    fn long_messages_truncate_on_a_char_boundary() {
        let mut err = new_error();
        let msg = "é".repeat(400);
        fill_error(&mut err, Status::InvalidArgument, &msg);
        let m = message(&err);
        assert!(m.len() < MNEM_ERROR_MESSAGE_CAP && m.len() >= MNEM_ERROR_MESSAGE_CAP - 3);
        assert!(m.chars().all(|c| c == 'é'));
    }

    #[test]
    fn output_buffer_protocol() {
        let store = open_memory();
        let mut err = new_error();
        let mut len = 0;
        let st = mnem_search(store, s("a"), s("u"), s("q"), null_mut(), 0, &mut len, &mut err);
        assert_eq!((st, len), (Status::BufferTooSmall, br#"{"memories":[]}"#.len()));
        let mut buf = vec![0xAAu8; len - 1];
        let st = mnem_search(store, s("a"), s("u"), s("q"), buf.as_mut_ptr(), buf.len(), &mut len, &mut err);
        assert_eq!(st, Status::BufferTooSmall);
        assert!(buf.iter().all(|&b| b == 0xAA), "untouched on BUFFER_TOO_SMALL");
        let mut buf = vec![0u8; len];
        let st = mnem_search(store, s("a"), s("u"), s("q"), buf.as_mut_ptr(), buf.len(), &mut len, &mut err);
        assert_eq!((st, &buf[..len]), (Status::Ok, &br#"{"memories":[]}"#[..]));
        let st = mnem_search(store, s("a"), s("u"), s("q"), null_mut(), 5, &mut len, &mut err);
        assert_eq!((st, len), (Status::InvalidArgument, 0));
        let mut stored = 9;
        let batch = b"{\"id\":\"a\",\"content\":{\"parts\":[{\"text\":\"x\"}]}}\n{\"id\":\"\xff\"}";
        let batch = mnem_str { ptr: batch.as_ptr(), len: batch.len() };
        let st = mnem_add_session(store, s("a"), s("u"), s("s"), batch, &mut stored, &mut err);
        assert_eq!((st, stored), (Status::InvalidArgument, 0));
        assert!(message(&err).contains("line 2"), "{}", message(&err));
        let bad = mnem_str { ptr: b"\xff".as_ptr(), len: 1 };
        let st = mnem_search(store, bad, s("u"), s("q"), buf.as_mut_ptr(), buf.len(), &mut len, &mut err);
        assert_eq!((st, len), (Status::InvalidArgument, 0));
        assert!(message(&err).contains("app_name"));
        let null = mnem_str { ptr: std::ptr::null(), len: 3 };
        let st = mnem_search(store, s("a"), null, s("q"), buf.as_mut_ptr(), buf.len(), &mut len, &mut err);
        assert_eq!(st, Status::InvalidArgument);
        assert!(message(&err).contains("user_id"));
        mnem_free(store);
        mnem_free(null_mut());
    }

    /// The graph cache's hits: each hybrid search that reads the namespace's graph adds one.
    fn graph_hits(store: *mut mnem_store) -> u64 {
        // SAFETY: a live handle from `open_memory`.
        unsafe { &*store }.mnem.stats().cache.hits
    }

    #[test]
    fn a_retry_with_a_larger_buffer_gets_the_kept_answer_without_a_second_search() {
        let store = open_memory();
        let mut err = new_error();
        let eps = (0..20)
            .map(|i| format!(r#"{{"primary":"apple number {i}","embedding":[{i}.5,1.0,{}.0]}}"#, 20 - i))
            .collect::<Vec<_>>()
            .join("\n");
        let st = mnem_put_episodes(store, s("a"), s("u"), s(&eps), null_mut(), 0, &mut err);
        assert_eq!(st, Status::Ok, "{}", message(&err));
        let q = r#"{"text":"apple","vector":[1.0,1.0,1.0],"semantic_weight":0.5}"#;
        let search = |buf: &mut Vec<u8>, q: &str, len: &mut usize, err: &mut mnem_error| {
            mnem_hybrid_search(store, s("a"), s("u"), s(q), buf.as_mut_ptr(), buf.len(), len, err)
        };
        let (mut len, mut small) = (0, vec![0u8; 8]);
        assert_eq!(search(&mut small, q, &mut len, &mut err), Status::BufferTooSmall);
        let hits = graph_hits(store);
        let mut buf = vec![0u8; len];
        assert_eq!(search(&mut buf, q, &mut len, &mut err), Status::Ok);
        assert_eq!(graph_hits(store), hits, "the retry read the graph again");
        let first = buf[..len].to_vec();
        // The same search again (not a retry: nothing is kept after an answer fits) searches.
        assert_eq!(search(&mut buf, q, &mut len, &mut err), Status::Ok);
        assert_eq!((graph_hits(store), &buf[..len]), (hits + 1, first.as_slice()));
        // Another call in between, or a write since, and the retry searches again.
        assert_eq!(search(&mut small, q, &mut len, &mut err), Status::BufferTooSmall);
        let other = r#"{"text":"number","vector":[1.0,1.0,1.0]}"#;
        let mut scratch = vec![0u8; 1 << 16];
        assert_eq!(search(&mut scratch, other, &mut len, &mut err), Status::Ok);
        let hits = graph_hits(store);
        assert_eq!(search(&mut buf, q, &mut len, &mut err), Status::Ok);
        assert_eq!(graph_hits(store), hits + 1);
        assert_eq!(search(&mut small, q, &mut len, &mut err), Status::BufferTooSmall);
        let st = mnem_put_episodes(store, s("a"), s("u"), s(r#"{"primary":"apple pie"}"#), null_mut(), 0, &mut err);
        assert_eq!(st, Status::Ok);
        let mut big = vec![0u8; 1 << 16];
        assert_eq!(search(&mut big, q, &mut len, &mut err), Status::Ok);
        // The new episode changes every BM25 score: the retry searched again.
        assert_ne!(&big[..len], first.as_slice(), "a write since, and the retry gave the kept answer");
        mnem_free(store);
    }

    #[test]
    fn open_rejects_bad_flags_and_options() {
        let mut store = null_mut();
        let mut err = new_error();
        assert_eq!(mnem_open(s(":memory:"), 8, s(""), &mut store, &mut err), Status::InvalidArgument);
        assert!(store.is_null() && message(&err).contains("flag"));
        for opts in [r#"{"sync_writes":1}"#, r#"{"sync":true}"#, "{", "[]"] {
            let st = mnem_open(s(":memory:"), MNEM_OPEN_CREATE, s(opts), &mut store, &mut err);
            assert_eq!(st, Status::InvalidArgument, "{opts}");
        }
        assert_eq!(mnem_open(s(":memory:"), 0, s(""), null_mut(), null_mut()), Status::InvalidArgument);
        let st = mnem_open(s(":memory:"), MNEM_OPEN_CREATE, s(r#"{"sync_writes":true}"#), &mut store, null_mut());
        assert_eq!(st, Status::Ok);
        mnem_free(store);
    }
}
