//! What a user waits for from mnem's derived indexes (the ADK search index, BM25 keyword
//! search, the HNSW graph): ingest, the first query after a reopen, warm latency, memory.
//!
//!     cargo run --release --example bench_indexes -- SCENARIO [--n N] [options]
//!
//! Scenarios (each prints human lines, then one JSON summary line starting with `{`):
//! - `adk-cold`: `add_events` of N corpus events (default 100,000) in one namespace, 20
//!   events a call, one session each; the same with `sync_writes` for `--sync-n` events
//!   (default 10,000). Then, in a fresh process, reopen: the first `search`, warm p50/p99
//!   over the query set, and the slowest of the corpus's 20 most frequent words. With
//!   `--hold-postings` the ingest holds every posting in memory (none is moved into the
//!   index until the store closes): what ingest costs without its background work.
//! - `keyword`: N episodes (default 100,000) with the corpus texts as `primary`; in a fresh
//!   process, the first `keyword_search` after reopen, then warm p50/p99.
//! - `hybrid-cold`: N episodes (default 20,000) with texts and 384-d vectors (`--dim`): a
//!   mixture of Gaussians around `--centroids` (300) random unit centroids, per-dimension
//!   noise 0.03, normalized. Times the write plus one search; in a fresh process the first
//!   hybrid search after reopen, warm p50 (default weights and `semantic_weight` 1.0), and
//!   recall@10 of the semantic channel against exact cosine over the same vectors. Then
//!   usearch builds the same vectors single-threaded (`bench/compare.py --vector-libs
//!   usearch` in the bench venv, /var/cache/mnem/bench-venv, skipped when absent), so the
//!   write time is compared with it in the same run. Stores open with `cache_bytes` 1 GiB,
//!   so that the graph stays loaded.
//! - `namespaces`: `--namespaces` (10,000) namespaces × `--per-ns` (50) events; in a fresh
//!   process each namespace searched once, VmRSS before and after.
//! - `beside-writer`: N events (default 100,000), reopened; `search` and `keyword_search`
//!   p50/p99 over the query set on the idle store, then while a writer thread adds the next
//!   `--writer-n` (50,000) corpus events to the same namespace without pause; for the
//!   searches at or past each p99, their time on a CPU and waiting for one.
//!
//! The fresh process is this binary run again (`--phase cold`), so nothing is cached
//! in-process. The corpus is `bench/corpus.py N 7` (generated with `--python`, default
//! /var/cache/mnem/venv/bin/python, unless `--corpus FILE` is given; a longer corpus is
//! used by its prefix, which is the same bytes). Everything lands in `--out` (default
//! /tmp/mnem-bench): the corpus, `queries-N.txt` (the query set, `--queries` of them: 1-3
//! consecutive words of a random text, seed 11), `top_words-N.txt`, and for hybrid-cold
//! `vectors-NxD.f32` and `qvectors-NxD.f32` (little-endian f32, row-major), which
//! `bench/compare.py` reads to run other libraries on the same data.
//! Stores are deleted at the end unless `--keep`. Progress goes to stderr.

use mnem::{EpisodeInput, HybridQuery, KeywordQuery, Mnem, Namespace, OpenOptions};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use uuid::Uuid;

const SESSION_BATCH: usize = 20;
const QUERY_SEED: u64 = 11;
const TOP_WORDS: usize = 20;

struct Args {
    scenario: String,
    phase: Option<String>,
    n: Option<usize>,
    sync_n: usize,
    queries: usize,
    dim: usize,
    centroids: usize,
    namespaces: usize,
    per_ns: usize,
    writer_n: usize,
    out: PathBuf,
    corpus: Option<PathBuf>,
    python: String,
    keep: bool,
    hold_postings: bool,
    raw: Vec<String>,
}

fn parse_args() -> Args {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let mut a = Args {
        scenario: String::new(),
        phase: None,
        n: None,
        sync_n: 10_000,
        queries: 200,
        dim: 384,
        centroids: 300,
        namespaces: 10_000,
        per_ns: 50,
        writer_n: 50_000,
        out: PathBuf::from("/tmp/mnem-bench"),
        corpus: None,
        python: "/var/cache/mnem/venv/bin/python".into(),
        keep: false,
        hold_postings: false,
        raw: raw.clone(),
    };
    let mut it = raw.into_iter();
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage(&format!("{arg} needs a value")));
        let num = |s: String| s.replace('_', "").parse::<usize>().unwrap_or_else(|_| usage(&format!("bad number {s}")));
        match arg.as_str() {
            "--n" => a.n = Some(num(val())),
            "--sync-n" => a.sync_n = num(val()),
            "--queries" => a.queries = num(val()),
            "--dim" => a.dim = num(val()),
            "--centroids" => a.centroids = num(val()),
            "--namespaces" => a.namespaces = num(val()),
            "--per-ns" => a.per_ns = num(val()),
            "--writer-n" => a.writer_n = num(val()),
            "--out" => a.out = val().into(),
            "--corpus" => a.corpus = Some(val().into()),
            "--python" => a.python = val(),
            "--phase" => a.phase = Some(val()),
            "--keep" => a.keep = true,
            "--hold-postings" => a.hold_postings = true,
            s if !s.starts_with("--") && a.scenario.is_empty() => a.scenario = s.to_string(),
            s => usage(&format!("unknown argument {s}")),
        }
    }
    a
}

