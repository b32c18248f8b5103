//! The episode record and its stored byte format, and what a write gives for one
//! (`EpisodeInput`).
//!
//! Stored format (version 1), little-endian:
//! `u8 version, u8 flags, u64 revision, i64 created_at_ms, i64 updated_at_ms,
//! i64 expires_at_ms, f64 timestamp`, then eleven fields, each `u32 length + bytes`:
//! episode_type, primary, secondary, context, tags, metadata, author, session_id, event_id,
//! content, embedding. Fixed header first and the searchable text early, so the lexical scan
//! reads visibility, filters and text by slicing, without a JSON decode (the lexical page's
//! throughput depends on it). `tags` is itself a run of `u32 length + bytes`; `embedding` is
//! raw f32s. docs/FORMAT.md has the byte layout in full; `tests/format.rs` pins it.

use crate::error::{Error, Result};
use uuid::Uuid;

/// The type given to episodes written without `episode_type`.
pub const DEFAULT_EPISODE_TYPE: &str = "episode";

/// When an episode stops being visible.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expiry {
    Never,
    At(i64),
    /// Milliseconds after the write.
    Ttl(i64),
}

impl Expiry {
    pub fn resolve(self, now: i64) -> Result<Option<i64>> {
        match self {
            Expiry::Never => Ok(None),
            Expiry::At(t) => Ok(Some(t)),
            Expiry::Ttl(ttl) => now.checked_add(ttl).map(Some).ok_or_else(|| Error::invalid("`ttl_ms` is too large")),
        }
    }
}

/// An episode as a caller writes it: everything but the computed fields.
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeInput {
    pub id: Option<Uuid>,
    pub episode_type: String,
    pub tags: Vec<String>,
    pub primary: String,
    pub secondary: String,
    pub context: String,
    pub metadata: Option<String>,
    pub author: Option<String>,
    pub session_id: Option<String>,
    pub event_id: Option<String>,
    pub timestamp: Option<f64>,
    pub expiry: Expiry,
    pub content: Option<String>,
    pub embedding: Option<Vec<f32>>,
    /// Ask the store's embedder for `embedding`, from `crate::embed::episode_text`, before the
    /// write (`Mnem::put_episodes`); not stored.
    pub embed: bool,
    /// The model that made `embedding` (`crate::vector::VectorSpace`); `None`: the caller's,
    /// unnamed. Recorded once per namespace, not per episode.
    pub embedding_model: Option<String>,
}

impl Default for EpisodeInput {
    fn default() -> Self {
        EpisodeInput {
            id: None,
            episode_type: DEFAULT_EPISODE_TYPE.to_string(),
            tags: Vec::new(),
            primary: String::new(),
            secondary: String::new(),
            context: String::new(),
            metadata: None,
            author: None,
            session_id: None,
            event_id: None,
            timestamp: None,
            expiry: Expiry::Never,
            content: None,
            embedding: None,
            embed: false,
            embedding_model: None,
        }
    }
}

/// The most dimensions an embedding may have: above today's largest embedding models
/// (a few thousand), while bounding what one vector costs the namespace's index.
pub const MAX_DIMENSION: usize = 16_384;

/// Check an embedding and return its dimension.
pub fn check_embedding(v: &[f32]) -> Result<u32> {
    if v.is_empty() {
        return Err(Error::invalid("`embedding` is empty"));
    }
    if v.len() > MAX_DIMENSION {
        return Err(Error::invalid(format!(
            "`embedding` has {} dimensions; at most {MAX_DIMENSION} are accepted",
            v.len()
        )));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(Error::invalid("`embedding` has a value that is not a finite f32"));
    }
    if v.iter().all(|x| *x == 0.0) {
        return Err(Error::invalid("`embedding` is the zero vector, which has no direction for cosine similarity"));
    }
    Ok(v.len() as u32)
}

pub const RECORD_VERSION: u8 = 1;
const HEADER_LEN: usize = 2 + 8 * 5;
const FIELDS: usize = 11;
/// The largest stored record: the lexical page's largest byte budget, so that a page can
/// always step over any record.
pub const MAX_RECORD_BYTES: usize = 64 << 20;

