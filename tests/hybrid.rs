//! Hybrid retrieval: HNSW recall against exact cosine, the RRF arithmetic against a
//! test-side computation, what only typed queries can hold (NaN weights, usize::MAX
//! candidates), and vectors across expiry and reopen. Refused queries, the lexical channel
//! alone, limit 0, blank text and the embedder are the conformance corpus's (hybrid_*,
//! embed_hybrid).

use mnem::{EpisodeInput, HybridQuery, KeywordQuery, Mnem, Namespace, OpenOptions, Status};
use std::collections::HashMap;
use uuid::Uuid;
mod common;
use common::{places, Rng};

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

/// A random unit vector (normal coordinates).
fn random_vector(rng: &mut Rng, dim: usize) -> Vec<f32> {
    let v: Vec<f64> = (0..dim).map(|_| rng.normal()).collect();
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    v.iter().map(|x| (x / n) as f32).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn semantic_only(text: &str, v: &[f32], limit: usize) -> HybridQuery {
    HybridQuery { vector: Some(v.to_vec()), limit, semantic_weight: 1.0, candidates: 1, ..HybridQuery::new(text) }
}

#[test]
fn semantic_recall_at_10_against_exact_cosine() {
    for place in places("semantic_recall_at_10_against_exact_cosine") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "u");
        let dim = 32;
        let mut r = Rng(0x5eed);
        let mut live: HashMap<Uuid, Vec<f32>> = HashMap::new();
        let mut ids = Vec::new();
        let batch = |m: &Mnem, r: &mut Rng, live: &mut HashMap<Uuid, Vec<f32>>, ids: &mut Vec<Uuid>, n: usize| {
            let vs: Vec<Vec<f32>> = (0..n).map(|_| random_vector(r, dim)).collect();
            let new = m
                .put_episodes(
                    &ns,
                    vs.iter()
                        .map(|v| EpisodeInput { primary: "x".into(), embedding: Some(v.clone()), ..Default::default() })
                        .collect(),
                )
                .unwrap();
            for (id, v) in new.iter().zip(vs) {
                live.insert(*id, v);
                ids.push(*id);
            }
        };
        batch(&m, &mut r, &mut live, &mut ids, 5000);
        // Build the index now, so the deletes and later inserts go through its incremental path.
        m.hybrid_search(&ns, &semantic_only("x", &random_vector(&mut r, dim), 10)).unwrap();
        let doomed: Vec<Uuid> = ids.iter().step_by(5).copied().collect();
        m.delete_episodes(&ns, &doomed).unwrap();
        for id in &doomed {
            live.remove(id);
        }
        batch(&m, &mut r, &mut live, &mut ids, 5000);
        let doomed: Vec<Uuid> = ids.iter().skip(5001).step_by(7).copied().collect();
        m.delete_episodes(&ns, &doomed).unwrap();
        for id in &doomed {
            live.remove(id);
        }
        assert!(live.len() >= 7500);
        let queries = 100;
        let mut hit = 0;
        for _ in 0..queries {
            let q = random_vector(&mut r, dim);
            let mut exact: Vec<(f64, Uuid)> = live.iter().map(|(id, v)| (cosine(&q, v), *id)).collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0));
            let truth: Vec<Uuid> = exact[..10].iter().map(|x| x.1).collect();
            let got = m.hybrid_search(&ns, &semantic_only("x", &q, 10)).unwrap();
            assert_eq!(got.len(), 10);
            for g in &got {
                assert!(live.contains_key(&g.record.id), "a deleted episode came back");
                assert_eq!(g.keyword_score, 0.0, "semantic weight 1: the lexical channel takes no part");
            }
            hit += got.iter().filter(|g| truth.contains(&g.record.id)).count();
        }
        let recall = hit as f64 / (queries * 10) as f64;
        eprintln!("semantic recall@10 over {} live vectors: {recall}", live.len());
        assert!(recall >= 0.95, "recall@10 = {recall}");
    }
}

