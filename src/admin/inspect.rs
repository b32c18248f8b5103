//! Reading a store by namespace: episodes by id, the list of namespaces, and one
//! namespace's statistics. Everything is read from one snapshot per call.

use crate::adk::state;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, index_tag, Namespace};
use crate::record::{Episode, ScanView};
use crate::store::{now_ms, Cf, Snapshot};
use crate::Mnem;
use uuid::Uuid;

/// The most ids one `get_episodes` call reads (bounds the answer's size).
pub const MAX_GET_EPISODES: usize = 10_000;

/// The most namespaces one `list_namespaces` page returns.
pub const MAX_NAMESPACE_PAGE: usize = 1000;

/// One namespace of `list_namespaces`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub namespace: Namespace,
    /// Episodes not deleted (expired ones count until a later write purges them from the
    /// keyword index): the keyword index's document counter, read without a scan.
    pub episodes: u64,
}

/// A page of `list_namespaces`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespacePage {
    pub namespaces: Vec<NamespaceInfo>,
    /// The cursor of the next page (the last namespace listed) when more may follow.
    pub next_after: Option<Namespace>,
}

/// Keys and their bytes (key + value) in one key range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyCount {
    pub keys: u64,
    pub bytes: u64,
}

/// One namespace's statistics (`namespace_stats`), counted by a scan of its keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamespaceStats {
    /// Stored episode records, one per episode (tombstones included).
    pub records: KeyCount,
    /// Records visible now, deleted (tombstones) and expired (not deleted).
    pub live: u64,
    pub deleted: u64,
    pub expired: u64,
    /// ADK session buckets, order keys (stored events in buckets), `delete_memory` tombstones.
    pub buckets: u64,
    pub bucket_events: u64,
    pub memory_tombstones: u64,
    /// Every key of the `adk` column family.
    pub adk: KeyCount,
    /// The derived indexes' keys: keyword (BM25), `mnem_search` (ADK), vector graph (HNSW).
    pub bm25_index: KeyCount,
    pub adk_index: KeyCount,
    pub vector_index: KeyCount,
    /// The namespace's vector dimension, once a vector was stored.
    pub dimension: Option<u32>,
    /// The model that made the namespace's vectors, when one was named
    /// (`crate::vector::VectorSpace`).
    pub embedding_model: Option<String>,
    /// RocksDB's estimate of the table-file bytes of the namespace's key ranges.
    pub approximate_file_bytes: u64,
}

/// The namespace whose prefix starts `key`, and the prefix's length.
pub(crate) fn namespace_of(key: &[u8]) -> Result<(Namespace, usize)> {
    let bad = || Error::corruption("a key does not start with a namespace prefix");
    let mut pos = 0;
    let mut part = || -> Result<String> {
        let len = u32::from_be_bytes(key.get(pos..pos + 4).ok_or_else(bad)?.try_into().expect("4 bytes")) as usize;
        let bytes = key.get(pos + 4..pos + 4 + len).ok_or_else(bad)?;
        pos += 4 + len;
        String::from_utf8(bytes.to_vec()).map_err(|_| bad())
    };
    let app = part()?;
    let user = part()?;
    Ok((Namespace::new(app, user), pos))
}

impl Engine {
    /// The first namespace with a key in `cf` at or after `from`.
    pub(crate) fn first_namespace_from(
        &self,
        snap: &Snapshot<'_>,
        cf: Cf,
        from: &[u8],
    ) -> Result<Option<(Namespace, Vec<u8>)>> {
        let it = self.store.prefix_iter(snap, cf, &[], from);
        if !it.valid() {
            it.status()?;
            return Ok(None);
        }
        let (ns, len) = namespace_of(it.key().expect("valid iterator has a key"))?;
        let prefix = it.key().expect("valid iterator has a key")[..len].to_vec();
        Ok(Some((ns, prefix)))
    }

    /// `Mnem::list_namespaces` (the public documentation is there).
    pub(crate) fn list_namespaces(&self, after: Option<&Namespace>, limit: usize) -> Result<NamespacePage> {
        let snap = self.read_snapshot()?;
        let mut from = match after {
            Some(ns) => keys::prefix_successor(&ns.prefix()).unwrap_or_default(),
            None => Vec::new(),
        };
        let mut out = Vec::new();
        loop {
            // A namespace has episodes or ADK keys (a session added with no events) or both.
            let a = self.first_namespace_from(&snap, Cf::Episodes, &from)?;
            let b = self.first_namespace_from(&snap, Cf::Adk, &from)?;
            let next = match (a, b) {
                (Some(a), Some(b)) => Some(if a.1 <= b.1 { a } else { b }),
                (a, b) => a.or(b),
            };
            let Some((ns, prefix)) = next else { return Ok(NamespacePage { namespaces: out, next_after: None }) };
            if out.len() == limit {
                let last = out.last().map(|i: &NamespaceInfo| i.namespace.clone());
                return Ok(NamespacePage { namespaces: out, next_after: last });
            }
            let counter = keys::index_key(&prefix, index_tag::BM25_FIRST + 2, &[0]);
            let episodes = match self.store.get_cf(&snap, Cf::Index, &counter)? {
                Some(v) if v.len() == 16 => u64::from_le_bytes(v[..8].try_into().expect("8 bytes")),
                Some(_) => return Err(Error::corruption("a keyword index counter is malformed")),
                None => 0,
            };
            out.push(NamespaceInfo { namespace: ns, episodes });
            from = keys::prefix_successor(&prefix).unwrap_or_default();
        }
    }