mod flag {
    pub const DELETED: u8 = 1;
    pub const EXPIRES: u8 = 2;
    pub const TIMESTAMP: u8 = 4;
    pub const AUTHOR: u8 = 8;
    pub const SESSION: u8 = 16;
    pub const EVENT: u8 = 32;
    pub const CONTENT: u8 = 64;
    pub const EMBEDDING: u8 = 128;
}

/// One stored episode (a "platform record").
#[derive(Clone, Debug, PartialEq)]
pub struct Episode {
    pub id: Uuid,
    pub revision: u64,
    pub deleted: bool,
    pub episode_type: String,
    pub tags: Vec<String>,
    pub primary: String,
    pub secondary: String,
    pub context: String,
    /// A JSON object, as text.
    pub metadata: String,
    pub author: Option<String>,
    pub session_id: Option<String>,
    pub event_id: Option<String>,
    pub timestamp: Option<f64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub expires_at_ms: Option<i64>,
    /// Any JSON value (the ADK `Content`), as the exact text that was ingested.
    pub content: Option<String>,
    pub embedding: Option<Vec<f32>>,
}

impl Episode {
    /// The size of `encode()`'s output.
    pub fn encoded_len(&self) -> usize {
        let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        HEADER_LEN
            + 4 * FIELDS
            + self.episode_type.len()
            + self.primary.len()
            + self.secondary.len()
            + self.context.len()
            + self.tags.iter().map(|t| 4 + t.len()).sum::<usize>()
            + self.metadata.len()
            + opt(&self.author)
            + opt(&self.session_id)
            + opt(&self.event_id)
            + opt(&self.content)
            + 4 * self.embedding.as_ref().map_or(0, Vec::len)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        let mut flags = 0u8;
        let mut set = |cond: bool, f: u8| {
            if cond {
                flags |= f
            }
        };
        set(self.deleted, flag::DELETED);
        set(self.expires_at_ms.is_some(), flag::EXPIRES);
        set(self.timestamp.is_some(), flag::TIMESTAMP);
        set(self.author.is_some(), flag::AUTHOR);
        set(self.session_id.is_some(), flag::SESSION);
        set(self.event_id.is_some(), flag::EVENT);
        set(self.content.is_some(), flag::CONTENT);
        set(self.embedding.is_some(), flag::EMBEDDING);
        out.push(RECORD_VERSION);
        out.push(flags);
        out.extend_from_slice(&self.revision.to_le_bytes());
        out.extend_from_slice(&self.created_at_ms.to_le_bytes());
        out.extend_from_slice(&self.updated_at_ms.to_le_bytes());
        out.extend_from_slice(&self.expires_at_ms.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.timestamp.unwrap_or(0.0).to_le_bytes());
        put(&mut out, self.episode_type.as_bytes());
        put(&mut out, self.primary.as_bytes());
        put(&mut out, self.secondary.as_bytes());
        put(&mut out, self.context.as_bytes());
        let mut tags = Vec::new();
        for t in &self.tags {
            put(&mut tags, t.as_bytes());
        }
        put(&mut out, &tags);
        put(&mut out, self.metadata.as_bytes());
        put(&mut out, opt(&self.author));
        put(&mut out, opt(&self.session_id));
        put(&mut out, opt(&self.event_id));
        put(&mut out, opt(&self.content));
        let mut emb = Vec::new();
        for x in self.embedding.iter().flatten() {
            emb.extend_from_slice(&x.to_le_bytes());
        }
        put(&mut out, &emb);
        out
    }

    pub fn decode(id: Uuid, bytes: &[u8]) -> Result<Episode> {
        RecordView::parse(id, bytes)?.to_episode()
    }

    /// Visible at `now_ms`: not deleted and not expired (invisible at and after expiry).
    pub fn is_visible(&self, now_ms: i64) -> bool {
        !self.deleted && self.expires_at_ms.is_none_or(|e| now_ms < e)
    }
}

fn opt(s: &Option<String>) -> &[u8] {
    s.as_deref().map_or(&[][..], str::as_bytes)
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("field longer than 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
}

/// A borrowed, validated view of a whole stored record. Its searchable prefix is a
/// `ScanView` (reached through `Deref`): the two share one parser for that part.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    pub id: Uuid,
    scan: ScanView<'a>,
    pub revision: u64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    timestamp: f64,
    pub metadata: &'a str,
    author: &'a str,
    session_id: &'a str,
    event_id: &'a str,
    content: &'a str,
    embedding: &'a [u8],
}

