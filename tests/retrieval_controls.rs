//! The controls a search takes besides its text: hit filters (session, author, time range,
//! minimum score), recall modes, and the one model per namespace that vector searches rely on.
//! Each filtered answer is checked against the unfiltered ranking filtered by hand: the
//! filters choose hits and never change a score.

use mnem::adk::RecallMode;
use mnem::{
    EmbeddingProvider, Episode, EpisodeInput, HitFilter, HybridQuery, KeywordQuery, Mnem, Namespace, OpenOptions,
    RecallQuery, Status,
};
use serde_json::Value;
use std::sync::Arc;

fn mem() -> Mnem {
    Mnem::open(":memory:", OpenOptions { create: true, ..Default::default() }).unwrap()
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
}

const WORDS: [&str; 12] =
    ["tea", "train", "lisbon", "cat", "sofa", "red", "green", "apple", "bread", "noon", "may", "river"];
const SESSIONS: [&str; 4] = ["s0", "s1", "s2", "s3"];
const AUTHORS: [&str; 3] = ["user", "agent", "tool"];

fn vector(rng: &mut Rng) -> Vec<f32> {
    (0..8).map(|_| (rng.next() % 1000) as f32 / 1000.0 - 0.5).collect()
}

/// 300 episodes: random texts, sessions, authors, times (a fifth without a timestamp) and
/// 8-d vectors.
fn corpus(m: &Mnem, ns: &Namespace) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let eps: Vec<EpisodeInput> = (0..300)
        .map(|i| {
            let n = 2 + rng.next() % 6;
            let text: Vec<&str> = (0..n).map(|_| rng.pick(&WORDS)).collect();
            EpisodeInput {
                primary: text.join(" "),
                session_id: Some(rng.pick(&SESSIONS).to_string()),
                author: Some(rng.pick(&AUTHORS).to_string()),
                timestamp: (i % 5 != 0).then(|| 1_000.0 + (rng.next() % 300) as f64),
                embedding: Some(vector(&mut rng)),
                ..EpisodeInput::default()
            }
        })
        .collect();
    m.put_episodes(ns, eps).unwrap();
}

/// What the filter says of an episode, computed from the episode itself.
fn passes(f: &HitFilter, e: &Episode) -> bool {
    let t = e.timestamp.unwrap_or(e.created_at_ms as f64 / 1000.0);
    f.session_id.as_ref().is_none_or(|s| e.session_id.as_ref() == Some(s))
        && f.author.as_ref().is_none_or(|a| e.author.as_ref() == Some(a))
        && f.since.is_none_or(|s| t >= s)
        && f.until.is_none_or(|u| t < u)
}

fn filters() -> Vec<HitFilter> {
    let s = |x: &str| Some(x.to_string());
    vec![
        HitFilter { session_id: s("s1"), ..HitFilter::default() },
        HitFilter { author: s("tool"), ..HitFilter::default() },
        HitFilter { since: Some(1_100.0), until: Some(1_200.0), ..HitFilter::default() },
        HitFilter { until: Some(1_050.0), ..HitFilter::default() },
        HitFilter { since: Some(0.0), ..HitFilter::default() },
        HitFilter { session_id: s("s2"), author: s("user"), since: Some(1_000.0), ..HitFilter::default() },
        HitFilter { min_score: Some(1.5), ..HitFilter::default() },
        HitFilter { author: s("agent"), min_score: Some(1.0), ..HitFilter::default() },
        HitFilter { session_id: s("nobody"), ..HitFilter::default() },
    ]
}

const QUERIES: [&str; 5] = ["tea", "red sofa", "train to lisbon", "apple bread noon", "river cat green may"];

#[test]
fn keyword_filters_choose_hits_and_keep_scores() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    corpus(&m, &ns);
    let now = mnem::store::now_ms();
    let mut nonempty = 0;
    for text in QUERIES {
        let all = m.keyword_search(&ns, &KeywordQuery { limit: 1000, ..KeywordQuery::new(text) }).unwrap();
        for f in filters() {
            for limit in [1, 7, 50] {
                let want: Vec<(String, u64)> = all
                    .iter()
                    .filter(|r| passes(&f, &r.record) && f.min_score.is_none_or(|min| r.score >= min))
                    .take(limit)
                    .map(|r| (r.record.id.to_string(), r.score.to_bits()))
                    .collect();
                let q = KeywordQuery { limit, hits: f.clone(), ..KeywordQuery::new(text) };
                let got: Vec<(String, u64)> = m
                    .keyword_search(&ns, &q)
                    .unwrap()
                    .iter()
                    .map(|r| (r.record.id.to_string(), r.score.to_bits()))
                    .collect();
                assert_eq!(got, want, "{text:?} {f:?} limit {limit}");
                let by_scan: Vec<(String, u64)> = m
                    .keyword_search_by_scan(&ns, &q, now)
                    .unwrap()
                    .iter()
                    .map(|r| (r.record.id.to_string(), r.score.to_bits()))
                    .collect();
                assert_eq!(by_scan, want, "the scan agrees: {text:?} {f:?}");
                nonempty += usize::from(!want.is_empty() && want.len() < all.len().min(limit) + 1);
            }
        }
    }
    assert!(nonempty > 50, "most filters keep some hits: {nonempty}");
}

