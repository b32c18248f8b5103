//! Import: the JSON Lines of `export` back into a store, through the same index staging as
//! every write. The whole input is parsed and checked before anything is written.

use super::export::{Progress, Transfer, EXPORT_VERSION};
use crate::derived::{IndexWrite, Placement};
use crate::engine::Engine;
use crate::episodes::{check_embedding, parse_uuid};
use crate::error::{Error, Result};
use crate::json::{self, Fields};
use crate::keys::{self, adk_tag, Namespace};
use crate::record::{Episode, MAX_RECORD_BYTES};
use crate::store::{now_ms, CF_ADK, CF_EPISODES};
use crate::Mnem;
use rocksdb::WriteBatch;
use std::collections::HashSet;
use uuid::Uuid;

/// Episodes per write batch: bounds a batch's memory, as the format upgrade does.
const CHUNK: usize = 1000;

struct NsImport {
    ns: Namespace,
    next_bucket: u32,
    dimension: Option<u32>,
    /// session id -> (position, next sequence)
    buckets: Vec<(String, u32, u64)>,
    tombstones: Vec<String>,
    episodes: Vec<Episode>,
    /// ADK order: (position, sequence, episode), with the line that gave it.
    orders: Vec<(u32, u64, Uuid, usize)>,
}

fn required<T>(v: Option<T>, key: &str) -> Result<T> {
    v.ok_or_else(|| Error::invalid(format!("`{key}` is required")))
}

fn parse_episode(f: &mut Fields<'_>) -> Result<Episode> {
    let id = parse_uuid(&required(f.string("id")?, "id")?, "id")?;
    let revision = required(f.get::<u64>("revision", "a positive integer")?, "revision")?;
    if revision == 0 {
        return Err(Error::invalid("`revision` must be a positive integer"));
    }
    let metadata = match f.raw("metadata") {
        Some(v) if v.get() != "null" => {
            json::parse_object(v.get()).map_err(|e| e.context("metadata"))?;
            v.get().to_string()
        }
        _ => "{}".to_string(),
    };
    let content = f.raw("content").filter(|v| v.get() != "null").map(|v| v.get().to_string());
    let embedding = f.get::<Vec<f32>>("embedding", "an array of numbers")?;
    if let Some(v) = &embedding {
        check_embedding(v).map_err(|e| e.context("embedding"))?;
    }
    let e = Episode {
        id,
        revision,
        deleted: f.get::<bool>("deleted", "true or false")?.unwrap_or(false),
        episode_type: required(f.string("episode_type")?, "episode_type")?,
        tags: f.get::<Vec<String>>("tags", "an array of strings")?.unwrap_or_default(),
        primary: f.string("primary")?.unwrap_or_default(),
        secondary: f.string("secondary")?.unwrap_or_default(),
        context: f.string("context")?.unwrap_or_default(),
        metadata,
        author: f.string("author")?,
        session_id: f.string("session_id")?,
        event_id: f.string("event_id")?,
        timestamp: f.get::<f64>("timestamp", "a number")?,
        created_at_ms: required(f.get::<i64>("created_at_ms", "an integer")?, "created_at_ms")?,
        updated_at_ms: required(f.get::<i64>("updated_at_ms", "an integer")?, "updated_at_ms")?,
        expires_at_ms: f.get::<i64>("expires_at_ms", "an integer")?,
        content,
        embedding,
    };
    if e.encoded_len() > MAX_RECORD_BYTES {
        return Err(Error::invalid(format!("the episode is over {MAX_RECORD_BYTES} bytes stored")));
    }
    Ok(e)
}

/// Every order line of a namespace names one of its episodes.
fn check_orders(n: &NsImport, ids: &HashSet<Uuid>) -> Result<()> {
    match n.orders.iter().find(|o| !ids.contains(&o.2)) {
        Some(o) => Err(Error::invalid(format!("line {}: `id` {} is not an episode of its namespace", o.3, o.2))),
        None => Ok(()),
    }
}