impl<'a> std::ops::Deref for RecordView<'a> {
    type Target = ScanView<'a>;
    fn deref(&self) -> &ScanView<'a> {
        &self.scan
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| Error::corruption("record is truncated"))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn field(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    fn text(&mut self) -> Result<&'a str> {
        std::str::from_utf8(self.field()?).map_err(|_| Error::corruption("record text is not UTF-8"))
    }
}

/// The little-endian u64 at `at` of a header that `ScanView::read` has length-checked.
fn header_u64(head: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"))
}

impl<'a> RecordView<'a> {
    pub fn parse(id: Uuid, bytes: &'a [u8]) -> Result<RecordView<'a>> {
        let mut r = Reader { bytes, pos: 0 };
        let scan = ScanView::read(&mut r)?;
        let view = RecordView {
            id,
            scan,
            revision: header_u64(bytes, 2),
            created_at_ms: header_u64(bytes, 10) as i64,
            updated_at_ms: header_u64(bytes, 18) as i64,
            timestamp: f64::from_bits(header_u64(bytes, 34)),
            metadata: r.text()?,
            author: r.text()?,
            session_id: r.text()?,
            event_id: r.text()?,
            content: r.text()?,
            embedding: r.field()?,
        };
        if !view.embedding.len().is_multiple_of(4) || r.pos != bytes.len() {
            return Err(Error::corruption("record has a malformed layout"));
        }
        Ok(view)
    }

    fn has(&self, f: u8) -> bool {
        self.scan.flags & f != 0
    }
    pub fn timestamp(&self) -> Option<f64> {
        self.has(flag::TIMESTAMP).then_some(self.timestamp)
    }
    pub fn author(&self) -> Option<&'a str> {
        self.has(flag::AUTHOR).then_some(self.author)
    }
    pub fn session_id(&self) -> Option<&'a str> {
        self.has(flag::SESSION).then_some(self.session_id)
    }
    pub fn event_id(&self) -> Option<&'a str> {
        self.has(flag::EVENT).then_some(self.event_id)
    }
    pub fn content(&self) -> Option<&'a str> {
        self.has(flag::CONTENT).then_some(self.content)
    }
    pub fn embedding(&self) -> Option<Vec<f32>> {
        self.has(flag::EMBEDDING).then(|| {
            self.embedding.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
        })
    }
    pub fn to_episode(&self) -> Result<Episode> {
        let tags = self.tags().map(str::to_owned).collect();
        Ok(Episode {
            id: self.id,
            revision: self.revision,
            deleted: self.deleted(),
            episode_type: self.episode_type.to_owned(),
            tags,
            primary: self.primary.to_owned(),
            secondary: self.secondary.to_owned(),
            context: self.context.to_owned(),
            metadata: self.metadata.to_owned(),
            author: self.author().map(str::to_owned),
            session_id: self.session_id().map(str::to_owned),
            event_id: self.event_id().map(str::to_owned),
            timestamp: self.timestamp(),
            created_at_ms: self.created_at_ms,
            updated_at_ms: self.updated_at_ms,
            expires_at_ms: self.expires_at_ms(),
            content: self.content().map(str::to_owned),
            embedding: self.embedding(),
        })
    }
}

/// The fields a lexical scan reads: header, type, the three texts and tags. They come
/// first in the stored format, so the scan stops there and never touches (or validates)
/// content, metadata or the embedding; hits are decoded in full afterwards.
#[derive(Clone, Copy, Debug)]
pub struct ScanView<'a> {
    flags: u8,
    expires_at_ms: i64,
    pub episode_type: &'a str,
    pub primary: &'a str,
    pub secondary: &'a str,
    pub context: &'a str,
    tags: &'a [u8],
}

