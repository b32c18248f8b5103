//! Online backup: a RocksDB checkpoint, a consistent copy of the store taken while it stays
//! open for reads and writes (table files are hard-linked when the destination is on the
//! same file system, copied otherwise).

use crate::engine::Engine;
use crate::error::{Error, Result, Status};
use crate::txn::Writers;
use crate::Mnem;
use std::path::Path;

impl Engine {
    /// `Mnem::backup` (the public documentation is there).
    pub(crate) fn backup(&self, dest: &str) -> Result<()> {
        if self.store.is_in_memory() {
            return Err(Error::invalid("a :memory: store has no files to back up"));
        }
        if self.store.is_read_only() {
            return Err(Error::new(
                Status::ReadOnly,
                "a backup is taken through a read-write handle (RocksDB pauses file deletions during the copy)",
            ));
        }
        if dest.is_empty() {
            return Err(Error::invalid("the backup directory is empty"));
        }
        if Path::new(dest).exists() {
            return Err(Error::invalid(format!("the backup directory {dest:?} already exists; name a new one")));
        }
        // Writes wait during the copy: the checkpoint then holds every acknowledged write.
        let _writers = Writers::lock(self)?;
        self.store.backup(dest)
    }
}

impl Mnem {
    /// Copy the store, consistently and while it stays open, to the new directory `dest`
    /// (RocksDB's checkpoint: table files are hard-linked when `dest` is on the same file
    /// system, copied otherwise; the write-ahead log is flushed first). The copy is a store of
    /// its own that `open` reads like the original. Writes wait while it runs; reads do not.
    /// Needs a read-write handle; `dest` must not exist.
    pub fn backup(&self, dest: &str) -> Result<()> {
        self.engine().backup(dest)
    }
}
