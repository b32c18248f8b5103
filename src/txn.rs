//! Writes: the writers' lock (`Writers`) and the one write transaction (`WriteTxn`). Every
//! write of the store goes through them: an operation locks the writers, begins a transaction
//! on one namespace (one snapshot, one time), stages its episodes (`Pending`: revisions,
//! expiry, tombstones, `delete_memory` tombstones honoured) and any other keys into the
//! transaction's batch, and commits: the staged records and every index's changes for them
//! go to the store in one atomic batch (`Engine::commit_staged`).

use crate::adk::event::{memory_id, MEMORY_TYPE};
use crate::adk::state::AdkState;
use crate::derived::{IndexWrite, Placement};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, Namespace};
use crate::record::{Episode, EpisodeInput, RecordView, MAX_RECORD_BYTES};
use crate::store::{now_ms, Batch, Cf, NsLock, Snapshot, Store};
use crate::vector::VectorIndex;
use parking_lot::MutexGuard;
use std::collections::HashMap;
use uuid::Uuid;

/// Stored episodes indexed per batch when a transaction writes many (`WriteTxn::commit_built`):
/// bounds the batch's memory.
pub(crate) const CHUNK: usize = 1000;

/// The kinds of episode (type and tags) whose BM25 counters a write reads ahead
/// (`WriteTxn::read_ahead`); a batch of more kinds reads the rest when it needs them.
const MAX_KINDS_AHEAD: usize = 16;

/// The writers' lock on an open store: each write reads, decides and commits without another
/// writer in between (revisions, dedup, bucket order and index counters depend on it).
/// Reads never take it.
pub(crate) struct Writers<'e> {
    pub engine: &'e Engine,
    _lock: MutexGuard<'e, ()>,
}

impl<'e> Writers<'e> {
    /// Refuse a read-only store, let the searches running now finish (`crate::priority`),
    /// then wait for the writers before.
    pub fn lock(engine: &'e Engine) -> Result<Writers<'e>> {
        engine.store.check_writable()?;
        engine.searches.yield_to_running();
        Ok(Writers { engine, _lock: engine.write_lock.lock() })
    }

    /// Begin a write to `ns`: the namespace held against other processes' writers
    /// (`store::Backend::lock_namespace`), then one snapshot of the store, one write time.
    pub fn begin(&self, ns: &Namespace) -> Result<WriteTxn<'_>> {
        self.begin_at(&ns.prefix())
    }

    /// `begin`, for the namespace whose key prefix is `prefix`.
    pub fn begin_at(&self, prefix: &[u8]) -> Result<WriteTxn<'_>> {
        let lock = self.engine.store.lock_namespace(prefix)?;
        Ok(WriteTxn {
            engine: self.engine,
            episodes: Pending::new(&self.engine.store, prefix),
            batch: Batch::default(),
            placement: Placement::default(),
            now: now_ms(),
            lock,
        })
    }

    /// Write the postings held behind earlier writes in place (`store::Backend::settle`), for
    /// store management that works on key ranges.
    pub fn settle(&self) -> Result<()> {
        self.engine.settle()
    }
}

/// One write to one namespace, under the writers' lock: the episodes staged, the other keys
/// the write changes (ADK buckets and order, vector dimensions), and where ADK events sit.
/// Dropped without `commit`, it writes nothing.
pub(crate) struct WriteTxn<'w> {
    engine: &'w Engine,
    pub episodes: Pending<'w>,
    pub batch: Batch,
    pub placement: Placement,
    /// The write's time (revisions' `updated_at_ms`, expiry).
    pub now: i64,
    /// Taken before the snapshot; every batch of the transaction commits through it.
    lock: NsLock<'w>,
}

