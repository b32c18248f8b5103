//! Episodes on the wire: the `mnem_put_episodes` and id lines in, the EPISODE JSON out.

use super::{lines, parse_object, push_f64, push_opt_str, push_str, Fields};
use crate::episodes::{EpisodeInput, Expiry};
use crate::error::{Error, Result};
use crate::record::{Episode, RecordView};
use crate::vector::check_model_name;
use uuid::Uuid;

/// A UUID string of the field `what`.
pub fn parse_uuid(s: &str, what: &str) -> Result<Uuid> {
    Uuid::try_parse(s).map_err(|_| Error::invalid(format!("`{what}` is not a UUID: {s:?}")))
}

/// Parse one line of `mnem_put_episodes`.
pub fn parse_episode_line(line: &str) -> Result<EpisodeInput> {
    let mut f = Fields::strict(parse_object(line)?);
    let mut e = EpisodeInput::default();
    if let Some(id) = f.string("id")? {
        e.id = Some(parse_uuid(&id, "id")?);
    }
    if let Some(t) = f.string("episode_type")? {
        e.episode_type = t;
    }
    e.tags = f.get::<Vec<String>>("tags", "an array of strings")?.unwrap_or_default();
    e.primary = f.string("primary")?.unwrap_or_default();
    e.secondary = f.string("secondary")?.unwrap_or_default();
    e.context = f.string("context")?.unwrap_or_default();
    if let Some(m) = f.raw("metadata").filter(|m| m.get() != "null") {
        if !m.get().starts_with('{') {
            return Err(Error::invalid("`metadata` must be a JSON object"));
        }
        e.metadata = Some(m.get().to_string());
    }
    e.author = f.string("author")?;
    e.session_id = f.string("session_id")?;
    e.event_id = f.string("event_id")?;
    e.timestamp = f.get::<f64>("timestamp", "a number")?;
    let at = f.get::<i64>("expires_at_ms", "an integer (ms since the Unix epoch)")?;
    let ttl = f.get::<i64>("ttl_ms", "an integer number of milliseconds")?;
    e.expiry = match (at, ttl) {
        (Some(_), Some(_)) => return Err(Error::invalid("give `expires_at_ms` or `ttl_ms`, not both")),
        (Some(t), None) => Expiry::At(t),
        (None, Some(ttl)) if ttl <= 0 => return Err(Error::invalid("`ttl_ms` must be positive")),
        (None, Some(ttl)) => Expiry::Ttl(ttl),
        (None, None) => Expiry::Never,
    };
    e.content = f.raw("content").filter(|c| c.get() != "null").map(|c| c.get().to_string());
    e.embedding = f.get::<Vec<f32>>("embedding", "an array of numbers")?;
    e.embed = f.get::<bool>("embed", "true or false")?.unwrap_or(false);
    e.embedding_model = f.string("embedding_model")?;
    if let Some(m) = &e.embedding_model {
        check_model_name("embedding_model", m)?;
        if e.embedding.is_none() {
            return Err(Error::invalid("`embedding_model` names the model of `embedding`, which is missing"));
        }
    }
    if e.embed && e.embedding.is_some() {
        return Err(Error::invalid("give `embedding` or `embed`, not both"));
    }
    f.finish()?;
    Ok(e)
}

/// Parse a `mnem_put_episodes` buffer whole; errors name the line.
pub fn parse_episode_lines(jsonl: &str) -> Result<Vec<EpisodeInput>> {
    Ok(parse_numbered_episode_lines(jsonl)?.1)
}

/// `parse_episode_lines`, with each episode's line number (blank lines counted), so that a
/// later error names the line the caller wrote.
pub fn parse_numbered_episode_lines(jsonl: &str) -> Result<(Vec<usize>, Vec<EpisodeInput>)> {
    lines(jsonl)?
        .map(|(n, l)| parse_episode_line(l).map(|e| (n, e)).map_err(|e| e.context(format!("line {n}"))))
        .collect::<Result<Vec<_>>>()
        .map(|v| v.into_iter().unzip())
}

/// Parse a `mnem_delete_episodes` buffer: one JSON string UUID per line.
pub fn parse_id_lines(jsonl: &str) -> Result<Vec<Uuid>> {
    lines(jsonl)?
        .map(|(n, l)| {
            let s: String = serde_json::from_str(l)
                .map_err(|_| Error::invalid(format!("line {n}: expected a JSON string holding a UUID")))?;
            parse_uuid(&s, "id").map_err(|e| e.context(format!("line {n}")))
        })
        .collect()
}

impl Episode {
    /// The episode as the APIs return it; see `RecordView::write_json`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        let bytes = self.encode();
        RecordView::parse(self.id, &bytes).expect("a fresh encoding parses").write_json(out);
    }
}

impl RecordView<'_> {
    /// The episode as the APIs return it (EPISODE JSON in include/mnem.h); the embedding is not echoed.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"id\":\"");
        out.extend_from_slice(self.id.hyphenated().encode_lower(&mut Uuid::encode_buffer()).as_bytes());
        out.extend_from_slice(b"\",\"revision\":");
        out.extend_from_slice(self.revision.to_string().as_bytes());
        out.push(b',');
        self.write_json_fields(out);
        out.push(b'}');
    }

    /// The stored fields from `episode_type` to `content` as JSON members (no braces): what
    /// the APIs' EPISODE JSON and an export's episode line share.
    pub(crate) fn write_json_fields(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\"episode_type\":");
        push_str(out, self.episode_type);
        out.extend_from_slice(b",\"tags\":[");
        for (i, t) in self.tags().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_str(out, t);
        }
        out.extend_from_slice(b"],\"primary\":");
        push_str(out, self.primary);
        out.extend_from_slice(b",\"secondary\":");
        push_str(out, self.secondary);
        out.extend_from_slice(b",\"context\":");
        push_str(out, self.context);
        out.extend_from_slice(b",\"metadata\":");
        out.extend_from_slice(if self.metadata.is_empty() { "{}" } else { self.metadata }.as_bytes());
        out.extend_from_slice(b",\"author\":");
        push_opt_str(out, self.author());
        out.extend_from_slice(b",\"session_id\":");
        push_opt_str(out, self.session_id());
        out.extend_from_slice(b",\"event_id\":");
        push_opt_str(out, self.event_id());
        out.extend_from_slice(b",\"timestamp\":");
        match self.timestamp() {
            Some(t) => push_f64(out, t),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"created_at_ms\":");
        out.extend_from_slice(self.created_at_ms.to_string().as_bytes());
        out.extend_from_slice(b",\"updated_at_ms\":");
        out.extend_from_slice(self.updated_at_ms.to_string().as_bytes());
        out.extend_from_slice(b",\"expires_at_ms\":");
        match self.expires_at_ms() {
            Some(e) => out.extend_from_slice(e.to_string().as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"content\":");
        out.extend_from_slice(self.content().unwrap_or("null").as_bytes());
    }
}

/// `mnem_get_episodes`' answer: `{"episodes":[Episode|null...]}`, one element per id asked.
pub fn write_episode_list(out: &mut Vec<u8>, eps: &[Option<Episode>]) {
    out.extend_from_slice(b"{\"episodes\":[");
    for (i, e) in eps.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match e {
            Some(e) => e.write_json(out),
            None => out.extend_from_slice(b"null"),
        }
    }
    out.extend_from_slice(b"]}");
}
