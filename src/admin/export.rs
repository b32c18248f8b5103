//! Export: a namespace, or every namespace, as JSON Lines that `import` turns back into the
//! same records, ADK buckets and order, and therefore the same search answers.
//! docs/EXPORT.md describes every line.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::json::{push_f64, push_opt_str, push_str};
use crate::keys::{self, adk_tag, index_tag, Namespace};
use crate::record::RecordView;
use crate::store::{CF_ADK, CF_EPISODES, CF_INDEX, CF_META, FORMAT_VERSION};
use crate::Mnem;
use rocksdb::Snapshot;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use uuid::Uuid;

/// The version of the export format (the header line's `mnem_export`).
pub const EXPORT_VERSION: u32 = 1;

/// What an export or import went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    pub namespaces: u64,
    /// Episode records (tombstones included).
    pub episodes: u64,
    /// Lines written or read, header and end included.
    pub lines: u64,
}

/// Told of progress after each episode line: (episodes so far, bytes so far).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

struct Writer<'w> {
    out: &'w mut dyn Write,
    line: Vec<u8>,
    t: Transfer,
    bytes: u64,
}

impl Writer<'_> {
    fn emit(&mut self) -> Result<()> {
        self.line.push(b'\n');
        self.out
            .write_all(&self.line)
            .map_err(|e| Error::new(crate::Status::Io, format!("writing the export: {e}")))?;
        self.bytes += self.line.len() as u64;
        self.t.lines += 1;
        self.line.clear();
        Ok(())
    }
}

fn push_namespace_fields(out: &mut Vec<u8>, ns: &Namespace) {
    out.extend_from_slice(b"\"app_name\":");
    push_str(out, &ns.app_name);
    out.extend_from_slice(b",\"user_id\":");
    push_str(out, &ns.user_id);
}

