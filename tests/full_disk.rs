//! A full disk: writes fail with IO naming the cause and change nothing, every search keeps
//! answering (reads never write), and writes resume once space returns, without reopening
//! the store. Nothing acknowledged is lost.
//!
//! The store lives on a 100 MiB tmpfs this test mounts, so it needs root (CI runs as root);
//! elsewhere it says so and passes without running. The storage engine resumes writes once
//! the space its memtables may need to flush (64 MiB) is free, checking every 5 seconds.

mod common;

use common::{token, Tmpfs};
use mnem::{Error, KeywordQuery, Mnem, Namespace, OpenOptions, Status};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn ns() -> Namespace {
    Namespace::new("app", "user")
}

fn ev(n: usize) -> String {
    // Mostly distinct words, so that each event adds index postings of its own.
    let filler: Vec<String> = (0..40).map(|i| format!("w{}x{}", n, i)).collect();
    let text = format!("{} {} {}", token(n), filler.join(" "), token(n));
    json!({"id": format!("e{n}"), "author": "user", "timestamp": n as f64, "content": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
}

fn adk_found(m: &Mnem, n: usize) -> bool {
    let v: Value = serde_json::from_slice(&m.search(&ns(), &token(n)).expect("search answers")).unwrap();
    let ids: Vec<&str> = v["memories"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids == [format!("e{n}")]
}

fn keyword_found(m: &Mnem, n: usize) -> bool {
    m.keyword_search(&ns(), &KeywordQuery::new(token(n))).expect("keyword search answers").len() == 1
}

fn write(m: &Mnem, call: usize) -> mnem::Result<u64> {
    let lines: Vec<String> = (call * 10..call * 10 + 10).map(ev).collect();
    m.add_events(&ns(), &format!("s{}", call % 3), &lines.join("\n"), "")
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn no_space(e: &Error) -> bool {
    e.status == Status::Io && e.message.to_lowercase().contains("space")
}

#[test]
fn a_full_disk_stops_writes_not_searches_and_writes_resume_when_space_returns() {
    let Some(fs) = Tmpfs::mount("full-disk", 100) else {
        assert!(!is_root(), "running as root, but a tmpfs could not be mounted");
        eprintln!("full_disk: not root, so no tmpfs to fill: skipped");
        return;
    };
    let path = fs.0.join("store");
    let ballast: &Path = &fs.0.join("ballast");
    // Space to give back later, more than the 64 MiB the storage engine wants free before it
    // resumes writing: the store cannot use it until this file goes.
    std::fs::write(ballast, vec![1u8; 72 << 20]).unwrap();
    let m = Mnem::open(path.to_str().unwrap(), OpenOptions { create: true, ..Default::default() }).unwrap();

    // Write until the disk is full; search now and then, so that some postings are held in
    // memory when the disk fills and the searches must read them from there.
    let mut acked = 0usize; // calls 0..acked returned OK
    let failure = loop {
        match write(&m, acked) {
            Ok(added) => {
                assert_eq!(added, 10);
                acked += 1;
            }
            Err(e) => break e,
        }
        if acked.is_multiple_of(50) {
            assert!(adk_found(&m, acked * 10 - 1));
        }
        assert!(acked < 100_000, "the disk never filled");
    };
    assert!(no_space(&failure), "a full disk is IO naming the cause, got {failure}");
    assert!(acked > 10, "only {acked} writes fitted");

    // Every search kind answers, with every acknowledged write and nothing of the failed one.
    let check = |m: &Mnem, upto: usize| {
        for call in (0..upto).step_by(7).chain([upto - 1]) {
            let n = call * 10 + call % 10;
            assert!(adk_found(m, n), "e{n} acknowledged, not found by search");
            assert!(keyword_found(m, n), "e{n} acknowledged, not found by keyword search");
        }
    };
    check(&m, acked);
    for n in acked * 10..acked * 10 + 10 {
        assert!(!adk_found(&m, n) && !keyword_found(&m, n), "e{n} of the failed write is visible");
    }
    // Writes keep failing (with the same status) while the disk is full, and searches keep
    // answering between them.
    for _ in 0..3 {
        let e = write(&m, acked).expect_err("the disk is still full");
        assert_eq!(e.status, Status::Io, "{e}");
        check(&m, acked);
    }

    // Space returns: writes resume on the same handle (the storage engine checks for space
    // every few seconds).
    std::fs::remove_file(ballast).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match write(&m, acked) {
            Ok(_) => break,
            Err(e) if no_space(&e) || e.status == Status::Io => {
                assert!(Instant::now() < deadline, "writes did not resume within 60 s of space returning: {e}");
                check(&m, acked);
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => panic!("unexpected error after space returned: {e}"),
        }
    }
    acked += 1;
    for _ in 0..5 {
        write(&m, acked).expect("writes go on once space is back");
        acked += 1;
    }
    check(&m, acked);
    drop(m);

    // And after a reopen, everything acknowledged is there.
    let m = Mnem::open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    check(&m, acked);
}
