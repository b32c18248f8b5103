//! Lexical retrieval over episodes: BM25 keyword search, the bounded lexical page (a
//! UUID-ordered scan of one snapshot, not an index) and substring search. Their queries
//! are parsed and their results written by `crate::wire::query`.

pub mod bm25;
pub(crate) mod index;
pub mod tokenizer;

use crate::adk::tokenizer::lower;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::filter::HitFilter;
use crate::keys::Namespace;
use crate::record::{Episode, RecordView, ScanView};
use crate::store::now_ms;
use bm25::{Corpus, TermMatcher};
use uuid::Uuid;

pub const MAX_TEXT_BYTES: usize = 4096;
pub const MAX_TERMS: usize = 64;
pub const MAX_PAGE_LIMIT: usize = 100;
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_SCAN_LIMIT: usize = 10_000;
pub const MAX_SCAN_BYTES: usize = 64 << 20;
pub const DEFAULT_SCAN_BYTES: usize = 8 << 20;
/// Upper bound of `limit` for keyword and substring search.
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// `search_memory_lexical`'s query (`mnem_lexical_page` in include/mnem.h).
#[derive(Clone, Debug, PartialEq)]
pub struct LexicalQuery {
    pub text: String,
    pub limit: usize,
    pub after: Option<Uuid>,
    pub episode_type: Option<String>,
    pub tag: Option<String>,
    pub scan_limit: usize,
    pub scan_bytes_limit: usize,
}

impl LexicalQuery {
    pub fn new(text: impl Into<String>) -> LexicalQuery {
        LexicalQuery {
            text: text.into(),
            limit: DEFAULT_LIMIT,
            after: None,
            episode_type: None,
            tag: None,
            scan_limit: MAX_SCAN_LIMIT,
            scan_bytes_limit: DEFAULT_SCAN_BYTES,
        }
    }

    fn validate(&self) -> Result<Vec<String>> {
        let check = |ok: bool, field: &str, lo: usize, hi: usize| {
            if ok {
                Ok(())
            } else {
                Err(Error::invalid(format!("`{field}` must be an integer from {lo} to {hi}")))
            }
        };
        check((1..=MAX_PAGE_LIMIT).contains(&self.limit), "limit", 1, MAX_PAGE_LIMIT)?;
        check((1..=MAX_SCAN_LIMIT).contains(&self.scan_limit), "scan_limit", 1, MAX_SCAN_LIMIT)?;
        check((1..=MAX_SCAN_BYTES).contains(&self.scan_bytes_limit), "scan_bytes_limit", 1, MAX_SCAN_BYTES)?;
        let terms = checked_terms(&self.text)?;
        if terms.is_empty() {
            return Err(Error::invalid("`text` has no searchable terms (it is empty, blank or punctuation only)"));
        }
        Ok(terms)
    }
}

/// The distinct query terms of `text`, which may have at most `MAX_TEXT_BYTES` bytes and
/// `MAX_TERMS` terms. Empty for blank or punctuation-only text.
fn checked_terms(text: &str) -> Result<Vec<String>> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(Error::invalid(format!(
            "`text` is {} bytes; at most {MAX_TEXT_BYTES} UTF-8 bytes are allowed",
            text.len()
        )));
    }
    let terms = tokenizer::query_terms(text);
    if terms.len() > MAX_TERMS {
        return Err(Error::invalid(format!(
            "`text` has {} distinct terms; at most {MAX_TERMS} are allowed",
            terms.len()
        )));
    }
    Ok(terms)
}

/// A scored record.
#[derive(Clone, Debug, PartialEq)]
pub struct KeywordSearchResult {
    pub record: Episode,
    /// Raw BM25: a ranking signal, not a probability.
    pub score: f64,
}

/// One page of `search_memory_lexical`.
#[derive(Clone, Debug, PartialEq)]
pub struct LexicalPage {
    pub hits: Vec<KeywordSearchResult>,
    /// Records of the window matching at least one term, before `limit`.
    pub matched_records: u64,
    /// Visible, filtered-in records of the window: the corpus of the statistics.
    pub corpus_records: u64,
    /// Every record visited, invisible and filtered-out ones included.
    pub scanned_records: u64,
    /// Serialized bytes of the visited records.
    pub scanned_bytes: u64,
    /// Set when a record was left unvisited: continue with `after = next_after`.
    pub next_after: Option<Uuid>,
    /// True only for a request without `after` that visited every record.
    pub exhaustive: bool,
}

