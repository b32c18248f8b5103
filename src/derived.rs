//! Derived indexes: what every index of a namespace (BM25 in `lexical::index`, the
//! `mnem_search` index in `adk::index`, the HNSW graph in `vector`) provides, so that the one
//! write path (`engine::Engine::commit_staged`) keeps them all current.
//!
//! - **Kept current by a write batch**: `stage` adds the index's key changes for the episodes
//!   a batch changes to that same batch. The previous state comes from the index's own
//!   keys in the writer's snapshot, so a re-write or delete never re-reads old records.
//! - **Built**: by staging episodes it has never seen, as every new episode is; an older
//!   store's indexes are built that way once (`upgrade`).
//! - **Loaded and evicted**: an index answers from its keys in a snapshot. What is too slow to
//!   read key by key (a graph) is loaded into `cache::Cache`, least recently used out first,
//!   and reloaded from its keys; `publish` updates a loaded copy once the batch is committed.

use crate::error::Result;
use crate::record::Episode;
use crate::store::runs::Postings;
use crate::store::{Batch, Cf, Snapshot, Store};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// What one staging step sees: the writer's snapshot (taken under the write lock), the
/// namespace's key prefix and the write's time.
pub(crate) struct IndexWrite<'a> {
    pub store: &'a Store,
    pub snap: &'a Snapshot<'a>,
    pub prefix: &'a [u8],
    pub now: i64,
}

impl<'a> IndexWrite<'a> {
    pub fn new(store: &'a Store, snap: &'a Snapshot<'a>, prefix: &'a [u8], now: i64) -> IndexWrite<'a> {
        IndexWrite { store, snap, prefix, now }
    }
}

/// Where the episodes of a write sit in ADK's tie order, as the writer decided.
#[derive(Debug, Default)]
pub(crate) struct Placement {
    /// Where the ADK events of the write sit in their session's bucket.
    pub places: HashMap<Uuid, Placed>,
    /// Episodes never indexed for `mnem_search` (an older store's episodes whose memory id
    /// was tombstoned).
    pub excluded: HashSet<Uuid>,
}

/// An ADK event's place in ADK's tie order, as the writer decided it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placed {
    pub bucket: u32,
    pub seq: u64,
    /// The event's primary text is exactly the text of its content's parts (the ADK write
    /// path stores a new event so), which the ADK index then reads without parsing the
    /// content again. An import or an upgrade places events whose primary text it does not
    /// vouch for.
    pub primary_is_content_text: bool,
}

/// Key changes of one index in the `index` keyspace: postings (many per episode, which the
/// storage may write behind the batch: `store::Batch::add_postings`) and the rest, added to
/// the batch in key order, since an ordered store inserts a sorted run of keys faster than
/// scattered ones (each search resumes where the last ended).
#[derive(Default)]
pub(crate) struct KeyOps {
    now: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    postings: Postings,
}

impl KeyOps {
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.now.push((key, Some(value)));
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.now.push((key, None));
    }

    /// A posting put: `key` appends the key's bytes.
    pub fn put_posting(&mut self, key: impl FnOnce(&mut Vec<u8>), value: &[u8]) {
        self.postings.push(key, Some(value));
    }

    pub fn delete_posting(&mut self, key: impl FnOnce(&mut Vec<u8>)) {
        self.postings.push(key, None);
    }

    /// Add the changes to `batch`.
    pub fn apply(mut self, batch: &mut Batch) {
        // Stable: a key removed and written again (a re-written document's key) keeps the
        // write last.
        self.now.sort_by(|a, b| a.0.cmp(&b.0));
        for (k, v) in self.now {
            match v {
                Some(v) => batch.put(Cf::Index, k, v),
                None => batch.delete(Cf::Index, k),
            }
        }
        batch.add_postings(self.postings);
    }
}

/// A derived index of every namespace.
pub(crate) trait DerivedIndex {
    /// What `stage` hands over for after the commit (in-memory state to publish). Dropped
    /// without `publish`, the batch failed and it must undo what it holds.
    type Staged<'a>
    where
        Self: 'a;

    /// Add this index's changes for `staged` (each episode once, in its new revision) to
    /// `batch`.
    fn stage<'a>(
        &'a self,
        ctx: &IndexWrite<'_>,
        staged: &[&Episode],
        placement: &Placement,
        batch: &mut Batch,
    ) -> Result<Self::Staged<'a>>;

    /// The batch was committed.
    fn publish(staged: Self::Staged<'_>) {
        drop(staged);
    }
}
