//! The persisted HNSW graph through the public API: recall against brute force on
//! clustered data, the same answers after reopen and after eviction from a small cache,
//! deletes, updates and expiry kept across reopen, and filters that reject most vectors.

use mnem::{EpisodeInput, Expiry, HybridQuery, Mnem, Namespace, OpenOptions};
use std::collections::HashSet;
use uuid::Uuid;
mod common;
use common::{places, Rng};

fn unit(v: Vec<f64>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.iter().map(|x| (x / n) as f32).collect()
}

/// `n` unit vectors around `k` random centres (embedding-like clusters), plus queries.
fn clustered(seed: u64, n: usize, queries: usize, dim: usize, k: usize) -> (Vec<Vec<f32>>, Vec<Vec<f32>>) {
    let mut r = Rng(seed);
    let centres: Vec<Vec<f32>> = (0..k).map(|_| unit((0..dim).map(|_| r.normal()).collect())).collect();
    let point = |r: &mut Rng| {
        let c = &centres[(r.unit() * k as f64) as usize % k];
        unit(c.iter().map(|x| f64::from(*x) + 0.08 * r.normal()).collect())
    };
    let data = (0..n).map(|_| point(&mut r)).collect();
    let qs = (0..queries).map(|_| point(&mut r)).collect();
    (data, qs)
}

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum()
}

fn id(i: usize) -> Uuid {
    Uuid::from_u128(i as u128 + 1)
}

fn put(m: &Mnem, ns: &Namespace, from: usize, vs: &[Vec<f32>], tag: impl Fn(usize) -> &'static str) {
    for (c, chunk) in vs.chunks(500).enumerate() {
        let batch = chunk
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let i = from + c * 500 + j;
                EpisodeInput {
                    id: Some(id(i)),
                    primary: format!("text {i}"),
                    tags: vec![tag(i).to_string()],
                    embedding: Some(v.clone()),
                    ..Default::default()
                }
            })
            .collect();
        m.put_episodes(ns, batch).unwrap();
    }
}

fn semantic(m: &Mnem, ns: &Namespace, v: &[f32], limit: usize, tag: Option<&str>) -> Vec<(Uuid, f64)> {
    let q = HybridQuery {
        vector: Some(v.to_vec()),
        limit,
        semantic_weight: 1.0,
        candidates: 1,
        tag: tag.map(str::to_string),
        ..HybridQuery::new("anything")
    };
    m.hybrid_search(ns, &q).unwrap().into_iter().map(|r| (r.record.id, r.score)).collect()
}

/// The ids of the `k` vectors of `live` nearest to `q` by exact cosine.
fn exact(data: &[Vec<f32>], live: impl Fn(usize) -> bool, q: &[f32], k: usize) -> HashSet<Uuid> {
    let mut all: Vec<(f64, usize)> = (0..data.len()).filter(|&i| live(i)).map(|i| (dot(&data[i], q), i)).collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0));
    all[..k.min(all.len())].iter().map(|&(_, i)| id(i)).collect()
}

fn temp_store(name: &str) -> String {
    std::env::temp_dir().join(format!("mnem-{name}-{}", Uuid::now_v7())).to_string_lossy().into_owned()
}

fn open(path: &str, create: bool, cache_bytes: usize) -> Mnem {
    Mnem::open(path, OpenOptions { create, cache_bytes, ..Default::default() }).unwrap()
}

#[test]
fn nearest_matches_brute_force_on_clustered_data() {
    for place in places("vector_brute_force") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "u");
        let (data, qs) = clustered(0xC1u64, 3000, 50, 48, 30);
        put(&m, &ns, 0, &data, |_| "t");
        let mut hits = 0;
        for q in &qs {
            let truth = exact(&data, |_| true, q, 10);
            let got = semantic(&m, &ns, q, 10, None);
            assert_eq!(got.len(), 10);
            hits += got.iter().filter(|(id, _)| truth.contains(id)).count();
        }
        let recall = hits as f64 / (10 * qs.len()) as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }
}

