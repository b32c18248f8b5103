//! Reading ADK `Event` JSON lines (`Event.model_dump_json()`), keeping `content` verbatim.

use crate::error::{Error, Result};
use crate::json::{self, Fields, RawObject};

/// The part of an ADK event that mnem stores and searches.
#[derive(Clone, Debug, PartialEq)]
pub struct AdkEvent {
    /// `Event.id`; ADK gives an event without one a fresh UUID4 id.
    pub id: String,
    pub author: Option<String>,
    pub timestamp: f64,
    /// The `content` object exactly as it arrived.
    pub content: String,
    /// The non-empty `text` parts joined by one space (thought parts included): ADK's
    /// searchable text.
    pub text: String,
    /// Every other field of the event, as a JSON object (kept, never searched).
    pub rest: String,
}

/// Parse one event line. `Ok(None)` is an event ADK does not store: no `content`, or a
/// `content` whose `parts` is missing or empty.
pub fn parse_event(line: &str, now_secs: f64) -> Result<Option<AdkEvent>> {
    let obj = json::parse_object(line)?;
    let mut rest = Vec::new();
    rest.push(b'{');
    for (k, v) in &obj.fields {
        if matches!(k.as_str(), "id" | "author" | "timestamp" | "content") {
            continue;
        }
        if rest.len() > 1 {
            rest.push(b',');
        }
        json::push_str(&mut rest, k);
        rest.push(b':');
        rest.extend_from_slice(v.get().as_bytes());
    }
    rest.push(b'}');
    let mut f = Fields::lenient(obj);
    let id = f.string("id")?.filter(|s| !s.is_empty()).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let author = f.string("author")?;
    let timestamp = f.get::<f64>("timestamp", "a number of seconds")?.unwrap_or(now_secs);
    let Some(content) = f.raw("content").filter(|c| c.get() != "null") else { return Ok(None) };
    let Some(text) = content_text(content.get())? else { return Ok(None) };
    Ok(Some(AdkEvent {
        id,
        author,
        timestamp,
        content: content.get().to_string(),
        text,
        rest: String::from_utf8(rest).expect("built from UTF-8 pieces"),
    }))
}

/// The searchable text of a `Content`, or None when it has no parts.
pub fn content_text(content: &str) -> Result<Option<String>> {
    let obj = json::parse_object(content).map_err(|e| e.context("`content`"))?;
    let mut f = Fields::lenient(obj);
    let Some(parts) = f.raw("parts").filter(|p| p.get() != "null") else { return Ok(None) };
    let parts: Vec<RawObject> =
        serde_json::from_str(parts.get()).map_err(|_| Error::invalid("`content.parts` must be an array of objects"))?;
    if parts.is_empty() {
        return Ok(None);
    }
    let mut text = String::new();
    let mut first = true;
    for part in parts {
        let mut pf = Fields::lenient(part);
        let t = pf.string("text").map_err(|e| e.context("`content.parts[]`"))?;
        if let Some(t) = t.filter(|t| !t.is_empty()) {
            if !first {
                text.push(' ');
            }
            text.push_str(&t);
            first = false;
        }
    }
    Ok(Some(text))
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
