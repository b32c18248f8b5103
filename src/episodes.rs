//! Writing episodes: revisions, expiry and tombstones (`crate::wire::episode` parses the
//! `mnem_put_episodes` lines).

use crate::adk::event::MEMORY_TYPE;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::keys::Namespace;
use crate::record::{Episode, RecordView};
use crate::store::now_ms;
use crate::txn::Writers;
use crate::vector::VectorSpace;
use uuid::Uuid;

pub use crate::record::{check_embedding, EpisodeInput, Expiry, DEFAULT_EPISODE_TYPE, MAX_DIMENSION};

/// Does the stored episode hold exactly what writing `input` would store (every field the
/// caller sets, expiry included)? A relative TTL never matches: it would move the expiry.
pub(crate) fn holds(view: &RecordView<'_>, input: &EpisodeInput) -> bool {
    let expiry_same = match input.expiry {
        Expiry::Never => view.expires_at_ms().is_none(),
        Expiry::At(t) => view.expires_at_ms() == Some(t),
        Expiry::Ttl(_) => false,
    };
    !view.deleted()
        && expiry_same
        && view.episode_type == input.episode_type
        && view.tags().eq(input.tags.iter().map(String::as_str))
        && view.primary == input.primary
        && view.secondary == input.secondary
        && view.context == input.context
        && view.metadata == input.metadata.as_deref().unwrap_or("{}")
        && view.author() == input.author.as_deref()
        && view.session_id() == input.session_id.as_deref()
        && view.event_id() == input.event_id.as_deref()
        && view.timestamp().map(f64::to_bits) == input.timestamp.map(f64::to_bits)
        && view.content() == input.content.as_deref()
        && view.embedding().map(|v| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            == input.embedding.as_ref().map(|v| v.iter().map(|x| x.to_bits()).collect())
}

impl Engine {
    /// `Mnem::put_episodes` (the public documentation is there).
    /// `line_of(i)`: the line number the messages give `inputs[i]`.
    pub(crate) fn put_episodes(
        &self,
        ns: &Namespace,
        inputs: Vec<EpisodeInput>,
        line_of: &dyn Fn(usize) -> usize,
    ) -> Result<Vec<Uuid>> {
        let writers = Writers::lock(self)?;
        let mut txn = writers.begin(ns)?;
        txn.read_ahead(inputs.iter().map(|i| (i.episode_type.as_str(), i.tags.as_slice())), [])?;
        let before = self.vectors.space(&self.store, txn.snapshot(), ns)?;
        let mut space = before.clone();
        txn.episodes.prefetch(inputs.iter().filter_map(|i| i.id))?;
        // The memory ids `upsert` checks for `delete_memory` tombstones (a new UUID has none).
        let memories: Vec<String> = inputs
            .iter()
            .filter(|i| i.episode_type == MEMORY_TYPE)
            .filter_map(|i| i.event_id.clone().or_else(|| i.id.map(|id| id.to_string())))
            .collect();
        txn.episodes.prefetch_tombstones(memories.iter().map(String::as_str))?;
        let mut ids = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.into_iter().enumerate() {
            let line = line_of(i);
            if let Some(v) = &input.embedding {
                let d = check_embedding(v).map_err(|e| e.context(format!("line {line}")))?;
                VectorSpace::admit(&mut space, d, input.embedding_model.as_deref())
                    .map_err(|why| Error::invalid(format!("line {line}: `embedding` {why}")))?;
            }
            let now = txn.now;
            ids.push(txn.episodes.upsert(input, now).map_err(|e| e.context(format!("line {line}")))?);
        }
        if space != before {
            self.vectors.stage_space(&mut txn.batch, ns, space.as_ref());
        }
        txn.commit()?;
        Ok(ids)
    }

    /// `Mnem::delete_episodes` (the public documentation is there).
    pub(crate) fn delete_episodes(&self, ns: &Namespace, ids: &[Uuid]) -> Result<u64> {
        let writers = Writers::lock(self)?;
        let mut txn = writers.begin(ns)?;
        txn.episodes.prefetch(ids.iter().copied())?;
        let mut deleted = 0;
        for id in ids {
            let now = txn.now;
            deleted += u64::from(txn.episodes.tombstone(id, now)?);
        }
        if deleted == 0 {
            return Ok(0);
        }
        txn.commit()?;
        Ok(deleted)
    }

    /// `Mnem::get_episode` (the public documentation is there).
    pub(crate) fn get_episode(&self, ns: &Namespace, id: &Uuid) -> Result<Option<Episode>> {
        let snap = self.store.snapshot_without_postings();
        match self.store.get_episode_raw(&snap, &ns.prefix(), id)? {
            Some(bytes) => {
                let e = Episode::decode(*id, &bytes)?;
                Ok(e.is_visible(now_ms()).then_some(e))
            }
            None => Ok(None),
        }
    }
}
