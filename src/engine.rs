//! `Engine`: an open store, the write lock, the derived indexes, and the one path by which a
//! write batch reaches the store together with every index's changes (`commit_staged`), so
//! records and indexes change atomically and a search reads both from one snapshot.
//! Writes reach it through `crate::txn` (the writers' lock and the write transaction); the
//! operations (`adk`, `episodes`, `lexical`, `hybrid`, `admin`) are `Engine` methods; `Mnem`
//! is the public facade over them.

use crate::adk::index::AdkSearchIndex;
use crate::cache::{Cache, CacheStats};
use crate::deferred::{self, Behind};
use crate::derived::{DerivedIndex, IndexWrite, Placement};
use crate::error::{Error, Result};
use crate::lexical::index::Bm25Index;
use crate::record::Episode;
use crate::store::{OpenOptions, Snapshot, Store};
use crate::vector::VectorIndex;
use parking_lot::Mutex;
use rocksdb::WriteBatch;
use std::sync::Arc;

pub(crate) struct Engine {
    pub store: Arc<Store>,
    /// Serializes writers (`crate::txn::Writers`): each write reads, decides and commits one
    /// batch without another writer in between.
    pub write_lock: Mutex<()>,
    pub bm25: Bm25Index,
    pub adk: AdkSearchIndex,
    pub vectors: VectorIndex,
    /// Namespaces whose indexes this open built from their records (an older store's upgrade).
    pub indexes_built: u64,
    /// Posting changes journaled but not yet in the index, and their mover
    /// (`crate::deferred`).
    behind: Arc<Behind>,
    /// Journal entries found at open (a writer that stopped without writing them).
    pub journal_replayed: u64,
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
    /// Journal entries of postings found at open (a writer stopped without writing them to
    /// the index): written now, or, read-only, read into an overlay.
    pub journal_replayed: u64,
}

impl Engine {
    /// Open the store at `path`. A store of an older format is upgraded by the caller
    /// (`crate::upgrade::open`).
    pub fn open(path: &str, opts: OpenOptions) -> Result<Engine> {
        Engine::over(Store::open(path, opts)?, opts)
    }

    /// The engine over an opened store: the indexes' state, with the graph cache taking the
    /// part of `opts.cache_bytes` that RocksDB's block cache does not. Postings a writer
    /// journaled but did not write to the index are written now, or, in a read-only store,
    /// read into its overlay.
    pub fn over(mut store: Store, opts: OpenOptions) -> Result<Engine> {
        let journal = deferred::read_journal(&store)?;
        let next_seq = match journal.last() {
            Some((seq, _)) => seq.checked_add(1).ok_or_else(|| Error::corruption("a journal key is malformed"))?,
            None => 0,
        };
        if !journal.is_empty() {
            if store.is_read_only() {
                store.set_index_overlay(deferred::journal_piece(&journal)?);
            } else {
                let runs: Vec<&[u8]> = journal.iter().map(|(_, r)| r.as_slice()).collect();
                let mut b = WriteBatch::default();
                deferred::stage_runs(&store, &runs, journal[0].0..next_seq, &mut b)?;
                store.write(b)?;
            }
        }
        let store = Arc::new(store);
        Ok(Engine {
            behind: Behind::new(Arc::clone(&store), next_seq),
            store,
            write_lock: Mutex::new(()),
            bm25: Bm25Index,
            adk: AdkSearchIndex,
            vectors: VectorIndex::new(Cache::new(opts.cache_bytes - opts.block_cache_bytes())),
            indexes_built: 0,
            journal_replayed: journal.len() as u64,
        })
    }

    /// Move held postings to the index once `bytes` of them wait (tests: many moves).
    pub fn set_postings_limit(&self, bytes: usize) {
        self.behind.set_limit(bytes);
    }

    /// Write the postings held behind earlier writes to the index.
    pub fn settle(&self) -> Result<()> {
        self.behind.settle()
    }

    /// A snapshot in which every acknowledged write's postings are in the index
    /// (`deferred::Behind::read_snapshot`): what every read of postings starts from.
    pub fn read_snapshot(&self) -> Result<Snapshot<'_>> {
        self.behind.read_snapshot()
    }

    pub fn stats(&self) -> Stats {
        let (used, budget, hits, misses) = self.store.block_cache_usage();
        Stats {
            cache: self.vectors.cache.stats(),
            block_cache: CacheStats { budget_bytes: budget, used_bytes: used, entries: 0, hits, misses, evictions: 0 },
            opened_format: self.store.opened_format(),
            indexes_built: self.indexes_built,
            journal_replayed: self.journal_replayed,
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
        mut batch: WriteBatch,
        placement: &Placement,
    ) -> Result<()> {
        let bm25 = self.bm25.stage(ctx, staged, placement, &mut batch)?;
        let adk = self.adk.stage(ctx, staged, placement, &mut batch)?;
        let vectors = self.vectors.stage(ctx, staged, placement, &mut batch)?;
        let postings = ctx.postings.take();
        self.behind.commit(batch, (!postings.is_empty()).then(|| postings.into_run()))?;
        Bm25Index::publish(bm25);
        AdkSearchIndex::publish(adk);
        VectorIndex::publish(vectors);
        Ok(())
    }
}

impl Drop for Engine {
    /// A clean close leaves no journal: the postings held are written to the index (if that
    /// fails, the next open writes them from the journal).
    fn drop(&mut self) {
        let _ = self.behind.close();
    }
}