fn usage(msg: &str) -> ! {
    eprintln!("bench_indexes: {msg}");
    eprintln!("usage: bench_indexes adk-cold|keyword|hybrid-cold|namespaces|beside-writer [--n N] [--sync-n N]");
    eprintln!("       [--queries Q] [--dim D] [--centroids C] [--namespaces K] [--per-ns E] [--writer-n W]");
    eprintln!("       [--out DIR] [--corpus FILE]");
    eprintln!("       [--python PY] [--keep] [--hold-postings]");
    std::process::exit(2)
}

fn main() {
    let a = parse_args();
    std::fs::create_dir_all(&a.out).expect("create --out directory");
    let cold = a.phase.as_deref() == Some("cold");
    let summary = match (a.scenario.as_str(), cold) {
        ("adk-cold", false) => adk_write(&a),
        ("adk-cold", true) => adk_cold(&a),
        ("keyword", false) => keyword_write(&a),
        ("keyword", true) => keyword_cold(&a),
        ("hybrid-cold", false) => hybrid_write(&a),
        ("hybrid-cold", true) => hybrid_cold(&a),
        ("namespaces", false) => namespaces_write(&a),
        ("namespaces", true) => namespaces_cold(&a),
        ("beside-writer", false) => beside_writer(&a),
        ("", _) => usage("no scenario"),
        (s, _) => usage(&format!("unknown scenario {s}")),
    };
    println!("{summary}");
}

// ---------------------------------------------------------------- shared helpers

/// SplitMix64: small, seeded, the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.unit();
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU seconds this process has used, all threads (user + system; clock ticks of 1/100 s).
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) end with ')'.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or_default().split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// How long this thread has waited for a CPU (in the run queue), in ms, from the kernel's
/// scheduler statistics (zero where `/proc/thread-self/schedstat` is missing). It is
/// brought up to date each time the thread gets a CPU back, so the difference across a
/// search that ran to its end is exact.
fn run_queue_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().nth(1).and_then(|x| x.parse::<f64>().ok()).map_or(0.0, |ns| ns / 1e6)
}

