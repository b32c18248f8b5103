//! Vectors: stored in each episode record (the source of truth) and, per namespace, in an
//! HNSW graph persisted node by node in the `index` column family (`layout`). A write
//! stages the keys of the nodes it changes into its batch; a search or write loads the
//! graph from those keys into the shared byte-budgeted cache (`VectorIndex::cache`) on first use.
//!
//! A loaded graph is changed only by a writer holding `Engine::write_lock` and the graph's
//! write lock, kept until its batch is committed: readers never see a change that is not
//! committed, and a failed batch retires the graph (holders reload it from the store).
//! A search that finds no graph in the cache loads one from its own snapshot without any
//! writer's lock, and caches it only when no write changed a graph meanwhile
//! (`VectorIndex::load`).
//!
//! The graph is mnem's own rather than a library's (usearch can save, load and view an index):
//! construction is deterministic for a given insertion order (the same writes give the same
//! bytes, on every CPU), the graph lives node by node in the records' write batch instead of
//! whole-index snapshots beside the store, deleted and expired nodes are filtered inside the
//! beam, and the build is as fast as usearch's single-threaded one on the same data
//! (BENCHMARKS.md) without a C++ dependency that adds minutes to a cold build.

pub mod hnsw;
mod layout;

use crate::cache::{Cache, Key};
use crate::derived::{DerivedIndex, IndexWrite, Placement};
use crate::error::{Error, Result};
use crate::keys::{index_key, index_tag, Namespace};
use crate::record::Episode;
use crate::store::Batch;
use crate::store::{Cf, Snapshot, Store};
use hnsw::Hnsw;
use layout::Header;
use parking_lot::lock_api::{ArcRwLockReadGuard, ArcRwLockWriteGuard};
use parking_lot::{Mutex, RawRwLock, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use uuid::Uuid;

/// The HNSW graph of one namespace and the episode behind each node.
pub struct NsVectors {
    pub hnsw: Hnsw,
    /// Live nodes by episode.
    node_of: HashMap<Uuid, u32>,
    id_of: Vec<Uuid>,
    expires: Vec<Option<i64>>,
    /// Live nodes that never expire, and the expiry times of the live nodes that do (with
    /// counts): whether any vector is live at a given time, without a scan.
    live_forever: usize,
    live_until: BTreeMap<i64, usize>,
    /// Set when a write failed after changing this graph: it is out of the cache, and
    /// whoever still holds it reloads.
    retired: bool,
}

/// A read lock on a namespace's loaded graph.
pub type VectorsRead = ArcRwLockReadGuard<RawRwLock, NsVectors>;

/// The cache key of a namespace's graph.
fn cache_key(prefix: &[u8]) -> Key {
    (index_tag::VECTOR_FIRST, prefix.to_vec())
}

impl NsVectors {
    fn new(dim: usize) -> NsVectors {
        NsVectors {
            hnsw: Hnsw::new(dim),
            node_of: HashMap::new(),
            id_of: Vec::new(),
            expires: Vec::new(),
            live_forever: 0,
            live_until: BTreeMap::new(),
            retired: false,
        }
    }

    fn count_live(&mut self, expires: Option<i64>) {
        match expires {
            None => self.live_forever += 1,
            Some(t) => *self.live_until.entry(t).or_default() += 1,
        }
    }

    fn uncount_live(&mut self, expires: Option<i64>) {
        match expires {
            None => self.live_forever -= 1,
            Some(t) => {
                let c = self.live_until.get_mut(&t).expect("a live node's expiry is counted");
                *c -= 1;
                if *c == 0 {
                    self.live_until.remove(&t);
                }
            }
        }
    }

    fn remove(&mut self, id: &Uuid, touched: &mut Vec<u32>) {
        let Some(n) = self.node_of.remove(id) else { return };
        self.hnsw.delete(n);
        self.uncount_live(self.expires[n as usize]);
        touched.push(n);
    }

    /// Add the unit vector `v` as a new node (after removing the episode's old one).
    fn add(&mut self, id: Uuid, v: &[f32], expires: Option<i64>, touched: &mut Vec<u32>) -> u32 {
        self.remove(&id, touched);
        let n = self.hnsw.insert(v, touched);
        self.node_of.insert(id, n);
        self.id_of.push(id);
        self.expires.push(expires);
        self.count_live(expires);
        n
    }

    fn set_expiry(&mut self, n: u32, expires: Option<i64>) {
        self.uncount_live(self.expires[n as usize]);
        self.expires[n as usize] = expires;
        self.count_live(expires);
    }

    /// Is any vector of the namespace visible at `now_ms` (not deleted, not expired)?
    pub fn has_live(&self, now_ms: i64) -> bool {
        self.live_forever > 0 || self.live_until.range(now_ms.saturating_add(1)..).next().is_some()
    }

    /// How many vectors are visible at `now_ms`.
    fn live_at(&self, now_ms: i64) -> usize {
        self.live_forever + self.live_until.range(now_ms.saturating_add(1)..).map(|(_, c)| c).sum::<usize>()
    }

    /// Up to `k` visible episodes nearest to `query` (any length-`dim` vector) that `keep`
    /// accepts, with their cosine similarity, best first.
    pub fn nearest(&self, query: &[f32], k: usize, now_ms: i64, keep: impl Fn(&Uuid) -> bool) -> Vec<(Uuid, f32)> {
        let q = hnsw::normalize(query);
        let ef = k.saturating_mul(2).max(128);
        let visible = |n: u32| self.expires[n as usize].is_none_or(|e| now_ms < e);
        let keep = |n: u32| keep(&self.id_of[n as usize]);
        // When expiry hides most nodes, the beam would be eaten by them: scan instead.
        let found = if self.live_at(now_ms).saturating_mul(8) < self.hnsw.live() {
            self.hnsw.exact(&q, k, visible, keep)
        } else {
            self.hnsw.search(&q, k, ef, visible, keep)
        };
        found.into_iter().map(|(n, s)| (self.id_of[n as usize], s)).collect()
    }

    fn wants_rebuild(&self) -> bool {
        dead_dominate(self.hnsw.len(), self.hnsw.live())
    }

    /// The same live vectors in a fresh graph, inserted in node order.
    fn rebuilt(&self) -> NsVectors {
        let mut g = NsVectors::new(self.hnsw.dim());
        let mut touched = Vec::new();
        for n in 0..self.hnsw.len() as u32 {
            if !self.hnsw.is_deleted(n) {
                g.add(self.id_of[n as usize], self.hnsw.vector(n), self.expires[n as usize], &mut touched);
                touched.clear();
            }
        }
        g
    }

    /// Approximate heap bytes, for the cache budget.
    fn bytes(&self) -> usize {
        self.hnsw.heap_bytes() + 32 * self.id_of.capacity() + 40 * self.node_of.capacity() + 48 * self.live_until.len()
    }

    fn header(&self) -> Header {
        Header {
            dim: self.hnsw.dim() as u32,
            nodes: self.hnsw.len() as u32,
            live: self.hnsw.live() as u32,
            entry: self.hnsw.entry(),
            top: self.hnsw.top() as u8,
            rng: self.hnsw.rng_state(),
        }
    }

    fn links_value(&self, n: u32) -> Vec<u8> {
        layout::encode_links(
            &self.id_of[n as usize],
            self.hnsw.is_deleted(n),
            self.expires[n as usize],
            self.hnsw.links(n),
        )
    }

    /// Load a namespace's graph from its keys; None when it has none.
    fn load(store: &Store, snap: &Snapshot<'_>, prefix: &[u8]) -> Result<Option<NsVectors>> {
        let Some(h) = store.get_cf(snap, Cf::Index, &layout::header_key(prefix))? else { return Ok(None) };
        let h = Header::decode(&h)?;
        let (dim, count) = (h.dim as usize, h.nodes as usize);
        if h.entry.is_some_and(|e| e >= h.nodes) || (h.entry.is_none() && count > 0) {
            return Err(Error::corruption("vector index header names no valid entry node"));
        }
        let mut data = Vec::with_capacity(count * dim);
        let mut seen = 0u32;
        each_node(store, snap, prefix, layout::VECTOR, |n, v| {
            if n != seen {
                return Err(Error::corruption(format!("vector index lacks the vector of node {seen}")));
            }
            seen += 1;
            layout::decode_vector_into(v, dim, &mut data)
        })?;
        if seen != h.nodes {
            return Err(Error::corruption("vector index has fewer vectors than its header counts"));
        }
        let mut g = NsVectors::new(dim);
        let mut links = Vec::with_capacity(count);
        let mut deleted = Vec::with_capacity(count);
        each_node(store, snap, prefix, layout::LINKS, |n, v| {
            if n as usize != links.len() {
                return Err(Error::corruption(format!("vector index lacks the links of node {}", links.len())));
            }
            let node = layout::decode_links(v, h.nodes)?;
            if !node.deleted {
                g.node_of.insert(node.id, n);
                g.count_live(node.expires);
            }
            g.id_of.push(node.id);
            g.expires.push(node.expires);
            links.push(node.links);
            deleted.push(node.deleted);
            Ok(())
        })?;
        if links.len() != count {
            return Err(Error::corruption("vector index has fewer link records than its header counts"));
        }
        g.hnsw = Hnsw::from_parts(dim, data, links, deleted, h.entry, usize::from(h.top), h.rng);
        if g.hnsw.live() != h.live as usize {
            return Err(Error::corruption("vector index header miscounts its live nodes"));
        }
        Ok(Some(g))
    }
}

/// Should a graph of `nodes` of which `live` are not deleted be rebuilt from its live ones?
fn dead_dominate(nodes: usize, live: usize) -> bool {
    let dead = nodes - live;
    dead > 1024 && dead > live
}

/// Call `f(node, value)` for each key `prefix tag u32be(node)`, in node order.
fn each_node(
    store: &Store,
    snap: &Snapshot<'_>,
    prefix: &[u8],
    tag: u8,
    mut f: impl FnMut(u32, &[u8]) -> Result<()>,
) -> Result<()> {
    store.scan_prefix(snap, Cf::Index, &index_key(prefix, tag, &[]), |suffix, value| {
        let n = <[u8; 4]>::try_from(suffix)
            .map(u32::from_be_bytes)
            .map_err(|_| Error::corruption("vector index key has a malformed node number"))?;
        f(n, value)?;
        Ok(true)
    })
}

/// The HNSW graphs among the derived indexes: persisted node by node, loaded into `cache`
/// (a byte-budgeted LRU across namespaces) on first use; and each namespace's vector
/// dimension record.
pub struct VectorIndex {
    pub(crate) cache: Cache,
    /// Writes that may change a graph's keys, per bucket of namespaces (`bucket`): `started`
    /// when one begins staging, `finished` when it is committed or abandoned. A search that
    /// loaded a graph caches it only when no such write overlapped its snapshot
    /// (`LoadTicket`).
    started: [AtomicU64; WRITE_BUCKETS],
    finished: [AtomicU64; WRITE_BUCKETS],
    /// Orders a write's start and its look at the cache against a load's check and insert,
    /// so that a load never caches a graph a write has changed since (held for no I/O).
    caching: Mutex<()>,
    /// Graphs are kept in `cache` between searches (false when other processes write the
    /// store: `Store::is_shared`).
    keep: bool,
}

/// Buckets of namespaces whose graph writes are counted apart, so that writes to one
/// namespace rarely keep another's loaded graph out of the cache.
const WRITE_BUCKETS: usize = 64;

fn bucket(prefix: &[u8]) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    prefix.hash(&mut h);
    (h.finish() % WRITE_BUCKETS as u64) as usize
}

