//! Writing episodes: revisions, expiry and tombstones (`crate::wire::episode` parses the
//! `mnem_put_episodes` lines).

use crate::adk::{memory_id, MEMORY_TYPE};
use crate::derived::Placement;
use crate::error::{Error, Result};
use crate::keys::{self, Namespace};
use crate::record::{Episode, RecordView, MAX_RECORD_BYTES};
use crate::store::{now_ms, Snapshot, Store, CF_ADK, CF_EPISODES};
use rocksdb::WriteBatch;
use std::collections::HashMap;
use uuid::Uuid;

/// The type given to episodes written without `episode_type`.
pub const DEFAULT_EPISODE_TYPE: &str = "episode";

/// When an episode stops being visible.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expiry {
    Never,
    At(i64),
    /// Milliseconds after the write.
    Ttl(i64),
}

impl Expiry {
    pub fn resolve(self, now: i64) -> Result<Option<i64>> {
        match self {
            Expiry::Never => Ok(None),
            Expiry::At(t) => Ok(Some(t)),
            Expiry::Ttl(ttl) => now.checked_add(ttl).map(Some).ok_or_else(|| Error::invalid("`ttl_ms` is too large")),
        }
    }
}

/// An episode as a caller writes it: everything but the computed fields.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeInput {
    pub id: Option<Uuid>,
    pub episode_type: String,
    pub tags: Vec<String>,
    pub primary: String,
    pub secondary: String,
    pub context: String,
    pub metadata: Option<String>,
    pub author: Option<String>,
    pub session_id: Option<String>,
    pub event_id: Option<String>,
    pub timestamp: Option<f64>,
    pub expiry: Expiry,
    pub content: Option<String>,
    pub embedding: Option<Vec<f32>>,
}

impl Default for EpisodeInput {
    fn default() -> Self {
        EpisodeInput {
            id: None,
            episode_type: DEFAULT_EPISODE_TYPE.to_string(),
            tags: Vec::new(),
            primary: String::new(),
            secondary: String::new(),
            context: String::new(),
            metadata: None,
            author: None,
            session_id: None,
            event_id: None,
            timestamp: None,
            expiry: Expiry::Never,
            content: None,
            embedding: None,
        }
    }
}

/// The most dimensions an embedding may have: above today's largest embedding models
/// (a few thousand), while bounding what one vector costs the namespace's index.
pub const MAX_DIMENSION: usize = 16_384;

