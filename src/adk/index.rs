//! The persisted search index of `mnem_search`, in the `index` column family, changed in the
//! same write batch as the records (`crate::derived`), read from the searcher's snapshot.
//!
//! ADK's reference re-tokenizes every event at every query. Here each event is tokenized
//! once, when written, and a query reads only the postings of its own tokens
//! (`super::search`). Nothing is loaded at open and nothing stays in memory per namespace:
//! RocksDB's block cache is the cache.
//!
//! An entry's *place* is its position in ADK's tie order: `u32be(bucket) u64be(seq)` for an
//! event of a session bucket, `u32be(MEMORY_BUCKET) uuid` for a `memory` episode (after every
//! bucket, in UUID order). Byte order of places is the tie order. Keys after
//! `namespace prefix + tag` (docs/FORMAT.md has the bytes):
//! - `ENTRY place` -> uuid, expiry, memory id: a bucket's entries are one key range, in order;
//! - `DOC uuid` -> place, memory id and the entry's distinct words and non-ASCII chars, so
//!   that a re-write or delete removes its keys without re-tokenizing the old content;
//! - `WORD u32be(len) word place` -> expiry: the postings of a searchable word;
//! - `CHAR u32be(char) place` -> expiry: the searchable entries holding a non-ASCII char;
//! - `PAIR u32be(char) u32be(char) place` -> expiry: the searchable entries whose haystack
//!   holds two chars side by side, one of them non-ASCII, both chars a token may hold (a
//!   token of two or more chars is found by its pairs: far fewer places than by its chars);
//! - `HAYSTACK place` -> the lowercased NFC text of a searchable entry with a non-ASCII char
//!   (non-ASCII query tokens match substrings);
//! - `MEMID u32be(len) memory_id place` -> uuid: what `delete_memory` removes.
//!
//! Only searchable entries (at least one searchable word, as ADK requires) have postings.

use super::{memory_id, tokenizer, MEMORY_TYPE};
use crate::codec::{push_bytes, push_expiry, Reader};
use crate::derived::{DerivedIndex, IndexWrite, KeyOps};
use crate::error::{Error, Result};
use crate::keys::index_tag;
use crate::record::Episode;
use crate::store::Batch;
use crate::store::{Cf, Snapshot, Store};
use uuid::Uuid;

pub(crate) const ENTRY: u8 = index_tag::ADK_FIRST;
pub(crate) const DOC: u8 = index_tag::ADK_FIRST + 1;
pub(crate) const WORD: u8 = index_tag::ADK_FIRST + 2;
pub(crate) const CHAR: u8 = index_tag::ADK_FIRST + 3;
pub(crate) const HAYSTACK: u8 = index_tag::ADK_FIRST + 4;
pub(crate) const MEMID: u8 = index_tag::ADK_FIRST + 5;
pub(crate) const PAIR: u8 = index_tag::ADK_FIRST + 6;

/// The first format whose ADK index has `PAIR` postings; an older store's index gains them
/// at its first read-write open (`add_pairs`).
pub const PAIRS_FORMAT: u32 = 4;

/// ADK returns at most this many memories (`_MAX_SEARCH_RESULTS`).
pub const MAX_RESULTS: usize = 10;

/// Bucket position of `memory` episodes: after every session bucket.
pub const MEMORY_BUCKET: u32 = u32::MAX;

pub(crate) use crate::derived::Placement;

/// A position in ADK's tie order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Session { bucket: u32, seq: u64 },
    Memory(Uuid),
}

impl Place {
    pub fn push_to(&self, out: &mut Vec<u8>) {
        match self {
            Place::Session { bucket, seq } => {
                out.extend_from_slice(&bucket.to_be_bytes());
                out.extend_from_slice(&seq.to_be_bytes());
            }
            Place::Memory(id) => {
                out.extend_from_slice(&MEMORY_BUCKET.to_be_bytes());
                out.extend_from_slice(id.as_bytes());
            }
        }
    }

    pub fn decode(b: &[u8]) -> Result<Place> {
        let bad = || Error::corruption("an ADK index place is malformed");
        let bucket = u32::from_be_bytes(b.get(..4).ok_or_else(bad)?.try_into().expect("4 bytes"));
        match (bucket, b.len()) {
            (MEMORY_BUCKET, 20) => Ok(Place::Memory(Uuid::from_bytes(b[4..].try_into().expect("16 bytes")))),
            (MEMORY_BUCKET, _) => Err(bad()),
            (_, 12) => Ok(Place::Session { bucket, seq: u64::from_be_bytes(b[4..].try_into().expect("8 bytes")) }),
            _ => Err(bad()),
        }
    }
}

