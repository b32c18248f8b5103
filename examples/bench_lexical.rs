//! Throughput of the bounded lexical page (the goal: at least 300 MB/s of records per core,
//! so a full 8 MiB budget takes under 30 ms), and of keyword search over the same namespace.
//!
//!     /var/cache/mnem/venv/bin/python bench/corpus.py 40000 7 > /tmp/corpus.jsonl
//!     cargo run --release --example bench_lexical -- /tmp/corpus.jsonl
//!
//! Each corpus line's text becomes one episode's `primary` text in a store on disk.

use mnem::{EpisodeInput, KeywordQuery, LexicalQuery, Mnem, Namespace, OpenOptions};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: bench_lexical CORPUS.jsonl");
    let text = std::fs::read_to_string(&path).expect("corpus file");
    let texts: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            v["content"]["parts"][0]["text"].as_str().unwrap_or_default().to_string()
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("mnem-bench-{}", std::process::id()));
    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions { create: true, ..Default::default() }).unwrap();
    let ns = Namespace::new("bench", "user");
    for chunk in texts.chunks(5000) {
        let batch = chunk.iter().map(|t| EpisodeInput { primary: t.clone(), ..Default::default() }).collect();
        m.put_episodes(&ns, batch).unwrap();
    }
    m.flush().unwrap();
    let queries = ["the weather today", "time is", "what do you like", "東京 学校", "работа дом", "the"];
    let mut q = LexicalQuery::new("");
    q.limit = 10;
    // Warm the block cache once, as a long-running agent process would be.
    q.text = queries[0].into();
    m.search_memory_lexical(&ns, &q).unwrap();
    println!("corpus: {} records from {path}", texts.len());
    println!("{:<22} {:>9} {:>10} {:>11} {:>10} {:>12}", "page query", "ms", "records", "MiB", "MB/s", "records/s");
    for text in queries {
        q.text = text.into();
        let mut times = Vec::new();
        let mut page = None;
        for _ in 0..15 {
            let t = Instant::now();
            page = Some(m.search_memory_lexical(&ns, &q).unwrap());
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2];
        let p = page.unwrap();
        println!(
            "{:<22} {:>9.2} {:>10} {:>11.2} {:>10.0} {:>12.0}",
            text,
            med * 1e3,
            p.scanned_records,
            p.scanned_bytes as f64 / (1 << 20) as f64,
            p.scanned_bytes as f64 / 1e6 / med,
            p.scanned_records as f64 / med
        );
    }
    let kq = KeywordQuery::new("the weather today");
    let t = Instant::now();
    let n = 5;
    for _ in 0..n {
        m.keyword_search(&ns, &kq).unwrap();
    }
    println!("keyword_search over all {} records: {:.2} ms", texts.len(), t.elapsed().as_secs_f64() * 1e3 / n as f64);
    drop(m);
    let _ = std::fs::remove_dir_all(dir);
}
