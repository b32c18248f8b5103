//! The in-memory search index of one namespace for `mnem_search`.
//!
//! ADK's reference re-tokenizes every event at every query. Here each stored event is
//! tokenized once, at write or at the namespace's first search after open: its searchable
//! words go to an inverted index and its lowercased NFC text stays as the substring haystack.
//! A query then touches only the postings of its own tokens: an ASCII token by exact word
//! lookup, a non-ASCII token by its word postings plus a substring check of the events that
//! contain its rarest non-ASCII character. The result equals the reference's full scan.

use super::tokenizer;
use crate::error::Result;
use crate::mnem::IndexWrite;
use crate::record::Episode;
use rocksdb::WriteBatch;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// Where the episodes of a write sit in ADK's tie order, as the writer decided.
#[derive(Debug, Default)]
pub(crate) struct Placement {
    /// `(bucket position, sequence)` of the events the ADK write path appended.
    pub places: HashMap<Uuid, (u32, u64)>,
    /// Episodes never indexed for `mnem_search` (an older store's episodes whose memory id
    /// was tombstoned).
    pub excluded: HashSet<Uuid>,
}

/// Stage the index changes of `staged` into `batch` (see `crate::mnem`).
pub(crate) fn stage(
    _ctx: &IndexWrite<'_>,
    _staged: &[&Episode],
    _placement: &Placement,
    _batch: &mut WriteBatch,
) -> Result<()> {
    Ok(())
}

/// ADK returns at most this many memories (`_MAX_SEARCH_RESULTS`).
pub const MAX_RESULTS: usize = 10;

/// Bucket position of `memory` episodes: after every session bucket.
pub const MEMORY_BUCKET: u32 = u32::MAX;

#[derive(Debug)]
pub struct Entry {
    pub uuid: Uuid,
    pub bucket: u32,
    pub seq: u64,
    /// The id `mnem_search` reports and `mnem_delete_memory` matches.
    pub memory_id: String,
    haystack: Box<str>,
    searchable: bool,
    pub expires_at_ms: Option<i64>,
    pub alive: bool,
}

impl Entry {
    pub fn visible(&self, now_ms: i64) -> bool {
        self.alive && self.expires_at_ms.is_none_or(|e| now_ms < e)
    }
}

#[derive(Debug, Default)]
pub struct AdkIndex {
    entries: Vec<Entry>,
    words: HashMap<Box<str>, Vec<u32>>,
    chars: HashMap<char, Vec<u32>>,
    /// Live entries of each bucket position, in sequence order.
    buckets: HashMap<u32, Vec<u32>>,
    dead: usize,
    /// Replaced or dropped by a writer: no longer kept in step with the store.
    retired: bool,
}

impl AdkIndex {
    pub fn insert(
        &mut self,
        uuid: Uuid,
        bucket: u32,
        seq: u64,
        memory_id: String,
        text: &str,
        expires_at_ms: Option<i64>,
    ) {
        let idx = u32::try_from(self.entries.len()).expect("fewer than 2^32 index entries");
        let words = tokenizer::searchable_words(text);
        let haystack = tokenizer::haystack(text);
        for w in &words {
            self.words.entry(w.as_str().into()).or_default().push(idx);
        }
        let mut chars: Vec<char> = haystack.chars().filter(|c| !c.is_ascii()).collect();
        chars.sort_unstable();
        chars.dedup();
        for c in chars {
            self.chars.entry(c).or_default().push(idx);
        }
        self.buckets.entry(bucket).or_default().push(idx);
        self.entries.push(Entry {
            uuid,
            bucket,
            seq,
            memory_id,
            haystack: haystack.into(),
            searchable: !words.is_empty(),
            expires_at_ms,
            alive: true,
        });
    }

    /// Live entries of a bucket, in order.
    pub fn bucket(&self, bucket: u32) -> impl Iterator<Item = &Entry> {
        self.buckets.get(&bucket).into_iter().flatten().map(|&i| &self.entries[i as usize])
    }

