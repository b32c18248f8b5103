//! Storage: the seam between mnem and the key-value store under it.
//!
//! The engine and the indexes see four ordered keyspaces (`Cf`), consistent read views
//! (`Snapshot`: get, batched get, prefix scans) and one atomic write (`Batch`: puts, deletes,
//! range deletes, and the postings a backend may write behind the rest). That is all they
//! may assume, so a backend is free in how it meets it. `Backend` is the interface a storage
//! engine implements; `rocks` (RocksDB, with its journal of postings written behind, kept
//! as sorted `runs`) is the one in this build. It is shaped for a second one where a
//! round trip costs far more than a local read: every write is one batch, and a read asks
//! for many keys at once (`Snapshot::multi_get`) or a range (`prefix_iter`), never key by key
//! on a hot path.
//!
//! `Store` wraps a backend with what every backend shares: the format record (`meta`
//! `format_version`), read-only refusal and the per-namespace key helpers.

mod postgres;
mod rocks;
pub(crate) mod runs;

/// The status each kind of RocksDB error becomes (tests check every one has its header entry).
#[doc(hidden)]
pub use rocks::storage_status;

use crate::codec::len32;
use crate::error::{Error, Result, Status};
use crate::keys::{self, Namespace};
use runs::Postings;
use std::cell::Cell;
use uuid::Uuid;

/// The on-disk format this build writes; stores with a larger number are refused. docs/FORMAT.md
/// describes the format and when this number must change; tests/format.rs pins it.
pub const FORMAT_VERSION: u32 = 5;
/// The oldest format this build opens; older stores gain their indexes once, at the first
/// read-write open (`Mnem::open`).
pub const OLDEST_FORMAT: u32 = 1;
/// The first format with persisted indexes: a store of this format or later opens
/// read-only as it is (format 3 only adds the journal of postings written behind, which a
/// format-2 store has empty; format 4 the ADK index's char pairs, without which a search
/// finds non-ASCII tokens by their chars).
pub const FIRST_INDEXED_FORMAT: u32 = 2;
/// The path that opens a store living only in this process.
pub const MEMORY_PATH: &str = ":memory:";
const FORMAT_KEY: &[u8] = b"format_version";

/// The default of `OpenOptions::cache_bytes`: 256 MiB, which holds the graph of a namespace
/// of 100,000 384-d vectors (about 180 MB) next to a 64 MiB block cache.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;
/// The smallest accepted `cache_bytes`: 1 MiB.
pub const MIN_CACHE_BYTES: usize = 1 << 20;

/// How to open a store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the store when it does not exist.
    pub create: bool,
    /// Refuse every write.
    pub read_only: bool,
    /// fsync every write batch before the write returns.
    pub sync_writes: bool,
    /// The byte budget of everything mnem caches in memory: the backend's block cache (index
    /// postings and records) gets a quarter, loaded vector graphs the rest (`crate::cache`).
    pub cache_bytes: usize,
    /// Open with the built-in embedder registered (`crate::embed::builtin`).
    pub builtin_embedder: bool,
    /// The built-in embedder's model folder; None looks where `builtin::candidate_dirs` says.
    pub model_dir: Option<std::path::PathBuf>,
    /// How many earlier events of its session an ADK event is embedded with
    /// (`crate::embed::event_text`); None: 2 with the built-in embedder, else 0.
    pub embed_context: Option<usize>,
    /// The longest a write waits for the searches running when it arrives
    /// (`crate::priority`); None: `DEFAULT_WRITE_YIELD_MS` on a store of this process alone,
    /// 0 (never) on a shared one, whose searches and writers share the server's CPU instead.
    pub write_yield_ms: Option<u64>,
    /// Let the storage compact its files in the background (RocksDB; on by default). A
    /// process that opens a store for one command that compacts what it changes itself and
    /// then closes it (the `mnem` tool's `forget`) turns this off: a compaction that the
    /// opening starts would only make the command's own wait for it, then be redone.
    pub compact_in_background: bool,
}

/// `OpenOptions::write_yield_ms` by default, on a store of one process.
pub const DEFAULT_WRITE_YIELD_MS: u64 = 5;
/// The largest `write_yield_ms`.
pub const MAX_WRITE_YIELD_MS: u64 = 1000;

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            create: false,
            read_only: false,
            sync_writes: false,
            cache_bytes: DEFAULT_CACHE_BYTES,
            builtin_embedder: false,
            model_dir: None,
            embed_context: None,
            write_yield_ms: None,
            compact_in_background: true,
        }
    }
}

