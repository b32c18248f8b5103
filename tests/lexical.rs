//! BM25 keyword search and the bounded lexical page, checked against an independent oracle:
//! BM25 in f64 with k1 1.2 and b 0.75 (`include/mnem.h`) and idf `ln(1 + (N - df + 0.5) /
//! (df + 0.5))` (`src/lexical/bm25.rs`), computed here from scratch over the records the test
//! wrote. Tokens (case folding, CJK), repeated query terms, ties, a score by hand and what
//! deletes and expiry leave are the conformance corpus's (keyword_tokens).

use mnem::{EpisodeInput, Expiry, KeywordQuery, LexicalQuery, Mnem, Namespace, OpenOptions, Status};
use std::collections::{BTreeMap, HashMap};
use uuid::Uuid;
mod common;
use common::{places, Rng};

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

const WORDS: &[&str] = &[
    "tea",
    "Tea",
    "TEA",
    "coffee",
    "Straße",
    "STRASSE",
    "école",
    "École",
    "ΟΔΟΣ",
    "οδός",
    "Москва",
    "москва",
    "東京",
    "東京タワー",
    "हिन्दी",
    "भाषा",
    "x²",
    "2024年",
    "naïve",
    "NAÏVE",
    "deploy",
    "ready",
    "status",
    "the",
    "a",
    "İstanbul",
    "ﬁnance",
    "data-set",
    "v1.2",
    "über",
    "Über",
    "日本語",
    "한국어",
    "مرحبا",
    "שלום",
];

fn sentence(r: &mut Rng, n: usize) -> String {
    let seps = [" ", ", ", "; ", "-", " (", ") ", "…", "\n"];
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push_str(seps[(r.next() % seps.len() as u64) as usize]);
        }
        s.push_str(r.pick(WORDS));
    }
    s
}

/// The oracle's own tokenizer: alphanumeric runs, lowercased per token.
fn oracle_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(|t| t.to_lowercase()).collect()
}

#[derive(Clone, Debug)]
struct Doc {
    text: [String; 3],
    episode_type: String,
    tags: Vec<String>,
    visible: bool,
}

/// BM25 over `docs` (already filtered to the corpus), from scratch.
fn oracle(docs: &BTreeMap<Uuid, Doc>, query: &str) -> Vec<(Uuid, f64)> {
    let mut terms: Vec<String> = Vec::new();
    for t in oracle_tokens(query) {
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    let toks: Vec<(Uuid, Vec<String>)> =
        docs.iter().map(|(id, d)| (*id, d.text.iter().flat_map(|t| oracle_tokens(t)).collect())).collect();
    let n = toks.len() as f64;
    let avgdl = toks.iter().map(|(_, t)| t.len() as f64).sum::<f64>() / n;
    let df: Vec<f64> = terms.iter().map(|q| toks.iter().filter(|(_, t)| t.contains(q)).count() as f64).collect();
    let mut out: Vec<(Uuid, f64)> = toks
        .iter()
        .filter(|(_, t)| terms.iter().any(|q| t.contains(q)))
        .map(|(id, t)| {
            let dl = t.len() as f64;
            let s = terms
                .iter()
                .zip(&df)
                .map(|(q, &df)| {
                    let tf = t.iter().filter(|x| *x == q).count() as f64;
                    let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                    idf * tf * 2.2 / (tf + 1.2 * (1.0 - 0.75 + 0.75 * dl / avgdl))
                })
                .sum();
            (*id, s)
        })
        .collect();
    out.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(a.0.cmp(&b.0)));
    out
}

fn assert_same(got: &[(Uuid, f64)], want: &[(Uuid, f64)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: result count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.0, w.0, "{what}: rank {i}");
        let rel = ((g.1 - w.1) / w.1).abs();
        assert!(rel <= 1e-9, "{what}: rank {i} score {} vs {}", g.1, w.1);
    }
}