/// `keyword_search`'s query.
#[derive(Clone, Debug, PartialEq)]
pub struct KeywordQuery {
    pub text: String,
    pub limit: usize,
    pub episode_type: Option<String>,
    pub tag: Option<String>,
    /// Which hits are returned (session, author, time, minimum score); scores do not change.
    pub hits: HitFilter,
}

impl KeywordQuery {
    /// The checked query terms and the record filter; None when nothing can match (text
    /// without terms, or a zero limit).
    fn terms_and_filter(&self) -> Result<Option<(Vec<String>, Filter<'_>)>> {
        let terms = checked_terms(&self.text)?;
        self.hits.validate()?;
        if terms.is_empty() || self.limit == 0 {
            return Ok(None);
        }
        Ok(Some((terms, Filter { episode_type: self.episode_type.as_deref(), tag: self.tag.as_deref() })))
    }

    pub fn new(text: impl Into<String>) -> KeywordQuery {
        KeywordQuery {
            text: text.into(),
            limit: DEFAULT_LIMIT,
            episode_type: None,
            tag: None,
            hits: HitFilter::default(),
        }
    }
}

/// Record filters shared by every lexical API.
#[derive(Clone, Copy)]
pub(crate) struct Filter<'q> {
    pub episode_type: Option<&'q str>,
    pub tag: Option<&'q str>,
}

impl Filter<'_> {
    /// Takes a `&RecordView` too, through its `Deref` to `ScanView`.
    pub fn accepts(&self, v: &ScanView<'_>) -> bool {
        self.episode_type.is_none_or(|t| v.episode_type == t) && self.tag.is_none_or(|t| v.has_tag(t))
    }
}

/// What a scan gathered: the matched documents and the window's statistics.
struct Window {
    /// `(id, dl)` of each matching record; their term frequencies are in `tf`, `terms` apiece.
    matched: Vec<(Uuid, u64)>,
    tf: Vec<u32>,
    df: Vec<u64>,
    corpus: Corpus,
    scanned_records: u64,
    scanned_bytes: u64,
    next_after: Option<Uuid>,
}

struct Budget {
    records: usize,
    bytes: usize,
}

/// What to scan: records after `after` that pass `filter`, visible at `now`, within `budget`.
struct Scan<'q> {
    filter: Filter<'q>,
    after: Option<Uuid>,
    budget: Option<Budget>,
    now: i64,
}

impl Engine {
    /// Visit records in UUID order after `after`, within `budget`, gathering BM25 inputs.
    fn scan_window(
        &self,
        snap: &crate::store::Snapshot<'_>,
        ns: &Namespace,
        matcher: &mut TermMatcher,
        spec: Scan<'_>,
    ) -> Result<Window> {
        let Scan { filter, after, budget, now } = spec;
        let nterms = matcher.terms().len();
        let mut w = Window {
            matched: Vec::new(),
            tf: Vec::new(),
            df: vec![0; nterms],
            corpus: Corpus::default(),
            scanned_records: 0,
            scanned_bytes: 0,
            next_after: None,
        };
        let mut tf = vec![0u32; nterms];
        let mut last: Option<Uuid> = None;
        let mut scan = self.store.scan_episodes(snap, ns, after);
        while let Some((id, bytes)) = scan.next()? {
            if let Some(b) = &budget {
                let over_bytes = w.scanned_bytes as usize + bytes.len() > b.bytes;
                if w.scanned_records as usize == b.records || over_bytes {
                    if w.scanned_records == 0 {
                        return Err(Error::invalid(format!(
                            "`scan_bytes_limit` ({}) cannot fit the first record ({} bytes)",
                            b.bytes,
                            bytes.len()
                        )));
                    }
                    w.next_after = last;
                    break;
                }
            }
            w.scanned_records += 1;
            w.scanned_bytes += bytes.len() as u64;
            last = Some(id);
            let v = ScanView::parse(bytes)?;
            if !v.is_visible(now) || !filter.accepts(&v) {
                continue;
            }
            let mut dl = 0u64;
            tf.iter_mut().for_each(|x| *x = 0);
            matcher.count(v.primary, &mut dl, &mut tf);
            matcher.count(v.secondary, &mut dl, &mut tf);
            matcher.count(v.context, &mut dl, &mut tf);
            w.corpus.records += 1;
            w.corpus.total_len += dl;
            if tf.iter().any(|&x| x > 0) {
                for (d, &f) in w.df.iter_mut().zip(&tf) {
                    *d += u64::from(f > 0);
                }
                w.matched.push((id, dl));
                w.tf.extend_from_slice(&tf);
            }
        }
        Ok(w)
    }