/// One search timed: wall-clock ms, and of it the ms spent waiting for a CPU (a search
/// never blocks, so the rest is its time on one).
fn timed(f: impl FnOnce() -> usize) -> (f64, f64) {
    let wait = run_queue_ms();
    let t = Instant::now();
    std::hint::black_box(f());
    let wall = ms(t);
    (wall, run_queue_ms() - wait)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// (p50, p99, max) in ms of already collected times.
fn percentiles(mut t: Vec<f64>) -> (f64, f64, f64) {
    t.sort_by(f64::total_cmp);
    let at = |p: f64| t[((p * t.len() as f64).ceil() as usize).clamp(1, t.len()) - 1];
    (at(0.50), at(0.99), t[t.len() - 1])
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn open(dir: &Path, sync_writes: bool, create: bool) -> Mnem {
    Mnem::open(dir.to_str().expect("UTF-8 path"), OpenOptions { create, sync_writes, ..Default::default() })
        .expect("open store")
}

fn fresh_dir(a: &Args, name: &str) -> PathBuf {
    let d = a.out.join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn done_with(a: &Args, dir: &Path) {
    if !a.keep {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The first `n` corpus lines: `--corpus`, else `OUT/corpus.jsonl` if it is long enough,
/// else generated (a prefix of a longer corpus is the shorter corpus).
fn corpus(a: &Args, n: usize) -> Vec<String> {
    let path = a.corpus.clone().unwrap_or_else(|| a.out.join("corpus.jsonl"));
    let have = std::fs::read_to_string(&path).map(|s| s.lines().count()).unwrap_or(0);
    if have < n {
        if a.corpus.is_some() {
            usage(&format!("{} has {have} lines, {n} needed", path.display()));
        }
        eprintln!("generating corpus: {n} events into {}", path.display());
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/corpus.py");
        let file = std::fs::File::create(&path).expect("create corpus file");
        let ok = Command::new(&a.python)
            .arg(script)
            .arg(n.to_string())
            .arg("7")
            .stdout(file)
            .status()
            .expect("run bench/corpus.py (see --python)");
        assert!(ok.success(), "bench/corpus.py failed");
    }
    let text = std::fs::read_to_string(&path).expect("read corpus");
    text.lines().take(n).map(str::to_owned).collect()
}

/// One corpus line as (session_id, the event's JSON without `session_id`, its text).
fn split_event(line: &str) -> (String, String, String) {
    let v: Value = serde_json::from_str(line).expect("corpus line is JSON");
    let sid = v["session_id"].as_str().expect("session_id").to_string();
    let text = v["content"]["parts"][0]["text"].as_str().unwrap_or_default().to_string();
    // Remove the key as corpus.py writes it (json.dumps separators), keeping the rest byte-exact.
    let field = format!(", \"session_id\": {}", serde_json::to_string(&sid).unwrap());
    let event = line.replacen(&field, "", 1);
    assert!(event.len() < line.len(), "corpus line layout changed");
    (sid, event, text)
}

fn texts(lines: &[String]) -> Vec<String> {
    lines.iter().map(|l| split_event(l).2).collect()
}

/// The query set (1-3 words of a random text) and the 20 words found in most texts; both
/// written to OUT for bench/compare.py.
fn query_set(a: &Args, texts: &[String]) -> (Vec<String>, Vec<String>) {
    let mut rng = Rng(QUERY_SEED);
    let mut qs = Vec::with_capacity(a.queries);
    while qs.len() < a.queries {
        let words: Vec<&str> = texts[rng.below(texts.len())].split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let k = (1 + rng.below(3)).min(words.len());
        let start = rng.below(words.len() + 1 - k);
        qs.push(words[start..start + k].join(" "));
    }
    let mut df: HashMap<String, usize> = HashMap::new();
    for t in texts {
        let mut seen: Vec<String> =
            t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
        seen.sort_unstable();
        seen.dedup();
        for w in seen {
            *df.entry(w).or_default() += 1;
        }
    }
    let mut top: Vec<(String, usize)> = df.into_iter().collect();
    top.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    let top: Vec<String> = top.into_iter().take(TOP_WORDS).map(|(w, _)| w).collect();
    std::fs::write(data_file(a, "queries", "txt"), qs.join("\n") + "\n").expect("write the queries");
    std::fs::write(data_file(a, "top_words", "txt"), top.join("\n") + "\n").expect("write the top words");
    (qs, top)
}

/// Run this binary again for the cold half of the scenario; returns its JSON summary.
fn cold_process(a: &Args, extra: &[(&str, String)]) -> Value {
    eprintln!("fresh process: {} --phase cold", a.scenario);
    let mut cmd = Command::new(std::env::current_exe().expect("current exe"));
    cmd.args(&a.raw).arg("--phase").arg("cold");
    for (k, v) in extra {
        cmd.arg(k).arg(v);
    }
    let out = cmd.stderr(Stdio::inherit()).output().expect("run the cold phase");
    assert!(out.status.success(), "cold phase failed");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    serde_json::from_str(stdout.lines().last().expect("a summary line")).expect("JSON summary")
}

/// Time each query once (in order) and return (p50, p99, max) in ms.
fn time_each<T>(queries: &[String], mut f: impl FnMut(usize, &str) -> T) -> (f64, f64, f64) {
    let times = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let t = Instant::now();
            std::hint::black_box(f(i, q));
            ms(t)
        })
        .collect();
    percentiles(times)
}

/// The slowest of `words` (each the median of 5 runs): (word, ms).
fn worst_word<T>(words: &[String], mut f: impl FnMut(&str) -> T) -> (String, f64) {
    let mut worst = (String::new(), 0.0);
    for w in words {
        let runs: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f(w));
                ms(t)
            })
            .collect();
        let (p50, _, _) = percentiles(runs);
        if p50 > worst.1 {
            worst = (w.clone(), p50);
        }
    }
    worst
}

// ---------------------------------------------------------------- adk-cold

/// `add_events` of `lines` in calls of up to 20 events of one session; returns events/s and
/// the CPU seconds the process used meanwhile (the writer, the library's background thread
/// and RocksDB's).
/// The corpus as `add_events` calls: (session_id, up to 20 events of it as JSON Lines).
fn event_batches(lines: &[String]) -> Vec<(String, String)> {
    let mut batches: Vec<(String, String)> = Vec::new();
    let mut count = 0;
    for l in lines {
        let (sid, ev, _) = split_event(l);
        match batches.last_mut() {
            Some((s, body)) if *s == sid && count < SESSION_BATCH => {
                body.push('\n');
                body.push_str(&ev);
                count += 1;
            }
            _ => {
                batches.push((sid, ev));
                count = 1;
            }
        }
    }
    batches
}

fn ingest_events(dir: &Path, lines: &[String], sync_writes: bool, hold_postings: bool) -> (f64, f64) {
    let m = open(dir, sync_writes, true);
    if hold_postings {
        m.set_postings_limit_for_test(usize::MAX);
    }
    let ns = Namespace::new("bench", "user");
    let batches = event_batches(lines);
    let cpu = cpu_s();
    let t = Instant::now();
    let mut added = 0;
    for (i, (sid, body)) in batches.iter().enumerate() {
        added += m.add_events(&ns, sid, body, "").expect("add_events");
        if i % 1000 == 999 {
            eprintln!("  {} events", added);
        }
    }
    m.flush().expect("flush");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(added as usize, lines.len(), "every event stored");
    (lines.len() as f64 / secs, cpu_s() - cpu)
}

