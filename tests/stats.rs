//! The store's cache counters move when the caches are used. The `cache_bytes` budget (its
//! refusal below 1 MiB, its split between RocksDB's block cache and the graph cache) and the
//! statistics of a new store are the conformance corpus's (open_errors, open_stats).

use mnem::{EpisodeInput, KeywordQuery, Mnem, Namespace, OpenOptions};
use uuid::Uuid;

fn tempdir(tag: &str) -> String {
    std::env::temp_dir().join(format!("mnem-stats-{tag}-{}", Uuid::now_v7())).to_str().unwrap().to_string()
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

#[test]
fn the_graph_cache_counts_one_miss_per_load_and_evicts_within_its_budget() {
    use mnem::HybridQuery;
    let dir = tempdir("graphs");
    let vector = |i: usize| -> Vec<f32> { (0..64).map(|d| ((i * 31 + d * 7) % 97) as f32 / 97.0 + 0.01).collect() };
    {
        let m = Mnem::open(&dir, OpenOptions { create: true, ..Default::default() }).unwrap();
        for ns in 0..3 {
            let eps = (0..1200)
                .map(|i| EpisodeInput {
                    primary: format!("note {i}"),
                    embedding: Some(vector(i + ns)),
                    ..EpisodeInput::default()
                })
                .collect();
            m.put_episodes(&Namespace::new("a", format!("u{ns}")), eps).unwrap();
        }
    }
    // 1 MiB: a quarter for blocks, 768 KiB for graphs; each graph of 1,200 64-d vectors
    // takes over 500 KiB, so only one stays.
    let m = Mnem::open(&dir, OpenOptions { cache_bytes: 1 << 20, ..Default::default() }).unwrap();
    let mut q = HybridQuery::new("note");
    q.vector = Some(vector(5));
    q.semantic_weight = 1.0;
    let ns0 = Namespace::new("a", "u0");
    let first = m.hybrid_search(&ns0, &q).unwrap();
    for _ in 0..4 {
        assert_eq!(m.hybrid_search(&ns0, &q).unwrap(), first);
    }
    let s = m.stats().cache;
    assert_eq!((s.misses, s.hits, s.entries), (1, 4, 1), "one load, then hits: {s:?}");
    for round in 0..2 {
        for ns in 0..3 {
            let got = m.hybrid_search(&Namespace::new("a", format!("u{ns}")), &q).unwrap();
            assert_eq!(got.len(), 10, "round {round}, namespace {ns}");
        }
    }
    assert_eq!(m.hybrid_search(&ns0, &q).unwrap(), first, "a reloaded graph answers the same");
    let s = m.stats().cache;
    assert!(s.evictions > 0 && s.used_bytes <= s.budget_bytes, "{s:?}");
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}
