//! The embedder callback of the C ABI (`mnem_embed_fn`), its registration on a store, the
//! hybrid search that takes one for a single call, and `mnem_recall`.

use super::{guard, namespace, need_store, read_call, store_ref, text, Call};
use super::{mnem_error, mnem_store, mnem_str, MNEM_ERROR_MESSAGE_CAP};
use crate::adk::RecallQuery;
use crate::embed::EmbeddingProvider;
use crate::error::{Error, Result, Status};
use crate::record::MAX_DIMENSION;
use crate::wire::query;
use crate::HybridQuery;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// An embedder: writes the vector of the UTF-8 `text` (`text.len` bytes, no NUL) into `out`,
/// room for `out_cap` floats, and the number of floats into `*out_len`, then returns
/// `MNEM_STATUS_OK` (0). A vector longer than `out_cap`: set `*out_len` to its length and
/// return `MNEM_STATUS_BUFFER_TOO_SMALL` (2) without writing `out`; mnem calls once more with
/// that room (at most 16,384 floats). Any other return value is a failure: write a
/// NUL-terminated message into `err->message` (at most `MNEM_ERROR_MESSAGE_CAP` bytes with
/// the NUL; mnem clears it before the call) and mnem returns `MNEM_STATUS_EMBEDDER_FAILED`
/// with it, having written nothing. `text` and `out` are valid only during the call.
/// `user_data` is the pointer given with the callback. The callback may be called from any
/// thread that calls mnem, by several at once: it must be thread-safe. It is never called
/// under mnem's writers' lock, and it must not call mnem on the same handle.
pub type mnem_embed_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        text: mnem_str,
        out: *mut f32,
        out_cap: usize,
        out_len: *mut usize,
        err: *mut mnem_error,
    ) -> i32,
>;

/// A C callback as an `EmbeddingProvider`.
struct CEmbedder {
    f: unsafe extern "C" fn(*mut c_void, mnem_str, *mut f32, usize, *mut usize, *mut mnem_error) -> i32,
    user_data: *mut c_void,
    /// The room of the first call: the last vector's length (vectors of one model share it).
    room: AtomicUsize,
    /// The model's name, as the caller gave it (`mnem_set_named_embedder`).
    model: Option<String>,
}

// SAFETY: the header requires the callback and its `user_data` to be usable from any thread,
// concurrently (`mnem_set_embedder`, `mnem_hybrid_search_with`); mnem only passes the
// pointer back to the callback.
unsafe impl Send for CEmbedder {}
// SAFETY: as for `Send`: concurrent calls are what the header allows the caller to expect.
unsafe impl Sync for CEmbedder {}

