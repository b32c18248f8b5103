//! The export format (docs/EXPORT.md) on the wire: each JSON line an export writes, the
//! envelope of `mnem_export_page`, and the parser and checker of an export being imported.

use super::episode::parse_uuid;
use super::{parse_object, push_str, Fields};
use crate::episodes::check_embedding;
use crate::error::{Error, Result};
use crate::keys::Namespace;
use crate::record::{Episode, RecordView, MAX_RECORD_BYTES};
use crate::store::FORMAT_VERSION;
use crate::vector::{check_model_name, VectorSpace};
use std::collections::HashSet;
use uuid::Uuid;

/// The version of the export format (the header line's `mnem_export`).
pub const EXPORT_VERSION: u32 = 1;

fn push_namespace_fields(out: &mut Vec<u8>, ns: &Namespace) {
    out.extend_from_slice(b"\"app_name\":");
    push_str(out, &ns.app_name);
    out.extend_from_slice(b",\"user_id\":");
    push_str(out, &ns.user_id);
}

fn push_uuid(out: &mut Vec<u8>, id: &Uuid) {
    out.extend_from_slice(id.hyphenated().encode_lower(&mut Uuid::encode_buffer()).as_bytes());
}

/// The header line; `only` is the exported namespace, None for the whole store.
pub fn write_header(out: &mut Vec<u8>, only: Option<&Namespace>) {
    out.extend_from_slice(
        format!("{{\"type\":\"header\",\"mnem_export\":{EXPORT_VERSION},\"format\":{FORMAT_VERSION},\"scope\":")
            .as_bytes(),
    );
    match only {
        Some(ns) => {
            out.push(b'{');
            push_namespace_fields(out, ns);
            out.push(b'}');
        }
        None => out.extend_from_slice(b"\"store\""),
    }
    out.push(b'}');
}

/// A namespace line: what its later lines belong to.
pub fn write_namespace(out: &mut Vec<u8>, ns: &Namespace, next_bucket: u32, space: Option<&VectorSpace>) {
    out.extend_from_slice(b"{\"type\":\"namespace\",");
    push_namespace_fields(out, ns);
    out.extend_from_slice(format!(",\"next_bucket\":{next_bucket},\"dimension\":").as_bytes());
    out.extend_from_slice(space.map_or("null".to_string(), |s| s.dimension.to_string()).as_bytes());
    if let Some(model) = space.and_then(|s| s.model.as_deref()) {
        out.extend_from_slice(b",\"embedding_model\":");
        push_str(out, model);
    }
    out.push(b'}');
}

/// An ADK session bucket.
pub fn write_bucket(out: &mut Vec<u8>, session_id: &str, position: u32, next_seq: u64) {
    out.extend_from_slice(b"{\"type\":\"bucket\",\"session_id\":");
    push_str(out, session_id);
    out.extend_from_slice(format!(",\"position\":{position},\"next_seq\":{next_seq}}}").as_bytes());
}

/// A `delete_memory` tombstone.
pub fn write_deleted_memory_id(out: &mut Vec<u8>, memory_id: &str) {
    out.extend_from_slice(b"{\"type\":\"deleted_memory_id\",\"memory_id\":");
    push_str(out, memory_id);
    out.push(b'}');
}

/// An event's place in the ADK tie order.
pub fn write_order(out: &mut Vec<u8>, position: u32, seq: u64, id: &Uuid) {
    out.extend_from_slice(format!("{{\"type\":\"order\",\"position\":{position},\"seq\":{seq},\"id\":\"").as_bytes());
    push_uuid(out, id);
    out.extend_from_slice(b"\"}");
}

