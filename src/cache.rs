//! The in-memory cache of derived state that is too slow to answer from the store item by
//! item (a namespace's HNSW graph): one least-recently-used list across namespaces with a
//! byte budget. Values are shared (`Arc`), so an evicted value stays usable by the readers
//! holding it and is freed when the last one lets go; the next use loads it from the store.

use lru::LruCache;
use parking_lot::Mutex;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

type Value = Arc<dyn Any + Send + Sync>;

/// What is cached: the kind of derived state and the namespace prefix it belongs to.
pub type Key = (u8, Vec<u8>);

struct Slot {
    value: Value,
    bytes: usize,
}

struct Inner {
    lru: LruCache<Key, Slot>,
    used: usize,
}

/// A byte-budgeted LRU of shared values.
pub struct Cache {
    budget: usize,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

/// Counters of a cache, for the store's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub budget_bytes: usize,
    pub used_bytes: usize,
    pub entries: usize,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
}

impl Cache {
    pub fn new(budget: usize) -> Cache {
        Cache {
            budget,
            inner: Mutex::new(Inner { lru: LruCache::unbounded(), used: 0 }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    /// The value under `key`, marked most recently used; counts a hit or a miss.
    pub fn get<T: Any + Send + Sync>(&self, key: &Key) -> Option<Arc<T>> {
        let found = self.inner.lock().lru.get(key).map(|s| s.value.clone());
        match found.and_then(|v| v.downcast::<T>().ok()) {
            Some(v) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(v)
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Like `get`, but neither counted nor marked used: for a second look (after taking a
    /// lock) at a key whose miss was already counted.
    pub fn peek<T: Any + Send + Sync>(&self, key: &Key) -> Option<Arc<T>> {
        self.inner.lock().lru.peek(key).and_then(|s| s.value.clone().downcast::<T>().ok())
    }

    /// Cache `value` as taking `bytes`, evicting least recently used values until the total
    /// fits the budget. A value larger than the whole budget is not kept.
    pub fn insert<T: Any + Send + Sync>(&self, key: Key, value: Arc<T>, bytes: usize) {
        let mut inner = self.inner.lock();
        if let Some(old) = inner.lru.pop(&key) {
            inner.used -= old.bytes;
        }
        if bytes > self.budget {
            return;
        }
        inner.used += bytes;
        inner.lru.put(key, Slot { value, bytes });
        self.shrink(&mut inner);
    }

    /// Record that the value under `key` now takes `bytes` (it grew or shrank in place).
    pub fn resize(&self, key: &Key, bytes: usize) {
        let mut inner = self.inner.lock();
        let Some(slot) = inner.lru.peek_mut(key) else { return };
        let old = std::mem::replace(&mut slot.bytes, bytes);
        inner.used = inner.used - old + bytes;
        if bytes > self.budget {
            inner.lru.pop(key);
            inner.used -= bytes;
            self.evictions.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.shrink(&mut inner);
    }

    pub fn remove(&self, key: &Key) {
        let mut inner = self.inner.lock();
        if let Some(old) = inner.lru.pop(key) {
            inner.used -= old.bytes;
        }
    }

    fn shrink(&self, inner: &mut Inner) {
        while inner.used > self.budget {
            let Some((_, old)) = inner.lru.pop_lru() else { break };
            inner.used -= old.bytes;
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn stats(&self) -> CacheStats {
        let inner = self.inner.lock();
        CacheStats {
            budget_bytes: self.budget,
            used_bytes: inner.used,
            entries: inner.lru.len(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Key {
        (0, vec![n])
    }

    #[test]
    fn evicts_least_recently_used_to_fit_the_budget() {
        let c = Cache::new(100);
        c.insert(key(1), Arc::new(1u32), 40);
        c.insert(key(2), Arc::new(2u32), 40);
        assert_eq!(c.get::<u32>(&key(1)).as_deref(), Some(&1)); // 1 is now the most recent
        c.insert(key(3), Arc::new(3u32), 40);
        assert!(c.get::<u32>(&key(2)).is_none());
        assert!(c.get::<u32>(&key(1)).is_some() && c.get::<u32>(&key(3)).is_some());
        let s = c.stats();
        assert_eq!((s.used_bytes, s.entries, s.evictions, s.hits, s.misses), (80, 2, 1, 3, 1));
    }

    #[test]
    fn growth_in_place_evicts_others_and_oversized_values_are_not_kept() {
        let c = Cache::new(100);
        c.insert(key(1), Arc::new(1u32), 30);
        c.insert(key(2), Arc::new(2u32), 30);
        c.resize(&key(2), 80);
        assert!(c.get::<u32>(&key(1)).is_none());
        assert_eq!(c.stats().used_bytes, 80);
        c.resize(&key(2), 101);
        assert_eq!(c.stats().used_bytes, 0);
        c.insert(key(3), Arc::new(3u32), 101);
        assert!(c.get::<u32>(&key(3)).is_none());
        assert_eq!(c.stats().entries, 0);
    }
}
