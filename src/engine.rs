//! `Engine`: an open store, the write lock, the derived indexes, and the one path by which a
//! write batch reaches the store together with every index's changes (`commit_staged`), so
//! records and indexes change atomically and a search reads both from one snapshot.
//! Writes reach it through `crate::txn` (the writers' lock and the write transaction); the
//! operations (`adk`, `episodes`, `lexical`, `hybrid`, `admin`) are `Engine` methods; `Mnem`
//! is the public facade over them.

use crate::adk::index::{AdkSearchIndex, PAIRS_FORMAT};
use crate::cache::{Cache, CacheStats};
use crate::derived::{DerivedIndex, IndexWrite, Placement};
use crate::error::Result;
use crate::lexical::index::Bm25Index;
use crate::priority::{InFlight, Searches};
use crate::record::Episode;
use crate::store::{Batch, NsLock, OpenOptions, Snapshot, Store, DEFAULT_WRITE_YIELD_MS};
use crate::vector::VectorIndex;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct Engine {
    pub store: Arc<Store>,
    /// Serializes writers (`crate::txn::Writers`): each write reads, decides and commits one
    /// batch without another writer in between.
    pub write_lock: Mutex<()>,
    /// The searches in flight, which a writer lets finish first (`crate::priority`).
    pub searches: Searches,
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
    /// The storage's block cache (index postings and records read from disk).
    pub block_cache: CacheStats,
    /// The format the store had when opened; lower than `FORMAT_VERSION` when this open
    /// upgraded it.
    pub opened_format: u32,
    /// Namespaces whose indexes this open built from their records.
    pub indexes_built: u64,
    /// Journal entries of postings found at open (a writer stopped before writing them to
    /// the index, or before a flush of its unlogged move): written now, or, read-only, read
    /// into an overlay.
    pub journal_replayed: u64,
}

impl Engine {
    /// Open the store at `path`. A store of an older format is upgraded by the caller
    /// (`crate::upgrade::open`).
    pub fn open(path: &str, opts: OpenOptions) -> Result<Engine> {
        Ok(Engine::over(Store::open(path, opts.clone())?, opts))
    }

    /// The engine over an opened store: the indexes' state, with the graph cache taking the
    /// part of `opts.cache_bytes` that the storage's block cache does not.
    pub fn over(store: Store, opts: OpenOptions) -> Engine {
        let graphs = opts.cache_bytes - opts.block_cache_bytes();
        // A graph kept by this process would miss other processes' writes: on a shared store
        // (PostgreSQL) each search loads its graph from its snapshot.
        let keep_graphs = !store.is_shared();
        let pairs = store.opened_format() >= PAIRS_FORMAT;
        let yield_ms = opts.write_yield_ms.unwrap_or(if store.is_shared() { 0 } else { DEFAULT_WRITE_YIELD_MS });
        Engine {
            searches: Searches::new(Duration::from_millis(yield_ms)),
            store: Arc::new(store),
            write_lock: Mutex::new(()),
            bm25: Bm25Index,
            adk: AdkSearchIndex { pairs },
            vectors: VectorIndex::new(Cache::new(graphs), keep_graphs),
            indexes_built: 0,
        }
    }

    /// Hold postings behind until `bytes` of them wait (tests: many moves).
    pub fn set_postings_limit(&self, bytes: usize) {
        self.store.set_postings_limit(bytes);
    }

    /// Write the postings held behind earlier writes in place.
    pub fn settle(&self) -> Result<()> {
        self.store.settle()
    }

    /// A snapshot of every acknowledged write (`Store::snapshot`): what every read of
    /// postings starts from. The search counts as running until it is dropped, and writers
    /// that arrive meanwhile let it finish first, within a bound (`crate::priority`).
    pub fn read_snapshot(&self) -> Result<ReadSnapshot<'_>> {
        let search = self.searches.begin();
        Ok(ReadSnapshot { snap: self.store.snapshot()?, _search: search })
    }

    pub fn stats(&self) -> Stats {
        let b = self.store.backend_stats();
        Stats {
            cache: self.vectors.cache.stats(),
            block_cache: CacheStats {
                budget_bytes: b.block_cache_capacity,
                used_bytes: b.block_cache_used,
                entries: 0,
                hits: b.block_cache_hits,
                misses: b.block_cache_misses,
                evictions: 0,
            },
            opened_format: self.store.opened_format(),
            indexes_built: self.indexes_built,
            journal_replayed: b.journal_replayed,
        }
    }

    /// Commit `batch`, which holds (or, for an upgrade, whose store already holds) the
    /// records `staged`, with the matching changes of every derived index, atomically: the
    /// one path from a write to the store (`crate::txn::WriteTxn` calls it with the writers'
    /// lock held).
    // Every index's staged value is published after the commit, whatever its type (unit for
    // the indexes that hold nothing in memory).
    #[allow(clippy::let_unit_value)]
    pub fn commit_staged(
        &self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        mut batch: Batch,
        placement: &Placement,
        lock: &NsLock<'_>,
    ) -> Result<()> {
        let bm25 = self.bm25.stage(ctx, staged, placement, &mut batch)?;
        let adk = self.adk.stage(ctx, staged, placement, &mut batch)?;
        let vectors = self.vectors.stage(ctx, staged, placement, &mut batch)?;
        lock.write(batch)?;
        Bm25Index::publish(bm25);
        AdkSearchIndex::publish(adk);
        VectorIndex::publish(vectors);
        Ok(())
    }
}

/// A search's snapshot (`Engine::read_snapshot`), the search in flight until it is dropped.
pub(crate) struct ReadSnapshot<'a> {
    snap: Snapshot<'a>,
    _search: InFlight<'a>,
}

impl<'a> std::ops::Deref for ReadSnapshot<'a> {
    type Target = Snapshot<'a>;

    fn deref(&self) -> &Snapshot<'a> {
        &self.snap
    }
}
