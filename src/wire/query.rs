//! The search queries (keyword, lexical page, substring, hybrid) and their results.
//!
//! Every query's `limit`, absent or null, takes the query's default; a given limit is used
//! as given, 0 included, within the query's range (docs/WIRE.md).

use super::episode::parse_uuid;
use super::{parse_object, push_f64, push_str, Fields};
use crate::error::{Error, Result};
use crate::filter::HitFilter;
use crate::hybrid::{HybridQuery, HybridSearchResult};
use crate::lexical::{
    KeywordQuery, KeywordSearchResult, LexicalPage, LexicalQuery, DEFAULT_LIMIT, DEFAULT_SCAN_BYTES, MAX_PAGE_LIMIT,
    MAX_SCAN_BYTES, MAX_SCAN_LIMIT, MAX_SEARCH_LIMIT,
};
use crate::record::Episode;

/// The `text` every query requires.
fn required_text(f: &mut Fields<'_>) -> Result<String> {
    f.string("text")?.ok_or_else(|| Error::invalid("`text` is required"))
}

/// The hit filters every scored query takes (`crate::filter::HitFilter`).
pub(super) fn hit_filter(f: &mut Fields<'_>) -> Result<HitFilter> {
    let h = HitFilter {
        session_id: f.string("session_id")?,
        author: f.string("author")?,
        since: f.get::<f64>("since", "a number of seconds since the Unix epoch")?,
        until: f.get::<f64>("until", "a number of seconds since the Unix epoch")?,
        min_score: f.get::<f64>("min_score", "a number")?,
    };
    h.validate()?;
    Ok(h)
}

fn ranged(f: &mut Fields<'_>, key: &str, lo: usize, hi: usize) -> Result<Option<usize>> {
    let msg = format!("an integer from {lo} to {hi}");
    match f.get::<i64>(key, &msg)? {
        None => Ok(None),
        Some(v) if v >= lo as i64 && v <= hi as i64 => Ok(Some(v as usize)),
        Some(_) => Err(Error::invalid(format!("`{key}` must be {msg}"))),
    }
}

impl KeywordQuery {
    /// A `mnem_keyword_search` or `mnem_substring_search` query.
    pub fn parse(query_json: &str) -> Result<KeywordQuery> {
        let mut f = Fields::strict(parse_object(query_json)?);
        let text = required_text(&mut f)?;
        let mut q = KeywordQuery::new(text);
        q.limit = ranged(&mut f, "limit", 0, MAX_SEARCH_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        q.episode_type = f.string("episode_type")?;
        q.tag = f.string("tag")?;
        q.hits = hit_filter(&mut f)?;
        f.finish()?;
        Ok(q)
    }
}

impl LexicalQuery {
    /// A `mnem_lexical_page` query.
    pub fn parse(query_json: &str) -> Result<LexicalQuery> {
        let mut f = Fields::strict(parse_object(query_json)?);
        let text = required_text(&mut f)?;
        let mut q = LexicalQuery::new(text);
        q.limit = ranged(&mut f, "limit", 1, MAX_PAGE_LIMIT)?.unwrap_or(DEFAULT_LIMIT);
        q.after = f.string("after")?.map(|a| parse_uuid(&a, "after")).transpose()?;
        q.episode_type = f.string("episode_type")?;
        q.tag = f.string("tag")?;
        q.scan_limit = ranged(&mut f, "scan_limit", 1, MAX_SCAN_LIMIT)?.unwrap_or(MAX_SCAN_LIMIT);
        q.scan_bytes_limit = ranged(&mut f, "scan_bytes_limit", 1, MAX_SCAN_BYTES)?.unwrap_or(DEFAULT_SCAN_BYTES);
        f.finish()?;
        Ok(q)
    }
}

impl HybridQuery {
    /// A `mnem_hybrid_search` query; its numbers are checked by `validate` when it runs.
    pub fn parse(query_json: &str) -> Result<HybridQuery> {
        let mut f = Fields::strict(parse_object(query_json)?);
        let text = required_text(&mut f)?;
        let mut q = HybridQuery::new(text);
        q.vector = f.get::<Vec<f32>>("vector", "an array of numbers")?;
        q.vector_model = f.string("vector_model")?;
        if let Some(l) = f.get::<u64>("limit", "a non-negative integer")? {
            q.limit = usize::try_from(l).unwrap_or(usize::MAX);
        }
        if let Some(w) = f.get::<f64>("semantic_weight", "a number from 0 to 1")? {
            q.semantic_weight = w;
        }
        if let Some(c) = f.get::<u64>("candidates", "a positive integer")? {
            q.candidates = usize::try_from(c).unwrap_or(usize::MAX);
        }
        q.episode_type = f.string("episode_type")?;
        q.tag = f.string("tag")?;
        q.hits = hit_filter(&mut f)?;
        f.finish()?;
        Ok(q)
    }
}

/// `mnem_keyword_search`'s answer: `{"results":[{"record","score"}...]}`.
pub fn write_results(out: &mut Vec<u8>, results: &[KeywordSearchResult]) {
    out.extend_from_slice(b"{\"results\":[");
    write_hits(out, results);
    out.extend_from_slice(b"]}");
}

fn write_hits(out: &mut Vec<u8>, results: &[KeywordSearchResult]) {
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"record\":");
        r.record.write_json(out);
        out.extend_from_slice(b",\"score\":");
        push_f64(out, r.score);
        out.push(b'}');
    }
}