impl<'a> ScanView<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<ScanView<'a>> {
        ScanView::read(&mut Reader { bytes, pos: 0 })
    }

    /// Read the header and the searchable prefix, leaving `r` after the tags.
    fn read(r: &mut Reader<'a>) -> Result<ScanView<'a>> {
        let head = r.take(HEADER_LEN)?;
        if head[0] != RECORD_VERSION {
            return Err(Error::corruption(format!("unknown record version {}", head[0])));
        }
        Ok(ScanView {
            flags: head[1],
            expires_at_ms: header_u64(head, 26) as i64,
            episode_type: r.text()?,
            primary: r.text()?,
            secondary: r.text()?,
            context: r.text()?,
            tags: r.field()?,
        })
    }

    pub fn deleted(&self) -> bool {
        self.flags & flag::DELETED != 0
    }

    pub fn expires_at_ms(&self) -> Option<i64> {
        (self.flags & flag::EXPIRES != 0).then_some(self.expires_at_ms)
    }

    /// Not deleted, and not expired at `now_ms` (invisible at and after expiry).
    pub fn is_visible(&self, now_ms: i64) -> bool {
        !self.deleted() && self.expires_at_ms().is_none_or(|e| now_ms < e)
    }

    pub fn tags(&self) -> TagIter<'a> {
        TagIter { r: Reader { bytes: self.tags, pos: 0 } }
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags().any(|t| t == tag)
    }
}

pub struct TagIter<'a> {
    r: Reader<'a>,
}

impl<'a> Iterator for TagIter<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.r.pos >= self.r.bytes.len() {
            return None;
        }
        // Tags were validated as UTF-8 by `RecordView::parse`'s caller when written; a
        // damaged tag reads as no tag rather than aborting a scan.
        self.r.text().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Episode {
        Episode {
            id: Uuid::now_v7(),
            revision: 3,
            deleted: false,
            episode_type: "note".into(),
            tags: vec!["a".into(), "".into(), "ü".into()],
            primary: "Hello wörld".into(),
            secondary: "".into(),
            context: "ctx".into(),
            metadata: r#"{"k":1}"#.into(),
            author: Some("user".into()),
            session_id: None,
            event_id: Some("".into()),
            timestamp: Some(12345.5),
            created_at_ms: 1,
            updated_at_ms: 2,
            expires_at_ms: Some(99),
            content: Some(r#"{"parts":[{"text":"x"}]}"#.into()),
            embedding: Some(vec![0.5, -1.0]),
        }
    }

    #[test]
    fn round_trips() {
        let e = sample();
        assert_eq!(Episode::decode(e.id, &e.encode()).unwrap(), e);
        let mut bare = sample();
        bare.author = None;
        bare.event_id = None;
        bare.timestamp = None;
        bare.expires_at_ms = None;
        bare.content = None;
        bare.embedding = None;
        bare.tags.clear();
        assert_eq!(Episode::decode(bare.id, &bare.encode()).unwrap(), bare);
    }

    #[test]
    fn encoded_len_is_exact() {
        let e = sample();
        assert_eq!(e.encoded_len(), e.encode().len());
    }

    #[test]
    fn truncated_or_padded_records_are_corruption() {
        let e = sample();
        let bytes = e.encode();
        for cut in [0, 1, 10, bytes.len() - 1] {
            let err = Episode::decode(e.id, &bytes[..cut]).unwrap_err();
            assert_eq!(err.status, crate::Status::Corruption);
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(Episode::decode(e.id, &padded).is_err());
    }

    #[test]
    fn scan_view_reads_the_searchable_prefix() {
        let e = sample();
        let bytes = e.encode();
        let v = ScanView::parse(&bytes).unwrap();
        assert_eq!((v.episode_type, v.primary, v.context), ("note", "Hello wörld", "ctx"));
        assert!(v.has_tag("ü") && !v.has_tag("b"));
        assert!(v.is_visible(98) && !v.is_visible(99));
        let mut deleted = e.clone();
        deleted.deleted = true;
        assert!(!ScanView::parse(&deleted.encode()).unwrap().is_visible(0));
        assert!(ScanView::parse(&bytes[..50]).is_err());
    }

    #[test]
    fn expiry_is_exclusive() {
        let e = sample();
        assert!(e.is_visible(98));
        assert!(!e.is_visible(99));
        let view_bytes = e.encode();
        let v = RecordView::parse(e.id, &view_bytes).unwrap();
        assert!(v.is_visible(98) && !v.is_visible(99));
    }
}
