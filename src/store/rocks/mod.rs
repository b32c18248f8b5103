//! The RocksDB backend: the database (`db`) and the postings held behind its batches
//! (`deferred`), which every snapshot sees through an overlay until they are in place.

mod db;
mod deferred;

pub use db::storage_status;

use crate::error::{Error, Result};
use crate::keys;
use crate::store::runs::{Overlay, RunOps};
use crate::store::{Backend, BackendStats, BatchOps, Cf, KeyRange, NamespaceLock, OpenOptions, View, Visit};
use db::Rocks;
use deferred::Behind;
use rocksdb::checkpoint::Checkpoint;
use rocksdb::{ReadOptions, WriteBatch};
use std::sync::Arc;

/// The backend: the database and the postings held behind its batches.
struct RocksBackend {
    rocks: Arc<Rocks>,
    behind: Arc<Behind>,
    journal_replayed: u64,
}

pub(crate) fn open(path: &str, opts: OpenOptions, lock: bool) -> Result<Box<dyn Backend>> {
    let rocks = Arc::new(Rocks::open(path, opts, lock)?);
    Ok(Box::new(RocksBackend { behind: Behind::new(Arc::clone(&rocks), 0), rocks, journal_replayed: 0 }))
}

impl RocksBackend {
    /// A snapshot is about to be taken (`store::SequenceScope`): its sequence is one counter
    /// read away.
    fn note_sequence(&self) {
        if crate::store::sequence_wanted() {
            crate::store::note_sequence(self.rocks.latest_sequence());
        }
    }
}

impl Backend for RocksBackend {
    fn recover(&mut self) -> Result<()> {
        let journal = deferred::read_journal(&self.rocks)?;
        let next_seq = match journal.last() {
            Some((seq, _)) => seq.checked_add(1).ok_or_else(|| Error::corruption("a journal key is malformed"))?,
            None => 0,
        };
        if !journal.is_empty() {
            if self.rocks.read_only {
                let overlay = Overlay::new(vec![Arc::new(deferred::journal_piece(&journal)?)]);
                if !overlay.is_empty() {
                    let _ = self.rocks.index_overlay.set(Arc::new(overlay));
                }
            } else {
                let runs: Vec<&[u8]> = journal.iter().map(|(_, r)| r.as_slice()).collect();
                let mut b = WriteBatch::default();
                deferred::stage_runs(&self.rocks, &runs, journal[0].0..next_seq, &mut b)?;
                self.rocks.write(b)?;
            }
        }
        self.behind = Behind::new(Arc::clone(&self.rocks), next_seq);
        self.journal_replayed = journal.len() as u64;
        Ok(())
    }

    fn snapshot(&self) -> Result<Box<dyn View + '_>> {
        self.note_sequence();
        Ok(Box::new(self.behind.read_snapshot()?))
    }

    fn snapshot_without_postings(&self) -> Box<dyn View + '_> {
        self.note_sequence();
        Box::new(self.rocks.view())
    }

    fn write(&self, ops: BatchOps, postings: Option<Vec<u8>>) -> Result<()> {
        let batch = self.rocks.batch(&ops, postings.as_ref().map_or(0, |run| deferred::journal_put_bound(run)))?;
        self.behind.commit(batch, postings)
    }

    fn lock_namespace(&self, _prefix: &[u8]) -> Result<Box<dyn NamespaceLock + '_>> {
        // One process writes a RocksDB store (its directory lock), and the writers' lock of
        // `crate::txn` serializes that process's writers: nothing more to hold.
        Ok(Box::new(Held(self)))
    }

    fn settle(&self) -> Result<()> {
        self.behind.settle()
    }

    fn set_postings_limit(&self, bytes: usize) {
        self.behind.set_limit(bytes);
    }

    fn write_sequence(&self) -> u64 {
        self.rocks.latest_sequence()
    }

    fn flush(&self) -> Result<()> {
        // A `:memory:` store has nothing durable to reach (and its WAL cannot sync).
        if self.rocks.mem_env.is_some() {
            return Ok(());
        }
        Ok(self.rocks.db.flush_wal(true)?)
    }

    fn erase(&self, ranges: &[KeyRange<'_>]) -> Result<()> {
        for r in ranges {
            self.rocks.compact_range(r.cf, r.from, r.to)?;
        }
        // Journal entries, written in place and deleted by `settle` before the range deletes,
        // held postings of the ranges: their bytes go too.
        let journal_end = keys::prefix_successor(deferred::JOURNAL_PREFIX).expect("not all 0xFF");
        self.rocks.compact_range(Cf::Meta, Some(deferred::JOURNAL_PREFIX), Some(&journal_end))
    }

    fn approximate_bytes(&self, cf: Cf, from: &[u8], to: &[u8]) -> u64 {
        let sizes = self.rocks.db.get_approximate_sizes_cf(self.rocks.cf(cf), &[rocksdb::Range::new(from, to)]);
        sizes.iter().sum()
    }

    fn backup(&self, dest: &str) -> Result<()> {
        // Not needed for consistency (the copy has the journal), but a copy without one
        // opens read-only without an overlay.
        self.behind.settle()?;
        Checkpoint::new(&self.rocks.db)?
            .create_checkpoint(dest)
            .map_err(|e| Error::from(e).context(format!("backup to {dest:?}")))
    }

    fn verify(&self, cf: Cf, visit: &mut Visit<'_>) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.set_verify_checksums(true);
        // A full scan must not evict what the store's readers keep in the block cache.
        ro.fill_cache(false);
        let mut it = self.rocks.db.raw_iterator_cf_opt(self.rocks.cf(cf), ro);
        it.seek_to_first();
        while let Some((k, v)) = it.item() {
            if cf == Cf::Meta && k.starts_with(deferred::JOURNAL_PREFIX) {
                for op in RunOps::new(v) {
                    op.map_err(|e| e.context(format!("journal entry {}", String::from_utf8_lossy(k))))?;
                }
            }
            visit(k, v)?;
            it.next();
        }
        Ok(it.status()?)
    }

    fn stats(&self) -> BackendStats {
        use rocksdb::statistics::Ticker;
        let r = &self.rocks;
        BackendStats {
            block_cache_used: r.block_cache.get_usage(),
            block_cache_capacity: r.block_cache_capacity,
            block_cache_hits: r.db_opts.get_ticker_count(Ticker::BlockCacheHit),
            block_cache_misses: r.db_opts.get_ticker_count(Ticker::BlockCacheMiss),
            journal_replayed: self.journal_replayed,
        }
    }

    fn is_in_memory(&self) -> bool {
        self.rocks.mem_env.is_some()
    }
}

/// `RocksBackend::lock_namespace`: the write goes straight to the backend.
struct Held<'b>(&'b RocksBackend);

impl NamespaceLock for Held<'_> {
    fn write(&self, ops: BatchOps, postings: Option<Vec<u8>>) -> Result<()> {
        self.0.write(ops, postings)
    }
}

impl Drop for RocksBackend {
    /// A clean close leaves no journal: the postings held are written to the index (if that
    /// fails, the next open writes them from the journal).
    fn drop(&mut self) {
        if !self.rocks.read_only {
            let _ = self.behind.close();
        }
    }
}