    /// The best `limit` of a window's hits: `(score, id)`, score descending, then UUID.
    fn rank(w: &Window, limit: usize) -> Vec<(f64, Uuid)> {
        let n = w.corpus.records;
        let idfs: Vec<f64> = w.df.iter().map(|&df| bm25::idf(n, df)).collect();
        let avgdl = w.corpus.avgdl();
        let nterms = idfs.len();
        let scored: Vec<(f64, Uuid)> = w
            .matched
            .iter()
            .enumerate()
            .map(|(i, &(id, dl))| (bm25::score(&idfs, &w.tf[i * nterms..(i + 1) * nterms], dl, avgdl), id))
            .collect();
        bm25::top(scored, limit)
    }

    /// The records of ranked hits, read from the snapshot that was scanned.
    fn fetch_hits(
        &self,
        snap: &crate::store::Snapshot<'_>,
        ns: &Namespace,
        ranked: Vec<(f64, Uuid)>,
    ) -> Result<Vec<KeywordSearchResult>> {
        let prefix = ns.prefix();
        let ids: Vec<Uuid> = ranked.iter().map(|r| r.1).collect();
        ranked
            .into_iter()
            .zip(self.store.get_episodes_raw(snap, &prefix, &ids)?)
            .map(|((score, id), bytes)| {
                let bytes = bytes.ok_or_else(|| Error::corruption("a scanned record vanished from its snapshot"))?;
                Ok(KeywordSearchResult { record: Episode::decode(id, &bytes)?, score })
            })
            .collect()
    }

    /// `Mnem::search_memory_lexical` (the public documentation is there).
    pub(crate) fn search_memory_lexical(&self, ns: &Namespace, q: &LexicalQuery) -> Result<LexicalPage> {
        let terms = q.validate()?;
        let now = now_ms();
        let snap = self.store.snapshot_without_postings();
        let mut matcher = TermMatcher::new(terms);
        let filter = Filter { episode_type: q.episode_type.as_deref(), tag: q.tag.as_deref() };
        let budget = Budget { records: q.scan_limit, bytes: q.scan_bytes_limit };
        let w =
            self.scan_window(&snap, ns, &mut matcher, Scan { filter, after: q.after, budget: Some(budget), now })?;
        let hits = self.fetch_hits(&snap, ns, Self::rank(&w, q.limit))?;
        Ok(LexicalPage {
            hits,
            matched_records: w.matched.len() as u64,
            corpus_records: w.corpus.records,
            scanned_records: w.scanned_records,
            scanned_bytes: w.scanned_bytes,
            next_after: w.next_after,
            exhaustive: q.after.is_none() && w.next_after.is_none(),
        })
    }

    /// `keyword_search` up to ranking, within a caller's snapshot and visibility time (hybrid
    /// search fuses the ids in the same snapshot as its other channel).
    pub(crate) fn keyword_ranked(
        &self,
        snap: &crate::store::Snapshot<'_>,
        ns: &Namespace,
        q: &KeywordQuery,
        now: i64,
    ) -> Result<Vec<(f64, Uuid)>> {
        let Some((terms, filter)) = q.terms_and_filter()? else { return Ok(Vec::new()) };
        let limit = if q.hits.reads_records() { usize::MAX } else { q.limit };
        let ranked = index::rank(&self.store, snap, &ns.prefix(), &terms, filter, now, limit)?;
        self.narrow(snap, ns, ranked, &q.hits, q.limit)
    }