impl OpenOptions {
    /// The share of `cache_bytes` given to the backend's block cache.
    pub fn block_cache_bytes(&self) -> usize {
        self.cache_bytes / 4
    }
}

/// The keyspaces ("column families"), each ordered by key bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Cf {
    /// The format version, vector dimensions (and the backend's own bookkeeping).
    Meta,
    /// One record per episode (`crate::record`).
    Episodes,
    /// The ADK seam's session buckets, tie order and `delete_memory` tombstones.
    Adk,
    /// Every derived index (BM25, ADK search, HNSW).
    Index,
}

impl Cf {
    pub const ALL: [Cf; 4] = [Cf::Meta, Cf::Episodes, Cf::Adk, Cf::Index];

    /// The name the backend stores it under (docs/FORMAT.md).
    pub fn name(self) -> &'static str {
        match self {
            Cf::Meta => "meta",
            Cf::Episodes => "episodes",
            Cf::Adk => "adk",
            Cf::Index => "index",
        }
    }

    fn from_name(name: &str) -> Option<Cf> {
        Cf::ALL.into_iter().find(|cf| cf.name() == name)
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Cf {
        Cf::ALL[usize::from(c)]
    }
}

/// One atomic write: every op applies, in order, or none does. Keys and values are copied
/// into one buffer (a write stages hundreds; an allocation each would cost more).
/// `postings` are key changes of `Cf::Index` that the backend may apply after the rest of
/// the batch, as long as every snapshot taken after the write returns sees them (RocksDB:
/// `deferred`); no writer reads postings back while it stages.
#[derive(Default)]
pub(crate) struct Batch {
    bytes: Vec<u8>,
    ops: usize,
    /// The bytes of the ops' keys and values (`BatchOps::part_bytes`).
    parts: usize,
    postings: Postings,
}

/// One op of a batch.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Op<'a> {
    Put(Cf, &'a [u8], &'a [u8]),
    Delete(Cf, &'a [u8]),
    /// Every key in `[from, to)`.
    DeleteRange(Cf, &'a [u8], &'a [u8]),
    /// Every key of the keyspace.
    Clear(Cf),
}

const PUT: u8 = 0;
const DELETE: u8 = 1;
const DELETE_RANGE: u8 = 2;
const CLEAR: u8 = 3;

impl Batch {
    pub fn put(&mut self, cf: Cf, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.push(PUT, cf, key.as_ref(), value.as_ref());
    }

    pub fn delete(&mut self, cf: Cf, key: impl AsRef<[u8]>) {
        self.push(DELETE, cf, key.as_ref(), &[]);
    }

    pub fn delete_range(&mut self, cf: Cf, from: impl AsRef<[u8]>, to: impl AsRef<[u8]>) {
        self.push(DELETE_RANGE, cf, from.as_ref(), to.as_ref());
    }

    pub fn clear(&mut self, cf: Cf) {
        self.push(CLEAR, cf, &[], &[]);
    }

    /// Add posting changes (`Cf::Index` keys), written behind the rest of the batch.
    pub fn add_postings(&mut self, postings: Postings) {
        self.postings.append(postings);
    }

    pub fn is_empty(&self) -> bool {
        self.ops == 0 && self.postings.is_empty()
    }

    fn push(&mut self, kind: u8, cf: Cf, a: &[u8], b: &[u8]) {
        self.bytes.push(kind);
        self.bytes.push(cf.code());
        for part in [a, b] {
            self.bytes.extend_from_slice(&len32(part.len()).to_le_bytes());
            self.bytes.extend_from_slice(part);
        }
        self.ops += 1;
        self.parts += a.len() + b.len();
    }

    /// The ops in order, and the postings (none: `None`).
    fn into_parts(self) -> (BatchOps, Option<Vec<u8>>) {
        let run = (!self.postings.is_empty()).then(|| self.postings.into_run());
        (BatchOps { bytes: self.bytes, ops: self.ops, parts: self.parts }, run)
    }
}

/// A batch's ops, as a backend receives them.
pub(crate) struct BatchOps {
    bytes: Vec<u8>,
    ops: usize,
    parts: usize,
}

