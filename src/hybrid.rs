//! Hybrid retrieval: BM25 and HNSW candidates fused by weighted reciprocal rank fusion
//! (Cormack, Clarke and Buettcher), rank constant 60, ranks from 1, ties by UUID. The
//! query is parsed and the results written by `crate::wire::query`.

use crate::engine::{Engine, ReadSnapshot};
use crate::error::{Error, Result};
use crate::filter::HitFilter;
use crate::keys::Namespace;
use crate::lexical::{Filter, KeywordQuery, DEFAULT_LIMIT, MAX_SEARCH_LIMIT};
use crate::record::{Episode, RecordView};
use crate::store::now_ms;
use crate::vector::VectorsRead;
use std::collections::HashMap;
use uuid::Uuid;

pub const RRF_K: f64 = 60.0;
pub const DEFAULT_SEMANTIC_WEIGHT: f64 = 0.5;
pub const DEFAULT_CANDIDATES: usize = 4;

pub use crate::embed::EmbeddingProvider;

#[derive(Clone, Debug, PartialEq)]
pub struct HybridQuery {
    pub text: String,
    pub vector: Option<Vec<f32>>,
    /// The model that made `vector` (`crate::vector::VectorSpace`): it must be the model of
    /// the namespace's vectors. `None`: the caller's, unnamed.
    pub vector_model: Option<String>,
    pub limit: usize,
    /// In [0, 1]; the lexical weight is `1 - semantic_weight`.
    pub semantic_weight: f64,
    /// Each channel retrieves `limit × candidates` (saturating) before fusion.
    pub candidates: usize,
    pub episode_type: Option<String>,
    pub tag: Option<String>,
    /// Which hits are returned; `min_score` applies to the fused score.
    pub hits: HitFilter,
}

impl HybridQuery {
    pub fn new(text: impl Into<String>) -> HybridQuery {
        HybridQuery {
            text: text.into(),
            vector: None,
            vector_model: None,
            limit: DEFAULT_LIMIT,
            semantic_weight: DEFAULT_SEMANTIC_WEIGHT,
            candidates: DEFAULT_CANDIDATES,
            episode_type: None,
            tag: None,
            hits: HitFilter::default(),
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !self.semantic_weight.is_finite() || !(0.0..=1.0).contains(&self.semantic_weight) {
            return Err(Error::invalid(format!(
                "`semantic_weight` must be a finite number from 0 to 1, got {}",
                self.semantic_weight
            )));
        }
        if self.limit > MAX_SEARCH_LIMIT {
            return Err(Error::invalid(format!("`limit` must be at most {MAX_SEARCH_LIMIT}")));
        }
        if self.candidates == 0 {
            return Err(Error::invalid("`candidates` must be a positive integer"));
        }
        self.hits.validate()?;
        if let Some(v) = &self.vector {
            crate::episodes::check_embedding(v)
                .map_err(|e| Error::invalid(e.message.replace("`embedding`", "`vector`")))?;
        }
        Ok(())
    }

    fn is_blank(&self) -> bool {
        !crate::embed::needs_vector(&self.text)
    }

    /// Does this query need a vector it does not have? Not for a zero limit, blank text or a
    /// zero semantic weight: the one rule every embedding path asks.
    pub fn wants_vector(&self) -> bool {
        self.vector.is_none() && self.limit > 0 && !self.is_blank() && self.semantic_weight > 0.0
    }
}

/// One fused result; `keyword_score` and `semantic_score` are the channels' rank
/// contributions `w / (60 + rank)` (0 when absent), not raw BM25 or similarity.
#[derive(Clone, Debug, PartialEq)]
pub struct HybridSearchResult {
    pub record: Episode,
    pub score: f64,
    pub keyword_score: f64,
    pub semantic_score: f64,
}

/// Weighted RRF over two rankings (best first). Returns `(id, score, keyword, semantic)`
/// best first, ties by ascending UUID.
pub fn fuse(lexical: &[Uuid], semantic: &[Uuid], w_lex: f64, w_sem: f64) -> Vec<(Uuid, f64, f64, f64)> {
    let mut acc: HashMap<Uuid, (f64, f64)> = HashMap::new();
    if w_lex > 0.0 {
        for (i, id) in lexical.iter().enumerate() {
            acc.entry(*id).or_default().0 = w_lex / (RRF_K + (i + 1) as f64);
        }
    }
    if w_sem > 0.0 {
        for (i, id) in semantic.iter().enumerate() {
            acc.entry(*id).or_default().1 = w_sem / (RRF_K + (i + 1) as f64);
        }
    }
    let mut out: Vec<(Uuid, f64, f64, f64)> = acc.into_iter().map(|(id, (k, s))| (id, k + s, k, s)).collect();
    out.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// One search's snapshot, its namespace's graph and the channels' weights
/// (`Engine::vector_channel`).
pub(crate) type VectorChannel<'e> = (ReadSnapshot<'e>, Option<VectorsRead>, f64, f64);

impl Engine {
    /// The snapshot of a search that fuses a vector channel (hybrid, recall), the
    /// namespace's graph when the search can use it, and the weights `(lexical, semantic)`.
    /// A cached graph is read-locked before the snapshot, so writes that would change it
    /// wait and the snapshot sees what it holds; else it is loaded from the snapshot. A
    /// `vector` of another dimension than the graph's, or made by another model than the
    /// namespace's vectors (`vector_model`), is INVALID_ARGUMENT. Semantic support
    /// means a live vector now, not a dimension recorded once: a namespace whose vectors
    /// were all deleted or expired fuses with lexical weight 1.
    pub(crate) fn vector_channel(
        &self,
        ns: &Namespace,
        vector: Option<&[f32]>,
        vector_model: Option<&str>,
        semantic_weight: f64,
        now: i64,
    ) -> Result<VectorChannel<'_>> {
        let semantic = vector.is_some() && semantic_weight > 0.0;
        let ticket = self.vectors.ticket(ns);
        let cached = if semantic { self.vectors.cached(ns) } else { None };
        let snap = self.read_snapshot()?;
        let vectors = match cached {
            Some(g) => Some(g),
            None if semantic => self.vectors.load(&self.store, &snap, ns, ticket)?,
            None => None,
        };
        if let (Some(ix), Some(v)) = (&vectors, vector) {
            let dim = ix.hnsw.dim();
            if v.len() != dim {
                return Err(Error::invalid(format!(
                    "`vector` has {} dimensions; this namespace's vectors have {dim}",
                    v.len()
                )));
            }
            let model = self.vectors.space(&self.store, &snap, ns)?.and_then(|s| s.model);
            if model.as_deref() != vector_model {
                return Err(Error::invalid(format!(
                    "`vector` is from {}, but this namespace's vectors are from {}: a namespace holds one \
                     model's vectors",
                    crate::vector::describe_model(vector_model),
                    crate::vector::describe_model(model.as_deref())
                )));
            }
        }
        let vectors = vectors.filter(|ix| ix.has_live(now));
        let (w_lex, w_sem) = match &vectors {
            Some(_) => (1.0 - semantic_weight, semantic_weight),
            None => (1.0, 0.0),
        };
        Ok((snap, vectors, w_lex, w_sem))
    }

