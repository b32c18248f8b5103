//! Index postings written behind their records.
//!
//! Most of a write's index keys are postings (one term's or char's entry for one episode):
//! about 30 of the 38 keys an ADK event writes. Inserted among the hundreds of thousands of
//! keys in RocksDB's memtable, each posting costs a skip-list search of its own; inserted in
//! long sorted runs, each continues where the one before ended. So a write does not put its
//! posting changes in the `index` column family. It encodes them as one sorted *run*
//! (`crate::store::runs`), puts the run in the `meta` column family as a journal entry, in the same
//! atomic batch as its records and its other index keys, and keeps the run in memory
//! (`Behind`). The runs held are merged and written to the `index` column family, with their
//! journal entries deleted, in one batch by a background thread: once `LIMIT` bytes wait
//! (writes go on meanwhile), when a read finds runs held and writes have paused, and before
//! a store-management operation or close.
//!
//! Reads never write and never wait for a writer: a read applies the runs its snapshot holds
//! the journal entries of, merged in memory (`runs::Overlays`), on top of its index reads
//! (`Behind::read_snapshot`). Which runs those are follows from RocksDB's sequence numbers,
//! read around each journaling write, without reading the journal. So a full disk stops
//! writes, not searches.
//!
//! - The mover's batch is not written to the write-ahead log (the journal entries are), and
//!   every flush takes all column families at once: a posting in a table file comes with its
//!   journal entry's delete, and one only in the memtable has its entry still in the log.
//! - A crash loses only the memory copy (with the moves not yet flushed, deletes of journal
//!   entries included): the next read-write open writes the journal's runs
//!   to the index (`Backend::recover`).
//! - A read-only open, or a view beside a writer, cannot write: it reads the journal into an
//!   overlay that every one of its snapshots carries (`Backend::recover`).
//!
//! A journal entry's key is `"journal/" ‖ u64be(sequence)`, its value a run; docs/FORMAT.md
//! has the bytes.

use super::db::{Rocks, RocksView};
use crate::error::{Error, Result};
use crate::store::runs::{merge, Overlays, Piece};
use crate::store::{now_ms, Cf, View};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use rocksdb::WriteBatch;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Bytes of runs held before they are written to the index: about 3,000 ADK events of
/// postings, so that a term's postings meet in runs of dozens while memory stays small.
pub(crate) const LIMIT: usize = 4 << 20;

/// The `meta` column family's key prefix of journal entries.
pub(crate) const JOURNAL_PREFIX: &[u8] = b"journal/";

pub(crate) fn journal_key(seq: u64) -> Vec<u8> {
    [JOURNAL_PREFIX, &seq.to_be_bytes()].concat()
}

/// The bytes a journal key's op adds to a RocksDB batch, beside its value.
const JOURNAL_OP_BYTES: usize = JOURNAL_PREFIX.len() + 8 + super::db::BATCH_OP_OVERHEAD;

/// At least the bytes the put of `run`'s journal entry adds to a RocksDB batch.
pub(crate) fn journal_put_bound(run: &[u8]) -> usize {
    run.len() + JOURNAL_OP_BYTES
}

/// The journal's entries in the store, in sequence order.
pub(crate) fn read_journal(rocks: &Rocks) -> Result<Vec<(u64, Vec<u8>)>> {
    let mut out = Vec::new();
    rocks.view().scan(Cf::Meta, JOURNAL_PREFIX, |seq, run| {
        let seq = <[u8; 8]>::try_from(seq).map_err(|_| Error::corruption("a journal key is malformed"))?;
        out.push((u64::from_be_bytes(seq), run.to_vec()));
        Ok(())
    })?;
    Ok(out)
}

/// The journal's runs merged: the overlay of a store that cannot write them to the index.
pub(crate) fn journal_piece(journal: &[(u64, Vec<u8>)]) -> Result<Piece> {
    let runs: Vec<&[u8]> = journal.iter().map(|(_, r)| r.as_slice()).collect();
    let seqs = journal.first().map_or(0, |j| j.0)..journal.last().map_or(0, |j| j.0 + 1);
    Piece::merge(seqs, &runs)
}