impl BatchOps {
    pub fn op_count(&self) -> usize {
        self.ops
    }

    /// The bytes of the ops' keys and values (and range bounds), for a backend that sizes its
    /// own encoding of them up front.
    pub fn part_bytes(&self) -> usize {
        self.parts
    }

    pub fn iter(&self) -> impl Iterator<Item = Op<'_>> {
        let mut rest = self.bytes.as_slice();
        std::iter::from_fn(move || {
            let (&[kind, cf], tail) = rest.split_first_chunk::<2>()?;
            let (a, tail) = take_part(tail);
            let (b, tail) = take_part(tail);
            rest = tail;
            let cf = Cf::from_code(cf);
            Some(match kind {
                PUT => Op::Put(cf, a, b),
                DELETE => Op::Delete(cf, a),
                DELETE_RANGE => Op::DeleteRange(cf, a, b),
                _ => Op::Clear(cf),
            })
        })
    }
}

// The buffer is written only by `Batch::push`, so its lengths are in bounds.
fn take_part(bytes: &[u8]) -> (&[u8], &[u8]) {
    let (len, rest) = bytes.split_first_chunk::<4>().expect("a batch op has its lengths");
    rest.split_at(u32::from_le_bytes(*len) as usize)
}

/// Keys `[from, to)` of one keyspace (unbounded where `None`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyRange<'a> {
    pub cf: Cf,
    pub from: Option<&'a [u8]>,
    pub to: Option<&'a [u8]>,
}

impl KeyRange<'_> {
    /// Every key of `cf`.
    pub fn all(cf: Cf) -> KeyRange<'static> {
        KeyRange { cf, from: None, to: None }
    }
}

/// What `Backend::verify` calls for each key and value.
pub(crate) type Visit<'a> = dyn FnMut(&[u8], &[u8]) -> Result<()> + 'a;

