//! Compacting the whole store: every table file rewritten down to the last level, so that
//! deleted and overwritten records leave the disk.

use crate::engine::Engine;
use crate::error::Result;
use crate::store::{CF_ADK, CF_EPISODES, CF_INDEX, CF_META};
use crate::Mnem;
use rocksdb::{BottommostLevelCompaction, CompactOptions};

impl Engine {
    /// `Mnem::compact` (the public documentation is there).
    pub(crate) fn compact(&self) -> Result<()> {
        self.store.check_writable()?;
        let mut opts = CompactOptions::default();
        opts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        for cf in [CF_META, CF_EPISODES, CF_ADK, CF_INDEX] {
            self.store.db().compact_range_cf_opt(self.store.cf(cf), None::<&[u8]>, None::<&[u8]>, &opts);
        }
        Ok(())
    }
}

impl Mnem {
    /// Compact the whole store (memtables flushed, every level rewritten): the bytes of
    /// deleted episodes and of overwritten revisions leave the table files. Time in
    /// proportion to the store's size; reads and writes go on meanwhile. Needs a read-write
    /// handle.
    pub fn compact(&self) -> Result<()> {
        self.engine().compact()
    }
}
