//! The C ABI of store management (`crate::admin`): conversion and delegation only, under
//! the conventions of `super`.

use super::{
    guard, jsonl, mnem_error, mnem_store, mnem_str, namespace, need_store, read_call, set_count, store_ref, text, Call,
};
use crate::error::{Error, Status};
use crate::NamespacePage;

/// Forget the namespace `(app, user)`: every episode, tombstone, ADK bucket and order key,
/// `mnem_delete_memory` tombstone, index entry and its vector dimension go in one atomic
/// write, then the namespace's key ranges are compacted (down to the last level, memtables
/// flushed first) so that its bytes are gone from the store's files, not only hidden. A read
/// running at the same moment may keep old table files alive until it ends; they go at the
/// next compaction. The namespace may be written again afterwards, as a new one. Other
/// writes wait while it runs; reads do not. A namespace with nothing stored is a no-op (OK).
/// Returns OK; INVALID_ARGUMENT (NULL store, invalid UTF-8); READ_ONLY; BUSY; IO;
/// CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_forget_namespace(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    guard(err, s, || {
        let m = need_store(s)?;
        m.forget_namespace(&namespace(app, user)?)?;
        Ok(())
    })
}

/// Compact the whole store: memtables flushed and every table file rewritten down to the last
/// level, so that the bytes of deleted episodes (`mnem_delete_episodes`,
/// `mnem_delete_memory`, `mnem_delete_session`) and of overwritten revisions leave the files.
/// Takes time in proportion to the store's size; reads and writes go on meanwhile. To erase
/// one namespace, `mnem_forget_namespace` is faster: it compacts only that namespace's keys.
/// A compaction that fails returns its cause (CORRUPTION for a damaged table file, IO for a
/// full disk) and the store then refuses writes until it is reopened.
/// Returns OK; INVALID_ARGUMENT (NULL store); READ_ONLY; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_compact(store: *mut mnem_store, err: *mut mnem_error) -> Status {
    let s = store_ref(store);
    guard(err, s, || need_store(s)?.compact())
}

/// Delete what one ADK session added: every event stored in the bucket of `session_id` by
/// `mnem_add_session` / `mnem_add_events` (the id exactly as given there; events added with
/// an empty id are under "__unknown_session_id__") becomes a tombstone, and the bucket is
/// removed, in one atomic write that changes the indexes in the same batch. `mnem_search`
/// then ranks the remaining memories exactly as google-adk's `InMemoryMemoryService` would
/// had the session never been added; adding the session again later puts it after every
/// existing one. `mnem_delete_memory` tombstones stay. Like every delete, the records lose
/// the events' text at once, while older table files keep the bytes until RocksDB compacts
/// them (use `mnem_forget_namespace` to erase). `*out_deleted` (may be NULL) receives the
/// number of events deleted (expired ones included); an unknown session deletes nothing (OK).
/// Returns OK; INVALID_ARGUMENT (NULL store, invalid UTF-8); READ_ONLY; BUSY; IO;
/// CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_delete_session(
    store: *mut mnem_store,
    app: mnem_str,
    user: mnem_str,
    session_id: mnem_str,
    out_deleted: *mut u64,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    set_count(out_deleted, 0);
    guard(err, s, || {
        let m = need_store(s)?;
        let ns = namespace(app, user)?;
        let n = m.delete_session(&ns, text(session_id, "session_id")?)?;
        set_count(out_deleted, n);
        Ok(())
    })
}

/// The visible episodes with the given ids (one JSON string UUID per line of `ids_jsonl`,
/// at most 10,000), read from one snapshot. Writes `{"episodes":[Episode|null...]}`, one
/// element per line in line order: `null` where no visible episode has the id (never stored,
/// deleted or expired), so results line up with the request.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (a line that is not a UUID string, named;
/// more than 10,000 lines); BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_get_episodes(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    ids_jsonl: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_get_episodes").str(app).str(user).str(ids_jsonl);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = namespace(app, user)?;
        let ids = crate::input::parse_id_lines(jsonl(ids_jsonl, "ids_jsonl")?)?;
        m.get_episodes(&ns, &ids).map_err(|e| e.context("ids_jsonl"))
    })
}