/// What a storage engine provides. Implementations are `Send + Sync`: one store serves
/// many threads, readers never waiting for a writer.
pub(crate) trait Backend: Send + Sync {
    /// After the format check at open: bring the backend's own state to the last
    /// acknowledged write (RocksDB: the journal of postings a writer that stopped had not
    /// written in place is written now, or, read-only, held in memory).
    fn recover(&mut self) -> Result<()>;
    /// A consistent view of every acknowledged write. It never writes and never waits for a
    /// writer.
    fn snapshot(&self) -> Result<Box<dyn View + '_>>;
    /// A consistent view of every key but the postings still written behind earlier batches:
    /// what a writer decides from (writers never read postings) and what reads of records
    /// alone use. Cheaper than `snapshot` when postings are held.
    fn snapshot_without_postings(&self) -> Box<dyn View + '_>;
    /// Apply one batch atomically (fsynced when the store was opened with `sync_writes`).
    fn write(&self, batch: BatchOps, postings: Option<Vec<u8>>) -> Result<()>;
    /// Hold the namespace whose key prefix is `prefix` for one write: until the lock is
    /// dropped, no other writer of the store, in this process or another, writes it, and a
    /// snapshot taken after this returns sees every write of it acknowledged before. A
    /// write transaction takes it before its snapshot and commits through it, so that its
    /// read, decision and write are not interleaved with another process's (RocksDB, one
    /// process per store: the writers' lock of `crate::txn` already does it).
    fn lock_namespace(&self, prefix: &[u8]) -> Result<Box<dyn NamespaceLock + '_>>;
    /// Write the postings held behind earlier batches in place now, for good (no later open
    /// applies them again): before an operation on whole key ranges (range deletes,
    /// compaction, backup), and at close.
    fn settle(&self) -> Result<()>;
    /// Hold postings behind until `bytes` of them wait (tests: small, so that many moves run).
    fn set_postings_limit(&self, bytes: usize);
    /// A number that changes with every committed batch.
    fn write_sequence(&self) -> u64;
    /// Make every acknowledged write durable.
    fn flush(&self) -> Result<()>;
    /// Make what was deleted in these ranges leave the backend's files and logs, not only its
    /// views.
    fn erase(&self, ranges: &[KeyRange<'_>]) -> Result<()>;
    /// About how many bytes of files the keys in `[from, to)` of `cf` take.
    fn approximate_bytes(&self, cf: Cf, from: &[u8], to: &[u8]) -> u64;
    /// Copy the store, consistently, to the new directory `dest` (writes wait; the caller
    /// holds the writers' lock).
    fn backup(&self, dest: &str) -> Result<()>;
    /// Read every key of `cf` with the backend's own checksums verified, bypassing caches,
    /// calling `visit` for each; the first damage found is the error.
    fn verify(&self, cf: Cf, visit: &mut Visit<'_>) -> Result<()>;
    fn stats(&self) -> BackendStats;
    /// A store that lives in this process only (nothing durable, no files to copy).
    fn is_in_memory(&self) -> bool;
    /// Other processes may write the store while this one has it open: nothing derived from
    /// its keys may be kept in memory across snapshots.
    fn is_shared(&self) -> bool {
        false
    }
}

thread_local! {
    /// The write sequence of a read in progress on this thread (`SequenceScope`): `Some(None)`
    /// until a backend notes it.
    static SEQUENCE: Cell<Option<Option<u64>>> = const { Cell::new(None) };
}

/// While it lives, a backend notes the store's write sequence as this thread takes its
/// first snapshot, read before it (PostgreSQL: in the round trip that begins the snapshot's
/// transaction, instead of one of its own). An answer made from this thread's snapshots
/// meanwhile is current at least up to that sequence: the tag of an answer kept for a retry
/// (`ffi`), which a later write makes stale.
pub(crate) struct SequenceScope {
    outer: Option<Option<u64>>,
}

impl SequenceScope {
    pub fn enter() -> SequenceScope {
        SequenceScope { outer: SEQUENCE.replace(Some(None)) }
    }

    /// The sequence noted, if a snapshot was taken.
    pub fn sequence(&self) -> Option<u64> {
        SEQUENCE.get().flatten()
    }
}

impl Drop for SequenceScope {
    fn drop(&mut self) {
        SEQUENCE.set(self.outer);
    }
}

/// Whether a backend taking a snapshot now should note the write sequence (`SequenceScope`).
pub(crate) fn sequence_wanted() -> bool {
    SEQUENCE.get() == Some(None)
}

/// Note the write sequence read before a snapshot; the first noted stays (the earliest).
pub(crate) fn note_sequence(sequence: u64) {
    if sequence_wanted() {
        SEQUENCE.set(Some(Some(sequence)));
    }
}

/// One write's hold on a namespace (`Backend::lock_namespace`).
pub(crate) trait NamespaceLock {
    /// Apply one batch atomically, the namespace still held (`Backend::write`).
    fn write(&self, batch: BatchOps, postings: Option<Vec<u8>>) -> Result<()>;
}

/// What a backend reports in `mnem_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BackendStats {
    pub block_cache_used: usize,
    pub block_cache_capacity: usize,
    pub block_cache_hits: u64,
    pub block_cache_misses: u64,
    /// Batches whose postings a writer had not written in place when it stopped, found at
    /// open: written now or (read-only) read into memory.
    pub journal_replayed: u64,
}

/// How much of each list a reader of several key prefixes reads (`View::cursors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extent {
    /// Every key (a BM25 ranking reads whole posting lists).
    Whole,
    /// The start, then it seeks forward (a top 10 that skips postings it cannot use).
    Start,
}

/// A consistent read view of a backend.
pub(crate) trait View {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Many keys at once, answers in the keys' order: one round trip where the backend is
    /// remote.
    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(cf, k)).collect()
    }
    /// Read `keys` now, together (one round trip where the backend is remote), for the
    /// `get`s and `multi_get`s of this view that will ask for them: a write's reads that do
    /// not depend on each other. Where reads are local it does nothing.
    fn prefetch(&self, _keys: &[(Cf, Vec<u8>)]) -> Result<()> {
        Ok(())
    }
    /// The keys of `cf` that start with `prefix`, in key order (positioned by `seek`).
    fn cursor(&self, cf: Cf, prefix: &[u8]) -> Box<dyn Cursor + '_>;
    /// A cursor for each of `prefixes`, positioned at its first key: one round trip where the
    /// backend is remote (a search opens all its posting lists at once), which reads as much
    /// of each list as `extent` says the caller will read.
    fn cursors(&self, cf: Cf, prefixes: &[Vec<u8>], _extent: Extent) -> Vec<Box<dyn Cursor + '_>> {
        prefixes
            .iter()
            .map(|p| {
                let mut c = self.cursor(cf, p);
                c.seek(p);
                c
            })
            .collect()
    }
}

