//! Vectors: stored in each episode record (the source of truth); the per-namespace HNSW
//! index is derived from them on first use after open and kept in step by every write.

pub mod hnsw;

use crate::error::{Error, Result};
use crate::keys::Namespace;
use crate::mnem::{IndexWrite, Mnem};
use crate::record::Episode;
use crate::store::{Store, CF_META};
use hnsw::Hnsw;
use parking_lot::RwLock;
use rocksdb::{Snapshot, WriteBatch};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use uuid::Uuid;

/// The HNSW index of one namespace and the episode behind each node.
pub struct NsVectors {
    pub hnsw: Hnsw,
    node_of: HashMap<Uuid, u32>,
    id_of: Vec<Uuid>,
    expires: Vec<Option<i64>>,
    /// Live nodes that never expire, and the expiry times of the live nodes that do (with
    /// counts): whether any vector is live at a given time, without a scan.
    live_forever: usize,
    live_until: BTreeMap<i64, usize>,
}

impl NsVectors {
    fn new(dim: usize) -> NsVectors {
        NsVectors {
            hnsw: Hnsw::new(dim),
            node_of: HashMap::new(),
            id_of: Vec::new(),
            expires: Vec::new(),
            live_forever: 0,
            live_until: BTreeMap::new(),
        }
    }

    fn remove(&mut self, id: &Uuid) {
        let Some(n) = self.node_of.remove(id) else { return };
        self.hnsw.delete(n);
        match self.expires[n as usize] {
            None => self.live_forever -= 1,
            Some(t) => {
                let c = self.live_until.get_mut(&t).expect("a live node's expiry is counted");
                *c -= 1;
                if *c == 0 {
                    self.live_until.remove(&t);
                }
            }
        }
    }

    fn add(&mut self, id: Uuid, v: &[f32], expires: Option<i64>) {
        self.remove(&id);
        let n = self.hnsw.insert(&hnsw::normalize(v));
        self.node_of.insert(id, n);
        self.id_of.push(id);
        self.expires.push(expires);
        match expires {
            None => self.live_forever += 1,
            Some(t) => *self.live_until.entry(t).or_default() += 1,
        }
    }

    /// Is any vector of the namespace visible at `now_ms` (not deleted, not expired)?
    pub fn has_live(&self, now_ms: i64) -> bool {
        self.live_forever > 0 || self.live_until.range(now_ms.saturating_add(1)..).next().is_some()
    }

    /// Up to `k` visible episodes nearest to `query` (any length-`dim` vector), with their
    /// cosine similarity, best first.
    pub fn nearest(&self, query: &[f32], k: usize, now_ms: i64, keep: impl Fn(&Uuid) -> bool) -> Vec<(Uuid, f32)> {
        let q = hnsw::normalize(query);
        let ef = k.saturating_mul(2).max(128);
        self.hnsw
            .search(&q, k, ef, |n| self.expires[n as usize].is_none_or(|e| now_ms < e) && keep(&self.id_of[n as usize]))
            .into_iter()
            .map(|(n, s)| (self.id_of[n as usize], s))
            .collect()
    }

    fn wants_rebuild(&self) -> bool {
        let dead = self.hnsw.len() - self.hnsw.live();
        dead > 1024 && dead > self.hnsw.live()
    }
}

/// Loaded namespace indexes, by namespace prefix.
#[derive(Default)]
pub struct VectorCache {
    map: RwLock<HashMap<Vec<u8>, Arc<RwLock<NsVectors>>>>,
}

fn dim_key(ns: &Namespace) -> Vec<u8> {
    let mut k = b"dim:".to_vec();
    k.extend_from_slice(&ns.prefix());
    k
}

impl VectorCache {
    /// The namespace's vector dimension, fixed by its first vector.
    pub(crate) fn dimension(&self, store: &Store, snap: &Snapshot<'_>, ns: &Namespace) -> Result<Option<u32>> {
        match store.get_cf(snap, CF_META, &dim_key(ns))? {
            Some(v) => Ok(Some(u32::from_le_bytes(
                v.as_slice().try_into().map_err(|_| Error::corruption("vector dimension record is malformed"))?,
            ))),
            None => Ok(None),
        }
    }

    pub(crate) fn stage_dimension(&self, store: &Store, batch: &mut WriteBatch, ns: &Namespace, dim: Option<u32>) {
        if let Some(d) = dim {
            batch.put_cf(store.cf(CF_META), dim_key(ns), d.to_le_bytes());
        }
    }

    /// Bring a loaded index in step with episodes just committed.
    pub(crate) fn apply<'e>(&self, prefix: &[u8], staged: impl Iterator<Item = &'e Episode>) {
        let Some(ix) = self.map.read().get(prefix).cloned() else { return };
        let mut ix = ix.write();
        for e in staged {
            match (&e.embedding, e.deleted) {
                (Some(v), false) if v.len() == ix.hnsw.dim() => ix.add(e.id, v, e.expires_at_ms),
                _ => ix.remove(&e.id),
            }
        }
    }
}

/// The vector index changes of one write batch, published once the batch is committed.
pub(crate) struct VectorStage<'m> {
    cache: &'m VectorCache,
    prefix: Vec<u8>,
    staged: Vec<Episode>,
}

impl VectorStage<'_> {
    pub(crate) fn publish(self) {
        self.cache.apply(&self.prefix, self.staged.iter());
    }
}

impl Mnem {
    /// Stage the HNSW changes of `staged` into `batch` (see `crate::mnem`).
    pub(crate) fn stage_vectors(
        &self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        _batch: &mut WriteBatch,
    ) -> Result<VectorStage<'_>> {
        Ok(VectorStage {
            cache: &self.vectors,
            prefix: ctx.prefix.to_vec(),
            staged: staged.iter().map(|e| (*e).clone()).collect(),
        })
    }

    /// The namespace's vector index, or None when it has no vectors. Built on first use
    /// under the write lock, so no write lands between its snapshot and its publication.
    pub(crate) fn vector_index(&self, ns: &Namespace) -> Result<Option<Arc<RwLock<NsVectors>>>> {
        let prefix = ns.prefix();
        // As for the ADK index: never lock an index while holding the map.
        let loaded = self.vectors.map.read().get(&prefix).cloned();
        if let Some(ix) = loaded.filter(|ix| !ix.read().wants_rebuild()) {
            return Ok(Some(ix));
        }
        let _w = self.write_lock.lock();
        let loaded = self.vectors.map.read().get(&prefix).cloned();
        if let Some(ix) = loaded.filter(|ix| !ix.read().wants_rebuild()) {
            return Ok(Some(ix));
        }
        let snap = self.store.snapshot();
        let Some(dim) = self.vectors.dimension(&self.store, &snap, ns)? else { return Ok(None) };
        let mut ix = NsVectors::new(dim as usize);
        let mut scan = self.store.scan_episodes(&snap, ns, None);
        while let Some(view) = scan.next_view()? {
            if view.deleted() {
                continue;
            }
            if let Some(v) = view.embedding() {
                if v.len() == dim as usize {
                    ix.add(view.id, &v, view.expires_at_ms());
                }
            }
        }
        let ix = Arc::new(RwLock::new(ix));
        self.vectors.map.write().insert(prefix, ix.clone());
        Ok(Some(ix))
    }
}
