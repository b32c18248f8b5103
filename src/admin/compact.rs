//! Compacting: table files rewritten down to the last level, so that deleted and overwritten
//! records leave the disk (the whole store, or one namespace's ranges for `forget`).

use crate::engine::Engine;
use crate::error::{Error, Result, Status};
use crate::store::{CF_ADK, CF_EPISODES, CF_INDEX, CF_META};
use crate::Mnem;
use rocksdb::{BottommostLevelCompaction, CompactOptions};

/// RocksDB's count of failed flushes and compactions since open.
const BACKGROUND_ERRORS: &str = "rocksdb.background-errors";

impl Engine {
    /// `Mnem::compact` (the public documentation is there).
    pub(crate) fn compact(&self) -> Result<()> {
        self.store.check_writable()?;
        self.settle()?;
        self.compact_range(&[CF_META, CF_EPISODES, CF_ADK, CF_INDEX], None, None)
    }

    /// Rewrite every table file of `cfs` holding keys in `[start, end)` (unbounded where
    /// `None`), down to the last level, memtables flushed first, so that deleted keys are
    /// dropped from the files. RocksDB's C API returns no status from a manual compaction;
    /// a failure shows as a new background error (after which RocksDB refuses writes), so
    /// that count is compared before and after.
    pub(crate) fn compact_range(&self, cfs: &[&str], start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let db = self.store.db();
        let errors = || db.property_int_value(BACKGROUND_ERRORS).ok().flatten().unwrap_or(0);
        let before = errors();
        let mut opts = CompactOptions::default();
        opts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        opts.set_exclusive_manual_compaction(true);
        for cf in cfs {
            db.compact_range_cf_opt(self.store.cf(cf), start, end, &opts);
            if errors() > before {
                // A flush returns the stored background error, with its kind (a damaged
                // table file is CORRUPTION, a full disk IO).
                let cause = match db.flush_cf(self.store.cf(cf)) {
                    Err(e) => Error::from(e),
                    Ok(()) => Error::new(Status::Io, "RocksDB recorded a background error (its LOG file says which)"),
                };
                return Err(cause.context(format!(
                    "compacting column family {cf:?} failed; the store refuses writes until it is reopened"
                )));
            }
        }
        Ok(())
    }
}

impl Mnem {
    /// Compact the whole store (memtables flushed, every level rewritten): the bytes of
    /// deleted episodes and of overwritten revisions leave the table files. Time in
    /// proportion to the store's size; reads and writes go on meanwhile. Needs a read-write
    /// handle. A compaction that fails returns its cause (CORRUPTION for a damaged table
    /// file, IO for a full disk) instead of OK.
    pub fn compact(&self) -> Result<()> {
        self.engine().compact()
    }
}
