//! `Mnem`: an open store plus the derived, in-memory search state of its namespaces.

use crate::adk::index::AdkIndex;
use crate::error::Result;
use crate::keys::Namespace;
use crate::store::{OpenOptions, Store};
use crate::vector::VectorCache;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;

/// The whole library behind one handle. Every method is safe to call from many threads.
pub struct Mnem {
    pub(crate) store: Store,
    /// Serializes writers: each write reads, decides and commits one batch without another
    /// writer in between (revisions, dedup and bucket order depend on it).
    pub(crate) write_lock: Mutex<()>,
    /// `mnem_search` indexes by namespace prefix, built on first use and kept in step by the
    /// ADK writes; other writes to a namespace drop its index.
    pub(crate) adk: RwLock<HashMap<Vec<u8>, Arc<RwLock<AdkIndex>>>>,
    pub(crate) vectors: VectorCache,
}

impl Mnem {
    /// Open (or create) a store; `path` is a directory or `:memory:`.
    pub fn open(path: &str, opts: OpenOptions) -> Result<Mnem> {
        Ok(Mnem {
            store: Store::open(path, opts)?,
            write_lock: Mutex::new(()),
            adk: RwLock::new(HashMap::new()),
            vectors: VectorCache::default(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Make every acknowledged write durable.
    pub fn flush(&self) -> Result<()> {
        self.store.flush()
    }

    /// Run `commit` with the namespace's ADK index (if one is loaded) locked against
    /// searches, then retire and drop the index: for writes that do not maintain it
    /// incrementally. A search that took the index before the commit sees it retired and
    /// looks again, so it never ranks on entries older than the records it reads.
    pub(crate) fn with_adk_invalidated<T>(&self, ns: &Namespace, commit: impl FnOnce() -> Result<T>) -> Result<T> {
        let prefix = ns.prefix();
        let loaded = self.adk.read().get(&prefix).cloned();
        let mut guard = loaded.as_ref().map(|ix| ix.write());
        let out = commit()?;
        self.adk.write().remove(&prefix);
        if let Some(g) = guard.as_mut() {
            g.retire();
        }
        drop(guard);
        Ok(out)
    }
}