/// Parse and check a whole export. Errors name the line.
fn parse(input: &str) -> Result<(Vec<NsImport>, u64)> {
    let mut out: Vec<NsImport> = Vec::new();
    let mut seen_ns: HashSet<Namespace> = HashSet::new();
    let (mut header, mut ended, mut lines, mut total) = (false, false, 0u64, 0u64);
    let mut ids: HashSet<Uuid> = HashSet::new();
    let mut places: HashSet<(u32, u64)> = HashSet::new();
    for (n, line) in input.split('\n').enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let at = |e: Error| e.context(format!("line {}", n + 1));
        lines += 1;
        if ended {
            return Err(at(Error::invalid("a line after the end line")));
        }
        let mut f = Fields::strict(json::parse_object(line).map_err(at)?);
        let kind = f.string("type").map_err(at)?.ok_or_else(|| at(Error::invalid("`type` is required")))?;
        if !header && kind != "header" {
            return Err(at(Error::invalid("an export starts with its header line (`type` \"header\")")));
        }
        let current = out.last_mut();
        match (kind.as_str(), current) {
            ("header", _) if !header => {
                let v = f.get::<u32>("mnem_export", "an integer").map_err(at)?;
                if v != Some(EXPORT_VERSION) {
                    return Err(at(Error::invalid(format!(
                        "export version {v:?}; this build reads version {EXPORT_VERSION}"
                    ))));
                }
                f.get::<u32>("format", "an integer").map_err(at)?;
                f.raw("scope");
                header = true;
            }
            ("namespace", _) => {
                let app = required(f.string("app_name").map_err(at)?, "app_name").map_err(at)?;
                let user = required(f.string("user_id").map_err(at)?, "user_id").map_err(at)?;
                let ns = Namespace::new(app, user);
                if !seen_ns.insert(ns.clone()) {
                    return Err(at(Error::invalid(format!("namespace {ns:?} appears twice"))));
                }
                let next_bucket = f.get::<u32>("next_bucket", "an integer").map_err(at)?.unwrap_or(0);
                let dimension = f.get::<u32>("dimension", "an integer").map_err(at)?;
                if let Some(prev) = out.last() {
                    check_orders(prev, &ids)?;
                }
                ids.clear();
                places.clear();
                out.push(NsImport {
                    ns,
                    next_bucket,
                    dimension,
                    buckets: Vec::new(),
                    tombstones: Vec::new(),
                    episodes: Vec::new(),
                    orders: Vec::new(),
                });
            }
            ("bucket", Some(cur)) => {
                let session = required(f.string("session_id").map_err(at)?, "session_id").map_err(at)?;
                let pos = required(f.get::<u32>("position", "an integer").map_err(at)?, "position").map_err(at)?;
                let next_seq = required(f.get::<u64>("next_seq", "an integer").map_err(at)?, "next_seq").map_err(at)?;
                if pos >= cur.next_bucket {
                    return Err(at(Error::invalid("`position` is not below the namespace's `next_bucket`")));
                }
                if cur.buckets.iter().any(|(s, p, _)| *s == session || *p == pos) {
                    return Err(at(Error::invalid("a bucket with this session id or position appears twice")));
                }
                cur.buckets.push((session, pos, next_seq));
            }
            ("deleted_memory_id", Some(cur)) => {
                cur.tombstones.push(required(f.string("memory_id").map_err(at)?, "memory_id").map_err(at)?);
            }
            ("order", Some(cur)) => {
                let p = required(f.get::<u32>("position", "an integer").map_err(at)?, "position").map_err(at)?;
                let seq = required(f.get::<u64>("seq", "an integer").map_err(at)?, "seq").map_err(at)?;
                let id = parse_uuid(&required(f.string("id").map_err(at)?, "id").map_err(at)?, "id").map_err(at)?;
                let ok = cur.buckets.iter().any(|(_, bp, next)| *bp == p && seq < *next);
                if !ok || !places.insert((p, seq)) {
                    return Err(at(Error::invalid(
                        "not a free place of a bucket declared before it (position, `seq` below `next_seq`)",
                    )));
                }
                cur.orders.push((p, seq, id, n + 1));
            }
            ("episode", Some(cur)) => {
                let e = parse_episode(&mut f).map_err(at)?;
                if !ids.insert(e.id) {
                    return Err(at(Error::invalid(format!("episode {} appears twice in its namespace", e.id))));
                }
                if let Some(v) = &e.embedding {
                    if cur.dimension != Some(v.len() as u32) {
                        return Err(at(Error::invalid(format!(
                            "`embedding` has {} dimensions; the namespace line says {:?}",
                            v.len(),
                            cur.dimension
                        ))));
                    }
                }
                cur.episodes.push(e);
                total += 1;
            }
            ("end", _) => {
                if let Some(prev) = out.last() {
                    check_orders(prev, &ids)?;
                }
                let nss = f.get::<u64>("namespaces", "an integer").map_err(at)?;
                let eps = f.get::<u64>("episodes", "an integer").map_err(at)?;
                if nss != Some(out.len() as u64) || eps != Some(total) {
                    return Err(at(Error::invalid(format!(
                        "the end line counts {nss:?} namespaces and {eps:?} episodes; the lines before it hold {} and {total}",
                        out.len()
                    ))));
                }
                ended = true;
            }
            ("bucket" | "deleted_memory_id" | "order" | "episode", None) => {
                return Err(at(Error::invalid(format!("a {kind} line before any namespace line"))));
            }
            _ => return Err(at(Error::invalid(format!("unknown line type {kind:?}")))),
        }
        f.finish().map_err(at)?;
    }
    if !header {
        return Err(Error::invalid("the input is empty: an export starts with its header line"));
    }
    if !ended {
        return Err(Error::invalid("the export is truncated: it has no end line"));
    }
    Ok((out, lines))
}