/// A namespace with updates, deletes, expired records and two types and tags, mirrored in
/// the oracle's map.
fn corpus(m: &Mnem, ns: &Namespace, seed: u64, n: usize) -> BTreeMap<Uuid, Doc> {
    let mut r = Rng(seed);
    let mut docs = BTreeMap::new();
    let mut inputs = Vec::new();
    for i in 0..n {
        let d = Doc {
            text: [sentence(&mut r, 3 + (i % 17)), sentence(&mut r, i % 3), sentence(&mut r, i % 5)],
            episode_type: if i % 3 == 0 { "fact".into() } else { "note".into() },
            tags: if i % 4 == 0 { vec!["red".into()] } else { vec!["blue".into(), "green".into()] },
            visible: true,
        };
        let expiry = if i % 11 == 5 {
            Expiry::At(1)
        } else if i % 13 == 0 {
            Expiry::Ttl(3_600_000)
        } else {
            Expiry::Never
        };
        inputs.push((d, expiry));
    }
    let ids = m
        .put_episodes(
            ns,
            inputs
                .iter()
                .map(|(d, e)| EpisodeInput {
                    episode_type: d.episode_type.clone(),
                    tags: d.tags.clone(),
                    primary: d.text[0].clone(),
                    secondary: d.text[1].clone(),
                    context: d.text[2].clone(),
                    expiry: *e,
                    ..Default::default()
                })
                .collect(),
        )
        .unwrap();
    for (id, (mut d, e)) in ids.iter().zip(inputs) {
        d.visible = e != Expiry::At(1);
        docs.insert(*id, d);
    }
    // Updates: new text, new revision.
    let upd: Vec<Uuid> = ids.iter().step_by(7).copied().collect();
    let mut batch = Vec::new();
    for id in &upd {
        let d = docs.get_mut(id).unwrap();
        d.text[0] = sentence(&mut r, 9);
        batch.push(EpisodeInput {
            id: Some(*id),
            episode_type: d.episode_type.clone(),
            tags: d.tags.clone(),
            primary: d.text[0].clone(),
            secondary: d.text[1].clone(),
            context: d.text[2].clone(),
            ..Default::default()
        });
        d.visible = true;
    }
    m.put_episodes(ns, batch).unwrap();
    // Deletes.
    let del: Vec<Uuid> = ids.iter().skip(3).step_by(9).copied().collect();
    m.delete_episodes(ns, &del).unwrap();
    for id in &del {
        docs.get_mut(id).unwrap().visible = false;
    }
    docs
}

fn filtered(docs: &BTreeMap<Uuid, Doc>, ty: Option<&str>, tag: Option<&str>) -> BTreeMap<Uuid, Doc> {
    docs.iter()
        .filter(|(_, d)| {
            d.visible && ty.is_none_or(|t| d.episode_type == t) && tag.is_none_or(|t| d.tags.iter().any(|x| x == t))
        })
        .map(|(k, v)| (*k, v.clone()))
        .collect()
}

fn scored(r: Vec<mnem::KeywordSearchResult>) -> Vec<(Uuid, f64)> {
    r.into_iter().map(|h| (h.record.id, h.score)).collect()
}

const QUERIES: &[&str] = &[
    "tea",
    "TEA coffee",
    "straße",
    "strasse",
    "École",
    "οδος",
    "ΟΔΟΣ",
    "москва",
    "東京",
    "東京タワー",
    "हिन्दी",
    "x²",
    "2024年",
    "naïve über",
    "the a deploy ready status",
    "İstanbul",
    "ﬁnance",
    "data set",
    "v1 2",
    "日本語 한국어",
    "مرحبا שלום tea",
];

#[test]
fn keyword_search_equals_the_oracle() {
    for place in places("keyword_search_equals_the_oracle") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "u");
        let docs = corpus(&m, &ns, 42, 400);
        for q in QUERIES {
            for (ty, tag) in [(None, None), (Some("note"), None), (None, Some("red")), (Some("fact"), Some("blue"))] {
                let mut kq = KeywordQuery::new(*q);
                kq.limit = 1000;
                kq.episode_type = ty.map(String::from);
                kq.tag = tag.map(String::from);
                let got = scored(m.keyword_search(&ns, &kq).unwrap());
                let want = oracle(&filtered(&docs, ty, tag), q);
                assert_same(&got, &want, &format!("{q:?} {ty:?} {tag:?}"));
            }
        }
    }
}

#[test]
fn an_exhaustive_page_equals_keyword_search() {
    for place in places("an_exhaustive_page_equals_keyword_search") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "u");
        let docs = corpus(&m, &ns, 7, 300);
        for q in QUERIES {
            let mut lq = LexicalQuery::new(*q);
            lq.limit = 100;
            let page = m.search_memory_lexical(&ns, &lq).unwrap();
            assert!(page.exhaustive && page.next_after.is_none());
            assert_eq!(page.scanned_records, docs.len() as u64);
            let want = oracle(&filtered(&docs, None, None), q);
            assert_eq!(page.matched_records, want.len() as u64);
            assert_eq!(page.corpus_records, filtered(&docs, None, None).len() as u64);
            let n = want.len().min(100);
            assert_same(&scored(page.hits), &want[..n], q);
        }
    }
}

