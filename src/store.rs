//! The RocksDB store: opening, the on-disk format version, locking, write batches and
//! snapshot reads. Retrieval modules build on these primitives; none of them talks to
//! RocksDB's options directly.

use crate::error::{Error, Result, Status};
use crate::keys::{self, Namespace};
use crate::runs::{Overlay, OverlayRange, Piece};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBRawIteratorWithThreadMode, Env, Options,
    ReadOptions, WriteBatch, WriteOptions, DB,
};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use uuid::Uuid;

/// The on-disk format this build writes; stores with a larger number are refused. docs/FORMAT.md
/// describes the format and when this number must change; tests/format.rs pins it.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest format this build opens; older stores gain their indexes once, at the first
/// read-write open (`Mnem::open`).
pub const OLDEST_FORMAT: u32 = 1;
/// The first format with persisted indexes: a store of this format or later opens
/// read-only as it is (format 3 only adds the journal of postings written behind,
/// `crate::deferred`, which a format-2 store has empty).
pub const FIRST_INDEXED_FORMAT: u32 = 2;
/// The path that opens a store living only in this process.
pub const MEMORY_PATH: &str = ":memory:";

pub(crate) const CF_META: &str = "meta";
pub(crate) const CF_EPISODES: &str = "episodes";
pub(crate) const CF_ADK: &str = "adk";
/// Derived indexes (BM25, ADK search, HNSW), every key under its namespace's prefix.
pub(crate) const CF_INDEX: &str = "index";
const COLUMN_FAMILIES: [&str; 4] = [CF_META, CF_EPISODES, CF_ADK, CF_INDEX];
const FORMAT_KEY: &[u8] = b"format_version";
const LOCK_FILE: &str = "mnem.lock";

/// The default of `OpenOptions::cache_bytes`: 256 MiB, which holds the graph of a namespace
/// of 100,000 384-d vectors (about 180 MB) next to a 64 MiB block cache.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;
/// The smallest accepted `cache_bytes`: 1 MiB.
pub const MIN_CACHE_BYTES: usize = 1 << 20;

/// How to open a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the store when it does not exist.
    pub create: bool,
    /// Refuse every write.
    pub read_only: bool,
    /// fsync every write batch before the write returns.
    pub sync_writes: bool,
    /// The byte budget of everything mnem caches in memory: RocksDB's block cache (index
    /// postings and records) gets a quarter, loaded vector graphs the rest (`crate::cache`).
    pub cache_bytes: usize,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { create: false, read_only: false, sync_writes: false, cache_bytes: DEFAULT_CACHE_BYTES }
    }
}

impl OpenOptions {
    /// The share of `cache_bytes` given to RocksDB's block cache.
    pub fn block_cache_bytes(&self) -> usize {
        self.cache_bytes / 4
    }
}

/// An open store. `Sync`: one store serves many threads.
pub struct Store {
    db: DB,
    block_cache: Cache,
    block_cache_capacity: usize,
    /// The options the database was opened with: they hold its statistics.
    db_opts: Options,
    /// The format found at open (before any upgrade).
    opened_format: u32,
    read_only: bool,
    sync_writes: bool,
    // Keeps the exclusive advisory lock (released when the file closes) and, for `:memory:`,
    // the in-process environment alive as long as the database.
    _lock: Option<File>,
    mem_env: Option<Env>,
    /// A read-only store's journal of postings not yet in the `index` column family
    /// (`crate::deferred`), merged: every snapshot of the store carries it.
    index_overlay: Option<Arc<Overlay>>,
}

/// A consistent view of the store for reads: RocksDB's snapshot and, when postings are held
/// behind their records (`crate::deferred`), the overlay of the `index` column family that
/// makes them visible. Every read of the store goes through one.
pub(crate) struct Snapshot<'a> {
    inner: rocksdb::Snapshot<'a>,
    overlay: Option<Arc<Overlay>>,
}

impl<'a> Snapshot<'a> {
    /// The same snapshot, with `overlay` applied to its `index` reads.
    pub fn with_index_overlay(self, overlay: Overlay) -> Snapshot<'a> {
        Snapshot { inner: self.inner, overlay: (!overlay.is_empty()).then(|| Arc::new(overlay)) }
    }

    fn overlay_for(&self, cf: &str) -> Option<&Overlay> {
        self.overlay.as_deref().filter(|_| cf == CF_INDEX)
    }
}