/// A position among a cursor's keys.
pub(crate) trait Cursor {
    /// Move to the first key at or after `target`.
    fn seek(&mut self, target: &[u8]);
    fn next(&mut self);
    /// The current key and value; `None` at the end (or after an error: see `status`).
    fn current(&self) -> Option<(&[u8], &[u8])>;
    fn status(&self) -> Result<()>;
}

/// An open store. `Sync`: one store serves many threads.
pub struct Store {
    backend: Box<dyn Backend>,
    /// The format found at open (before any upgrade).
    opened_format: u32,
    read_only: bool,
}

/// A consistent view of the store for reads (`Store::snapshot`): every read of the store
/// goes through one.
pub(crate) struct Snapshot<'a> {
    view: Box<dyn View + 'a>,
}

impl Store {
    pub fn open(path: &str, opts: OpenOptions) -> Result<Store> {
        Store::open_with(path, opts, true)
    }

    /// `open`, with the backend's exclusive lock or (`lock` false: a read-only view beside a
    /// writer, `crate::admin`) without it.
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
        let mut backend = open_backend(path, opts.clone(), lock)?;
        let opened_format = check_format(backend.as_ref(), opts.read_only)?;
        backend.recover()?;
        Ok(Store { backend, opened_format, read_only: opts.read_only })
    }

    /// The format the store had when it was opened: below `FORMAT_VERSION`, its indexes
    /// are still to be built.
    pub fn opened_format(&self) -> u32 {
        self.opened_format
    }

    pub(crate) fn backend_stats(&self) -> BackendStats {
        self.backend.stats()
    }

    /// Record that the store now has this build's format (its indexes are complete).
    pub(crate) fn stage_format(&self, batch: &mut Batch) {
        batch.put(Cf::Meta, FORMAT_KEY, FORMAT_VERSION.to_le_bytes());
    }

    /// Remove every key of `cf` (an interrupted index build leaves partial indexes).
    pub(crate) fn clear_cf(&self, cf: Cf) -> Result<()> {
        let mut b = Batch::default();
        b.clear(cf);
        self.write(b)
    }

    /// Overwrite the format record; tests use it to simulate a store from a newer build.
    #[doc(hidden)]
    pub fn set_format_version_for_test(&self, v: u32) -> Result<()> {
        self.put_raw_for_test("meta", FORMAT_KEY, &v.to_le_bytes())
    }

    /// Write one raw key of a column family ("meta", "episodes", "adk", "index"); tests use
    /// it to recreate states that older builds or damaged files leave behind.
    #[doc(hidden)]
    pub fn put_raw_for_test(&self, cf: &str, key: &[u8], value: &[u8]) -> Result<()> {
        let cf = Cf::from_name(cf).ok_or_else(|| Error::invalid(format!("no column family {cf:?}")))?;
        let mut b = Batch::default();
        b.put(cf, key, value);
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

    /// Commit one batch atomically.
    pub(crate) fn write(&self, batch: Batch) -> Result<()> {
        self.check_writable()?;
        let (ops, postings) = batch.into_parts();
        self.backend.write(ops, postings)
    }

    /// Hold a namespace for one write (`Backend::lock_namespace`).
    pub(crate) fn lock_namespace(&self, prefix: &[u8]) -> Result<NsLock<'_>> {
        self.check_writable()?;
        Ok(NsLock { lock: self.backend.lock_namespace(prefix)? })
    }

    /// See `Backend::settle`.
    pub(crate) fn settle(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.backend.settle()
    }

    pub(crate) fn set_postings_limit(&self, bytes: usize) {
        self.backend.set_postings_limit(bytes);
    }

    /// Make every acknowledged write durable (fsync the write-ahead log).
    pub fn flush(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        self.backend.flush()
    }

    /// See `Backend::erase`.
    pub(crate) fn erase(&self, ranges: &[KeyRange<'_>]) -> Result<()> {
        self.check_writable()?;
        self.backend.erase(ranges)
    }

    pub(crate) fn approximate_bytes(&self, cf: Cf, from: &[u8], to: &[u8]) -> u64 {
        self.backend.approximate_bytes(cf, from, to)
    }

    pub(crate) fn backup(&self, dest: &str) -> Result<()> {
        self.backend.backup(dest)
    }

    pub(crate) fn verify(&self, cf: Cf, visit: &mut Visit<'_>) -> Result<()> {
        self.backend.verify(cf, visit)
    }

    /// The sequence number of the last write: it changes with every write batch.
    pub(crate) fn write_sequence(&self) -> u64 {
        self.backend.write_sequence()
    }

    /// Other processes may write it (`Backend::is_shared`).
    pub(crate) fn is_shared(&self) -> bool {
        self.backend.is_shared()
    }

    /// A `:memory:` store (nothing on disk to back up).
    pub(crate) fn is_in_memory(&self) -> bool {
        self.backend.is_in_memory()
    }

    /// A view of every acknowledged write (`Backend::snapshot`): what every read of postings
    /// starts from.
    pub(crate) fn snapshot(&self) -> Result<Snapshot<'_>> {
        Ok(Snapshot { view: self.backend.snapshot()? })
    }

    /// A view without the postings written behind (`Backend::snapshot_without_postings`):
    /// for writers and for reads of records, ADK buckets and non-posting index keys.
    pub(crate) fn snapshot_without_postings(&self) -> Snapshot<'_> {
        Snapshot { view: self.backend.snapshot_without_postings() }
    }

    pub(crate) fn get_episode_raw(&self, snap: &Snapshot<'_>, ns_prefix: &[u8], id: &Uuid) -> Result<Option<Vec<u8>>> {
        snap.view.get(Cf::Episodes, &keys::episode_key(ns_prefix, id))
    }

    /// Many episodes of one namespace at once, in `ids`' order.
    pub(crate) fn get_episodes_raw(
        &self,
        snap: &Snapshot<'_>,
        ns_prefix: &[u8],
        ids: &[Uuid],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let keys: Vec<Vec<u8>> = ids.iter().map(|id| keys::episode_key(ns_prefix, id)).collect();
        snap.view.multi_get(Cf::Episodes, &keys)
    }

    pub(crate) fn get_cf(&self, snap: &Snapshot<'_>, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        snap.view.get(cf, key)
    }

    pub(crate) fn multi_get_cf(&self, snap: &Snapshot<'_>, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        snap.view.multi_get(cf, keys)
    }

    /// Read `keys` ahead in `snap`, together (`View::prefetch`).
    pub(crate) fn prefetch(&self, snap: &Snapshot<'_>, keys: &[(Cf, Vec<u8>)]) -> Result<()> {
        snap.view.prefetch(keys)
    }

    /// An iterator over the keys of `cf` that start with `prefix`, positioned at the first
    /// at or after `start`.
    pub(crate) fn prefix_iter<'s>(
        &'s self,
        snap: &'s Snapshot<'s>,
        cf: Cf,
        prefix: &[u8],
        start: &[u8],
    ) -> StoreIter<'s> {
        let mut it = StoreIter { cursor: snap.view.cursor(cf, prefix) };
        it.seek(start);
        it
    }

    /// An iterator over the keys of `cf` that start with each of `prefixes`, each positioned
    /// at its first key (`View::cursors`).
    pub(crate) fn prefix_iters<'s>(
        &'s self,
        snap: &'s Snapshot<'s>,
        cf: Cf,
        prefixes: &[Vec<u8>],
        extent: Extent,
    ) -> Vec<StoreIter<'s>> {
        snap.view.cursors(cf, prefixes, extent).into_iter().map(|cursor| StoreIter { cursor }).collect()
    }

    /// Call `f(suffix, value)` for each key of `cf` that starts with `prefix` (`suffix`: the
    /// key after it), in key order, until `f` returns false.
    pub(crate) fn scan_prefix(
        &self,
        snap: &Snapshot<'_>,
        cf: Cf,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let mut it = self.prefix_iter(snap, cf, prefix, prefix);
        while let Some((k, v)) = it.cursor.current() {
            if !f(&k[prefix.len()..], v)? {
                return Ok(());
            }
            it.next();
        }
        it.status()
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
        let it = self.prefix_iter(snap, Cf::Episodes, &prefix, &start);
        EpisodeScan { it, prefix_len: prefix.len(), started: false }
    }
}