/// `beside-writer`: searches of a namespace while another thread writes to it without pause,
/// against the same searches on the idle store. N events (default 100,000) are ingested and
/// the store reopened; the query set is timed `ROUNDS` times over, idle; then a writer thread
/// `add_events` the next `--writer-n` corpus events (default 50,000) into the same namespace
/// while the query set is timed again, round after round, until the writer is done. Both
/// `search` and `keyword_search` (the text as its query); p50 and p99 of each, and the ratio
/// of beside-writer to idle.
fn beside_writer(a: &Args) -> Value {
    const ROUNDS: usize = 3;
    let n = scenario_n(a);
    let lines = corpus(a, n + a.writer_n);
    let (qs, _) = query_set(a, &texts(&lines[..n]));
    let dir = fresh_dir(a, "beside-writer-store");
    eprintln!("beside-writer: add_events of {n} events");
    ingest_events(&dir, &lines[..n], false, false);
    let m = std::sync::Arc::new(open(&dir, false, false));
    let ns = Namespace::new("bench", "user");
    let adk = |m: &Mnem, q: &str| m.search(&ns, q).expect("search").len();
    let kw = |m: &Mnem, q: &str| m.keyword_search(&ns, &KeywordQuery::new(q)).expect("keyword_search").len();
    let mut idle = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        for q in &qs {
            idle.0.push(timed(|| adk(&m, q)));
            idle.1.push(timed(|| kw(&m, q)));
        }
    }
    let batches = event_batches(&lines[n..]);
    let writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writer = {
        let (m, writing, ns) = (m.clone(), writing.clone(), ns.clone());
        std::thread::spawn(move || {
            let t = Instant::now();
            for (sid, body) in &batches {
                m.add_events(&ns, sid, body, "").expect("add_events");
            }
            writing.store(false, std::sync::atomic::Ordering::SeqCst);
            t.elapsed().as_secs_f64()
        })
    };
    let mut busy = (Vec::new(), Vec::new());
    'rounds: loop {
        for q in &qs {
            if !writing.load(std::sync::atomic::Ordering::SeqCst) {
                break 'rounds;
            }
            busy.0.push(timed(|| adk(&m, q)));
            busy.1.push(timed(|| kw(&m, q)));
        }
    }
    let write_s = writer.join().expect("writer");
    drop(m);
    done_with(a, &dir);
    let (searches, rate) = (busy.0.len(), a.writer_n as f64 / write_s);
    let wall = |t: &[(f64, f64)]| percentiles(t.iter().map(|x| x.0).collect());
    // The searches at or past the p99: their time on a CPU and waiting for one, on average.
    let tail = |t: &[(f64, f64)]| {
        let p99 = wall(t).1;
        let slow: Vec<&(f64, f64)> = t.iter().filter(|x| x.0 >= p99).collect();
        let k = slow.len().max(1) as f64;
        let waited = slow.iter().map(|x| x.1).sum::<f64>() / k;
        (slow.iter().map(|x| x.0).sum::<f64>() / k - waited, waited)
    };
    let (ai, ab, ki, kb) = (wall(&idle.0), wall(&busy.0), wall(&idle.1), wall(&busy.1));
    println!("beside-writer, {n} events, then {} more written while {searches} searches of each kind ran", a.writer_n);
    println!("  writer: {rate:.0} events/s while searched");
    let mut split = Vec::new();
    for (name, i, b, ti, tb) in [("search", ai, ab, &idle.0, &busy.0), ("keyword_search", ki, kb, &idle.1, &busy.1)] {
        println!(
            "  {name}: idle p50 {:.3} / p99 {:.3} ms; beside the writer p50 {:.3} / p99 {:.3} ms; p99 ratio {:.2}",
            i.0,
            i.1,
            b.0,
            b.1,
            b.1 / i.1
        );
        let ((icpu, iwait), (bcpu, bwait)) = (tail(ti), tail(tb));
        println!(
            "    the searches at or past p99, on average: idle {icpu:.3} ms on a CPU + {iwait:.3} ms waiting for one, beside the writer {bcpu:.3} + {bwait:.3} ms"
        );
        // Which queries those are, with the slowest of their idle times (the timings run
        // through the query set in order, round after round).
        let idle_max = |q: usize| ti.iter().skip(q).step_by(qs.len()).map(|x| x.0).fold(0.0, f64::max);
        let mut slow: Vec<(f64, usize)> =
            tb.iter().enumerate().filter(|(_, x)| x.0 >= b.1).map(|(k, x)| (x.0, k % qs.len())).collect();
        slow.sort_by(|x, y| y.0.total_cmp(&x.0));
        for (ms_beside, q) in slow.iter().take(5) {
            println!("      {:?}: {ms_beside:.2} ms beside the writer, at most {:.2} ms idle", qs[*q], idle_max(*q));
        }
        split.push((bcpu, bwait));
    }
    json!({
        "scenario": "beside-writer", "n": n, "writer_n": a.writer_n, "queries": qs.len(), "searches_beside_writer": searches,
        "writer_events_per_s": rate.round(),
        "search_idle_p50_ms": round3(ai.0), "search_idle_p99_ms": round3(ai.1),
        "search_busy_p50_ms": round3(ab.0), "search_busy_p99_ms": round3(ab.1), "search_p99_ratio": round3(ab.1 / ai.1),
        "keyword_idle_p50_ms": round3(ki.0), "keyword_idle_p99_ms": round3(ki.1),
        "keyword_busy_p50_ms": round3(kb.0), "keyword_busy_p99_ms": round3(kb.1), "keyword_p99_ratio": round3(kb.1 / ki.1),
        "search_tail_cpu_ms": round3(split[0].0), "search_tail_wait_ms": round3(split[0].1),
        "keyword_tail_cpu_ms": round3(split[1].0), "keyword_tail_wait_ms": round3(split[1].1),
    })
}

