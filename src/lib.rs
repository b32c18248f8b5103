//! mnem: a persistent memory store for AI agents.
//!
//! Three ways to find what an agent remembered, over one RocksDB store:
//! - the ADK memory seam (`Mnem::add_session`, `add_events`, `delete_memory`, `search`),
//!   which ranks exactly like google-adk's `InMemoryMemoryService`;
//! - lexical retrieval over episodes (`Mnem::keyword_search`, `search_memory_lexical`,
//!   `search_episodes`, the substring search behind `mnem_substring_search`), BM25 in f64;
//! - hybrid retrieval (`Mnem::hybrid_search`), BM25 and HNSW fused by weighted RRF.
//!
//! The C ABI in `ffi` wraps this API one function to one method.

// `unsafe` lives only in `ffi`, where C's pointers come in; the core is safe Rust.
#![deny(unsafe_code)]

pub mod adk;
mod admin;
pub mod cache;
mod codec;
mod derived;
pub mod embed;
mod engine;
pub mod episodes;
pub mod error;
#[allow(unsafe_code)]
pub mod ffi;
pub mod filter;
pub mod hybrid;
pub mod keys;
pub mod lexical;
mod mnem;
mod priority;
pub mod record;
pub mod store;
mod txn;
mod upgrade;
pub mod vector;
mod wire;

pub use adk::{EventOptions, RecallQuery};
pub use admin::{
    CheckReport, Forgotten, KeyCount, NamespaceInfo, NamespacePage, NamespaceStats, Progress, Transfer, EXPORT_VERSION,
    MAX_GET_EPISODES,
};
pub use episodes::{EpisodeInput, Expiry};
pub use error::{Error, Result, Status};
pub use filter::HitFilter;
pub use hybrid::{EmbeddingProvider, HybridQuery, HybridSearchResult};
pub use keys::Namespace;
pub use lexical::{KeywordQuery, KeywordSearchResult, LexicalPage, LexicalQuery};
pub use mnem::{Mnem, Stats};
pub use record::Episode;
pub use store::{OpenOptions, FORMAT_VERSION, MEMORY_PATH};

/// JSON writers used by the C ABI (`wire`, docs/WIRE.md), public so that Rust callers can
/// produce the same bytes.
pub mod output {
    pub use crate::wire::adk::write_memories;
    pub use crate::wire::episode::write_episode_list;
    pub use crate::wire::query::{write_episodes, write_hybrid_results, write_page, write_results};
}

/// Parsers of the C ABI's JSON inputs (`wire`, docs/WIRE.md), public for the same reason.
pub mod input {
    pub use crate::wire::episode::{parse_episode_line, parse_episode_lines, parse_id_lines};
}