/// One page of the store's namespaces, from one snapshot. `list_query_json` (empty for defaults):
/// `{"limit": 1-1000 (default 100), "after": {"app_name","user_id"} | null}`. Writes
/// `{"namespaces":[{"app_name","user_id","episodes"}...],"next_after":{"app_name","user_id"}|null}`:
/// pass `next_after` as the next query's `after` until it is null. Order: by the byte length
/// of `app_name`, then its bytes, then likewise `user_id` (the key order). `episodes` counts
/// the episodes not deleted (expired ones count until a later write purges them), read
/// from a counter, not a scan. A namespace is listed while it holds any record or ADK
/// session, deleted episodes included (their tombstones stay), until
/// `mnem_forget_namespace`.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT (unknown key, bad `limit` or `after`);
/// BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_list_namespaces(
    store: *const mnem_store,
    list_query_json: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_list_namespaces").str(list_query_json);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let (after, limit) = NamespacePage::parse_query(text(list_query_json, "list_query_json")?)
            .map_err(|e| e.context("list_query_json"))?;
        Ok(m.list_namespaces(after.as_ref(), limit)?.to_json())
    })
}

/// One namespace's statistics, counted by a scan of its keys (time in proportion to them):
/// `{"records":{"keys","bytes"}, "live", "deleted", "expired", "buckets", "bucket_events",
/// "memory_tombstones", "adk":{"keys","bytes"}, "index":{"bm25":{"keys","bytes"},
/// "adk":{...},"vector":{...}}, "dimension": N|null, "embedding_model": string|null, "approximate_file_bytes"}`. `records`
/// are the stored episode records (one per episode, tombstones included), split into `live`
/// (visible now), `deleted` and `expired`; `buckets`, `bucket_events` and `memory_tombstones`
/// count ADK sessions, the events they hold and `mnem_delete_memory` ids; `adk` and `index`
/// count keys and their bytes (key + value) by column family and index; the last is
/// RocksDB's estimate of the table-file bytes of the namespace. An unknown namespace has
/// zeros.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_namespace_stats(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_namespace_stats").str(app).str(user);
    read_call(store, call, out, out_cap, out_len, err, |m| Ok(m.namespace_stats(&namespace(app, user)?)?.to_json()))
}

/// Online backup: copy the store, consistently and while it stays open, into the new
/// directory `dest` (RocksDB's checkpoint: table files hard-linked when `dest` is on the same
/// file system, copied otherwise). The copy is a store of its own that `mnem_open` reads like
/// the original. Writes on this handle wait while it runs; reads do not. `dest` must not exist.
/// Returns OK; INVALID_ARGUMENT (NULL store, empty or existing `dest`, a `:memory:` store);
/// READ_ONLY (a read-only handle); BUSY; IO; CORRUPTION (RocksDB's, while copying); INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_backup(store: *mut mnem_store, dest: mnem_str, err: *mut mnem_error) -> Status {
    let s = store_ref(store);
    guard(err, s, || need_store(s)?.backup(text(dest, "dest")?))
}

/// Integrity check: read every key of the store with RocksDB's block checksums verified
/// (bypassing the block cache) and parse every episode record, stopping at the first problem.
/// Writes `{"ok": bool, "keys": {"meta","episodes","adk","index"}, "bytes", "episodes",
/// "problem": null | {"status": "CORRUPTION" | "IO" | ..., "message"}}`: the counts read up
/// to the problem, if any. The status says whether the check ran; its verdict is `ok`.
/// Time in proportion to the store's size; other calls go on meanwhile.
/// Returns OK (whatever the check found); BUFFER_TOO_SMALL (the check runs again on the next
/// call); INVALID_ARGUMENT; BUSY, IO and CORRUPTION are reported in `problem`, never returned
/// (listed for the rule that every store function may return them); INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_check(
    store: *const mnem_store,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_check");
    read_call(store, call, out, out_cap, out_len, err, |m| Ok(m.check(&mut |_| {}).to_json()))
}