/// `mnem_lexical_page`'s answer.
pub fn write_page(out: &mut Vec<u8>, p: &LexicalPage) {
    out.extend_from_slice(b"{\"hits\":[");
    write_hits(out, &p.hits);
    out.extend_from_slice(
        format!(
            "],\"matched_records\":{},\"corpus_records\":{},\"scanned_records\":{},\"scanned_bytes\":{},\"next_after\":",
            p.matched_records, p.corpus_records, p.scanned_records, p.scanned_bytes
        )
        .as_bytes(),
    );
    match p.next_after {
        Some(id) => push_str(out, &id.to_string()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(if p.exhaustive { b",\"exhaustive\":true}" } else { b",\"exhaustive\":false}" });
}

/// `mnem_substring_search`'s answer: `{"results":[{"record"}...]}`.
pub fn write_episodes(out: &mut Vec<u8>, eps: &[Episode]) {
    out.extend_from_slice(b"{\"results\":[");
    for (i, e) in eps.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"record\":");
        e.write_json(out);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// `mnem_hybrid_search`'s answer: `{"results":[{"record","score","keyword_score","semantic_score"}...]}`.
pub fn write_hybrid_results(out: &mut Vec<u8>, results: &[HybridSearchResult]) {
    out.extend_from_slice(b"{\"results\":[");
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"record\":");
        r.record.write_json(out);
        out.extend_from_slice(b",\"score\":");
        push_f64(out, r.score);
        out.extend_from_slice(b",\"keyword_score\":");
        push_f64(out, r.keyword_score);
        out.extend_from_slice(b",\"semantic_score\":");
        push_f64(out, r.semantic_score);
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_limit_is_the_default_and_a_given_one_is_used_as_given() {
        for absent in [r#"{"text":"a"}"#, r#"{"text":"a","limit":null}"#] {
            assert_eq!(KeywordQuery::parse(absent).unwrap().limit, DEFAULT_LIMIT);
            assert_eq!(LexicalQuery::parse(absent).unwrap().limit, DEFAULT_LIMIT);
            assert_eq!(HybridQuery::parse(absent).unwrap().limit, DEFAULT_LIMIT);
        }
        let zero = r#"{"text":"a","limit":0}"#;
        assert_eq!(KeywordQuery::parse(zero).unwrap().limit, 0);
        assert_eq!(HybridQuery::parse(zero).unwrap().limit, 0);
        assert_eq!(
            LexicalQuery::parse(zero).unwrap_err().message,
            "`limit` must be an integer from 1 to 100",
            "a page starts at 1"
        );
    }
}
