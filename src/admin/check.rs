//! Integrity check: read every key of every column family with RocksDB's block checksums
//! verified, and parse every episode record, reporting counts and the first problem.

use crate::deferred;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::record::RecordView;
use crate::store::{CF_ADK, CF_EPISODES, CF_INDEX, CF_META};
use crate::Mnem;
use rocksdb::ReadOptions;
use uuid::Uuid;

/// What `check` found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    /// Keys read per column family (`meta`, `episodes`, `adk`, `index`), in that order.
    pub keys: [u64; 4],
    /// Bytes read (keys and values).
    pub bytes: u64,
    /// Episode records that parsed.
    pub episodes: u64,
    /// The first problem, with its column family; the check stops there.
    pub problem: Option<Error>,
}

impl Engine {
    /// `Mnem::check` (the public documentation is there).
    pub(crate) fn check(&self, progress: &mut dyn FnMut(u64)) -> CheckReport {
        let mut r = CheckReport::default();
        for (i, cf) in [CF_META, CF_EPISODES, CF_ADK, CF_INDEX].into_iter().enumerate() {
            if let Err(e) = self.check_cf(cf, i, &mut r, progress) {
                r.problem = Some(e.context(format!("column family {cf:?}")));
                return r;
            }
        }
        r
    }

    fn check_cf(&self, cf: &str, i: usize, r: &mut CheckReport, progress: &mut dyn FnMut(u64)) -> Result<()> {
        let mut ro = ReadOptions::default();
        ro.set_verify_checksums(true);
        // A full scan must not evict what the store's readers keep in the block cache.
        ro.fill_cache(false);
        let mut it = self.store.db().raw_iterator_cf_opt(self.store.cf(cf), ro);
        it.seek_to_first();
        while it.valid() {
            let (k, v) = (it.key().expect("valid iterator has a key"), it.value().expect("valid iterator has a value"));
            r.keys[i] += 1;
            r.bytes += (k.len() + v.len()) as u64;
            if cf == CF_EPISODES {
                let id = k
                    .len()
                    .checked_sub(16)
                    .map(|at| Uuid::from_bytes(k[at..].try_into().expect("16 bytes")))
                    .ok_or_else(|| Error::corruption("an episode key is too short"))?;
                RecordView::parse(id, v).map_err(|e| e.context(format!("episode {id}")))?;
                r.episodes += 1;
            }
            if cf == CF_META && k.starts_with(deferred::JOURNAL_PREFIX) {
                for op in crate::runs::RunOps::new(v) {
                    op.map_err(|e| e.context(format!("journal entry {}", String::from_utf8_lossy(k))))?;
                }
            }
            if r.keys[i].is_multiple_of(4096) {
                progress(r.bytes);
            }
            it.next();
        }
        it.status()?;
        progress(r.bytes);
        Ok(())
    }
}

impl Mnem {
    /// Read every key of the store with RocksDB's block checksums verified (bypassing the
    /// block cache) and parse every episode record: a damaged table block or record is
    /// reported as the first `problem` (CORRUPTION, or IO when a file cannot be read), with
    /// the counts up to there. Time in proportion to the store's size; reads and writes go
    /// on meanwhile (the check sees the state at its start per column family).
    /// `progress` hears the bytes read so far.
    pub fn check(&self, progress: &mut dyn FnMut(u64)) -> CheckReport {
        self.engine().check(progress)
    }
}