/// What a callback wrote into `err.message`, up to its NUL (or the whole array).
fn callback_message(err: &mnem_error) -> String {
    let bytes: Vec<u8> = err.message.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl CEmbedder {
    fn new(
        f: unsafe extern "C" fn(*mut c_void, mnem_str, *mut f32, usize, *mut usize, *mut mnem_error) -> i32,
        user_data: *mut c_void,
    ) -> CEmbedder {
        CEmbedder { f, user_data, room: AtomicUsize::new(1024), model: None }
    }

    fn named(mut self, model: Option<String>) -> CEmbedder {
        self.model = model;
        self
    }

    /// One call with room for `cap` floats: (status, floats written or needed, message).
    fn call(&self, text: &str, buf: &mut [f32]) -> (i32, usize, String) {
        let mut err = mnem_error { code: 0, detail: 0, message: [0; MNEM_ERROR_MESSAGE_CAP] };
        let mut len = 0usize;
        let t = mnem_str { ptr: text.as_ptr(), len: text.len() };
        // SAFETY: the callback was registered as a `mnem_embed_fn`; every pointer passed is
        // valid for the call: `text` for `len` bytes, `buf` for `buf.len()` floats, `len` and
        // `err` writable.
        let st = unsafe { (self.f)(self.user_data, t, buf.as_mut_ptr(), buf.len(), &mut len, &mut err) };
        (st, len, callback_message(&err))
    }
}

impl EmbeddingProvider for CEmbedder {
    fn embed(&self, text: &str) -> Result<Vec<f32>> {
        let failed = |m: String| Error::new(Status::EmbedderFailed, m);
        let mut buf = vec![0f32; self.room.load(Ordering::Relaxed).clamp(1, MAX_DIMENSION)];
        let (mut st, mut len, mut msg) = self.call(text, &mut buf);
        if st == Status::BufferTooSmall as i32 {
            if len <= buf.len() || len > MAX_DIMENSION {
                return Err(failed(format!(
                    "the embedder asked for room for {len} floats (it had {}; at most {MAX_DIMENSION})",
                    buf.len()
                )));
            }
            buf = vec![0f32; len];
            (st, len, msg) = self.call(text, &mut buf);
        }
        if st != Status::Ok as i32 {
            return Err(failed(if msg.is_empty() {
                format!("the embedder failed (it returned {st})")
            } else {
                format!("the embedder failed: {msg}")
            }));
        }
        if len > buf.len() {
            return Err(failed(format!("the embedder wrote {len} floats into room for {}", buf.len())));
        }
        buf.truncate(len);
        self.room.store(len, Ordering::Relaxed);
        Ok(buf)
    }

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

/// Register the embedder of the store: `embed` with `user_data` (NULL `embed` removes it;
/// `user_data` is then ignored). With one registered: an episode line may say
/// `"embed": true` (its text is embedded before the write); `mnem_add_session` and
/// `mnem_add_events` store each event's vector with the event (of its searchable text;
/// an event stored before with the same text keeps its vector, without a call); and
/// `mnem_hybrid_search` and `mnem_recall` embed a query given without `vector` when the
/// search can use one (text not blank, limit and `semantic_weight` not 0). The embedder is
/// called before a write takes the writers' lock, from the calling thread, so slow models
/// delay only their own call; a failure (see `mnem_embed_fn`) is
/// `MNEM_STATUS_EMBEDDER_FAILED`, and nothing is written. Calls already running keep the
/// embedder they started with: keep `user_data` alive until they have returned.
/// Returns OK; INVALID_ARGUMENT (NULL store); INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_set_embedder(
    store: *const mnem_store,
    embed: mnem_embed_fn,
    user_data: *mut c_void,
    err: *mut mnem_error,
) -> Status {
    register_embedder(store, None, embed, user_data, err)
}

/// `mnem_set_embedder` (`model` None) and `mnem_set_named_embedder`.
fn register_embedder(
    store: *const mnem_store,
    model: Option<mnem_str>,
    embed: mnem_embed_fn,
    user_data: *mut c_void,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    guard(err, s, || {
        let m = need_store(s)?;
        let Some(f) = embed else {
            m.set_embedder(None);
            return Ok(());
        };
        let name = match model {
            Some(model) => {
                let name = text(model, "model")?;
                crate::vector::check_model_name("model", name)?;
                Some(name.to_owned())
            }
            None => None,
        };
        m.set_embedder(Some(Arc::new(CEmbedder::new(f, user_data).named(name)) as Arc<dyn EmbeddingProvider>));
        Ok(())
    })
}

/// `mnem_set_embedder` with the name of the embedder's model: `model` (1 to 256 bytes of
/// UTF-8) is recorded with the namespace's vectors that the embedder makes, as the built-in
/// embedder's is (see `embedding_model` in `mnem_put_episodes`), so that vectors of two
/// models never mix in one namespace: a write or query embedded by a model other than the one
/// a namespace's vectors name, or by an unnamed one into a namespace whose vectors name one,
/// is INVALID_ARGUMENT naming both, and nothing is written. NULL `embed` removes the
/// embedder, as `mnem_set_embedder` (`model` and `user_data` are then ignored).
/// Returns OK; INVALID_ARGUMENT (NULL store, `model` empty, over 256 bytes or not UTF-8);
/// INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_set_named_embedder(
    store: *const mnem_store,
    model: mnem_str,
    embed: mnem_embed_fn,
    user_data: *mut c_void,
    err: *mut mnem_error,
) -> Status {
    register_embedder(store, Some(model), embed, user_data, err)
}