impl<'w> WriteTxn<'w> {
    pub fn store(&self) -> &'w Store {
        &self.engine.store
    }

    /// The snapshot the write decides from (taken under the writers' lock).
    pub fn snapshot(&self) -> &Snapshot<'w> {
        self.episodes.snapshot()
    }

    pub fn prefix(&self) -> &[u8] {
        self.episodes.prefix()
    }

    /// Read ahead, in one round trip where the store is remote (`store::View::prefetch`), what
    /// this write reads whatever its episodes hold: the vector space and graph header, the
    /// BM25 counters of each of `kinds` (episode type and tags; the first `MAX_KINDS_AHEAD`
    /// distinct ones), and `more`.
    pub fn read_ahead<'k>(
        &self,
        kinds: impl IntoIterator<Item = (&'k str, &'k [String])>,
        more: impl IntoIterator<Item = (Cf, Vec<u8>)>,
    ) -> Result<()> {
        let prefix = self.prefix();
        let mut keys: Vec<(Cf, Vec<u8>)> = VectorIndex::write_reads(prefix).into();
        keys.extend(more);
        let mut seen: Vec<(&str, &[String])> = Vec::new();
        for kind in kinds {
            if seen.len() == MAX_KINDS_AHEAD {
                break;
            }
            if !seen.contains(&kind) {
                seen.push(kind);
                keys.extend(crate::lexical::index::stats_keys(prefix, kind.0, kind.1));
            }
        }
        self.engine.store.prefetch(self.snapshot(), &keys)
    }

    /// Commit the staged episodes and `batch` with every index's changes, atomically.
    pub fn commit(mut self) -> Result<()> {
        self.episodes.write_into(&mut self.batch);
        let staged: Vec<&Episode> = self.episodes.staged().collect();
        let ctx = IndexWrite::new(&self.engine.store, self.episodes.snapshot(), self.episodes.prefix(), now_ms());
        self.engine.commit_staged(&ctx, &staged, self.batch, &self.placement, &self.lock)
    }

    /// Commit a chunk of episodes built elsewhere (an import's records, or, `records`
    /// false, an older store's stored records being indexed; callers hold at most `CHUNK` at
    /// once) with their index changes and what `batch` holds, in one batch. Each chunk is
    /// indexed from a fresh snapshot, which sees the index keys the chunks before it wrote.
    /// Tombstones are written but not indexed. With no episodes, what `batch` holds is
    /// written, if anything. The transaction stays open for more.
    pub fn commit_built(&mut self, built: &[Episode], records: bool) -> Result<()> {
        let store = &self.engine.store;
        let mut batch = std::mem::take(&mut self.batch);
        if built.is_empty() {
            return if batch.is_empty() { Ok(()) } else { self.lock.write(batch) };
        }
        let prefix = self.episodes.prefix();
        if records {
            for e in built {
                batch.put(Cf::Episodes, keys::episode_key(prefix, &e.id), e.encode());
            }
        }
        let staged: Vec<&Episode> = built.iter().filter(|e| !e.deleted).collect();
        let snap = store.snapshot_without_postings();
        let ctx = IndexWrite::new(store, &snap, prefix, now_ms());
        self.engine.commit_staged(&ctx, &staged, batch, &self.placement, &self.lock)
    }
}

/// The parts of an episode's current revision that its next revision carries on.
#[derive(Clone)]
struct Prior {
    revision: u64,
    created_at_ms: i64,
    deleted: bool,
    episode_type: String,
}

impl Prior {
    fn of(v: &RecordView<'_>) -> Result<Prior> {
        Ok(Prior {
            revision: v.revision,
            created_at_ms: v.created_at_ms,
            deleted: v.deleted(),
            episode_type: v.episode_type.to_string(),
        })
    }
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
    /// Stored revisions read ahead (`prefetch`), by id: `None` when absent.
    known: HashMap<Uuid, Option<Prior>>,
}

impl<'s> Pending<'s> {
    pub fn new(store: &'s Store, prefix: &[u8]) -> Pending<'s> {
        Pending {
            store,
            snap: store.snapshot_without_postings(),
            prefix: prefix.to_vec(),
            changed: HashMap::new(),
            order: Vec::new(),
            tombstones: HashMap::new(),
            known: HashMap::new(),
        }
    }

    /// Read what `upsert` and `tombstone` will need of these ids' stored revisions, at once:
    /// a write of many lines asks the store once, not once per line.
    pub fn prefetch(&mut self, ids: impl Iterator<Item = Uuid>) -> Result<()> {
        let mut ids: Vec<Uuid> =
            ids.filter(|id| !self.changed.contains_key(id) && !self.known.contains_key(id)).collect();
        ids.sort_unstable();
        ids.dedup();
        for (id, bytes) in ids.iter().zip(self.store.get_episodes_raw(&self.snap, &self.prefix, &ids)?) {
            let prior = bytes.map(|b| Prior::of(&RecordView::parse(*id, &b)?)).transpose()?;
            self.known.insert(*id, prior);
        }
        Ok(())
    }

    /// Read the `delete_memory` tombstones of these memory ids at once (`is_tombstoned`).
    pub fn prefetch_tombstones<'m>(&mut self, memory_ids: impl Iterator<Item = &'m str>) -> Result<()> {
        let mut ids: Vec<&str> = memory_ids.filter(|m| !self.tombstones.contains_key(*m)).collect();
        ids.sort_unstable();
        ids.dedup();
        let state = AdkState { store: self.store, snap: &self.snap, prefix: &self.prefix };
        for (m, t) in ids.iter().zip(state.tombstoned(&ids)?) {
            self.tombstones.insert(m.to_string(), t);
        }
        Ok(())
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
        if let Some(p) = self.known.get(id) {
            return Ok(p.clone());
        }
        match self.store.get_episode_raw(&self.snap, &self.prefix, id)? {
            Some(bytes) => Ok(Some(Prior::of(&RecordView::parse(*id, &bytes)?)?)),
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
        let state = AdkState { store: self.store, snap: &self.snap, prefix: &self.prefix };
        let t = state.tombstoned(&[memory_id])?[0];
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
    pub fn write_into(&self, batch: &mut Batch) {
        for id in &self.order {
            let e = &self.changed[id];
            batch.put(Cf::Episodes, keys::episode_key(&self.prefix, id), e.encode());
        }
    }

    /// The staged episodes in staging order.
    pub fn staged(&self) -> impl Iterator<Item = &Episode> {
        self.order.iter().map(|id| &self.changed[id])
    }
}
