//! A writer loop through a failover: `pg_failover URI SECONDS` writes one episode at a time
//! (each with a new id) to a PostgreSQL store for SECONDS, printing how each call ended; a
//! script kills the primary meanwhile (scripts/pg-cluster kill-primary). Then it reopens the
//! store and checks that every write that returned OK is there, and prints the longest run
//! of failed calls (the failover as a writer sees it) and the statuses they returned.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use uuid::Uuid;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (uri, secs) = (&args[1], args[2].parse::<f64>().expect("SECONDS"));
    let m = Mnem::open(uri, OpenOptions { create: true, ..Default::default() }).expect("open");
    let ns = Namespace::new("failover", "writer");
    let (start, mut acked, mut statuses) = (Instant::now(), Vec::new(), BTreeMap::<String, u64>::new());
    let (mut failing_since, mut longest) = (None::<Instant>, Duration::ZERO);
    while start.elapsed().as_secs_f64() < secs {
        let id = Uuid::now_v7();
        let input = EpisodeInput { id: Some(id), primary: format!("write {}", acked.len()), ..Default::default() };
        match m.put_episodes(&ns, vec![input]) {
            Ok(_) => {
                acked.push(id);
                if let Some(t) = failing_since.take() {
                    longest = longest.max(t.elapsed());
                    eprintln!("writes resumed after {:.2} s", t.elapsed().as_secs_f64());
                }
            }
            Err(e) => {
                if failing_since.is_none() {
                    eprintln!("at {:.2} s: {:?}: {}", start.elapsed().as_secs_f64(), e.status, e.message);
                }
                failing_since.get_or_insert_with(Instant::now);
                *statuses.entry(format!("{:?}", e.status)).or_default() += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    drop(m);
    let m = Mnem::open(uri, OpenOptions::default()).expect("reopen");
    let missing = acked.iter().filter(|id| m.get_episode(&ns, id).expect("get").is_none()).count();
    println!(
        "acknowledged {} writes, {missing} missing after the run; failed calls by status {statuses:?}; \
         longest failing stretch {:.2} s",
        acked.len(),
        longest.as_secs_f64()
    );
    assert_eq!(missing, 0, "an acknowledged write is missing");
}