/// Export as JSON Lines (format in docs/EXPORT.md): the namespace `(app, user)`, or every
/// namespace when `all` is non-zero (then `app` and `user` are ignored), from one snapshot:
/// a header line, per namespace its ADK buckets, `mnem_delete_memory` ids, ADK order (each
/// event's place) and every episode record (tombstones included) with revision, times,
/// expiry, metadata, content and embedding, then an end line with the counts. `mnem_import` of the output reproduces
/// the records and ADK order, so every search answers the same. The whole export is built
/// in memory for each call (BUFFER_TOO_SMALL builds it again): for large stores use
/// `mnem_export_page`, or the `mnem export` tool, which streams.
/// Returns OK; BUFFER_TOO_SMALL; INVALID_ARGUMENT; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_export(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    all: i32,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_export").str(app).str(user).num(all as u64);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = if all != 0 { None } else { Some(namespace(app, user)?) };
        let mut buf = Vec::new();
        m.export(ns.as_ref(), &mut buf, &mut |_, _| {})?;
        Ok(buf)
    })
}

/// Import an export (`mnem_export`, `mnem export`): the whole input is parsed and checked
/// first; a bad line is INVALID_ARGUMENT naming its number, and so is a truncated input (no
/// end line) or a namespace that already holds data in this store: nothing is written then.
/// Each namespace is then written in batches of 1,000 episodes with their index changes;
/// other writes wait until it ends. An I/O failure part-way can leave the namespace being
/// written partial: `mnem_forget_namespace` it and import again. `*out_episodes` (may be
/// NULL) receives the number of episode records imported.
/// Returns OK; INVALID_ARGUMENT; READ_ONLY; BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_import(
    store: *mut mnem_store,
    export_jsonl: mnem_str,
    out_episodes: *mut u64,
    err: *mut mnem_error,
) -> Status {
    let s = store_ref(store);
    set_count(out_episodes, 0);
    guard(err, s, || {
        let m = need_store(s)?;
        let t = m.import(text(export_jsonl, "export_jsonl")?, &mut |_, _| {})?;
        set_count(out_episodes, t.episodes);
        Ok(())
    })
}

/// One page of an export, for stores too large for one buffer: the lines after `cursor`
/// (empty: from the start) until at least `max_bytes` are written (at least one line) or
/// the export ends, read from a snapshot of its own. Writes `{"lines": "<JSON Lines>",
/// "next_cursor": "<opaque>" | null}`: append `lines` to the export and call again with
/// `next_cursor` until it is null (the page that holds the end line). `app`, `user` and
/// `all` must be the same on every page (as for `mnem_export`). The pages together are the
/// export `mnem_export` writes when nothing is written to the store in between; writes
/// between pages can leave the pages inconsistent, which `mnem_import` then refuses.
/// Returns OK; BUFFER_TOO_SMALL (the same call again, with a larger buffer, writes the same
/// page unless the store changed); INVALID_ARGUMENT (a cursor this build did not write, or of
/// an export that has ended); BUSY; IO; CORRUPTION; INTERNAL.
#[no_mangle]
pub extern "C" fn mnem_export_page(
    store: *const mnem_store,
    app: mnem_str,
    user: mnem_str,
    all: i32,
    cursor: mnem_str,
    max_bytes: u64,
    out: *mut u8,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> Status {
    let call = Call::new("mnem_export_page").str(app).str(user).num(all as u64).str(cursor).num(max_bytes);
    read_call(store, call, out, out_cap, out_len, err, |m| {
        let ns = if all != 0 { None } else { Some(namespace(app, user)?) };
        let cursor = text(cursor, "cursor")?;
        let mut lines = Vec::new();
        let next = m.export_page(ns.as_ref(), (!cursor.is_empty()).then_some(cursor), max_bytes, &mut lines)?;
        let lines = String::from_utf8(lines).map_err(|_| Error::corruption("an export line is not UTF-8"))?;
        let mut buf = Vec::new();
        crate::wire::export::write_export_page(&mut buf, &lines, next.as_deref());
        Ok(buf)
    })
}