fn adk_write(a: &Args) -> Value {
    let n = scenario_n(a);
    let lines = corpus(a, n);
    let (qs, top) = query_set(a, &texts(&lines));
    let dir = fresh_dir(a, "adk-store");
    eprintln!("adk-cold: add_events of {n} events");
    let (rate, cpu) = ingest_events(&dir, &lines, false, a.hold_postings);
    let sync_n = a.sync_n.min(n);
    let sync_dir = fresh_dir(a, "adk-sync-store");
    eprintln!("adk-cold: add_events of {sync_n} events with sync_writes");
    let (sync_rate, _) = ingest_events(&sync_dir, &lines[..sync_n], true, a.hold_postings);
    done_with(a, &sync_dir);
    let cold = cold_process(a, &[]);
    done_with(a, &dir);
    println!("adk-cold, {n} events in one namespace, {} queries, 20 events per add_events call", qs.len());
    println!("  ingest: {rate:.0} events/s ({cpu:.1} s of CPU for {:.1} s); with sync_writes ({sync_n} events): {sync_rate:.0} events/s", n as f64 / rate);
    println!("  reopen: open {:.1} ms, first search {:.1} ms", num(&cold["open_ms"]), num(&cold["first_search_ms"]));
    println!(
        "  warm search: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        num(&cold["p50_ms"]),
        num(&cold["p99_ms"]),
        num(&cold["max_ms"])
    );
    println!(
        "  worst of the {} most frequent words: {} {:.3} ms",
        top.len(),
        cold["worst_word"].as_str().unwrap_or(""),
        num(&cold["worst_word_ms"])
    );
    println!("  VmRSS after the index is built: {} MiB", cold["rss_mib"]);
    json!({
        "scenario": "adk-cold", "n": n, "queries": qs.len(),
        "ingest_events_per_s": rate.round(), "ingest_cpu_s": cpu, "sync_n": sync_n, "sync_ingest_events_per_s": sync_rate.round(),
        "open_ms": cold["open_ms"], "first_search_ms": cold["first_search_ms"],
        "p50_ms": cold["p50_ms"], "p99_ms": cold["p99_ms"], "max_ms": cold["max_ms"],
        "worst_word": cold["worst_word"], "worst_word_ms": cold["worst_word_ms"], "rss_mib": cold["rss_mib"],
    })
}

fn adk_cold(a: &Args) -> Value {
    let dir = a.out.join("adk-store");
    let qs = read_lines(&data_file(a, "queries", "txt"));
    let top = read_lines(&data_file(a, "top_words", "txt"));
    let ns = Namespace::new("bench", "user");
    let t = Instant::now();
    let m = open(&dir, false, false);
    let open_ms = ms(t);
    let t = Instant::now();
    m.search(&ns, &qs[0]).expect("search");
    let first = ms(t);
    let (p50, p99, max) = time_each(&qs, |_, q| m.search(&ns, q).expect("search"));
    let (word, word_ms) = worst_word(&top, |q| m.search(&ns, q).expect("search"));
    json!({
        "open_ms": round3(open_ms), "first_search_ms": round3(first),
        "p50_ms": round3(p50), "p99_ms": round3(p99), "max_ms": round3(max),
        "worst_word": word, "worst_word_ms": round3(word_ms), "rss_mib": rss_kib() / 1024,
    })
}

/// The scenario's corpus size: `--n` or its default (namespaces cycle through the corpus).
fn scenario_n(a: &Args) -> usize {
    match a.scenario.as_str() {
        "hybrid-cold" => a.n.unwrap_or(20_000),
        "namespaces" => a.n.unwrap_or(100_000).max(a.per_ns),
        _ => a.n.unwrap_or(100_000),
    }
}

/// A data file shared with bench/compare.py, named by corpus size (and dimension).
fn data_file(a: &Args, kind: &str, ext: &str) -> PathBuf {
    let n = scenario_n(a);
    match ext {
        "f32" => a.out.join(format!("{kind}-{n}x{}.{ext}", a.dim)),
        _ => a.out.join(format!("{kind}-{n}.{ext}")),
    }
}

fn read_lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).expect("read").lines().map(str::to_owned).collect()
}

// ---------------------------------------------------------------- keyword

fn put_texts(m: &Mnem, ns: &Namespace, texts: &[String], vectors: Option<&[f32]>, dim: usize) -> f64 {
    let t = Instant::now();
    for (c, chunk) in texts.chunks(1000).enumerate() {
        let batch = chunk
            .iter()
            .enumerate()
            .map(|(j, text)| {
                let i = c * 1000 + j;
                EpisodeInput {
                    id: Some(episode_id(i)),
                    primary: text.clone(),
                    embedding: vectors.map(|v| v[i * dim..(i + 1) * dim].to_vec()),
                    ..Default::default()
                }
            })
            .collect();
        m.put_episodes(ns, batch).expect("put_episodes");
        if c % 10 == 9 {
            eprintln!("  {} episodes", (c + 1) * 1000);
        }
    }
    m.flush().expect("flush");
    t.elapsed().as_secs_f64()
}

