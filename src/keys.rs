//! Namespaces and the byte layout of every storage key.
//!
//! A namespace `(app_name, user_id)` encodes as `u32be(len(app)) app u32be(len(user)) user`.
//! The encoding is prefix-free: if one namespace's encoding were a prefix of another's, the
//! leading lengths would agree, hence the apps, then the user lengths, hence the users. So no
//! two namespaces share a key or a key prefix, whatever bytes (`/`, `:`, NUL) they contain.
//! docs/FORMAT.md lists every key of every column family.

use crate::error::{Error, Result};
use uuid::Uuid;

/// The scope of every record: ADK's `(app_name, user_id)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Namespace {
    pub app_name: String,
    pub user_id: String,
}

impl Namespace {
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>) -> Namespace {
        Namespace { app_name: app_name.into(), user_id: user_id.into() }
    }

    /// The namespace's key prefix.
    pub fn prefix(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.app_name.len() + self.user_id.len());
        push_str(&mut out, &self.app_name);
        push_str(&mut out, &self.user_id);
        out
    }
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    // Strings longer than 4 GiB cannot arrive through any API (JSON bodies are bounded far
    // below that), but saturating would break injectivity, so refuse loudly instead.
    let len = u32::try_from(s.len()).expect("namespace component longer than 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The length of the namespace prefix a key starts with (`Namespace::prefix`), or None when
/// the key is too short to hold one. A backend that stores the namespace apart from the key
/// (to distribute or filter by it) finds it here.
pub fn namespace_len(key: &[u8]) -> Option<usize> {
    let app = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
    let user_at = 4usize.checked_add(app)?;
    let user = u32::from_be_bytes(key.get(user_at..user_at.checked_add(4)?)?.try_into().ok()?) as usize;
    let end = user_at.checked_add(4)?.checked_add(user)?;
    (end <= key.len()).then_some(end)
}

/// Check that a namespace component fits the key encoding.
pub fn check_component(what: &str, s: &str) -> Result<()> {
    if u32::try_from(s.len()).is_err() {
        return Err(Error::invalid(format!("{what} is longer than 4 GiB")));
    }
    Ok(())
}

/// The smallest key greater than every key that starts with `prefix`, or None when no such
/// key exists (a prefix of 0xFF bytes only).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut out = prefix.to_vec();
    while let Some(last) = out.pop() {
        if last != 0xFF {
            out.push(last + 1);
            return Some(out);
        }
    }
    None
}

/// `episodes` column family: namespace prefix + 16 UUID bytes (UUID order = key order).
pub fn episode_key(ns_prefix: &[u8], id: &Uuid) -> Vec<u8> {
    let mut k = Vec::with_capacity(ns_prefix.len() + 16);
    k.extend_from_slice(ns_prefix);
    k.extend_from_slice(id.as_bytes());
    k
}

/// Tags of the `index` column family's key kinds, after the namespace prefix: each
/// derived index owns a range (docs/FORMAT.md lists the keys of each).
pub mod index_tag {
    /// BM25 keyword index: 0x10..=0x1F (`lexical::index`).
    pub const BM25_FIRST: u8 = 0x10;
    /// ADK search index: 0x20..=0x2F (`adk::index`).
    pub const ADK_FIRST: u8 = 0x20;
    /// HNSW graph: 0x30..=0x3F (`vector`).
    pub const VECTOR_FIRST: u8 = 0x30;
}

/// A key of the `index` column family: the namespace prefix, the tag of one index's key
/// kind, the rest.
pub fn index_key(ns_prefix: &[u8], tag: u8, rest: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(ns_prefix.len() + 1 + rest.len());
    k.extend_from_slice(ns_prefix);
    k.push(tag);
    k.extend_from_slice(rest);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separator_lookalikes_never_share_a_prefix() {
        let pairs = [
            ("a/b", "c"),
            ("a", "b/c"),
            ("a:b", "c"),
            ("a", "b:c"),
            ("a\0b", "c"),
            ("a", "b\0c"),
            ("", "ab"),
            ("ab", ""),
            ("", ""),
            ("app/other-user", "user"),
            ("app", "other-user/user"),
        ];
        for (i, a) in pairs.iter().enumerate() {
            for (j, b) in pairs.iter().enumerate() {
                if i == j {
                    continue;
                }
                let pa = Namespace::new(a.0, a.1).prefix();
                let pb = Namespace::new(b.0, b.1).prefix();
                assert!(!pb.starts_with(&pa), "{a:?} is a prefix of {b:?}");
            }
        }
    }

    #[test]
    fn prefix_free_over_generated_pairs() {
        let atoms = ["", "a", "b", "/", ":", "\0", "a/", "/b", "\u{ff}", "é"];
        let mut all = Vec::new();
        for x in atoms {
            for y in atoms {
                for z in atoms {
                    all.push(Namespace::new(format!("{x}{y}"), z.to_string()));
                    all.push(Namespace::new(x.to_string(), format!("{y}{z}")));
                }
            }
        }
        all.sort();
        all.dedup();
        let prefixes: Vec<Vec<u8>> = all.iter().map(|n| n.prefix()).collect();
        for (i, a) in prefixes.iter().enumerate() {
            for (j, b) in prefixes.iter().enumerate() {
                if i != j {
                    assert!(!b.starts_with(a), "{:?} vs {:?}", all[i], all[j]);
                }
            }
        }
    }

    #[test]
    fn successor_bounds_the_prefix() {
        assert_eq!(prefix_successor(&[1, 2, 3]), Some(vec![1, 2, 4]));
        assert_eq!(prefix_successor(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
    }
}