/// The write counters of a namespace's bucket before a search took its snapshot
/// (`VectorIndex::ticket`).
#[derive(Clone, Copy)]
pub(crate) struct LoadTicket {
    bucket: usize,
    started: u64,
    quiet: bool,
}

/// The `meta` key of the vector dimension of the namespace `prefix`.
pub(crate) fn dim_key(prefix: &[u8]) -> Vec<u8> {
    [b"dim:".as_slice(), prefix].concat()
}

/// The live (not deleted) nodes of a namespace's graph after node `after`, in node order
/// (insertion order), with their episodes: at most `limit`. For an export that must insert
/// vectors into a new graph in the same order.
pub(crate) fn live_nodes(
    store: &Store,
    snap: &Snapshot<'_>,
    prefix: &[u8],
    after: Option<u32>,
    limit: usize,
) -> Result<Vec<(u32, Uuid)>> {
    let mut nodes = Vec::new();
    let start = index_key(prefix, layout::LINKS, &[]);
    store.scan_prefix(snap, Cf::Index, &start, |node, v| {
        let node =
            u32::from_be_bytes(node.try_into().map_err(|_| Error::corruption("vector index links key is malformed"))?);
        if after.is_some_and(|a| node <= a) {
            return Ok(true);
        }
        let (id, deleted) = layout::decode_owner(v)?;
        if !deleted {
            nodes.push((node, id));
        }
        Ok(nodes.len() < limit)
    })?;
    Ok(nodes)
}

