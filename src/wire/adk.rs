//! The ADK seam on the wire: `Event` JSON lines and `custom_metadata` in, the
//! `SearchMemoryResponse` JSON of `mnem_search` out.

use super::{lines, parse_object, push_opt_str, push_str, Fields};
use crate::adk::event::{line_context, AdkEvent, EventOptions, Memory};
use crate::adk::timestamp::format_timestamp;
use crate::adk::{RecallMode, RecallQuery, MAX_RECALL_LIMIT};
use crate::error::{Error, Result};

impl EventOptions {
    /// `mnem_add_events`' `custom_metadata`: empty, or an object whose other keys are ignored.
    pub fn parse(custom_metadata: &str) -> Result<EventOptions> {
        if custom_metadata.trim().is_empty() {
            return Ok(EventOptions::default());
        }
        let mut f = Fields::lenient(parse_object(custom_metadata).map_err(|e| e.context("custom_metadata"))?);
        let ttl_ms = f.get::<i64>("ttl_ms", "an integer number of milliseconds")?;
        if ttl_ms.is_some_and(|t| t <= 0) {
            return Err(Error::invalid("custom_metadata: `ttl_ms` must be positive"));
        }
        let tags = f.get::<Vec<String>>("tags", "an array of strings")?.unwrap_or_default();
        let episode_type = f.string("episode_type")?;
        Ok(EventOptions { ttl_ms, tags, episode_type })
    }
}

impl RecallQuery {
    /// A `mnem_recall` query: `{"text", "vector", "limit", "semantic_weight", "candidates"}`;
    /// its numbers are checked by `validate` when it runs, as for hybrid search.
    pub fn parse(query_json: &str) -> Result<RecallQuery> {
        let mut f = Fields::strict(parse_object(query_json)?);
        let text = f.string("text")?.ok_or_else(|| Error::invalid("`text` is required"))?;
        let mut q = RecallQuery::new(text);
        q.vector = f.get::<Vec<f32>>("vector", "an array of numbers")?;
        q.vector_model = f.string("vector_model")?;
        if let Some(l) = f.get::<u64>("limit", &format!("an integer from 0 to {MAX_RECALL_LIMIT}"))? {
            q.limit = usize::try_from(l).unwrap_or(usize::MAX);
        }
        if let Some(w) = f.get::<f64>("semantic_weight", "a number from 0 to 1")? {
            q.semantic_weight = w;
        }
        if let Some(c) = f.get::<u64>("candidates", "a positive integer")? {
            q.candidates = usize::try_from(c).unwrap_or(usize::MAX);
        }
        if let Some(m) = f.string("mode")? {
            q.mode = RecallMode::NAMES.iter().find(|(n, _)| *n == m).map(|(_, mode)| *mode).ok_or_else(|| {
                Error::invalid(format!("`mode` must be \"adk\", \"bm25\", \"hybrid\" or \"adk_vectors\", got {m:?}"))
            })?;
        }
        q.hits = super::query::hit_filter(&mut f)?;
        f.finish()?;
        Ok(q)
    }
}

/// The events of a batch that ADK stores, each with its line number (errors name it);
/// `now_secs` is the timestamp of an event without one.
pub fn parse_events(jsonl: &str, now_secs: f64) -> Result<Vec<(usize, AdkEvent)>> {
    let mut out = Vec::new();
    for (n, line) in lines(jsonl)? {
        if let Some(e) = parse_event(line, now_secs).map_err(|e| e.context(line_context(n)))? {
            out.push((n, e));
        }
    }
    Ok(out)
}

/// Parse one event line. `Ok(None)` is an event ADK does not store: no `content`, or a
/// `content` whose `parts` is missing or empty.
pub fn parse_event(line: &str, now_secs: f64) -> Result<Option<AdkEvent>> {
    let obj = parse_object(line)?;
    let mut rest = Vec::new();
    rest.push(b'{');
    for (k, v) in &obj.fields {
        if matches!(k.as_str(), "id" | "author" | "timestamp" | "content") {
            continue;
        }
        if rest.len() > 1 {
            rest.push(b',');
        }
        push_str(&mut rest, k);
        rest.push(b':');
        rest.extend_from_slice(v.get().as_bytes());
    }
    rest.push(b'}');
    let mut f = Fields::lenient(obj);
    let id = f.string("id")?.filter(|s| !s.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let author = f.string("author")?;
    let timestamp = f.get::<f64>("timestamp", "a number of seconds")?.unwrap_or(now_secs);
    let Some(content) = f.raw("content").filter(|c| c.get() != "null") else { return Ok(None) };
    let Some(text) = super::content::content_text(content.get())? else { return Ok(None) };
    Ok(Some(AdkEvent {
        id,
        author,
        timestamp,
        content: content.get().to_string(),
        text,
        rest: String::from_utf8(rest).expect("built from UTF-8 pieces"),
        embedding: None,
        embedding_model: None,
    }))
}

/// `mnem_search`'s answer: `{"memories":[{"id","content","author","timestamp","custom_metadata":{}}...]}`,
/// `content` byte for byte as ingested, `timestamp` in local time as Python's `isoformat()`.
pub fn write_memories(out: &mut Vec<u8>, memories: &[Memory]) {
    out.extend_from_slice(b"{\"memories\":[");
    for (i, m) in memories.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"id\":");
        push_str(out, &m.id);
        out.extend_from_slice(b",\"content\":");
        out.extend_from_slice(m.content.as_deref().unwrap_or("null").as_bytes());
        out.extend_from_slice(b",\"author\":");
        push_opt_str(out, m.author.as_deref());
        out.extend_from_slice(b",\"timestamp\":");
        push_opt_str(out, m.timestamp.and_then(format_timestamp).as_deref());
        out.extend_from_slice(b",\"custom_metadata\":{}}");
    }
    out.extend_from_slice(b"]}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_content_bytes_and_joins_text_parts() {
        let line = r#"{"id":"e1","author":"user","timestamp":12.5,"invocation_id":"i","content":{"role":"user","parts":[{"text":"a","thought":null},{"function_call":{"name":"f"}},{"text":""},{"text":"b","thought":true}]}}"#;
        let e = parse_event(line, 0.0).unwrap().unwrap();
        assert_eq!(e.id, "e1");
        assert_eq!(e.text, "a b");
        assert!(e.content.starts_with(r#"{"role":"user","parts":[{"text":"a","thought":null}"#));
        assert_eq!(e.rest, r#"{"invocation_id":"i"}"#);
    }

    #[test]
    fn events_without_parts_are_not_stored() {
        for line in [
            r#"{"id":"x"}"#,
            r#"{"id":"x","content":null}"#,
            r#"{"id":"x","content":{"role":"user"}}"#,
            r#"{"id":"x","content":{"parts":[]}}"#,
        ] {
            assert_eq!(parse_event(line, 0.0).unwrap(), None, "{line}");
        }
        assert!(parse_event(r#"{"content":{"parts":"no"}}"#, 0.0).is_err());
        assert!(parse_event("[1]", 0.0).is_err());
    }
}
