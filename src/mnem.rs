//! `Mnem`: the public API, one method per operation, each delegating to the module that
//! does it (`adk`, `episodes`, `lexical`, `hybrid`) through the `engine`; the JSON that
//! some methods take or return is read and written by `wire`.

use crate::adk::{EventOptions, RecallQuery};
use crate::embed::needs_vector;
use crate::engine::Engine;
pub use crate::engine::Stats;
use crate::error::{Error, Result};
use crate::hybrid::{EmbeddingProvider, HybridQuery, HybridSearchResult};
use crate::keys::Namespace;
use crate::lexical::{KeywordQuery, KeywordSearchResult, LexicalPage, LexicalQuery};
use crate::record::Episode;
use crate::store::{now_ms, OpenOptions, Store};
use crate::wire;
use crate::EpisodeInput;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use uuid::Uuid;

/// The time ADK gives an event without a timestamp: now, in seconds.
fn now_secs() -> f64 {
    now_ms() as f64 / 1000.0
}

/// The whole library behind one handle. Every method is safe to call from many threads.
pub struct Mnem {
    engine: Engine,
    /// The registered embedder (`set_embedder`); each call takes its own reference, so a
    /// change applies to the calls that start after it.
    embedder: RwLock<Option<Arc<dyn EmbeddingProvider>>>,
    /// Counts `set_embedder` calls: part of the key of the C ABI's kept answers.
    embedder_changes: AtomicU64,
    /// How many earlier events of its session an ADK event is embedded with
    /// (`crate::embed::event_text`); `OpenOptions::embed_context`.
    embed_context: usize,
}

impl Mnem {
    /// Open (or create) a store; `path` is a directory or `:memory:`. A store of an older
    /// format gets its indexes built here, once (`Stats::indexes_built` says how many).
    ///
    /// With `builtin_embedder` the built-in model is loaded first (a failure opens nothing)
    /// and registered as the store's embedder.
    pub fn open(path: &str, opts: OpenOptions) -> Result<Mnem> {
        Mnem::open_engine(opts, |o| crate::upgrade::open(path, o))
    }

    /// The embedder `opts` asks for, loaded before `open` opens the engine (so a missing model
    /// opens nothing), then the handle over that engine with it registered: the one path of
    /// `open` and `open_view`.
    pub(crate) fn open_engine(opts: OpenOptions, open: impl FnOnce(OpenOptions) -> Result<Engine>) -> Result<Mnem> {
        let builtin =
            if opts.builtin_embedder { Some(crate::embed::builtin::shared(opts.model_dir.as_deref())?) } else { None };
        let default_context = if builtin.is_some() { crate::embed::BUILTIN_EVENT_CONTEXT } else { 0 };
        let embed_context = opts.embed_context.unwrap_or(default_context);
        let mut m = Mnem::from_engine(open(opts)?);
        m.embed_context = embed_context;
        if let Some(b) = builtin {
            m.set_embedder(Some(b));
        }
        Ok(m)
    }

    pub(crate) fn from_engine(engine: Engine) -> Mnem {
        Mnem { engine, embedder: RwLock::new(None), embedder_changes: AtomicU64::new(0), embed_context: 0 }
    }

    // ---- the embedder (`embed`) ----

    /// Register `embedder` (None removes it). With one, writes may ask for vectors
    /// (`EpisodeInput::embed`), ADK writes store each event's vector with it, and hybrid
    /// search and recall embed a query that has no vector. It is called from the threads
    /// that call mnem, concurrently, and never under the writers' lock.
    pub fn set_embedder(&self, embedder: Option<Arc<dyn EmbeddingProvider>>) {
        *self.embedder.write() = embedder;
        self.embedder_changes.fetch_add(1, Ordering::SeqCst);
    }

    /// The registered embedder, if any.
    pub fn embedder(&self) -> Option<Arc<dyn EmbeddingProvider>> {
        self.embedder.read().clone()
    }

    /// How many times `set_embedder` was called (answers kept by the C ABI depend on it).
    pub fn embedder_changes(&self) -> u64 {
        self.embedder_changes.load(Ordering::SeqCst)
    }

    /// The engine, for the operations defined outside this file (`crate::admin`).
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn store(&self) -> &Store {
        &self.engine.store
    }

    /// Make every acknowledged write durable.
    pub fn flush(&self) -> Result<()> {
        self.engine.store.flush()
    }

    /// Tests only: move postings written behind into the index once `bytes` of them wait
    /// (4 MiB otherwise), so that moves run often; `usize::MAX` moves them only when store
    /// management or the close needs it, so that every search reads them from memory.
    #[doc(hidden)]
    pub fn set_postings_limit_for_test(&self, bytes: usize) {
        self.engine.set_postings_limit(bytes);
    }

    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// The statistics as the JSON object `mnem_stats` writes.
    pub fn stats_json(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::admin::write_stats(&mut out, &self.stats());
        out
    }