/// The node holding episode `id`'s vector, if that node is live.
pub(crate) fn live_node_of(store: &Store, snap: &Snapshot<'_>, prefix: &[u8], id: &Uuid) -> Result<Option<u32>> {
    let Some(node) = store.get_cf(snap, Cf::Index, &layout::node_of_key(prefix, id))? else { return Ok(None) };
    let node = u32::from_be_bytes(
        node.as_slice().try_into().map_err(|_| Error::corruption("vector index node-of record is malformed"))?,
    );
    let Some(links) = store.get_cf(snap, Cf::Index, &layout::links_key(prefix, node))? else { return Ok(None) };
    let (owner, deleted) = layout::decode_owner(&links)?;
    Ok((owner == *id && !deleted).then_some(node))
}

impl VectorIndex {
    /// Drop the loaded graph of the namespace `prefix` (its keys are gone).
    pub(crate) fn evict(&self, prefix: &[u8]) {
        self.cache.remove(&cache_key(prefix));
    }

    pub(crate) fn new(cache: Cache, keep: bool) -> VectorIndex {
        VectorIndex {
            keep,
            cache,
            started: std::array::from_fn(|_| AtomicU64::new(0)),
            finished: std::array::from_fn(|_| AtomicU64::new(0)),
            caching: Mutex::new(()),
        }
    }

    /// Take before the snapshot the namespace's graph may be loaded from.
    pub(crate) fn ticket(&self, ns: &Namespace) -> LoadTicket {
        let bucket = bucket(&ns.prefix());
        let finished = self.finished[bucket].load(Ordering::SeqCst);
        let started = self.started[bucket].load(Ordering::SeqCst);
        LoadTicket { bucket, started, quiet: started == finished }
    }

    /// The keys every write to the namespace of `prefix` reads: its vector space and its
    /// graph's header (to read them ahead: `store::View::prefetch`).
    pub(crate) fn write_reads(prefix: &[u8]) -> [(Cf, Vec<u8>); 2] {
        [(Cf::Meta, dim_key(prefix)), (Cf::Index, layout::header_key(prefix))]
    }

    /// What the namespace's vectors are (dimension and model), once one was stored.
    pub(crate) fn space(&self, store: &Store, snap: &Snapshot<'_>, ns: &Namespace) -> Result<Option<VectorSpace>> {
        store.get_cf(snap, Cf::Meta, &dim_key(&ns.prefix()))?.map(|v| VectorSpace::decode(&v)).transpose()
    }

