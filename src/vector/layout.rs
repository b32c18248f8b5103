//! The HNSW graph's keys in the `index` column family, after the namespace prefix:
//!
//! - `30` -> header: u8 layout version (1), u32le dimension, u32le node count, u32le live
//!   (not deleted) node count, u32le entry node (u32::MAX when empty), u8 top level, u64le
//!   level-generator state.
//! - `31 u32be(node)` -> the node's unit vector, `dimension` f32le; written once.
//! - `32 u32be(node)` -> the node's links: 16 bytes episode UUID, u8 flags (1 deleted,
//!   2 expires), i64le expiry in ms (0 unless flag 2), u8 level, then per level 0..=level
//!   u8 count and `count` u32le neighbour nodes; rewritten whenever one of these changes.
//! - `33 uuid` -> u32be node of the episode's live vector; absent when it has none.
//!
//! Node numbers are dense, from 0, in insertion order.

use crate::error::{Error, Result};
use crate::keys::{index_key, index_tag};
use uuid::Uuid;

pub const HEADER: u8 = index_tag::VECTOR_FIRST;
pub const VECTOR: u8 = index_tag::VECTOR_FIRST + 1;
pub const LINKS: u8 = index_tag::VECTOR_FIRST + 2;
pub const NODE_OF: u8 = index_tag::VECTOR_FIRST + 3;
/// One past the last tag in use: the graph's keys are `[prefix 30, prefix END)`.
pub const END: u8 = index_tag::VECTOR_FIRST + 4;

const VERSION: u8 = 1;
const DELETED: u8 = 1;
const EXPIRES: u8 = 2;

pub fn header_key(prefix: &[u8]) -> Vec<u8> {
    index_key(prefix, HEADER, &[])
}
pub fn vector_key(prefix: &[u8], node: u32) -> Vec<u8> {
    index_key(prefix, VECTOR, &node.to_be_bytes())
}
pub fn links_key(prefix: &[u8], node: u32) -> Vec<u8> {
    index_key(prefix, LINKS, &node.to_be_bytes())
}
pub fn node_of_key(prefix: &[u8], id: &Uuid) -> Vec<u8> {
    index_key(prefix, NODE_OF, id.as_bytes())
}

fn corrupt(what: &str) -> Error {
    Error::corruption(format!("vector index {what} is malformed"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub dim: u32,
    pub nodes: u32,
    pub live: u32,
    pub entry: Option<u32>,
    pub top: u8,
    pub rng: u64,
}

impl Header {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(26);
        v.push(VERSION);
        v.extend_from_slice(&self.dim.to_le_bytes());
        v.extend_from_slice(&self.nodes.to_le_bytes());
        v.extend_from_slice(&self.live.to_le_bytes());
        v.extend_from_slice(&self.entry.unwrap_or(u32::MAX).to_le_bytes());
        v.push(self.top);
        v.extend_from_slice(&self.rng.to_le_bytes());
        v
    }

    pub fn decode(b: &[u8]) -> Result<Header> {
        if b.len() != 26 || b[0] != VERSION {
            return Err(corrupt("header"));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let entry = u32_at(13);
        let h = Header {
            dim: u32_at(1),
            nodes: u32_at(5),
            live: u32_at(9),
            entry: (entry != u32::MAX).then_some(entry),
            top: b[17],
            rng: u64::from_le_bytes(b[18..26].try_into().expect("8 bytes")),
        };
        if h.live > h.nodes {
            return Err(corrupt("header"));
        }
        Ok(h)
    }
}

pub fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn decode_vector_into(b: &[u8], dim: usize, out: &mut Vec<f32>) -> Result<()> {
    if b.len() != 4 * dim {
        return Err(corrupt("vector"));
    }
    out.extend(b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))));
    Ok(())
}

/// What a links key holds about its node.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub id: Uuid,
    pub deleted: bool,
    pub expires: Option<i64>,
    pub links: Vec<Vec<u32>>,
}

pub fn encode_links(id: &Uuid, deleted: bool, expires: Option<i64>, links: &[Vec<u32>]) -> Vec<u8> {
    let n: usize = links.iter().map(|l| 1 + 4 * l.len()).sum();
    let mut v = Vec::with_capacity(26 + n);
    v.extend_from_slice(id.as_bytes());
    v.push(if deleted { DELETED } else { 0 } | if expires.is_some() { EXPIRES } else { 0 });
    v.extend_from_slice(&expires.unwrap_or(0).to_le_bytes());
    v.push(u8::try_from(links.len() - 1).expect("levels fit a byte"));
    for l in links {
        v.push(u8::try_from(l.len()).expect("a node keeps at most 32 links a level"));
        for x in l {
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    v
}

/// The episode a links record belongs to, and whether its node is deleted: the head of
/// `decode_links`, for readers that do not walk the graph.
pub fn decode_owner(b: &[u8]) -> Result<(Uuid, bool)> {
    match (b.get(..16), b.get(16)) {
        (Some(id), Some(flags)) => Ok((Uuid::from_bytes(id.try_into().expect("16 bytes")), flags & DELETED != 0)),
        _ => Err(corrupt("links record")),
    }
}

pub fn decode_links(b: &[u8], nodes: u32) -> Result<Node> {
    let bad = || corrupt("links record");
    if b.len() < 26 {
        return Err(bad());
    }
    let id = Uuid::from_bytes(b[..16].try_into().expect("16 bytes"));
    let flags = b[16];
    let expires = (flags & EXPIRES != 0).then(|| i64::from_le_bytes(b[17..25].try_into().expect("8 bytes")));
    let levels = usize::from(b[25]) + 1;
    if levels > super::hnsw::MAX_LEVEL + 1 {
        return Err(bad());
    }
    let mut at = 26;
    let mut links = Vec::with_capacity(levels);
    for _ in 0..levels {
        let count = usize::from(*b.get(at).ok_or_else(bad)?);
        at += 1;
        let body = b.get(at..at + 4 * count).ok_or_else(bad)?;
        let list: Vec<u32> = body.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        if count > super::hnsw::MAX_LINKS || list.iter().any(|&x| x >= nodes) {
            return Err(bad());
        }
        links.push(list);
        at += 4 * count;
    }
    if at != b.len() {
        return Err(bad());
    }
    Ok(Node { id, deleted: flags & DELETED != 0, expires, links })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_links_round_trip() {
        let h = Header { dim: 384, nodes: 7, live: 6, entry: Some(3), top: 2, rng: 0xDEAD_BEEF_0123 };
        assert_eq!(Header::decode(&h.encode()).unwrap(), h);
        let empty = Header { entry: None, ..h };
        assert_eq!(Header::decode(&empty.encode()).unwrap(), empty);
        let id = Uuid::from_u128(9);
        let links = vec![vec![1, 2, 6], vec![], vec![5]];
        let b = encode_links(&id, true, Some(-5), &links);
        assert_eq!(decode_links(&b, 7).unwrap(), Node { id, deleted: true, expires: Some(-5), links: links.clone() });
        assert_eq!(decode_links(&encode_links(&id, false, None, &links), 7).unwrap().expires, None);
        assert!(decode_links(&b, 6).is_err(), "a link to a node past the count");
        assert!(decode_links(&b[..b.len() - 1], 7).is_err());
        assert!(Header::decode(&h.encode()[1..]).is_err());
        assert!(Header::decode(&Header { live: 8, ..h }.encode()).is_err(), "more live nodes than nodes");
    }
}
