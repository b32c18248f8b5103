//! Compacting: the storage's files rewritten so that deleted and overwritten records leave
//! the disk (`store::Backend::erase`).

use crate::engine::Engine;
use crate::error::Result;
use crate::store::{Cf, KeyRange};
use crate::Mnem;

impl Engine {
    /// `Mnem::compact` (the public documentation is there).
    pub(crate) fn compact(&self) -> Result<()> {
        self.store.check_writable()?;
        self.settle()?;
        let all: Vec<KeyRange<'_>> = Cf::ALL.into_iter().map(KeyRange::all).collect();
        self.store.erase(&all)
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