/// Whether `path` names a PostgreSQL database (`postgresql://...` or `postgres://...`)
/// rather than a directory.
pub fn is_postgres_uri(path: &str) -> bool {
    path.starts_with("postgresql://") || path.starts_with("postgres://")
}

fn open_backend(path: &str, opts: OpenOptions, lock: bool) -> Result<Box<dyn Backend>> {
    if is_postgres_uri(path) {
        // Any number of processes share a PostgreSQL store: there is no directory to lock.
        return postgres::open(path, opts);
    }
    rocks::open(path, opts, lock)
}

/// The format number found (or written, for a new store).
fn check_format(backend: &dyn Backend, read_only: bool) -> Result<u32> {
    let snap = backend.snapshot_without_postings();
    match snap.get(Cf::Meta, FORMAT_KEY)? {
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
            if found < FIRST_INDEXED_FORMAT && read_only {
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
        None if read_only => Err(Error::corruption("store has no format version record")),
        None => {
            // A store is born with its format record; a store that has episodes but no
            // format record was not written by mnem.
            let mut it = snap.cursor(Cf::Episodes, &[]);
            it.seek(&[]);
            if it.current().is_some() {
                return Err(Error::corruption("store has records but no format version record"));
            }
            it.status()?;
            drop(it);
            drop(snap);
            let mut b = Batch::default();
            b.put(Cf::Meta, FORMAT_KEY, FORMAT_VERSION.to_le_bytes());
            let (ops, postings) = b.into_parts();
            backend.write(ops, postings)?;
            Ok(FORMAT_VERSION)
        }
    }
}

/// A write's hold on one namespace (`Store::lock_namespace`); dropped, it lets the next
/// writer of the namespace in.
pub(crate) struct NsLock<'s> {
    lock: Box<dyn NamespaceLock + 's>,
}

