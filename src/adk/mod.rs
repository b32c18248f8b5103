//! The ADK memory seam: `InMemoryMemoryService` semantics (google-adk 2.13.0) over the store.
//!
//! Storage: every stored event is an episode of type `event` (primary text = its searchable
//! text). The `adk` column family (`state`) keeps, per namespace, the session buckets
//! (position in first-insertion order and the next sequence number), the order entries
//! `(bucket position, sequence) -> episode` that define the tie order of search, and the
//! `delete_memory` tombstones. The search index (`index`, read by `search`) lives in the
//! `index` column family. All of it is written in the same batch as the episodes, and every
//! read takes one snapshot: no per-namespace state is kept in memory.

pub mod event;
pub mod index;
mod recall;
mod search;
pub(crate) mod state;
pub mod tables;
pub mod timestamp;
pub mod tokenizer;

use crate::engine::Engine;
use crate::episodes::{self, EpisodeInput, Expiry};
use crate::error::{Error, Result};
use crate::keys::Namespace;
use crate::record::RecordView;
use crate::store::now_ms;
use crate::txn::{WriteTxn, Writers};
use crate::vector::VectorSpace;
pub use event::EventOptions;
use event::{line_context, AdkEvent, Memory};
use index::{Entry, Place, MEMORY_BUCKET};
pub use recall::{RecallMode, RecallQuery, DEFAULT_RECALL_LIMIT, LEGACY_RECALL_TYPE, MAX_RECALL_LIMIT};
use state::{AdkChanges, AdkState, Bucket};
use std::collections::HashSet;
use uuid::Uuid;

/// ADK's bucket for events added without a session id.
pub const UNKNOWN_SESSION_ID: &str = "__unknown_session_id__";
/// Episode type of stored ADK events, and of ADK memories (`add_memory`).
pub const EVENT_TYPE: &str = "event";
pub use event::MEMORY_TYPE;

/// The episode an ADK event is stored as.
fn event_input(ev: &AdkEvent, session_id: &str, opts: &EventOptions) -> EpisodeInput {
    EpisodeInput {
        episode_type: opts.episode_type.clone().unwrap_or_else(|| EVENT_TYPE.to_string()),
        tags: opts.tags.clone(),
        primary: ev.text.clone(),
        metadata: Some(ev.rest.clone()),
        author: ev.author.clone(),
        session_id: Some(session_id.to_string()),
        event_id: Some(ev.id.clone()),
        timestamp: Some(ev.timestamp),
        expiry: opts.ttl_ms.map_or(Expiry::Never, Expiry::Ttl),
        content: Some(ev.content.clone()),
        embedding: ev.embedding.clone(),
        embedding_model: ev.embedding.as_ref().and(ev.embedding_model.clone()),
        ..EpisodeInput::default()
    }
}

/// One ADK write in progress: a write transaction with the `adk` keys it stages.
struct AdkWrite<'w> {
    txn: WriteTxn<'w>,
    /// What the namespace's vectors are before this write, and after its events so far.
    space_before: Option<VectorSpace>,
    space: Option<VectorSpace>,
}

impl AdkWrite<'_> {
    fn state(&self) -> AdkState<'_> {
        AdkState { store: self.txn.store(), snap: self.txn.snapshot(), prefix: self.txn.prefix() }
    }

    fn changes(&mut self) -> AdkChanges<'_> {
        let prefix = self.txn.episodes.prefix();
        AdkChanges { batch: &mut self.txn.batch, prefix }
    }

    /// The index entries of a bucket before this write, in order.
    fn bucket_entries(&self, bucket: u32) -> Result<Vec<Entry>> {
        index::bucket_entries(self.txn.store(), self.txn.snapshot(), self.txn.prefix(), bucket)
    }

    /// The bucket of `session_id`, created at the end of the namespace's order if new.
    fn bucket(&mut self, session_id: &str) -> Result<Bucket> {
        if let Some(b) = self.state().bucket(session_id)? {
            return Ok(b);
        }
        let next = self.state().next_position()?;
        if next == MEMORY_BUCKET {
            return Err(Error::invalid("this namespace has reached the maximum number of sessions"));
        }
        self.changes().set_next_position(next + 1);
        Ok(Bucket { position: next, next_seq: 0 })
    }

    /// Stage a new event episode (line `line` of the batch) at `(bucket, seq)`. `input` is an
    /// event's (`event_input`): its primary text is its content's text.
    fn append(&mut self, line: usize, input: EpisodeInput, bucket: u32, seq: u64) -> Result<Uuid> {
        let event_id = input.event_id.clone().unwrap_or_default();
        if let Some(v) = &input.embedding {
            VectorSpace::admit(&mut self.space, v.len() as u32, input.embedding_model.as_deref()).map_err(|why| {
                Error::invalid(format!("{}: event {event_id:?}: the embedder's vector {why}", line_context(line)))
            })?;
        }
        let now = self.txn.now;
        let id = self
            .txn
            .episodes
            .upsert(input, now)
            .map_err(|e| e.context(format!("{}: event {event_id:?}", line_context(line))))?;
        self.changes().put_order(bucket, seq, &id);
        self.txn.placement.places.insert(id, crate::derived::Placed { bucket, seq, primary_is_content_text: true });
        Ok(id)
    }

    fn commit(self) -> Result<()> {
        self.txn.commit()
    }
}