/// Stage writing `runs` to the index column family and deleting the journal entries
/// `seqs` (a range of sequence numbers) into `batch`.
pub(crate) fn stage_runs(rocks: &Rocks, runs: &[&[u8]], seqs: Range<u64>, batch: &mut WriteBatch) -> Result<()> {
    let index = rocks.cf(Cf::Index);
    merge(runs, |k, v| match v {
        Some(v) => batch.put_cf(index, k, v),
        None => batch.delete_cf(index, k),
    })?;
    let meta = rocks.cf(Cf::Meta);
    for seq in seqs {
        batch.delete_cf(meta, journal_key(seq));
    }
    Ok(())
}

/// After a move fails (a full disk), reads do not ask for another for this long.
const MOVE_RETRY_MS: i64 = 1000;
/// Reads ask for a move of the runs held once writes have paused for this long, so that a
/// store at rest answers from the index alone.
const IDLE_MS: i64 = 50;

/// A writer's runs: journaled, not yet in the index column family, and the thread that
/// moves them there. Every commit holds `held` while it writes; reads never take it.
pub(crate) struct Behind {
    store: Arc<Rocks>,
    held: Mutex<Held>,
    /// Signalled when a mover thread ends.
    moved: Condvar,
    /// `LIMIT`, lowered by tests so that moves happen often.
    limit: AtomicUsize,
    /// Odd while runs are held; changed under `held` before the write that starts holding
    /// some and after the write that moves the last (`read_snapshot`).
    generation: AtomicU64,
    /// The runs held, by journal sequence, for reads: a run is here before its journal entry
    /// can be in any snapshot and leaves after the move that deletes the entry.
    journaled: RwLock<BTreeMap<u64, Arc<Journaled>>>,
    /// RocksDB's latest sequence number after the last move whose runs left `journaled`: an
    /// older snapshot may lack postings that are no longer held.
    moved_after: AtomicU64,
    /// Merged runs kept between reads (readers, and the thread that compacts them).
    overlays: Arc<Mutex<Overlays>>,
    /// A thread compacts `overlays` now.
    compacting: Arc<AtomicBool>,
    /// When the last write committed, and when a move last failed (ms since the epoch).
    last_commit_ms: AtomicI64,
    last_failed_move_ms: AtomicI64,
}

/// A run held, and where its journaling write falls among RocksDB's sequence numbers: a
/// snapshot at or below `before` lacks its journal entry, one at or above `after` has it.
/// In between (a snapshot taken while the write was applied) the snapshot itself says.
struct Journaled {
    run: Arc<Vec<u8>>,
    before: u64,
    /// `u64::MAX` until the write has returned.
    after: AtomicU64,
}

#[derive(Default)]
struct Held {
    /// Journal entries `first_seq..next_seq`, in order.
    runs: VecDeque<Arc<Vec<u8>>>,
    bytes: usize,
    first_seq: u64,
    next_seq: u64,
    /// The leading runs a mover thread is writing to the index, and their bytes.
    moving: usize,
    moving_bytes: usize,
    mover: Option<JoinHandle<()>>,
}

impl Behind {
    /// Nothing held; the next journal entry is `next_seq`.
    pub fn new(store: Arc<Rocks>, next_seq: u64) -> Arc<Behind> {
        let held = Held { first_seq: next_seq, next_seq, ..Held::default() };
        Arc::new(Behind {
            store,
            held: Mutex::new(held),
            moved: Condvar::new(),
            limit: AtomicUsize::new(LIMIT),
            generation: AtomicU64::new(0),
            journaled: RwLock::new(BTreeMap::new()),
            moved_after: AtomicU64::new(0),
            overlays: Arc::new(Mutex::new(Overlays::default())),
            compacting: Arc::new(AtomicBool::new(false)),
            last_commit_ms: AtomicI64::new(0),
            last_failed_move_ms: AtomicI64::new(i64::MIN),
        })
    }