/// Check an embedding and return its dimension.
pub fn check_embedding(v: &[f32]) -> Result<u32> {
    if v.is_empty() {
        return Err(Error::invalid("`embedding` is empty"));
    }
    if v.len() > MAX_DIMENSION {
        return Err(Error::invalid(format!(
            "`embedding` has {} dimensions; at most {MAX_DIMENSION} are accepted",
            v.len()
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(Error::invalid("`embedding` has a value that is not a finite f32"));
    }
    if v.iter().all(|x| *x == 0.0) {
        return Err(Error::invalid("`embedding` is the zero vector, which has no direction for cosine similarity"));
    }
    Ok(v.len() as u32)
}

/// The parts of an episode's current revision that its next revision carries on.
struct Prior {
    revision: u64,
    created_at_ms: i64,
    deleted: bool,
    episode_type: String,
}

/// Read-modify-write state of one write batch: episodes already changed in this batch are
/// seen by later lines, so two lines with one id yield two revisions.
pub(crate) struct Pending<'s> {
    store: &'s Store,
    snap: Snapshot<'s>,
    prefix: Vec<u8>,
    pub changed: HashMap<Uuid, Episode>,
    order: Vec<Uuid>,
    /// `delete_memory` tombstones looked up so far, by memory id.
    tombstones: HashMap<String, bool>,
}

impl<'s> Pending<'s> {
    pub fn new(store: &'s Store, ns: &Namespace) -> Pending<'s> {
        Pending {
            store,
            snap: store.snapshot(),
            prefix: ns.prefix(),
            changed: HashMap::new(),
            order: Vec::new(),
            tombstones: HashMap::new(),
        }
    }

    pub fn snapshot(&self) -> &Snapshot<'s> {
        &self.snap
    }

    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// What a new revision of `id` needs from the current one (changed in this batch, else
    /// stored): only the header and type are read, not the text, content or vector.
    fn prior(&self, id: &Uuid) -> Result<Option<Prior>> {
        if let Some(e) = self.changed.get(id) {
            let p = Prior {
                revision: e.revision,
                created_at_ms: e.created_at_ms,
                deleted: e.deleted,
                episode_type: e.episode_type.clone(),
            };
            return Ok(Some(p));
        }
        match self.store.get_episode_raw(&self.snap, &self.prefix, id)? {
            Some(bytes) => {
                let v = RecordView::parse(*id, &bytes)?;
                let p = Prior {
                    revision: v.revision,
                    created_at_ms: v.created_at_ms,
                    deleted: v.deleted(),
                    episode_type: v.episode_type.to_string(),
                };
                Ok(Some(p))
            }
            None => Ok(None),
        }
    }

    pub fn stage(&mut self, e: Episode) {
        if !self.changed.contains_key(&e.id) {
            self.order.push(e.id);
        }
        self.changed.insert(e.id, e);
    }

    /// Was `memory_id` removed by `delete_memory`? Its tombstone blocks every later write of
    /// an ADK memory with that id, whatever the write path.
    pub fn is_tombstoned(&mut self, memory_id: &str) -> Result<bool> {
        if let Some(&t) = self.tombstones.get(memory_id) {
            return Ok(t);
        }
        let key = keys::adk_key(&self.prefix, keys::adk_tag::TOMBSTONE, memory_id.as_bytes());
        let t = self.store.get_cf(&self.snap, CF_ADK, &key)?.is_some();
        self.tombstones.insert(memory_id.to_string(), t);
        Ok(t)
    }

    /// Create or update `input`; returns the id.
    pub fn upsert(&mut self, input: EpisodeInput, now: i64) -> Result<Uuid> {
        // A UUID made here is new: no earlier revision to look up.
        let fresh = input.id.is_none();
        let id = input.id.unwrap_or_else(Uuid::now_v7);
        if input.episode_type == MEMORY_TYPE {
            let memory_id = memory_id(input.event_id.as_deref(), &id);
            if self.is_tombstoned(&memory_id)? {
                return Err(Error::invalid(format!(
                    "memory id {memory_id:?} was deleted by delete_memory; a deleted memory id is never stored again"
                )));
            }
        }
        let prev = if fresh { None } else { self.prior(&id)? };
        let (revision, created) = match &prev {
            Some(p) if p.deleted => {
                return Err(Error::invalid(format!("episode {id} was deleted; deleted ids are never reused")))
            }
            Some(p) => (p.revision + 1, p.created_at_ms),
            None => (1, now),
        };
        let episode = Episode {
            id,
            revision,
            deleted: false,
            episode_type: input.episode_type,
            tags: input.tags,
            primary: input.primary,
            secondary: input.secondary,
            context: input.context,
            metadata: input.metadata.unwrap_or_else(|| "{}".to_string()),
            author: input.author,
            session_id: input.session_id,
            event_id: input.event_id,
            timestamp: input.timestamp,
            created_at_ms: created,
            updated_at_ms: now,
            expires_at_ms: input.expiry.resolve(now)?,
            content: input.content,
            embedding: input.embedding,
        };
        let size = episode.encoded_len();
        if size > MAX_RECORD_BYTES {
            return Err(Error::invalid(format!(
                "the episode is {size} bytes stored; at most {MAX_RECORD_BYTES} are allowed"
            )));
        }
        self.stage(episode);
        Ok(id)
    }

    /// Tombstone `id`: a new revision that keeps only identity and bookkeeping, so deleted
    /// text, content and vectors are gone from the store. False when absent or deleted.
    pub fn tombstone(&mut self, id: &Uuid, now: i64) -> Result<bool> {
        let Some(prev) = self.prior(id)? else { return Ok(false) };
        if prev.deleted {
            return Ok(false);
        }
        self.stage(Episode {
            id: *id,
            revision: prev.revision + 1,
            deleted: true,
            episode_type: prev.episode_type,
            tags: Vec::new(),
            primary: String::new(),
            secondary: String::new(),
            context: String::new(),
            metadata: "{}".to_string(),
            author: None,
            session_id: None,
            event_id: None,
            timestamp: None,
            created_at_ms: prev.created_at_ms,
            updated_at_ms: now,
            expires_at_ms: None,
            content: None,
            embedding: None,
        });
        Ok(true)
    }

    /// Add every staged episode to `batch`, in staging order.
    pub fn write_into(&self, batch: &mut WriteBatch) {
        let cf = self.store.cf(CF_EPISODES);
        for id in &self.order {
            let e = &self.changed[id];
            batch.put_cf(cf, keys::episode_key(&self.prefix, id), e.encode());
        }
    }

    /// The staged episodes in staging order.
    pub fn staged(&self) -> impl Iterator<Item = &Episode> {
        self.order.iter().map(|id| &self.changed[id])
    }
}

/// Does the stored episode hold exactly what writing `input` would store (every field the
/// caller sets, expiry included)? A relative TTL never matches: it would move the expiry.
pub(crate) fn holds(view: &RecordView<'_>, input: &EpisodeInput) -> bool {
    let expiry_same = match input.expiry {
        Expiry::Never => view.expires_at_ms().is_none(),
        Expiry::At(t) => view.expires_at_ms() == Some(t),
        Expiry::Ttl(_) => false,
    };
    !view.deleted()
        && expiry_same
        && view.episode_type == input.episode_type
        && view.tags().eq(input.tags.iter().map(String::as_str))
        && view.primary == input.primary
        && view.secondary == input.secondary
        && view.context == input.context
        && view.metadata == input.metadata.as_deref().unwrap_or("{}")
        && view.author() == input.author.as_deref()
        && view.session_id() == input.session_id.as_deref()
        && view.event_id() == input.event_id.as_deref()
        && view.timestamp().map(f64::to_bits) == input.timestamp.map(f64::to_bits)
        && view.content() == input.content.as_deref()
        && view.embedding().map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            == input.embedding.as_ref().map(|v| v.iter().map(|x| x.to_bits()).collect())
}

impl crate::engine::Engine {
    /// `Mnem::put_episodes` (the public documentation is there).
    pub(crate) fn put_episodes(&self, ns: &Namespace, inputs: Vec<EpisodeInput>) -> Result<Vec<Uuid>> {
        self.store.check_writable()?;
        let _w = self.write_lock.lock();
        let mut pending = Pending::new(&self.store, ns);
        let now = now_ms();
        let mut dim = self.vectors.dimension(&self.store, pending.snapshot(), ns)?;
        let mut ids = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            let line = i + 1;
            if let Some(v) = &input.embedding {
                let d = check_embedding(v).map_err(|e| e.context(format!("line {line}")))?;
                match dim {
                    Some(expected) if expected != d => {
                        return Err(Error::invalid(format!(
                            "line {line}: `embedding` has {d} dimensions; this namespace's vectors have {expected}"
                        )))
                    }
                    _ => dim = Some(d),
                }
            }
            ids.push(pending.upsert(input, now).map_err(|e| e.context(format!("line {line}")))?);
        }
        let mut batch = WriteBatch::default();
        self.vectors.stage_dimension(&self.store, &mut batch, ns, dim);
        self.commit(&pending, batch, &Placement::default())?;
        Ok(ids)
    }

    /// `Mnem::delete_episodes` (the public documentation is there).
    pub(crate) fn delete_episodes(&self, ns: &Namespace, ids: &[Uuid]) -> Result<u64> {
        self.store.check_writable()?;
        let _w = self.write_lock.lock();
        let mut pending = Pending::new(&self.store, ns);
        let now = now_ms();
        let mut deleted = 0;
        for id in ids {
            deleted += u64::from(pending.tombstone(id, now)?);
        }
        if deleted == 0 {
            return Ok(0);
        }
        self.commit(&pending, WriteBatch::default(), &Placement::default())?;
        Ok(deleted)
    }

    /// `Mnem::get_episode` (the public documentation is there).
    pub(crate) fn get_episode(&self, ns: &Namespace, id: &Uuid) -> Result<Option<Episode>> {
        let snap = self.store.snapshot();
        match self.store.get_episode_raw(&snap, &ns.prefix(), id)? {
            Some(bytes) => {
                let e = Episode::decode(*id, &bytes)?;
                Ok(e.is_visible(now_ms()).then_some(e))
            }
            None => Ok(None),
        }
    }
}
