//! Store management on the wire: open options, store and namespace statistics, the
//! namespace page and its query, and the check report.

use super::{parse_object, push_str, Fields};
use crate::admin::{CheckReport, KeyCount, NamespacePage, NamespaceStats, MAX_NAMESPACE_PAGE};
use crate::cache::CacheStats;
use crate::engine::Stats;
use crate::error::{Error, Result};
use crate::keys::Namespace;
use crate::store::{OpenOptions, FORMAT_VERSION};

/// The namespaces of a `list_namespaces` page without a `limit`.
const DEFAULT_NAMESPACE_PAGE: usize = 100;

/// `mnem_open`'s `options_json` (empty for the defaults) over the options `flags` gave.
pub fn parse_open_options(json: &str, mut opts: OpenOptions) -> Result<OpenOptions> {
    if !json.trim().is_empty() {
        let mut f = Fields::strict(parse_object(json).map_err(|e| e.context("options_json"))?);
        opts.sync_writes = f.get::<bool>("sync_writes", "true or false")?.unwrap_or(false);
        if let Some(c) = f.get::<u64>("cache_bytes", "an integer number of bytes")? {
            opts.cache_bytes = usize::try_from(c).unwrap_or(usize::MAX);
        }
        match f.get::<String>("embedder", "\"builtin\" or \"none\"")?.as_deref() {
            None | Some("none") => {}
            Some("builtin") => opts.builtin_embedder = true,
            Some(other) => {
                return Err(Error::invalid(format!("`embedder` must be \"builtin\" or \"none\", got {other:?}")))
            }
        }
        if let Some(dir) = f.get::<String>("model_dir", "a folder path")? {
            if dir.is_empty() {
                return Err(Error::invalid("`model_dir` must not be empty"));
            }
            opts.model_dir = Some(dir.into());
        }
        if let Some(n) = f.get::<u64>("embed_context", "an integer from 0 to 16")? {
            if n > crate::embed::MAX_EVENT_CONTEXT as u64 {
                return Err(Error::invalid(format!(
                    "`embed_context` must be an integer from 0 to {}, got {n}",
                    crate::embed::MAX_EVENT_CONTEXT
                )));
            }
            opts.embed_context = Some(n as usize);
        }
        let max = crate::store::MAX_WRITE_YIELD_MS;
        if let Some(n) = f.get::<u64>("write_yield_ms", "an integer from 0 to 1000")? {
            if n > max {
                return Err(Error::invalid(format!("`write_yield_ms` must be an integer from 0 to {max}, got {n}")));
            }
            opts.write_yield_ms = Some(n);
        }
        f.finish().map_err(|e| e.context("options_json"))?;
    }
    Ok(opts)
}

/// `mnem_stats`' answer.
pub fn write_stats(out: &mut Vec<u8>, s: &Stats) {
    let cache = |c: &CacheStats| {
        let total = c.hits + c.misses;
        let rate = if total == 0 { 0.0 } else { c.hits as f64 / total as f64 };
        format!(
                "{{\"budget_bytes\":{},\"used_bytes\":{},\"entries\":{},\"hits\":{},\"misses\":{},\"hit_rate\":{rate},\"evictions\":{}}}",
                c.budget_bytes, c.used_bytes, c.entries, c.hits, c.misses, c.evictions
            )
    };
    out.extend_from_slice(format!(
            "{{\"format\":{FORMAT_VERSION},\"opened_format\":{},\"indexes_built\":{},\"journal_replayed\":{},\"cache_bytes\":{},\"graph_cache\":{},\"block_cache\":{}}}",
            s.opened_format,
            s.indexes_built,
            s.journal_replayed,
            s.cache.budget_bytes + s.block_cache.budget_bytes,
            cache(&s.cache),
            cache(&s.block_cache)
        )
        .as_bytes(),
    )
}

fn push_namespace(out: &mut Vec<u8>, ns: &Namespace) {
    out.extend_from_slice(b"{\"app_name\":");
    push_str(out, &ns.app_name);
    out.extend_from_slice(b",\"user_id\":");
    push_str(out, &ns.user_id);
}

