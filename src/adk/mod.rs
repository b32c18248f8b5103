//! The ADK memory seam: `InMemoryMemoryService` semantics (google-adk 2.13.0) over the store.
//!
//! Storage: every stored event is an episode of type `event` (primary text = its searchable
//! text). The `adk` column family keeps, per namespace, the session buckets (position in
//! first-insertion order and the next sequence number), the order entries
//! `(bucket position, sequence) -> episode` that define the tie order of search, and the
//! `delete_memory` tombstones. All of it is written in the same batch as the episodes.

pub mod event;
pub mod index;
pub mod tables;
pub mod timestamp;
pub mod tokenizer;

use crate::episodes::{self, EpisodeInput, Expiry, Pending};
use crate::error::{Error, Result};
use crate::json::{self, Fields};
use crate::keys::{self, adk_tag, Namespace};
use crate::mnem::Mnem;
use crate::record::RecordView;
use crate::store::{now_ms, CF_ADK};
use event::AdkEvent;
use index::{AdkIndex, MEMORY_BUCKET};
use parking_lot::RwLock;
use rocksdb::{Snapshot, WriteBatch};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use uuid::Uuid;

/// ADK's bucket for events added without a session id.
pub const UNKNOWN_SESSION_ID: &str = "__unknown_session_id__";
/// Episode type of stored ADK events, and of ADK memories (`add_memory`).
pub const EVENT_TYPE: &str = "event";
pub const MEMORY_TYPE: &str = "memory";

/// What `mnem_add_events` reads from its `custom_metadata` (other keys are ignored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventOptions {
    pub ttl_ms: Option<i64>,
    pub tags: Vec<String>,
    pub episode_type: Option<String>,
}

impl EventOptions {
    pub fn parse(custom_metadata: &str) -> Result<EventOptions> {
        if custom_metadata.trim().is_empty() {
            return Ok(EventOptions::default());
        }
        let mut f = Fields::lenient(json::parse_object(custom_metadata).map_err(|e| e.context("custom_metadata"))?);
        let ttl_ms = f.get::<i64>("ttl_ms", "an integer number of milliseconds")?;
        if ttl_ms.is_some_and(|t| t <= 0) {
            return Err(Error::invalid("custom_metadata: `ttl_ms` must be positive"));
        }
        let tags = f.get::<Vec<String>>("tags", "an array of strings")?.unwrap_or_default();
        let episode_type = f.string("episode_type")?;
        Ok(EventOptions { ttl_ms, tags, episode_type })
    }
}

/// The events of a batch that ADK stores, each with its line number (errors name it).
fn parse_events(jsonl: &str) -> Result<Vec<(usize, AdkEvent)>> {
    let now = now_ms() as f64 / 1000.0;
    let mut out = Vec::new();
    for (n, line) in json::lines(jsonl)? {
        if let Some(e) = event::parse_event(line, now).map_err(|e| e.context(line_context(n)))? {
            out.push((n, e));
        }
    }
    Ok(out)
}

fn line_context(n: usize) -> String {
    format!("events_jsonl line {n}")
}

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
        ..EpisodeInput::default()
    }
}

#[derive(Clone, Copy)]
struct Bucket {
    position: u32,
    next_seq: u64,
}

fn decode_bucket(v: &[u8]) -> Result<Bucket> {
    if v.len() != 12 {
        return Err(Error::corruption("ADK bucket record is malformed"));
    }
    Ok(Bucket {
        position: u32::from_le_bytes(v[..4].try_into().expect("4 bytes")),
        next_seq: u64::from_le_bytes(v[4..].try_into().expect("8 bytes")),
    })
}

fn encode_bucket(b: Bucket) -> Vec<u8> {
    let mut v = b.position.to_le_bytes().to_vec();
    v.extend_from_slice(&b.next_seq.to_le_bytes());
    v
}

/// One ADK write in progress: episodes and `adk` keys staged into one batch.
struct AdkWrite<'m> {
    mnem: &'m Mnem,
    pending: Pending<'m>,
    batch: WriteBatch,
    placement: index::Placement,
    now: i64,
}