fn key(prefix: &[u8], tag: u8, parts: &[&[u8]], place: Option<&Place>) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 64);
    key_into(&mut k, prefix, tag, parts, place);
    k
}

fn key_into(k: &mut Vec<u8>, prefix: &[u8], tag: u8, parts: &[&[u8]], place: Option<&Place>) {
    k.extend_from_slice(prefix);
    k.push(tag);
    for p in parts {
        k.extend_from_slice(p);
    }
    if let Some(p) = place {
        p.push_to(k);
    }
}

fn len_be(s: &str) -> [u8; 4] {
    u32::try_from(s.len()).expect("record fields are below 4 GiB").to_be_bytes()
}

/// `prefix WORD u32be(len) word`: the key prefix of a word's postings.
pub(crate) fn word_prefix(prefix: &[u8], word: &str) -> Vec<u8> {
    key(prefix, WORD, &[&len_be(word), word.as_bytes()], None)
}

/// `prefix CHAR u32be(char)`: the key prefix of a char's postings.
pub(crate) fn char_prefix(prefix: &[u8], c: char) -> Vec<u8> {
    key(prefix, CHAR, &[&(c as u32).to_be_bytes()], None)
}

/// `prefix PAIR u32be(a) u32be(b)`: the key prefix of a char pair's postings.
pub(crate) fn pair_prefix(prefix: &[u8], (a, b): (char, char)) -> Vec<u8> {
    key(prefix, PAIR, &[&pair_bytes((a, b))], None)
}

fn pair_bytes((a, b): (char, char)) -> [u8; 8] {
    let mut out = [0; 8];
    out[..4].copy_from_slice(&(a as u32).to_be_bytes());
    out[4..].copy_from_slice(&(b as u32).to_be_bytes());
    out
}

/// The distinct pairs of adjacent chars of `text` that a query token's pairs may be: both
/// chars may be in a token, one at least is not ASCII (ASCII tokens match whole words only).
/// Sorted. Of a query token, its pairs; of a haystack, the pairs it holds.
pub(crate) fn char_pairs(text: &str) -> Vec<(char, char)> {
    let mut out: Vec<(char, char)> = text
        .chars()
        .zip(text.chars().skip(1))
        .filter(|&(a, b)| (!a.is_ascii() || !b.is_ascii()) && may_be_in_a_token(a) && may_be_in_a_token(b))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

pub(crate) fn haystack_key(prefix: &[u8], place: &[u8]) -> Vec<u8> {
    key(prefix, HAYSTACK, &[place], None)
}

/// A posting's value: empty, or the expiry (i64le ms).
fn posting_value(expires_at_ms: Option<i64>) -> Vec<u8> {
    expires_at_ms.map_or_else(Vec::new, |t| t.to_le_bytes().to_vec())
}

/// Has the entry of a posting value expired at `now`?
pub(crate) fn posting_expired(v: &[u8], now: i64) -> Result<bool> {
    match v.len() {
        0 => Ok(false),
        8 => Ok(now >= i64::from_le_bytes(v.try_into().expect("8 bytes"))),
        _ => Err(Error::corruption("an ADK index posting is malformed")),
    }
}

/// What corruption messages call a damaged value.
const VALUE: &str = "an ADK index value";

/// One indexed episode, as its `ENTRY` key says.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub uuid: Uuid,
    pub place: Place,
    /// The id `mnem_search` reports and `mnem_delete_memory` matches.
    pub memory_id: String,
    pub expires_at_ms: Option<i64>,
}

impl Entry {
    pub fn visible(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_none_or(|e| now_ms < e)
    }

    /// `ENTRY` value: uuid(16), expiry flag (0, or 1 + i64le), memory id (the rest).
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(25 + self.memory_id.len());
        v.extend_from_slice(self.uuid.as_bytes());
        push_expiry(&mut v, self.expires_at_ms);
        v.extend_from_slice(self.memory_id.as_bytes());
        v
    }

    pub fn decode(place: Place, v: &[u8]) -> Result<Entry> {
        let mut r = Reader::new(v, VALUE);
        let uuid = Uuid::from_bytes(r.take(16)?.try_into().expect("16 bytes"));
        let expires_at_ms = r.expiry()?;
        let memory_id = r.rest_str()?.to_string();
        Ok(Entry { uuid, place, memory_id, expires_at_ms })
    }
}