#[test]
fn reopen_answers_as_before_closing_with_updates_deletes_and_expiry() {
    for place in places("vector_reopen") {
        eprintln!("backend: {}", place.backend);
        let ns = Namespace::new("app", "u");
        let (mut data, qs) = clustered(0xA5, 1200, 20, 24, 12);
        let before: Vec<Vec<(Uuid, f64)>> = {
            let m = open(&place.uri, true, 64 << 20);
            put(&m, &ns, 0, &data, |_| "t");
            // New vectors for some episodes, a deleted few, and one that has expired.
            let (moved, _) = clustered(0x77, 100, 0, 24, 3);
            for (k, v) in moved.into_iter().enumerate() {
                data[k * 7] = v;
            }
            let changed: Vec<Vec<f32>> = (0..100).map(|k| data[k * 7].clone()).collect();
            for (k, v) in changed.iter().enumerate() {
                let e = EpisodeInput { id: Some(id(k * 7)), embedding: Some(v.clone()), ..Default::default() };
                m.put_episodes(&ns, vec![e]).unwrap();
            }
            let gone: Vec<Uuid> = (0..1200).filter(|i| i % 11 == 5).map(id).collect();
            assert_eq!(m.delete_episodes(&ns, &gone).unwrap(), gone.len() as u64);
            let short = EpisodeInput {
                id: Some(id(3)),
                embedding: Some(data[3].clone()),
                expiry: Expiry::At(1),
                ..Default::default()
            };
            m.put_episodes(&ns, vec![short]).unwrap();
            let out: Vec<_> = qs.iter().map(|q| semantic(&m, &ns, q, 15, None)).collect();
            for (q, got) in qs.iter().zip(&out) {
                let ids: HashSet<Uuid> = got.iter().map(|r| r.0).collect();
                assert!(ids.iter().all(|x| (x.as_u128() - 1) % 11 != 5 && *x != id(3)), "deleted or expired result");
                let truth = exact(&data, |i| i % 11 != 5 && i != 3, q, 15);
                assert!(truth.intersection(&ids).count() >= 13, "the updated vectors are searched");
            }
            out
        };
        let m = open(&place.uri, false, 64 << 20);
        let after: Vec<_> = qs.iter().map(|q| semantic(&m, &ns, q, 15, None)).collect();
        assert_eq!(after, before);
        // Writes go on after the reload, from the graph's persisted state.
        put(&m, &ns, 5000, &qs[..1], |_| "t");
        assert_eq!(semantic(&m, &ns, &qs[0], 1, None)[0].0, id(5000));
    }
}

#[test]
fn graphs_evicted_from_a_small_cache_reload_with_the_same_answers() {
    let path = temp_store("vector-evict");
    // 1 MiB: three quarters for graphs, less than the two namespaces' graphs together.
    let m = open(&path, true, 1 << 20);
    let (a, b) = (Namespace::new("app", "a"), Namespace::new("app", "b"));
    let (data, qs) = clustered(0xE1, 1000, 5, 64, 10);
    put(&m, &a, 0, &data, |_| "t");
    put(&m, &b, 0, &data, |_| "t");
    let first: Vec<_> = qs.iter().map(|q| semantic(&m, &a, q, 10, None)).collect();
    for _ in 0..2 {
        for q in &qs {
            semantic(&m, &b, q, 10, None);
        }
        let again: Vec<_> = qs.iter().map(|q| semantic(&m, &a, q, 10, None)).collect();
        assert_eq!(again, first);
    }
    let s = m.stats().cache;
    assert!(s.evictions >= 2, "{s:?}");
    assert!(s.used_bytes <= s.budget_bytes && s.entries == 1, "{s:?}");
    drop(m);
    std::fs::remove_dir_all(&path).unwrap();
}

#[test]
fn a_filter_that_rejects_most_vectors_gets_the_exact_nearest_that_pass() {
    let m = Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("app", "u");
    let (data, qs) = clustered(0xF1, 2000, 10, 32, 20);
    // One episode in 50 has the tag "rare".
    put(&m, &ns, 0, &data, |i| if i % 50 == 0 { "rare" } else { "common" });
    for q in &qs {
        let truth = exact(&data, |i| i % 50 == 0, q, 10);
        let got: HashSet<Uuid> = semantic(&m, &ns, q, 10, Some("rare")).into_iter().map(|r| r.0).collect();
        assert_eq!(got, truth);
    }
}

#[test]
fn searches_during_writes_and_deletes_get_full_pages() {
    let m = std::sync::Arc::new(Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap());
    let ns = Namespace::new("app", "u");
    let (data, qs) = clustered(0xD1, 2000, 20, 16, 10);
    put(&m, &ns, 0, &data[..100], |_| "t");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (m, ns, qs, done) = (m.clone(), ns.clone(), qs.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) || rounds == 0 {
                    let q = HybridQuery {
                        vector: Some(qs[(rounds + r) % qs.len()].clone()),
                        semantic_weight: 1.0,
                        candidates: 1,
                        ..HybridQuery::new("anything")
                    };
                    // A full page of live episodes with vectors, while the graph changes.
                    let got = m.hybrid_search(&ns, &q).unwrap();
                    assert_eq!(got.len(), 10);
                    assert!(got.iter().all(|r| !r.record.deleted && r.record.embedding.is_some()));
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    for (c, chunk) in data[100..].chunks(100).enumerate() {
        put(&m, &ns, 100 + c * 100, chunk, |_| "t");
        let gone: Vec<Uuid> = (c * 100..c * 100 + 10).map(id).collect();
        m.delete_episodes(&ns, &gone).unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    let truth = exact(&data, |i| i >= 190 || i % 100 >= 10, &qs[0], 10);
    let got: HashSet<Uuid> = semantic(&m, &ns, &qs[0], 10, None).into_iter().map(|r| r.0).collect();
    assert!(got.intersection(&truth).count() >= 9);
}