    // ---- the ADK memory seam (`adk`) ----

    /// `add_session_to_memory`: replace the bucket of `session_id` with the session's events
    /// (those with content and parts, not tombstoned); the bucket keeps its position.
    /// Returns the number of events the bucket now holds.
    pub fn add_session(&self, ns: &Namespace, session_id: &str, events_jsonl: &str) -> Result<u64> {
        // Before parsing: a read-only store refuses every write, whatever the input.
        self.engine.store.check_writable()?;
        let mut events = wire::adk::parse_events(events_jsonl, now_secs())?;
        if let Some(p) = self.embedder() {
            self.engine.embed_events(ns, session_id, &mut events, false, self.embed_context, &*p)?;
        }
        self.engine.add_session(ns, session_id, &events)
    }

    /// `add_events_to_memory`: append the events whose ids are neither in the bucket nor
    /// earlier in the batch nor tombstoned (first write wins). Returns how many were added.
    pub fn add_events(
        &self,
        ns: &Namespace,
        session_id: &str,
        events_jsonl: &str,
        custom_metadata: &str,
    ) -> Result<u64> {
        self.engine.store.check_writable()?;
        let opts = EventOptions::parse(custom_metadata)?;
        let mut events = wire::adk::parse_events(events_jsonl, now_secs())?;
        if let Some(p) = self.embedder() {
            let bucket = if session_id.is_empty() { crate::adk::UNKNOWN_SESSION_ID } else { session_id };
            self.engine.embed_events(ns, bucket, &mut events, true, self.embed_context, &*p)?;
        }
        self.engine.add_events(ns, session_id, &events, &opts)
    }

    /// `delete_memory`: remove every event (and ADK memory) reported as `memory_id` from
    /// every bucket of the namespace and tombstone the id for good. An empty id is a no-op;
    /// an id that removes nothing records no tombstone. Returns how many were removed.
    pub fn delete_memory(&self, ns: &Namespace, memory_id: &str) -> Result<u64> {
        self.engine.delete_memory(ns, memory_id)
    }

    /// The ids of the events stored in a session's bucket, in order, or None when the
    /// namespace has no such bucket (ADK's `_session_events[user][session_id]`).
    pub fn session_event_ids(&self, ns: &Namespace, session_id: &str) -> Result<Option<Vec<String>>> {
        self.engine.session_event_ids(ns, session_id)
    }

