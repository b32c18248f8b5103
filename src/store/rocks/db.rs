//! The RocksDB database: opening it (column families, the block cache and memtable
//! budgets, `:memory:` as RocksDB's in-memory Env, the `mnem.lock` advisory lock: BUSY),
//! batches, compaction, and snapshots (`RocksView`) that apply an overlay of postings not yet
//! in the `index` column family (`super::deferred`).

use crate::error::{Error, Result, Status};
use crate::keys;
use crate::store::runs::{Overlay, OverlayRange};
use crate::store::{BatchOps, Cf, Cursor, Op, OpenOptions, View, MEMORY_PATH};
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, ColumnFamily, ColumnFamilyDescriptor, CompactOptions,
    DBRawIteratorWithThreadMode, Env, Options, ReadOptions, WriteBatch, WriteOptions, DB,
};
use std::fs::File;
use std::path::Path;
use std::sync::{Arc, OnceLock};

const LOCK_FILE: &str = "mnem.lock";
/// RocksDB's count of failed flushes and compactions since open.
const BACKGROUND_ERRORS: &str = "rocksdb.background-errors";

/// The bytes a RocksDB batch of `ops` and `more` bytes of puts after them takes, at most.
fn batch_room(ops: &BatchOps, more: usize) -> usize {
    BATCH_HEADER + ops.part_bytes() + ops.op_count() * BATCH_OP_OVERHEAD + more
}

/// The bytes a RocksDB write batch spends on itself (sequence number and count).
pub(super) const BATCH_HEADER: usize = 12;
/// At most the bytes a RocksDB write batch spends on an op beside its key and value (a tag,
/// the column family and two lengths as varints), for keys and values under 256 MiB.
pub(super) const BATCH_OP_OVERHEAD: usize = 1 + 1 + 4 + 4;

/// The open database: what the backend and its mover thread (`Behind`) share.
pub(crate) struct Rocks {
    pub(super) db: DB,
    pub(super) block_cache: Cache,
    pub(super) block_cache_capacity: usize,
    /// The options the database was opened with: they hold its statistics.
    pub(super) db_opts: Options,
    pub(super) read_only: bool,
    sync_writes: bool,
    // Keeps the exclusive advisory lock (released when the file closes) and, for `:memory:`,
    // the in-process environment alive as long as the database.
    _lock: Option<File>,
    pub(super) mem_env: Option<Env>,
    /// The environment of a store on disk (the process's default one, whose compaction
    /// threads run at the lowest CPU priority), kept alive as long as the database.
    _disk_env: Option<Env>,
    /// A read-only store's journal of postings not yet in the `index` column family,
    /// merged: every snapshot of the store carries it.
    pub(super) index_overlay: OnceLock<Arc<Overlay>>,
}

