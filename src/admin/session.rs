//! Deleting what one ADK session added: the events of its bucket, through the normal write
//! path (tombstone revisions, index changes in the same batch), and the bucket itself.

use crate::derived::Placement;
use crate::engine::Engine;
use crate::episodes::Pending;
use crate::error::{Error, Result};
use crate::keys::{self, adk_tag, Namespace};
use crate::store::{now_ms, CF_ADK};
use crate::Mnem;
use rocksdb::WriteBatch;
use uuid::Uuid;

impl Engine {
    /// `Mnem::delete_session` (the public documentation is there).
    pub(crate) fn delete_session(&self, ns: &Namespace, session_id: &str) -> Result<u64> {
        self.store.check_writable()?;
        let _w = self.write_lock.lock();
        let mut pending = Pending::new(&self.store, ns);
        let prefix = pending.prefix().to_vec();
        let bucket_key = keys::adk_key(&prefix, adk_tag::BUCKET, session_id.as_bytes());
        let Some(bucket) = self.store.get_cf(pending.snapshot(), CF_ADK, &bucket_key)? else { return Ok(0) };
        // The bucket record holds the position little-endian; order keys hold it big-endian.
        let position: [u8; 4] = bucket
            .get(..4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .filter(|_| bucket.len() == 12)
            .map(|b| u32::from_le_bytes(b).to_be_bytes())
            .ok_or_else(|| Error::corruption("ADK bucket record is malformed"))?;
        // The bucket's order keys name every event it holds (the index names only the
        // indexed ones): each goes, with its episode.
        let order_prefix = keys::adk_key(&prefix, adk_tag::ORDER, &position);
        let mut members: Vec<(Vec<u8>, Uuid)> = Vec::new();
        self.store.scan_prefix(pending.snapshot(), CF_ADK, &order_prefix, |seq, v| {
            let id = <[u8; 16]>::try_from(v).map_err(|_| Error::corruption("ADK order record is malformed"))?;
            if seq.len() != 8 {
                return Err(Error::corruption("ADK order record is malformed"));
            }
            members.push(([order_prefix.as_slice(), seq].concat(), Uuid::from_bytes(id)));
            Ok(true)
        })?;
        let now = now_ms();
        let mut batch = WriteBatch::default();
        let mut deleted = 0;
        for (key, id) in &members {
            deleted += u64::from(pending.tombstone(id, now)?);
            batch.delete_cf(self.store.cf(CF_ADK), key);
        }
        batch.delete_cf(self.store.cf(CF_ADK), bucket_key);
        self.commit(&pending, batch, &Placement::default())?;
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