    pub(crate) fn stage_space(&self, batch: &mut Batch, ns: &Namespace, space: Option<&VectorSpace>) {
        if let Some(s) = space {
            batch.put(Cf::Meta, dim_key(&ns.prefix()), s.encode());
        }
    }
}

/// What a namespace's vectors are: their dimension and the model that made them, fixed by the
/// first vector stored (the `meta` record `dim:` ‖ prefix). `model` is the name of the store's
/// embedder that made them (`EmbeddingProvider::model`, or an episode's `embedding_model`);
/// `None` for vectors the caller gave without naming a model. A namespace holds one model's
/// vectors: similarity between two models' vectors means nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorSpace {
    pub dimension: u32,
    pub model: Option<String>,
}

/// The longest model name a namespace records.
pub const MAX_MODEL_NAME: usize = 256;

/// The model name `field` gives (an episode's `embedding_model`, an export's namespace line)
/// must be 1 to `MAX_MODEL_NAME` bytes.
pub(crate) fn check_model_name(field: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_MODEL_NAME {
        return Err(Error::invalid(format!("`{field}` must be 1 to {MAX_MODEL_NAME} bytes")));
    }
    Ok(())
}

impl VectorSpace {
    /// `u32le` dimension, then the model's name in UTF-8 (nothing when unnamed).
    fn encode(&self) -> Vec<u8> {
        let mut v = self.dimension.to_le_bytes().to_vec();
        v.extend_from_slice(self.model.as_deref().unwrap_or("").as_bytes());
        v
    }

    fn decode(v: &[u8]) -> Result<VectorSpace> {
        let malformed = || Error::corruption("vector dimension record is malformed");
        let (dim, name) = v.split_first_chunk::<4>().ok_or_else(malformed)?;
        let name = std::str::from_utf8(name).map_err(|_| malformed())?;
        Ok(VectorSpace { dimension: u32::from_le_bytes(*dim), model: (!name.is_empty()).then(|| name.to_string()) })
    }

    /// Admit a vector of `dim` numbers made by `model` into the namespace whose vectors are
    /// `space` (none yet: it becomes the first); the error is the sentence that says why not.
    pub(crate) fn admit(
        space: &mut Option<VectorSpace>,
        dim: u32,
        model: Option<&str>,
    ) -> std::result::Result<(), String> {
        match space {
            None => {
                *space = Some(VectorSpace { dimension: dim, model: model.map(str::to_owned) });
                Ok(())
            }
            Some(s) if s.dimension != dim => {
                Err(format!("has {dim} dimensions; this namespace's vectors have {}", s.dimension))
            }
            Some(s) if s.model.as_deref() != model => Err(format!(
                "is from {}, but this namespace's vectors are from {}: a namespace holds one model's vectors",
                describe_model(model),
                describe_model(s.model.as_deref())
            )),
            Some(_) => Ok(()),
        }
    }
}

/// How messages name a vector's model.
pub(crate) fn describe_model(model: Option<&str>) -> String {
    match model {
        Some(m) => format!("the model {m:?}"),
        None => "the caller (no model named)".to_string(),
    }
}

/// The graph changes of one write batch: the graph stays write-locked until the batch is
/// committed (`publish`); dropped unpublished (the batch failed), it retires the graph.
pub(crate) struct VectorStage<'m> {
    index: &'m VectorIndex,
    key: Key,
    graph: Option<ArcRwLockWriteGuard<RawRwLock, NsVectors>>,
    /// This write counts in `VectorIndex::started` (it may change the graph's keys).
    counted: bool,
}

impl VectorStage<'_> {
    pub(crate) fn publish(mut self) {
        if let Some(g) = self.graph.take().filter(|_| self.index.keep) {
            let bytes = g.bytes();
            let arc = ArcRwLockWriteGuard::rwlock(&g).clone();
            drop(g);
            self.index.cache.insert(self.key.clone(), arc, bytes);
        }
    }
}

impl Drop for VectorStage<'_> {
    fn drop(&mut self) {
        if let Some(mut g) = self.graph.take() {
            g.retired = true;
            drop(g);
            self.index.cache.remove(&self.key);
        }
        if self.counted {
            self.index.finished[bucket(&self.key.1)].fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The unit vector an episode should have in the graph of dimension `dim`, if any.
fn wanted(e: &Episode, dim: Option<usize>) -> Option<Vec<f32>> {
    match (&e.embedding, e.deleted) {
        (Some(v), false) if dim.is_none_or(|d| d == v.len()) => Some(hnsw::normalize(v)),
        _ => None,
    }
}

impl DerivedIndex for VectorIndex {
    type Staged<'a> = VectorStage<'a>;

    fn stage<'a>(
        &'a self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        _placement: &Placement,
        batch: &mut Batch,
    ) -> Result<VectorStage<'a>> {
        self.stage_vectors(ctx, staged, batch)
    }

    fn publish(staged: VectorStage<'_>) {
        staged.publish();
    }
}

