//! The BM25 inverted index of a namespace, persisted in the `index` column family.

use crate::error::Result;
use crate::mnem::IndexWrite;
use crate::record::Episode;
use rocksdb::WriteBatch;

/// Stage the index changes of `staged` into `batch` (see `crate::mnem`).
pub(crate) fn stage(_ctx: &IndexWrite<'_>, _staged: &[&Episode], _batch: &mut WriteBatch) -> Result<()> {
    Ok(())
}