#[test]
fn paging_visits_every_record_once_with_window_statistics() {
    for place in places("paging_visits_every_record_once_with_window_statistics") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "u");
        let docs = corpus(&m, &ns, 9, 250);
        let all: Vec<Uuid> = docs.keys().copied().collect();
        for scan_limit in [1usize, 7, 64, 249, 250, 251] {
            let mut after = None;
            let mut seen = 0usize;
            let mut pages = 0;
            loop {
                let mut q = LexicalQuery::new("tea coffee the");
                q.limit = 100;
                q.after = after;
                q.scan_limit = scan_limit;
                let page = m.search_memory_lexical(&ns, &q).unwrap();
                let window: Vec<Uuid> = all[seen..seen + page.scanned_records as usize].to_vec();
                let wdocs: BTreeMap<Uuid, Doc> = window.iter().map(|id| (*id, docs[id].clone())).collect();
                let corpus = filtered(&wdocs, None, None);
                assert_eq!(page.corpus_records, corpus.len() as u64);
                if !corpus.is_empty() {
                    let want = oracle(&corpus, "tea coffee the");
                    assert_eq!(page.matched_records, want.len() as u64);
                    assert_same(&scored(page.hits.clone()), &want[..want.len().min(100)], "window");
                }
                seen += page.scanned_records as usize;
                pages += 1;
                assert_eq!(
                    page.exhaustive,
                    after.is_none() && page.next_after.is_none(),
                    "exhaustive only for a first page that visited everything"
                );
                match page.next_after {
                    Some(n) => {
                        assert_eq!(n, all[seen - 1], "next_after is the last visited record");
                        after = Some(n);
                    }
                    None => break,
                }
            }
            assert_eq!(seen, all.len(), "scan_limit {scan_limit}: every record exactly once");
            assert_eq!(pages, all.len().div_ceil(scan_limit).max(1));
        }
    }
}

#[test]
fn byte_budgets_that_cannot_fit_the_first_record_are_rejected() {
    let m = mem();
    let ns = Namespace::new("app", "u");
    corpus(&m, &ns, 3, 60);
    let mut q = LexicalQuery::new("tea");
    q.scan_bytes_limit = 1;
    let e = m.search_memory_lexical(&ns, &q).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("scan_bytes_limit"), "{}", e.message);
}

/// Each record's stored size, in UUID order: one-record pages report it as `scanned_bytes`;
/// for visible records it must equal the size of the record's encoding.
fn stored_sizes(m: &Mnem, ns: &Namespace, all: &[Uuid]) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut after = None;
    for (i, id) in all.iter().enumerate() {
        let mut q = LexicalQuery::new("tea");
        q.scan_limit = 1;
        q.after = after;
        let page = m.search_memory_lexical(ns, &q).unwrap();
        assert_eq!(page.scanned_records, 1);
        assert_eq!(page.next_after, (i + 1 < all.len()).then_some(*id));
        if let Some(e) = m.get_episode(ns, id).unwrap() {
            assert_eq!(page.scanned_bytes, e.encoded_len() as u64, "record {i}");
        }
        sizes.push(page.scanned_bytes);
        after = Some(*id);
    }
    sizes
}

/// The records a page starting at `start` visits under both budgets: as many as fit, or
/// None when the first one does not fit the byte budget.
fn budget_window(sizes: &[u64], start: usize, records: usize, bytes: u64) -> Option<usize> {
    let mut used = 0;
    let mut n = 0;
    while start + n < sizes.len() && n < records && used + sizes[start + n] <= bytes {
        used += sizes[start + n];
        n += 1;
    }
    (n > 0 || start == sizes.len()).then_some(n)
}

