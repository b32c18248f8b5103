//! Semantic recall over the ADK seam: the vectors of ADK events and memories, written with
//! them when the store has an embedder (`Engine::embed_events`), and `mnem_recall`, which
//! fuses ADK's own ranking (`mnem_search`) with the nearest vectors of ADK entries by the
//! weighted RRF of hybrid search and answers in `mnem_search`'s `MemoryEntry` shape.
//!
//! Stores written by the Python service before recall moved into the core hold "recall
//! copies" (episodes of type `adk_recall` with the vector, `event_id` the memory id,
//! `session_id` the session). They are read as they are: a copy found by the vector channel
//! stands for the live ADK entry with its memory id and session, and for nothing when that
//! entry is gone (deleted, forgotten, or dropped by a re-added session), so the core's
//! deletes hide them too.

use super::event::{memory_id, AdkEvent, Memory};
use super::index::{self, MAX_RESULTS};
use super::search;
use super::state::AdkState;
use crate::embed::{event_text, needs_vector, EmbeddingProvider};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::filter::HitFilter;
use crate::hybrid::{fuse, DEFAULT_CANDIDATES, DEFAULT_SEMANTIC_WEIGHT};
use crate::keys::Namespace;
use crate::record::RecordView;
use crate::store::{now_ms, Snapshot};
use std::collections::{HashMap, HashSet, VecDeque};
use uuid::Uuid;

/// The episode type of the recall copies the Python service wrote before this module.
pub const LEGACY_RECALL_TYPE: &str = "adk_recall";
/// The most memories one recall answers (ADK's own ranking gives at most `MAX_RESULTS`).
pub const MAX_RECALL_LIMIT: usize = 100;
/// The default `limit`: as many as `mnem_search` answers.
pub const DEFAULT_RECALL_LIMIT: usize = MAX_RESULTS;

/// Which rankings a recall fuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecallMode {
    /// ADK's ranking alone: `mnem_search`'s answer (at most `MAX_RESULTS`); with hit filters,
    /// ADK's ranking of the entries they accept.
    Adk,
    /// BM25 over the namespace's ADK events and memories.
    Bm25,
    /// BM25 fused with the nearest vectors of ADK events and memories.
    Hybrid,
    /// ADK's ranking fused with the nearest vectors (the default).
    #[default]
    AdkVectors,
}