/// A small namespace: text for BM25, vectors for the semantic channel.
fn small(m: &Mnem, ns: &Namespace) -> Vec<(Uuid, String, Vec<f32>)> {
    let mut r = Rng(99);
    let texts = [
        "green tea and jasmine",
        "black tea",
        "coffee beans",
        "tea tea tea",
        "mountain hiking",
        "sea kayaking trip",
        "jasmine rice recipe",
        "tea ceremony in Kyoto",
        "espresso machine",
        "camping gear",
    ];
    let items: Vec<(String, Vec<f32>)> = texts.iter().map(|t| (t.to_string(), random_vector(&mut r, 8))).collect();
    let ids = m
        .put_episodes(
            ns,
            items
                .iter()
                .map(|(t, v)| EpisodeInput { primary: t.clone(), embedding: Some(v.clone()), ..Default::default() })
                .collect(),
        )
        .unwrap();
    ids.into_iter().zip(items).map(|(id, (t, v))| (id, t, v)).collect()
}

#[test]
fn fusion_arithmetic_matches_a_test_side_computation() {
    let m = mem();
    let ns = Namespace::new("a", "u");
    let docs = small(&m, &ns);
    let q = random_vector(&mut Rng(7), 8);
    let lexical: Vec<Uuid> = m
        .keyword_search(&ns, &KeywordQuery { limit: 1000, ..KeywordQuery::new("tea jasmine") })
        .unwrap()
        .into_iter()
        .map(|r| r.record.id)
        .collect();
    let mut sem: Vec<(f64, Uuid)> = docs.iter().map(|(id, _, v)| (cosine(&q, v), *id)).collect();
    sem.sort_by(|a, b| b.0.total_cmp(&a.0));
    let semantic: Vec<Uuid> = sem.iter().map(|x| x.1).collect();
    for w in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let mut expected: HashMap<Uuid, (f64, f64)> = HashMap::new();
        if 1.0 - w > 0.0 {
            for (i, id) in lexical.iter().enumerate() {
                expected.entry(*id).or_default().0 = (1.0 - w) / (60.0 + (i + 1) as f64);
            }
        }
        if w > 0.0 {
            for (i, id) in semantic.iter().enumerate() {
                expected.entry(*id).or_default().1 = w / (60.0 + (i + 1) as f64);
            }
        }
        let mut want: Vec<(Uuid, f64, f64, f64)> = expected.into_iter().map(|(id, (k, s))| (id, k + s, k, s)).collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let q = HybridQuery {
            vector: Some(q.clone()),
            limit: 10,
            semantic_weight: w,
            candidates: 10,
            ..HybridQuery::new("tea jasmine")
        };
        let got = m.hybrid_search(&ns, &q).unwrap();
        let got: Vec<(Uuid, f64, f64, f64)> =
            got.iter().map(|r| (r.record.id, r.score, r.keyword_score, r.semantic_score)).collect();
        assert_eq!(got.len(), want.len().min(10), "w={w}");
        for (g, e) in got.iter().zip(&want) {
            assert_eq!(g.0, e.0, "w={w}");
            assert!((g.1 - e.1).abs() < 1e-15 && (g.2 - e.2).abs() < 1e-15 && (g.3 - e.3).abs() < 1e-15, "w={w}");
        }
    }
}

/// Weights JSON can carry (1.5, -0.1, 1e999, a string) are the corpus's (hybrid_search); the
/// typed query can also hold NaN and infinities.
#[test]
fn weights_outside_zero_one_are_rejected_never_clamped() {
    let m = mem();
    let ns = Namespace::new("a", "u");
    small(&m, &ns);
    for w in [-0.0001, 1.0001, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let q = HybridQuery { semantic_weight: w, ..HybridQuery::new("tea") };
        let e = m.hybrid_search(&ns, &q).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("semantic_weight"), "{}", e.message);
    }
}

/// Vectors JSON cannot carry (NaN, infinities), through the typed inputs; the other vector
/// rules (empty, zero, beyond f32, dimensions) are the corpus's.
#[test]
fn non_finite_vectors_are_refused() {
    let m = mem();
    let ns = Namespace::new("a", "u");
    small(&m, &ns);
    let nan = EpisodeInput { embedding: Some(vec![f32::NAN; 8]), ..Default::default() };
    let e = m.put_episodes(&ns, vec![nan]).unwrap_err();
    assert!(e.message.contains("not a finite f32"), "{}", e.message);
    let q = HybridQuery { vector: Some(vec![f32::INFINITY; 8]), ..HybridQuery::new("tea") };
    let e = m.hybrid_search(&ns, &q).unwrap_err();
    assert!(e.message.contains("not a finite f32"), "{}", e.message);
}

