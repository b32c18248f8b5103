//! Integrity check: read every key of every column family with the storage's checksums
//! verified (`store::Backend::verify`), and parse every episode record, reporting counts and the first problem.

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::record::RecordView;
use crate::store::Cf;
use crate::Mnem;
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
        for (i, cf) in Cf::ALL.into_iter().enumerate() {
            if let Err(e) = self.check_cf(cf, i, &mut r, progress) {
                r.problem = Some(e.context(format!("column family {:?}", cf.name())));
                return r;
            }
        }
        r
    }

    fn check_cf(&self, cf: Cf, i: usize, r: &mut CheckReport, progress: &mut dyn FnMut(u64)) -> Result<()> {
        self.store.verify(cf, &mut |k, v| {
            r.keys[i] += 1;
            r.bytes += (k.len() + v.len()) as u64;
            if cf == Cf::Episodes {
                let id = k
                    .len()
                    .checked_sub(16)
                    .map(|at| Uuid::from_bytes(k[at..].try_into().expect("16 bytes")))
                    .ok_or_else(|| Error::corruption("an episode key is too short"))?;
                RecordView::parse(id, v).map_err(|e| e.context(format!("episode {id}")))?;
                r.episodes += 1;
            }
            if r.keys[i].is_multiple_of(4096) {
                progress(r.bytes);
            }
            Ok(())
        })?;
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