impl Store {
    pub fn open(path: &str, opts: OpenOptions) -> Result<Store> {
        Store::open_with(path, opts, true)
    }

    /// `open`, with mnem's advisory lock or (`lock` false: a read-only view beside a writer,
    /// `crate::admin`) without it.
    pub(crate) fn open_with(path: &str, opts: OpenOptions, lock: bool) -> Result<Store> {
        if opts.create && opts.read_only {
            return Err(Error::invalid(
                "MNEM_OPEN_CREATE and MNEM_OPEN_READ_ONLY cannot be combined: a read-only open cannot create a store",
            ));
        }
        if opts.cache_bytes < MIN_CACHE_BYTES {
            return Err(Error::invalid(format!(
                "`cache_bytes` is {}; at least {MIN_CACHE_BYTES} (1 MiB) is required",
                opts.cache_bytes
            )));
        }
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        // Memtables of every column family together: bounded, so that memory does not grow
        // with the number of column families or with write bursts.
        db_opts.set_db_write_buffer_size(64 << 20);
        db_opts.set_write_buffer_size(16 << 20);
        let block_cache = Cache::new_lru_cache(opts.block_cache_bytes());
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&block_cache);
        // Index and filter blocks count against the budget too, instead of growing with the
        // number of files.
        table.set_cache_index_and_filter_blocks(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        // Writes look up index entries that mostly do not exist yet (a new episode's old
        // postings): a Bloom filter answers those without reading data blocks.
        table.set_bloom_filter(10.0, false);
        // In partitions (with a two-level index): one filter of a large table file is bigger
        // than a shard of the block cache, so it would be read from the file at every lookup.
        table.set_partition_filters(true);
        table.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
        table.set_pin_top_level_index_and_filter(true);
        db_opts.set_block_based_table_factory(&table);
        // Counters only (no timers or histograms): the block cache's hits and misses.
        db_opts.enable_statistics();
        db_opts.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);
        let (dir, lock, env) = if path == MEMORY_PATH {
            if opts.read_only {
                return Err(Error::invalid(
                    "a :memory: store is new and empty at every open, so it cannot be opened read-only",
                ));
            }
            let env = Env::mem_env()?;
            db_opts.set_env(&env);
            ("/mnem-memory".to_string(), None, Some(env))
        } else {
            if path.is_empty() {
                return Err(Error::invalid("path is empty"));
            }
            let dir = Path::new(path);
            let exists = dir.join("CURRENT").is_file();
            if !exists && !opts.create {
                return Err(Error::new(
                    Status::NotFound,
                    format!("no store at {path:?} (pass MNEM_OPEN_CREATE to create one)"),
                ));
            }
            std::fs::create_dir_all(dir).map_err(|e| Error::new(Status::Io, format!("cannot create {path:?}: {e}")))?;
            if !lock {
                // Beside a writer, table files may be deleted by its compactions after this
                // open: keep every file open from the start so that reads still find them.
                db_opts.set_max_open_files(-1);
            }
            (path.to_string(), if lock { Some(lock_dir(dir)?) } else { None }, None)
        };
        // A read-only open cannot create column families: open those that exist (an older
        // format lacks some), and let the format check say what is wrong.
        let existing = if opts.read_only { DB::list_cf(&db_opts, &dir).unwrap_or_default() } else { Vec::new() };
        let descriptors: Vec<ColumnFamilyDescriptor> = COLUMN_FAMILIES
            .iter()
            .filter(|n| !opts.read_only || existing.iter().any(|e| e == *n))
            .map(|n| {
                let mut cf_opts = db_opts.clone();
                if *n == CF_INDEX {
                    // Most keys are postings, written in large sorted batches: a larger
                    // memtable means fewer, larger flushes and half the compactions.
                    cf_opts.set_write_buffer_size(32 << 20);
                }
                ColumnFamilyDescriptor::new(*n, cf_opts)
            })
            .collect();
        let db = if opts.read_only {
            DB::open_cf_descriptors_read_only(&db_opts, &dir, descriptors, false)
        } else {
            DB::open_cf_descriptors(&db_opts, &dir, descriptors)
        }
        .map_err(|e| Error::from(e).context(format!("opening {path:?}")))?;
        let mut store = Store {
            db,
            block_cache,
            block_cache_capacity: opts.block_cache_bytes(),
            db_opts,
            opened_format: FORMAT_VERSION,
            read_only: opts.read_only,
            sync_writes: opts.sync_writes,
            _lock: lock,
            mem_env: env,
            index_overlay: None,
        };
        store.opened_format = store.check_format()?;
        Ok(store)
    }

    /// The format the store had when it was opened: below `FORMAT_VERSION`, its indexes
    /// are still to be built.
    pub fn opened_format(&self) -> u32 {
        self.opened_format
    }

    /// RocksDB's block cache: bytes held, capacity, hits, misses.
    pub fn block_cache_usage(&self) -> (usize, usize, u64, u64) {
        use rocksdb::statistics::Ticker;
        (
            self.block_cache.get_usage(),
            self.block_cache_capacity,
            self.db_opts.get_ticker_count(Ticker::BlockCacheHit),
            self.db_opts.get_ticker_count(Ticker::BlockCacheMiss),
        )
    }

    /// Record that the store now has this build's format (its indexes are complete).
    pub(crate) fn stage_format(&self, batch: &mut WriteBatch) {
        batch.put_cf(self.cf(CF_META), FORMAT_KEY, FORMAT_VERSION.to_le_bytes());
    }

    /// Remove every key of `cf` (an interrupted index build leaves partial indexes).
    pub(crate) fn clear_cf(&self, cf: &str) -> Result<()> {
        let mut it = self.db.raw_iterator_cf(self.cf(cf));
        it.seek_to_last();
        let Some(mut end) = it.key().map(<[u8]>::to_vec) else { return Ok(it.status()?) };
        end.push(0); // the smallest key after the last one
        let mut b = WriteBatch::default();
        b.delete_range_cf(self.cf(cf), [].as_slice(), end.as_slice());
        self.write(b)
    }

    /// The format number found (or written, for a new store).
    fn check_format(&self) -> Result<u32> {
        match self.db.get_cf(self.cf(CF_META), FORMAT_KEY)? {
            Some(v) => {
                let bytes: [u8; 4] =
                    v.as_slice().try_into().map_err(|_| Error::corruption("format version record is malformed"))?;
                let found = u32::from_le_bytes(bytes);
                if found > FORMAT_VERSION {
                    return Err(Error::new(
                        Status::Incompatible,
                        format!("store has on-disk format {found}; this build reads formats up to {FORMAT_VERSION}"),
                    ));
                }
                if found < OLDEST_FORMAT {
                    return Err(Error::corruption(format!("format version record says {found}")));
                }
                if found < FIRST_INDEXED_FORMAT && self.read_only {
                    return Err(Error::new(
                        Status::Incompatible,
                        format!(
                            "store has on-disk format {found}, which has no search indexes; open it once \
                             read-write to build them (format {FORMAT_VERSION})"
                        ),
                    ));
                }
                Ok(found)
            }
            None if self.read_only => Err(Error::corruption("store has no format version record")),
            None => {
                // A store is born with its format record; a store that has episodes but no
                // format record was not written by mnem.
                let mut it = self.db.raw_iterator_cf(self.cf(CF_EPISODES));
                it.seek_to_first();
                if it.valid() {
                    return Err(Error::corruption("store has records but no format version record"));
                }
                let mut b = WriteBatch::default();
                b.put_cf(self.cf(CF_META), FORMAT_KEY, FORMAT_VERSION.to_le_bytes());
                self.write(b)?;
                Ok(FORMAT_VERSION)
            }
        }
    }

    /// Overwrite the format record; tests use it to simulate a store from a newer build.
    #[doc(hidden)]
    pub fn set_format_version_for_test(&self, v: u32) -> Result<()> {
        self.put_raw_for_test(CF_META, FORMAT_KEY, &v.to_le_bytes())
    }

    /// Write one raw key of a column family ("meta", "episodes", "adk"); tests use it to
    /// recreate states that older builds or damaged files leave behind.
    #[doc(hidden)]
    pub fn put_raw_for_test(&self, cf: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = WriteBatch::default();
        b.put_cf(self.cf(cf), key, value);
        self.write(b)
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::new(Status::ReadOnly, "the store was opened read-only"));
        }
        Ok(())
    }

    pub(crate) fn cf(&self, name: &str) -> &ColumnFamily {
        self.db.cf_handle(name).expect("column families are created at open")
    }

    /// Commit one batch atomically (fsynced when `sync_writes` is set).
    pub(crate) fn write(&self, batch: WriteBatch) -> Result<()> {
        self.check_writable()?;
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync_writes);
        Ok(self.db.write_opt(batch, &wo)?)
    }

    /// Make every acknowledged write durable (fsync the write-ahead log).
    pub fn flush(&self) -> Result<()> {
        // A `:memory:` store has nothing durable to reach (and its WAL cannot sync).
        if self.read_only || self.mem_env.is_some() {
            return Ok(());
        }
        Ok(self.db.flush_wal(true)?)
    }

    /// A snapshot of the store as it is (with a read-only store's journal overlay).
    pub(crate) fn snapshot(&self) -> Snapshot<'_> {
        Snapshot { inner: self.db.snapshot(), overlay: self.index_overlay.clone() }
    }

    pub(crate) fn get_episode_raw(&self, snap: &Snapshot<'_>, ns_prefix: &[u8], id: &Uuid) -> Result<Option<Vec<u8>>> {
        Ok(snap.inner.get_cf(self.cf(CF_EPISODES), keys::episode_key(ns_prefix, id))?)
    }

    pub(crate) fn get_cf(&self, snap: &Snapshot<'_>, cf: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(change) = snap.overlay_for(cf).and_then(|o| o.get(key)) {
            return Ok(change.map(<[u8]>::to_vec));
        }
        Ok(snap.inner.get_cf(self.cf(cf), key)?)
    }

    /// Give a read-only store the journal's index changes (`crate::deferred::journal_piece`).
    pub(crate) fn set_index_overlay(&mut self, journal: Piece) {
        debug_assert!(self.read_only, "a writer writes its journal to the index instead");
        let overlay = Overlay::new(vec![Arc::new(journal)]);
        self.index_overlay = (!overlay.is_empty()).then(|| Arc::new(overlay));
    }

    /// An iterator over the keys of `cf` that start with `prefix`, positioned at the first
    /// at or after `start`.
    pub(crate) fn prefix_iter<'s>(
        &'s self,
        snap: &'s Snapshot<'s>,
        cf: &str,
        prefix: &[u8],
        start: &[u8],
    ) -> StoreIter<'s> {
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&snap.inner);
        let upper = keys::prefix_successor(prefix);
        if let Some(upper) = &upper {
            ro.set_iterate_upper_bound(upper.clone());
        }
        let base = self.db.raw_iterator_cf_opt(self.cf(cf), ro);
        let overlay = snap.overlay_for(cf).map(|o| Box::new(Merged { overlay: o, upper, range: None, current: None }));
        let mut it = StoreIter { base, overlay };
        it.seek(start);
        it
    }

    /// Call `f(suffix, value)` for each key of `cf` that starts with `prefix` (`suffix`: the
    /// key after it), in key order, until `f` returns false.
    pub(crate) fn scan_prefix(
        &self,
        snap: &Snapshot<'_>,
        cf: &str,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let mut it = self.prefix_iter(snap, cf, prefix, prefix);
        while it.valid() {
            let (k, v) = (it.key().expect("valid iterator has a key"), it.value().expect("valid iterator has a value"));
            if !f(&k[prefix.len()..], v)? {
                return Ok(());
            }
            it.next();
        }
        Ok(it.status()?)
    }

    /// Walk a namespace's episodes in UUID order, starting after `after` (exclusive).
    pub(crate) fn scan_episodes<'s>(
        &'s self,
        snap: &'s Snapshot<'s>,
        ns: &Namespace,
        after: Option<Uuid>,
    ) -> EpisodeScan<'s> {
        let prefix = ns.prefix();
        let start = match after {
            Some(id) => {
                let mut k = keys::episode_key(&prefix, &id);
                k.push(0); // the smallest key after `after`
                k
            }
            None => prefix.clone(),
        };
        let it = self.prefix_iter(snap, CF_EPISODES, &prefix, &start);
        EpisodeScan { it, prefix_len: prefix.len(), started: false }
    }
}