/// An episode line: every stored field, the raw `metadata` and `content` text, the embedding
/// (shortest round-trip f32 decimals) and the ADK place, if any.
fn push_episode(out: &mut Vec<u8>, v: &RecordView<'_>, place: Option<(u32, u64)>) {
    out.extend_from_slice(b"{\"type\":\"episode\",\"id\":\"");
    out.extend_from_slice(v.id.hyphenated().encode_lower(&mut Uuid::encode_buffer()).as_bytes());
    out.extend_from_slice(format!("\",\"revision\":{},\"deleted\":{}", v.revision, v.deleted()).as_bytes());
    out.extend_from_slice(b",\"episode_type\":");
    push_str(out, v.episode_type);
    out.extend_from_slice(b",\"tags\":[");
    for (i, t) in v.tags().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_str(out, t);
    }
    out.extend_from_slice(b"],\"primary\":");
    push_str(out, v.primary);
    out.extend_from_slice(b",\"secondary\":");
    push_str(out, v.secondary);
    out.extend_from_slice(b",\"context\":");
    push_str(out, v.context);
    out.extend_from_slice(b",\"metadata\":");
    out.extend_from_slice(if v.metadata.is_empty() { "{}" } else { v.metadata }.as_bytes());
    out.extend_from_slice(b",\"author\":");
    push_opt_str(out, v.author());
    out.extend_from_slice(b",\"session_id\":");
    push_opt_str(out, v.session_id());
    out.extend_from_slice(b",\"event_id\":");
    push_opt_str(out, v.event_id());
    out.extend_from_slice(b",\"timestamp\":");
    match v.timestamp() {
        Some(t) => push_f64(out, t),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(
        format!(",\"created_at_ms\":{},\"updated_at_ms\":{}", v.created_at_ms, v.updated_at_ms).as_bytes(),
    );
    out.extend_from_slice(b",\"expires_at_ms\":");
    match v.expires_at_ms() {
        Some(e) => out.extend_from_slice(e.to_string().as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"content\":");
    out.extend_from_slice(v.content().unwrap_or("null").as_bytes());
    out.extend_from_slice(b",\"embedding\":");
    match v.embedding() {
        Some(e) => serde_json::to_writer(&mut *out, &e).expect("writing to a Vec cannot fail"),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"place\":");
    match place {
        Some((p, s)) => out.extend_from_slice(format!("[{p},{s}]").as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

impl Engine {
    /// `Mnem::export` (the public documentation is there).
    pub(crate) fn export(
        &self,
        only: Option<&Namespace>,
        out: &mut dyn Write,
        progress: Progress<'_>,
    ) -> Result<Transfer> {
        let snap = self.store.snapshot();
        let mut w = Writer { out, line: Vec::with_capacity(4096), t: Transfer::default(), bytes: 0 };
        w.line.extend_from_slice(
            format!("{{\"type\":\"header\",\"mnem_export\":{EXPORT_VERSION},\"format\":{FORMAT_VERSION},\"scope\":")
                .as_bytes(),
        );
        match only {
            Some(ns) => {
                w.line.push(b'{');
                push_namespace_fields(&mut w.line, ns);
                w.line.push(b'}');
            }
            None => w.line.extend_from_slice(b"\"store\""),
        }
        w.line.push(b'}');
        w.emit()?;
        match only {
            Some(ns) => {
                if self.namespace_exists(&snap, &ns.prefix())? {
                    self.export_namespace(&snap, ns, &mut w, progress)?;
                }
            }
            None => {
                let mut after: Option<Namespace> = None;
                loop {
                    let page = self.list_namespaces(after.as_ref(), super::MAX_NAMESPACE_PAGE)?;
                    for n in &page.namespaces {
                        self.export_namespace(&snap, &n.namespace, &mut w, progress)?;
                    }
                    match page.next_after {
                        Some(a) => after = Some(a),
                        None => break,
                    }
                }
            }
        }
        let t = w.t;
        w.line.extend_from_slice(
            format!("{{\"type\":\"end\",\"namespaces\":{},\"episodes\":{}}}", t.namespaces, t.episodes).as_bytes(),
        );
        w.emit()?;
        w.out.flush().map_err(|e| Error::new(crate::Status::Io, format!("writing the export: {e}")))?;
        Ok(w.t)
    }

    pub(crate) fn namespace_exists(&self, snap: &Snapshot<'_>, prefix: &[u8]) -> Result<bool> {
        for cf in [CF_EPISODES, CF_ADK] {
            let mut any = false;
            self.store.scan_prefix(snap, cf, prefix, |_, _| {
                any = true;
                Ok(false)
            })?;
            if any {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn export_namespace(
        &self,
        snap: &Snapshot<'_>,
        ns: &Namespace,
        w: &mut Writer<'_>,
        progress: Progress<'_>,
    ) -> Result<()> {
        let prefix = ns.prefix();
        let bad = |what: &str| Error::corruption(format!("{what} is malformed"));
        let next_bucket = match self.store.get_cf(snap, CF_ADK, &keys::adk_key(&prefix, adk_tag::NAMESPACE, &[]))? {
            Some(v) => u32::from_le_bytes(v.as_slice().try_into().map_err(|_| bad("ADK namespace record"))?),
            None => 0,
        };
        let dimension = match self.store.get_cf(snap, CF_META, &[b"dim:".as_slice(), &prefix].concat())? {
            Some(v) => Some(u32::from_le_bytes(v.as_slice().try_into().map_err(|_| bad("vector dimension record"))?)),
            None => None,
        };
        w.line.extend_from_slice(b"{\"type\":\"namespace\",");
        push_namespace_fields(&mut w.line, ns);
        w.line.extend_from_slice(format!(",\"next_bucket\":{next_bucket},\"dimension\":").as_bytes());
        w.line.extend_from_slice(dimension.map_or("null".to_string(), |d| d.to_string()).as_bytes());
        w.line.push(b'}');
        w.emit()?;
        w.t.namespaces += 1;
        // Buckets in position order, then `delete_memory` tombstones, then the episodes.
        let mut buckets: Vec<(u32, u64, String)> = Vec::new();
        let mut tombstones: Vec<String> = Vec::new();
        let mut places: HashMap<Uuid, (u32, u64)> = HashMap::new();
        self.store.scan_prefix(snap, CF_ADK, &prefix, |suffix, v| {
            let (tag, rest) = suffix.split_first().ok_or_else(|| bad("ADK key"))?;
            match *tag {
                adk_tag::BUCKET if v.len() == 12 => {
                    let session = String::from_utf8(rest.to_vec()).map_err(|_| bad("ADK bucket key"))?;
                    let pos = u32::from_le_bytes(v[..4].try_into().expect("4 bytes"));
                    buckets.push((pos, u64::from_le_bytes(v[4..].try_into().expect("8 bytes")), session));
                }
                adk_tag::ORDER => {
                    let place = keys::parse_order_suffix(rest).ok_or_else(|| bad("ADK order key"))?;
                    let id = <[u8; 16]>::try_from(v).map_err(|_| bad("ADK order record"))?;
                    places.insert(Uuid::from_bytes(id), place);
                }
                adk_tag::TOMBSTONE => {
                    tombstones.push(String::from_utf8(rest.to_vec()).map_err(|_| bad("ADK tombstone key"))?)
                }
                adk_tag::NAMESPACE => {}
                _ => return Err(bad("ADK key")),
            }
            Ok(true)
        })?;
        buckets.sort();
        for (pos, next_seq, session) in &buckets {
            w.line.extend_from_slice(b"{\"type\":\"bucket\",\"session_id\":");
            push_str(&mut w.line, session);
            w.line.extend_from_slice(format!(",\"position\":{pos},\"next_seq\":{next_seq}}}").as_bytes());
            w.emit()?;
        }
        for t in &tombstones {
            w.line.extend_from_slice(b"{\"type\":\"deleted_memory_id\",\"memory_id\":");
            push_str(&mut w.line, t);
            w.line.push(b'}');
            w.emit()?;
        }
        // Episodes with a live vector first, in the graph's node order, so that an import
        // inserts them into a new graph in the same order; then the rest in UUID order.
        let mut done: HashSet<Uuid> = HashSet::new();
        let links = keys::index_key(&prefix, index_tag::VECTOR_FIRST + 2, &[]);
        let mut in_graph: Vec<Uuid> = Vec::new();
        self.store.scan_prefix(snap, CF_INDEX, &links, |_, v| {
            let id = v.get(..16).ok_or_else(|| bad("a vector graph node"))?;
            if v.get(16).ok_or_else(|| bad("a vector graph node"))? & 1 == 0 {
                in_graph.push(Uuid::from_bytes(id.try_into().expect("16 bytes")));
            }
            Ok(true)
        })?;
        for id in in_graph {
            let Some(bytes) = self.store.get_episode_raw(snap, &prefix, &id)? else { continue };
            let v = RecordView::parse(id, &bytes)?;
            if v.deleted() || v.embedding().is_none() || !done.insert(id) {
                continue;
            }
            push_episode(&mut w.line, &v, places.get(&id).copied());
            w.emit()?;
            w.t.episodes += 1;
            progress(w.t.episodes, w.bytes);
        }
        let mut scan = self.store.scan_episodes(snap, ns, None);
        while let Some((id, bytes)) = scan.next()? {
            if done.contains(&id) {
                continue;
            }
            let v = RecordView::parse(id, bytes)?;
            push_episode(&mut w.line, &v, places.get(&id).copied());
            w.emit()?;
            w.t.episodes += 1;
            progress(w.t.episodes, w.bytes);
        }
        Ok(())
    }
}

impl Mnem {
    /// Write the namespace `only` (or, for None, every namespace) to `out` as JSON Lines
    /// (docs/EXPORT.md), from one snapshot: a header line, then per namespace its ADK
    /// buckets, `delete_memory` tombstones and every episode record (tombstones included)
    /// with its revision, times, expiry, metadata, content, embedding and ADK place, then an
    /// end line with the counts. `import` of the output reproduces the records and the ADK
    /// order exactly, so searches answer the same. `progress` hears (episodes, bytes) after
    /// each episode.
    pub fn export(&self, only: Option<&Namespace>, out: &mut dyn Write, progress: Progress<'_>) -> Result<Transfer> {
        self.engine().export(only, out, progress)
    }
}