    /// The first `limit` hits of `ranked` (best first) that pass `hits`. Ranked hits below
    /// the minimum score end the walk; records are read `limit` at a time, only when a
    /// filter looks at them.
    pub(crate) fn narrow(
        &self,
        snap: &crate::store::Snapshot<'_>,
        ns: &Namespace,
        mut ranked: Vec<(f64, Uuid)>,
        hits: &HitFilter,
        limit: usize,
    ) -> Result<Vec<(f64, Uuid)>> {
        if let Some(cut) = ranked.iter().position(|(score, _)| !hits.scores(*score)) {
            ranked.truncate(cut);
        }
        if !hits.reads_records() {
            ranked.truncate(limit);
            return Ok(ranked);
        }
        let prefix = ns.prefix();
        let mut out = Vec::with_capacity(limit.min(ranked.len()));
        for chunk in ranked.chunks(limit.clamp(1, 256)) {
            let ids: Vec<Uuid> = chunk.iter().map(|r| r.1).collect();
            for (&(score, id), bytes) in chunk.iter().zip(self.store.get_episodes_raw(snap, &prefix, &ids)?) {
                let Some(bytes) = bytes else { continue };
                if out.len() < limit && hits.accepts(&RecordView::parse(id, &bytes)?) {
                    out.push((score, id));
                }
            }
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// The BM25 ranking of the namespace's documents for any text, at most `limit`: its first
    /// `MAX_TEXT_BYTES` bytes and first `MAX_TERMS` distinct terms (recall ranks an agent's
    /// query, which keyword search's limits must not refuse).
    pub(crate) fn bm25_lenient(
        &self,
        snap: &crate::store::Snapshot<'_>,
        ns: &Namespace,
        text: &str,
        now: i64,
        limit: usize,
    ) -> Result<Vec<(f64, Uuid)>> {
        let mut end = text.len().min(MAX_TEXT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let mut terms = tokenizer::query_terms(&text[..end]);
        terms.truncate(MAX_TERMS);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        index::rank(&self.store, snap, &ns.prefix(), &terms, Filter { episode_type: None, tag: None }, now, limit)
    }

    /// `Mnem::keyword_search_by_scan` (the public documentation is there).
    pub(crate) fn keyword_search_by_scan(
        &self,
        ns: &Namespace,
        q: &KeywordQuery,
        now: i64,
    ) -> Result<Vec<KeywordSearchResult>> {
        let snap = self.store.snapshot_without_postings();
        let Some((terms, filter)) = q.terms_and_filter()? else { return Ok(Vec::new()) };
        let mut matcher = TermMatcher::new(terms);
        let w = self.scan_window(&snap, ns, &mut matcher, Scan { filter, after: None, budget: None, now })?;
        let limit = if q.hits.reads_records() { usize::MAX } else { q.limit };
        let ranked = self.narrow(&snap, ns, Self::rank(&w, limit), &q.hits, q.limit)?;
        self.fetch_hits(&snap, ns, ranked)
    }

    /// `Mnem::keyword_search_at` (the public documentation is there).
    pub(crate) fn keyword_search_at(
        &self,
        ns: &Namespace,
        q: &KeywordQuery,
        now: i64,
    ) -> Result<Vec<KeywordSearchResult>> {
        let snap = self.read_snapshot()?;
        let ranked = self.keyword_ranked(&snap, ns, q, now)?;
        self.fetch_hits(&snap, ns, ranked)
    }

    /// `Mnem::search_episodes` (the public documentation is there).
    pub(crate) fn search_episodes(&self, ns: &Namespace, q: &KeywordQuery) -> Result<Vec<Episode>> {
        if q.text.is_empty() {
            return Err(Error::invalid("`text` is empty"));
        }
        q.hits.validate()?;
        if q.hits.min_score.is_some() {
            return Err(Error::invalid("`min_score` applies to scored searches; substring search has no scores"));
        }
        let needle = lower(&q.text);
        let finder = memchr::memmem::Finder::new(needle.as_bytes());
        let now = now_ms();
        let snap = self.store.snapshot_without_postings();
        let filter = Filter { episode_type: q.episode_type.as_deref(), tag: q.tag.as_deref() };
        let mut out = Vec::new();
        let mut scan = self.store.scan_episodes(&snap, ns, None);
        while out.len() < q.limit {
            let Some((id, bytes)) = scan.next()? else { break };
            let v = ScanView::parse(bytes)?;
            if !v.is_visible(now) || !filter.accepts(&v) {
                continue;
            }
            if [v.primary, v.secondary, v.context].iter().any(|t| finder.find(lower(t).as_bytes()).is_some())
                && (!q.hits.reads_records() || q.hits.accepts(&RecordView::parse(id, bytes)?))
            {
                out.push(Episode::decode(id, bytes)?);
            }
        }
        Ok(out)
    }
}
