//! The BM25 inverted index of a namespace, persisted in the `index` column family and changed
//! in the same write batch as the records (`crate::derived`).
//!
//! Keys after `namespace prefix + tag` (docs/FORMAT.md has the bytes):
//! - `DOC uuid` -> what removing the document needs: its length, expiry, type, tags and
//!   `(term, tf)` list;
//! - `POSTING u32be(len) term uuid` -> tf, document length, expiry: a term's postings are one
//!   key range, in UUID order;
//! - `STATS kind ...` -> documents and total length, for the whole namespace, per type, per
//!   tag and per (type, tag), so that the corpus statistics of a filtered search are exact
//!   without a scan;
//! - `EXPIRING u64be(expiry) uuid` -> length, type, tags of each expiring document, in expiry
//!   order: a search subtracts the expired ones from the counters, and writers purge them.
//!
//! A search reads the counters, the expired documents and the postings of its own terms from
//! one snapshot: its cost grows with those postings, not with the namespace.

use super::bm25;
use super::tokenizer::for_each_token;
use super::Filter;
use crate::codec::{push_be_bytes, push_bytes, push_expiry, Reader};
use crate::derived::{DerivedIndex, IndexWrite, KeyOps, Placement};
use crate::error::{Error, Result};
use crate::keys::{self, index_tag};
use crate::record::Episode;
use crate::store::Batch;
use crate::store::{Cf, Extent, Snapshot, Store, StoreIter};
use std::collections::{BTreeMap, HashMap, HashSet};
use uuid::Uuid;

const DOC: u8 = index_tag::BM25_FIRST;
const POSTING: u8 = index_tag::BM25_FIRST + 1;
const STATS: u8 = index_tag::BM25_FIRST + 2;
const EXPIRING: u8 = index_tag::BM25_FIRST + 3;

/// Kinds of `STATS` keys.
const STATS_ALL: u8 = 0;
const STATS_TYPE: u8 = 1;
const STATS_TAG: u8 = 2;
const STATS_TYPE_TAG: u8 = 3;

/// Expired documents a write purges from the index, at most, besides its own.
const PURGE_PER_WRITE: usize = 256;

/// What corruption messages call a damaged value.
const VALUE: &str = "a keyword index value";

/// What the index holds about one document.
#[derive(Debug, Clone, PartialEq)]
struct Doc {
    dl: u64,
    expires_at_ms: Option<i64>,
    episode_type: String,
    /// Distinct tags, sorted.
    tags: Vec<String>,
    /// Distinct terms with their frequencies, sorted by term.
    terms: Vec<(String, u32)>,
}

impl Doc {
    fn of(e: &Episode) -> Doc {
        let mut tf: BTreeMap<String, u32> = BTreeMap::new();
        let mut dl = 0u64;
        let mut buf = String::new();
        for text in [&e.primary, &e.secondary, &e.context] {
            for_each_token(
                text,
                &mut buf,
                |_| true,
                |t| {
                    dl += 1;
                    let t = t.expect("every token is wanted");
                    match tf.get_mut(t) {
                        Some(n) => *n += 1,
                        None => {
                            tf.insert(t.to_string(), 1);
                        }
                    }
                },
            );
        }
        let mut tags = e.tags.clone();
        tags.sort_unstable();
        tags.dedup();
        Doc {
            dl,
            expires_at_ms: e.expires_at_ms,
            episode_type: e.episode_type.clone(),
            tags,
            terms: tf.into_iter().collect(),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.terms.len() * 12);
        out.extend_from_slice(&self.dl.to_le_bytes());
        push_expiry(&mut out, self.expires_at_ms);
        self.encode_filter_fields(&mut out);
        out.extend_from_slice(&(self.terms.len() as u32).to_le_bytes());
        for (t, f) in &self.terms {
            push_bytes(&mut out, t.as_bytes());
            out.extend_from_slice(&f.to_le_bytes());
        }
        out
    }

    fn encode_filter_fields(&self, out: &mut Vec<u8>) {
        push_bytes(out, self.episode_type.as_bytes());
        out.extend_from_slice(&(self.tags.len() as u32).to_le_bytes());
        for t in &self.tags {
            push_bytes(out, t.as_bytes());
        }
    }