#[test]
fn substring_filters_choose_hits() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    corpus(&m, &ns);
    for f in filters().into_iter().filter(|f| f.min_score.is_none()) {
        let all = m.search_episodes(&ns, &KeywordQuery { limit: 1000, ..KeywordQuery::new("re") }).unwrap();
        let want: Vec<_> = all.iter().filter(|e| passes(&f, e)).take(5).map(|e| e.id).collect();
        let q = KeywordQuery { limit: 5, hits: f.clone(), ..KeywordQuery::new("re") };
        let got: Vec<_> = m.search_episodes(&ns, &q).unwrap().iter().map(|e| e.id).collect();
        assert_eq!(got, want, "{f:?}");
    }
    let q =
        KeywordQuery { hits: HitFilter { min_score: Some(1.0), ..HitFilter::default() }, ..KeywordQuery::new("re") };
    let e = m.search_episodes(&ns, &q).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("min_score"), "{}", e.message);
}

#[test]
fn hybrid_filters_apply_to_both_channels_and_min_score_to_the_fused_score() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    corpus(&m, &ns);
    let mut rng = Rng(42);
    let all_eps: Vec<Episode> =
        m.search_episodes(&ns, &KeywordQuery { limit: 1000, ..KeywordQuery::new(" ") }).unwrap();
    assert_eq!(all_eps.len(), 300);
    for text in QUERIES {
        let v = vector(&mut rng);
        let base = HybridQuery { vector: Some(v.clone()), ..HybridQuery::new(text) };
        let unfiltered = m.hybrid_search(&ns, &HybridQuery { limit: 40, ..base.clone() }).unwrap();
        for f in filters() {
            let q = HybridQuery { hits: f.clone(), limit: 10, ..base.clone() };
            let got = m.hybrid_search(&ns, &q).unwrap();
            assert!(got.iter().all(|r| passes(&f, &r.record)), "every hit passes {f:?}");
            assert!(got.iter().all(|r| f.min_score.is_none_or(|min| r.score >= min)));
            if !f.reads_records() {
                // Only a minimum score: the unfiltered answer, cut where the score drops below.
                let want: Vec<_> = unfiltered
                    .iter()
                    .take_while(|r| r.score >= f.min_score.unwrap())
                    .take(10)
                    .map(|r| r.record.id)
                    .collect();
                assert_eq!(got.iter().map(|r| r.record.id).collect::<Vec<_>>(), want);
                continue;
            }
            // Lexical alone: the filtered keyword ranking (the fused score's minimum aside).
            let f = f.on_records();
            let q = HybridQuery { hits: f.clone(), ..q };
            let lex = m.hybrid_search(&ns, &HybridQuery { semantic_weight: 0.0, ..q.clone() }).unwrap();
            let kw = m.keyword_search(&ns, &KeywordQuery { limit: 10, hits: f.clone(), ..KeywordQuery::new(text) });
            let kw: Vec<_> = kw.unwrap().iter().map(|r| r.record.id).collect();
            assert_eq!(lex.iter().map(|r| r.record.id).collect::<Vec<_>>(), kw, "{text:?} {f:?}");
            // Vectors alone: the first hit is the exact nearest episode that passes.
            let sem = m.hybrid_search(&ns, &HybridQuery { semantic_weight: 1.0, ..q.clone() }).unwrap();
            let cos = |e: &Episode| {
                let w = e.embedding.as_ref().unwrap();
                let dot: f32 = w.iter().zip(&v).map(|(a, b)| a * b).sum();
                dot / (w.iter().map(|x| x * x).sum::<f32>().sqrt() * v.iter().map(|x| x * x).sum::<f32>().sqrt())
            };
            let nearest =
                all_eps.iter().filter(|e| passes(&f, e)).max_by(|a, b| cos(a).total_cmp(&cos(b))).map(|e| e.id);
            assert_eq!(sem.first().map(|r| r.record.id), nearest, "{f:?}");
        }
    }
}

