//! Index postings written behind their records.
//!
//! Most of a write's index keys are postings (one term's or char's entry for one episode):
//! about 30 of the 38 keys an ADK event writes. Inserted among the hundreds of thousands of
//! keys in RocksDB's memtable, each posting costs a skip-list search of its own; inserted in
//! long sorted runs, each continues where the one before ended. So a write does not put its
//! posting changes in the `index` column family. It encodes them as one sorted *run*, puts
//! the run in the `meta` column family as a journal entry, in the same atomic batch as its
//! records and its other index keys, and keeps the run in memory (`Behind`). The runs held
//! are merged and written to the `index` column family, with their journal entries deleted,
//! in one batch: by a background thread once `LIMIT` bytes wait (writes go on meanwhile),
//! and inline before anything reads postings (`Behind::read_snapshot`) and when the store
//! closes.
//!
//! - A crash loses only the memory copy: the next read-write open writes the journal's runs
//!   to the index (`Engine::open`).
//! - A read-only open, or a view beside a writer, cannot write: it reads the journal into an
//!   overlay that its index reads consult (`Store::set_index_overlay`).
//!
//! A run is `{ u32le key length, key, u8 0 (delete) | 1 (put), [u32le value length, value] }`
//! repeated, keys ascending (a key twice: the later op wins). Its journal key is
//! `"journal/" ‖ u64be(sequence)`; docs/FORMAT.md has the bytes.

use crate::codec::{push_bytes, Reader};
use crate::error::{Error, Result};
use crate::store::{Store, CF_INDEX, CF_META};
use parking_lot::{Condvar, Mutex, MutexGuard};
use rocksdb::{Snapshot, WriteBatch};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// Posting changes as a write stages them: every key and value in one buffer, since a
/// write stages hundreds (an allocation each would cost more than the rest of staging).
#[derive(Default)]
pub(crate) struct Postings {
    bytes: Vec<u8>,
    /// Where each change's key starts in `bytes`, its length, and its value's length (the
    /// value follows the key), or `None` for a delete.
    ops: Vec<(usize, u32, Option<u32>)>,
}

impl Postings {
    /// Add a change: `key` appends the key's bytes to the buffer it is given.
    pub fn push(&mut self, key: impl FnOnce(&mut Vec<u8>), value: Option<&[u8]>) {
        let start = self.bytes.len();
        key(&mut self.bytes);
        let klen = len32(self.bytes.len() - start);
        if let Some(v) = value {
            self.bytes.extend_from_slice(v);
        }
        self.ops.push((start, klen, value.map(|v| len32(v.len()))));
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Add `other`'s changes after these.
    pub fn append(&mut self, other: Postings) {
        let shift = self.bytes.len();
        self.bytes.extend_from_slice(&other.bytes);
        self.ops.extend(other.ops.into_iter().map(|(s, k, v)| (s + shift, k, v)));
    }

    fn key(&self, op: &(usize, u32, Option<u32>)) -> &[u8] {
        &self.bytes[op.0..op.0 + op.1 as usize]
    }

    /// Encode as a run: sorted by key, stably, so that a key's later change stays later.
    pub fn into_run(mut self) -> Vec<u8> {
        let mut ops = std::mem::take(&mut self.ops);
        ops.sort_by(|a, b| self.key(a).cmp(self.key(b)));
        let mut run = Vec::with_capacity(self.bytes.len() + 9 * ops.len());
        for &(start, klen, vlen) in &ops {
            let key_end = start + klen as usize;
            push_bytes(&mut run, &self.bytes[start..key_end]);
            match vlen {
                Some(n) => {
                    run.push(1);
                    push_bytes(&mut run, &self.bytes[key_end..key_end + n as usize]);
                }
                None => run.push(0),
            }
        }
        run
    }
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).expect("index keys and values are far below 4 GiB")
}

/// The ops of a run, in order; a malformed run is CORRUPTION.
pub(crate) struct RunOps<'a>(Reader<'a>);

