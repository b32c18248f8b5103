//! Export: a namespace, or every namespace, as JSON Lines that `import` turns back into the
//! same records, ADK buckets and order, and therefore the same search answers.
//! docs/EXPORT.md describes every line.

use crate::adk::state::AdkState;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, Namespace};
use crate::record::RecordView;
use crate::store::{Cf, Snapshot};
use crate::wire::export as lines;
pub use crate::wire::export::EXPORT_VERSION;
use crate::Mnem;
use std::io::Write;
use uuid::Uuid;

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

/// Where an export stands: enough to resume it in a later call (`mnem_export_page`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cursor {
    header_done: bool,
    finished: bool,
    namespaces: u64,
    episodes: u64,
    /// The namespace in progress, or (phase `NEXT`) the last one finished (empty: none yet).
    prefix: Vec<u8>,
    phase: u8,
    /// The key suffix of the last item written in this phase (empty: none yet).
    pos: Vec<u8>,
}

/// Phases of one namespace, in line order.
const NAMESPACE_LINES: u8 = 0;
const ORDER_LINES: u8 = 1;
const GRAPH_EPISODES: u8 = 2;
const OTHER_EPISODES: u8 = 3;
const NEXT: u8 = 4;
const CURSOR_VERSION: u8 = 1;

impl Cursor {
    fn start() -> Cursor {
        Cursor { phase: NEXT, ..Cursor::default() }
    }

    fn encode(&self) -> String {
        let mut b = vec![CURSOR_VERSION, u8::from(self.header_done), u8::from(self.finished), self.phase];
        b.extend_from_slice(&self.namespaces.to_be_bytes());
        b.extend_from_slice(&self.episodes.to_be_bytes());
        b.push(self.pos.len() as u8);
        b.extend_from_slice(&self.pos);
        b.extend_from_slice(&self.prefix);
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn decode(text: &str) -> Result<Cursor> {
        let bad = || Error::invalid("`cursor` is not a cursor this build wrote");
        if !text.len().is_multiple_of(2) || !text.is_ascii() {
            return Err(bad());
        }
        let b: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| bad()))
            .collect::<Result<_>>()?;
        if b.len() < 21 || b[0] != CURSOR_VERSION || b[1] > 1 || b[2] > 1 || b[3] > NEXT {
            return Err(bad());
        }
        let n = b[20] as usize;
        let pos = b.get(21..21 + n).ok_or_else(bad)?.to_vec();
        Ok(Cursor {
            header_done: b[1] == 1,
            finished: b[2] == 1,
            phase: b[3],
            namespaces: u64::from_be_bytes(b[4..12].try_into().expect("8 bytes")),
            episodes: u64::from_be_bytes(b[12..20].try_into().expect("8 bytes")),
            pos,
            prefix: b[21 + n..].to_vec(),
        })
    }
}

/// One export run over one snapshot, from a cursor, until done or the byte budget is spent.
struct Run<'e, 'w, 'p> {
    engine: &'e Engine,
    snap: Snapshot<'e>,
    only: Option<Namespace>,
    cur: Cursor,
    w: Writer<'w>,
    budget: u64,
    progress: Progress<'p>,
}

