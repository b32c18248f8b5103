//! Filters that choose which hits a search returns without changing how any hit is scored:
//! the record's session, its author, a time range and a minimum score. Unlike `episode_type`
//! and `tag`, which choose the corpus that BM25's statistics count, these leave every score
//! as it would be without them, so scores of filtered and unfiltered searches compare.

use crate::error::{Error, Result};
use crate::record::RecordView;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct HitFilter {
    /// The record's `session_id` equals this (ADK: the session the event was added with).
    pub session_id: Option<String>,
    /// The record's `author` equals this.
    pub author: Option<String>,
    /// Seconds since the Unix epoch, inclusive: the record's time (`HitFilter::time_of`) is
    /// at least this.
    pub since: Option<f64>,
    /// Seconds since the Unix epoch, exclusive: the record's time is below this.
    pub until: Option<f64>,
    /// The hit's score is at least this (the search's own score: BM25, or the fused score).
    pub min_score: Option<f64>,
}

impl HitFilter {
    /// Does it look at records (not only at scores)?
    pub fn reads_records(&self) -> bool {
        self.session_id.is_some() || self.author.is_some() || self.since.is_some() || self.until.is_some()
    }

    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("since", self.since), ("until", self.until), ("min_score", self.min_score)] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(Error::invalid(format!("`{name}` must be a finite number")));
            }
        }
        if let (Some(s), Some(u)) = (self.since, self.until) {
            if s > u {
                return Err(Error::invalid(format!("`since` ({s}) is after `until` ({u})")));
            }
        }
        Ok(())
    }

    /// A record's time: its `timestamp` (ADK's event time), else when it was created.
    pub fn time_of(v: &RecordView<'_>) -> f64 {
        v.timestamp().unwrap_or(v.created_at_ms as f64 / 1000.0)
    }

    /// Does the record pass the filters on records (scores are the caller's to check)?
    pub fn accepts(&self, v: &RecordView<'_>) -> bool {
        if self.session_id.as_deref().is_some_and(|s| v.session_id() != Some(s))
            || self.author.as_deref().is_some_and(|a| v.author() != Some(a))
        {
            return false;
        }
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        let t = Self::time_of(v);
        self.since.is_none_or(|s| t >= s) && self.until.is_none_or(|u| t < u)
    }

    /// Does a hit of `score` pass `min_score`?
    pub fn scores(&self, score: f64) -> bool {
        self.min_score.is_none_or(|m| score >= m)
    }

    /// The same filter without its minimum score (for a channel of a fused search, whose
    /// minimum applies to the fused score).
    pub fn on_records(&self) -> HitFilter {
        HitFilter { min_score: None, ..self.clone() }
    }
}