impl Rocks {
    pub(super) fn open(path: &str, opts: OpenOptions, lock: bool) -> Result<Rocks> {
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
        // Every flush takes all column families at once: the mover writes the index's
        // postings and deletes their journal entries without the write-ahead log
        // (`write_unlogged`), so neither may reach a table file without the other.
        db_opts.set_atomic_flush(true);
        if !opts.compact_in_background {
            db_opts.set_disable_auto_compactions(true);
        }
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
        let disk_env = match env {
            Some(_) => None,
            None => {
                // Compactions at the lowest CPU priority: they can wait, while a search beside
                // a writer on a machine with few cores cannot. Flushes keep theirs, so that
                // writes do not stall behind full memtables.
                let mut env = Env::new()?;
                env.lower_thread_pool_cpu_priority();
                db_opts.set_env(&env);
                Some(env)
            }
        };
        // A read-only open cannot create column families: open those that exist (an older
        // format lacks some), and let the format check say what is wrong.
        let existing = if opts.read_only { DB::list_cf(&db_opts, &dir).unwrap_or_default() } else { Vec::new() };
        let mut descriptors: Vec<ColumnFamilyDescriptor> = Vec::new();
        for n in Cf::ALL.iter().map(|cf| cf.name()).filter(|n| !opts.read_only || existing.iter().any(|e| e == n)) {
            let mut cf_opts = db_opts.clone();
            if n == Cf::Index.name() {
                // Each key of a sorted batch is inserted into the memtable from where the key
                // before it went (one hint for every key: they all start with the same byte),
                // climbing the skip list only as far as the keys already there between the
                // two. Without a hint, a key that is not right after the last one inserted is
                // searched for from the top, and the postings of one batch interleave with
                // those of the batches before it in the memtable.
                cf_opts = cf_opts
                    .get_options_from_string("memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.1")
                    .map_err(|e| Error::from(e).context("the index's memtable options"))?;
                // Most keys are postings, written in large sorted batches: a larger
                // memtable means fewer, larger flushes and half the compactions.
                cf_opts.set_write_buffer_size(32 << 20);
            } else if n == Cf::Meta.name() {
                // Every flush takes all column families (`atomic_flush`), so a full `meta`
                // memtable would flush the index's too. `meta` takes the journal's runs,
                // about as many bytes as the index's postings: sized to the store's whole
                // memtable budget, it cannot fill before that budget is spent, so the
                // index's memtable (or the budget) decides when all are flushed, as before
                // the flushes were atomic.
                cf_opts.set_write_buffer_size(64 << 20);
            }
            descriptors.push(ColumnFamilyDescriptor::new(n, cf_opts));
        }
        let db = if opts.read_only {
            DB::open_cf_descriptors_read_only(&db_opts, &dir, descriptors, false)
        } else {
            DB::open_cf_descriptors(&db_opts, &dir, descriptors)
        }
        .map_err(|e| Error::from(e).context(format!("opening {path:?}")))?;
        Ok(Rocks {
            db,
            block_cache,
            block_cache_capacity: opts.block_cache_bytes(),
            db_opts,
            read_only: opts.read_only,
            sync_writes: opts.sync_writes,
            _lock: lock,
            mem_env: env,
            _disk_env: disk_env,
            index_overlay: OnceLock::new(),
        })
    }
}

impl Rocks {
    pub(super) fn cf(&self, cf: Cf) -> &ColumnFamily {
        self.db.cf_handle(cf.name()).expect("column families are created at open")
    }

    /// Commit one RocksDB batch (fsynced when `sync_writes` is set).
    pub(super) fn write(&self, batch: WriteBatch) -> Result<()> {
        let mut wo = WriteOptions::default();
        wo.set_sync(self.sync_writes);
        Ok(self.db.write_opt(batch, &wo)?)
    }

    /// Commit one RocksDB batch without the write-ahead log: for batches whose every change
    /// a logged one can make again after a crash (the mover's: the journal holds its runs
    /// until a flush persists the index and the journal's deletes together).
    pub(super) fn write_unlogged(&self, batch: WriteBatch) -> Result<()> {
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        Ok(self.db.write_opt(batch, &wo)?)
    }

