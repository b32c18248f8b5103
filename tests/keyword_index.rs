//! The persisted BM25 index against the full scan it replaced (the oracle, kept in the
//! library as `keyword_search_by_scan`): random corpora with updates, deletes, expiry, tags,
//! types and filters, at several visibility times, live and after reopening the store. Hits,
//! order and scores must agree (scores within 1e-9; in practice bit for bit).

use mnem::{EpisodeInput, Expiry, KeywordQuery, Mnem, Namespace, OpenOptions};
use uuid::Uuid;
mod common;
use common::{places, Rng};

const WORDS: &[&str] = &[
    "tea",
    "Tea",
    "TEA",
    "coffee",
    "Straße",
    "école",
    "École",
    "ΟΔΟΣ",
    "οδός",
    "Москва",
    "東京",
    "タワー",
    "x2",
    "under_score",
    "İstanbul",
    "naïve",
    "milk",
    "sugar",
    "the",
    "a",
    "of",
    "agent",
    "memory",
    "remember",
];
const TYPES: &[&str] = &["event", "memory", "note"];
const TAGS: &[&str] = &["red", "green", "blue", "Red"];

fn text(rng: &mut Rng) -> String {
    let n = rng.below(12);
    let seps = [" ", ", ", "-", "  ", ". "];
    (0..n).map(|_| rng.pick(WORDS)).collect::<Vec<_>>().join(seps[rng.below(seps.len())])
}

fn queries(rng: &mut Rng) -> Vec<KeywordQuery> {
    let mut out = Vec::new();
    for _ in 0..60 {
        let n = 1 + rng.below(3);
        let mut q = KeywordQuery::new((0..n).map(|_| rng.pick(WORDS)).collect::<Vec<_>>().join(" "));
        q.limit = [1, 3, 10, 1000][rng.below(4)];
        match rng.below(4) {
            0 => q.episode_type = Some(rng.pick(TYPES).to_string()),
            1 => q.tag = Some(rng.pick(TAGS).to_string()),
            2 => {
                q.episode_type = Some(rng.pick(TYPES).to_string());
                q.tag = Some(rng.pick(TAGS).to_string());
            }
            _ => {}
        }
        out.push(q);
    }
    out
}

/// Write a random history into `ns`: creates, updates of earlier ids, deletes, expiries in
/// the past and future. Returns the latest expiry written.
fn write_history(m: &Mnem, ns: &Namespace, rng: &mut Rng, batches: usize) {
    let now = mnem::store::now_ms();
    let mut ids: Vec<Uuid> = Vec::new();
    for _ in 0..batches {
        let mut batch = Vec::new();
        for _ in 0..1 + rng.below(8) {
            let id = if !ids.is_empty() && rng.below(4) == 0 { Some(ids[rng.below(ids.len())]) } else { None };
            if id.is_some_and(|id| batch.iter().any(|e: &EpisodeInput| e.id == Some(id))) {
                continue;
            }
            let mut tags: Vec<String> = (0..rng.below(3)).map(|_| rng.pick(TAGS).to_string()).collect();
            if rng.below(5) == 0 {
                tags.push(tags.first().cloned().unwrap_or_else(|| "red".into()));
                // a repeated tag
            }
            let expiry = match rng.below(6) {
                0 => Expiry::At(now - 1000 - rng.below(1000) as i64),
                1 => Expiry::At(now + 1000 + rng.below(4) as i64 * 3_600_000),
                _ => Expiry::Never,
            };
            batch.push(EpisodeInput {
                id,
                episode_type: rng.pick(TYPES).to_string(),
                tags,
                primary: text(rng),
                secondary: if rng.below(3) == 0 { text(rng) } else { String::new() },
                context: if rng.below(4) == 0 { text(rng) } else { String::new() },
                expiry,
                ..EpisodeInput::default()
            });
        }
        let written = match m.put_episodes(ns, batch) {
            Ok(w) => w,
            Err(e) if e.message.contains("deleted") => continue, // an update of a deleted id
            Err(e) => panic!("{e:?}"),
        };
        ids.extend(written);
        if rng.below(3) == 0 && !ids.is_empty() {
            let del: Vec<Uuid> = (0..1 + rng.below(3)).map(|_| ids[rng.below(ids.len())]).collect();
            m.delete_episodes(ns, &del).unwrap();
        }
    }
}

fn compare(m: &Mnem, ns: &Namespace, qs: &[KeywordQuery], what: &str) -> usize {
    let now = mnem::store::now_ms();
    let mut hits = 0;
    // Later visibility times make the future expiries count too.
    for at in [now, now + 2_000, now + 3_600_000 + 2_000, now + 4 * 3_600_000] {
        for q in qs {
            let got = m.keyword_search_at(ns, q, at).unwrap();
            let want = m.keyword_search_by_scan(ns, q, at).unwrap();
            let g: Vec<Uuid> = got.iter().map(|r| r.record.id).collect();
            let w: Vec<Uuid> = want.iter().map(|r| r.record.id).collect();
            assert_eq!(g, w, "{what}: query {q:?} at +{} ms", at - now);
            for (a, b) in got.iter().zip(&want) {
                assert!((a.score - b.score).abs() <= 1e-9, "{what}: {q:?}: score {} vs {}", a.score, b.score);
                assert_eq!(a.record, b.record);
            }
            hits += g.len();
        }
    }
    hits
}

#[test]
fn index_equals_the_scan_over_random_histories() {
    for seed in [1u64, 2, 3, 4, 5] {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed);
        for place in places("index_equals_the_scan_over_random_histories") {
            eprintln!("backend: {}", place.backend);
            let m = place.open();
            let nss = [Namespace::new("app", "u1"), Namespace::new("app", "u2")];
            for ns in &nss {
                write_history(&m, ns, &mut rng, 40);
            }
            let qs = queries(&mut rng);
            let hits: usize = nss.iter().map(|ns| compare(&m, ns, &qs, &format!("seed {seed}"))).sum();
            assert!(hits > 100, "seed {seed}: the corpora must produce hits ({hits})");
        }
    }
}

#[test]
fn index_survives_reopen_and_keeps_agreeing() {
    for place in places("index_survives_reopen") {
        eprintln!("backend: {}", place.backend);
        let ns = Namespace::new("a", "b");
        let mut rng = Rng(77);
        let qs = queries(&mut rng);
        {
            let m = place.open();
            write_history(&m, &ns, &mut rng, 30);
            compare(&m, &ns, &qs, "live");
        }
        {
            let m = Mnem::open(&place.uri, OpenOptions::default()).unwrap();
            assert!(compare(&m, &ns, &qs, "reopened") > 0);
            write_history(&m, &ns, &mut rng, 10);
            compare(&m, &ns, &qs, "reopened and written");
        }
    }
}