impl<'m> AdkWrite<'m> {
    fn new(mnem: &'m Mnem, ns: &Namespace) -> AdkWrite<'m> {
        AdkWrite {
            mnem,
            pending: Pending::new(&mnem.store, ns),
            batch: WriteBatch::default(),
            placement: index::Placement::default(),
            now: now_ms(),
        }
    }

    fn adk_get(&self, tag: u8, rest: &[u8]) -> Result<Option<Vec<u8>>> {
        let key = keys::adk_key(self.pending.prefix(), tag, rest);
        self.mnem.store.get_cf(self.pending.snapshot(), CF_ADK, &key)
    }

    fn adk_put(&mut self, tag: u8, rest: &[u8], value: &[u8]) {
        let key = keys::adk_key(self.pending.prefix(), tag, rest);
        self.batch.put_cf(self.mnem.store.cf(CF_ADK), key, value);
    }

    fn adk_delete(&mut self, tag: u8, rest: &[u8]) {
        let key = keys::adk_key(self.pending.prefix(), tag, rest);
        self.batch.delete_cf(self.mnem.store.cf(CF_ADK), key);
    }

    /// The bucket of `session_id`, created at the end of the namespace's order if new.
    fn bucket(&mut self, session_id: &str) -> Result<Bucket> {
        if let Some(v) = self.adk_get(adk_tag::BUCKET, session_id.as_bytes())? {
            return decode_bucket(&v);
        }
        let next = match self.adk_get(adk_tag::NAMESPACE, &[])? {
            Some(v) => u32::from_le_bytes(
                v.as_slice().try_into().map_err(|_| Error::corruption("ADK namespace record is malformed"))?,
            ),
            None => 0,
        };
        if next == MEMORY_BUCKET {
            return Err(Error::invalid("this namespace has reached the maximum number of sessions"));
        }
        self.adk_put(adk_tag::NAMESPACE, &[], &(next + 1).to_le_bytes());
        Ok(Bucket { position: next, next_seq: 0 })
    }

    /// Stage a new event episode (line `line` of the batch) at `(bucket, seq)`.
    fn append(&mut self, line: usize, input: EpisodeInput, bucket: u32, seq: u64) -> Result<Uuid> {
        let what = format!("{}: event {:?}", line_context(line), input.event_id.as_deref().unwrap_or_default());
        let id = self.pending.upsert(input, self.now).map_err(|e| e.context(what))?;
        self.adk_put(adk_tag::ORDER, &keys::order_suffix(bucket, seq), id.as_bytes());
        self.placement.places.insert(id, (bucket, seq));
        Ok(id)
    }

    fn commit(self) -> Result<()> {
        self.mnem.commit(&self.pending, self.batch, &self.placement)
    }
}

impl Mnem {
    /// The namespace's search index, built from storage on first use. `write_held` says the
    /// caller holds `write_lock` already (a writer); otherwise it is taken for the build so
    /// that no write lands between the snapshot and the index's publication.
    fn adk_index(&self, ns: &Namespace, write_held: bool) -> Result<Arc<RwLock<AdkIndex>>> {
        let prefix = ns.prefix();
        // Lock order is index before map (writers hold an index while they drop it from the
        // map), so the map guard must be gone before an index is locked: copy the Arc out.
        let loaded = self.adk.read().get(&prefix).cloned();
        if let Some(ix) = loaded.filter(|ix| !ix.read().wants_rebuild()) {
            return Ok(ix);
        }
        let _guard = (!write_held).then(|| self.write_lock.lock());
        let loaded = self.adk.read().get(&prefix).cloned();
        if let Some(ix) = &loaded {
            if !ix.read().wants_rebuild() {
                return Ok(ix.clone());
            }
        }
        let ix = Arc::new(RwLock::new(self.build_adk_index(ns)?));
        self.adk.write().insert(prefix, ix.clone());
        // A search may still hold the replaced index: retire it, so that it looks again
        // instead of ranking on an index the next write will not update.
        if let Some(old) = loaded {
            old.write().retire();
        }
        Ok(ix)
    }