    /// Mark the live entry of `bucket` whose episode is `uuid` dead.
    pub fn remove(&mut self, bucket: u32, uuid: &Uuid) {
        let Some(list) = self.buckets.get_mut(&bucket) else { return };
        if let Some(p) = list.iter().position(|&i| self.entries[i as usize].uuid == *uuid) {
            let i = list.remove(p) as usize;
            self.entries[i].alive = false;
            self.dead += 1;
        }
    }

    /// `(episode, bucket, seq)` of the live entries reported as `memory_id`, wherever they are.
    pub fn find_memory_id(&self, memory_id: &str) -> Vec<(Uuid, u32, u64)> {
        self.buckets
            .values()
            .flatten()
            .map(|&i| &self.entries[i as usize])
            .filter(|e| e.memory_id == memory_id)
            .map(|e| (e.uuid, e.bucket, e.seq))
            .collect()
    }

    /// Mark the index as no longer maintained; readers holding it must look again.
    pub fn retire(&mut self) {
        self.retired = true;
    }

    pub fn is_retired(&self) -> bool {
        self.retired
    }

    /// Dead entries outnumber live ones: the owner should rebuild from storage.
    pub fn wants_rebuild(&self) -> bool {
        self.dead > 4096 && self.dead > self.entries.len() / 2
    }