/// Episode `i`'s id, so that a fresh process maps results back to vectors.
fn episode_id(i: usize) -> Uuid {
    Uuid::from_u128(i as u128 + 1)
}

fn keyword_write(a: &Args) -> Value {
    let n = scenario_n(a);
    let texts = texts(&corpus(a, n));
    let (qs, _) = query_set(a, &texts);
    let dir = fresh_dir(a, "keyword-store");
    eprintln!("keyword: put_episodes of {n} episodes");
    let m = open(&dir, false, true);
    let secs = put_texts(&m, &Namespace::new("bench", "user"), &texts, None, 0);
    drop(m);
    let cold = cold_process(a, &[]);
    done_with(a, &dir);
    let rate = n as f64 / secs;
    println!("keyword, {n} episodes, {} queries", qs.len());
    println!("  ingest (put_episodes, 1,000 a batch): {rate:.0} episodes/s");
    println!(
        "  reopen: open {:.1} ms, first keyword_search {:.1} ms",
        num(&cold["open_ms"]),
        num(&cold["first_search_ms"])
    );
    println!(
        "  warm keyword_search: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        num(&cold["p50_ms"]),
        num(&cold["p99_ms"]),
        num(&cold["max_ms"])
    );
    json!({
        "scenario": "keyword", "n": n, "queries": qs.len(), "ingest_episodes_per_s": rate.round(),
        "open_ms": cold["open_ms"], "first_search_ms": cold["first_search_ms"],
        "p50_ms": cold["p50_ms"], "p99_ms": cold["p99_ms"], "max_ms": cold["max_ms"],
    })
}

fn keyword_cold(a: &Args) -> Value {
    let dir = a.out.join("keyword-store");
    let qs = read_lines(&data_file(a, "queries", "txt"));
    let ns = Namespace::new("bench", "user");
    let t = Instant::now();
    let m = open(&dir, false, false);
    let open_ms = ms(t);
    let search = |q: &str| m.keyword_search(&ns, &KeywordQuery::new(q)).expect("keyword_search");
    let t = Instant::now();
    search(&qs[0]);
    let first = ms(t);
    let (p50, p99, max) = time_each(&qs, |_, q| search(q));
    json!({
        "open_ms": round3(open_ms), "first_search_ms": round3(first),
        "p50_ms": round3(p50), "p99_ms": round3(p99), "max_ms": round3(max),
    })
}

// ---------------------------------------------------------------- hybrid-cold

/// `n` unit vectors of a Gaussian mixture: a random unit centroid (of `centroids`) plus
/// N(0, 0.03²) per dimension, normalized.
fn mixture(rng: &mut Rng, centers: &[f32], dim: usize, n: usize) -> Vec<f32> {
    let k = centers.len() / dim;
    let mut out = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let c = rng.below(k);
        let v: Vec<f64> = (0..dim).map(|d| f64::from(centers[c * dim + d]) + 0.03 * rng.normal()).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        out.extend(v.iter().map(|x| (x / norm) as f32));
    }
    out
}

fn vectors(a: &Args, n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut rng = Rng(42);
    let raw: Vec<f32> = (0..a.centroids * a.dim).map(|_| rng.normal() as f32).collect();
    let mut centers = Vec::with_capacity(raw.len());
    for c in raw.chunks(a.dim) {
        let norm = c.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        centers.extend(c.iter().map(|x| (f64::from(*x) / norm) as f32));
    }
    let data = mixture(&mut rng, &centers, a.dim, n);
    let queries = mixture(&mut rng, &centers, a.dim, a.queries);
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(data_file(a, "vectors", "f32"), bytes(&data)).expect("write the vectors");
    std::fs::write(data_file(a, "qvectors", "f32"), bytes(&queries)).expect("write the query vectors");
    (data, queries)
}