/// "Without vectors" means without a live vector now: a namespace whose vectors have all
/// expired, or were all deleted before a reopen (the graph then loaded from its persisted
/// keys), fuses with lexical weight 1 like one that never had any (deleted vectors without a
/// reopen: the corpus's hybrid_no_live_vector).
#[test]
fn lexical_weight_becomes_one_when_no_vector_is_live() {
    let m = mem();
    let q = |m: &Mnem, ns: &Namespace| {
        m.hybrid_search(
            ns,
            &HybridQuery { vector: Some(vec![1.0, 0.0]), semantic_weight: 0.5, ..HybridQuery::new("tea") },
        )
        .unwrap()
    };
    let with_vector =
        |text: &str, v: Vec<f32>| EpisodeInput { primary: text.into(), embedding: Some(v), ..Default::default() };
    let deleted = Namespace::new("a", "deleted");
    let expired = Namespace::new("a", "expired");
    let short = EpisodeInput { expiry: mnem::Expiry::Ttl(1), ..with_vector("green tea", vec![1.0, 0.0]) };
    m.put_episodes(&expired, vec![short, EpisodeInput { primary: "black tea".into(), ..Default::default() }]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let got = q(&m, &expired);
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].score, got[0].semantic_score), (1.0 / 61.0, 0.0));
    // The same holds after reopen, where the graph is loaded from its persisted keys.
    let dir = std::env::temp_dir().join(format!("mnem-hybrid-live-{}", Uuid::new_v4()));
    let path = dir.to_str().unwrap();
    {
        let d = Mnem::open(path, OpenOptions { create: true, ..Default::default() }).unwrap();
        let ids = d.put_episodes(&deleted, vec![with_vector("green tea", vec![1.0, 0.0])]).unwrap();
        d.put_episodes(&deleted, vec![EpisodeInput { primary: "black tea".into(), ..Default::default() }]).unwrap();
        d.delete_episodes(&deleted, &ids).unwrap();
    }
    let d = Mnem::open(path, OpenOptions::default()).unwrap();
    let got = q(&d, &deleted);
    assert_eq!((got.len(), got[0].score), (1, 1.0 / 61.0));
    drop(d);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn candidate_multiplication_saturates() {
    let m = mem();
    let ns = Namespace::new("a", "u");
    small(&m, &ns);
    let q = HybridQuery { vector: Some(vec![0.5; 8]), limit: 1000, candidates: usize::MAX, ..HybridQuery::new("tea") };
    let got = m.hybrid_search(&ns, &q).unwrap();
    assert_eq!(got.len(), 10);
    let q =
        HybridQuery::parse(r#"{"text":"tea","vector":[1,2,3,4,5,6,7,8],"candidates":18446744073709551615,"limit":5}"#)
            .unwrap();
    assert_eq!(m.hybrid_search(&ns, &q).unwrap().len(), 5);
}

#[test]
fn vectors_persist_across_reopen_and_deletes_stay_deleted() {
    for place in places("vectors_persist") {
        eprintln!("backend: {}", place.backend);
        let ns = Namespace::new("a", "u");
        let q = random_vector(&mut Rng(7), 8);
        let (best, docs) = {
            let m = place.open();
            let docs = small(&m, &ns);
            let got = m.hybrid_search(&ns, &semantic_only("anything", &q, 3)).unwrap();
            m.delete_episodes(&ns, &[got[0].record.id]).unwrap();
            (got.iter().map(|r| r.record.id).collect::<Vec<_>>(), docs)
        };
        let m = Mnem::open(&place.uri, OpenOptions::default()).unwrap();
        let got: Vec<Uuid> =
            m.hybrid_search(&ns, &semantic_only("anything", &q, 2)).unwrap().iter().map(|r| r.record.id).collect();
        assert_eq!(got, best[1..3].to_vec());
        assert_eq!(docs.len(), 10);
    }
}