fn event(id: &str, author: &str, ts: f64, text: &str) -> String {
    format!(r#"{{"id":"{id}","author":"{author}","timestamp":{ts},"content":{{"parts":[{{"text":"{text}"}}]}}}}"#)
}

fn memories(json: &[u8]) -> Vec<(String, String)> {
    let v: Value = serde_json::from_slice(json).unwrap();
    v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap().to_string(), m["author"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// An ADK namespace: four sessions of ten events each, two authors, times 1000 to 1039; only
/// the events `keep(session, index, author)` accepts.
fn adk_corpus_where(m: &Mnem, ns: &Namespace, keep: &Keep) {
    let mut rng = Rng(7);
    for s in 0..4 {
        let lines: Vec<String> = (0..10)
            .filter_map(|i| {
                let n = 2 + rng.next() % 5;
                let text: Vec<&str> = (0..n).map(|_| rng.pick(&WORDS)).collect();
                let author = if i % 2 == 0 { "user" } else { "agent" };
                keep(s, i, author)
                    .then(|| event(&format!("e{s}-{i}"), author, 1_000.0 + (s * 10 + i) as f64, &text.join(" ")))
            })
            .collect();
        if !lines.is_empty() {
            m.add_session(ns, &format!("s{s}"), &lines.join("\n")).unwrap();
        }
    }
}

/// Which events of `adk_corpus_where` a namespace holds: (session, index, author).
type Keep = dyn Fn(usize, usize, &str) -> bool;

fn adk_corpus(m: &Mnem, ns: &Namespace) {
    adk_corpus_where(m, ns, &|_, _, _| true);
}

#[test]
fn adk_mode_ranks_the_accepted_entries_as_adk_ranks_a_memory_of_only_them() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    adk_corpus(&m, &ns);
    let cases: Vec<(HitFilter, Box<Keep>)> = vec![
        (HitFilter { author: Some("agent".into()), ..HitFilter::default() }, Box::new(|_, _, a| a == "agent")),
        (HitFilter { session_id: Some("s2".into()), ..HitFilter::default() }, Box::new(|s, _, _| s == 2)),
        (
            HitFilter { since: Some(1_015.0), until: Some(1_033.0), ..HitFilter::default() },
            Box::new(|s, i, _| (15..33).contains(&(s * 10 + i))),
        ),
    ];
    let mut longer = 0;
    for (f, keep) in cases {
        let only = Namespace::new("app", "only");
        let m2 = mem();
        adk_corpus_where(&m2, &only, &*keep);
        for text in QUERIES.iter().chain(&["tea train", "cat red green apple"]) {
            let want = memories(&m2.search(&only, text).unwrap());
            let q = RecallQuery { mode: RecallMode::Adk, hits: f.clone(), ..RecallQuery::new(*text) };
            assert_eq!(memories(&m.recall(&ns, &q).unwrap()), want, "{text:?} {f:?}");
            let full = memories(&m.search(&ns, text).unwrap());
            longer += usize::from(want.iter().any(|w| !full.contains(w)));
        }
    }
    assert!(longer > 3, "answers hold entries beyond the unfiltered top ten: {longer}");
}

#[test]
fn recall_modes_rank_adk_entries_and_filters_choose_them() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    adk_corpus(&m, &ns);
    for text in QUERIES {
        let adk = memories(&m.search(&ns, text).unwrap());
        let q = |mode, hits: HitFilter| RecallQuery { mode, hits, ..RecallQuery::new(text) };
        // ADK mode is mnem_search's answer (with filters: the test above).
        assert_eq!(memories(&m.recall(&ns, &q(RecallMode::Adk, HitFilter::default())).unwrap()), adk);
        let users = HitFilter { author: Some("user".into()), ..HitFilter::default() };
        // Without vectors, adk_vectors is ADK's ranking too.
        assert_eq!(memories(&m.recall(&ns, &q(RecallMode::AdkVectors, HitFilter::default())).unwrap()), adk);
        // BM25 mode (and hybrid without vectors) is keyword search's ranking of the events.
        for hits in
            [HitFilter::default(), users.clone(), HitFilter { session_id: Some("s2".into()), ..HitFilter::default() }]
        {
            let kw = m.keyword_search(&ns, &KeywordQuery { limit: 10, hits: hits.clone(), ..KeywordQuery::new(text) });
            let want: Vec<(String, String)> = kw
                .unwrap()
                .iter()
                .map(|r| (r.record.event_id.clone().unwrap(), r.record.author.clone().unwrap()))
                .collect();
            assert_eq!(memories(&m.recall(&ns, &q(RecallMode::Bm25, hits.clone())).unwrap()), want, "{text:?}");
            assert_eq!(memories(&m.recall(&ns, &q(RecallMode::Hybrid, hits)).unwrap()), want);
        }
    }
    // A longer limit than ADK's ten, in the modes that rank by BM25.
    let long = RecallQuery { mode: RecallMode::Bm25, limit: 30, ..RecallQuery::new("tea train cat sofa red") };
    let kw = m.keyword_search(&ns, &KeywordQuery { limit: 30, ..KeywordQuery::new("tea train cat sofa red") }).unwrap();
    assert_eq!(memories(&m.recall(&ns, &long).unwrap()).len(), kw.len());
    assert!(kw.len() > 10);
    // A session's events only, by time range.
    let s1 = HitFilter { since: Some(1_010.0), until: Some(1_020.0), ..HitFilter::default() };
    let got = memories(
        &m.recall(
            &ns,
            &RecallQuery {
                mode: RecallMode::Bm25,
                hits: s1,
                limit: 100,
                ..RecallQuery::new("tea train cat sofa red green apple bread noon may river lisbon")
            },
        )
        .unwrap(),
    );
    assert!(!got.is_empty() && got.iter().all(|(id, _)| id.starts_with("e1-")), "{got:?}");
    // Refusals.
    let e = m
        .recall(
            &ns,
            &RecallQuery {
                mode: RecallMode::Adk,
                hits: HitFilter { min_score: Some(0.1), ..HitFilter::default() },
                ..RecallQuery::new("tea")
            },
        )
        .unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    let e = RecallQuery::parse(r#"{"text":"tea","mode":"fast"}"#).unwrap_err();
    assert!(e.message.contains("`mode`"), "{}", e.message);
    let e = RecallQuery::parse(r#"{"text":"tea","since":5,"until":4}"#).unwrap_err();
    assert!(e.message.contains("`since`"), "{}", e.message);
    let e = RecallQuery::parse(r#"{"text":"tea","limit":101}"#).map(|q| q.validate()).unwrap().unwrap_err();
    assert!(e.message.contains("at most 100"), "{}", e.message);
}

#[test]
fn recall_min_score_cuts_the_bm25_ranking() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    adk_corpus(&m, &ns);
    let text = "tea red sofa";
    let kw = m.keyword_search(&ns, &KeywordQuery { limit: 10, ..KeywordQuery::new(text) }).unwrap();
    let min = kw[kw.len() / 2].score;
    let want: Vec<String> = kw.iter().filter(|r| r.score >= min).map(|r| r.record.event_id.clone().unwrap()).collect();
    let q = RecallQuery {
        mode: RecallMode::Bm25,
        hits: HitFilter { min_score: Some(min), ..HitFilter::default() },
        ..RecallQuery::new(text)
    };
    let got: Vec<String> = memories(&m.recall(&ns, &q).unwrap()).into_iter().map(|(id, _)| id).collect();
    assert_eq!(got, want);
    assert!(got.len() < kw.len());
}

/// An embedder that names its model; its vectors depend on the text only.
struct Named(&'static str);
impl EmbeddingProvider for Named {
    fn embed(&self, text: &str) -> mnem::Result<Vec<f32>> {
        let mut v = vec![0.1f32; 4];
        for (i, b) in text.bytes().enumerate() {
            v[i % 4] += f32::from(b) / 255.0;
        }
        Ok(v)
    }
    fn model(&self) -> Option<&str> {
        Some(self.0)
    }
}

fn stats_model(m: &Mnem, ns: &Namespace) -> (Option<u32>, Option<String>) {
    let s = m.namespace_stats(ns).unwrap();
    (s.dimension, s.embedding_model)
}

#[test]
fn a_namespace_holds_one_models_vectors() {
    let m = mem();
    let (named, caller) = (Namespace::new("app", "named"), Namespace::new("app", "caller"));
    m.set_embedder(Some(Arc::new(Named("model-a"))));
    let embed = |t: &str| EpisodeInput { primary: t.into(), embed: true, ..EpisodeInput::default() };
    m.put_episodes(&named, vec![embed("green tea")]).unwrap();
    m.add_session(&named, "s", &event("e1", "user", 1.0, "tea at noon")).unwrap();
    assert_eq!(stats_model(&m, &named), (Some(4), Some("model-a".into())));

    // The caller's vectors, unnamed, and another model's, are refused; the same model's pass.
    let own = |model: Option<&str>| EpisodeInput {
        primary: "x".into(),
        embedding: Some(vec![1.0, 0.0, 0.0, 0.0]),
        embedding_model: model.map(str::to_owned),
        ..EpisodeInput::default()
    };
    for bad in [None, Some("model-b")] {
        let before = m.namespace_stats(&named).unwrap();
        let e = m.put_episodes(&named, vec![own(Some("model-a")), own(bad)]).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.starts_with("line 2: `embedding` is from"), "{}", e.message);
        assert!(e.message.contains("\"model-a\""), "{}", e.message);
        assert_eq!(m.namespace_stats(&named).unwrap(), before, "nothing written");
    }
    m.put_episodes(&named, vec![own(Some("model-a"))]).unwrap();

    // A namespace of the caller's vectors refuses the embedder's, for writes and queries.
    m.put_episodes(&caller, vec![own(None)]).unwrap();
    assert_eq!(stats_model(&m, &caller), (Some(4), None));
    let e = m.put_episodes(&caller, vec![embed("tea")]).unwrap_err();
    assert!(e.message.contains("is from the model \"model-a\""), "{}", e.message);
    let e = m.add_session(&caller, "s", &event("e1", "user", 1.0, "tea")).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    assert!(e.message.contains("one model's vectors"), "{}", e.message);
    let e = m.hybrid_search(&caller, &HybridQuery::new("tea")).unwrap_err();
    assert!(e.message.starts_with("`vector` is from the model \"model-a\""), "{}", e.message);
    let e = m.recall(&caller, &RecallQuery::new("tea")).unwrap_err();
    assert_eq!(e.status, Status::InvalidArgument);
    // The caller's own query vector matches the caller's vectors; against model-a's, it must
    // name the model.
    let v = Some(vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(m.hybrid_search(&caller, &HybridQuery { vector: v.clone(), ..HybridQuery::new("x") }).unwrap().len(), 1);
    let e = m.hybrid_search(&named, &HybridQuery { vector: v.clone(), ..HybridQuery::new("x") }).unwrap_err();
    assert!(e.message.contains("the caller (no model named)"), "{}", e.message);
    let q = HybridQuery { vector: v, vector_model: Some("model-a".into()), ..HybridQuery::new("x") };
    assert!(!m.hybrid_search(&named, &q).unwrap().is_empty());
    assert!(!m.hybrid_search(&named, &HybridQuery::new("tea")).unwrap().is_empty(), "the embedder's query");

    // Export carries the model; an import recreates it.
    let mut out = Vec::new();
    m.export(Some(&named), &mut out, &mut |_, _| {}).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(r#""dimension":4,"embedding_model":"model-a""#), "{text}");
    let other = mem();
    other.import(&text, &mut |_, _| {}).unwrap();
    assert_eq!(stats_model(&other, &named), (Some(4), Some("model-a".into())));
    let bad = text.replace(r#""embedding_model":"model-a""#, r#""embedding_model":"""#);
    assert!(mem().import(&bad, &mut |_, _| {}).unwrap_err().message.contains("`embedding_model`"));
}

#[test]
fn embedding_model_on_the_wire() {
    let parse = |l: &str| mnem::input::parse_episode_line(l);
    assert_eq!(parse(r#"{"embedding":[1,2],"embedding_model":"m"}"#).unwrap().embedding_model.as_deref(), Some("m"));
    for (line, why) in [
        (r#"{"embedding_model":"m"}"#, "which is missing"),
        (r#"{"embed":true,"embedding_model":"m"}"#, "which is missing"),
        (r#"{"embedding":[1],"embedding_model":""}"#, "1 to 256 bytes"),
    ] {
        let e = parse(line).unwrap_err();
        assert!(e.message.contains(why), "{line}: {}", e.message);
    }
    let long = format!(r#"{{"embedding":[1],"embedding_model":"{}"}}"#, "m".repeat(257));
    assert!(parse(&long).is_err());
}

#[test]
fn the_rust_api_checks_a_recalls_filters_as_the_wire_does() {
    let (m, ns) = (mem(), Namespace::new("app", "u"));
    adk_corpus(&m, &ns);
    let backwards = HitFilter { since: Some(5.0), until: Some(4.0), ..HitFilter::default() };
    for mode in [RecallMode::Adk, RecallMode::Bm25, RecallMode::Hybrid, RecallMode::AdkVectors] {
        let q = RecallQuery { mode, hits: backwards.clone(), ..RecallQuery::new("tea") };
        let e = m.recall(&ns, &q).unwrap_err();
        assert_eq!(e.status, Status::InvalidArgument);
        assert!(e.message.contains("`since` (5) is after `until` (4)"), "{}", e.message);
    }
}