impl RecallMode {
    pub const NAMES: [(&'static str, RecallMode); 4] = [
        ("adk", RecallMode::Adk),
        ("bm25", RecallMode::Bm25),
        ("hybrid", RecallMode::Hybrid),
        ("adk_vectors", RecallMode::AdkVectors),
    ];

    fn lexical_is_bm25(self) -> bool {
        matches!(self, RecallMode::Bm25 | RecallMode::Hybrid)
    }

    fn has_vectors(self) -> bool {
        matches!(self, RecallMode::Hybrid | RecallMode::AdkVectors)
    }
}

/// A `mnem_recall` query.
#[derive(Clone, Debug, PartialEq)]
pub struct RecallQuery {
    /// ADK's `search_memory(query=...)`.
    pub text: String,
    /// The query vector; absent, the store's embedder makes it (when it has one).
    pub vector: Option<Vec<f32>>,
    /// The model that made `vector`, as `HybridQuery::vector_model`.
    pub vector_model: Option<String>,
    /// 0 to `MAX_RECALL_LIMIT`.
    pub limit: usize,
    pub semantic_weight: f64,
    /// The vector channel ranks `limit × candidates` entries (ADK's ranking gives its top 10),
    /// and so does BM25.
    pub candidates: usize,
    pub mode: RecallMode,
    /// Which memories are returned (session, author, time, minimum score). `min_score` is
    /// BM25's score in `Bm25` mode and the fused score in the fused modes; `Adk` has none.
    pub hits: HitFilter,
}

impl RecallQuery {
    pub fn new(text: impl Into<String>) -> RecallQuery {
        RecallQuery {
            text: text.into(),
            vector: None,
            vector_model: None,
            limit: DEFAULT_RECALL_LIMIT,
            semantic_weight: DEFAULT_SEMANTIC_WEIGHT,
            candidates: DEFAULT_CANDIDATES,
            mode: RecallMode::default(),
            hits: HitFilter::default(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if self.limit > MAX_RECALL_LIMIT {
            return Err(Error::invalid(format!("`limit` must be at most {MAX_RECALL_LIMIT}")));
        }
        self.hits.validate()?;
        if self.mode == RecallMode::Adk && self.hits.min_score.is_some() {
            return Err(Error::invalid(
                "`min_score` needs a scored mode (bm25, hybrid or adk_vectors); adk has no scores",
            ));
        }
        let hq = crate::HybridQuery {
            vector: self.vector.clone(),
            semantic_weight: self.semantic_weight,
            candidates: self.candidates,
            ..crate::HybridQuery::new(self.text.clone())
        };
        hq.validate()
    }

    /// Does the query need a vector it lacks? The rule of `HybridQuery::wants_vector`.
    pub fn wants_vector(&self) -> bool {
        self.mode.has_vectors()
            && self.vector.is_none()
            && self.limit > 0
            && needs_vector(&self.text)
            && self.semantic_weight > 0.0
    }
}

/// A stored event's text and vector.
type Held = (String, Option<Vec<f32>>);

impl Engine {
    /// Give the events of an ADK write their vectors, before the writers' lock (the embedder
    /// may be slow): every event with text that the write may store, except those whose
    /// stored episode in the session already has a vector of the same text, which is reused
    /// (so re-adding a growing session embeds only its new events). `append` (add_events)
    /// skips ids already in the bucket: that write will not store them.
    pub(crate) fn embed_events(
        &self,
        ns: &Namespace,
        session_id: &str,
        events: &mut [(usize, AdkEvent)],
        append: bool,
        context: usize,
        provider: &dyn EmbeddingProvider,
    ) -> Result<()> {
        let prefix = ns.prefix();
        let snap = self.store.snapshot_without_postings();
        let state = AdkState { store: &self.store, snap: &snap, prefix: &prefix };
        let now = now_ms();
        // The bucket's visible events by memory id: (text, vector); and the last `context`
        // events with text, with their authors, for the context of the next one.
        let mut stored: HashMap<String, Option<Held>> = HashMap::new();
        let mut said: VecDeque<(Option<String>, String)> = VecDeque::with_capacity(context + 1);
        let say = |said: &mut VecDeque<_>, author: Option<&str>, text: &str| {
            if context > 0 && needs_vector(text) {
                if said.len() == context {
                    said.pop_front();
                }
                said.push_back((author.map(str::to_owned), text.to_owned()));
            }
        };
        if let Some(b) = state.bucket(session_id)? {
            let entries: Vec<_> = index::bucket_entries(&self.store, &snap, &prefix, b.position)?
                .into_iter()
                .filter(|e| e.visible(now))
                .collect();
            let ids: Vec<Uuid> = entries.iter().map(|e| e.uuid).collect();
            for (e, bytes) in entries.into_iter().zip(self.store.get_episodes_raw(&snap, &prefix, &ids)?) {
                let held = match bytes {
                    Some(b) => {
                        let r = RecordView::parse(e.uuid, &b)?;
                        if append {
                            say(&mut said, r.author(), r.primary);
                        }
                        Some((r.primary.to_string(), r.embedding()))
                    }
                    None => None,
                };
                stored.insert(e.memory_id, held);
            }
        }
        let memory_ids: Vec<&str> = events.iter().map(|(_, ev)| ev.id.as_str()).collect();
        let tombstoned: HashSet<String> = memory_ids
            .iter()
            .zip(state.tombstoned(&memory_ids)?)
            .filter(|(_, t)| *t)
            .map(|(m, _)| m.to_string())
            .collect();
        let mut seen = HashSet::new();
        let mut appended = HashSet::new();
        let mut todo = Vec::new();
        let mut texts: Vec<String> = Vec::new();
        for (i, (_, ev)) in events.iter_mut().enumerate() {
            if needs_vector(&ev.text) && seen.insert(ev.id.clone()) && !tombstoned.contains(&ev.id) {
                match stored.get(&ev.id) {
                    Some(_) if append => {}
                    Some(Some((text, Some(v)))) if *text == ev.text => ev.embedding = Some(v.clone()),
                    _ => {
                        // What the session holds before this event once the write is done: for
                        // add_session the batch alone (it replaces the session), for
                        // add_events the bucket and then the batch.
                        let before: Vec<(Option<&str>, &str)> =
                            said.iter().map(|(a, t)| (a.as_deref(), t.as_str())).collect();
                        texts.push(event_text(&before, ev.author.as_deref(), &ev.text, context));
                        todo.push(i);
                    }
                }
            }
            let kept = !tombstoned.contains(&ev.id)
                && !(append && (stored.contains_key(&ev.id) || !appended.insert(ev.id.clone())));
            if kept {
                say(&mut said, ev.author.as_deref(), &ev.text);
            }
        }
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = crate::embed::run(provider, &texts)?;
        for (i, v) in todo.into_iter().zip(vectors) {
            events[i].1.embedding = Some(v);
        }
        let model = provider.model().map(str::to_owned);
        for (_, ev) in events.iter_mut() {
            ev.embedding_model = model.clone();
        }
        // A later event with an id already seen is skipped by the write; an id repeated within
        // add_session's batch is stored once per line, so give repeats the first one's vector.
        if !append {
            let mut first: HashMap<String, Vec<f32>> = HashMap::new();
            for (_, ev) in events.iter_mut() {
                match (&ev.embedding, first.get(&ev.id)) {
                    (Some(v), None) => {
                        first.insert(ev.id.clone(), v.clone());
                    }
                    (None, Some(v)) if needs_vector(&ev.text) => ev.embedding = Some(v.clone()),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The live ADK entry that the episode `id` (found by a ranking) stands for, if `hits`
    /// accepts its record: itself when it is an ADK event or memory, the entry it copies when
    /// it is a legacy recall copy, else none.
    fn recall_entry(
        &self,
        snap: &Snapshot<'_>,
        prefix: &[u8],
        id: &Uuid,
        now: i64,
        hits: &HitFilter,
    ) -> Result<Option<Uuid>> {
        let Some(bytes) = self.store.get_episode_raw(snap, prefix, id)? else { return Ok(None) };
        let r = RecordView::parse(*id, &bytes)?;
        if !r.is_visible(now) {
            return Ok(None);
        }
        if r.episode_type != LEGACY_RECALL_TYPE {
            let mid = memory_id(r.event_id(), id);
            let entries = index::memory_id_entries(&self.store, snap, prefix, &mid)?;
            return Ok((entries.iter().any(|(u, _)| u == id) && hits.accepts(&r)).then_some(*id));
        }
        let Some(mid) = r.event_id() else { return Ok(None) };
        for (u, _) in index::memory_id_entries(&self.store, snap, prefix, mid)? {
            let Some(b) = self.store.get_episode_raw(snap, prefix, &u)? else { continue };
            let e = RecordView::parse(u, &b)?;
            if e.is_visible(now) && e.session_id() == r.session_id() {
                return Ok(hits.accepts(&e).then_some(u));
            }
        }
        Ok(None)
    }

    /// `Mnem::recall` with the query vector (if any) in `q.vector`.
    pub(crate) fn recall(&self, ns: &Namespace, q: &RecallQuery) -> Result<Vec<Memory>> {
        q.validate()?;
        if q.limit == 0 || !needs_vector(&q.text) {
            return Ok(Vec::new());
        }
        let prefix = ns.prefix();
        let now = now_ms();
        let vector = if q.mode.has_vectors() { q.vector.as_deref() } else { None };
        let (snap, vectors, w_lex, w_sem) =
            self.vector_channel(ns, vector, q.vector_model.as_deref(), q.semantic_weight, now)?;
        let pool = q.limit.saturating_mul(q.candidates);
        // A candidate passes when it stands for a live ADK entry that the filters accept.
        let entry_of = |id: &Uuid| self.recall_entry(&snap, &prefix, id, now, &q.hits);
        let mut semantic: Vec<Uuid> = Vec::new();
        if let (Some(ix), Some(v), true) = (vectors, vector, w_sem > 0.0) {
            let keep = |id: &Uuid| matches!(entry_of(id), Ok(Some(_)));
            let found: Vec<Uuid> = ix.nearest(v, pool, now, keep).into_iter().map(|(id, _)| id).collect();
            drop(ix);
            let mut seen = HashSet::new();
            for id in found {
                if let Some(entry) = entry_of(&id)? {
                    if seen.insert(entry) {
                        semantic.push(entry);
                    }
                }
            }
        }
        // The lexical ranking, with its scores (BM25's; ADK's ranking has none).
        let mut lexical: Vec<(f64, Uuid)> = Vec::new();
        if w_lex > 0.0 && q.mode.lexical_is_bm25() {
            // Most documents of an ADK namespace are its entries: rank a few more than the
            // pool, and everything only when too many were not entries.
            let mut depth = pool.saturating_mul(2).max(16);
            loop {
                let ranked = self.bm25_lenient(&snap, ns, &q.text, now, depth)?;
                let complete = ranked.len() < depth;
                let mut seen = HashSet::new();
                lexical.clear();
                for (score, id) in ranked {
                    if lexical.len() == pool {
                        break;
                    }
                    if let Some(entry) = entry_of(&id)? {
                        if seen.insert(entry) {
                            lexical.push((score, entry));
                        }
                    }
                }
                if lexical.len() == pool || complete {
                    break;
                }
                depth = usize::MAX;
            }
        } else if w_lex > 0.0 {
            let mut accept = |e: &index::Entry| Ok(entry_of(&e.uuid)?.is_some());
            let accept: Option<search::Accept<'_>> = if q.hits.reads_records() { Some(&mut accept) } else { None };
            for e in search::search_where(&self.store, &snap, &prefix, &q.text, now, self.adk.pairs, accept)? {
                lexical.push((0.0, e.uuid));
            }
        }
        let ranked: Vec<(Uuid, f64)> = if matches!(q.mode, RecallMode::Bm25 | RecallMode::Adk) {
            lexical.iter().map(|&(score, id)| (id, score)).collect()
        } else {
            let ids: Vec<Uuid> = lexical.iter().map(|(_, u)| *u).collect();
            fuse(&ids, &semantic, w_lex, w_sem).into_iter().map(|(id, score, ..)| (id, score)).collect()
        };
        let mut out = Vec::with_capacity(q.limit);
        for (id, score) in ranked {
            if out.len() == q.limit || !q.hits.scores(score) {
                break;
            }
            let Some(bytes) = self.store.get_episode_raw(&snap, &prefix, &id)? else { continue };
            let view = RecordView::parse(id, &bytes)?;
            if !view.is_visible(now) {
                continue;
            }
            out.push(Memory {
                id: memory_id(view.event_id(), &id),
                content: view.content().map(str::to_owned),
                author: view.author().map(str::to_owned),
                timestamp: view.timestamp(),
            });
        }
        Ok(out)
    }
}
