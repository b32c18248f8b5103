//! Sorted runs of index key changes: their bytes, their merge, and the overlay through which a
//! read sees runs that are not yet in the `index` column family (`store::rocks::deferred`).
//!
//! A run is `{ u32le key length, key, u8 0 (delete) | 1 (put), [u32le value length, value] }`
//! repeated, keys ascending (a key twice: the later op wins). docs/FORMAT.md has the bytes;
//! this module alone encodes and decodes them.

use crate::codec::{len32, push_bytes, Reader};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::Arc;

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

    /// Encode as a run: sorted by key, a key's later change after its earlier ones.
    pub fn into_run(self) -> Vec<u8> {
        // The keys as slices beside their ops' indexes, sorted as plain pairs: the index
        // breaks ties in push order, so an unstable sort keeps a key's changes in order, and a
        // comparison is one slice comparison. (A stable sort of the ops through a closure that
        // looked up their keys took 15% more instructions.)
        let mut order: Vec<(&[u8], u32)> =
            self.ops.iter().enumerate().map(|(i, op)| (self.key(op), len32(i))).collect();
        order.sort_unstable();
        let mut run = Vec::with_capacity(self.bytes.len() + 9 * self.ops.len());
        for &(key, i) in &order {
            let (start, klen, vlen) = self.ops[i as usize];
            let value_start = start + klen as usize;
            push_op(&mut run, key, vlen.map(|n| &self.bytes[value_start..value_start + n as usize]));
        }
        run
    }
}