    /// Run `read` on the namespace's current index and a snapshot taken under its read
    /// lock: every writer of the namespace commits under the index's write lock and either
    /// updates the index or retires it, so the two describe the same state.
    fn with_adk_snapshot<T>(&self, ns: &Namespace, read: impl Fn(&AdkIndex, &Snapshot<'_>) -> Result<T>) -> Result<T> {
        loop {
            let ix = self.adk_index(ns, false)?;
            let ix = ix.read();
            if ix.is_retired() {
                continue;
            }
            return read(&ix, &self.store.snapshot());
        }
    }

    fn build_adk_index(&self, ns: &Namespace) -> Result<AdkIndex> {
        let store = &self.store;
        let snap = store.snapshot();
        let prefix = ns.prefix();
        let mut ix = AdkIndex::default();
        let tombstones = self.adk_keys(&snap, &prefix, adk_tag::TOMBSTONE)?;
        let tombstones: HashSet<&[u8]> = tombstones.iter().map(|(k, _)| k.as_slice()).collect();
        // The order entries say where each event sits; then one pass over the namespace's
        // episodes (sequential reads, not a point read per event) indexes them, and the
        // `memory` episodes after every bucket, in UUID order.
        let mut placed: HashMap<Uuid, (u32, u64)> = HashMap::new();
        for (suffix, value) in self.adk_keys(&snap, &prefix, adk_tag::ORDER)? {
            match (keys::parse_order_suffix(&suffix), <[u8; 16]>::try_from(value.as_slice())) {
                (Some(place), Ok(id)) => placed.insert(Uuid::from_bytes(id), place),
                _ => return Err(Error::corruption("ADK order record is malformed")),
            };
        }
        let mut scan = store.scan_episodes(&snap, ns, None);
        let mut memory_seq = 0u64;
        while let Some(view) = scan.next_view()? {
            if view.deleted() || tombstones.contains(memory_id(view.event_id(), &view.id).as_bytes()) {
                continue;
            }
            if let Some(&(bucket, seq)) = placed.get(&view.id) {
                index_view(&mut ix, &view, bucket, seq);
            } else if view.episode_type == MEMORY_TYPE && view.content().is_some() {
                index_view(&mut ix, &view, MEMORY_BUCKET, memory_seq);
                memory_seq += 1;
            }
        }
        Ok(ix)
    }

    /// `(key suffix, value)` of every `adk` key of kind `tag` in the namespace.
    fn adk_keys(&self, snap: &Snapshot<'_>, prefix: &[u8], tag: u8) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let kind = keys::adk_key(prefix, tag, &[]);
        let mut it = self.store.prefix_iter(snap, CF_ADK, &kind, &kind);
        let mut out = Vec::new();
        while it.valid() {
            let (k, v) = (it.key().expect("valid iterator"), it.value().expect("valid iterator"));
            out.push((k[kind.len()..].to_vec(), v.to_vec()));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// `add_session_to_memory`: replace the bucket of `session_id` with the session's events
    /// (those with content and parts, not tombstoned); the bucket keeps its position.
    /// Returns the number of events the bucket now holds.
    pub fn add_session(&self, ns: &Namespace, session_id: &str, events_jsonl: &str) -> Result<u64> {
        self.store.check_writable()?;
        let events = parse_events(events_jsonl)?;
        let _w = self.write_lock.lock();
        let ix = self.adk_index(ns, true)?;
        let mut ix = ix.write();
        let mut w = AdkWrite::new(self, ns);
        let mut kept = Vec::with_capacity(events.len());
        for (line, ev) in &events {
            if !w.pending.is_tombstoned(&ev.id)? {
                kept.push((*line, ev, event_input(ev, session_id, &EventOptions::default())));
            }
        }
        let mut bucket = w.bucket(session_id)?;
        let old: Vec<(Uuid, u64)> = ix.bucket(bucket.position).map(|e| (e.uuid, e.seq)).collect();
        // Keep the longest prefix whose stored episodes are exactly what this session would
        // write (tags and expiry included): agents re-add a growing session many times.
        let mut same = 0;
        while same < old.len() && same < kept.len() {
            let bytes = self.store.get_episode_raw(w.pending.snapshot(), w.pending.prefix(), &old[same].0)?;
            let unchanged = match &bytes {
                Some(b) => episodes::holds(&RecordView::parse(old[same].0, b)?, &kept[same].2),
                None => false,
            };
            if !unchanged {
                break;
            }
            same += 1;
        }
        for &(id, seq) in &old[same..] {
            w.pending.tombstone(&id, w.now)?;
            w.adk_delete(adk_tag::ORDER, &keys::order_suffix(bucket.position, seq));
        }
        let total = kept.len() as u64;
        let mut added = Vec::new();
        for (line, ev, input) in kept.drain(same..) {
            let seq = bucket.next_seq;
            bucket.next_seq += 1;
            let id = w.append(line, input, bucket.position, seq)?;
            added.push((ev, id, seq));
        }
        w.adk_put(adk_tag::BUCKET, session_id.as_bytes(), &encode_bucket(bucket));
        w.commit()?;
        for &(id, _) in &old[same..] {
            ix.remove(bucket.position, &id);
        }
        for (ev, id, seq) in added {
            ix.insert(id, bucket.position, seq, ev.id.clone(), &ev.text, None);
        }
        Ok(total)
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
        self.store.check_writable()?;
        let opts = EventOptions::parse(custom_metadata)?;
        let events = parse_events(events_jsonl)?;
        let session_id = if session_id.is_empty() { UNKNOWN_SESSION_ID } else { session_id };
        let _w = self.write_lock.lock();
        let ix = self.adk_index(ns, true)?;
        let mut ix = ix.write();
        let mut w = AdkWrite::new(self, ns);
        let mut bucket = w.bucket(session_id)?;
        let now = w.now;
        let mut seen: HashSet<String> =
            ix.bucket(bucket.position).filter(|e| e.visible(now)).map(|e| e.memory_id.clone()).collect();
        let mut added = Vec::new();
        for (line, ev) in &events {
            if seen.contains(&ev.id) || w.pending.is_tombstoned(&ev.id)? {
                continue;
            }
            seen.insert(ev.id.clone());
            let seq = bucket.next_seq;
            bucket.next_seq += 1;
            let id = w.append(*line, event_input(ev, session_id, &opts), bucket.position, seq)?;
            added.push((ev, id, seq));
        }
        w.adk_put(adk_tag::BUCKET, session_id.as_bytes(), &encode_bucket(bucket));
        let expires = opts.ttl_ms.map(|t| now.saturating_add(t));
        w.commit()?;
        for (ev, id, seq) in &added {
            ix.insert(*id, bucket.position, *seq, ev.id.clone(), &ev.text, expires);
        }
        Ok(added.len() as u64)
    }

    /// `delete_memory`: remove every event (and ADK memory) reported as `memory_id` from
    /// every bucket of the namespace and tombstone the id for good. An empty id is a no-op;
    /// an id that removes nothing records no tombstone. Returns how many were removed.
    pub fn delete_memory(&self, ns: &Namespace, memory_id: &str) -> Result<u64> {
        self.store.check_writable()?;
        if memory_id.is_empty() {
            return Ok(0);
        }
        let _w = self.write_lock.lock();
        let ix = self.adk_index(ns, true)?;
        let mut ix = ix.write();
        let mut w = AdkWrite::new(self, ns);
        let targets = ix.find_memory_id(memory_id);
        for &(id, bucket, seq) in &targets {
            w.pending.tombstone(&id, w.now)?;
            if bucket != MEMORY_BUCKET {
                w.adk_delete(adk_tag::ORDER, &keys::order_suffix(bucket, seq));
            }
        }
        if !targets.is_empty() {
            w.adk_put(adk_tag::TOMBSTONE, memory_id.as_bytes(), &[]);
        }
        w.commit()?;
        for (id, bucket, _) in &targets {
            ix.remove(*bucket, id);
        }
        Ok(targets.len() as u64)
    }

    /// The ids of the events stored in a session's bucket, in order, or None when the
    /// namespace has no such bucket (ADK's `_session_events[user][session_id]`).
    pub fn session_event_ids(&self, ns: &Namespace, session_id: &str) -> Result<Option<Vec<String>>> {
        let key = keys::adk_key(&ns.prefix(), adk_tag::BUCKET, session_id.as_bytes());
        self.with_adk_snapshot(ns, |ix, snap| {
            let Some(v) = self.store.get_cf(snap, CF_ADK, &key)? else { return Ok(None) };
            let b = decode_bucket(&v)?;
            let now = now_ms();
            Ok(Some(ix.bucket(b.position).filter(|e| e.visible(now)).map(|e| e.memory_id.clone()).collect()))
        })
    }

    /// `search_memory`: ADK's `SearchMemoryResponse` as JSON.
    pub fn search(&self, ns: &Namespace, query: &str) -> Result<Vec<u8>> {
        let prefix = ns.prefix();
        self.with_adk_snapshot(ns, |ix, snap| {
            let now = now_ms();
            let mut out = Vec::with_capacity(1024);
            out.extend_from_slice(b"{\"memories\":[");
            let mut first = true;
            for e in ix.search(query, now) {
                let Some(bytes) = self.store.get_episode_raw(snap, &prefix, &e.uuid)? else { continue };
                let view = RecordView::parse(e.uuid, &bytes)?;
                if !view.is_visible(now) {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(b"{\"id\":");
                json::push_str(&mut out, &e.memory_id);
                out.extend_from_slice(b",\"content\":");
                out.extend_from_slice(view.content().unwrap_or("null").as_bytes());
                out.extend_from_slice(b",\"author\":");
                json::push_opt_str(&mut out, view.author());
                out.extend_from_slice(b",\"timestamp\":");
                json::push_opt_str(&mut out, view.timestamp().and_then(timestamp::format_timestamp).as_deref());
                out.extend_from_slice(b",\"custom_metadata\":{}}");
            }
            out.extend_from_slice(b"]}");
            Ok(out)
        })
    }
}

/// The id `mnem_search` reports for an episode and `delete_memory` matches: its `event_id`,
/// else its UUID. Writes check tombstones by the same rule.
pub(crate) fn memory_id(event_id: Option<&str>, id: &Uuid) -> String {
    event_id.map_or_else(|| id.to_string(), str::to_owned)
}

/// Index one stored episode: its ADK text is the text of its content's parts.
fn index_view(ix: &mut AdkIndex, view: &RecordView<'_>, bucket: u32, seq: u64) {
    // Content that is not an ADK `Content` (a caller's own `memory` episode) has no ADK text.
    let text = view.content().and_then(|c| event::content_text(c).ok().flatten()).unwrap_or_default();
    ix.insert(view.id, bucket, seq, memory_id(view.event_id(), &view.id), &text, view.expires_at_ms());
}
