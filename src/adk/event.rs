//! What mnem keeps of the ADK objects it is given, and what `mnem_search` reports: plain
//! values. `crate::wire::adk` reads them from `Event` JSON lines and writes the answers.

use uuid::Uuid;

/// Episode type of ADK memories (`add_memory`).
pub const MEMORY_TYPE: &str = "memory";

/// The id `mnem_search` reports for an episode and `delete_memory` matches: its `event_id`,
/// else its UUID. Writes check tombstones by the same rule.
pub(crate) fn memory_id(event_id: Option<&str>, id: &Uuid) -> String {
    event_id.map_or_else(|| id.to_string(), str::to_owned)
}

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
    /// The vector of `text`, when the store has an embedder (set before the write's lock).
    pub embedding: Option<Vec<f32>>,
    /// The model that made `embedding` (`EmbeddingProvider::model`).
    pub embedding_model: Option<String>,
}

/// What `mnem_add_events` reads from its `custom_metadata` (other keys are ignored).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventOptions {
    pub ttl_ms: Option<i64>,
    pub tags: Vec<String>,
    pub episode_type: Option<String>,
}

/// One `MemoryEntry` of a `mnem_search` answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    /// The memory id: the event id, else the episode's UUID (`super::memory_id`).
    pub id: String,
    /// The ADK `Content` JSON as it was ingested, if any.
    pub content: Option<String>,
    pub author: Option<String>,
    /// Seconds since the Unix epoch.
    pub timestamp: Option<f64>,
}

/// How errors name a line of `events_jsonl`.
pub fn line_context(n: usize) -> String {
    format!("events_jsonl line {n}")
}
