//! The searchable text of an ADK `Content` (its parts' texts joined by spaces, as
//! google-adk's memory service joins them): what an event's line and a stored memory are
//! searched by. Apart from `wire::adk` so that the ADK index, which reads it from stored
//! memories, depends on nothing above the storage.

use super::{parse_object, Fields, RawObject};
use crate::error::{Error, Result};

/// The searchable text of a `Content`, or None when it has no parts.
pub fn content_text(content: &str) -> Result<Option<String>> {
    let obj = parse_object(content).map_err(|e| e.context("`content`"))?;
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
