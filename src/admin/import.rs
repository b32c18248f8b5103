//! Import: the JSON Lines of `export` back into a store, through the same index staging as
//! every write. The whole input is parsed and checked (`crate::wire::export`) before
//! anything is written.

use super::export::{Progress, Transfer};
use crate::derived::{IndexWrite, Placement};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, adk_tag};
use crate::record::Episode;
use crate::store::{now_ms, CF_ADK, CF_EPISODES};
use crate::wire::export::{parse_export, NsImport};
use crate::Mnem;
use rocksdb::WriteBatch;
use std::collections::HashSet;

/// Episodes per write batch: bounds a batch's memory, as the format upgrade does.
const CHUNK: usize = 1000;

impl Engine {
    /// `Mnem::import` (the public documentation is there).
    pub(crate) fn import(&self, input: &str, progress: Progress<'_>) -> Result<Transfer> {
        self.store.check_writable()?;
        let (namespaces, lines) = parse_export(input)?;
        let _w = self.write_lock.lock();
        let snap = self.store.snapshot();
        for n in &namespaces {
            if self.namespace_exists(&snap, &n.ns.prefix())? {
                return Err(Error::invalid(format!(
                    "namespace (app_name {:?}, user_id {:?}) already holds data in this store; nothing was imported \
                     (forget it first to replace it)",
                    n.ns.app_name, n.ns.user_id
                )));
            }
        }
        drop(snap);
        let mut t = Transfer { lines, ..Transfer::default() };
        for n in namespaces {
            self.import_namespace(n, &mut t, progress)?;
            t.namespaces += 1;
        }
        Ok(t)
    }

    fn import_namespace(&self, n: NsImport, t: &mut Transfer, progress: Progress<'_>) -> Result<()> {
        let prefix = n.ns.prefix();
        let mut batch = WriteBatch::default();
        let adk = self.store.cf(CF_ADK);
        if n.next_bucket > 0 {
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::NAMESPACE, &[]), n.next_bucket.to_le_bytes());
        }
        for (session, pos, next_seq) in &n.buckets {
            let mut v = pos.to_le_bytes().to_vec();
            v.extend_from_slice(&next_seq.to_le_bytes());
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::BUCKET, session.as_bytes()), v);
        }
        for id in &n.tombstones {
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::TOMBSTONE, id.as_bytes()), []);
        }
        self.vectors.stage_dimension(&self.store, &mut batch, &n.ns, n.dimension);
        let tombstoned: HashSet<&str> = n.tombstones.iter().map(String::as_str).collect();
        let mut placement = Placement::default();
        for (p, seq, id, _) in &n.orders {
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::ORDER, &keys::order_suffix(*p, *seq)), id.as_bytes());
            placement.places.insert(*id, (*p, *seq));
        }
        for e in &n.episodes {
            if !e.deleted && tombstoned.contains(crate::adk::memory_id(e.event_id.as_deref(), &e.id).as_str()) {
                placement.excluded.insert(e.id);
            }
        }
        let mut chunks = n.episodes.chunks(CHUNK).peekable();
        if chunks.peek().is_none() {
            return self.store.write(batch);
        }
        for chunk in chunks {
            for e in chunk {
                batch.put_cf(self.store.cf(CF_EPISODES), keys::episode_key(&prefix, &e.id), e.encode());
            }
            let staged: Vec<&Episode> = chunk.iter().filter(|e| !e.deleted).collect();
            // A fresh snapshot per chunk: each sees the index keys the previous chunks wrote.
            let snap = self.store.snapshot();
            let ctx = IndexWrite::new(&self.store, &snap, &prefix, now_ms());
            self.commit_staged(&ctx, &staged, std::mem::take(&mut batch), &placement)?;
            t.episodes += chunk.len() as u64;
            progress(t.episodes, 0);
        }
        Ok(())
    }
}

impl Mnem {
    /// Import an `export` (docs/EXPORT.md). The whole input is parsed and checked first: a
    /// bad line is `INVALID_ARGUMENT` naming its number, and so is a namespace that already
    /// holds data here, or a truncated input (no end line); nothing is written then. Then
    /// each namespace is written in batches of 1,000 episodes with their index changes;
    /// other writes wait until the import ends. An I/O failure part-way can leave the
    /// namespace being written partial: forget it and import again. `progress` hears the
    /// episodes written so far.
    pub fn import(&self, input: &str, progress: Progress<'_>) -> Result<Transfer> {
        self.engine().import(input, progress)
    }
}