impl NamespacePage {
    /// `{"namespaces":[{"app_name","user_id","episodes"}...],"next_after":{"app_name","user_id"}|null}`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = b"{\"namespaces\":[".to_vec();
        for (i, n) in self.namespaces.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_namespace(&mut out, &n.namespace);
            out.extend_from_slice(format!(",\"episodes\":{}}}", n.episodes).as_bytes());
        }
        out.extend_from_slice(b"],\"next_after\":");
        match &self.next_after {
            Some(ns) => {
                push_namespace(&mut out, ns);
                out.push(b'}');
            }
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        out
    }

    /// Parse a `list_namespaces` query: `{"after": {"app_name","user_id"} | null, "limit"}`.
    pub fn parse_query(query_json: &str) -> Result<(Option<Namespace>, usize)> {
        if query_json.trim().is_empty() {
            return Ok((None, DEFAULT_NAMESPACE_PAGE));
        }
        let mut f = Fields::strict(parse_object(query_json)?);
        let limit = match f.get::<i64>("limit", "an integer from 1 to 1000")? {
            None => DEFAULT_NAMESPACE_PAGE,
            Some(n) if (1..=MAX_NAMESPACE_PAGE as i64).contains(&n) => n as usize,
            Some(_) => return Err(Error::invalid("`limit` must be an integer from 1 to 1000")),
        };
        let after = match f.raw("after") {
            None => None,
            Some(v) if v.get() == "null" => None,
            Some(v) => {
                let mut a = Fields::strict(parse_object(v.get()).map_err(|e| e.context("after"))?);
                let app = a.string("app_name")?.ok_or_else(|| Error::invalid("after: `app_name` is required"))?;
                let user = a.string("user_id")?.ok_or_else(|| Error::invalid("after: `user_id` is required"))?;
                a.finish().map_err(|e| e.context("after"))?;
                Some(Namespace::new(app, user))
            }
        };
        f.finish()?;
        Ok((after, limit))
    }
}

impl NamespaceStats {
    /// The statistics as the JSON object `mnem_namespace_stats` writes.
    pub fn to_json(&self) -> Vec<u8> {
        let kc = |c: &KeyCount| format!("{{\"keys\":{},\"bytes\":{}}}", c.keys, c.bytes);
        format!(
            "{{\"records\":{},\"live\":{},\"deleted\":{},\"expired\":{},\"buckets\":{},\"bucket_events\":{},\
             \"memory_tombstones\":{},\"adk\":{},\"index\":{{\"bm25\":{},\"adk\":{},\"vector\":{}}},\
             \"dimension\":{},\"embedding_model\":{},\"approximate_file_bytes\":{}}}",
            kc(&self.records),
            self.live,
            self.deleted,
            self.expired,
            self.buckets,
            self.bucket_events,
            self.memory_tombstones,
            kc(&self.adk),
            kc(&self.bm25_index),
            kc(&self.adk_index),
            kc(&self.vector_index),
            self.dimension.map_or("null".to_string(), |d| d.to_string()),
            self.embedding_model.as_deref().map_or("null".to_string(), |m| {
                let mut v = Vec::new();
                super::push_str(&mut v, m);
                String::from_utf8(v).expect("JSON of a string")
            }),
            self.approximate_file_bytes
        )
        .into_bytes()
    }
}

impl CheckReport {
    /// `mnem_check`'s answer.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = format!(
            "{{\"ok\":{},\"keys\":{{\"meta\":{},\"episodes\":{},\"adk\":{},\"index\":{}}},\"bytes\":{},\"episodes\":{},\"problem\":",
            self.problem.is_none(),
            self.keys[0],
            self.keys[1],
            self.keys[2],
            self.keys[3],
            self.bytes,
            self.episodes
        )
        .into_bytes();
        match &self.problem {
            Some(e) => {
                out.extend_from_slice(b"{\"status\":");
                push_str(&mut out, e.status.name());
                out.extend_from_slice(b",\"message\":");
                push_str(&mut out, &e.message);
                out.push(b'}');
            }
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        out
    }
}