impl Run<'_, '_, '_> {
    fn full(&self) -> bool {
        self.w.bytes >= self.budget
    }

    fn bad(what: &str) -> Error {
        Error::corruption(format!("{what} is malformed"))
    }

    /// Write lines until the export ends (true) or the budget is spent (false).
    fn run(&mut self) -> Result<bool> {
        if !self.cur.header_done {
            lines::write_header(&mut self.w.line, self.only.as_ref());
            self.w.emit()?;
            self.cur.header_done = true;
        }
        while !self.cur.finished {
            if self.full() {
                return Ok(false);
            }
            if self.cur.phase == NEXT {
                match self.next_namespace()? {
                    Some(prefix) => {
                        self.cur.prefix = prefix;
                        self.cur.phase = NAMESPACE_LINES;
                        self.cur.pos.clear();
                    }
                    None => {
                        lines::write_end(&mut self.w.line, self.cur.namespaces, self.cur.episodes);
                        self.w.emit()?;
                        self.cur.finished = true;
                    }
                }
                continue;
            }
            if !self.namespace_step()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The prefix of the namespace after the current one, if any.
    fn next_namespace(&self) -> Result<Option<Vec<u8>>> {
        if let Some(ns) = &self.only {
            let prefix = ns.prefix();
            let first = self.cur.prefix.is_empty();
            return Ok((first && self.engine.namespace_exists(&self.snap, &prefix)?).then_some(prefix));
        }
        let from = if self.cur.prefix.is_empty() {
            Vec::new()
        } else {
            keys::prefix_successor(&self.cur.prefix).unwrap_or_default()
        };
        let a = self.engine.first_namespace_from(&self.snap, Cf::Episodes, &from)?;
        let b = self.engine.first_namespace_from(&self.snap, Cf::Adk, &from)?;
        Ok(match (a, b) {
            (Some(a), Some(b)) => Some(a.1.min(b.1)),
            (a, b) => a.or(b).map(|x| x.1),
        })
    }

    /// Continue the current namespace; false when the budget ran out part-way.
    fn namespace_step(&mut self) -> Result<bool> {
        let prefix = self.cur.prefix.clone();
        let (ns, _) = super::inspect::namespace_of(&prefix)?;
        if self.cur.phase == NAMESPACE_LINES {
            self.namespace_lines(&ns, &prefix)?;
            self.cur.phase = ORDER_LINES;
            self.cur.pos.clear();
            if self.full() {
                return Ok(false);
            }
        }
        if self.cur.phase == ORDER_LINES {
            let mut stopped = false;
            let mut pending: Vec<(u32, u64, Uuid)> = Vec::new();
            let after = decode_order_pos(&self.cur.pos);
            let state = AdkState { store: &self.engine.store, snap: &self.snap, prefix: &prefix };
            state.order(None, after, |p, seq, id| {
                pending.push((p, seq, id));
                Ok(pending.len() < 4096)
            })?;
            for (p, seq, id) in &pending {
                lines::write_order(&mut self.w.line, *p, *seq, id);
                self.w.emit()?;
                self.cur.pos = encode_order_pos(*p, *seq);
                if self.full() {
                    stopped = true;
                    break;
                }
            }
            if stopped {
                return Ok(false);
            }
            if pending.len() == 4096 {
                return Ok(true); // more order keys: the next step reads on
            }
            self.cur.phase = GRAPH_EPISODES;
            self.cur.pos.clear();
        }
        if self.cur.phase == GRAPH_EPISODES {
            // Episodes with a live vector, in the graph's node order, so that an import inserts
            // them into a new graph in the same order.
            let after =
                (self.cur.pos.len() == 4).then(|| u32::from_be_bytes(self.cur.pos[..].try_into().expect("4 bytes")));
            let nodes = crate::vector::live_nodes(&self.engine.store, &self.snap, &prefix, after, 4096)?;
            for (node, id) in &nodes {
                if self.in_graph(&prefix, id)? == Some(*node) {
                    if let Some(bytes) = self.engine.store.get_episode_raw(&self.snap, &prefix, id)? {
                        self.episode(*id, &bytes)?;
                    }
                }
                self.cur.pos = node.to_be_bytes().to_vec();
                if self.full() {
                    return Ok(false);
                }
            }
            if nodes.len() == 4096 {
                return Ok(true);
            }
            self.cur.phase = OTHER_EPISODES;
            self.cur.pos.clear();
        }
        if self.cur.phase == OTHER_EPISODES {
            let after =
                (self.cur.pos.len() == 16).then(|| Uuid::from_bytes(self.cur.pos[..].try_into().expect("16 bytes")));
            let mut batch: Vec<(Uuid, Vec<u8>)> = Vec::new();
            {
                let mut scan = self.engine.store.scan_episodes(&self.snap, &ns, after);
                while let Some((id, bytes)) = scan.next()? {
                    batch.push((id, bytes.to_vec()));
                    if batch.len() == 256 {
                        break;
                    }
                }
            }
            for (id, bytes) in &batch {
                if self.in_graph(&prefix, id)?.is_none() {
                    self.episode(*id, bytes)?;
                }
                self.cur.pos = id.as_bytes().to_vec();
                if self.full() {
                    return Ok(false);
                }
            }
            if batch.len() == 256 {
                return Ok(true);
            }
            self.cur.phase = NEXT;
            self.cur.pos.clear();
            self.cur.namespaces += 1;
        }
        Ok(true)
    }

    /// The node holding the live vector of an episode that the graph phase writes: the
    /// node is live and the record is live with an embedding.
    fn in_graph(&self, prefix: &[u8], id: &Uuid) -> Result<Option<u32>> {
        let Some(node) = crate::vector::live_node_of(&self.engine.store, &self.snap, prefix, id)? else {
            return Ok(None);
        };
        let Some(bytes) = self.engine.store.get_episode_raw(&self.snap, prefix, id)? else { return Ok(None) };
        let v = RecordView::parse(*id, &bytes)?;
        Ok((!v.deleted() && v.embedding().is_some()).then_some(node))
    }

    fn episode(&mut self, id: Uuid, bytes: &[u8]) -> Result<()> {
        let v = RecordView::parse(id, bytes)?;
        lines::write_episode(&mut self.w.line, &v);
        self.w.emit()?;
        self.cur.episodes += 1;
        (self.progress)(self.cur.episodes, self.w.bytes);
        Ok(())
    }

    /// The namespace line, its buckets (in position order) and `delete_memory` tombstones.
    fn namespace_lines(&mut self, ns: &Namespace, prefix: &[u8]) -> Result<()> {
        let (store, snap) = (&self.engine.store, &self.snap);
        let state = AdkState { store, snap, prefix };
        let next_bucket = state.next_position()?;
        let space = self.engine.vectors.space(store, snap, ns)?;
        let w = &mut self.w;
        lines::write_namespace(&mut w.line, ns, next_bucket, space.as_ref());
        w.emit()?;
        let mut buckets: Vec<(u32, u64, String)> =
            state.buckets()?.into_iter().map(|(session, b)| (b.position, b.next_seq, session)).collect();
        let tombstones: Vec<String> = state
            .tombstones()?
            .into_iter()
            .map(|t| String::from_utf8(t).map_err(|_| Self::bad("an ADK key")))
            .collect::<Result<_>>()?;
        buckets.sort();
        for (pos, next_seq, session) in &buckets {
            lines::write_bucket(&mut w.line, session, *pos, *next_seq);
            w.emit()?;
        }
        for t in &tombstones {
            lines::write_deleted_memory_id(&mut w.line, t);
            w.emit()?;
        }
        Ok(())
    }
}

impl Engine {
    /// `Mnem::export` and `Mnem::export_page` (the public documentation is there).
    pub(crate) fn export_from(
        &self,
        only: Option<&Namespace>,
        cursor: Option<&str>,
        budget: u64,
        out: &mut dyn Write,
        progress: Progress<'_>,
    ) -> Result<(Transfer, Option<String>)> {
        let cur = match cursor {
            Some(c) => Cursor::decode(c)?,
            None => Cursor::start(),
        };
        if cur.finished {
            return Err(Error::invalid("`cursor` is of an export that has ended"));
        }
        let mut run = Run {
            engine: self,
            snap: self.store.snapshot_without_postings(),
            only: only.cloned(),
            cur,
            w: Writer { out, line: Vec::with_capacity(4096), t: Transfer::default(), bytes: 0 },
            budget,
            progress,
        };
        let done = run.run()?;
        run.w.out.flush().map_err(|e| Error::new(crate::Status::Io, format!("writing the export: {e}")))?;
        let t = Transfer { namespaces: run.cur.namespaces, episodes: run.cur.episodes, lines: run.w.t.lines };
        Ok((t, (!done).then(|| run.cur.encode())))
    }

    pub(crate) fn namespace_exists(&self, snap: &Snapshot<'_>, prefix: &[u8]) -> Result<bool> {
        for cf in [Cf::Episodes, Cf::Adk] {
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
}

impl Mnem {
    /// Write the namespace `only` (or, for None, every namespace) to `out` as JSON Lines
    /// (docs/EXPORT.md), from one snapshot: a header line, then per namespace its ADK
    /// buckets, `delete_memory` tombstones, ADK order and every episode record (tombstones
    /// included) with its revision, times, expiry, metadata, content and embedding, then an
    /// end line with the counts. `import` of the output reproduces the records and the ADK
    /// order exactly, so searches answer the same. `progress` hears (episodes, bytes) after
    /// each episode.
    pub fn export(&self, only: Option<&Namespace>, out: &mut dyn Write, progress: Progress<'_>) -> Result<Transfer> {
        Ok(self.engine().export_from(only, None, u64::MAX, out, progress)?.0)
    }

    /// One page of an export: the lines that follow `cursor` (None: from the start), until
    /// at least `max_bytes` are written or the export ends, from a snapshot of its own.
    /// Returns the cursor of the next page, None after the end line. The pages concatenated
    /// are an export; they equal `export`'s output when nothing is written in between.
    pub fn export_page(
        &self,
        only: Option<&Namespace>,
        cursor: Option<&str>,
        max_bytes: u64,
        out: &mut dyn Write,
    ) -> Result<Option<String>> {
        Ok(self.engine().export_from(only, cursor, max_bytes.max(1), out, &mut |_, _| {})?.1)
    }
}

/// An export cursor's position among order entries: the last one written.
fn encode_order_pos(position: u32, seq: u64) -> Vec<u8> {
    [&position.to_be_bytes()[..], &seq.to_be_bytes()].concat()
}

fn decode_order_pos(pos: &[u8]) -> Option<(u32, u64)> {
    let pos: &[u8; 12] = pos.try_into().ok()?;
    Some((u32::from_be_bytes(pos[..4].try_into().ok()?), u64::from_be_bytes(pos[4..].try_into().ok()?)))
}
