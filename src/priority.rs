//! Searches first: a write waits, briefly, for the searches that were running when it
//! arrived.
//!
//! On a machine with few cores, a writer that writes without pause, with the flushes and
//! postings moves it causes, takes the CPU a search needs, and the slowest searches spend
//! about half their time waiting for a core (BENCHMARKS.md). A search registers itself for
//! as long as it reads (`Searches::begin`); a writer, before it takes the writers' lock,
//! waits until each search in flight at that moment has finished, or `bound` has passed
//! (`Searches::yield_to_running`). Searches that start later do not hold it back, so a
//! writer is never starved, and with no search running it does not wait at all. The bound
//! is the open option `write_yield_ms` (`OpenOptions::write_yield_ms`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Searches tracked at once; more run untracked (a writer does not wait for those). One bit
/// of a `u32` each, for the set a writer waits for.
const SLOTS: usize = 32;
const _: () = assert!(SLOTS <= u32::BITS as usize);
/// How often a waiting writer looks again.
const POLL: Duration = Duration::from_micros(50);

/// The searches in flight on one open store.
pub(crate) struct Searches {
    /// Each slot is free (0) or holds the start of a search in flight, in microseconds
    /// since `epoch` plus one.
    slots: [AtomicU64; SLOTS],
    epoch: Instant,
    bound: Duration,
}

/// A search in flight, until dropped.
pub(crate) struct InFlight<'a> {
    searches: &'a Searches,
    slot: Option<usize>,
}

impl Searches {
    /// `bound`: the longest a writer waits (zero: writers never wait).
    pub fn new(bound: Duration) -> Searches {
        Searches { slots: std::array::from_fn(|_| AtomicU64::new(0)), epoch: Instant::now(), bound }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64 + 1
    }

    /// Register a search that starts now.
    pub fn begin(&self) -> InFlight<'_> {
        if self.bound.is_zero() {
            return InFlight { searches: self, slot: None };
        }
        let now = self.now();
        let slot =
            self.slots.iter().position(|s| s.compare_exchange(0, now, Ordering::AcqRel, Ordering::Relaxed).is_ok());
        InFlight { searches: self, slot }
    }

    /// Wait until every search in flight now has finished, or the bound has passed.
    pub fn yield_to_running(&self) {
        if self.bound.is_zero() {
            return;
        }
        let arrived = self.now();
        // A slot freed and taken again holds a later start: that search is not waited for.
        let running = |i: &usize| {
            let start = self.slots[*i].load(Ordering::Acquire);
            start != 0 && start <= arrived
        };
        // The slots waited for, one bit each; a slot leaves the set once its search ends.
        let still_running =
            |set: u32| (0..SLOTS).filter(|i| set & 1 << i != 0 && running(i)).fold(0, |s, i| s | 1 << i);
        let mut waiting = still_running(u32::MAX);
        let deadline = Instant::now() + self.bound;
        while waiting != 0 && Instant::now() < deadline {
            std::thread::sleep(POLL);
            waiting = still_running(waiting);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            self.searches.slots[i].store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    const LONG: Duration = Duration::from_secs(30);

    #[test]
    fn with_no_search_running_a_writer_does_not_wait() {
        let s = Searches::new(LONG);
        drop(s.begin());
        let t = Instant::now();
        s.yield_to_running();
        assert!(t.elapsed() < LONG / 2);
    }

    #[test]
    fn a_writer_waits_for_the_searches_running_when_it_arrived_and_no_later_ones() {
        let s = Searches::new(LONG);
        let first_ended = AtomicBool::new(false);
        let (went_on_tx, went_on_rx) = mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let first = s.begin();
            let (s, first_ended_ref) = (&s, &first_ended);
            scope.spawn(move || {
                std::thread::sleep(Duration::from_millis(30));
                // A second search starts while the writer waits, then the first ends and a
                // third takes its slot.
                let second = s.begin();
                first_ended_ref.store(true, Ordering::SeqCst);
                drop(first);
                let third = s.begin();
                // They end only once the writer went on (or after 10 s).
                let _ = went_on_rx.recv_timeout(Duration::from_secs(10));
                drop((second, third));
            });
            let t = Instant::now();
            s.yield_to_running();
            went_on_tx.send(()).unwrap();
            assert!(first_ended.load(Ordering::SeqCst), "the writer went on before the running search ended");
            assert!(t.elapsed() < Duration::from_secs(10), "the writer waited for a search that started after it");
        });
    }

    #[test]
    fn the_bound_is_the_longest_a_writer_waits() {
        let s = Searches::new(Duration::from_millis(20));
        let _running = s.begin();
        let t = Instant::now();
        s.yield_to_running();
        let waited = t.elapsed();
        assert!(waited >= Duration::from_millis(20) && waited < LONG, "{waited:?}");
    }

    #[test]
    fn a_zero_bound_tracks_nothing() {
        let s = Searches::new(Duration::ZERO);
        assert!(s.begin().slot.is_none());
        s.yield_to_running();
    }

    /// Through the store: a search's snapshot holds a write back until it is dropped.
    #[test]
    fn a_store_write_waits_for_a_search_in_flight() {
        use crate::keys::Namespace;
        use crate::record::EpisodeInput;
        let opts = crate::store::OpenOptions { create: true, write_yield_ms: Some(30_000), ..Default::default() };
        let m = crate::Mnem::open(":memory:", opts).unwrap();
        let ns = Namespace::new("app", "user");
        let written = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let search = m.engine().read_snapshot().unwrap();
            let writer = scope.spawn(|| {
                m.put_episodes(&ns, vec![EpisodeInput { primary: "x".into(), ..Default::default() }]).unwrap();
                written.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(100));
            assert!(!written.load(Ordering::SeqCst), "the write went on while a search ran");
            drop(search);
            writer.join().unwrap();
        });
        assert!(written.load(Ordering::SeqCst));
    }
}