    fn decode(v: &[u8]) -> Result<Doc> {
        let mut r = Reader::new(v, VALUE);
        let dl = r.u64()?;
        let expires_at_ms = r.expiry()?;
        let (episode_type, tags) = decode_filter_fields(&mut r)?;
        let n = r.u32()? as usize;
        let mut terms = Vec::with_capacity(n.min(v.len()));
        for _ in 0..n {
            terms.push((r.str()?.to_string(), r.u32()?));
        }
        r.done()?;
        Ok(Doc { dl, expires_at_ms, episode_type, tags, terms })
    }

    /// The `STATS` keys this document counts in.
    fn stats_suffixes(&self) -> Vec<Vec<u8>> {
        stats_suffixes(&self.episode_type, &self.tags)
    }

    fn accepted_by(&self, f: &Filter<'_>) -> bool {
        f.episode_type.is_none_or(|t| self.episode_type == t) && f.tag.is_none_or(|t| self.tags.iter().any(|x| x == t))
    }
}

fn decode_filter_fields(r: &mut Reader<'_>) -> Result<(String, Vec<String>)> {
    let episode_type = r.str()?.to_string();
    let n = r.u32()? as usize;
    let mut tags = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        tags.push(r.str()?.to_string());
    }
    Ok((episode_type, tags))
}

/// The counters a document of `episode_type` with `tags` is counted in.
fn stats_suffixes(episode_type: &str, tags: &[String]) -> Vec<Vec<u8>> {
    let mut out = vec![vec![STATS_ALL], stats_type(episode_type)];
    for t in tags {
        out.push(stats_tag(t));
        out.push(stats_type_tag(episode_type, t));
    }
    out
}

/// The keys of the counters that a write of episodes of `episode_type` with `tags` to the
/// namespace of `prefix` reads (to read them ahead: `store::View::prefetch`).
pub(crate) fn stats_keys(prefix: &[u8], episode_type: &str, tags: &[String]) -> Vec<(Cf, Vec<u8>)> {
    stats_suffixes(episode_type, tags).iter().map(|s| (Cf::Index, keys::index_key(prefix, STATS, s))).collect()
}

fn stats_type(t: &str) -> Vec<u8> {
    let mut k = vec![STATS_TYPE];
    push_be_bytes(&mut k, t.as_bytes());
    k
}

fn stats_tag(t: &str) -> Vec<u8> {
    let mut k = vec![STATS_TAG];
    push_be_bytes(&mut k, t.as_bytes());
    k
}

fn stats_type_tag(ty: &str, tag: &str) -> Vec<u8> {
    let mut k = vec![STATS_TYPE_TAG];
    push_be_bytes(&mut k, ty.as_bytes());
    push_be_bytes(&mut k, tag.as_bytes());
    k
}

/// The `STATS` key of the corpus a filter selects.
fn stats_for(f: &Filter<'_>) -> Vec<u8> {
    match (f.episode_type, f.tag) {
        (None, None) => vec![STATS_ALL],
        (Some(t), None) => stats_type(t),
        (None, Some(g)) => stats_tag(g),
        (Some(t), Some(g)) => stats_type_tag(t, g),
    }
}

/// `prefix POSTING u32be(len) term`: the key prefix of a term's postings.
fn term_prefix_into(k: &mut Vec<u8>, prefix: &[u8], term: &str) {
    k.extend_from_slice(prefix);
    k.push(POSTING);
    push_be_bytes(k, term.as_bytes());
}

fn term_prefix(prefix: &[u8], term: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 5 + term.len());
    term_prefix_into(&mut k, prefix, term);
    k
}

/// One document's posting of a term: its term prefix, then the UUID.
fn posting_key_into(k: &mut Vec<u8>, prefix: &[u8], term: &str, id: &Uuid) {
    term_prefix_into(k, prefix, term);
    k.extend_from_slice(id.as_bytes());
}

