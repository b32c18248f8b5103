//! The `adk` keyspace, read and written here alone: per namespace, the next bucket position,
//! each session's bucket (its position in first-insertion order and the sequence number its
//! next event takes), the order entries `(position, sequence) -> episode` that define the tie
//! order of search, and the `delete_memory` tombstones. docs/FORMAT.md has the bytes.
//!
//! Keys: namespace prefix, a tag, then
//! - `00` -> u32le next bucket position;
//! - `01 session_id` -> bucket: u32le position, u64le next sequence;
//! - `02 u32be(position) u64be(seq)` -> the episode's 16 UUID bytes;
//! - `03 memory_id` -> empty: a permanent `delete_memory` tombstone.

use crate::error::{Error, Result};
use crate::store::{Batch, Cf, Snapshot, Store};
use uuid::Uuid;

const NAMESPACE: u8 = 0x00;
const BUCKET: u8 = 0x01;
const ORDER: u8 = 0x02;
const TOMBSTONE: u8 = 0x03;

fn key(prefix: &[u8], tag: u8, rest: &[&[u8]]) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 1 + rest.iter().map(|r| r.len()).sum::<usize>());
    k.extend_from_slice(prefix);
    k.push(tag);
    for r in rest {
        k.extend_from_slice(r);
    }
    k
}

/// A session's bucket record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub position: u32,
    pub next_seq: u64,
}

impl Bucket {
    fn decode(v: &[u8]) -> Result<Bucket> {
        if v.len() != 12 {
            return Err(Error::corruption("ADK bucket record is malformed"));
        }
        Ok(Bucket {
            position: u32::from_le_bytes(v[..4].try_into().expect("4 bytes")),
            next_seq: u64::from_le_bytes(v[4..].try_into().expect("8 bytes")),
        })
    }

    fn encode(self) -> [u8; 12] {
        let mut v = [0u8; 12];
        v[..4].copy_from_slice(&self.position.to_le_bytes());
        v[4..].copy_from_slice(&self.next_seq.to_le_bytes());
        v
    }
}

/// The kinds of `adk` keys, for statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Namespace,
    Bucket,
    Order,
    Tombstone,
}

/// The kind of the `adk` key whose suffix after the namespace prefix is `suffix`.
pub(crate) fn kind(suffix: &[u8]) -> Option<Kind> {
    match *suffix.first()? {
        NAMESPACE => Some(Kind::Namespace),
        BUCKET => Some(Kind::Bucket),
        ORDER => Some(Kind::Order),
        TOMBSTONE => Some(Kind::Tombstone),
        _ => None,
    }
}

/// One namespace's `adk` keys in one snapshot.
pub(crate) struct AdkState<'a> {
    pub store: &'a Store,
    pub snap: &'a Snapshot<'a>,
    pub prefix: &'a [u8],
}

impl AdkState<'_> {
    /// The position the namespace's next new bucket takes (0 when it has none).
    pub fn next_position(&self) -> Result<u32> {
        match self.store.get_cf(self.snap, Cf::Adk, &key(self.prefix, NAMESPACE, &[]))? {
            Some(v) => Ok(u32::from_le_bytes(
                v.as_slice().try_into().map_err(|_| Error::corruption("ADK namespace record is malformed"))?,
            )),
            None => Ok(0),
        }
    }

    /// The keys a write of events of `session_id` reads first: the namespace's record and
    /// the session's bucket (to read them ahead: `store::View::prefetch`).
    pub fn write_reads(prefix: &[u8], session_id: &str) -> [(Cf, Vec<u8>); 2] {
        [(Cf::Adk, key(prefix, NAMESPACE, &[])), (Cf::Adk, key(prefix, BUCKET, &[session_id.as_bytes()]))]
    }

    pub fn bucket(&self, session_id: &str) -> Result<Option<Bucket>> {
        let v = self.store.get_cf(self.snap, Cf::Adk, &key(self.prefix, BUCKET, &[session_id.as_bytes()]))?;
        v.map(|v| Bucket::decode(&v)).transpose()
    }

    /// Every bucket: `(session id, bucket)`, in session id byte order.
    pub fn buckets(&self) -> Result<Vec<(String, Bucket)>> {
        let mut out = Vec::new();
        self.store.scan_prefix(self.snap, Cf::Adk, &key(self.prefix, BUCKET, &[]), |session, v| {
            let session =
                String::from_utf8(session.to_vec()).map_err(|_| Error::corruption("an ADK key is malformed"))?;
            out.push((session, Bucket::decode(v)?));
            Ok(true)
        })?;
        Ok(out)
    }

    /// The order entries `(position, seq, episode)` in order, from bucket `position` alone
    /// (`Some`) or from all, starting after `after` (exclusive), until `f` returns false.
    pub fn order(
        &self,
        position: Option<u32>,
        after: Option<(u32, u64)>,
        mut f: impl FnMut(u32, u64, Uuid) -> Result<bool>,
    ) -> Result<()> {
        let pos = position.map(u32::to_be_bytes);
        let prefix = key(self.prefix, ORDER, &[pos.as_ref().map_or(&[][..], |p| &p[..])]);
        let start = match after {
            Some((p, s)) => {
                let mut k = key(self.prefix, ORDER, &[&order_suffix(p, s)]);
                k.push(0); // the smallest key after `after`
                k
            }
            None => prefix.clone(),
        };
        let skip = self.prefix.len() + 1;
        let mut it = self.store.prefix_iter(self.snap, Cf::Adk, &prefix, &start);
        while let Some((k, v)) = it.current() {
            let (p, seq) = parse_order_suffix(&k[skip..]).ok_or_else(malformed_order)?;
            let id = <[u8; 16]>::try_from(v).map_err(|_| malformed_order())?;
            if !f(p, seq, Uuid::from_bytes(id))? {
                return Ok(());
            }
            it.next();
        }
        it.status()
    }

    /// Which of `memory_ids` `delete_memory` removed: one batched read.
    pub fn tombstoned(&self, memory_ids: &[&str]) -> Result<Vec<bool>> {
        let keys: Vec<Vec<u8>> = memory_ids.iter().map(|m| key(self.prefix, TOMBSTONE, &[m.as_bytes()])).collect();
        Ok(self.store.multi_get_cf(self.snap, Cf::Adk, &keys)?.into_iter().map(|v| v.is_some()).collect())
    }

    /// Every tombstoned memory id, in byte order.
    pub fn tombstones(&self) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        self.store.scan_prefix(self.snap, Cf::Adk, &key(self.prefix, TOMBSTONE, &[]), |memory_id, _| {
            out.push(memory_id.to_vec());
            Ok(true)
        })?;
        Ok(out)
    }
}