impl<'a> RunOps<'a> {
    pub fn new(run: &'a [u8]) -> RunOps<'a> {
        RunOps(Reader::new(run, "a journal entry of index postings"))
    }

    fn op(&mut self) -> Result<(&'a [u8], Option<&'a [u8]>)> {
        let key = self.0.bytes()?;
        match self.0.take(1)?[0] {
            0 => Ok((key, None)),
            1 => Ok((key, Some(self.0.bytes()?))),
            _ => Err(Error::corruption("a journal entry of index postings has an unknown op")),
        }
    }
}

impl<'a> Iterator for RunOps<'a> {
    type Item = Result<(&'a [u8], Option<&'a [u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.rest.is_empty() {
            return None;
        }
        let op = self.op();
        if op.is_err() {
            self.0.rest = &[];
        }
        Some(op)
    }
}

/// Call `f` with the last op of each key of `runs` (later runs win), in key order: a k-way
/// merge, since each run is sorted.
pub(crate) fn merge<'a>(runs: &[&'a [u8]], mut f: impl FnMut(&'a [u8], Option<&'a [u8]>)) -> Result<()> {
    let mut cursors: Vec<RunOps<'a>> = runs.iter().map(|r| RunOps::new(r)).collect();
    // (key, run): equal keys come out oldest run first. A run has one op in the heap at a
    // time, so its equal keys come out in order.
    let mut heap = BinaryHeap::with_capacity(runs.len());
    for (i, c) in cursors.iter_mut().enumerate() {
        if let Some(op) = c.next() {
            let (k, v) = op?;
            heap.push(Reverse((k, i, v)));
        }
    }
    let mut last: Option<(&'a [u8], Option<&'a [u8]>)> = None;
    while let Some(Reverse((k, i, v))) = heap.pop() {
        if let Some(op) = cursors[i].next() {
            let (nk, nv) = op?;
            if nk < k {
                return Err(Error::corruption("a journal entry of index postings is out of order"));
            }
            heap.push(Reverse((nk, i, nv)));
        }
        match last {
            Some((lk, _)) if lk == k => {}
            Some((lk, lv)) => f(lk, lv),
            None => {}
        }
        last = Some((k, v));
    }
    if let Some((lk, lv)) = last {
        f(lk, lv);
    }
    Ok(())
}

/// The journal's entries in the store, in sequence order.
pub(crate) fn read_journal(store: &Store) -> Result<Vec<(u64, Vec<u8>)>> {
    let snap = store.snapshot();
    let mut out = Vec::new();
    store.scan_prefix(&snap, CF_META, JOURNAL_PREFIX, |seq, run| {
        let seq = <[u8; 8]>::try_from(seq).map_err(|_| Error::corruption("a journal key is malformed"))?;
        out.push((u64::from_be_bytes(seq), run.to_vec()));
        Ok(true)
    })?;
    Ok(out)
}

/// The final state of every key the journal's runs change: a read-only store's overlay.
pub(crate) fn overlay(journal: &[(u64, Vec<u8>)]) -> Result<BTreeMap<Vec<u8>, Option<Vec<u8>>>> {
    let runs: Vec<&[u8]> = journal.iter().map(|(_, r)| r.as_slice()).collect();
    let mut out = BTreeMap::new();
    merge(&runs, |k, v| {
        out.insert(k.to_vec(), v.map(<[u8]>::to_vec));
    })?;
    Ok(out)
}

/// Stage writing `runs` to the index column family and deleting the journal entries
/// `seqs` (a range of sequence numbers) into `batch`.
pub(crate) fn stage_runs(store: &Store, runs: &[&[u8]], seqs: Range<u64>, batch: &mut WriteBatch) -> Result<()> {
    let index = store.cf(CF_INDEX);
    merge(runs, |k, v| match v {
        Some(v) => batch.put_cf(index, k, v),
        None => batch.delete_cf(index, k),
    })?;
    let meta = store.cf(CF_META);
    for seq in seqs {
        batch.delete_cf(meta, journal_key(seq));
    }
    Ok(())
}

/// A writer's runs: journaled, not yet in the index column family, and the thread that
/// moves them there. Every commit holds `held` while it writes, so a reader holding it sees
/// no write in flight.
pub(crate) struct Behind {
    store: Arc<Store>,
    held: Mutex<Held>,
    /// Signalled when a mover thread ends.
    moved: Condvar,
    /// `LIMIT`, lowered by tests so that moves happen often.
    limit: AtomicUsize,
    /// Odd while runs are held; changed under `held` before the write that starts holding
    /// some and after the write that moves the last (`read_snapshot`).
    generation: AtomicU64,
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
    pub fn new(store: Arc<Store>, next_seq: u64) -> Arc<Behind> {
        let held = Held { first_seq: next_seq, next_seq, ..Held::default() };
        Arc::new(Behind {
            store,
            held: Mutex::new(held),
            moved: Condvar::new(),
            limit: AtomicUsize::new(LIMIT),
            generation: AtomicU64::new(0),
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
        batch.put_cf(self.store.cf(CF_META), journal_key(h.next_seq), &run);
        if let Err(e) = self.store.write(batch) {
            if was_empty {
                self.generation.fetch_add(1, Ordering::SeqCst);
            }
            return Err(e);
        }
        h.bytes += run.len();
        h.runs.push_back(Arc::new(run));
        h.next_seq += 1;
        let limit = self.limit.load(Ordering::Relaxed);
        if h.bytes - h.moving_bytes >= limit {
            while h.moving > 0 {
                self.moved.wait(&mut h);
            }
            // A search may have written every run while this write waited.
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
            }
            // A failed move leaves the runs held: the next settle writes them.
            (h.moving, h.moving_bytes) = (0, 0);
            this.moved.notify_all();
        });
        match spawned {
            Ok(t) => h.mover = Some(t),
            // No thread to spare: the runs wait for the next settle.
            Err(_) => (h.moving, h.moving_bytes) = (0, 0),
        }
    }