fn expiry_sortable(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

fn expiring_key(prefix: &[u8], t: i64, id: &Uuid) -> Vec<u8> {
    let mut rest = expiry_sortable(t).to_vec();
    rest.extend_from_slice(id.as_bytes());
    keys::index_key(prefix, EXPIRING, &rest)
}

fn decode_counter(v: &[u8]) -> Result<(u64, u64)> {
    let mut r = Reader::new(v, VALUE);
    let c = (r.u64()?, r.u64()?);
    r.done()?;
    Ok(c)
}

/// The changes of one write batch to one namespace's keyword index.
struct Staging<'a> {
    ctx: &'a IndexWrite<'a>,
    /// Deltas of the `STATS` counters (documents, total length).
    counters: HashMap<Vec<u8>, (i64, i64)>,
    ops: KeyOps,
}

impl Staging<'_> {
    /// The indexed documents of `ids`, in order: one batched read.
    fn docs(&self, ids: &[Uuid]) -> Result<Vec<Option<Doc>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Vec<u8>> = ids.iter().map(|id| keys::index_key(self.ctx.prefix, DOC, id.as_bytes())).collect();
        let found = self.ctx.store.multi_get_cf(self.ctx.snap, Cf::Index, &keys)?;
        found.into_iter().map(|v| v.map(|v| Doc::decode(&v)).transpose()).collect()
    }

    fn count(&mut self, d: &Doc, sign: i64) {
        for s in d.stats_suffixes() {
            let c = self.counters.entry(s).or_default();
            c.0 += sign;
            c.1 += sign * d.dl as i64;
        }
    }

    fn remove(&mut self, id: &Uuid, d: &Doc) {
        let p = self.ctx.prefix;
        self.ops.delete(keys::index_key(p, DOC, id.as_bytes()));
        for (t, _) in &d.terms {
            self.ops.delete_posting(|k| posting_key_into(k, p, t, id));
        }
        if let Some(t) = d.expires_at_ms {
            self.ops.delete(expiring_key(p, t, id));
        }
        self.count(d, -1);
    }

    fn add(&mut self, id: &Uuid, d: &Doc) {
        let p = self.ctx.prefix;
        self.ops.put(keys::index_key(p, DOC, id.as_bytes()), d.encode());
        for (t, f) in &d.terms {
            let mut posting = [0u8; 20];
            posting[..4].copy_from_slice(&f.to_le_bytes());
            posting[4..12].copy_from_slice(&d.dl.to_le_bytes());
            let len = match d.expires_at_ms {
                Some(e) => {
                    posting[12..].copy_from_slice(&e.to_le_bytes());
                    20
                }
                None => 12,
            };
            self.ops.put_posting(|k| posting_key_into(k, p, t, id), &posting[..len]);
        }
        if let Some(t) = d.expires_at_ms {
            let mut v = d.dl.to_le_bytes().to_vec();
            d.encode_filter_fields(&mut v);
            self.ops.put(expiring_key(p, t, id), v);
        }
        self.count(d, 1);
    }

    /// Add the counters' new values and every key change to `batch`.
    fn finish(mut self, batch: &mut Batch) -> Result<()> {
        let counters: Vec<(Vec<u8>, (i64, i64))> =
            self.counters.drain().filter(|(_, (docs, len))| *docs != 0 || *len != 0).collect();
        let keys: Vec<Vec<u8>> = counters.iter().map(|(s, _)| keys::index_key(self.ctx.prefix, STATS, s)).collect();
        let stored = self.ctx.store.multi_get_cf(self.ctx.snap, Cf::Index, &keys)?;
        for (((_, (docs, len)), key), stored) in counters.iter().zip(keys).zip(stored) {
            let (d0, l0) = match stored {
                Some(v) => decode_counter(&v)?,
                None => (0, 0),
            };
            let d = d0 as i64 + docs;
            let l = l0 as i64 + len;
            if d < 0 || l < 0 {
                return Err(Error::corruption("keyword index counters would become negative"));
            }
            if d == 0 {
                self.ops.delete(key);
            } else {
                let mut v = (d as u64).to_le_bytes().to_vec();
                v.extend_from_slice(&(l as u64).to_le_bytes());
                self.ops.put(key, v);
            }
        }
        self.ops.apply(batch);
        Ok(())
    }
}