fn malformed_order() -> Error {
    Error::corruption("ADK order record is malformed")
}

/// Changes to one namespace's `adk` keys, staged into a write's batch.
pub(crate) struct AdkChanges<'b> {
    pub batch: &'b mut Batch,
    pub prefix: &'b [u8],
}

impl AdkChanges<'_> {
    pub fn set_next_position(&mut self, position: u32) {
        self.batch.put(Cf::Adk, key(self.prefix, NAMESPACE, &[]), position.to_le_bytes());
    }

    pub fn put_bucket(&mut self, session_id: &str, b: Bucket) {
        self.batch.put(Cf::Adk, key(self.prefix, BUCKET, &[session_id.as_bytes()]), b.encode());
    }

    pub fn delete_bucket(&mut self, session_id: &str) {
        self.batch.delete(Cf::Adk, key(self.prefix, BUCKET, &[session_id.as_bytes()]));
    }

    pub fn put_order(&mut self, position: u32, seq: u64, id: &Uuid) {
        self.batch.put(Cf::Adk, key(self.prefix, ORDER, &[&order_suffix(position, seq)]), id.as_bytes());
    }

    pub fn delete_order(&mut self, position: u32, seq: u64) {
        self.batch.delete(Cf::Adk, key(self.prefix, ORDER, &[&order_suffix(position, seq)]));
    }

    pub fn put_tombstone(&mut self, memory_id: &str) {
        self.batch.put(Cf::Adk, key(self.prefix, TOMBSTONE, &[memory_id.as_bytes()]), b"");
    }
}

fn order_suffix(position: u32, seq: u64) -> [u8; 12] {
    let mut s = [0u8; 12];
    s[..4].copy_from_slice(&position.to_be_bytes());
    s[4..].copy_from_slice(&seq.to_be_bytes());
    s
}

/// The `(position, seq)` of an order key's suffix, if it has the right length.
fn parse_order_suffix(suffix: &[u8]) -> Option<(u32, u64)> {
    let s: &[u8; 12] = suffix.try_into().ok()?;
    Some((u32::from_be_bytes(s[..4].try_into().ok()?), u64::from_be_bytes(s[4..].try_into().ok()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_suffix_round_trips_and_sorts_by_position_then_seq() {
        assert_eq!(parse_order_suffix(&order_suffix(7, 1 << 40)), Some((7, 1 << 40)));
        assert_eq!(parse_order_suffix(&[0; 11]), None);
        assert!(order_suffix(1, u64::MAX) < order_suffix(2, 0));
    }

    #[test]
    fn a_bucket_round_trips_and_a_short_one_is_corruption() {
        let b = Bucket { position: 3, next_seq: 1 << 33 };
        assert_eq!(Bucket::decode(&b.encode()).unwrap(), b);
        assert!(Bucket::decode(&[0; 11]).is_err());
    }
}