/// What the index holds about one episode, and the keys it wrote.
#[derive(Debug, PartialEq)]
struct Doc {
    place: Place,
    memory_id: String,
    /// Distinct searchable words (empty: not searchable, no postings).
    words: Vec<String>,
    /// Distinct non-ASCII chars of the haystack, sorted (non-empty: a `HAYSTACK` key).
    chars: Vec<char>,
    /// The haystack's `char_pairs`; `None` in a document written before `PAIRS_FORMAT`,
    /// which has no `PAIR` postings.
    pairs: Option<Vec<(char, char)>>,
}

impl Doc {
    /// `DOC` value: u8 place length, place, memory id, words, chars, pairs (u32le counts
    /// and lengths, u32le chars). Before `PAIRS_FORMAT` the value ended after the chars.
    fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64);
        let mut place = Vec::with_capacity(20);
        self.place.push_to(&mut place);
        v.push(place.len() as u8);
        v.extend_from_slice(&place);
        push_bytes(&mut v, self.memory_id.as_bytes());
        v.extend_from_slice(&(self.words.len() as u32).to_le_bytes());
        for w in &self.words {
            push_bytes(&mut v, w.as_bytes());
        }
        v.extend_from_slice(&(self.chars.len() as u32).to_le_bytes());
        for c in &self.chars {
            v.extend_from_slice(&(*c as u32).to_le_bytes());
        }
        if let Some(pairs) = &self.pairs {
            v.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
            for &(a, b) in pairs {
                v.extend_from_slice(&(a as u32).to_le_bytes());
                v.extend_from_slice(&(b as u32).to_le_bytes());
            }
        }
        v
    }

    fn decode(v: &[u8]) -> Result<Doc> {
        let mut r = Reader::new(v, VALUE);
        let n = r.take(1)?[0] as usize;
        let place = Place::decode(r.take(n)?)?;
        let memory_id = r.str()?.to_string();
        let words = (0..r.u32()?).map(|_| r.str().map(str::to_string)).collect::<Result<Vec<_>>>()?;
        let chars = (0..r.u32()?).map(|_| read_char(&mut r)).collect::<Result<Vec<_>>>()?;
        let pairs = if r.rest.is_empty() {
            None
        } else {
            Some((0..r.u32()?).map(|_| Ok((read_char(&mut r)?, read_char(&mut r)?))).collect::<Result<Vec<_>>>()?)
        };
        r.done()?;
        Ok(Doc { place, memory_id, words, chars, pairs })
    }
}

fn read_char(r: &mut Reader<'_>) -> Result<char> {
    char::from_u32(r.u32()?).ok_or_else(|| Error::corruption("an ADK index char is invalid"))
}

/// Can `c` be a char of a query token (a lowercased `\w` run)? Lowercasing a word char
/// yields word chars, except U+0130's combining dot above. Chars no token holds (punctuation,
/// symbols, emoji) need no postings.
pub(crate) fn may_be_in_a_token(c: char) -> bool {
    tokenizer::is_word(c) || c == '\u{307}'
}

/// The text ADK searches in an episode: the text parts of its content. Content that is not
/// an ADK `Content` (a caller's own `memory` episode) has none.
fn indexed_text(e: &Episode) -> String {
    e.content.as_deref().and_then(|c| crate::wire::content::content_text(c).ok().flatten()).unwrap_or_default()
}