/// What an ADK write will read, besides what every write reads (`Engine::adk_write`).
enum Ahead<'a> {
    /// Events of a session, stored as the options say.
    Events(&'a str, &'a EventOptions),
    Nothing,
}

impl Engine {
    /// Begin an ADK write to `ns`.
    fn adk_write<'w>(&self, writers: &'w Writers<'_>, ns: &Namespace, ahead: Ahead<'_>) -> Result<AdkWrite<'w>> {
        let txn = writers.begin(ns)?;
        match ahead {
            Ahead::Events(session_id, opts) => {
                let kind = (opts.episode_type.as_deref().unwrap_or(EVENT_TYPE), opts.tags.as_slice());
                txn.read_ahead([kind], AdkState::write_reads(txn.prefix(), session_id))?
            }
            Ahead::Nothing => txn.read_ahead([], [])?,
        }
        let space = self.vectors.space(&self.store, txn.snapshot(), ns)?;
        Ok(AdkWrite { txn, space_before: space.clone(), space })
    }

    /// Commit an ADK write, with the namespace's vector dimension when an event has a vector.
    fn adk_commit(&self, mut w: AdkWrite<'_>, ns: &Namespace) -> Result<()> {
        if w.space != w.space_before {
            self.vectors.stage_space(&mut w.txn.batch, ns, w.space.as_ref());
        }
        w.commit()
    }

    /// `Mnem::add_session` (the public documentation is there).
    pub(crate) fn add_session(&self, ns: &Namespace, session_id: &str, events: &[(usize, AdkEvent)]) -> Result<u64> {
        self.store.check_writable()?;
        let writers = Writers::lock(self)?;
        let defaults = EventOptions::default();
        let mut w = self.adk_write(&writers, ns, Ahead::Events(session_id, &defaults))?;
        let mut kept = Vec::with_capacity(events.len());
        w.txn.episodes.prefetch_tombstones(events.iter().map(|(_, ev)| ev.id.as_str()))?;
        for (line, ev) in events {
            if !w.txn.episodes.is_tombstoned(&ev.id)? {
                kept.push((*line, event_input(ev, session_id, &EventOptions::default())));
            }
        }
        let mut bucket = w.bucket(session_id)?;
        let old = w.bucket_entries(bucket.position)?;
        // Keep the longest prefix whose stored episodes are exactly what this session would
        // write (tags and expiry included): agents re-add a growing session many times.
        let mut same = 0;
        let compared: Vec<Uuid> = old.iter().take(kept.len()).map(|e| e.uuid).collect();
        let stored = self.store.get_episodes_raw(w.txn.snapshot(), w.txn.prefix(), &compared)?;
        while same < compared.len() {
            let id = compared[same];
            let unchanged = match &stored[same] {
                Some(b) => episodes::holds(&RecordView::parse(id, b)?, &kept[same].1),
                None => false,
            };
            if !unchanged {
                break;
            }
            same += 1;
        }
        w.txn.episodes.prefetch(old[same..].iter().map(|e| e.uuid))?;
        for e in &old[same..] {
            w.txn.episodes.tombstone(&e.uuid, w.txn.now)?;
            if let Place::Session { bucket, seq } = e.place {
                w.changes().delete_order(bucket, seq);
            }
        }
        let total = kept.len() as u64;
        for (line, input) in kept.drain(same..) {
            let seq = bucket.next_seq;
            bucket.next_seq += 1;
            w.append(line, input, bucket.position, seq)?;
        }
        w.changes().put_bucket(session_id, bucket);
        self.adk_commit(w, ns)?;
        Ok(total)
    }

    /// `Mnem::add_events` (the public documentation is there).
    pub(crate) fn add_events(
        &self,
        ns: &Namespace,
        session_id: &str,
        events: &[(usize, AdkEvent)],
        opts: &EventOptions,
    ) -> Result<u64> {
        self.store.check_writable()?;
        let session_id = if session_id.is_empty() { UNKNOWN_SESSION_ID } else { session_id };
        let writers = Writers::lock(self)?;
        let mut w = self.adk_write(&writers, ns, Ahead::Events(session_id, opts))?;
        let mut bucket = w.bucket(session_id)?;
        let now = w.txn.now;
        let mut seen: HashSet<String> =
            w.bucket_entries(bucket.position)?.into_iter().filter(|e| e.visible(now)).map(|e| e.memory_id).collect();
        let mut added = 0;
        w.txn.episodes.prefetch_tombstones(events.iter().map(|(_, ev)| ev.id.as_str()))?;
        for (line, ev) in events {
            if seen.contains(&ev.id) || w.txn.episodes.is_tombstoned(&ev.id)? {
                continue;
            }
            seen.insert(ev.id.clone());
            let seq = bucket.next_seq;
            bucket.next_seq += 1;
            w.append(*line, event_input(ev, session_id, opts), bucket.position, seq)?;
            added += 1;
        }
        w.changes().put_bucket(session_id, bucket);
        self.adk_commit(w, ns)?;
        Ok(added)
    }

    /// `Mnem::delete_memory` (the public documentation is there).
    pub(crate) fn delete_memory(&self, ns: &Namespace, memory_id: &str) -> Result<u64> {
        self.store.check_writable()?;
        if memory_id.is_empty() {
            return Ok(0);
        }
        let writers = Writers::lock(self)?;
        let mut w = self.adk_write(&writers, ns, Ahead::Nothing)?;
        let targets = index::memory_id_entries(&self.store, w.txn.snapshot(), w.txn.prefix(), memory_id)?;
        w.txn.episodes.prefetch(targets.iter().map(|t| t.0))?;
        for (id, place) in &targets {
            w.txn.episodes.tombstone(id, w.txn.now)?;
            if let Place::Session { bucket, seq } = *place {
                w.changes().delete_order(bucket, seq);
            }
        }
        if !targets.is_empty() {
            w.changes().put_tombstone(memory_id);
        }
        w.commit()?;
        Ok(targets.len() as u64)
    }

    /// `Mnem::session_event_ids` (the public documentation is there).
    pub(crate) fn session_event_ids(&self, ns: &Namespace, session_id: &str) -> Result<Option<Vec<String>>> {
        let prefix = ns.prefix();
        let snap = self.store.snapshot_without_postings();
        let Some(b) = (AdkState { store: &self.store, snap: &snap, prefix: &prefix }).bucket(session_id)? else {
            return Ok(None);
        };
        let now = now_ms();
        let entries = index::bucket_entries(&self.store, &snap, &prefix, b.position)?;
        Ok(Some(entries.into_iter().filter(|e| e.visible(now)).map(|e| e.memory_id).collect()))
    }

    /// `Mnem::search` (the public documentation is there): the memories, best first.
    pub(crate) fn search(&self, ns: &Namespace, query: &str) -> Result<Vec<Memory>> {
        let prefix = ns.prefix();
        let snap = self.read_snapshot()?;
        let now = now_ms();
        let mut out = Vec::new();
        let found = search::search(&self.store, &snap, &prefix, query, now, self.adk.pairs)?;
        let ids: Vec<Uuid> = found.iter().map(|e| e.uuid).collect();
        for (e, bytes) in found.into_iter().zip(self.store.get_episodes_raw(&snap, &prefix, &ids)?) {
            let Some(bytes) = bytes else { continue };
            let view = RecordView::parse(e.uuid, &bytes)?;
            if !view.is_visible(now) {
                continue;
            }
            out.push(Memory {
                id: e.memory_id,
                content: view.content().map(str::to_owned),
                author: view.author().map(str::to_owned),
                timestamp: view.timestamp(),
            });
        }
        Ok(out)
    }
}

pub(crate) use event::memory_id;