impl Engine {
    /// `Mnem::import` (the public documentation is there).
    pub(crate) fn import(&self, input: &str, progress: Progress<'_>) -> Result<Transfer> {
        self.store.check_writable()?;
        let (namespaces, lines) = parse(input)?;
        let _w = self.write_lock.lock();
        let snap = self.store.snapshot();
        for n in &namespaces {
            if self.namespace_exists(&snap, &n.ns.prefix())? {
                return Err(Error::invalid(format!(
                    "namespace (app_name {:?}, user_id {:?}) already holds data in this store; nothing was imported \
                     (forget it first to replace it)",
                    n.ns.app_name, n.ns.user_id
                )));
            }
        }
        drop(snap);
        let mut t = Transfer { lines, ..Transfer::default() };
        for n in namespaces {
            self.import_namespace(n, &mut t, progress)?;
            t.namespaces += 1;
        }
        Ok(t)
    }

    fn import_namespace(&self, n: NsImport, t: &mut Transfer, progress: Progress<'_>) -> Result<()> {
        let prefix = n.ns.prefix();
        let mut batch = WriteBatch::default();
        let adk = self.store.cf(CF_ADK);
        if n.next_bucket > 0 {
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::NAMESPACE, &[]), n.next_bucket.to_le_bytes());
        }
        for (session, pos, next_seq) in &n.buckets {
            let mut v = pos.to_le_bytes().to_vec();
            v.extend_from_slice(&next_seq.to_le_bytes());
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::BUCKET, session.as_bytes()), v);
        }
        for id in &n.tombstones {
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::TOMBSTONE, id.as_bytes()), []);
        }
        self.vectors.stage_dimension(&self.store, &mut batch, &n.ns, n.dimension);
        let tombstoned: HashSet<&str> = n.tombstones.iter().map(String::as_str).collect();
        let mut placement = Placement::default();
        for (p, seq, id, _) in &n.orders {
            batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::ORDER, &keys::order_suffix(*p, *seq)), id.as_bytes());
            placement.places.insert(*id, (*p, *seq));
        }
        for e in &n.episodes {
            if !e.deleted && tombstoned.contains(crate::adk::memory_id(e.event_id.as_deref(), &e.id).as_str()) {
                placement.excluded.insert(e.id);
            }
        }
        let mut chunks = n.episodes.chunks(CHUNK).peekable();
        if chunks.peek().is_none() {
            return self.store.write(batch);
        }
        for chunk in chunks {
            for e in chunk {
                batch.put_cf(self.store.cf(CF_EPISODES), keys::episode_key(&prefix, &e.id), e.encode());
            }
            let staged: Vec<&Episode> = chunk.iter().filter(|e| !e.deleted).collect();
            // A fresh snapshot per chunk: each sees the index keys the previous chunks wrote.
            let snap = self.store.snapshot();
            let ctx = IndexWrite::new(&self.store, &snap, &prefix, now_ms());
            self.commit_staged(&ctx, &staged, std::mem::take(&mut batch), &placement)?;
            t.episodes += chunk.len() as u64;
            progress(t.episodes, 0);
        }
        Ok(())
    }
}

impl Mnem {
    /// Import an `export` (docs/EXPORT.md). The whole input is parsed and checked first: a
    /// bad line is `INVALID_ARGUMENT` naming its number, and so is a namespace that already
    /// holds data here, or a truncated input (no end line); nothing is written then. Then
    /// each namespace is written in batches of 1,000 episodes with their index changes;
    /// other writes wait until the import ends. An I/O failure part-way can leave the
    /// namespace being written partial: forget it and import again. `progress` hears the
    /// episodes written so far.
    pub fn import(&self, input: &str, progress: Progress<'_>) -> Result<Transfer> {
        self.engine().import(input, progress)
    }
}