/// Stage the keyword index changes of `staged` into `batch`: each episode's old document is
/// removed and its new revision (unless deleted) added; up to `PURGE_PER_WRITE` other
/// expired documents of the namespace are purged.
pub(crate) fn stage(ctx: &IndexWrite<'_>, staged: &[&Episode], batch: &mut Batch) -> Result<()> {
    let mut s = Staging { ctx, counters: HashMap::new(), ops: KeyOps::default() };
    let mine: HashSet<Uuid> = staged.iter().map(|e| e.id).collect();
    let purged: Vec<Uuid> =
        expired(ctx.store, ctx.snap, ctx.prefix, ctx.now, PURGE_PER_WRITE)?.into_iter().map(|(id, _)| id).collect();
    let purged: Vec<Uuid> = purged.into_iter().filter(|id| !mine.contains(id)).collect();
    for (id, d) in purged.iter().zip(s.docs(&purged)?) {
        if let Some(d) = d {
            s.remove(id, &d);
        }
    }
    // A first revision has no earlier document (ids are never reused; an upgrade starts
    // from an empty index): the common case needs no lookup.
    let rewritten: Vec<Uuid> = staged.iter().filter(|e| e.revision > 1).map(|e| e.id).collect();
    let mut old: HashMap<Uuid, Doc> = HashMap::new();
    for (id, d) in rewritten.iter().zip(s.docs(&rewritten)?) {
        if let Some(d) = d {
            old.insert(*id, d);
        }
    }
    for e in staged {
        if let Some(d) = old.remove(&e.id) {
            s.remove(&e.id, &d);
        }
        if !e.deleted {
            s.add(&e.id, &Doc::of(e));
        }
    }
    s.finish(batch)
}

/// Up to `limit` documents that expired at or before `now`: `(id, EXPIRING value)`.
fn expired(store: &Store, snap: &Snapshot<'_>, prefix: &[u8], now: i64, limit: usize) -> Result<Vec<(Uuid, Vec<u8>)>> {
    let from = keys::index_key(prefix, EXPIRING, &[]);
    expired_in(store.prefix_iter(snap, Cf::Index, &from, &from), from.len(), now, limit)
}

/// `expired`, read from `it`, a cursor at the start of the `EXPIRING` keys (`skip`: their
/// prefix length).
fn expired_in(mut it: StoreIter<'_>, skip: usize, now: i64, limit: usize) -> Result<Vec<(Uuid, Vec<u8>)>> {
    let bound = expiry_sortable(now);
    let mut out = Vec::new();
    while let Some((k, v)) = it.current() {
        let k = &k[skip..];
        if k.len() != 24 {
            return Err(Error::corruption("a keyword index expiry key is malformed"));
        }
        if out.len() == limit || k[..8] > bound[..] {
            return Ok(out);
        }
        out.push((Uuid::from_bytes(k[8..].try_into().expect("16 bytes")), v.to_vec()));
        it.next();
    }
    it.status()?;
    Ok(out)
}