/// A store iterator: RocksDB's, merged with the snapshot's overlay of held postings (an
/// overlay's put replaces or adds a key, its delete hides one).
pub(crate) struct StoreIter<'s> {
    base: DBRawIteratorWithThreadMode<'s, DB>,
    /// Boxed: only snapshots taken while postings are held have one.
    overlay: Option<Box<Merged<'s>>>,
}

struct Merged<'s> {
    overlay: &'s Overlay,
    upper: Option<Vec<u8>>,
    range: Option<OverlayRange<'s>>,
    /// The overlay's entry that is current (else RocksDB's key is).
    current: Option<(&'s [u8], &'s [u8])>,
}

impl<'s> StoreIter<'s> {
    pub fn seek(&mut self, target: &[u8]) {
        self.base.seek(target);
        if let Some(o) = &mut self.overlay {
            o.range = Some(o.overlay.range(target, o.upper.as_deref()));
            self.settle();
        }
    }

    pub fn next(&mut self) {
        match &mut self.overlay {
            Some(o) if o.current.is_some() => o.range.as_mut().expect("seeked").advance(),
            _ => self.base.next(),
        }
        if self.overlay.is_some() {
            self.settle();
        }
    }

    /// Make the smaller of RocksDB's and the overlay's keys current, skipping what the
    /// overlay deletes and RocksDB's keys the overlay replaces.
    fn settle(&mut self) {
        let o = self.overlay.as_mut().expect("an overlay");
        let range = o.range.as_mut().expect("seeked");
        o.current = None;
        while let Some((k, v)) = range.peek() {
            match self.base.key() {
                Some(b) if b < k => return,
                Some(b) if b == k => self.base.next(),
                _ => {}
            }
            if let Some(v) = v {
                o.current = Some((k, v));
                return;
            }
            range.advance();
        }
    }