fn push_op(run: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) {
    push_bytes(run, key);
    match value {
        Some(v) => {
            run.push(1);
            push_bytes(run, v);
        }
        None => run.push(0),
    }
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
    // The run's next op takes the place of the op taken, in one sift down, rather than a pop
    // and a push (two sifts): most runs have more ops.
    while let Some(mut top) = heap.peek_mut() {
        let Reverse((k, i, v)) = *top;
        match cursors[i].next() {
            Some(op) => {
                let (nk, nv) = op?;
                if nk < k {
                    return Err(Error::corruption("a journal entry of index postings is out of order"));
                }
                *top = Reverse((nk, i, nv));
            }
            None => {
                PeekMut::pop(top);
            }
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

/// Runs merged into one: each key once, with the last op the runs gave it, and where each op
/// starts, so that a key is found by binary search.
pub(crate) struct Piece {
    /// The journal sequence numbers of the runs merged.
    pub seqs: Range<u64>,
    run: Vec<u8>,
    starts: Vec<u32>,
}

impl Piece {
    /// The runs `runs`, journaled as `seqs`, merged (oldest first).
    pub fn merge(seqs: Range<u64>, runs: &[&[u8]]) -> Result<Piece> {
        let mut run = Vec::with_capacity(runs.iter().map(|r| r.len()).sum());
        let mut starts = Vec::new();
        merge(runs, |k, v| {
            starts.push(len32(run.len()));
            push_op(&mut run, k, v);
        })?;
        Ok(Piece { seqs, run, starts })
    }

    /// The bytes held (what the merge policy of `Overlays` weighs).
    pub fn bytes(&self) -> usize {
        self.run.len()
    }

    /// The op at index `i` (already validated by the merge that built the piece).
    fn op(&self, i: usize) -> (&[u8], Option<&[u8]>) {
        RunOps::new(&self.run[self.starts[i] as usize..]).next().expect("a piece's ops are in range").expect("merged")
    }

    fn key(&self, i: usize) -> &[u8] {
        self.op(i).0
    }

    /// Is the key of the op that starts at byte `start` before `key`?
    fn key_before(&self, start: u32, key: &[u8]) -> bool {
        let r = &self.run[start as usize..];
        let n = u32::from_le_bytes(r[..4].try_into().expect("a key length")) as usize;
        &r[4..4 + n] < key
    }

    /// The index of the first op whose key is at or after `key`.
    fn lower_bound(&self, key: &[u8]) -> usize {
        self.starts.partition_point(|&s| self.key_before(s, key))
    }

    /// `lower_bound(key)` when every op before `from` is before `key`, found by galloping
    /// from `from`: a range's end is usually a few ops past its start, so this costs a few
    /// comparisons where a search of the whole piece costs its logarithm.
    fn lower_bound_from(&self, from: usize, key: &[u8]) -> usize {
        let n = self.starts.len();
        let mut bound = 1;
        // Ops before `from + bound / 2` are before `key`.
        while from + bound <= n && self.key_before(self.starts[from + bound - 1], key) {
            bound *= 2;
        }
        let (lo, hi) = (from + bound / 2, (from + bound).min(n));
        lo + self.starts[lo..hi].partition_point(|&s| self.key_before(s, key))
    }
}

/// What a read sees of the runs not yet in the index: pieces, oldest first (a later piece's op
/// on a key wins).
#[derive(Clone, Default)]
pub(crate) struct Overlay {
    pieces: Vec<Arc<Piece>>,
}

impl Overlay {
    pub fn new(pieces: Vec<Arc<Piece>>) -> Overlay {
        Overlay { pieces }
    }

    /// What the overlay makes of `key`: `Some(None)` deleted, `Some(Some(v))` put, `None`
    /// unchanged (the index's own value stands).
    pub fn get(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        self.pieces.iter().rev().find_map(|p| {
            let i = p.lower_bound(key);
            (i < p.starts.len() && p.key(i) == key).then(|| p.op(i).1)
        })
    }

    /// The overlay's ops on keys in `[start, upper)` (upper None: no bound), in key order,
    /// each key once.
    pub fn range<'o>(&'o self, start: &[u8], upper: Option<&[u8]>) -> OverlayRange<'o> {
        let cursors = self
            .pieces
            .iter()
            .map(|p| {
                let i = p.lower_bound(start);
                let end = upper.map_or(p.starts.len(), |u| p.lower_bound_from(i, u));
                (p.as_ref(), i, end)
            })
            .filter(|&(_, i, end)| i < end)
            .collect();
        let mut r = OverlayRange { cursors, current: None };
        r.find_current();
        r
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.iter().all(|p| p.starts.is_empty())
    }
}

/// A cursor over an overlay's key range: per piece with ops left in the range, its current op
/// and its end; and the op the range is at (computed once per step, since a store iterator
/// looks at it several times).
pub(crate) struct OverlayRange<'o> {
    cursors: Vec<(&'o Piece, usize, usize)>,
    current: Option<(&'o [u8], Option<&'o [u8]>)>,
}

impl<'o> OverlayRange<'o> {
    /// The smallest key among the pieces, and the op of the newest piece that has it.
    pub fn peek(&self) -> Option<(&'o [u8], Option<&'o [u8]>)> {
        self.current
    }

    fn find_current(&mut self) {
        let mut best: Option<(&'o [u8], Option<&'o [u8]>)> = None;
        for &(p, i, _) in &self.cursors {
            let (k, v) = p.op(i);
            // `<=`: among equal keys the later (newer) piece wins.
            if best.is_none_or(|(bk, _)| k <= bk) {
                best = Some((k, v));
            }
        }
        self.current = best;
    }

    /// Step past the current key (in every piece that has it).
    pub fn advance(&mut self) {
        let Some((k, _)) = self.current else { return };
        for (p, i, _) in &mut self.cursors {
            if p.key(*i) == k {
                *i += 1;
            }
        }
        self.cursors.retain(|&(_, i, end)| i < end);
        self.find_current();
    }
}

/// Overlays kept between reads: consecutive pieces of the runs held, built by readers and
/// merged as they grow (each piece at most half the size of the one before it, so a few
/// pieces cover many runs and every op is merged a logarithmic number of times). A read
/// merges only the runs no piece holds yet; the larger merges that keep the pieces few run
/// apart from reads (`compact`, on a thread of its own), so that no read waits for one.
#[derive(Default)]
pub(crate) struct Overlays {
    pieces: Vec<Arc<Piece>>,
}

impl Overlays {
    /// The overlay of the runs `seqs` (`runs[i]` journaled as `seqs.start + i`): the kept
    /// pieces that end within `seqs`, and the rest merged now; and whether the kept pieces
    /// are due a `compact`. Pieces wholly before `seqs` (their runs are in the index now)
    /// are dropped. A piece that starts before `seqs` is kept: its older ops are in the index
    /// already, with the same values (nothing else writes posting keys while runs are held).
    pub fn overlay(&mut self, seqs: Range<u64>, runs: &[Arc<Vec<u8>>]) -> Result<(Overlay, bool)> {
        debug_assert_eq!(runs.len() as u64, seqs.end - seqs.start);
        self.pieces.retain(|p| p.seqs.end > seqs.start);
        if self.pieces.first().is_some_and(|p| p.seqs.start > seqs.start) {
            // A gap before the kept pieces (they were built for a later journal): start over.
            self.pieces.clear();
        }
        let usable = self.pieces.iter().take_while(|p| p.seqs.end <= seqs.end).count();
        let from = self.pieces[..usable].last().map_or(seqs.start, |p| p.seqs.end);
        let mut pieces: Vec<Arc<Piece>> = self.pieces[..usable].to_vec();
        if from < seqs.end {
            let tail: Vec<&[u8]> = runs[(from - seqs.start) as usize..].iter().map(|r| r.as_slice()).collect();
            let piece = Arc::new(Piece::merge(from..seqs.end, &tail)?);
            if usable < self.pieces.len() {
                // Kept pieces reach past this read's snapshot (a newer read built them): this
                // read merges its own tail and keeps nothing.
                pieces.push(piece);
                return Ok((Overlay::new(pieces), false));
            }
            self.pieces.push(piece);
            pieces = self.pieces.clone();
        }
        Ok((Overlay::new(pieces), due(&self.pieces)))
    }

    /// Merge the kept pieces until none is due (the last at least half the size of the one
    /// before it: those two are merged), without holding `shared` while merging: reads go
    /// on with the pieces as they were, and the merged ones replace them if no read changed
    /// them meanwhile (else the next read that finds them due asks again).
    pub fn compact(shared: &Mutex<Overlays>) -> Result<()> {
        loop {
            let before = shared.lock().pieces.clone();
            if !due(&before) {
                return Ok(());
            }
            let mut merged = before.clone();
            while let [.., a, b] = merged.as_slice() {
                if b.bytes() * 2 < a.bytes() {
                    break;
                }
                let piece = Arc::new(Piece::merge(a.seqs.start..b.seqs.end, &[&a.run, &b.run])?);
                merged.truncate(merged.len() - 2);
                merged.push(piece);
            }
            let mut o = shared.lock();
            let unchanged =
                o.pieces.len() >= before.len() && o.pieces.iter().zip(&before).all(|(a, b)| Arc::ptr_eq(a, b));
            if !unchanged {
                return Ok(());
            }
            let newer = o.pieces.split_off(before.len());
            o.pieces = merged;
            o.pieces.extend(newer);
        }
    }

    pub fn clear(&mut self) {
        self.pieces.clear();
    }
}

/// Are the last two pieces due a merge (the last at least half the size of the one before)?
fn due(pieces: &[Arc<Piece>]) -> bool {
    matches!(pieces, [.., a, b] if b.bytes() * 2 >= a.bytes())
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
    fn a_long_run_keeps_each_keys_changes_in_the_order_they_came() {
        // Long enough that the sort partitions (short slices are sorted by insertion, which
        // keeps ties in order whatever the comparison says).
        let keys = ["k3", "k0", "k7", "k1", "k5", "k2", "k9", "k4", "k8", "k6"];
        let changes: Vec<Op> = (0..500).map(|i| put(keys[(i * 7 + i / 13) % keys.len()], &format!("{i:03}"))).collect();
        let mut expected = changes.clone();
        expected.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(ops(&encode_run(changes)), expected);
    }

    #[test]
    fn merge_keeps_the_last_op_of_each_key_in_key_order() {
        let older = encode_run(vec![put("a", "old"), put("b", "old"), put("d", "old")]);
        let newer = encode_run(vec![del("a"), put("c", "new"), put("d", "new"), put("d", "newest")]);
        let mut got = Vec::new();
        merge(&[&older, &newer], |k, v| got.push((k.to_vec(), v.map(<[u8]>::to_vec)))).unwrap();
        assert_eq!(got, vec![del("a"), put("b", "old"), put("c", "new"), put("d", "newest")]);
        let o = Overlay::new(vec![Arc::new(Piece::merge(0..2, &[&older, &newer]).unwrap())]);
        assert_eq!(o.get(b"a"), Some(None));
        assert_eq!(o.get(b"d"), Some(Some(b"newest".as_slice())));
        assert_eq!(o.get(b"e"), None);
        assert_eq!(o.get(b""), None);
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
        assert!(Piece::merge(0..1, &[&unsorted]).is_err());
    }

    /// A small deterministic generator (xorshift), so that the test needs no dependency.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Every overlay `Overlays` hands out, however its pieces were built and merged, reads
    /// like the plain merge of exactly the runs asked for: point reads and every range.
    #[test]
    fn overlays_read_like_a_merge_of_the_runs_asked_for() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let runs: Vec<Arc<Vec<u8>>> = (0..120)
            .map(|r| {
                let n = 1 + rng.below(12) as usize;
                let ops = (0..n)
                    .map(|_| {
                        let k = format!("k{:02}", rng.below(40));
                        if rng.below(4) == 0 {
                            (k.into_bytes(), None)
                        } else {
                            (k.into_bytes(), Some(format!("v{r}").into_bytes()))
                        }
                    })
                    .collect();
                Arc::new(encode_run(ops))
            })
            .collect();
        let kept = Mutex::new(Overlays::default());
        let (mut first, mut end) = (0u64, 0u64);
        for step in 0..300 {
            // The journal grows, the mover takes a prefix, and some reads come from older
            // snapshots than the last.
            match rng.below(6) {
                0 if first < end => first += 1 + rng.below(end - first),
                _ if end < runs.len() as u64 => end += 1 + rng.below(3).min(runs.len() as u64 - end - 1),
                _ => {}
            }
            let read_end = if rng.below(5) == 0 && end > first { first + rng.below(end - first + 1) } else { end };
            let seqs = first..read_end;
            let (got, due) = kept.lock().overlay(seqs.clone(), &runs[first as usize..read_end as usize]).unwrap();
            // Compaction runs apart from reads: sometimes before the next read, sometimes not.
            if due && rng.below(3) > 0 {
                Overlays::compact(&kept).unwrap();
            }
            let refs: Vec<&[u8]> = runs[first as usize..read_end as usize].iter().map(|r| r.as_slice()).collect();
            let mut want: Vec<Op> = Vec::new();
            merge(&refs, |k, v| want.push((k.to_vec(), v.map(<[u8]>::to_vec)))).unwrap();
            // Keys of runs before `first` may still show (with the values those runs left in
            // the index), so compare on the keys the runs asked for, and require nothing else
            // to differ from the runs before `first` merged in.
            let all: Vec<&[u8]> = runs[..read_end as usize].iter().map(|r| r.as_slice()).collect();
            let mut full: Vec<Op> = Vec::new();
            merge(&all, |k, v| full.push((k.to_vec(), v.map(<[u8]>::to_vec)))).unwrap();
            for (k, v) in &want {
                assert_eq!(got.get(k), Some(v.as_deref()), "step {step}, key {k:?}");
            }
            let mut r = got.range(b"", None);
            let mut seen = Vec::new();
            while let Some((k, v)) = r.peek() {
                seen.push((k.to_vec(), v.map(<[u8]>::to_vec)));
                r.advance();
            }
            assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "step {step}: keys out of order");
            for op in &seen {
                assert!(full.contains(op), "step {step}: {op:?} is not the runs' last op on its key");
            }
            for op in &want {
                assert!(seen.contains(op), "step {step}: {op:?} missing from the range");
            }
            for (lo, hi) in [("k10", "k20"), ("k", "k05"), ("k33", "k4"), ("k15", "k15"), ("k2", "k1")] {
                let (lo, hi) = (lo.as_bytes(), hi.as_bytes());
                let mut r = got.range(lo, Some(hi));
                let mut part = Vec::new();
                while let Some((k, v)) = r.peek() {
                    part.push((k.to_vec(), v.map(<[u8]>::to_vec)));
                    r.advance();
                }
                let want: Vec<Op> =
                    seen.iter().filter(|(k, _)| k.as_slice() >= lo && k.as_slice() < hi).cloned().collect();
                assert_eq!(part, want, "step {step}: range {lo:?}..{hi:?}");
            }
        }
    }
}