    fn count_range(
        &self,
        snap: &Snapshot<'_>,
        cf: Cf,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
    ) -> Result<KeyCount> {
        let mut c = KeyCount::default();
        self.store.scan_prefix(snap, cf, prefix, |suffix, v| {
            c.keys += 1;
            c.bytes += (prefix.len() + suffix.len() + v.len()) as u64;
            f(suffix, v)?;
            Ok(true)
        })?;
        Ok(c)
    }

    /// `Mnem::namespace_stats` (the public documentation is there).
    pub(crate) fn namespace_stats(&self, ns: &Namespace) -> Result<NamespaceStats> {
        let snap = self.read_snapshot()?;
        let now = now_ms();
        let prefix = ns.prefix();
        let mut s = NamespaceStats::default();
        let (mut live, mut deleted, mut expired) = (0, 0, 0);
        s.records = self.count_range(&snap, Cf::Episodes, &prefix, |_, v| {
            let view = ScanView::parse(v)?;
            if view.deleted() {
                deleted += 1;
            } else if view.is_visible(now) {
                live += 1;
            } else {
                expired += 1;
            }
            Ok(())
        })?;
        (s.live, s.deleted, s.expired) = (live, deleted, expired);
        let (mut buckets, mut events, mut tombstones) = (0, 0, 0);
        s.adk = self.count_range(&snap, Cf::Adk, &prefix, |suffix, _| {
            match state::kind(suffix) {
                Some(state::Kind::Bucket) => buckets += 1,
                Some(state::Kind::Order) => events += 1,
                Some(state::Kind::Tombstone) => tombstones += 1,
                _ => {}
            }
            Ok(())
        })?;
        (s.buckets, s.bucket_events, s.memory_tombstones) = (buckets, events, tombstones);
        let (mut bm25, mut adk, mut vector) = (KeyCount::default(), KeyCount::default(), KeyCount::default());
        self.count_range(&snap, Cf::Index, &prefix, |suffix, v| {
            let c = match suffix.first().map(|t| t & 0xF0) {
                Some(t) if t == index_tag::BM25_FIRST => &mut bm25,
                Some(t) if t == index_tag::ADK_FIRST => &mut adk,
                Some(t) if t == index_tag::VECTOR_FIRST => &mut vector,
                _ => return Err(Error::corruption("an index key has an unknown tag")),
            };
            c.keys += 1;
            c.bytes += (prefix.len() + suffix.len() + v.len()) as u64;
            Ok(())
        })?;
        (s.bm25_index, s.adk_index, s.vector_index) = (bm25, adk, vector);
        if let Some(space) = self.vectors.space(&self.store, &snap, ns)? {
            s.dimension = Some(space.dimension);
            s.embedding_model = space.model;
        }
        let end = keys::prefix_successor(&prefix).unwrap_or_default();
        for cf in [Cf::Episodes, Cf::Adk, Cf::Index] {
            s.approximate_file_bytes += self.store.approximate_bytes(cf, &prefix, &end);
        }
        Ok(s)
    }

    /// `Mnem::get_episodes` (the public documentation is there).
    pub(crate) fn get_episodes(&self, ns: &Namespace, ids: &[Uuid]) -> Result<Vec<Option<Episode>>> {
        let snap = self.store.snapshot_without_postings();
        let now = now_ms();
        let prefix = ns.prefix();
        ids.iter()
            .zip(self.store.get_episodes_raw(&snap, &prefix, ids)?)
            .map(|(id, bytes)| match bytes {
                Some(bytes) => {
                    let e = Episode::decode(*id, &bytes)?;
                    Ok(e.is_visible(now).then_some(e))
                }
                None => Ok(None),
            })
            .collect()
    }
}

impl Mnem {
    /// The visible episodes with these ids, from one snapshot, as
    /// `{"episodes":[Episode|null...]}` in the order of `ids`: `null` where no visible episode
    /// has the id (never stored, deleted or expired), so results line up with the request.
    /// At most `MAX_GET_EPISODES` ids a call.
    pub fn get_episodes(&self, ns: &Namespace, ids: &[Uuid]) -> Result<Vec<u8>> {
        if ids.len() > MAX_GET_EPISODES {
            return Err(Error::invalid(format!(
                "{} ids were given; one call reads at most {MAX_GET_EPISODES}",
                ids.len()
            )));
        }
        let mut out = Vec::new();
        crate::wire::episode::write_episode_list(&mut out, &self.engine().get_episodes(ns, ids)?);
        Ok(out)
    }

    /// The store's namespaces in key order (by the byte length of `app_name`, then its bytes,
    /// then likewise `user_id`), at most `limit` (1 to 1000) after `after`, from one snapshot.
    /// A namespace is listed while it has any record or ADK bucket (deleted episodes stay as
    /// tombstones: a namespace leaves the list only through `forget_namespace`).
    pub fn list_namespaces(&self, after: Option<&Namespace>, limit: usize) -> Result<NamespacePage> {
        if !(1..=MAX_NAMESPACE_PAGE).contains(&limit) {
            return Err(Error::invalid("`limit` must be an integer from 1 to 1000"));
        }
        self.engine().list_namespaces(after, limit)
    }

    /// One namespace's statistics, counted by a scan of its keys (time in proportion to them).
    pub fn namespace_stats(&self, ns: &Namespace) -> Result<NamespaceStats> {
        self.engine().namespace_stats(ns)
    }
}
