//! Import: the JSON Lines of `export` back into a store, through the same index staging as
//! every write. The whole input is parsed and checked (`crate::wire::export`) before
//! anything is written; its episodes are then parsed again a chunk at a time as they are
//! written, so that an import holds its input and one chunk, not every episode at once.

use super::export::{Progress, Transfer};
use crate::adk::state::{AdkChanges, Bucket};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::txn::{Writers, CHUNK};
use crate::wire::export::{import_episode, parse_export, NsImport};
use crate::Mnem;
use std::collections::HashSet;

impl Engine {
    /// `Mnem::import` (the public documentation is there).
    pub(crate) fn import(&self, input: &str, progress: Progress<'_>) -> Result<Transfer> {
        self.store.check_writable()?;
        let (namespaces, lines) = parse_export(input)?;
        let writers = Writers::lock(self)?;
        let snap = self.store.snapshot_without_postings();
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
            self.import_namespace(&writers, n, &mut t, progress)?;
            t.namespaces += 1;
        }
        Ok(t)
    }

    fn import_namespace(
        &self,
        writers: &Writers<'_>,
        n: NsImport<'_>,
        t: &mut Transfer,
        progress: Progress<'_>,
    ) -> Result<()> {
        let prefix = n.ns.prefix();
        let mut txn = writers.begin(&n.ns)?;
        let mut adk = AdkChanges { batch: &mut txn.batch, prefix: &prefix };
        if n.next_bucket > 0 {
            adk.set_next_position(n.next_bucket);
        }
        for (session, pos, next_seq) in &n.buckets {
            adk.put_bucket(session, Bucket { position: *pos, next_seq: *next_seq });
        }
        for id in &n.tombstones {
            adk.put_tombstone(id);
        }
        for (p, seq, id, _) in &n.orders {
            adk.put_order(*p, *seq, id);
            txn.placement
                .places
                .insert(*id, crate::derived::Placed { bucket: *p, seq: *seq, primary_is_content_text: false });
        }
        self.vectors.stage_space(&mut txn.batch, &n.ns, n.space.as_ref());
        let tombstoned: HashSet<&str> = n.tombstones.iter().map(String::as_str).collect();
        // A chunk's lines are parsed again just before it is written: only one chunk's
        // episodes are held at once (the lines were all checked by `parse_export`).
        for lines in n.episodes.chunks(CHUNK) {
            let episodes = lines.iter().map(|l| import_episode(l)).collect::<Result<Vec<_>>>()?;
            for e in &episodes {
                if !e.deleted && tombstoned.contains(crate::adk::memory_id(e.event_id.as_deref(), &e.id).as_str()) {
                    txn.placement.excluded.insert(e.id);
                }
            }
            txn.commit_built(&episodes, true)?;
            t.episodes += episodes.len() as u64;
            progress(t.episodes, 0);
        }
        // The namespace's own keys, when it has no episode to carry them.
        txn.commit_built(&[], true)
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
