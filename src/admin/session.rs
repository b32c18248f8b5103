//! Deleting what one ADK session added: the events of its bucket, through the normal write
//! path (tombstone revisions, index changes in the same batch), and the bucket itself.

use crate::adk::state::{AdkChanges, AdkState};
use crate::engine::Engine;
use crate::error::Result;
use crate::keys::Namespace;
use crate::txn::Writers;
use crate::Mnem;
use uuid::Uuid;

impl Engine {
    /// `Mnem::delete_session` (the public documentation is there).
    pub(crate) fn delete_session(&self, ns: &Namespace, session_id: &str) -> Result<u64> {
        let writers = Writers::lock(self)?;
        let mut txn = writers.begin(ns)?;
        let prefix = txn.prefix().to_vec();
        let state = AdkState { store: &self.store, snap: txn.snapshot(), prefix: &prefix };
        let Some(bucket) = state.bucket(session_id)? else { return Ok(0) };
        // The bucket's order keys name every event it holds (the index names only the
        // indexed ones): each goes, with its episode.
        let mut members: Vec<(u32, u64, Uuid)> = Vec::new();
        state.order(Some(bucket.position), None, |p, seq, id| {
            members.push((p, seq, id));
            Ok(true)
        })?;
        let mut deleted = 0;
        txn.episodes.prefetch(members.iter().map(|m| m.2))?;
        for (p, seq, id) in &members {
            let now = txn.now;
            deleted += u64::from(txn.episodes.tombstone(id, now)?);
            AdkChanges { batch: &mut txn.batch, prefix: &prefix }.delete_order(*p, *seq);
        }
        AdkChanges { batch: &mut txn.batch, prefix: &prefix }.delete_bucket(session_id);
        txn.commit()?;
        Ok(deleted)
    }
}

impl Mnem {
    /// Delete what the ADK session `session_id` added to the namespace: every event stored
    /// in its bucket by `add_session` / `add_events` (`__unknown_session_id__` names the
    /// events added without a session id) becomes a tombstone, and the bucket is removed, in
    /// one atomic write through the normal write path (the indexes change in the same batch).
    /// `search` then ranks the remaining memories exactly as if the session had never been
    /// added; a later add of the same session id starts a new bucket after every existing one.
    /// `delete_memory` tombstones stay. Like every delete, the events' text leaves the records
    /// at once but older table files keep it until compaction (`forget_namespace` erases).
    /// Returns how many stored events were deleted (expired ones included); 0 for an unknown
    /// session.
    pub fn delete_session(&self, ns: &Namespace, session_id: &str) -> Result<u64> {
        self.engine().delete_session(ns, session_id)
    }
}