/// Stage the ADK index changes of `staged` into `batch`. Each episode's old keys (its `DOC`
/// says which) are removed; then, unless deleted or excluded, it is indexed at the place the
/// writer appended it, else at its old session place (a re-write keeps its place), else, for
/// a `memory` episode with content, after every bucket.
pub(crate) fn stage(ctx: &IndexWrite<'_>, staged: &[&Episode], placement: &Placement, batch: &mut Batch) -> Result<()> {
    let mut ops = KeyOps::default();
    // A first revision has no earlier one that could be indexed (and an upgrade starts from
    // an empty index): a new episode, the common case, needs no lookup. The others' documents
    // are read at once.
    let rewritten: Vec<Vec<u8>> =
        staged.iter().filter(|e| e.revision > 1).map(|e| key(ctx.prefix, DOC, &[e.id.as_bytes()], None)).collect();
    let mut docs = ctx.store.multi_get_cf(ctx.snap, Cf::Index, &rewritten)?.into_iter();
    for e in staged {
        let doc_key = key(ctx.prefix, DOC, &[e.id.as_bytes()], None);
        let old = if e.revision == 1 {
            None
        } else {
            docs.next().expect("one answer per rewritten episode").map(|v| Doc::decode(&v)).transpose()?
        };
        if let Some(d) = &old {
            remove(&mut ops, ctx.prefix, &doc_key, d);
        }
        if e.deleted || placement.excluded.contains(&e.id) {
            continue;
        }
        let placed = placement.places.get(&e.id);
        let place = if let Some(p) = placed {
            Place::Session { bucket: p.bucket, seq: p.seq }
        } else if let Some(p @ Place::Session { .. }) = old.map(|d| d.place) {
            p
        } else if e.episode_type == MEMORY_TYPE && e.content.is_some() {
            Place::Memory(e.id)
        } else {
            continue;
        };
        // An ADK event's primary text is its content's text (the writer made it so): no need
        // to parse the content again.
        let parsed;
        let text = if placed.is_some_and(|p| p.primary_is_content_text) {
            e.primary.as_str()
        } else {
            parsed = indexed_text(e);
            parsed.as_str()
        };
        add(&mut ops, ctx.prefix, &doc_key, e, text, place);
    }
    ops.apply(batch);
    Ok(())
}

fn remove(ops: &mut KeyOps, prefix: &[u8], doc_key: &[u8], d: &Doc) {
    let place = Some(&d.place);
    ops.delete(doc_key.to_vec());
    ops.delete(key(prefix, ENTRY, &[], place));
    ops.delete(key(prefix, MEMID, &[&len_be(&d.memory_id), d.memory_id.as_bytes()], place));
    for w in &d.words {
        ops.delete_posting(|k| key_into(k, prefix, WORD, &[&len_be(w), w.as_bytes()], place));
    }
    for c in &d.chars {
        ops.delete_posting(|k| key_into(k, prefix, CHAR, &[&(*c as u32).to_be_bytes()], place));
    }
    for p in d.pairs.iter().flatten() {
        ops.delete_posting(|k| key_into(k, prefix, PAIR, &[&pair_bytes(*p)], place));
    }
    if !d.chars.is_empty() {
        ops.delete(key(prefix, HAYSTACK, &[], place));
    }
}

fn add(ops: &mut KeyOps, prefix: &[u8], doc_key: &[u8], e: &Episode, text: &str, place: Place) {
    let text = tokenizer::nfc(text);
    let words = tokenizer::searchable_words_of_nfc(&text);
    // ADK skips events without a searchable word, whatever their substrings. An ASCII text
    // has neither chars nor pairs to index (both need a char that is not ASCII), so no
    // haystack is kept for it.
    let haystack = if words.is_empty() || text.is_ascii() { String::new() } else { tokenizer::haystack_of_nfc(&text) };
    let mut chars: Vec<char> = haystack.chars().filter(|&c| !c.is_ascii() && may_be_in_a_token(c)).collect();
    chars.sort_unstable();
    chars.dedup();
    let pairs = char_pairs(&haystack);
    let entry =
        Entry { uuid: e.id, place, memory_id: memory_id(e.event_id.as_deref(), &e.id), expires_at_ms: e.expires_at_ms };
    let at = Some(&place);
    ops.put(key(prefix, ENTRY, &[], at), entry.encode());
    let mid = &entry.memory_id;
    ops.put(key(prefix, MEMID, &[&len_be(mid), mid.as_bytes()], at), e.id.as_bytes().to_vec());
    let posting = posting_value(e.expires_at_ms);
    for w in &words {
        ops.put_posting(|k| key_into(k, prefix, WORD, &[&len_be(w), w.as_bytes()], at), &posting);
    }
    for c in &chars {
        ops.put_posting(|k| key_into(k, prefix, CHAR, &[&(*c as u32).to_be_bytes()], at), &posting);
    }
    put_pairs(ops, prefix, &pairs, &place, &posting);
    if !chars.is_empty() {
        ops.put(key(prefix, HAYSTACK, &[], at), haystack.into_bytes());
    }
    let doc = Doc { place, memory_id: entry.memory_id, words, chars, pairs: Some(pairs) };
    ops.put(doc_key.to_vec(), doc.encode());
}

/// The `PAIR` postings of an entry at `place`.
fn put_pairs(ops: &mut KeyOps, prefix: &[u8], pairs: &[(char, char)], place: &Place, posting: &[u8]) {
    for p in pairs {
        ops.put_posting(|k| key_into(k, prefix, PAIR, &[&pair_bytes(*p)], Some(place)), posting);
    }
}