/// An episode line: every stored field, the raw `metadata` and `content` text, the embedding
/// (shortest round-trip f32 decimals).
pub fn write_episode(out: &mut Vec<u8>, v: &RecordView<'_>) {
    out.extend_from_slice(b"{\"type\":\"episode\",\"id\":\"");
    push_uuid(out, &v.id);
    out.extend_from_slice(format!("\",\"revision\":{},\"deleted\":{},", v.revision, v.deleted()).as_bytes());
    v.write_json_fields(out);
    out.extend_from_slice(b",\"embedding\":");
    match v.embedding() {
        Some(e) => serde_json::to_writer(&mut *out, &e).expect("writing to a Vec cannot fail"),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

/// The end line, with the counts an import checks.
pub fn write_end(out: &mut Vec<u8>, namespaces: u64, episodes: u64) {
    out.extend_from_slice(
        format!("{{\"type\":\"end\",\"namespaces\":{namespaces},\"episodes\":{episodes}}}").as_bytes(),
    );
}

/// `mnem_export_page`'s answer: `{"lines": "<JSON Lines>", "next_cursor": "<opaque>" | null}`.
pub fn write_export_page(out: &mut Vec<u8>, lines: &str, next_cursor: Option<&str>) {
    out.extend_from_slice(b"{\"lines\":");
    push_str(out, lines);
    out.extend_from_slice(b",\"next_cursor\":");
    super::push_opt_str(out, next_cursor);
    out.push(b'}');
}

/// One namespace of an export being imported.
pub(crate) struct NsImport<'a> {
    pub ns: Namespace,
    pub next_bucket: u32,
    pub space: Option<VectorSpace>,
    /// session id -> (position, next sequence)
    pub buckets: Vec<(String, u32, u64)>,
    pub tombstones: Vec<String>,
    /// The episode lines, checked (`import_episode` parses them again as they are written,
    /// so that an import holds its input, not every episode parsed from it, at once).
    pub episodes: Vec<&'a str>,
    /// ADK order: (position, sequence, episode), with the line that gave it.
    pub orders: Vec<(u32, u64, Uuid, usize)>,
}

fn required<T>(v: Option<T>, key: &str) -> Result<T> {
    v.ok_or_else(|| Error::invalid(format!("`{key}` is required")))
}

/// An episode line of an export that `parse_export` has checked, parsed again.
pub(crate) fn import_episode(line: &str) -> Result<Episode> {
    let mut f = Fields::strict(parse_object(line)?);
    f.raw("type");
    let e = parse_episode(&mut f)?;
    f.finish()?;
    Ok(e)
}

fn parse_episode(f: &mut Fields<'_>) -> Result<Episode> {
    let id = parse_uuid(&required(f.string("id")?, "id")?, "id")?;
    let revision = required(f.get::<u64>("revision", "a positive integer")?, "revision")?;
    if revision == 0 {
        return Err(Error::invalid("`revision` must be a positive integer"));
    }
    let metadata = match f.raw("metadata") {
        Some(v) if v.get() != "null" => {
            parse_object(v.get()).map_err(|e| e.context("metadata"))?;
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
fn check_orders(n: &NsImport<'_>, ids: &HashSet<Uuid>) -> Result<()> {
    match n.orders.iter().find(|o| !ids.contains(&o.2)) {
        Some(o) => Err(Error::invalid(format!("line {}: `id` {} is not an episode of its namespace", o.3, o.2))),
        None => Ok(()),
    }
}

/// Parse and check a whole export (`mnem_import`): its namespaces and its line count.
/// Errors name the line.
pub(crate) fn parse_export(input: &str) -> Result<(Vec<NsImport<'_>>, u64)> {
    let mut out: Vec<NsImport<'_>> = Vec::new();
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
        let mut f = Fields::strict(parse_object(line).map_err(at)?);
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
                let model = f.string("embedding_model").map_err(at)?;
                if let Some(m) = &model {
                    check_model_name("embedding_model", m).map_err(at)?;
                }
                let space = match (dimension, model) {
                    (Some(dimension), model) => Some(VectorSpace { dimension, model }),
                    (None, None) => None,
                    (None, Some(_)) => return Err(at(Error::invalid("`embedding_model` without `dimension`"))),
                };
                if let Some(prev) = out.last() {
                    check_orders(prev, &ids)?;
                }
                ids.clear();
                places.clear();
                out.push(NsImport {
                    ns,
                    next_bucket,
                    space,
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
                    let dimension = cur.space.as_ref().map(|s| s.dimension);
                    if dimension != Some(v.len() as u32) {
                        return Err(at(Error::invalid(format!(
                            "`embedding` has {} dimensions; the namespace line says {:?}",
                            v.len(),
                            dimension
                        ))));
                    }
                }
                cur.episodes.push(line);
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