impl VectorIndex {
    /// Stage the HNSW changes of `staged` into `batch` (see `crate::derived`): each new node's
    /// vector, the links of every node whose links changed, the episode-to-node keys and the
    /// header. Call with `write_lock` held.
    pub(crate) fn stage_vectors(
        &self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        batch: &mut Batch,
    ) -> Result<VectorStage<'_>> {
        let key = cache_key(ctx.prefix);
        let mut stage = VectorStage { index: self, key, graph: None, counted: false };
        let header = |ctx: &IndexWrite<'_>| -> Result<Option<Header>> {
            let h = ctx.store.get_cf(ctx.snap, Cf::Index, &layout::header_key(ctx.prefix))?;
            h.as_deref().map(Header::decode).transpose()
        };
        let idle = match self.cache.get::<RwLock<NsVectors>>(&stage.key) {
            Some(g) => {
                let r = g.read();
                let dim = Some(r.hnsw.dim());
                !staged.iter().any(|e| r.node_of.contains_key(&e.id) || wanted(e, dim).is_some())
            }
            None => header(ctx)?.is_none() && staged.iter().all(|e| wanted(e, None).is_none()),
        };
        if idle {
            return Ok(stage);
        }
        // This write may change the graph's keys: no load that overlaps it may cache a graph.
        let cached = {
            let _c = self.caching.lock();
            self.started[bucket(ctx.prefix)].fetch_add(1, Ordering::SeqCst);
            stage.counted = true;
            // A search may have cached the graph since the look above (as the last commit left
            // it: no write ran during its load).
            self.cache.get::<RwLock<NsVectors>>(&stage.key)
        };
        let graph = match cached {
            Some(g) => g,
            None => {
                match header(ctx)? {
                    None if staged.iter().all(|e| wanted(e, None).is_none()) => return Ok(stage),
                    Some(h) if stage_without_graph(ctx, staged, &h, batch)? => return Ok(stage),
                    _ => {}
                }
                let g = match NsVectors::load(ctx.store, ctx.snap, ctx.prefix)? {
                    Some(g) => g,
                    None => {
                        let first = staged.iter().find_map(|e| wanted(e, None)).expect("a vector is added");
                        NsVectors::new(first.len())
                    }
                };
                Arc::new(RwLock::new(g))
            }
        };
        let mut g = graph.write_arc();
        stage_changes(&mut g, ctx.prefix, staged, batch);
        stage.graph = Some(g);
        Ok(stage)
    }

    /// The namespace's loaded graph, read-locked, if the cache holds it. While it is held,
    /// no write changes it, so a snapshot taken next sees what it holds.
    pub(crate) fn cached(&self, ns: &Namespace) -> Option<VectorsRead> {
        let key = cache_key(&ns.prefix());
        loop {
            let r = self.cache.get::<RwLock<NsVectors>>(&key)?.read_arc();
            if !r.retired {
                return Some(r);
            }
        }
    }

    /// The namespace's graph as `snap` holds it (None when it has no vectors), loaded from
    /// its keys without any writer's lock. Cached when no write that may change a graph ran
    /// between `ticket` (taken before `snap`) and now; else only this search uses it.
    pub(crate) fn load(
        &self,
        store: &Store,
        snap: &Snapshot<'_>,
        ns: &Namespace,
        ticket: LoadTicket,
    ) -> Result<Option<VectorsRead>> {
        let key = cache_key(&ns.prefix());
        let Some(g) = NsVectors::load(store, snap, &key.1)? else { return Ok(None) };
        let bytes = g.bytes();
        let g = Arc::new(RwLock::new(g));
        let read = g.read_arc();
        let _c = self.caching.lock();
        let unchanged = ticket.quiet && self.started[ticket.bucket].load(Ordering::SeqCst) == ticket.started;
        if self.keep && unchanged && self.cache.peek::<RwLock<NsVectors>>(&key).is_none() {
            self.cache.insert(key, g, bytes);
        }
        Ok(Some(read))
    }

    /// The namespace's graph, read-locked, or None when it has no vectors: the cached one,
    /// else loaded from a new snapshot.
    #[cfg(test)]
    pub(crate) fn read(&self, store: &Store, ns: &Namespace) -> Result<Option<VectorsRead>> {
        if let Some(g) = self.cached(ns) {
            return Ok(Some(g));
        }
        let ticket = self.ticket(ns);
        let snap = store.snapshot_without_postings();
        self.load(store, &snap, ns, ticket)
    }
}

/// What a write does to one episode's node: the one rule both ways of staging follow.
enum Change {
    /// Nothing: no vector before or after, or the same vector and expiry.
    Keep,
    /// The same vector, a new expiry.
    Expiry(u32, Option<i64>),
    /// The node goes (deleted, or its vector removed).
    Remove(u32),
    /// A new node (`Some`: replacing this one).
    Add(Option<u32>, Vec<f32>),
}

/// The change for `e`, whose node before the write is `old`; `stored(n, v)` says whether
/// node `n` holds vector `v`, `expires(n)` its expiry.
fn change(
    e: &Episode,
    dim: usize,
    old: Option<u32>,
    stored: impl FnOnce(u32, &[f32]) -> Result<bool>,
    expires: impl FnOnce(u32) -> Result<Option<i64>>,
) -> Result<Change> {
    Ok(match (old, wanted(e, Some(dim))) {
        (None, None) => Change::Keep,
        (None, Some(v)) => Change::Add(None, v),
        (Some(n), None) => Change::Remove(n),
        (Some(n), Some(v)) if stored(n, &v)? => match expires(n)? {
            t if t == e.expires_at_ms => Change::Keep,
            _ => Change::Expiry(n, e.expires_at_ms),
        },
        (Some(n), Some(v)) => Change::Add(Some(n), v),
    })
}