    fn current_overlay(&self) -> Option<(&'s [u8], &'s [u8])> {
        self.overlay.as_ref().and_then(|o| o.current)
    }

    pub fn valid(&self) -> bool {
        self.current_overlay().is_some() || self.base.valid()
    }

    pub fn key(&self) -> Option<&[u8]> {
        match self.current_overlay() {
            Some((k, _)) => Some(k),
            None => self.base.key(),
        }
    }

    pub fn value(&self) -> Option<&[u8]> {
        match self.current_overlay() {
            Some((_, v)) => Some(v),
            None => self.base.value(),
        }
    }

    pub fn status(&self) -> std::result::Result<(), rocksdb::Error> {
        self.base.status()
    }
}

/// A cursor over stored episodes; `next` lends the key's UUID and the stored bytes.
pub(crate) struct EpisodeScan<'s> {
    it: StoreIter<'s>,
    prefix_len: usize,
    started: bool,
}

impl EpisodeScan<'_> {
    pub fn next(&mut self) -> Result<Option<(Uuid, &[u8])>> {
        if self.started {
            self.it.next();
        }
        self.started = true;
        if !self.it.valid() {
            self.it.status()?;
            return Ok(None);
        }
        let key = self.it.key().expect("valid iterator has a key");
        let id = key
            .get(self.prefix_len..)
            .and_then(|b| <[u8; 16]>::try_from(b).ok())
            .map(Uuid::from_bytes)
            .ok_or_else(|| Error::corruption("episode key has a malformed length"))?;
        Ok(Some((id, self.it.value().expect("valid iterator has a value"))))
    }
}

fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::new(Status::Io, format!("cannot open lock file {path:?}: {e}")))?;
    // flock-style: a second open in this process uses a new file description, so it
    // conflicts exactly like one from another process.
    file.try_lock().map_err(|e| match e {
        std::fs::TryLockError::WouldBlock => {
            Error::new(Status::Busy, format!("store {dir:?} is already open (in this or another process)"))
        }
        std::fs::TryLockError::Error(e) => Error::new(Status::Io, format!("cannot lock {path:?}: {e}")),
    })?;
    Ok(file)
}

/// Milliseconds since the Unix epoch, now: every read request takes this once.
pub fn now_ms() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Drop for Store {
    /// A clean close flushes the memtables to table files, so that the next open does not
    /// replay the write-ahead log (which costs time in proportion to the unflushed writes).
    fn drop(&mut self) {
        if self.read_only || self.mem_env.is_some() {
            return;
        }
        let cfs: Vec<&ColumnFamily> = COLUMN_FAMILIES.iter().map(|n| self.cf(n)).collect();
        // Nothing is lost when this fails: the write-ahead log still holds every write.
        let _ = self.db.flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default());
    }
}

impl Store {
    /// The RocksDB handle, for store management (`crate::admin`: range deletes, compaction,
    /// checkpoints, verification), which works on whole key ranges rather than records.
    pub(crate) fn db(&self) -> &DB {
        &self.db
    }

    /// The sequence number of the last write: it changes with every write batch.
    pub(crate) fn write_sequence(&self) -> u64 {
        self.db.latest_sequence_number()
    }

    /// A `:memory:` store (nothing on disk to back up).
    pub(crate) fn is_in_memory(&self) -> bool {
        self.mem_env.is_some()
    }
}