#[test]
fn byte_budget_pages_stop_where_the_budget_says() {
    for place in places("byte_budget_pages_stop_where_the_budget_says") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let ns = Namespace::new("app", "u");
        let docs = corpus(&m, &ns, 3, 60);
        let all: Vec<Uuid> = docs.keys().copied().collect();
        let sizes = stored_sizes(&m, &ns, &all);
        assert!(sizes.iter().min() < sizes.iter().max(), "records of different sizes");
        let total: u64 = sizes.iter().sum();
        let largest = *sizes.iter().max().unwrap();
        let prefix = |k: usize| sizes[..k].iter().sum::<u64>();
        let text = "tea coffee the";
        let mut budgets: Vec<(usize, u64)> = vec![
            (10_000, largest),
            (10_000, largest + 1),
            (10_000, prefix(7)),
            (10_000, prefix(7) - 1),
            (10_000, prefix(7) + 1),
            (10_000, total / 3),
            (10_000, total - 1),
            (10_000, total),
            (4, total / 3),
            (50, prefix(20)),
        ];
        // Budgets that fit the first record but not some later one: paging stops with an error there.
        budgets.push((10_000, sizes[0].max(sizes[1])));
        for (records, bytes) in budgets {
            let what = format!("scan_limit {records}, scan_bytes_limit {bytes}");
            let mut start = 0;
            let mut after = None;
            let mut visited = Vec::new();
            loop {
                let mut q = LexicalQuery::new(text);
                q.limit = 100;
                q.after = after;
                q.scan_limit = records;
                q.scan_bytes_limit = bytes as usize;
                let got = m.search_memory_lexical(&ns, &q);
                let Some(n) = budget_window(&sizes, start, records, bytes) else {
                    let e = got.unwrap_err();
                    assert_eq!(e.status, Status::InvalidArgument, "{what}");
                    assert!(e.message.contains("scan_bytes_limit"), "{what}: {}", e.message);
                    break;
                };
                let page = got.unwrap();
                let window = &all[start..start + n];
                assert_eq!(page.scanned_records, n as u64, "{what}: page at {start}");
                assert_eq!(page.scanned_bytes, sizes[start..start + n].iter().sum::<u64>(), "{what}");
                let more = start + n < all.len();
                assert_eq!(page.next_after, more.then(|| *window.last().unwrap()), "{what}");
                assert_eq!(page.exhaustive, start == 0 && !more, "{what}");
                let wdocs: BTreeMap<Uuid, Doc> = window.iter().map(|id| (*id, docs[id].clone())).collect();
                let corpus = filtered(&wdocs, None, None);
                assert_eq!(page.corpus_records, corpus.len() as u64, "{what}");
                let want = if corpus.is_empty() { Vec::new() } else { oracle(&corpus, text) };
                assert_eq!(page.matched_records, want.len() as u64, "{what}");
                assert_same(&scored(page.hits), &want[..want.len().min(100)], &what);
                visited.extend_from_slice(window);
                start += n;
                match page.next_after {
                    Some(n) => after = Some(n),
                    None => break,
                }
            }
            if budget_window(&sizes, 0, records, bytes).is_some() && bytes >= largest {
                assert_eq!(visited, all, "{what}: every record once, in order");
            }
        }
    }
}

#[test]
fn other_namespaces_change_no_statistic() {
    for place in places("other_namespaces_change_no_statistic") {
        eprintln!("backend: {}", place.backend);
        let m = place.open();
        let a = Namespace::new("app", "u");
        let docs = corpus(&m, &a, 5, 120);
        let before = m.search_memory_lexical(&a, &LexicalQuery::new("tea")).unwrap();
        for (app, user) in [("app", "u2"), ("app/u", ""), ("", "app/u"), ("ap", "pu")] {
            corpus(&m, &Namespace::new(app, user), 6, 80);
        }
        let after = m.search_memory_lexical(&a, &LexicalQuery::new("tea")).unwrap();
        assert_eq!(before, after);
        assert_eq!(after.scanned_records, docs.len() as u64);
    }
}

fn put(m: &Mnem, ns: &Namespace, texts: &[(&str, &str, &str)]) -> Vec<Uuid> {
    m.put_episodes(
        ns,
        texts
            .iter()
            .map(|(p, s, c)| EpisodeInput {
                primary: p.to_string(),
                secondary: s.to_string(),
                context: c.to_string(),
                ..Default::default()
            })
            .collect(),
    )
    .unwrap()
}

fn kw(m: &Mnem, ns: &Namespace, q: &str) -> Vec<(Uuid, f64)> {
    scored(m.keyword_search(ns, &KeywordQuery::new(q)).unwrap())
}

#[test]
fn ranking_prefers_more_and_rarer_matches() {
    let m = mem();
    let ns = Namespace::new("a", "u");
    let ids = put(
        &m,
        &ns,
        &[("deploy status ready", "", ""), ("deploy", "", ""), ("unrelated words here", "", ""), ("status", "", "")],
    );
    let r = kw(&m, &ns, "deploy status");
    assert_eq!(r[0].0, ids[0]);
    assert_eq!(r.len(), 3);
}

#[test]
fn corpus_order_does_not_change_scores() {
    let texts = [("alpha beta", "", ""), ("beta gamma gamma", "", ""), ("gamma delta", "", "x"), ("alpha", "", "")];
    let score_map = |order: &[usize]| {
        let m = mem();
        let ns = Namespace::new("a", "u");
        let picked: Vec<_> = order.iter().map(|&i| texts[i]).collect();
        let ids = put(&m, &ns, &picked);
        let by_id: HashMap<Uuid, usize> = ids.iter().zip(order).map(|(id, &i)| (*id, i)).collect();
        let mut v: Vec<(usize, f64)> = kw(&m, &ns, "alpha gamma").into_iter().map(|(id, s)| (by_id[&id], s)).collect();
        v.sort_by_key(|x| x.0);
        v
    };
    assert_eq!(score_map(&[0, 1, 2, 3]), score_map(&[3, 2, 1, 0]));
}