/// The entries of a bucket, in order (expired ones included).
pub(crate) fn bucket_entries(store: &Store, snap: &Snapshot<'_>, prefix: &[u8], bucket: u32) -> Result<Vec<Entry>> {
    let bucket = bucket.to_be_bytes();
    let mut out = Vec::new();
    store.scan_prefix(snap, Cf::Index, &key(prefix, ENTRY, &[&bucket], None), |seq, v| {
        out.push(Entry::decode(Place::decode(&[&bucket[..], seq].concat())?, v)?);
        Ok(true)
    })?;
    Ok(out)
}

/// The entries at `places` (places postings name), in order: one batched read.
pub(crate) fn entries_at<'p>(
    store: &Store,
    snap: &Snapshot<'_>,
    prefix: &[u8],
    places: impl Iterator<Item = &'p [u8]> + Clone,
) -> Result<Vec<Entry>> {
    let keys: Vec<Vec<u8>> = places.clone().map(|place| key(prefix, ENTRY, &[place], None)).collect();
    places
        .zip(store.multi_get_cf(snap, Cf::Index, &keys)?)
        .map(|(place, v)| {
            let v = v.ok_or_else(|| Error::corruption("an ADK index posting has no entry"))?;
            Entry::decode(Place::decode(place)?, &v)
        })
        .collect()
}

/// `(episode, place)` of the entries reported as `memory_id`, wherever they are.
pub(crate) fn memory_id_entries(
    store: &Store,
    snap: &Snapshot<'_>,
    prefix: &[u8],
    memory_id: &str,
) -> Result<Vec<(Uuid, Place)>> {
    let kind = key(prefix, MEMID, &[&len_be(memory_id), memory_id.as_bytes()], None);
    let mut out = Vec::new();
    store.scan_prefix(snap, Cf::Index, &kind, |place, v| {
        let id = <[u8; 16]>::try_from(v).map_err(|_| Error::corruption("an ADK index memory id key is malformed"))?;
        out.push((Uuid::from_bytes(id), Place::decode(place)?));
        Ok(true)
    })?;
    Ok(out)
}

/// Give a namespace's ADK index, written before `PAIRS_FORMAT`, its `PAIR` postings: each
/// document without pairs gets them from its entry's haystack (with the entry's expiry) and
/// is rewritten with them, `chunk` documents per batch handed to `write`. Documents that
/// have pairs (an upgrade cut short and begun again) are left as they are. Returns the
/// documents rewritten.
pub(crate) fn add_pairs(
    store: &Store,
    prefix: &[u8],
    chunk: usize,
    mut write: impl FnMut(Batch) -> Result<()>,
) -> Result<u64> {
    let snap = store.snapshot_without_postings();
    let docs_prefix = key(prefix, DOC, &[], None);
    let mut it = store.prefix_iter(&snap, Cf::Index, &docs_prefix, &docs_prefix);
    let mut rewritten = 0;
    loop {
        let mut docs = Vec::with_capacity(chunk);
        while docs.len() < chunk {
            let Some((k, v)) = it.current() else { break };
            let doc = Doc::decode(v)?;
            if doc.pairs.is_none() {
                docs.push((k.to_vec(), doc));
            }
            it.next();
        }
        it.status()?;
        if docs.is_empty() {
            return Ok(rewritten);
        }
        let with_text: Vec<&Doc> = docs.iter().map(|(_, d)| d).filter(|d| !d.chars.is_empty()).collect();
        let at = |tag| with_text.iter().map(|d| key(prefix, tag, &[], Some(&d.place))).collect::<Vec<_>>();
        let texts = store.multi_get_cf(&snap, Cf::Index, &at(HAYSTACK))?;
        let entries = store.multi_get_cf(&snap, Cf::Index, &at(ENTRY))?;
        let mut found = texts.into_iter().zip(entries);
        let mut ops = KeyOps::default();
        for (doc_key, mut doc) in docs {
            let mut pairs = Vec::new();
            if !doc.chars.is_empty() {
                let (text, entry) = found.next().expect("one answer per document with chars");
                let text = text.ok_or_else(|| Error::corruption("an ADK index document with chars has no text"))?;
                let text =
                    std::str::from_utf8(&text).map_err(|_| Error::corruption("an ADK index text is not UTF-8"))?;
                let entry = entry.ok_or_else(|| Error::corruption("an ADK index document has no entry"))?;
                let posting = posting_value(Entry::decode(doc.place, &entry)?.expires_at_ms);
                pairs = char_pairs(text);
                put_pairs(&mut ops, prefix, &pairs, &doc.place, &posting);
            }
            doc.pairs = Some(pairs);
            ops.put(doc_key, doc.encode());
            rewritten += 1;
        }
        let mut batch = Batch::default();
        ops.apply(&mut batch);
        write(batch)?;
    }
}