    /// Flush every column family's memtable to table files, all at once: the unlogged moves
    /// become durable with their journal deletes. Nothing to do in memory or read-only.
    pub(super) fn flush_memtables(&self) -> Result<()> {
        if self.read_only || self.mem_env.is_some() {
            return Ok(());
        }
        let cfs: Vec<&ColumnFamily> = Cf::ALL.iter().map(|&cf| self.cf(cf)).collect();
        Ok(self.db.flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default())?)
    }

    pub(super) fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// A RocksDB batch of `ops`, with room for `more` bytes of puts after them (a batch that
    /// outgrows its buffer copies all of it; a write of 20 events is about 70 KB).
    pub(super) fn batch(&self, ops: &BatchOps, more: usize) -> Result<WriteBatch> {
        let mut b = WriteBatch::with_capacity_bytes(batch_room(ops, more));
        for op in ops.iter() {
            match op {
                Op::Put(cf, k, v) => b.put_cf(self.cf(cf), k, v),
                Op::Delete(cf, k) => b.delete_cf(self.cf(cf), k),
                Op::DeleteRange(cf, from, to) => b.delete_range_cf(self.cf(cf), from, to),
                Op::Clear(cf) => {
                    let mut it = self.db.raw_iterator_cf(self.cf(cf));
                    it.seek_to_last();
                    if let Some(mut end) = it.key().map(<[u8]>::to_vec) {
                        end.push(0); // the smallest key after the last one
                        b.delete_range_cf(self.cf(cf), [].as_slice(), end.as_slice());
                    }
                    it.status()?;
                }
            }
        }
        Ok(b)
    }

    /// The sequence number of the last write visible to new snapshots: a write that returned
    /// before this call is at or below it, one that starts after it is above it.
    pub(super) fn latest_sequence(&self) -> u64 {
        self.db.latest_sequence_number()
    }

    /// A plain snapshot (with a read-only store's journal overlay).
    pub(super) fn view(&self) -> RocksView<'_> {
        RocksView { rocks: self, snap: self.db.snapshot(), overlay: self.index_overlay.get().cloned() }
    }

    /// Rewrite every table file of `cf` holding keys in `[start, end)` (unbounded where
    /// `None`), down to the last level, memtables flushed first, so that deleted keys are
    /// dropped from the files. RocksDB's C API returns no status from a manual compaction;
    /// a failure shows as a new background error (after which RocksDB refuses writes), so
    /// that count is compared before and after.
    pub(super) fn compact_range(&self, cf: Cf, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        let db = &self.db;
        let errors = || db.property_int_value(BACKGROUND_ERRORS).ok().flatten().unwrap_or(0);
        let before = errors();
        let mut opts = CompactOptions::default();
        opts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        opts.set_exclusive_manual_compaction(true);
        db.compact_range_cf_opt(self.cf(cf), start, end, &opts);
        if errors() > before {
            // A flush returns the stored background error, with its kind (a damaged table
            // file is CORRUPTION, a full disk IO).
            let cause = match db.flush_cf(self.cf(cf)) {
                Err(e) => Error::from(e),
                Ok(()) => Error::new(Status::Io, "RocksDB recorded a background error (its LOG file says which)"),
            };
            return Err(cause.context(format!(
                "compacting column family {:?} failed; the store refuses writes until it is reopened",
                cf.name()
            )));
        }
        Ok(())
    }
}

impl Drop for Rocks {
    /// A clean close flushes the memtables to table files, so that the next open does not
    /// replay the write-ahead log (which costs time in proportion to the unflushed writes).
    fn drop(&mut self) {
        // Nothing is lost when this fails: the write-ahead log still holds every write (the
        // unlogged moves' postings as journal entries, whose deletes were not logged either).
        let _ = self.flush_memtables();
    }
}

/// A RocksDB snapshot and, when postings are held behind their batches, the overlay of the
/// `index` column family that makes them visible.
pub(super) struct RocksView<'a> {
    rocks: &'a Rocks,
    snap: rocksdb::Snapshot<'a>,
    overlay: Option<Arc<Overlay>>,
}

impl<'a> RocksView<'a> {
    /// The same snapshot, with `overlay` applied to its `index` reads.
    pub(super) fn with_index_overlay(self, overlay: Overlay) -> RocksView<'a> {
        RocksView { overlay: (!overlay.is_empty()).then(|| Arc::new(overlay)), ..self }
    }

    /// The snapshot's sequence number: it holds every write at or below it, and no other.
    pub(super) fn sequence(&self) -> u64 {
        self.snap.sequence_number()
    }

    fn overlay_for(&self, cf: Cf) -> Option<&Overlay> {
        self.overlay.as_deref().filter(|_| cf == Cf::Index)
    }

    /// Call `f(suffix, value)` for each key of `cf` under `prefix`, without the overlay.
    pub(super) fn scan(&self, cf: Cf, prefix: &[u8], mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let mut it = self.cursor(cf, prefix);
        it.seek(prefix);
        while let Some((k, v)) = it.current() {
            f(&k[prefix.len()..], v)?;
            it.next();
        }
        it.status()
    }
}

impl View for RocksView<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(change) = self.overlay_for(cf).and_then(|o| o.get(key)) {
            return Ok(change.map(<[u8]>::to_vec));
        }
        Ok(self.snap.get_cf(self.rocks.cf(cf), key)?)
    }

    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let handle = self.rocks.cf(cf);
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&self.snap);
        let found = self.rocks.db.batched_multi_get_cf_opt(handle, keys, false, &ro);
        let overlay = self.overlay_for(cf);
        keys.iter()
            .zip(found)
            .map(|(k, v)| match overlay.and_then(|o| o.get(k)) {
                Some(change) => Ok(change.map(<[u8]>::to_vec)),
                None => Ok(v?.map(|s| s.to_vec())),
            })
            .collect()
    }

    fn cursor(&self, cf: Cf, prefix: &[u8]) -> Box<dyn Cursor + '_> {
        let mut ro = ReadOptions::default();
        ro.set_snapshot(&self.snap);
        let upper = keys::prefix_successor(prefix);
        if let Some(upper) = &upper {
            ro.set_iterate_upper_bound(upper.clone());
        }
        let base = self.rocks.db.raw_iterator_cf_opt(self.rocks.cf(cf), ro);
        let overlay = self.overlay_for(cf).map(|o| Box::new(Merged { overlay: o, upper, range: None, current: None }));
        Box::new(RocksCursor { base, overlay })
    }
}

