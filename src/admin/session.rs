//! Deleting what one ADK session added: the events of its bucket, through the normal write
//! path (tombstone revisions, index changes in the same batch), and the bucket itself.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, adk_tag, Namespace};
use crate::store::CF_ADK;
use crate::txn::Writers;
use crate::Mnem;
use uuid::Uuid;

impl Engine {
    /// `Mnem::delete_session` (the public documentation is there).
    pub(crate) fn delete_session(&self, ns: &Namespace, session_id: &str) -> Result<u64> {
        let writers = Writers::lock(self)?;
        let mut txn = writers.begin(ns);
        let prefix = txn.prefix().to_vec();
        let bucket_key = keys::adk_key(&prefix, adk_tag::BUCKET, session_id.as_bytes());
        let Some(bucket) = self.store.get_cf(txn.snapshot(), CF_ADK, &bucket_key)? else { return Ok(0) };
        let position = crate::adk::decode_bucket(&bucket)?.position;
        // The bucket's order keys name every event it holds (the index names only the
        // indexed ones): each goes, with its episode.
        let order_prefix = keys::adk_key(&prefix, adk_tag::ORDER, &position.to_be_bytes());
        let mut members: Vec<(Vec<u8>, Uuid)> = Vec::new();
        self.store.scan_prefix(txn.snapshot(), CF_ADK, &order_prefix, |seq, v| {
            let id = <[u8; 16]>::try_from(v).map_err(|_| Error::corruption("ADK order record is malformed"))?;
            if seq.len() != 8 {
                return Err(Error::corruption("ADK order record is malformed"));
            }
            members.push(([order_prefix.as_slice(), seq].concat(), Uuid::from_bytes(id)));
            Ok(true)
        })?;
        let mut deleted = 0;
        for (key, id) in &members {
            let now = txn.now;
            deleted += u64::from(txn.episodes.tombstone(id, now)?);
            txn.batch.delete_cf(self.store.cf(CF_ADK), key);
        }
        txn.batch.delete_cf(self.store.cf(CF_ADK), bucket_key);
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
