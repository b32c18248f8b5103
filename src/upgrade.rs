//! Building the derived indexes of a store written before they were persisted (format 1):
//! once, at its first read-write open, through the same staging steps as every write.

use crate::adk::memory_id;
use crate::derived::{IndexWrite, Placement};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, adk_tag};
use crate::record::Episode;
use crate::store::{now_ms, Snapshot, CF_ADK, CF_EPISODES, CF_INDEX};
use rocksdb::WriteBatch;
use std::collections::HashSet;
use uuid::Uuid;

/// Episodes staged per write batch: bounds the batch's memory.
const CHUNK: usize = 1000;

/// Build every namespace's indexes from its records, then record the current format.
/// Returns the number of namespaces indexed. A crash part-way leaves the old format record,
/// so the next open starts over (the partial index is cleared first).
pub(crate) fn build_indexes(m: &Engine) -> Result<u64> {
    m.store.clear_cf(CF_INDEX)?;
    let records = m.store.snapshot();
    let mut it = m.store.prefix_iter(&records, CF_EPISODES, &[], &[]);
    let mut namespaces = 0u64;
    let mut current: Option<(Vec<u8>, Placement)> = None;
    let mut chunk: Vec<Episode> = Vec::new();
    while it.valid() {
        let key = it.key().expect("valid iterator");
        let split = key.len().checked_sub(16).ok_or_else(|| Error::corruption("episode key is too short"))?;
        let (prefix, id) = key.split_at(split);
        let id = Uuid::from_bytes(id.try_into().expect("16 bytes"));
        if current.as_ref().is_none_or(|(p, _)| p != prefix) {
            if let Some((p, placement)) = &current {
                index_chunk(m, p, &mut chunk, placement)?;
            }
            current = Some((prefix.to_vec(), placement(m, &records, prefix)?));
            namespaces += 1;
        }
        let e = Episode::decode(id, it.value().expect("valid iterator"))?;
        if !e.deleted {
            chunk.push(e);
        }
        if chunk.len() == CHUNK {
            let (p, placement) = current.as_ref().expect("set above");
            index_chunk(m, p, &mut chunk, placement)?;
        }
        it.next();
    }
    it.status()?;
    if let Some((p, placement)) = &current {
        index_chunk(m, p, &mut chunk, placement)?;
    }
    m.settle()?;
    let mut b = WriteBatch::default();
    m.store.stage_format(&mut b);
    m.store.write(b)?;
    Ok(namespaces)
}

fn index_chunk(m: &Engine, prefix: &[u8], chunk: &mut Vec<Episode>, placement: &Placement) -> Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    // A fresh snapshot per chunk: each sees the index keys the previous chunks wrote.
    let snap = m.store.snapshot();
    let ctx = IndexWrite::new(&m.store, &snap, prefix, now_ms());
    let staged: Vec<&Episode> = chunk.iter().collect();
    m.commit_staged(&ctx, &staged, WriteBatch::default(), placement)?;
    chunk.clear();
    Ok(())
}

/// Where a namespace's ADK events sit (its order entries), and which episodes the ADK
/// index leaves out (those whose memory id `delete_memory` tombstoned).
fn placement(m: &Engine, snap: &Snapshot<'_>, prefix: &[u8]) -> Result<Placement> {
    let mut p = Placement::default();
    m.store.scan_prefix(snap, CF_ADK, &keys::adk_key(prefix, adk_tag::ORDER, &[]), |suffix, v| {
        match (keys::parse_order_suffix(suffix), <[u8; 16]>::try_from(v)) {
            (Some(place), Ok(id)) => p.places.insert(Uuid::from_bytes(id), place),
            _ => return Err(Error::corruption("ADK order record is malformed")),
        };
        Ok(true)
    })?;
    let mut tombstoned: HashSet<Vec<u8>> = HashSet::new();
    m.store.scan_prefix(snap, CF_ADK, &keys::adk_key(prefix, adk_tag::TOMBSTONE, &[]), |memory_id, _| {
        tombstoned.insert(memory_id.to_vec());
        Ok(true)
    })?;
    if !tombstoned.is_empty() {
        m.store.scan_prefix(snap, CF_EPISODES, prefix, |id, v| {
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