/// Stage `staged` from the graph's keys alone when it adds no vector (removals, expiry
/// changes, episodes without vectors), so such writes need not load an unloaded graph.
/// Returns false, staging nothing, when a vector is added.
fn stage_without_graph(ctx: &IndexWrite<'_>, staged: &[&Episode], h: &Header, batch: &mut Batch) -> Result<bool> {
    let keys: Vec<Vec<u8>> = staged.iter().map(|e| layout::node_of_key(ctx.prefix, &e.id)).collect();
    let nodes = ctx.store.multi_get_cf(ctx.snap, Cf::Index, &keys)?;
    let mut changed: Vec<(Uuid, u32, layout::Node)> = Vec::new();
    for (e, n) in staged.iter().zip(nodes) {
        let n = n
            .map(|n| {
                <[u8; 4]>::try_from(n.as_slice())
                    .map(u32::from_be_bytes)
                    .map_err(|_| Error::corruption("vector index node key is malformed"))
            })
            .transpose()?;
        let read = |key: Vec<u8>| -> Result<Vec<u8>> {
            ctx.store.get_cf(ctx.snap, Cf::Index, &key)?.ok_or_else(|| Error::corruption("vector index lacks a node"))
        };
        let mut node = None;
        let c = change(
            e,
            h.dim as usize,
            n,
            |n, v| {
                let mut stored = Vec::with_capacity(v.len());
                layout::decode_vector_into(&read(layout::vector_key(ctx.prefix, n))?, v.len(), &mut stored)?;
                Ok(same_vector(&stored, v))
            },
            |n| {
                let links = layout::decode_links(&read(layout::links_key(ctx.prefix, n))?, h.nodes)?;
                let t = links.expires;
                node = Some(links);
                Ok(t)
            },
        )?;
        let (n, deleted, expires) = match c {
            Change::Keep => continue,
            Change::Add(..) => return Ok(false),
            Change::Remove(n) => (n, true, None),
            Change::Expiry(n, t) => (n, false, Some(t)),
        };
        let mut node = match node {
            Some(node) => node,
            None => layout::decode_links(&read(layout::links_key(ctx.prefix, n))?, h.nodes)?,
        };
        node.deleted |= deleted;
        if let Some(t) = expires {
            node.expires = t;
        }
        changed.push((e.id, n, node));
    }
    let removed = changed.iter().filter(|c| c.2.deleted).count();
    let live = h.live as usize - removed;
    if dead_dominate(h.nodes as usize, live) {
        return Ok(false); // the graph path rebuilds
    }
    if removed > 0 {
        batch.put(Cf::Index, layout::header_key(ctx.prefix), Header { live: live as u32, ..*h }.encode());
    }
    for (id, n, node) in changed {
        if node.deleted {
            batch.delete(Cf::Index, layout::node_of_key(ctx.prefix, &id));
        }
        batch.put(
            Cf::Index,
            layout::links_key(ctx.prefix, n),
            layout::encode_links(&id, node.deleted, node.expires, &node.links),
        );
    }
    Ok(true)
}

fn same_vector(a: &[f32], b: &[f32]) -> bool {
    a.iter().map(|x| x.to_bits()).eq(b.iter().map(|x| x.to_bits()))
}