    /// ADK's ranking: entries scoring above zero, by descending score, ties in bucket order
    /// then sequence order, at most `MAX_RESULTS`.
    pub fn search(&self, query: &str, now_ms: i64) -> Vec<&Entry> {
        let terms = tokenizer::words_lower(query);
        let mut scores: HashMap<u32, u32> = HashMap::new();
        let mut matched: Vec<u32> = Vec::new();
        for q in &terms {
            matched.clear();
            if let Some(p) = self.words.get(q.as_str()) {
                matched.extend_from_slice(p);
            }
            if !q.is_ascii() {
                let rarest = q
                    .chars()
                    .filter(|c| !c.is_ascii())
                    .map(|c| self.chars.get(&c).map_or(&[][..], Vec::as_slice))
                    .min_by_key(|p| p.len())
                    .unwrap_or(&[]);
                matched.extend(rarest.iter().filter(|&&i| self.entries[i as usize].haystack.contains(q.as_str())));
                matched.sort_unstable();
                matched.dedup();
            }
            for &i in &matched {
                let e = &self.entries[i as usize];
                if e.searchable && e.visible(now_ms) {
                    *scores.entry(i).or_insert(0) += 1;
                }
            }
        }
        let mut hits: Vec<(u32, &Entry)> = scores.into_iter().map(|(i, s)| (s, &self.entries[i as usize])).collect();
        hits.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.bucket.cmp(&b.1.bucket)).then(a.1.seq.cmp(&b.1.seq)));
        hits.truncate(MAX_RESULTS);
        hits.into_iter().map(|(_, e)| e).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(texts: &[(u32, &str)]) -> AdkIndex {
        let mut ix = AdkIndex::default();
        for (seq, (bucket, t)) in texts.iter().enumerate() {
            ix.insert(Uuid::now_v7(), *bucket, seq as u64, format!("e{seq}"), t, None);
        }
        ix
    }

    fn ids(ix: &AdkIndex, q: &str) -> Vec<String> {
        ix.search(q, 0).into_iter().map(|e| e.memory_id.clone()).collect()
    }

    #[test]
    fn ties_follow_bucket_then_sequence() {
        let ix = index(&[(0, "alpha beta"), (0, "beta"), (1, "alpha beta gamma")]);
        assert_eq!(ids(&ix, "beta"), ["e0", "e1", "e2"]);
        assert_eq!(ids(&ix, "alpha beta gamma"), ["e2", "e0", "e1"]);
    }

    #[test]
    fn non_ascii_terms_match_substrings_ascii_terms_whole_words() {
        let ix =
            index(&[(0, "私はPythonでADKを使っています"), (0, "İstanbul"), (0, "cafés"), (0, "東京"), (0, "大阪")]);
        assert_eq!(ids(&ix, "使って"), ["e0"]);
        assert_eq!(ids(&ix, "thon"), Vec::<String>::new());
        assert_eq!(ids(&ix, "python"), ["e0"]);
        assert_eq!(ids(&ix, "stanbul"), ["e1"]);
        assert_eq!(ids(&ix, "istanbul"), Vec::<String>::new());
        assert_eq!(ids(&ix, "café"), ["e2"]);
        assert_eq!(ids(&ix, "京大"), Vec::<String>::new());
    }

    #[test]
    fn dead_and_expired_entries_never_match() {
        let mut ix = index(&[(0, "tea"), (0, "tea")]);
        let first = ix.entries[0].uuid;
        ix.remove(0, &first);
        assert_eq!(ids(&ix, "tea"), ["e1"]);
        ix.insert(Uuid::now_v7(), 0, 9, "x".into(), "tea", Some(100));
        assert_eq!(ix.search("tea", 99).len(), 2);
        assert_eq!(ix.search("tea", 100).len(), 1);
    }

    /// The reference algorithm, literally: re-tokenize every event for every query.
    fn naive(texts: &[(u32, String)], query: &str) -> Vec<String> {
        let q = tokenizer::words_lower(query);
        let mut hits: Vec<(usize, usize)> = Vec::new();
        for (i, (_, t)) in texts.iter().enumerate() {
            let words = tokenizer::searchable_words(t);
            if words.is_empty() {
                continue;
            }
            let hay = tokenizer::haystack(t);
            let score = q.iter().filter(|w| words.contains(w) || (!w.is_ascii() && hay.contains(w.as_str()))).count();
            if score > 0 {
                hits.push((score, i));
            }
        }
        // Stable sort by score; `texts` is already in (bucket, seq) order.
        hits.sort_by_key(|h| std::cmp::Reverse(h.0));
        hits.into_iter().take(MAX_RESULTS).map(|(_, i)| format!("e{i}")).collect()
    }

    #[test]
    fn index_equals_the_naive_reference_scan() {
        let atoms = [
            "tea",
            "Tea",
            "東京",
            "大阪",
            "東京タワー",
            "İstanbul",
            "stanbul",
            "Straße",
            "ΟΔΟΣ",
            "οδος",
            "café",
            "cafe\u{301}",
            "हिन्दी",
            "ह",
            "x²y",
            "a‿b",
            "Ｐｙｔｈｏｎ",
            "python",
            "2024年に",
            "ﬁnance",
            "...",
            "",
            "naïveテスト",
            "テスト",
            "москва",
            "Москваcity",
            "_",
            "under_score",
            "K",
            "\u{212A}elvin",
        ];
        let mut seed = 0x1234_5678_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut texts: Vec<(u32, String)> = Vec::new();
        for _ in 0..300 {
            let n = (next() % 6) as usize;
            let sep = [" ", "", ", ", "-"][(next() % 4) as usize];
            let t: Vec<&str> = (0..n).map(|_| atoms[(next() % atoms.len() as u64) as usize]).collect();
            texts.push(((next() % 5) as u32, t.join(sep)));
        }
        texts.sort_by_key(|t| t.0);
        let mut ix = AdkIndex::default();
        for (seq, (bucket, t)) in texts.iter().enumerate() {
            ix.insert(Uuid::now_v7(), *bucket, seq as u64, format!("e{seq}"), t, None);
        }
        for _ in 0..400 {
            let n = 1 + (next() % 3) as usize;
            let q: Vec<&str> = (0..n).map(|_| atoms[(next() % atoms.len() as u64) as usize]).collect();
            let q = q.join(" ");
            assert_eq!(ids(&ix, &q), naive(&texts, &q), "query {q:?}");
        }
    }
}
