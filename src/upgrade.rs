//! Bringing an older store's indexes up to this build's format, once, at its first
//! read-write open: a store written before indexes were persisted (format 1) gets them built
//! through the same staging steps as every write; an ADK index without char-pair postings
//! (formats 2 and 3) gets them from its own texts.

use crate::adk::index::{self, PAIRS_FORMAT};
use crate::adk::memory_id;
use crate::adk::state::AdkState;
use crate::derived::{Placed, Placement};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys;
use crate::record::Episode;
use crate::store::Batch;
use crate::store::{Cf, OpenOptions, Snapshot, FIRST_INDEXED_FORMAT, FORMAT_VERSION};
use crate::txn::{WriteTxn, Writers, CHUNK};
use std::collections::HashSet;
use uuid::Uuid;

/// Open the store at `path` and bring an older format up to this build's: a format-1 store
/// gets its indexes built (once; `Stats::indexes_built`); a format-2 or format-3 store, whose
/// ADK index lacks char-pair postings, gets them (format 3 only added the journal, empty in
/// a format-2 store). Read-only, a format-2 or format-3 store is read as it is.
pub(crate) fn open(path: &str, opts: OpenOptions) -> Result<Engine> {
    let mut engine = Engine::open(path, opts)?;
    let opened = engine.store.opened_format();
    if opened < FIRST_INDEXED_FORMAT {
        engine.indexes_built = build_indexes(&engine)?;
        engine.adk.pairs = true;
    } else if opened < FORMAT_VERSION && !engine.store.is_read_only() {
        if opened < PAIRS_FORMAT {
            add_pairs(&engine)?;
            engine.adk.pairs = true;
        }
        let mut b = Batch::default();
        engine.store.stage_format(&mut b);
        engine.store.write(b)?;
    }
    Ok(engine)
}

/// Add the ADK index's char-pair postings to every namespace, one namespace held at a time.
/// A crash part-way leaves the old format recorded; the next open carries on.
fn add_pairs(m: &Engine) -> Result<()> {
    let writers = Writers::lock(m)?;
    let snap = m.store.snapshot_without_postings();
    let mut from = Vec::new();
    loop {
        let first = {
            let it = m.store.prefix_iter(&snap, Cf::Index, &[], &from);
            it.status()?;
            it.key().map(<[u8]>::to_vec)
        };
        let Some(key) = first else { break };
        let n = keys::namespace_len(&key).ok_or_else(|| Error::corruption("an index key has no namespace"))?;
        let prefix = &key[..n];
        let lock = m.store.lock_namespace(prefix)?;
        index::add_pairs(&m.store, prefix, CHUNK, |b| lock.write(b))?;
        drop(lock);
        let Some(next) = keys::prefix_successor(prefix) else { break };
        from = next;
    }
    writers.settle()
}

/// Build every namespace's indexes from its records, then record the current format.
/// Returns the number of namespaces indexed. A crash part-way leaves the old format record,
/// so the next open starts over (the partial index is cleared first).
fn build_indexes(m: &Engine) -> Result<u64> {
    let writers = Writers::lock(m)?;
    m.store.clear_cf(Cf::Index)?;
    let records = m.store.snapshot_without_postings();
    let mut it = m.store.prefix_iter(&records, Cf::Episodes, &[], &[]);
    let mut namespaces = 0u64;
    let mut current: Option<WriteTxn<'_>> = None;
    let mut chunk: Vec<Episode> = Vec::new();
    while it.valid() {
        let key = it.key().expect("valid iterator");
        let split = key.len().checked_sub(16).ok_or_else(|| Error::corruption("episode key is too short"))?;
        let (prefix, id) = key.split_at(split);
        let id = Uuid::from_bytes(id.try_into().expect("16 bytes"));
        if current.as_ref().is_none_or(|t| t.prefix() != prefix) {
            if let Some(t) = &mut current {
                index_chunk(t, &mut chunk)?;
            }
            let mut txn = writers.begin_at(prefix)?;
            txn.placement = placement(m, &records, prefix)?;
            current = Some(txn);
            namespaces += 1;
        }
        let e = Episode::decode(id, it.value().expect("valid iterator"))?;
        if !e.deleted {
            chunk.push(e);
        }
        if chunk.len() == CHUNK {
            index_chunk(current.as_mut().expect("set above"), &mut chunk)?;
        }
        it.next();
    }
    it.status()?;
    if let Some(t) = &mut current {
        index_chunk(t, &mut chunk)?;
    }
    drop(current);
    writers.settle()?;
    let mut b = Batch::default();
    m.store.stage_format(&mut b);
    m.store.write(b)?;
    Ok(namespaces)
}

fn index_chunk(txn: &mut WriteTxn<'_>, chunk: &mut Vec<Episode>) -> Result<()> {
    if !chunk.is_empty() {
        txn.commit_built(chunk, false)?;
        chunk.clear();
    }
    Ok(())
}

/// Where a namespace's ADK events sit (its order entries), and which episodes the ADK
/// index leaves out (those whose memory id `delete_memory` tombstoned).
fn placement(m: &Engine, snap: &Snapshot<'_>, prefix: &[u8]) -> Result<Placement> {
    let mut p = Placement::default();
    let state = AdkState { store: &m.store, snap, prefix };
    state.order(None, None, |position, seq, id| {
        p.places.insert(id, Placed { bucket: position, seq, primary_is_content_text: false });
        Ok(true)
    })?;
    let tombstoned: HashSet<Vec<u8>> = state.tombstones()?.into_iter().collect();
    if !tombstoned.is_empty() {
        m.store.scan_prefix(snap, Cf::Episodes, prefix, |id, v| {
            let id =
                Uuid::from_bytes(id.try_into().map_err(|_| Error::corruption("episode key has a malformed length"))?);
            let view = crate::record::RecordView::parse(id, v)?;
            if tombstoned.contains(memory_id(view.event_id(), &id).as_bytes()) {
                p.excluded.insert(id);
            }
            Ok(true)
        })?;
    }
    Ok(p)
}