/// Apply `staged` to the write-locked graph and put the keys that changed into `batch`.
fn stage_changes(g: &mut NsVectors, prefix: &[u8], staged: &[&Episode], batch: &mut Batch) {
    let first_new = g.hnsw.len() as u32;
    let dim = g.hnsw.dim();
    let mut touched = Vec::new();
    // Episode-to-node keys in order: an episode may leave and re-enter within the batch.
    let mut mapping: Vec<(Uuid, Option<u32>)> = Vec::new();
    for e in staged {
        let old = g.node_of.get(&e.id).copied();
        let c = change(e, dim, old, |n, v| Ok(same_vector(g.hnsw.vector(n), v)), |n| Ok(g.expires[n as usize]))
            .expect("the loaded graph answers without reading");
        match c {
            Change::Keep => {}
            Change::Expiry(n, t) => {
                g.set_expiry(n, t);
                touched.push(n);
            }
            Change::Remove(_) => {
                g.remove(&e.id, &mut touched);
                mapping.push((e.id, None));
            }
            Change::Add(replaced, v) => {
                if replaced.is_some() {
                    g.remove(&e.id, &mut touched);
                    mapping.push((e.id, None));
                }
                let n = g.add(e.id, &v, e.expires_at_ms, &mut touched);
                mapping.push((e.id, Some(n)));
            }
        }
    }
    let rewrite = g.wants_rebuild();
    let first_new = if rewrite { 0 } else { first_new };
    if rewrite {
        *g = g.rebuilt();
        batch.delete_range(Cf::Index, index_key(prefix, layout::HEADER, &[]), index_key(prefix, layout::END, &[]));
        touched = (0..g.hnsw.len() as u32).collect();
        mapping = g.node_of.iter().map(|(id, n)| (*id, Some(*n))).collect();
        mapping.sort_unstable();
    }
    touched.sort_unstable();
    touched.dedup();
    for &n in &touched {
        if n >= first_new {
            batch.put(Cf::Index, layout::vector_key(prefix, n), layout::encode_vector(g.hnsw.vector(n)));
        }
        batch.put(Cf::Index, layout::links_key(prefix, n), g.links_value(n));
    }
    for (id, n) in mapping {
        match n {
            Some(n) => batch.put(Cf::Index, layout::node_of_key(prefix, &id), n.to_be_bytes()),
            None => batch.delete(Cf::Index, layout::node_of_key(prefix, &id)),
        }
    }
    batch.put(Cf::Index, layout::header_key(prefix), g.header().encode());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    /// Unit vectors around a few random centres (a small embedding-like mixture).
    fn clustered(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f32 / (1u64 << 53) as f32 - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..20).map(|_| (0..dim).map(|_| next()).collect()).collect();
        (0..n).map(|i| hnsw::normalize(&centres[i % 20].iter().map(|c| c + 0.3 * next()).collect::<Vec<_>>())).collect()
    }

    #[test]
    fn filters_that_reject_most_nodes_still_find_the_exact_nearest() {
        let dim = 16;
        let data = clustered(2000, dim, 7);
        let mut g = NsVectors::new(dim);
        let mut t = Vec::new();
        for (i, v) in data.iter().enumerate() {
            g.add(Uuid::from_u128(i as u128), v, None, &mut t);
        }
        // One node in 100 passes the filter.
        let keep = |id: &Uuid| id.as_u128() % 100 == 3;
        let q = &data[500];
        let got = g.nearest(q, 5, 0, keep);
        let mut exact: Vec<(f32, u128)> = (0..2000u128)
            .filter(|i| i % 100 == 3)
            .map(|i| (data[i as usize].iter().zip(q).map(|(a, b)| a * b).sum::<f32>(), i))
            .collect();
        exact.sort_by(|a, b| b.0.total_cmp(&a.0));
        let want: Vec<u128> = exact[..5].iter().map(|e| e.1).collect();
        assert_eq!(got.iter().map(|(id, _)| id.as_u128()).collect::<Vec<_>>(), want);
    }

    #[test]
    fn expired_nodes_are_skipped_and_counted() {
        let dim = 8;
        let data = clustered(300, dim, 3);
        let mut g = NsVectors::new(dim);
        let mut t = Vec::new();
        for (i, v) in data.iter().enumerate() {
            g.add(Uuid::from_u128(i as u128), v, (i >= 10).then_some(100), &mut t);
        }
        assert_eq!((g.live_at(99), g.live_at(100)), (300, 10));
        let got = g.nearest(&data[200], 20, 100, |_| true);
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|(id, _)| id.as_u128() < 10));
        assert!(g.has_live(100));
    }

    fn mem() -> Engine {
        Engine::open(":memory:", crate::store::OpenOptions { create: true, ..Default::default() }).unwrap()
    }

    fn put(m: &Engine, ns: &Namespace, vs: &[Vec<f32>], first: usize) -> Vec<Uuid> {
        let batch = vs
            .iter()
            .enumerate()
            .map(|(i, v)| crate::episodes::EpisodeInput {
                id: Some(Uuid::from_u128((first + i) as u128 + 1)),
                embedding: Some(v.clone()),
                ..Default::default()
            })
            .collect();
        m.put_episodes(ns, batch, &|i| i + 1).unwrap()
    }

    /// Every key and value of the namespace's graph.
    fn graph_keys(m: &Engine, ns: &Namespace) -> Vec<(Vec<u8>, Vec<u8>)> {
        let snap = m.store.snapshot_without_postings();
        let start = index_key(&ns.prefix(), layout::HEADER, &[]);
        let end = index_key(&ns.prefix(), layout::END, &[]);
        let mut it = m.store.prefix_iter(&snap, Cf::Index, &ns.prefix(), &start);
        let mut out = Vec::new();
        while it.valid() && it.key().unwrap() < end.as_slice() {
            out.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
            it.next();
        }
        out
    }

    fn graph(m: &Engine, ns: &Namespace) -> VectorsRead {
        m.vectors.read(&m.store, ns).unwrap().unwrap()
    }

    #[test]
    fn the_same_inserts_write_byte_identical_graph_keys() {
        let data = clustered(600, 16, 11);
        let ns = Namespace::new("a", "u");
        let keys: Vec<_> = (0..2)
            .map(|_| {
                let m = mem();
                put(&m, &ns, &data[..250], 0);
                put(&m, &ns, &data[250..], 250);
                m.delete_episodes(&ns, &[Uuid::from_u128(5)]).unwrap();
                graph_keys(&m, &ns)
            })
            .collect();
        assert!(keys[0] == keys[1], "the same inserts wrote different graph keys");
        // A header, a vector and links per node, and a node key per live episode.
        assert_eq!(keys[0].len(), 1 + 600 + 600 + 599);
        // Graph state survives the cache: loading the keys gives the graph that wrote them.
        let m = mem();
        put(&m, &ns, &data, 0);
        let q = &data[17];
        let warm = graph(&m, &ns).nearest(q, 10, 0, |_| true);
        m.vectors.cache.remove(&cache_key(&ns.prefix()));
        assert_eq!(graph(&m, &ns).nearest(q, 10, 0, |_| true), warm);
    }

    #[test]
    fn a_failed_batch_leaves_no_change_in_the_loaded_graph() {
        let m = mem();
        let ns = Namespace::new("a", "u");
        let data = clustered(100, 8, 5);
        put(&m, &ns, &data, 0);
        let held = m.vectors.read(&m.store, &ns).unwrap().unwrap();
        drop(held);
        let arc = m.vectors.cache.get::<RwLock<NsVectors>>(&cache_key(&ns.prefix())).unwrap();
        let mut e = m.get_episode(&ns, &Uuid::from_u128(1)).unwrap().unwrap();
        e.id = Uuid::from_u128(999);
        let _w = m.write_lock.lock();
        let snap = m.store.snapshot_without_postings();
        let prefix = ns.prefix();
        let ctx = IndexWrite::new(&m.store, &snap, &prefix, 0);
        let mut batch = Batch::default();
        let stage = m.vectors.stage_vectors(&ctx, &[&e], &mut batch).unwrap();
        assert!(!batch.is_empty());
        drop(stage); // the batch was never written
        drop(_w);
        assert!(arc.read().retired, "holders of the changed graph reload it");
        let g = graph(&m, &ns);
        assert_eq!(g.hnsw.len(), 100);
        assert!(!g.node_of.contains_key(&e.id));
    }

    #[test]
    fn dead_nodes_are_dropped_by_a_rebuild_of_the_keys() {
        let data = clustered(2000, 8, 9);
        let ns = Namespace::new("a", "u");
        let gone: Vec<Uuid> = (0..1500u128).map(|i| Uuid::from_u128(i + 1)).collect();
        // The graph loaded when the deletes come, or not: both rebuild, to the same keys.
        let (loaded, unloaded) = (mem(), mem());
        for (m, evict) in [(&loaded, false), (&unloaded, true)] {
            put(m, &ns, &data, 0);
            if evict {
                m.vectors.cache.remove(&cache_key(&ns.prefix()));
            }
            m.delete_episodes(&ns, &gone[..1000]).unwrap();
            assert_eq!(graph(m, &ns).hnsw.len(), 2000, "1000 dead of 2000 are not yet a majority");
            if evict {
                m.vectors.cache.remove(&cache_key(&ns.prefix()));
            }
            m.delete_episodes(&ns, &gone[1000..]).unwrap();
            let g = graph(m, &ns);
            assert_eq!((g.hnsw.len(), g.hnsw.live()), (500, 500));
        }
        assert!(graph_keys(&loaded, &ns) == graph_keys(&unloaded, &ns), "the two paths wrote different keys");
        let m = loaded;
        put(&m, &ns, &data[..1], 5000);
        assert_eq!(graph_keys(&m, &ns).len(), 1 + 3 * 501);
        let q = &data[1700];
        let warm = graph(&m, &ns).nearest(q, 5, 0, |_| true);
        assert_eq!(warm[0].0, Uuid::from_u128(1701));
        m.vectors.cache.remove(&cache_key(&ns.prefix()));
        assert_eq!(graph(&m, &ns).nearest(q, 5, 0, |_| true), warm);
    }

    #[test]
    fn removals_and_expiry_changes_need_no_loaded_graph_and_write_the_same_keys() {
        let ns = Namespace::new("a", "u");
        let data = clustered(300, 8, 21);
        let later = |m: &Engine, evict: bool| {
            if evict {
                m.vectors.cache.remove(&cache_key(&ns.prefix()));
            }
            m.delete_episodes(&ns, &[Uuid::from_u128(4), Uuid::from_u128(40)]).unwrap();
            let e = crate::episodes::EpisodeInput {
                id: Some(Uuid::from_u128(7)),
                embedding: Some(data[6].clone()),
                expiry: crate::episodes::Expiry::At(5),
                ..Default::default()
            };
            m.put_episodes(&ns, vec![e], &|i| i + 1).unwrap();
            m.put_episodes(&ns, vec![Default::default()], &|i| i + 1).unwrap();
        };
        let (loaded, unloaded) = (mem(), mem());
        for (m, evict) in [(&loaded, false), (&unloaded, true)] {
            put(m, &ns, &data, 0);
            later(m, evict);
        }
        assert_eq!(unloaded.vectors.cache.stats().entries, 0, "the writes did not load the graph");
        assert!(graph_keys(&unloaded, &ns) == graph_keys(&loaded, &ns), "the two paths wrote different keys");
        let g = graph(&unloaded, &ns);
        assert_eq!((g.hnsw.live(), g.live_at(4), g.live_at(5)), (298, 298, 297));
        let near = |q: usize| g.nearest(&data[q], 1, 5, |_| true)[0].0;
        assert_ne!(near(3), Uuid::from_u128(4));
        assert_ne!(near(6), Uuid::from_u128(7));
    }
}