impl NsLock<'_> {
    /// Commit one batch atomically, the namespace still held.
    pub fn write(&self, batch: Batch) -> Result<()> {
        let (ops, postings) = batch.into_parts();
        self.lock.write(ops, postings)
    }
}

/// A store iterator over one snapshot.
pub(crate) struct StoreIter<'s> {
    cursor: Box<dyn Cursor + 's>,
}

impl<'s> StoreIter<'s> {
    #[cfg(test)]
    pub fn of(cursor: Box<dyn Cursor + 's>) -> StoreIter<'s> {
        StoreIter { cursor }
    }
}

impl StoreIter<'_> {
    pub fn seek(&mut self, target: &[u8]) {
        self.cursor.seek(target);
    }

    pub fn next(&mut self) {
        self.cursor.next();
    }

    pub fn valid(&self) -> bool {
        self.cursor.current().is_some()
    }

    pub fn key(&self) -> Option<&[u8]> {
        self.cursor.current().map(|(k, _)| k)
    }

    pub fn value(&self) -> Option<&[u8]> {
        self.cursor.current().map(|(_, v)| v)
    }

    /// The key and the value together: one look at the cursor, where `key` and `value`
    /// take one each (a loop over many keys reads them at every step).
    pub fn current(&self) -> Option<(&[u8], &[u8])> {
        self.cursor.current()
    }

    pub fn status(&self) -> Result<()> {
        self.cursor.status()
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
        let Some((key, value)) = self.it.cursor.current() else {
            self.it.status()?;
            return Ok(None);
        };
        let id = key
            .get(self.prefix_len..)
            .and_then(|b| <[u8; 16]>::try_from(b).ok())
            .map(Uuid::from_bytes)
            .ok_or_else(|| Error::corruption("episode key has a malformed length"))?;
        Ok(Some((id, value)))
    }
}

/// Milliseconds since the Unix epoch, now: every read request takes this once.
pub fn now_ms() -> i64 {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_gives_back_its_ops_in_order() {
        let mut b = Batch::default();
        b.put(Cf::Episodes, b"k1", b"v1");
        b.delete(Cf::Adk, b"");
        b.delete_range(Cf::Index, b"a", b"b");
        b.put(Cf::Meta, b"", [7; 300]);
        b.clear(Cf::Index);
        let (ops, run) = b.into_parts();
        assert!(run.is_none());
        let got: Vec<Op<'_>> = ops.iter().collect();
        assert_eq!(
            got,
            vec![
                Op::Put(Cf::Episodes, b"k1", b"v1"),
                Op::Delete(Cf::Adk, b""),
                Op::DeleteRange(Cf::Index, b"a", b"b"),
                Op::Put(Cf::Meta, b"", &[7; 300]),
                Op::Clear(Cf::Index),
            ]
        );
    }
}