fn read_f32(p: &Path) -> Vec<f32> {
    let b = std::fs::read(p).expect("read vectors");
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn hybrid_query(text: &str, v: &[f32], semantic_weight: f64) -> HybridQuery {
    let mut q = HybridQuery::new(text);
    q.vector = Some(v.to_vec());
    q.semantic_weight = semantic_weight;
    q
}

/// Where bench/compare.py's libraries are installed (see its docstring).
const BENCH_PYTHON: &str = "/var/cache/mnem/bench-venv/bin/python";

/// A store with room for a 50,000 x 384-d graph (~85 MB) in its cache.
fn open_hybrid(dir: &Path, create: bool) -> Mnem {
    let opts = OpenOptions { create, cache_bytes: 1 << 30, ..Default::default() };
    Mnem::open(dir.to_str().expect("UTF-8 path"), opts).expect("open store")
}

/// usearch's single-threaded build of the vectors file, by bench/compare.py; None when
/// the bench venv or usearch is missing.
fn usearch_build(a: &Args, n: usize) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/compare.py");
    eprintln!("usearch: building the same {n} vectors (bench/compare.py)");
    let out = Command::new(BENCH_PYTHON)
        .arg(script)
        .args(["--out", a.out.to_str().expect("UTF-8 path"), "--skip-texts", "--vector-libs", "usearch"])
        .args(["--vector-n", &n.to_string(), "--dim", &a.dim.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .ok()?;
    let stdout = String::from_utf8(out.stdout).ok()?;
    let v: Value = serde_json::from_str(stdout.lines().last()?).ok()?;
    v["usearch"].get("build_s").is_some().then(|| v["usearch"].clone())
}

fn hybrid_write(a: &Args) -> Value {
    let n = scenario_n(a);
    let texts = texts(&corpus(a, n));
    let (qs, _) = query_set(a, &texts);
    let (data, qv) = vectors(a, n);
    let dir = fresh_dir(a, "hybrid-store");
    eprintln!("hybrid-cold: put_episodes of {n} episodes with {}-d vectors", a.dim);
    let m = open_hybrid(&dir, true);
    let ns = Namespace::new("bench", "user");
    let t = Instant::now();
    let write_s = put_texts(&m, &ns, &texts, Some(&data), a.dim);
    let t1 = Instant::now();
    m.hybrid_search(&ns, &hybrid_query(&qs[0], &qv[..a.dim], 0.5)).expect("hybrid_search");
    let search_ms = ms(t1);
    let total_s = t.elapsed().as_secs_f64();
    drop(m);
    let cold = cold_process(a, &[]);
    done_with(a, &dir);
    let usearch = usearch_build(a, n);
    println!("hybrid-cold, {n} episodes, {}-d vectors ({} centroids), {} queries", a.dim, a.centroids, qs.len());
    println!(
        "  write of all {n} plus one search: {total_s:.2} s (write {write_s:.2} s, {:.3} ms/vector; search {:.0} ms)",
        write_s * 1e3 / n as f64,
        search_ms
    );
    println!(
        "  reopen: open {:.1} ms, first hybrid search {:.1} ms (loads the graph: {:.1} MB in the cache)",
        num(&cold["open_ms"]),
        num(&cold["first_search_ms"]),
        num(&cold["graph_bytes"]) / 1e6
    );
    println!(
        "  warm hybrid (semantic_weight 0.5): p50 {:.2} ms, p99 {:.2} ms",
        num(&cold["p50_ms"]),
        num(&cold["p99_ms"])
    );
    println!(
        "  warm semantic only (1.0): p50 {:.2} ms, p99 {:.2} ms; recall@10 vs exact cosine {:.4}",
        num(&cold["semantic_p50_ms"]),
        num(&cold["semantic_p99_ms"]),
        num(&cold["recall_at_10"])
    );
    let usearch_s = usearch.as_ref().map(|u| num(&u["build_s"]));
    match (&usearch, usearch_s) {
        (Some(u), Some(us)) => println!(
            "  usearch f32, 1 thread, same vectors: build {us:.2} s ({:.3} ms/vector, recall@10 {}); \
             mnem write plus search / usearch build = {:.2}",
            num(&u["build_ms_per_vector"]),
            u["recall_at_10"],
            total_s / us
        ),
        _ => println!("  usearch: skipped (no {BENCH_PYTHON} with usearch)"),
    }
    json!({
        "usearch_build_s": usearch_s, "write_plus_search_over_usearch": usearch_s.map(|us| round3(total_s / us)),
        "scenario": "hybrid-cold", "n": n, "dim": a.dim, "centroids": a.centroids, "queries": qs.len(),
        "write_s": round3(write_s), "write_ms_per_vector": round3(write_s * 1e3 / n as f64),
        "first_search_after_write_ms": round3(search_ms), "write_plus_search_s": round3(total_s),
        "open_ms": cold["open_ms"], "first_search_ms": cold["first_search_ms"], "graph_bytes": cold["graph_bytes"],
        "p50_ms": cold["p50_ms"], "p99_ms": cold["p99_ms"],
        "semantic_p50_ms": cold["semantic_p50_ms"], "semantic_p99_ms": cold["semantic_p99_ms"],
        "recall_at_10": cold["recall_at_10"],
    })
}

fn hybrid_cold(a: &Args) -> Value {
    let dir = a.out.join("hybrid-store");
    let qs = read_lines(&data_file(a, "queries", "txt"));
    let data = read_f32(&data_file(a, "vectors", "f32"));
    let qv = read_f32(&data_file(a, "qvectors", "f32"));
    let dim = a.dim;
    let ns = Namespace::new("bench", "user");
    let t = Instant::now();
    let m = open_hybrid(&dir, false);
    let open_ms = ms(t);
    let t = Instant::now();
    m.hybrid_search(&ns, &hybrid_query(&qs[0], &qv[..dim], 0.5)).expect("hybrid_search");
    let first = ms(t);
    let vec_of = |i: usize| &qv[i * dim..(i + 1) * dim];
    let (p50, p99, _) =
        time_each(&qs, |i, q| m.hybrid_search(&ns, &hybrid_query(q, vec_of(i), 0.5)).expect("hybrid_search"));
    let (sp50, sp99, _) =
        time_each(&qs, |i, q| m.hybrid_search(&ns, &hybrid_query(q, vec_of(i), 1.0)).expect("hybrid_search"));
    // Recall of the semantic channel: its top 10 against the exact top 10 by cosine (the
    // stored vectors are unit length, so a dot product).
    let n = data.len() / dim;
    let mut hits = 0;
    for (i, q) in qs.iter().enumerate() {
        let v = &qv[i * dim..(i + 1) * dim];
        let mut exact: Vec<(f32, usize)> =
            (0..n).map(|j| (data[j * dim..(j + 1) * dim].iter().zip(v).map(|(x, y)| x * y).sum(), j)).collect();
        exact.select_nth_unstable_by(9, |x, y| y.0.total_cmp(&x.0));
        let truth: Vec<Uuid> = exact[..10].iter().map(|&(_, j)| episode_id(j)).collect();
        let got = m.hybrid_search(&ns, &hybrid_query(q, v, 1.0)).expect("hybrid_search");
        hits += got.iter().filter(|r| truth.contains(&r.record.id)).count();
    }
    json!({
        "open_ms": round3(open_ms), "first_search_ms": round3(first), "graph_bytes": m.stats().cache.used_bytes,
        "p50_ms": round3(p50), "p99_ms": round3(p99), "semantic_p50_ms": round3(sp50), "semantic_p99_ms": round3(sp99),
        "recall_at_10": (hits as f64 / (10 * qs.len()) as f64 * 1e4).round() / 1e4,
    })
}

// ---------------------------------------------------------------- namespaces

fn ns_of(i: usize) -> Namespace {
    Namespace::new("bench", format!("user-{i}"))
}

fn namespaces_write(a: &Args) -> Value {
    let (k, per) = (a.namespaces, a.per_ns);
    let n = scenario_n(a);
    let lines = corpus(a, n);
    let events: Vec<String> = lines.iter().map(|l| split_event(l).1).collect();
    let (qs, _) = query_set(a, &texts(&lines));
    let dir = fresh_dir(a, "ns-store");
    eprintln!("namespaces: {k} namespaces × {per} events");
    let m = open(&dir, false, true);
    let rss0 = rss_kib();
    let t = Instant::now();
    for i in 0..k {
        let start = (i * per) % (n - per + 1);
        m.add_events(&ns_of(i), "s-0", &events[start..start + per].join("\n"), "").expect("add_events");
        if i % 1000 == 999 {
            eprintln!("  {} namespaces", i + 1);
        }
    }
    m.flush().expect("flush");
    let secs = t.elapsed().as_secs_f64();
    let write_growth = (rss_kib() - rss0) / 1024;
    drop(m);
    let cold = cold_process(a, &[]);
    done_with(a, &dir);
    println!("namespaces, {k} × {per} events, each namespace searched once (queries from a set of {})", qs.len());
    println!("  ingest: {:.0} events/s; writer's VmRSS grew {write_growth} MiB", (k * per) as f64 / secs);
    println!(
        "  fresh process: VmRSS {} MiB after open, {} MiB after {k} searches (+{} MiB, {:.1} KiB a namespace)",
        num(&cold["rss_before_mib"]),
        num(&cold["rss_after_mib"]),
        num(&cold["rss_growth_mib"]),
        num(&cold["rss_growth_kib_per_ns"])
    );
    println!(
        "  first search of a namespace: p50 {:.3} ms, p99 {:.3} ms; all {k}: {:.2} s",
        num(&cold["p50_ms"]),
        num(&cold["p99_ms"]),
        num(&cold["total_s"])
    );
    json!({
        "scenario": "namespaces", "namespaces": k, "per_ns": per,
        "ingest_events_per_s": ((k * per) as f64 / secs).round(), "writer_rss_growth_mib": write_growth,
        "rss_before_mib": cold["rss_before_mib"], "rss_after_mib": cold["rss_after_mib"],
        "rss_growth_mib": cold["rss_growth_mib"], "rss_growth_kib_per_ns": cold["rss_growth_kib_per_ns"],
        "p50_ms": cold["p50_ms"], "p99_ms": cold["p99_ms"], "total_s": cold["total_s"],
    })
}

fn namespaces_cold(a: &Args) -> Value {
    let dir = a.out.join("ns-store");
    let qs = read_lines(&data_file(a, "queries", "txt"));
    let m = open(&dir, false, false);
    let before = rss_kib();
    let t = Instant::now();
    let times = (0..a.namespaces)
        .map(|i| {
            let t = Instant::now();
            std::hint::black_box(m.search(&ns_of(i), &qs[i % qs.len()]).expect("search"));
            ms(t)
        })
        .collect();
    let total = t.elapsed().as_secs_f64();
    let after = rss_kib();
    let (p50, p99, _) = percentiles(times);
    let growth = after.saturating_sub(before);
    json!({
        "rss_before_mib": before / 1024, "rss_after_mib": after / 1024, "rss_growth_mib": growth / 1024,
        "rss_growth_kib_per_ns": (growth as f64 / a.namespaces as f64 * 10.0).round() / 10.0,
        "p50_ms": round3(p50), "p99_ms": round3(p99), "total_s": round3(total),
    })
}