    /// Commit `batch` and journal `run` (this write's postings) in it. Once `LIMIT` bytes of
    /// runs wait, a mover thread writes them to the index while writes go on; if the
    /// previous mover has not finished by the next `LIMIT`, the write waits for it.
    pub fn commit(self: &Arc<Self>, mut batch: WriteBatch, run: Option<Vec<u8>>) -> Result<()> {
        let mut h = self.held.lock();
        let Some(run) = run else { return self.store.write(batch) };
        let was_empty = h.runs.is_empty();
        if was_empty {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        let seq = h.next_seq;
        batch.put_cf(self.store.cf(Cf::Meta), journal_key(seq), &run);
        let run = Arc::new(run);
        // Before the write: a snapshot that holds the journal entry finds its run.
        let journaled = Arc::new(Journaled {
            run: Arc::clone(&run),
            before: self.store.latest_sequence(),
            after: AtomicU64::new(u64::MAX),
        });
        self.journaled.write().insert(seq, Arc::clone(&journaled));
        if let Err(e) = self.store.write(batch) {
            self.journaled.write().remove(&seq);
            if was_empty {
                self.generation.fetch_add(1, Ordering::SeqCst);
            }
            return Err(e);
        }
        // Before any move of this run can start (moves take `held`, which this write holds).
        journaled.after.store(self.store.latest_sequence(), Ordering::SeqCst);
        self.last_commit_ms.store(now_ms(), Ordering::Relaxed);
        h.bytes += run.len();
        h.runs.push_back(run);
        h.next_seq += 1;
        let limit = self.limit.load(Ordering::Relaxed);
        if h.bytes - h.moving_bytes >= limit {
            while h.moving > 0 {
                self.moved.wait(&mut h);
            }
            // The last mover may have written every run while this write waited.
            if h.bytes >= limit {
                self.start_mover(&mut h);
            }
        }
        Ok(())
    }

    fn start_mover(self: &Arc<Self>, h: &mut Held) {
        // Called with nothing moving: the last mover is past its only use of `held` and
        // ends without waiting for anything.
        if let Some(done) = h.mover.take() {
            let _ = done.join();
        }
        let runs: Vec<Arc<Vec<u8>>> = h.runs.iter().cloned().collect();
        (h.moving, h.moving_bytes) = (runs.len(), h.bytes);
        let this = Arc::clone(self);
        let seqs = h.first_seq..h.first_seq + runs.len() as u64;
        let spawned = std::thread::Builder::new().name("mnem-postings".into()).spawn(move || {
            let written = std::panic::catch_unwind(AssertUnwindSafe(|| this.write_runs(&runs, seqs)));
            let mut h = this.held.lock();
            if matches!(written, Ok(Ok(()))) {
                this.moved_out(&mut h, runs.len());
            } else {
                // The runs stay held (and readable from memory): a later move writes them.
                this.last_failed_move_ms.store(now_ms(), Ordering::Relaxed);
            }
            (h.moving, h.moving_bytes) = (0, 0);
            this.moved.notify_all();
        });
        match spawned {
            Ok(t) => h.mover = Some(t),
            // No thread to spare: the runs wait for the next move.
            Err(_) => (h.moving, h.moving_bytes) = (0, 0),
        }
    }

    fn write_runs(&self, runs: &[Arc<Vec<u8>>], seqs: Range<u64>) -> Result<()> {
        let refs: Vec<&[u8]> = runs.iter().map(|r| r.as_slice()).collect();
        // A run spends more bytes per op than the batch does (`runs`: 9 beside key and value),
        // so its size is room enough for its puts, and the batch never grows by copying
        // (about 4 MiB per move); then a delete of each journal entry.
        let room = super::db::BATCH_HEADER
            + refs.iter().map(|r| r.len()).sum::<usize>()
            + JOURNAL_OP_BYTES * (seqs.end - seqs.start) as usize;
        let mut b = WriteBatch::with_capacity_bytes(room);
        stage_runs(&self.store, &refs, seqs, &mut b)?;
        // Not logged: the journal entries are, and stay until a flush has put these postings
        // in a table file with their deletes (an atomic flush). A crash before that loses
        // both, and the next open moves the journal again (`Backend::recover`). So each
        // posting goes through the write-ahead log once, not twice.
        self.store.write_unlogged(b)
    }

    /// The first `n` runs are in the index.
    fn moved_out(&self, h: &mut Held, n: usize) {
        let first = h.first_seq;
        for run in h.runs.drain(..n) {
            h.bytes -= run.len();
        }
        h.first_seq += n as u64;
        // Before the runs leave `journaled`: a read that no longer finds them sees this.
        self.moved_after.store(self.store.latest_sequence(), Ordering::SeqCst);
        {
            let mut j = self.journaled.write();
            for seq in first..h.first_seq {
                j.remove(&seq);
            }
        }
        if h.runs.is_empty() {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Write every held run to the index now (after a running mover ends), and flush, so that
    /// no journal entry of a move, unlogged, is moved again at the next open: store
    /// management settles before its range deletes, which such a replay would land behind
    /// (a forgotten namespace's postings back in the index). For writers and store
    /// management, which hold the write lock; never for reads.
    pub fn settle(&self) -> Result<()> {
        self.settle_held(&mut self.held.lock())?;
        self.store.flush_memtables()
    }

    fn settle_held(&self, h: &mut MutexGuard<'_, Held>) -> Result<()> {
        while h.moving > 0 {
            self.moved.wait(h);
        }
        if h.runs.is_empty() {
            return Ok(());
        }
        let runs: Vec<Arc<Vec<u8>>> = h.runs.iter().cloned().collect();
        self.write_runs(&runs, h.first_seq..h.next_seq)?;
        let n = h.runs.len();
        self.moved_out(h, n);
        Ok(())
    }

    /// A snapshot in which every acknowledged write's postings are visible: what every read
    /// of postings starts from. With no run held (`generation` even and unchanged across the
    /// snapshot) it is a plain snapshot; else it carries the runs its journal holds, merged,
    /// as an overlay of the index. It never writes, never takes `held` and never reads the
    /// journal: the runs are those whose journaling write the snapshot's sequence number
    /// covers. Runs already moved may be among them (the oldest ones held): they repeat
    /// what the index has, under every later run the snapshot holds, so they change nothing.
    pub fn read_snapshot(self: &Arc<Self>) -> Result<RocksView<'_>> {
        loop {
            let g = self.generation.load(Ordering::SeqCst);
            let snap = self.store.view();
            if g.is_multiple_of(2) && self.generation.load(Ordering::SeqCst) == g {
                return Ok(snap);
            }
            let at = snap.sequence();
            let (seqs, runs) = {
                let j = self.journaled.read();
                // A move finished after this snapshot may have taken runs it needs.
                if at < self.moved_after.load(Ordering::SeqCst) {
                    continue;
                }
                let first = j.keys().next().copied().unwrap_or(0);
                let mut runs = Vec::new();
                for (&seq, held) in j.iter() {
                    let covered = if at <= held.before {
                        false
                    } else if at >= held.after.load(Ordering::SeqCst) {
                        true
                    } else {
                        // Taken while the write was applied: a move of this run starts only
                        // after the write returned, so the entry is there if it was written.
                        snap.get(Cf::Meta, &journal_key(seq))?.is_some()
                    };
                    if !covered {
                        // Journaling writes are one at a time: no later run is covered either.
                        break;
                    }
                    runs.push(Arc::clone(&held.run));
                }
                (first..first + runs.len() as u64, runs)
            };
            if seqs.is_empty() {
                return Ok(snap);
            }
            self.ask_for_move();
            let (overlay, due) = self.overlays.lock().overlay(seqs, &runs)?;
            if due {
                self.compact_overlays();
            }
            return Ok(snap.with_index_overlay(overlay));
        }
    }

    /// Start a move of the runs held when writes have paused and none is running, without
    /// waiting for anything: a read calls it, and a store at rest then answers without an
    /// overlay. After a failed move (a full disk), not again for `MOVE_RETRY_MS`.
    fn ask_for_move(self: &Arc<Self>) {
        let now = now_ms();
        if self.store.is_read_only()
            || self.limit.load(Ordering::Relaxed) == usize::MAX
            || now.saturating_sub(self.last_commit_ms.load(Ordering::Relaxed)) < IDLE_MS
            || now.saturating_sub(self.last_failed_move_ms.load(Ordering::Relaxed)) < MOVE_RETRY_MS
        {
            return;
        }
        if let Some(mut h) = self.held.try_lock() {
            if h.moving == 0 && !h.runs.is_empty() {
                self.start_mover(&mut h);
            }
        }
    }

    /// Compact the kept pieces on a thread of its own (one at a time), so that no read waits
    /// for a large merge. The thread holds the pieces alone, not the store: it never keeps a
    /// closed store open.
    fn compact_overlays(&self) {
        if self.compacting.swap(true, Ordering::SeqCst) {
            return;
        }
        let (overlays, compacting) = (Arc::clone(&self.overlays), Arc::clone(&self.compacting));
        let spawned = std::thread::Builder::new().name("mnem-overlay".into()).spawn(move || {
            // A failed merge (a malformed run) leaves the pieces as they were: reads still
            // answer from them, and report the damage when they merge it themselves.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| Overlays::compact(&overlays)));
            compacting.store(false, Ordering::SeqCst);
        });
        if spawned.is_err() {
            self.compacting.store(false, Ordering::SeqCst);
        }
    }

    pub fn set_limit(&self, bytes: usize) {
        self.limit.store(bytes, Ordering::Relaxed);
    }

    /// Write what is held and wait for the mover thread: the store may then close.
    pub fn close(&self) -> Result<()> {
        let mut h = self.held.lock();
        let settled = self.settle_held(&mut h);
        if let Some(done) = h.mover.take() {
            let _ = done.join();
        }
        self.overlays.lock().clear();
        settled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::runs::Postings;
    use crate::store::{OpenOptions, MEMORY_PATH};

    fn run(key: &[u8]) -> Vec<u8> {
        let mut p = Postings::default();
        p.push(|k| k.extend_from_slice(key), Some(b"v"));
        p.into_run()
    }

    fn put_meta(rocks: &Rocks, key: &[u8], value: &[u8]) {
        let mut b = WriteBatch::default();
        b.put_cf(rocks.cf(Cf::Meta), key, value);
        rocks.write(b).unwrap();
    }

    /// Settling (store management, before its range deletes) leaves no move unlogged: the
    /// postings and the journal's deletes reach the table files, so no later open moves
    /// those journal entries again behind the range deletes.
    #[test]
    fn settling_makes_the_unlogged_moves_durable() {
        let path = std::env::temp_dir().join(format!("mnem-deferred-settle-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        let opts = OpenOptions { create: true, ..Default::default() };
        let rocks = Arc::new(Rocks::open(path.to_str().unwrap(), opts, true).unwrap());
        let behind = Behind::new(Arc::clone(&rocks), 0);
        behind.set_limit(usize::MAX);
        behind.commit(WriteBatch::default(), Some(run(b"k0"))).unwrap();
        let in_memtable =
            |cf| rocks.db.property_int_value_cf(rocks.cf(cf), "rocksdb.num-entries-active-mem-table").unwrap().unwrap();
        assert_eq!(in_memtable(Cf::Meta), 1, "the journal entry");
        behind.settle().unwrap();
        assert_eq!((in_memtable(Cf::Index), in_memtable(Cf::Meta)), (0, 0));
        assert!(read_journal(&rocks).unwrap().is_empty());
        assert!(rocks.view().get(Cf::Index, b"k0").unwrap().is_some());
        drop(behind);
        drop(rocks);
        std::fs::remove_dir_all(&path).unwrap();
    }

    /// A snapshot taken while a run's journaling write is applied holds the run exactly when
    /// it holds the run's journal entry (the sequence numbers around the write cannot say).
    #[test]
    fn a_run_being_journaled_counts_when_the_snapshot_holds_its_entry() {
        let opts = OpenOptions { create: true, ..Default::default() };
        let rocks = Arc::new(Rocks::open(MEMORY_PATH, opts, false).unwrap());
        let behind = Behind::new(Arc::clone(&rocks), 0);
        behind.set_limit(usize::MAX);
        behind.commit(WriteBatch::default(), Some(run(b"k0"))).unwrap();
        // Journal entry 1 as a commit registers it before its write returns.
        let pending =
            Journaled { run: Arc::new(run(b"k1")), before: rocks.latest_sequence(), after: AtomicU64::new(u64::MAX) };
        behind.journaled.write().insert(1, Arc::new(pending));
        let sees = |key: &[u8]| behind.read_snapshot().unwrap().get(Cf::Index, key).unwrap().is_some();
        assert!(sees(b"k0") && !sees(b"k1"), "before the write");
        // Another write lands first: snapshots are past `before`, the entry is not there yet.
        put_meta(&rocks, b"other", b"x");
        assert!(sees(b"k0") && !sees(b"k1"), "the write under way, its entry not applied");
        put_meta(&rocks, &journal_key(1), &run(b"k1"));
        assert!(sees(b"k0") && sees(b"k1"), "the entry applied, the write not yet returned");
    }
}