/// The `mnem_search` index among the derived indexes: nothing is held in memory.
pub(crate) struct AdkSearchIndex {
    /// The index has `PAIR` postings (it was written, or upgraded, at `PAIRS_FORMAT` or
    /// later): a format-3 store opened read-only is searched by chars.
    pub pairs: bool,
}

impl DerivedIndex for AdkSearchIndex {
    type Staged<'a> = ();

    fn stage(&self, ctx: &IndexWrite<'_>, staged: &[&Episode], placement: &Placement, batch: &mut Batch) -> Result<()> {
        stage(ctx, staged, placement, batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn place_bytes_sort_in_tie_order_and_round_trip() {
        let places = [
            Place::Session { bucket: 0, seq: 5 },
            Place::Session { bucket: 0, seq: 1 << 40 },
            Place::Session { bucket: 1, seq: 0 },
            Place::Memory(Uuid::from_u128(1)),
            Place::Memory(Uuid::from_u128(2)),
        ];
        let bytes: Vec<Vec<u8>> = places
            .iter()
            .map(|p| {
                let mut v = Vec::new();
                p.push_to(&mut v);
                v
            })
            .collect();
        assert!(bytes.windows(2).all(|w| w[0] < w[1]));
        for (p, b) in places.iter().zip(&bytes) {
            assert_eq!(Place::decode(b).unwrap(), *p);
        }
        assert!(Place::decode(&[0xFF; 12]).is_err());
        assert!(Place::decode(&[0; 20]).is_err());
    }

    #[test]
    fn every_char_of_a_lowercased_word_char_may_be_in_a_token() {
        for c in (0..=0x10FFFF).filter_map(char::from_u32).filter(|&c| tokenizer::is_word(c)) {
            for l in tokenizer::lower(c.encode_utf8(&mut [0; 4])).chars() {
                assert!(may_be_in_a_token(l), "{c:?} lowercases to {l:?}");
            }
        }
        assert!(!may_be_in_a_token('’') && !may_be_in_a_token('…') && !may_be_in_a_token('😀'));
    }

    #[test]
    fn char_pairs_are_the_adjacent_chars_a_token_may_hold_with_one_not_ascii() {
        assert_eq!(char_pairs("café 東京!"), vec![('f', 'é'), ('東', '京')]);
        assert_eq!(char_pairs("ab cd"), vec![], "ASCII pairs are not indexed");
        assert_eq!(char_pairs("é"), vec![]);
        assert_eq!(char_pairs("é-é é’s"), vec![], "punctuation is in no token");
        assert_eq!(char_pairs("ааа"), vec![('а', 'а')], "distinct");
        // A dotted capital I lowercases to i and a combining dot, which a token may hold.
        assert_eq!(char_pairs(&tokenizer::lower("İz")), vec![('i', '\u{307}'), ('\u{307}', 'z')]);
        // Every pair of a token of two chars or more is one of these.
        for token in ["москве", "東京タワー", "i̇stanbul", "straße", "_é"] {
            assert!(!char_pairs(token).is_empty(), "{token}");
        }
    }

    #[test]
    fn doc_and_entry_values_round_trip() {
        let d = Doc {
            place: Place::Session { bucket: 3, seq: 9 },
            memory_id: "e1".into(),
            words: vec!["tea".into(), "東京".into()],
            chars: vec!['東', '京'],
            pairs: Some(vec![('東', '京')]),
        };
        assert_eq!(Doc::decode(&d.encode()).unwrap(), d);
        assert!(Doc::decode(&d.encode()[..10]).is_err());
        // A document written before pairs: its value ends after the chars.
        let old = Doc { pairs: None, ..d };
        let bytes = old.encode();
        assert_eq!(Doc::decode(&bytes).unwrap(), old);
        assert!(Doc::decode(&[&bytes[..], &[1, 0, 0, 0]].concat()).is_err(), "a truncated pair list");
        let e = Entry { uuid: Uuid::from_u128(7), place: d.place, memory_id: "m".into(), expires_at_ms: Some(-3) };
        assert_eq!(Entry::decode(e.place, &e.encode()).unwrap(), e);
    }
}
