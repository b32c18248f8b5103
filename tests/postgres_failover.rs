//! The primary of a replicated cluster is killed (SIGKILL, its pg_autoctl with it, so the
//! monitor must promote the synchronous standby) while a writer and a reader work on one open
//! store. Every write that returned OK is found afterwards; every call during the failover is
//! BUSY with a message that says to retry, never a wrong answer; the same handle writes again
//! after the failover, without being reopened.
//!
//! Needs the cluster of scripts/pg-cluster (`MNEM_TEST_PG_CLUSTER_DIR`, its DIR/env holds the
//! URI); scripts/test starts one for this test alone. Without it the test says it skipped.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions};
mod common;
use common::assert_retryable;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

fn cluster_uri(dir: &str) -> String {
    let env = std::fs::read_to_string(format!("{dir}/env")).expect("the cluster's env file");
    let line = env.lines().find_map(|l| l.strip_prefix("export MNEM_PG_CLUSTER_URI=")).expect("MNEM_PG_CLUSTER_URI");
    line.trim_matches('\'').to_string()
}

#[test]
fn killing_the_primary_loses_no_acknowledged_write() {
    let Some(dir) = std::env::var("MNEM_TEST_PG_CLUSTER_DIR").ok().filter(|d| !d.is_empty()) else {
        eprintln!("skipped: MNEM_TEST_PG_CLUSTER_DIR is not set (scripts/test starts a cluster)");
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pg-cluster");
    // Short pool and statement timeouts, so a call on a dead primary returns soon.
    let uri =
        format!("{}&schema=failover_test&pool_timeout=2&connect_timeout=2&statement_timeout=5000", cluster_uri(&dir));
    let m = Arc::new(Mnem::open(&uri, OpenOptions { create: true, ..Default::default() }).unwrap());
    let ns = Namespace::new("failover", "writer");
    let acked = Arc::new(Mutex::new(Vec::<Uuid>::new()));
    let stop = Arc::new(AtomicBool::new(false));

    // The reader: the latest acknowledged write is found, or the call is BUSY.
    let reader = {
        let (m, ns, acked, stop) = (m.clone(), ns.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut ok, mut busy) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let Some(last) = acked.lock().unwrap().last().copied() else { continue };
                match m.get_episode(&ns, &last) {
                    Ok(found) => {
                        assert!(found.is_some(), "acknowledged write {last} not found during the failover");
                        ok += 1;
                    }
                    Err(e) => {
                        assert_retryable(&e, "a read during the failover");
                        busy += 1;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            (ok, busy)
        })
    };

    let start = Instant::now();
    let mut killed = None;
    let (mut failed, mut first_failure, mut resumed) = (0u64, None::<Instant>, None::<Instant>);
    loop {
        let t = start.elapsed();
        if killed.is_none() && t > Duration::from_secs(3) {
            let out = Command::new(script).args(["kill-primary", &dir, "node"]).output().unwrap();
            assert!(out.status.success(), "kill-primary: {}", String::from_utf8_lossy(&out.stderr));
            killed = Some(Instant::now());
        }
        // Done some seconds after writes resumed; 120 s is far past any failover here.
        if resumed.is_some_and(|r: Instant| r.elapsed() > Duration::from_secs(2)) {
            break;
        }
        assert!(t < Duration::from_secs(120), "writes did not resume within 120 s of the kill");
        let id = Uuid::now_v7();
        let input = EpisodeInput { id: Some(id), primary: format!("write {id}"), ..Default::default() };
        match m.put_episodes(&ns, vec![input]) {
            Ok(_) => {
                acked.lock().unwrap().push(id);
                if first_failure.is_some() && resumed.is_none() {
                    resumed = Some(Instant::now());
                }
            }
            Err(e) => {
                // A commit whose connection broke applied whole or not at all: its id is left
                // out of both lists, and the check below does not care which.
                assert_retryable(&e, "a write during the failover");
                failed += 1;
                first_failure.get_or_insert_with(Instant::now);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (reads_ok, reads_busy) = reader.join().expect("the reader saw no wrong answer");
    let (first_failure, resumed) = (first_failure.expect("no write met the failover"), resumed.unwrap());
    assert!(killed.unwrap() <= first_failure + Duration::from_millis(100), "writes failed before the kill");
    let acked = acked.lock().unwrap().clone();
    eprintln!(
        "{} writes acknowledged, {failed} BUSY; writes resumed {:.2} s after the kill; reads: {reads_ok} OK, {reads_busy} BUSY",
        acked.len(),
        (resumed - killed.unwrap()).as_secs_f64()
    );
    // Every acknowledged write, through the handle that lived through the failover and through
    // a new one.
    for m in [&*m, &Mnem::open(&uri, OpenOptions::default()).unwrap()] {
        let missing: Vec<&Uuid> = acked.iter().filter(|id| m.get_episode(&ns, id).unwrap().is_none()).collect();
        assert!(missing.is_empty(), "{} of {} acknowledged writes missing: {missing:?}", missing.len(), acked.len());
    }
}