/// `mnem_hybrid_search` with `embed` (and its `user_data`) as the embedder of this call, in
/// place of the store's: called at most once, for a query without `vector` that can use one
/// (text not blank, limit and `semantic_weight` not 0). NULL `embed` is the store's
/// embedder, as `mnem_hybrid_search`. The query's `vector_model` names the model of `embed`
/// (absent: unnamed), with the rule of `mnem_set_named_embedder`.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (as `mnem_hybrid_search`); EMBEDDER_FAILED;
/// BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_hybrid_search_with(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query_json: mnem_str,
    embed: mnem_embed_fn,
    user_data: *mut c_void,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let callback = embed.map_or(0, |f| f as usize) as u64;
    let call = Call::new("mnem_hybrid_search_with")
        .str(app)
        .str(user)
        .str(query_json)
        .num(callback)
        .num(user_data as usize as u64)
        .num(store_ref(store).map_or(0, |s| s.mnem.embedder_changes()));
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let q = HybridQuery::parse(text(query_json, "query_json")?)?;
        let results = match embed {
            Some(f) => m.hybrid_search_with(&ns, &q, &CEmbedder::new(f, user_data))?,
            None => m.hybrid_search(&ns, &q)?,
        };
        let mut out = Vec::new();
        query::write_hybrid_results(&mut out, &results);
        Ok(out)
    })
}

/// ADK `search_memory` with the controls ADK lacks: a ranking mode, a limit, filters and
/// semantic recall. Query `{"text" (required), "mode", "vector" (optional; without it the
/// store's embedder embeds `text` in the modes that use vectors), "vector_model" (as in
/// `mnem_hybrid_search`), "limit" (0-100, default 10), "semantic_weight" (finite, 0-1, default
/// 0.5), "candidates" (each ranking fused gives `limit × candidates`, default 4)}` and the hit
/// filters of `mnem_keyword_search`. `mode`:
/// - "adk_vectors" (the default): ADK's ranking (`mnem_search`) fused with the nearest vectors
///   of the namespace's ADK events and memories (those `mnem_add_session`, `mnem_add_events`
///   and `mnem_put_episodes` stored with a vector) by the weighted reciprocal rank fusion of
///   `mnem_hybrid_search`;
/// - "hybrid": BM25 over the ADK events and memories (their first 4096 bytes and 64 distinct
///   terms) fused with the nearest vectors likewise;
/// - "bm25": that BM25 ranking alone; "adk": ADK's ranking alone.
///
/// Without a vector (no `vector`, no embedder) or without a live vector in the namespace, or
/// with `semantic_weight` 0, a fused mode answers with its lexical ranking ("adk_vectors" then
/// answers as `mnem_search`). Each ranking ranks only the memories the hit filters accept (ADK's: at
/// most 10, as ADK would rank a memory holding only those). `min_score` applies to BM25's score
/// ("bm25") or the fused score; "adk" has no score and refuses it. Deleted, expired and
/// forgotten memories are never found. Blank text or limit 0 returns no memories. Writes
/// `mnem_search`'s `{"memories":[MemoryEntry...]}`, best first.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (unknown key, bad value, vector
/// dimension or model); EMBEDDER_FAILED; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_recall(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    query_json: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_recall")
        .str(app)
        .str(user)
        .str(query_json)
        .num(store_ref(store).map_or(0, |s| s.mnem.embedder_changes()));
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let q = RecallQuery::parse(text(query_json, "query_json")?)?;
        m.recall(&ns, &q)
    })
}
