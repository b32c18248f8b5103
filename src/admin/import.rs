//! Import: the JSON Lines of `export` back into a store, through the same index staging as
//! every write. The whole input is parsed and checked (`crate::wire::export`) before
//! anything is written.

use super::export::{Progress, Transfer};
use crate::adk::{encode_bucket, Bucket};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::{self, adk_tag};
use crate::store::CF_ADK;
use crate::txn::Writers;
use crate::wire::export::{parse_export, NsImport};
use crate::Mnem;
use std::collections::HashSet;

impl Engine {
    /// `Mnem::import` (the public documentation is there).
    pub(crate) fn import(&self, input: &str, progress: Progress<'_>) -> Result<Transfer> {
        self.store.check_writable()?;
        let (namespaces, lines) = parse_export(input)?;
        let writers = Writers::lock(self)?;
        let snap = self.store.snapshot();
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
        n: NsImport,
        t: &mut Transfer,
        progress: Progress<'_>,
    ) -> Result<()> {
        let prefix = n.ns.prefix();
        let mut txn = writers.begin(&n.ns);
        let adk = self.store.cf(CF_ADK);
        if n.next_bucket > 0 {
            txn.batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::NAMESPACE, &[]), n.next_bucket.to_le_bytes());
        }
        for (session, pos, next_seq) in &n.buckets {
            let bucket = encode_bucket(Bucket { position: *pos, next_seq: *next_seq });
            txn.batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::BUCKET, session.as_bytes()), bucket);
        }
        for id in &n.tombstones {
            txn.batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::TOMBSTONE, id.as_bytes()), []);
        }
        self.vectors.stage_dimension(&self.store, &mut txn.batch, &n.ns, n.dimension);
        let tombstoned: HashSet<&str> = n.tombstones.iter().map(String::as_str).collect();
        for (p, seq, id, _) in &n.orders {
            txn.batch.put_cf(adk, keys::adk_key(&prefix, adk_tag::ORDER, &keys::order_suffix(*p, *seq)), id.as_bytes());
            txn.placement.places.insert(*id, (*p, *seq));
        }
        for e in &n.episodes {
            if !e.deleted && tombstoned.contains(crate::adk::memory_id(e.event_id.as_deref(), &e.id).as_str()) {
                txn.placement.excluded.insert(e.id);
            }
        }
        let before = t.episodes;
        txn.commit_built(&n.episodes, true, |done| {
            t.episodes = before + done;
            progress(t.episodes, 0);
        })
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
