//! `Mnem`: an open store, the write lock, and the one path by which a write batch reaches
//! the store together with the changes of every derived index.
//!
//! Derived indexes (`lexical::index` for BM25, `adk::index` for `mnem_search`, `vector` for
//! the HNSW graph) each provide a `stage` step: given the episodes a batch changes (their
//! previous state is read from the index's own keys in the writer's snapshot), add the
//! index's key changes to the batch. `Mnem::commit` stages them all and writes the batch,
//! so records and indexes change atomically and a search reads both from one snapshot.

use crate::adk::index::Placement;
use crate::cache::{Cache, CacheStats};
use crate::episodes::Pending;
use crate::error::Result;
use crate::record::Episode;
use crate::store::{now_ms, OpenOptions, Store};
use crate::vector::VectorCache;
use parking_lot::Mutex;
use rocksdb::{Snapshot, WriteBatch};
use std::sync::atomic::{AtomicU64, Ordering};

/// The whole library behind one handle. Every method is safe to call from many threads.
pub struct Mnem {
    pub(crate) store: Store,
    /// Serializes writers: each write reads, decides and commits one batch without another
    /// writer in between (revisions, dedup, bucket order and index counters depend on it).
    pub(crate) write_lock: Mutex<()>,
    pub(crate) vectors: VectorCache,
    /// Loaded vector graphs, across namespaces, within the cache budget.
    pub(crate) cache: Cache,
    /// Namespaces whose indexes were built from their records (an older store's upgrade).
    indexes_built: AtomicU64,
}

/// What one staging step sees: the writer's snapshot (taken under the write lock) and the
/// namespace.
pub(crate) struct IndexWrite<'a> {
    pub store: &'a Store,
    pub snap: &'a Snapshot<'a>,
    pub prefix: &'a [u8],
    pub now: i64,
}

/// The store's statistics (`mnem_stats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Loaded vector graphs (`entries`: graphs held).
    pub cache: CacheStats,
    /// RocksDB's block cache (index postings and records read from disk).
    pub block_cache: CacheStats,
    /// The format the store had when opened; lower than `FORMAT_VERSION` when this open
    /// upgraded it.
    pub opened_format: u32,
    /// Namespaces whose indexes this open built from their records.
    pub indexes_built: u64,
}

impl Mnem {
    /// Open (or create) a store; `path` is a directory or `:memory:`. A store of an older
    /// format gets its indexes built here, once (`Stats::indexes_built` says how many).
    pub fn open(path: &str, opts: OpenOptions) -> Result<Mnem> {
        let mnem = Mnem {
            store: Store::open(path, opts)?,
            write_lock: Mutex::new(()),
            vectors: VectorCache::default(),
            cache: Cache::new(opts.cache_bytes - opts.block_cache_bytes()),
            indexes_built: AtomicU64::new(0),
        };
        if mnem.store.opened_format() < crate::store::FORMAT_VERSION {
            let n = crate::upgrade::build_indexes(&mnem)?;
            mnem.indexes_built.store(n, Ordering::Relaxed);
        }
        Ok(mnem)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Make every acknowledged write durable.
    pub fn flush(&self) -> Result<()> {
        self.store.flush()
    }

    /// The statistics as the JSON object `mnem_stats` writes.
    pub fn stats_json(&self) -> Vec<u8> {
        let s = self.stats();
        let cache = |c: &CacheStats| {
            let total = c.hits + c.misses;
            let rate = if total == 0 { 0.0 } else { c.hits as f64 / total as f64 };
            format!(
                "{{\"budget_bytes\":{},\"used_bytes\":{},\"entries\":{},\"hits\":{},\"misses\":{},\"hit_rate\":{rate},\"evictions\":{}}}",
                c.budget_bytes, c.used_bytes, c.entries, c.hits, c.misses, c.evictions
            )
        };
        format!(
            "{{\"format\":{},\"opened_format\":{},\"indexes_built\":{},\"cache_bytes\":{},\"graph_cache\":{},\"block_cache\":{}}}",
            crate::store::FORMAT_VERSION,
            s.opened_format,
            s.indexes_built,
            s.cache.budget_bytes + s.block_cache.budget_bytes,
            cache(&s.cache),
            cache(&s.block_cache)
        )
        .into_bytes()
    }

    pub fn stats(&self) -> Stats {
        let (used, budget, hits, misses) = self.store.block_cache_usage();
        Stats {
            cache: self.cache.stats(),
            block_cache: CacheStats { budget_bytes: budget, used_bytes: used, entries: 0, hits, misses, evictions: 0 },
            opened_format: self.store.opened_format(),
            indexes_built: self.indexes_built.load(Ordering::Relaxed),
        }
    }

    /// Commit the episodes `pending` staged (plus whatever the caller put in `batch`) with
    /// the matching changes of every derived index, atomically. Call with `write_lock` held.
    pub(crate) fn commit(&self, pending: &Pending<'_>, mut batch: WriteBatch, placement: &Placement) -> Result<()> {
        pending.write_into(&mut batch);
        let staged: Vec<&Episode> = pending.staged().collect();
        let ctx = IndexWrite { store: &self.store, snap: pending.snapshot(), prefix: pending.prefix(), now: now_ms() };
        self.commit_staged(&ctx, &staged, batch, placement)
    }

    /// `commit` for episodes already in `batch`.
    pub(crate) fn commit_staged(
        &self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        mut batch: WriteBatch,
        placement: &Placement,
    ) -> Result<()> {
        crate::lexical::index::stage(ctx, staged, &mut batch)?;
        crate::adk::index::stage(ctx, staged, placement, &mut batch)?;
        let vectors = self.stage_vectors(ctx, staged, &mut batch)?;
        self.store.write(batch)?;
        vectors.publish();
        Ok(())
    }
}