/// RocksDB's iterator, merged with the snapshot's overlay of held postings (an overlay's put
/// replaces or adds a key, its delete hides one).
struct RocksCursor<'s> {
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

impl RocksCursor<'_> {
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
}

impl Cursor for RocksCursor<'_> {
    fn seek(&mut self, target: &[u8]) {
        self.base.seek(target);
        if let Some(o) = &mut self.overlay {
            o.range = Some(o.overlay.range(target, o.upper.as_deref()));
            self.settle();
        }
    }

    fn next(&mut self) {
        match &mut self.overlay {
            Some(o) if o.current.is_some() => o.range.as_mut().expect("seeked").advance(),
            _ => self.base.next(),
        }
        if self.overlay.is_some() {
            self.settle();
        }
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        if let Some(c) = self.overlay.as_ref().and_then(|o| o.current) {
            return Some(c);
        }
        self.base.item()
    }

    fn status(&self) -> Result<()> {
        Ok(self.base.status()?)
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

/// The status a RocksDB error becomes. mnem checks its arguments itself, so the engine's
/// own NotFound and InvalidArgument (a missing file, options it refuses) are failures of the
/// engine, IO, like every kind without a status of its own.
pub fn storage_status(kind: &rocksdb::ErrorKind) -> Status {
    use rocksdb::ErrorKind;
    match kind {
        ErrorKind::Corruption => Status::Corruption,
        ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain => Status::Busy,
        _ => Status::Io,
    }
}

impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Error {
        Error::new(storage_status(&e.kind()), format!("rocksdb: {}", e.into_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The room a write reserves covers the batch RocksDB builds of its ops and its journal
    /// entry, so the batch never grows by copying.
    #[test]
    fn a_write_batch_fits_the_room_reserved_for_it() {
        let rocks = Rocks::open(MEMORY_PATH, OpenOptions { create: true, ..Default::default() }, false).unwrap();
        let mut batch = crate::store::Batch::default();
        batch.put(Cf::Episodes, [7u8; 40], vec![1u8; 3_000]);
        batch.put(Cf::Index, b"k", b"");
        batch.delete(Cf::Index, [9u8; 200]);
        batch.delete_range(Cf::Index, b"a", b"b");
        let mut postings = crate::store::runs::Postings::default();
        for i in 0..500u32 {
            postings.push(|k| k.extend_from_slice(format!("posting/{i:05}").as_bytes()), Some(&i.to_le_bytes()));
        }
        batch.add_postings(postings);
        let (ops, run) = batch.into_parts();
        let run = run.expect("postings");
        let more = super::super::deferred::journal_put_bound(&run);
        let room = batch_room(&ops, more);
        let mut b = rocks.batch(&ops, more).unwrap();
        b.put_cf(rocks.cf(Cf::Meta), super::super::deferred::journal_key(1), &run);
        assert!(b.size_in_bytes() <= room, "{} bytes written, {room} reserved", b.size_in_bytes());
        // And not far more than it needs.
        assert!(room - b.size_in_bytes() < 64 + ops.op_count() * BATCH_OP_OVERHEAD);
    }

    /// Level-0 files of `index` left after six flushes (RocksDB compacts from four) once
    /// every compaction the store would start has ended.
    fn level0_files_after_six_flushes(compact_in_background: bool) -> u64 {
        let opts = OpenOptions { create: true, compact_in_background, ..Default::default() };
        let rocks = Rocks::open(MEMORY_PATH, opts, false).unwrap();
        for i in 0..6u8 {
            let mut b = WriteBatch::default();
            b.put_cf(rocks.cf(Cf::Index), [i], b"v");
            rocks.write(b).unwrap();
            rocks.db.flush_cf(rocks.cf(Cf::Index)).unwrap();
        }
        rocks.db.wait_for_compact(&rocksdb::WaitForCompactOptions::default()).unwrap();
        let files = rocks.db.property_int_value_cf(rocks.cf(Cf::Index), "rocksdb.num-files-at-level0");
        files.unwrap().unwrap()
    }

    /// The index's memtable inserts from a hint, and the options that carry it keep the rest
    /// of the index's settings: its memtable size and the store's one block cache.
    #[test]
    fn the_index_memtable_inserts_from_a_hint_and_keeps_its_settings() {
        let path = std::env::temp_dir().join(format!("mnem-db-hint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        let opts = OpenOptions { create: true, ..Default::default() };
        let budget = opts.block_cache_bytes() as u64;
        let rocks = Rocks::open(path.to_str().unwrap(), opts, true).unwrap();
        let cache = |cf| rocks.db.property_int_value_cf(rocks.cf(cf), "rocksdb.block-cache-capacity").unwrap();
        assert_eq!(cache(Cf::Index), Some(budget));
        assert_eq!(cache(Cf::Episodes), Some(budget));
        // Keys out of order, across two writes, still read back in order.
        for keys in [[b"k3", b"k1"], [b"k2", b"k0"]] {
            let mut b = WriteBatch::default();
            for k in keys {
                b.put_cf(rocks.cf(Cf::Index), k, b"v");
            }
            rocks.write(b).unwrap();
        }
        let read: Vec<Vec<u8>> = rocks
            .db
            .iterator_cf(rocks.cf(Cf::Index), rocksdb::IteratorMode::Start)
            .map(|kv| kv.unwrap().0.to_vec())
            .collect();
        assert_eq!(read, [b"k0", b"k1", b"k2", b"k3"].map(|k| k.to_vec()));
        let options = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("OPTIONS-"))
            .max()
            .unwrap();
        let text = std::fs::read_to_string(options).unwrap();
        let index = &text[text.find("[CFOptions \"index\"]").unwrap()..];
        let index = &index[..index.find("[TableOptions").unwrap()];
        assert!(index.contains("memtable_insert_with_hint_prefix_extractor=rocksdb.FixedPrefix.1"));
        assert!(index.contains("write_buffer_size=33554432"));
        drop(rocks);
        std::fs::remove_dir_all(&path).unwrap();
    }

    /// The mover's batch is not logged, so a flush that one column family needs takes the
    /// others with it: compacting the journal's range (as store management's erase does)
    /// flushes the index's unlogged postings to a table file with the journal's deletes.
    #[test]
    fn a_flush_for_one_column_family_takes_the_unlogged_index_with_it() {
        let path = std::env::temp_dir().join(format!("mnem-db-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        let rocks =
            Rocks::open(path.to_str().unwrap(), OpenOptions { create: true, ..Default::default() }, true).unwrap();
        let mut b = WriteBatch::default();
        b.put_cf(rocks.cf(Cf::Meta), b"journal/1", b"a run");
        rocks.write(b).unwrap();
        let mut b = WriteBatch::default();
        b.put_cf(rocks.cf(Cf::Index), b"a posting", b"");
        b.delete_cf(rocks.cf(Cf::Meta), b"journal/1");
        rocks.write_unlogged(b).unwrap();
        let property = |cf, name| rocks.db.property_int_value_cf(rocks.cf(cf), name).unwrap().unwrap();
        assert_eq!(property(Cf::Index, "rocksdb.num-entries-active-mem-table"), 1);
        rocks.compact_range(Cf::Meta, Some(b"journal/"), Some(b"journal0")).unwrap();
        assert_eq!(property(Cf::Index, "rocksdb.num-entries-active-mem-table"), 0);
        assert_eq!(property(Cf::Index, "rocksdb.num-files-at-level0"), 1);
        assert_eq!(rocks.db.get_cf(rocks.cf(Cf::Meta), b"journal/1").unwrap(), None);
        drop(rocks);
        std::fs::remove_dir_all(&path).unwrap();
    }

    #[test]
    fn compactions_in_the_background_are_the_open_options_choice() {
        assert!(level0_files_after_six_flushes(true) < 6);
        assert_eq!(level0_files_after_six_flushes(false), 6);
    }
}