/// The BM25 ranking of `terms` over the namespace's visible documents that pass `filter`,
/// at `now`: `(score, id)`, score descending then UUID, at most `limit`. Equal, hit for hit
/// and bit for bit, to the scan it replaces (`tests/keyword_index.rs` checks it).
pub(crate) fn rank(
    store: &Store,
    snap: &Snapshot<'_>,
    prefix: &[u8],
    terms: &[String],
    filter: Filter<'_>,
    now: i64,
    limit: usize,
) -> Result<Vec<(f64, Uuid)>> {
    // The filter's counter, the expiring documents and every term's postings: one batched
    // read where the store is remote (no counter key is a prefix of another, so the counter's
    // "list" is the key alone).
    let counter = keys::index_key(prefix, STATS, &stats_for(&filter));
    let expiring = keys::index_key(prefix, EXPIRING, &[]);
    let term_prefixes: Vec<Vec<u8>> = terms.iter().map(|t| term_prefix(prefix, t)).collect();
    let mut lists = store
        .prefix_iters(
            snap,
            Cf::Index,
            &[&[counter.clone(), expiring.clone()][..], &term_prefixes].concat(),
            Extent::Whole,
        )
        .into_iter();
    let counter_it = lists.next().expect("one cursor per prefix");
    let expiring_it = lists.next().expect("one cursor per prefix");
    // Corpus statistics: the counters, less the expired documents still indexed.
    let (mut n, mut total) = match counter_it.current() {
        Some((k, v)) if k == counter.as_slice() => decode_counter(v)?,
        Some(_) => return Err(Error::corruption("a keyword index counter key is malformed")),
        None => {
            counter_it.status()?;
            (0, 0)
        }
    };
    for (_, v) in expired_in(expiring_it, expiring.len(), now, usize::MAX)? {
        let mut r = Reader::new(&v, VALUE);
        let dl = r.u64()?;
        let (episode_type, tags) = decode_filter_fields(&mut r)?;
        r.done()?;
        let d = Doc { dl, expires_at_ms: None, episode_type, tags, terms: Vec::new() };
        if d.accepted_by(&filter) {
            n = n.checked_sub(1).ok_or_else(|| Error::corruption("keyword index counters are inconsistent"))?;
            total = total.saturating_sub(dl);
        }
    }
    // Each list is in UUID order, so the lists are merged: a document's postings meet at the
    // front of the lists together, and no map from document to slot is needed.
    let filtered = filter.episode_type.is_some() || filter.tag.is_some();
    let nterms = terms.len();
    let mut heads: Vec<ListHead<'_>> =
        term_prefixes.iter().zip(lists).map(|(tp, it)| ListHead::new(it, tp.len(), now)).collect::<Result<_>>()?;
    let mut matched: Vec<(Uuid, u64)> = Vec::new();
    let mut tf: Vec<u32> = Vec::new();
    let mut df = vec![0u64; nterms];
    let mut row = vec![0u32; nterms];
    while let Some((id, dl)) = heads.iter().filter_map(|h| h.at).min_by_key(|&(id, _)| id) {
        let ok = !filtered || {
            let key = keys::index_key(prefix, DOC, id.as_bytes());
            let d = store
                .get_cf(snap, Cf::Index, &key)?
                .ok_or_else(|| Error::corruption("a keyword posting has no document"))?;
            Doc::decode(&d)?.accepted_by(&filter)
        };
        for ((h, f), d) in heads.iter_mut().zip(row.iter_mut()).zip(df.iter_mut()) {
            *f = 0;
            if h.at.is_some_and(|(at, _)| at == id) {
                *f = h.tf;
                *d += u64::from(ok);
                h.advance(now)?;
            }
        }
        if ok {
            matched.push((id, dl));
            tf.extend_from_slice(&row);
        }
    }
    let idfs: Vec<f64> = df.iter().map(|&d| bm25::idf(n, d)).collect();
    let avgdl = bm25::Corpus { records: n, total_len: total }.avgdl();
    let scored: Vec<(f64, Uuid)> = matched
        .iter()
        .enumerate()
        .map(|(i, &(id, dl))| (bm25::score(&idfs, &tf[i * nterms..(i + 1) * nterms], dl, avgdl), id))
        .collect();
    Ok(bm25::top(scored, limit))
}

/// One term's list in a merge (`rank`): its first unexpired posting not yet taken.
struct ListHead<'s> {
    it: StoreIter<'s>,
    /// The length of the list's prefix (a posting key's UUID follows it).
    skip: usize,
    /// The posting's document and its length; `None` once the list is done.
    at: Option<(Uuid, u64)>,
    tf: u32,
}

