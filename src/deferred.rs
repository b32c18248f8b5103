//! Index postings written behind their records.
//!
//! Most of a write's index keys are postings (one term's or char's entry for one episode):
//! about 30 of the 38 keys an ADK event writes. Inserted among the hundreds of thousands of
//! keys in RocksDB's memtable, each posting costs a skip-list search of its own; inserted in
//! long sorted runs, each continues where the one before ended. So a write does not put its
//! posting changes in the `index` column family. It encodes them as one sorted *run*, puts
//! the run in the `meta` column family as a journal entry, in the same atomic batch as its
//! records and its other index keys, and keeps the run in memory (`Deferred`). The runs held
//! are merged and written to the `index` column family, with their journal entries deleted,
//! in one batch, when they reach `LIMIT` bytes, before anything reads postings
//! (`Engine::read_snapshot`) and when the store closes.
//!
//! - A crash loses only the memory copy: the next read-write open writes the journal's runs
//!   to the index (`Engine::open`).
//! - A read-only open, or a view beside a writer, cannot write: it reads the journal into an
//!   overlay that its index reads consult (`Store::set_index_overlay`).
//!
//! A run is `{ u32le key length, key, u8 0 (delete) | 1 (put), [u32le value length, value] }`
//! repeated, keys ascending (a key twice: the later op wins). Its journal key is
//! `"journal/" ‖ u64be(sequence)`; docs/FORMAT.md has the bytes.

use crate::error::{Error, Result};
use crate::store::{Store, CF_INDEX, CF_META};
use rocksdb::WriteBatch;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

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
        for op in &ops {
            let (start, klen, vlen) = *op;
            let key_end = start + klen as usize;
            run.extend_from_slice(&klen.to_le_bytes());
            run.extend_from_slice(&self.bytes[start..key_end]);
            match vlen {
                Some(n) => {
                    run.push(1);
                    run.extend_from_slice(&n.to_le_bytes());
                    run.extend_from_slice(&self.bytes[key_end..key_end + n as usize]);
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
pub(crate) struct RunOps<'a> {
    rest: &'a [u8],
}

impl<'a> RunOps<'a> {
    pub fn new(run: &'a [u8]) -> RunOps<'a> {
        RunOps { rest: run }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(Error::corruption("a journal entry of index postings is truncated"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn len(&mut self) -> Result<usize> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize)
    }

    fn op(&mut self) -> Result<(&'a [u8], Option<&'a [u8]>)> {
        let n = self.len()?;
        let key = self.take(n)?;
        match self.take(1)?[0] {
            0 => Ok((key, None)),
            1 => {
                let n = self.len()?;
                Ok((key, Some(self.take(n)?)))
            }
            _ => Err(Error::corruption("a journal entry of index postings has an unknown op")),
        }
    }
}

impl<'a> Iterator for RunOps<'a> {
    type Item = Result<(&'a [u8], Option<&'a [u8]>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let op = self.op();
        if op.is_err() {
            self.rest = &[];
        }
        Some(op)
    }
}

/// Call `f` with the last op of each key of `runs` (later runs win), in key order: a k-way
/// merge, since each run is sorted.
pub(crate) fn merge<'a>(runs: &[&'a [u8]], mut f: impl FnMut(&'a [u8], Option<&'a [u8]>)) -> Result<()> {
    let mut cursors: Vec<RunOps<'a>> = runs.iter().map(|r| RunOps::new(r)).collect();
    // (key, run, op): equal keys come out oldest run first, and within a run in order.
    let mut heap = BinaryHeap::with_capacity(runs.len());
    let mut order = 0u64;
    for (i, c) in cursors.iter_mut().enumerate() {
        if let Some(op) = c.next() {
            let (k, v) = op?;
            heap.push(Reverse((k, i, order, v)));
            order += 1;
        }
    }
    let mut last: Option<(&'a [u8], Option<&'a [u8]>)> = None;
    while let Some(Reverse((k, i, _, v))) = heap.pop() {
        if let Some(op) = cursors[i].next() {
            let (nk, nv) = op?;
            if nk < k {
                return Err(Error::corruption("a journal entry of index postings is out of order"));
            }
            heap.push(Reverse((nk, i, order, nv)));
            order += 1;
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
pub(crate) fn stage_runs(
    store: &Store,
    runs: &[&[u8]],
    seqs: std::ops::Range<u64>,
    batch: &mut WriteBatch,
) -> Result<()> {
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

/// The runs a writer holds: journaled, not yet in the index column family.
#[derive(Default)]
pub(crate) struct Deferred {
    runs: Vec<Vec<u8>>,
    bytes: usize,
    /// The journal entries of `runs`: `first_seq..next_seq`.
    first_seq: u64,
    next_seq: u64,
}

impl Deferred {
    /// Nothing held; the next journal entry is `next_seq`.
    pub fn starting_at(next_seq: u64) -> Deferred {
        Deferred { first_seq: next_seq, next_seq, ..Deferred::default() }
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The journal key the next run is written under.
    pub fn next_key(&self) -> Vec<u8> {
        journal_key(self.next_seq)
    }

    /// Stage writing every run held, then `extra` (not journaled), to the index, and
    /// deleting the held runs' journal entries.
    pub fn stage_all(&self, store: &Store, extra: Option<&[u8]>, batch: &mut WriteBatch) -> Result<()> {
        let mut runs: Vec<&[u8]> = self.runs.iter().map(Vec::as_slice).collect();
        runs.extend(extra);
        stage_runs(store, &runs, self.first_seq..self.next_seq, batch)
    }

    /// `run` was committed under `next_key`.
    pub fn journaled(&mut self, run: Vec<u8>) {
        self.bytes += run.len();
        self.runs.push(run);
        self.next_seq += 1;
    }

    /// `stage_all`'s batch was committed.
    pub fn written(&mut self) {
        self.runs.clear();
        self.bytes = 0;
        self.first_seq = self.next_seq;
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