    /// `Mnem::hybrid_search` (the public documentation is there).
    pub(crate) fn hybrid_search(&self, ns: &Namespace, q: &HybridQuery) -> Result<Vec<HybridSearchResult>> {
        q.validate()?;
        if q.limit == 0 || q.is_blank() {
            return Ok(Vec::new());
        }
        let pool = q.limit.saturating_mul(q.candidates);
        // One snapshot and one visibility time for both channels and the records.
        let now = now_ms();
        let (snap, vectors, w_lex, w_sem) =
            self.vector_channel(ns, q.vector.as_deref(), q.vector_model.as_deref(), q.semantic_weight, now)?;
        let prefix = ns.prefix();
        let semantic: Vec<Uuid> = match (vectors, &q.vector) {
            (Some(ix), Some(v)) if w_sem > 0.0 => {
                let filter = Filter { episode_type: q.episode_type.as_deref(), tag: q.tag.as_deref() };
                let filtered = q.episode_type.is_some() || q.tag.is_some() || q.hits.reads_records();
                let keep = |id: &Uuid| {
                    !filtered
                        || matches!(self.store.get_episode_raw(&snap, &prefix, id), Ok(Some(b))
                            if RecordView::parse(*id, &b).is_ok_and(|v| filter.accepts(&v) && q.hits.accepts(&v)))
                };
                ix.nearest(v, pool, now, keep).into_iter().map(|(id, _)| id).collect()
                // The read lock ends here, before the keyword channel takes any other lock.
            }
            _ => Vec::new(),
        };
        let lexical: Vec<Uuid> = if w_lex > 0.0 {
            let kq = KeywordQuery {
                text: q.text.clone(),
                limit: pool,
                episode_type: q.episode_type.clone(),
                tag: q.tag.clone(),
                hits: q.hits.on_records(),
            };
            self.keyword_ranked(&snap, ns, &kq, now)?.into_iter().map(|(_, id)| id).collect()
        } else {
            Vec::new()
        };
        let mut out = Vec::with_capacity(q.limit);
        let mut fused = fuse(&lexical, &semantic, w_lex, w_sem);
        if let Some(cut) = fused.iter().position(|r| !q.hits.scores(r.1)) {
            fused.truncate(cut);
        }
        // The records of the fused order, `limit` at a time (one batched read each: the
        // channels skip what is not visible, so the first batch nearly always suffices).
        for batch in fused.chunks(q.limit.max(1)) {
            let ids: Vec<Uuid> = batch.iter().map(|r| r.0).collect();
            for (&(id, score, k, s), bytes) in batch.iter().zip(self.store.get_episodes_raw(&snap, &prefix, &ids)?) {
                let Some(bytes) = bytes else { continue };
                let record = Episode::decode(id, &bytes)?;
                if record.is_visible(now) && out.len() < q.limit {
                    out.push(HybridSearchResult { record, score, keyword_score: k, semantic_score: s });
                }
            }
            if out.len() == q.limit {
                break;
            }
        }
        Ok(out)
    }

    /// `Mnem::hybrid_search_with` (the public documentation is there).
    pub(crate) fn hybrid_search_with(
        &self,
        ns: &Namespace,
        q: &HybridQuery,
        provider: &dyn EmbeddingProvider,
    ) -> Result<Vec<HybridSearchResult>> {
        q.validate()?;
        if q.limit == 0 || q.is_blank() {
            return Ok(Vec::new());
        }
        let mut q = q.clone();
        if q.wants_vector() {
            q.vector_model = crate::embed::query_model(provider, q.vector_model.take())?;
            q.vector = crate::embed::run(provider, &[&q.text])?.pop();
        }
        self.hybrid_search(ns, &q)
    }
}
