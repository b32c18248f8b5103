//! Forgetting a namespace: every key of it in every column family, erased from the files.
//!
//! A namespace's keys are exactly those under its prefix in `episodes`, `adk` and `index`,
//! plus its `dim:` record in `meta` (docs/FORMAT.md). One range delete per column family
//! hides them at once; the storage then erases the same ranges from its files and logs
//! (`store::Backend::erase`; RocksDB: a forced compaction, memtables flushed first), so the
//! bytes leave the disk instead of staying behind a tombstone.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, Namespace};
use crate::store::{Batch, Cf, KeyRange};
use crate::txn::Writers;
use crate::Mnem;

/// What `forget_namespace` removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forgotten {
    /// Stored episode records (current revisions, tombstones included).
    pub episodes: u64,
}

impl Engine {
    /// `Mnem::forget_namespace` (the public documentation is there).
    pub(crate) fn forget_namespace(&self, ns: &Namespace) -> Result<Forgotten> {
        let prefix = ns.prefix();
        // A prefix starts with a length below 2^32 followed by UTF-8, so it is never all 0xFF.
        let end = keys::prefix_successor(&prefix).ok_or_else(|| Error::invalid("namespace has no key range"))?;
        let writers = Writers::lock(self)?;
        // Postings held for this namespace would otherwise land after its range deletes.
        writers.settle()?;
        let snap = self.store.snapshot_without_postings();
        let mut episodes = 0u64;
        self.store.scan_prefix(&snap, Cf::Episodes, &prefix, |_, _| {
            episodes += 1;
            Ok(true)
        })?;
        drop(snap);
        let mut batch = Batch::default();
        for cf in [Cf::Episodes, Cf::Adk, Cf::Index] {
            batch.delete_range(cf, &prefix, &end);
        }
        let (dim, dim_end) = (crate::vector::dim_key(&prefix), crate::vector::dim_key(&end));
        batch.delete(Cf::Meta, &dim);
        self.store.write(batch)?;
        // The loaded graph goes with its keys (readers holding it finish with their copy).
        self.vectors.evict(&prefix);
        let ns = |cf| KeyRange { cf, from: Some(&prefix[..]), to: Some(&end[..]) };
        let dims = KeyRange { cf: Cf::Meta, from: Some(&dim[..]), to: Some(&dim_end[..]) };
        self.store.erase(&[ns(Cf::Episodes), ns(Cf::Adk), ns(Cf::Index), dims])?;
        Ok(Forgotten { episodes })
    }
}

impl Mnem {
    /// Forget the namespace `(app, user)`: every episode, tombstone, ADK bucket, order key,
    /// `delete_memory` tombstone, index entry and its vector dimension, at once (one atomic
    /// write), then compact the namespace's key ranges so that the bytes are gone from the
    /// table files and the write-ahead log, not only hidden. Its loaded graph leaves the
    /// cache. Afterwards the namespace is as if it had never been written; it may be used
    /// again. Takes time in proportion to the table files that hold the namespace; other
    /// writes wait, reads do not. A namespace with nothing stored is a no-op.
    pub fn forget_namespace(&self, ns: &Namespace) -> Result<Forgotten> {
        self.engine().forget_namespace(ns)
    }
}