    fn write_runs(&self, runs: &[Arc<Vec<u8>>], seqs: Range<u64>) -> Result<()> {
        let refs: Vec<&[u8]> = runs.iter().map(|r| r.as_slice()).collect();
        let mut b = WriteBatch::default();
        stage_runs(&self.store, &refs, seqs, &mut b)?;
        self.store.write(b)
    }

    /// The first `n` runs are in the index.
    fn moved_out(&self, h: &mut Held, n: usize) {
        for run in h.runs.drain(..n) {
            h.bytes -= run.len();
        }
        h.first_seq += n as u64;
        if h.runs.is_empty() {
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Write every held run to the index now (after a running mover ends).
    pub fn settle(&self) -> Result<()> {
        self.settle_held(&mut self.held.lock())
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

    /// A snapshot in which every acknowledged write's postings are in the index: what every
    /// read of postings starts from. With no run held (`generation` even and unchanged
    /// across the snapshot) it takes no lock; else it writes them first. A caller may hold
    /// a graph's read lock: writers take `held` only after their graph changes are staged,
    /// and the mover takes no other lock.
    pub fn read_snapshot(&self) -> Result<Snapshot<'_>> {
        let g = self.generation.load(Ordering::SeqCst);
        if g.is_multiple_of(2) {
            let snap = self.store.snapshot();
            if self.generation.load(Ordering::SeqCst) == g {
                return Ok(snap);
            }
        }
        let mut h = self.held.lock();
        self.settle_held(&mut h)?;
        Ok(self.store.snapshot())
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
        settled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Op = (Vec<u8>, Option<Vec<u8>>);

    fn ops(run: &[u8]) -> Vec<Op> {
        RunOps::new(run).map(|o| o.map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))).collect::<Result<_>>().unwrap()
    }

    fn put(k: &str, v: &str) -> Op {
        (k.as_bytes().to_vec(), Some(v.as_bytes().to_vec()))
    }

    fn del(k: &str) -> Op {
        (k.as_bytes().to_vec(), None)
    }

    /// A run of `ops` staged in two writes' worth of `Postings`.
    fn encode_run(ops: Vec<Op>) -> Vec<u8> {
        let (mut first, mut second) = (Postings::default(), Postings::default());
        let half = ops.len() / 2;
        for (i, (k, v)) in ops.iter().enumerate() {
            let p = if i < half { &mut first } else { &mut second };
            p.push(|b| b.extend_from_slice(k), v.as_deref());
        }
        first.append(second);
        first.into_run()
    }

    #[test]
    fn a_run_is_sorted_stably_and_round_trips() {
        let run = encode_run(vec![put("b", "1"), del("a"), put("a", ""), put("c", "xyz")]);
        assert_eq!(ops(&run), vec![del("a"), put("a", ""), put("b", "1"), put("c", "xyz")]);
    }

    #[test]
    fn merge_keeps_the_last_op_of_each_key_in_key_order() {
        let older = encode_run(vec![put("a", "old"), put("b", "old"), put("d", "old")]);
        let newer = encode_run(vec![del("a"), put("c", "new"), put("d", "new"), put("d", "newest")]);
        let mut got = Vec::new();
        merge(&[&older, &newer], |k, v| got.push((k.to_vec(), v.map(<[u8]>::to_vec)))).unwrap();
        assert_eq!(got, vec![del("a"), put("b", "old"), put("c", "new"), put("d", "newest")]);
        let journal = vec![(0, older), (1, newer)];
        let o = overlay(&journal).unwrap();
        assert_eq!(o.get(b"a".as_slice()), Some(&None));
        assert_eq!(o.get(b"d".as_slice()), Some(&Some(b"newest".to_vec())));
    }

    #[test]
    fn damaged_runs_are_corruption() {
        let run = encode_run(vec![put("a", "1"), put("b", "2")]);
        // Cut anywhere but at the end of the first op (11 bytes): a shorter valid run.
        for cut in (1..run.len()).filter(|&c| c != 11) {
            let r = RunOps::new(&run[..cut]).collect::<Result<Vec<_>>>();
            assert!(r.is_err(), "cut at {cut}");
        }
        let mut bad = run.clone();
        bad[5] = 7; // the first op's kind
        assert!(RunOps::new(&bad).collect::<Result<Vec<_>>>().is_err());
        let unsorted = [encode_run(vec![put("b", "1")]), encode_run(vec![put("a", "1")])].concat();
        assert!(merge(&[&unsorted], |_, _| {}).is_err());
    }
}
