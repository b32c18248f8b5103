//! Read-only views beside a writer: a store opened read-only without mnem's advisory lock.
//!
//! A normal open (read-only included) takes `mnem.lock` exclusively, so a second open of a
//! store in use is BUSY. A view skips that lock and opens RocksDB read-only, which never
//! writes to the store's directory: it sees the store as it was at open (table files plus
//! the write-ahead log replayed into memory) and nothing written after. Writers stay
//! exclusive among themselves, and a view never blocks one.
//!
//! The open reads the manifest, then opens every table file it names; a writer's compaction
//! can delete one in between. That open fails with the file missing, and a new attempt reads
//! the newer manifest, so the view retries. (RocksDB's secondary instances tolerate this
//! themselves but support no snapshots, which every mnem read takes.)

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::store::{OpenOptions, Store};
use crate::Mnem;

impl Mnem {
    /// Open a read-only view of the store at `path`, which another process (or handle) may
    /// hold open for writing: every read answers from the state at this open, as one
    /// snapshot, and every write is READ_ONLY. Open a new view to see later writes. Table
    /// files the writer deletes meanwhile stay readable (the view holds them open), at the
    /// cost of one file descriptor per table file. `opts.create` is refused; `read_only` is
    /// implied. A store of an older format, which needs its read-write upgrade, is
    /// INCOMPATIBLE.
    pub fn open_view(path: &str, opts: OpenOptions) -> Result<Mnem> {
        if opts.create {
            return Err(Error::invalid("a read-only view cannot create a store"));
        }
        let opts = OpenOptions { read_only: true, ..opts };
        Mnem::open_engine(opts, |o| Ok(Engine::over(open_retrying(path, o.clone())?, o)))
    }
}

/// Attempts of a view's open that a writer's file deletions may defeat, 20 ms apart.
const OPEN_ATTEMPTS: u32 = 50;

fn open_retrying(path: &str, opts: OpenOptions) -> Result<Store> {
    let mut attempt = 1;
    loop {
        match Store::open_with(path, opts.clone(), false) {
            Err(e) if attempt < OPEN_ATTEMPTS && e.message.contains("No such file or directory") => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}