impl<'s> ListHead<'s> {
    fn new(it: StoreIter<'s>, skip: usize, now: i64) -> Result<ListHead<'s>> {
        let mut h = ListHead { it, skip, at: None, tf: 0 };
        h.read(now)?;
        Ok(h)
    }

    /// Step past the posting at the head.
    fn advance(&mut self, now: i64) -> Result<()> {
        self.it.next();
        self.read(now)
    }

    /// The first unexpired posting from the cursor's position on.
    fn read(&mut self, now: i64) -> Result<()> {
        let before = self.at.take().map(|(id, _)| id);
        while let Some((k, v)) = self.it.current() {
            let id = k
                .get(self.skip..)
                .and_then(|b| <[u8; 16]>::try_from(b).ok())
                .map(Uuid::from_bytes)
                .ok_or_else(|| Error::corruption("a keyword posting key is malformed"))?;
            // The merge relies on the order; a list out of it is damage, not a ranking.
            if before.is_some_and(|b| b >= id) {
                return Err(Error::corruption("a keyword posting list is out of order"));
            }
            let (f, dl, expiry) = match v.len() {
                12 | 20 => (
                    u32::from_le_bytes(v[..4].try_into().expect("4 bytes")),
                    u64::from_le_bytes(v[4..12].try_into().expect("8 bytes")),
                    (v.len() == 20).then(|| i64::from_le_bytes(v[12..].try_into().expect("8 bytes"))),
                ),
                _ => return Err(Error::corruption("a keyword posting is malformed")),
            };
            if expiry.is_some_and(|e| now >= e) {
                self.it.next();
                continue;
            }
            self.at = Some((id, dl));
            self.tf = f;
            return Ok(());
        }
        self.it.status()
    }
}

/// The BM25 index among the derived indexes: nothing is held in memory.
pub(crate) struct Bm25Index;

impl DerivedIndex for Bm25Index {
    type Staged<'a> = ();

    fn stage(
        &self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        _placement: &Placement,
        batch: &mut Batch,
    ) -> Result<()> {
        stage(ctx, staged, batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Status;
    use crate::store::Cursor;

    /// A list's rows in memory, as a cursor gives them.
    struct Rows(Vec<(Vec<u8>, Vec<u8>)>, usize);

    impl Cursor for Rows {
        fn seek(&mut self, target: &[u8]) {
            self.1 = self.0.partition_point(|(k, _)| k.as_slice() < target);
        }
        fn next(&mut self) {
            self.1 += 1;
        }
        fn current(&self) -> Option<(&[u8], &[u8])> {
            self.0.get(self.1).map(|(k, v)| (k.as_slice(), v.as_slice()))
        }
        fn status(&self) -> Result<()> {
            Ok(())
        }
    }

    fn posting(id: u128, tf: u32, dl: u64, expiry: Option<i64>) -> (Vec<u8>, Vec<u8>) {
        let mut v = [tf.to_le_bytes().as_slice(), &dl.to_le_bytes()].concat();
        if let Some(e) = expiry {
            v.extend(e.to_le_bytes());
        }
        ([b"list".as_slice(), Uuid::from_u128(id).as_bytes()].concat(), v)
    }

    fn heads(rows: Vec<(Vec<u8>, Vec<u8>)>, now: i64) -> Result<Vec<(Uuid, u64, u32)>> {
        let mut h = ListHead::new(StoreIter::of(Box::new(Rows(rows, 0))), 4, now)?;
        let mut out = Vec::new();
        while let Some((id, dl)) = h.at {
            out.push((id, dl, h.tf));
            h.advance(now)?;
        }
        Ok(out)
    }

    #[test]
    fn a_list_head_gives_the_unexpired_postings_in_order() {
        let rows = vec![posting(1, 2, 10, None), posting(2, 1, 5, Some(100)), posting(3, 4, 7, Some(300))];
        let id = Uuid::from_u128;
        assert_eq!(heads(rows.clone(), 50).unwrap(), [(id(1), 10, 2), (id(2), 5, 1), (id(3), 7, 4)]);
        // At its expiry a posting is gone, as the scan has it.
        assert_eq!(heads(rows, 100).unwrap(), [(id(1), 10, 2), (id(3), 7, 4)]);
    }

    #[test]
    fn a_list_out_of_order_or_malformed_is_corruption() {
        let unordered = vec![posting(2, 1, 5, None), posting(1, 1, 5, None)];
        let e = heads(unordered, 0).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (Status::Corruption, "a keyword posting list is out of order"));
        let twice = vec![posting(1, 1, 5, None), posting(1, 1, 5, None)];
        assert_eq!(heads(twice, 0).unwrap_err().status, Status::Corruption);
        let mut short = posting(1, 1, 5, None);
        short.1.pop();
        assert_eq!(heads(vec![short], 0).unwrap_err().status, Status::Corruption);
    }
}
