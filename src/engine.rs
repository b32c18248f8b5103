//! `Engine`: an open store, the write lock, the derived indexes, and the one path by which a
//! write batch reaches the store together with every index's changes (`commit_staged`), so
//! records and indexes change atomically and a search reads both from one snapshot.
//! The operations (`adk`, `episodes`, `lexical`, `hybrid`) are `Engine` methods; `Mnem` is
//! the public facade over them.

use crate::adk::index::AdkSearchIndex;
use crate::cache::{Cache, CacheStats};
use crate::derived::{DerivedIndex, IndexWrite, Placement};
use crate::episodes::Pending;
use crate::error::Result;
use crate::lexical::index::Bm25Index;
use crate::record::Episode;
use crate::store::{now_ms, OpenOptions, Store, FORMAT_VERSION};
use crate::vector::VectorIndex;
use parking_lot::Mutex;
use rocksdb::WriteBatch;

pub(crate) struct Engine {
    pub store: Store,
    /// Serializes writers: each write reads, decides and commits one batch without another
    /// writer in between (revisions, dedup, bucket order and index counters depend on it).
    pub write_lock: Mutex<()>,
    pub bm25: Bm25Index,
    pub adk: AdkSearchIndex,
    pub vectors: VectorIndex,
    /// Namespaces whose indexes this open built from their records (an older store's upgrade).
    pub indexes_built: u64,
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

impl Engine {
    pub fn open(path: &str, opts: OpenOptions) -> Result<Engine> {
        let mut engine = Engine::over(Store::open(path, opts)?, opts);
        if engine.store.opened_format() < FORMAT_VERSION {
            engine.indexes_built = crate::upgrade::build_indexes(&engine)?;
        }
        Ok(engine)
    }

    /// The engine over an opened store: the indexes' state, with the graph cache taking the
    /// part of `opts.cache_bytes` that RocksDB's block cache does not.
    pub fn over(store: Store, opts: OpenOptions) -> Engine {
        Engine {
            store,
            write_lock: Mutex::new(()),
            bm25: Bm25Index,
            adk: AdkSearchIndex,
            vectors: VectorIndex::new(Cache::new(opts.cache_bytes - opts.block_cache_bytes())),
            indexes_built: 0,
        }
    }

    pub fn stats(&self) -> Stats {
        let (used, budget, hits, misses) = self.store.block_cache_usage();
        Stats {
            cache: self.vectors.cache.stats(),
            block_cache: CacheStats { budget_bytes: budget, used_bytes: used, entries: 0, hits, misses, evictions: 0 },
            opened_format: self.store.opened_format(),
            indexes_built: self.indexes_built,
        }
    }

    /// Commit the episodes `pending` staged (plus whatever the caller put in `batch`) with
    /// the matching changes of every derived index, atomically. Call with `write_lock` held.
    pub fn commit(&self, pending: &Pending<'_>, mut batch: WriteBatch, placement: &Placement) -> Result<()> {
        pending.write_into(&mut batch);
        let staged: Vec<&Episode> = pending.staged().collect();
        let ctx = IndexWrite { store: &self.store, snap: pending.snapshot(), prefix: pending.prefix(), now: now_ms() };
        self.commit_staged(&ctx, &staged, batch, placement)
    }

    /// `commit` for episodes already in `batch` (or, for an upgrade, already stored).
    // Every index's staged value is published after the commit, whatever its type (unit for
    // the indexes that hold nothing in memory).
    #[allow(clippy::let_unit_value)]
    pub fn commit_staged(
        &self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        mut batch: WriteBatch,
        placement: &Placement,
    ) -> Result<()> {
        let bm25 = self.bm25.stage(ctx, staged, placement, &mut batch)?;
        let adk = self.adk.stage(ctx, staged, placement, &mut batch)?;
        let vectors = self.vectors.stage(ctx, staged, placement, &mut batch)?;
        self.store.write(batch)?;
        Bm25Index::publish(bm25);
        AdkSearchIndex::publish(adk);
        VectorIndex::publish(vectors);
        Ok(())
    }
}
