//! `cache_bytes` and the store's statistics: the budget is validated, split between RocksDB's
//! block cache and the graph cache, and the counters move when the caches are used.

use mnem::{EpisodeInput, KeywordQuery, Mnem, Namespace, OpenOptions, Status};
use uuid::Uuid;

fn tempdir(tag: &str) -> String {
    std::env::temp_dir().join(format!("mnem-stats-{tag}-{}", Uuid::now_v7())).to_str().unwrap().to_string()
}

#[test]
fn cache_bytes_below_one_mebibyte_is_refused() {
    let opts = OpenOptions { create: true, cache_bytes: (1 << 20) - 1, ..Default::default() };
    let e = Mnem::open(":memory:", opts).err().unwrap();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("cache_bytes"), "{}", e.message);
    Mnem::open(":memory:", OpenOptions { create: true, cache_bytes: 1 << 20, ..Default::default() }).unwrap();
}

#[test]
fn a_new_store_reports_its_budget_and_format() {
    let m = Mnem::open(":memory:", OpenOptions { create: true, cache_bytes: 8 << 20, ..Default::default() }).unwrap();
    let s = m.stats();
    assert_eq!(s.block_cache.budget_bytes, 2 << 20);
    assert_eq!(s.cache.budget_bytes, 6 << 20);
    assert_eq!((s.opened_format, s.indexes_built), (mnem::FORMAT_VERSION, 0));
    let json: serde_json::Value = serde_json::from_slice(&m.stats_json()).unwrap();
    assert_eq!(json["cache_bytes"], 8 << 20);
    assert_eq!(json["format"], mnem::FORMAT_VERSION);
    for k in ["budget_bytes", "used_bytes", "entries", "hits", "misses", "hit_rate", "evictions"] {
        assert!(json["graph_cache"][k].is_number() && json["block_cache"][k].is_number(), "{k}: {json}");
    }
}

#[test]
fn block_cache_counters_move_when_a_reopened_store_is_searched() {
    let dir = tempdir("block");
    let ns = Namespace::new("a", "u");
    {
        let m = Mnem::open(&dir, OpenOptions { create: true, ..Default::default() }).unwrap();
        let eps = (0..500)
            .map(|i| EpisodeInput { primary: format!("word{} common text {i}", i % 7), ..EpisodeInput::default() })
            .collect();
        m.put_episodes(&ns, eps).unwrap();
    }
    let m = Mnem::open(&dir, OpenOptions::default()).unwrap();
    let before = m.stats().block_cache;
    for _ in 0..3 {
        assert_eq!(m.keyword_search(&ns, &KeywordQuery::new("word3 common")).unwrap().len(), 10);
    }
    let after = m.stats().block_cache;
    assert!(after.misses > before.misses, "the first search reads blocks from the files: {after:?}");
    assert!(after.hits > before.hits, "later searches find them cached: {after:?}");
    assert!(after.used_bytes > 0 && after.used_bytes <= after.budget_bytes, "{after:?}");
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}
