//! Faults of a PostgreSQL server under one open store: its connections killed, a restart, a
//! statement timeout, a server that refuses writes, a full disk. Each fault gets its named
//! status, leaves nothing half-written (every acknowledged write found, nothing of a failed
//! one), searches answer whenever the server can, and the same handle carries on once the
//! fault ends, without being reopened.
//!
//! These disturb the whole server, so they run one after another in one test, in a binary of
//! their own (cargo runs test binaries one at a time). They need the superuser
//! (`MNEM_TEST_PG_SUPERUSER_URI`); the restart needs the server's directory
//! (`MNEM_TEST_PG_DIR`, for scripts/pg-server restart) and the full disk root (a tmpfs).
//! scripts/test sets all three.

mod common;

use common::{assert_retryable, pg_server, place, token, Tmpfs};
use mnem::{KeywordQuery, Mnem, Namespace, OpenOptions, Status};
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};

fn ns() -> Namespace {
    Namespace::new("app", "user")
}

fn ev(n: usize, filler: usize) -> String {
    let words: Vec<String> = (0..filler).map(|i| format!("w{n}x{i}")).collect();
    let text = format!("{} {} {}", token(n), words.join(" "), token(n));
    json!({"id": format!("e{n}"), "author": "user", "timestamp": n as f64, "content": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
}

/// Write call `call`: events `10 call .. 10 call + 10`, in one of three sessions.
fn write(m: &Mnem, call: usize, filler: usize) -> mnem::Result<u64> {
    let lines: Vec<String> = (call * 10..call * 10 + 10).map(|n| ev(n, filler)).collect();
    m.add_events(&ns(), &format!("s{}", call % 3), &lines.join("\n"), "")
}

fn adk_found(m: &Mnem, n: usize) -> mnem::Result<bool> {
    let v: Value = serde_json::from_slice(&m.search(&ns(), &token(n))?).unwrap();
    let ids: Vec<&str> = v["memories"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    Ok(ids == [format!("e{n}")])
}

fn keyword_found(m: &Mnem, n: usize) -> mnem::Result<bool> {
    Ok(m.keyword_search(&ns(), &KeywordQuery::new(token(n)))?.len() == 1)
}

/// What the test knows of its writes: each call has its own events, never reused.
#[derive(Default)]
struct Log {
    next: usize,
    /// Calls that returned OK.
    acked: Vec<usize>,
    /// Calls known not to have applied: refused before their commit.
    refused: Vec<usize>,
}

impl Log {
    /// The next write call. OK is acknowledged; a status other than BUSY is a refusal; BUSY may
    /// come from a commit whose connection broke (applied whole or not at all: unknown here),
    /// so the caller decides.
    fn write(&mut self, m: &Mnem, filler: usize) -> mnem::Result<u64> {
        let call = self.next;
        self.next += 1;
        let r = write(m, call, filler);
        match &r {
            Ok(n) => {
                assert_eq!(*n, 10, "call {call}");
                self.acked.push(call);
            }
            Err(e) if e.status != Status::Busy => self.refused.push(call),
            Err(_) => {}
        }
        r
    }

    /// A sample of the acknowledged calls (every seventh and the last) is found by both
    /// searches; no refused call is.
    fn check(&self, m: &Mnem, what: &str) {
        let last = self.acked.last().copied();
        for call in self.acked.iter().step_by(7).copied().chain(last) {
            let n = call * 10 + call % 10;
            assert!(adk_found(m, n).unwrap(), "{what}: e{n} acknowledged, not found by search");
            assert!(keyword_found(m, n).unwrap(), "{what}: e{n} acknowledged, not found by keyword search");
        }
        for call in &self.refused {
            for n in [call * 10, call * 10 + 9] {
                assert!(!adk_found(m, n).unwrap(), "{what}: e{n} of a refused write is visible");
                assert!(!keyword_found(m, n).unwrap(), "{what}: e{n} of a refused write is visible");
            }
        }
    }
}

fn superuser_on(db: &str) -> postgres::Client {
    let mut c: postgres::Config = std::env::var("MNEM_TEST_PG_SUPERUSER_URI").unwrap().parse().unwrap();
    c.dbname(db);
    c.connect(postgres::NoTls).expect("the superuser connects")
}

/// Until `f` succeeds: every failure meanwhile must be BUSY with a message that says retry.
fn until_ok<T>(what: &str, secs: u64, mut f: impl FnMut() -> mnem::Result<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) => {
                assert_retryable(&e, what);
                assert!(Instant::now() < deadline, "{what}: still failing after {secs} s: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// The server closes every session of the role mnem (as when the network drops them).
fn connection_loss(m: &Mnem, log: &mut Log) {
    let killed: i64 = superuser_on("postgres")
        .query_one("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = 'mnem'", &[])
        .unwrap()
        .get(0);
    assert!(killed > 0, "the store holds connections to kill");
    // The pool's connections are all dead, yet the next calls succeed at once: a read or a
    // lock that meets a closed session is tried again on a new one.
    assert!(adk_found(m, 0).expect("the first search after its connections were killed"));
    log.write(m, 4).expect("the first write after its connections were killed");
    log.check(m, "after connection loss");
}

/// scripts/pg-server restart (a fast shutdown, then the server again on its port) while a
/// writer and searches go on: each call OK or BUSY, never another answer.
fn restart(m: &Mnem, log: &mut Log) {
    let Ok(dir) = std::env::var("MNEM_TEST_PG_DIR") else {
        eprintln!("restart: skipped (MNEM_TEST_PG_DIR is not set)");
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/pg-server");
    let stop_and_start = std::thread::spawn(move || Command::new(script).args(["restart", &dir]).status().unwrap());
    let (mut busy, mut calls, mut longest) = (0, 0, Duration::ZERO);
    while !stop_and_start.is_finished() {
        let t = Instant::now();
        calls += 1;
        if let Err(e) = log.write(m, 4) {
            assert_eq!(e.status, Status::Busy, "write during a restart: {e}");
            busy += 1;
        }
        let last = *log.acked.last().unwrap();
        match adk_found(m, last * 10) {
            Ok(found) => assert!(found, "acknowledged call {last} is missing during the restart"),
            Err(e) => assert_eq!(e.status, Status::Busy, "search during a restart: {e}"),
        }
        longest = longest.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(stop_and_start.join().unwrap().success(), "scripts/pg-server restart failed");
    until_ok("write after the restart", 30, || log.write(m, 4));
    // A call made while the server is down waits for a connection (pool_timeout) and goes on
    // when it is back, or is BUSY past that.
    eprintln!("restart: {calls} rounds of calls, {busy} writes BUSY, the longest round {longest:?}");
    assert!(calls > 0 && (busy > 0 || longest > Duration::from_millis(100)), "no call met the restart");
    log.check(m, "after the restart");
}

/// Another session holds every table of the store (ACCESS EXCLUSIVE) longer than the store's
/// statement_timeout: reads and writes are BUSY naming the timeout, and the write leaves nothing.
fn statement_timeout(uri: &str, schema: &str, log: &mut Log) {
    let m = Mnem::open(&format!("{uri}&statement_timeout=300"), OpenOptions::default()).unwrap();
    let mut holder = superuser_on("mnem");
    let mut tx = holder.transaction().unwrap();
    tx.batch_execute(&format!(
        "LOCK TABLE {schema}.meta, {schema}.episodes, {schema}.adk, {schema}.index_keys IN ACCESS EXCLUSIVE MODE"
    ))
    .unwrap();
    let call = log.next;
    let w = log.write(&m, 4).unwrap_err();
    // BUSY, yet known not to have applied: it timed out before its commit.
    log.refused.push(call);
    for (what, e) in [("write", w), ("search", adk_found(&m, 0).unwrap_err())] {
        assert_eq!(e.status, Status::Busy, "{what} past statement_timeout: {e}");
        assert!(e.message.contains("statement timeout"), "{what}: the message names the timeout: {e}");
    }
    tx.rollback().unwrap();
    log.check(&m, "after a statement timeout");
    log.write(&m, 4).unwrap();
}

/// The server turns read-only for everyone (default_transaction_read_only, as an operator
/// would): writes are READ_ONLY, searches answer, writes resume when it ends.
fn read_only_server(m: &Mnem, log: &mut Log) {
    let mut su = superuser_on("postgres");
    // This session stays writable, to turn the server back.
    su.batch_execute("SET default_transaction_read_only = off").unwrap();
    // ALTER SYSTEM runs alone (several statements in one call are one transaction).
    su.batch_execute("ALTER SYSTEM SET default_transaction_read_only = on").unwrap();
    su.batch_execute("SELECT pg_reload_conf()").unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // The reload reaches each session at its next command; a write may still slip in first.
        let deadline = Instant::now() + Duration::from_secs(10);
        let e = loop {
            if let Err(e) = log.write(m, 4) {
                break e;
            }
            assert!(Instant::now() < deadline, "writes still accepted 10 s after the server turned read-only");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(e.status, Status::ReadOnly, "{e}");
        assert!(e.message.contains("read-only"), "{e}");
        log.check(m, "on a read-only server");
        assert_eq!(log.write(m, 4).unwrap_err().status, Status::ReadOnly);
    }));
    su.batch_execute("ALTER SYSTEM RESET default_transaction_read_only").unwrap();
    su.batch_execute("SELECT pg_reload_conf()").unwrap();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(e) = log.write(m, 4) {
        assert_eq!(e.status, Status::ReadOnly, "{e}");
        assert!(Instant::now() < deadline, "writes still refused 10 s after the server took them again");
        std::thread::sleep(Duration::from_millis(50));
    }
    log.check(m, "after the server took writes again");
}

/// The store's tables in a tablespace on a small tmpfs: once it fills, writes are IO naming the
/// full disk (53100), searches answer, and writes resume when space returns.
fn disk_full() {
    let Some(fs) = Tmpfs::mount("pg-full", 24) else {
        eprintln!("disk full: skipped (no tmpfs could be mounted; this needs root)");
        return;
    };
    let space = fs.0.join("space");
    std::fs::create_dir(&space).unwrap();
    assert!(Command::new("chown").args(["postgres:", space.to_str().unwrap()]).status().unwrap().success());
    let ballast = fs.0.join("ballast");
    std::fs::write(&ballast, vec![1u8; 12 << 20]).unwrap();
    let store = place("postgresql", "faults_full");
    let mut su = superuser_on("postgres");
    su.batch_execute(&format!("CREATE TABLESPACE mnem_full LOCATION '{}'", space.display())).unwrap();
    su.batch_execute("GRANT CREATE ON TABLESPACE mnem_full TO mnem").unwrap();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // The store's tables and their indexes go to the small tablespace.
        su.batch_execute("ALTER ROLE mnem SET default_tablespace = mnem_full").unwrap();
        let m = Mnem::open(&store.uri, OpenOptions { create: true, ..Default::default() });
        su.batch_execute("ALTER ROLE mnem RESET default_tablespace").unwrap();
        let m = m.unwrap();
        let mut log = Log::default();
        let failure = loop {
            if let Err(e) = log.write(&m, 120) {
                break e;
            }
            assert!(log.next < 100_000, "the tablespace never filled");
        };
        assert_eq!(failure.status, Status::Io, "{failure}");
        assert!(failure.message.contains("53100") && failure.message.contains("space"), "{failure}");
        assert!(log.acked.len() > 5, "only {} writes fitted", log.acked.len());
        log.check(&m, "on a full disk");
        assert_eq!(log.write(&m, 120).unwrap_err().status, Status::Io);
        std::fs::remove_file(&ballast).unwrap();
        for _ in 0..5 {
            log.write(&m, 120).expect("writes resume once space returns");
        }
        log.check(&m, "once space returned");
        eprintln!("disk full: {} writes fitted before it filled", log.acked.len() - 5);
    }));
    drop(store); // its tables, before the tablespace they are in
    let _ = su.batch_execute("ALTER ROLE mnem RESET default_tablespace");
    let _ = su.batch_execute("DROP TABLESPACE IF EXISTS mnem_full");
    drop(fs);
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

#[test]
fn each_fault_is_named_leaves_nothing_half_written_and_the_store_carries_on() {
    if pg_server().is_none() {
        return;
    }
    if std::env::var("MNEM_TEST_PG_SUPERUSER_URI").is_err() {
        eprintln!("skipped: MNEM_TEST_PG_SUPERUSER_URI is not set");
        return;
    }
    let store = place("postgresql", "faults");
    let (uri, schema) = (&store.uri, store.schema().unwrap());
    let m = store.open();
    let mut log = Log::default();
    for _ in 0..20 {
        log.write(&m, 4).unwrap();
    }
    log.check(&m, "before any fault");
    connection_loss(&m, &mut log);
    restart(&m, &mut log);
    statement_timeout(uri, schema, &mut log);
    read_only_server(&m, &mut log);
    drop(m);
    let m = Mnem::open(uri, OpenOptions::default()).unwrap();
    log.check(&m, "reopened after every fault");
    drop(m);
    drop(store);
    disk_full();
}