    /// `search_memory`: ADK's `SearchMemoryResponse` as JSON, ranked like google-adk's
    /// `InMemoryMemoryService`. The index and the records are read from one snapshot.
    pub fn search(&self, ns: &Namespace, query: &str) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(1024);
        wire::adk::write_memories(&mut out, &self.engine.search(ns, query)?);
        Ok(out)
    }

    /// `mnem_recall`: `search` with semantic recall, as `SearchMemoryResponse` JSON. ADK's
    /// ranking and the nearest vectors of the namespace's ADK events and memories, fused by
    /// weighted RRF (`hybrid::fuse`). Without `q.vector` the registered embedder embeds the
    /// text (when the rule of `RecallQuery::wants_vector` says so); with neither, or with no
    /// live vector in the namespace, the answer is `search`'s.
    pub fn recall(&self, ns: &Namespace, q: &RecallQuery) -> Result<Vec<u8>> {
        q.validate()?;
        let mut q = q.clone();
        if q.wants_vector() {
            if let Some(p) = self.embedder() {
                q.vector_model = crate::embed::query_model(&*p, q.vector_model.take())?;
                q.vector = crate::embed::run(&*p, &[&q.text])?.pop();
            }
        }
        let mut out = Vec::with_capacity(1024);
        wire::adk::write_memories(&mut out, &self.engine.recall(ns, &q)?);
        Ok(out)
    }

    // ---- episodes (`episodes`) ----

    /// `mnem_put_episodes`: create or update every episode of the batch atomically; returns
    /// the ids in input order.
    /// Lines with `embed` get their vector from the registered embedder first, outside the
    /// writers' lock; an embedder failure writes nothing.
    pub fn put_episodes(&self, ns: &Namespace, inputs: Vec<EpisodeInput>) -> Result<Vec<Uuid>> {
        self.put_episode_lines(ns, inputs, None)
    }

    /// `put_episodes` of parsed lines: `lines[i]` is the line number of `inputs[i]` in the
    /// caller's text (blank lines counted), for the messages that name a line; `None`: the
    /// position, from 1.
    pub(crate) fn put_episode_lines(
        &self,
        ns: &Namespace,
        mut inputs: Vec<EpisodeInput>,
        lines: Option<&[usize]>,
    ) -> Result<Vec<Uuid>> {
        let line_of = |i: usize| lines.map_or(i + 1, |l| l[i]);
        let wanted: Vec<usize> = (0..inputs.len()).filter(|&i| inputs[i].embed).collect();
        if let Some(&first) = wanted.first() {
            self.engine.store.check_writable()?;
            let Some(p) = self.embedder() else {
                return Err(Error::invalid(format!(
                    "line {}: `embed` is true but no embedder is registered on the store",
                    line_of(first)
                )));
            };
            let mut texts = Vec::with_capacity(wanted.len());
            let mut with_text = Vec::with_capacity(wanted.len());
            for &i in &wanted {
                let e = &mut inputs[i];
                if e.embedding.is_some() {
                    return Err(Error::invalid(format!("line {}: give `embedding` or `embed`, not both", line_of(i))));
                }
                e.embed = false;
                // Blank text has no vector (`embed::needs_vector`): such a line is stored
                // without one, so callers need not apply the rule themselves.
                let text = crate::embed::episode_text(&e.primary, &e.secondary, &e.context);
                if needs_vector(&text) {
                    texts.push(text);
                    with_text.push(i);
                }
            }
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let vectors = crate::embed::run(&*p, &refs)?;
            for (i, v) in with_text.into_iter().zip(vectors) {
                inputs[i].embedding = Some(v);
                inputs[i].embedding_model = p.model().map(str::to_owned);
            }
        }
        self.engine.put_episodes(ns, inputs, &line_of)
    }

    /// `mnem_delete_episodes`: tombstone the episodes; unknown and already deleted ids are
    /// skipped. Returns how many were deleted.
    pub fn delete_episodes(&self, ns: &Namespace, ids: &[Uuid]) -> Result<u64> {
        self.engine.delete_episodes(ns, ids)
    }

    /// The visible episode `id`, if any.
    pub fn get_episode(&self, ns: &Namespace, id: &Uuid) -> Result<Option<Episode>> {
        self.engine.get_episode(ns, id)
    }

    // ---- lexical retrieval (`lexical`) ----

    /// `search_memory_lexical` (`mnem_lexical_page`): one bounded BM25 page over one
    /// snapshot, a UUID-ordered scan that reports its corpus statistics.
    pub fn search_memory_lexical(&self, ns: &Namespace, q: &LexicalQuery) -> Result<LexicalPage> {
        self.engine.search_memory_lexical(ns, q)
    }

    /// `keyword_search`: BM25 over every visible record of the namespace, from its index.
    /// Text without terms (blank, punctuation) or a zero limit returns no results.
    pub fn keyword_search(&self, ns: &Namespace, q: &KeywordQuery) -> Result<Vec<KeywordSearchResult>> {
        self.engine.keyword_search_at(ns, q, crate::store::now_ms())
    }

    /// `keyword_search` at a given visibility time (tests compare it with the scan).
    #[doc(hidden)]
    pub fn keyword_search_at(&self, ns: &Namespace, q: &KeywordQuery, now: i64) -> Result<Vec<KeywordSearchResult>> {
        self.engine.keyword_search_at(ns, q, now)
    }

    /// `keyword_search` answered by scanning every record instead of the index: the oracle
    /// the index is tested against. Not for production use: its cost grows with the namespace.
    #[doc(hidden)]
    pub fn keyword_search_by_scan(
        &self,
        ns: &Namespace,
        q: &KeywordQuery,
        now: i64,
    ) -> Result<Vec<KeywordSearchResult>> {
        self.engine.keyword_search_by_scan(ns, q, now)
    }

    /// Substring search (`mnem_substring_search`): visible records whose primary, secondary
    /// or context text contains `text` (both lowercased), in UUID order, at most `limit`.
    pub fn search_episodes(&self, ns: &Namespace, q: &KeywordQuery) -> Result<Vec<Episode>> {
        self.engine.search_episodes(ns, q)
    }

    // ---- hybrid retrieval (`hybrid`) ----

    /// Hybrid search with the query vector in `q.vector`; without one, the registered
    /// embedder (if any) embeds the text when the search can use a vector (see
    /// `hybrid_search_with`); with neither, the lexical channel alone ranks.
    pub fn hybrid_search(&self, ns: &Namespace, q: &HybridQuery) -> Result<Vec<HybridSearchResult>> {
        match self.embedder() {
            Some(p) if q.vector.is_none() => self.engine.hybrid_search_with(ns, q, &*p),
            _ => self.engine.hybrid_search(ns, q),
        }
    }

    /// Hybrid search that asks `provider` for the query vector, only when it is needed
    /// (`HybridQuery::wants_vector`): never for a zero limit, blank text (`embed::needs_vector`)
    /// or a zero semantic weight.
    pub fn hybrid_search_with(
        &self,
        ns: &Namespace,
        q: &HybridQuery,
        provider: &dyn EmbeddingProvider,
    ) -> Result<Vec<HybridSearchResult>> {
        self.engine.hybrid_search_with(ns, q, provider)
    }
}
