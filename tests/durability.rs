//! A write that returned survives the process being killed right after it, without
//! `sync_writes` and without `mnem_flush` (SECURITY.md, Durability). The test runs itself
//! as a child process that writes, reports, and waits to be killed with SIGKILL.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "MNEM_DURABILITY_CHILD_DIR";
const TEST_NAME: &str = "acknowledged_writes_survive_a_killed_process";
const MARK: &str = "mnem-durability-child-wrote ";

fn ns() -> Namespace {
    Namespace::new("app", "user")
}

fn event() -> &'static str {
    r#"{"id":"e1","author":"user","timestamp":1.5,"content":{"role":"user","parts":[{"text":"written before the kill"}]}}"#
}

/// In the child: write through both paths, say so, then wait for SIGKILL.
fn child(dir: &str) -> ! {
    let m = Mnem::open(dir, OpenOptions { create: true, ..Default::default() }).unwrap();
    let ids = m.put_episodes(&ns(), vec![EpisodeInput { primary: "an episode".into(), ..Default::default() }]).unwrap();
    m.add_session(&ns(), "s1", event()).unwrap();
    report_and_wait(&format!("{MARK}{}", ids[0]))
}

/// In the child: print `line` and wait to be killed.
fn report_and_wait(line: &str) -> ! {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Run this binary's test `test` as a child process with `env` set to `dir`, wait for the
/// line it prints after `mark` (at most two minutes: a child that neither reports nor dies
/// must not hang the suite), then SIGKILL it (no destructor, no flush, no close). The rest
/// of that line, if it came.
fn run_killed_child(test: &str, env: &str, dir: &std::path::Path, mark: &'static str) -> Option<String> {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = c.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The harness may have started the line ("test NAME ... ").
            if let Some((_, rest)) = line.split_once(mark) {
                let _ = tx.send(rest.trim().to_string());
                return;
            }
        }
    });
    let reported = rx.recv_timeout(std::time::Duration::from_secs(120)).ok();
    c.kill().unwrap();
    let status = c.wait().unwrap();
    assert!(!status.success(), "the child was killed");
    reported
}

#[test]
fn acknowledged_writes_survive_a_killed_process() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(&dir);
    }
    let dir = std::env::temp_dir().join(format!("mnem-durability-{}", uuid::Uuid::now_v7()));
    let id = run_killed_child(TEST_NAME, CHILD_ENV, &dir, MARK)
        .map(|rest| uuid::Uuid::parse_str(&rest).unwrap())
        .expect("the child reported its write before it was killed");

    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
    assert_eq!(m.get_episode(&ns(), &id).unwrap().map(|e| e.primary), Some("an episode".to_string()));
    assert_eq!(m.session_event_ids(&ns(), "s1").unwrap(), Some(vec!["e1".to_string()]));
    let found: serde_json::Value = serde_json::from_slice(&m.search(&ns(), "kill").unwrap()).unwrap();
    assert_eq!(found["memories"][0]["id"], "e1");
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}

const MOVED_CHILD_ENV: &str = "MNEM_DURABILITY_MOVED_CHILD_DIR";
const MOVED_TEST_NAME: &str = "postings_moved_but_not_flushed_survive_a_killed_process";
const MOVED_MARK: &str = "mnem-durability-child-moved ";
/// Calls of `add_events`, each of 20 events with a word of its own.
const CALLS: usize = 30;

fn moved_word(call: usize, event: usize) -> String {
    format!("moved{call}x{event}")
}

/// In the child: write, with postings moved into the index after every write by the
/// background thread (a batch that skips the write-ahead log), and a search after the writes
/// pause to move the last ones; then, with `forget`, forget another namespace (store
/// management: it settles first). Say so, then wait for SIGKILL. Nothing here fills a
/// memtable, so no flush runs on its own before the kill.
fn moved_child(dir: &str, forget: bool) -> ! {
    let m = Mnem::open(dir, OpenOptions { create: true, ..Default::default() }).unwrap();
    m.set_postings_limit_for_test(1);
    for call in 0..CALLS {
        let lines: Vec<String> = (0..20)
            .map(|i| {
                format!(
                    r#"{{"id":"e{call}-{i}","author":"user","timestamp":{},"content":{{"role":"user","parts":[{{"text":"{} said"}}]}}}}"#,
                    call * 20 + i,
                    moved_word(call, i)
                )
            })
            .collect();
        m.add_events(&ns(), &format!("s{call}"), &lines.join("\n"), "").unwrap();
    }
    for _ in 0..2 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        m.search(&ns(), "said").unwrap();
    }
    if forget {
        m.forget_namespace(&Namespace::new("app", "someone else")).unwrap();
    }
    report_and_wait(&format!("{MOVED_MARK}{CALLS}"))
}

/// After a kill: every event found, by ADK and keyword search.
fn every_moved_event_is_found(m: &Mnem) {
    for call in 0..CALLS {
        for i in [0, 7, 19] {
            let found: serde_json::Value =
                serde_json::from_slice(&m.search(&ns(), &moved_word(call, i)).unwrap()).unwrap();
            assert_eq!(found["memories"].as_array().map(Vec::len), Some(1), "{}", moved_word(call, i));
            assert_eq!(found["memories"][0]["id"], format!("e{call}-{i}"));
        }
    }
    let kw = m.keyword_search(&ns(), &mnem::KeywordQuery::new(moved_word(3, 5))).unwrap();
    assert_eq!(kw.len(), 1);
}

/// The test `test`'s side of a moving child (`moved_child`, with `forget`), when this process
/// is that child (`env` set); otherwise run it, check that it reported all its writes before
/// it was killed, and give its store's directory.
fn killed_moved_child(test: &str, env: &str, forget: bool) -> std::path::PathBuf {
    if let Ok(dir) = std::env::var(env) {
        moved_child(&dir, forget);
    }
    let dir = std::env::temp_dir().join(format!("mnem-durability-{test}-{}", uuid::Uuid::now_v7()));
    let reported = run_killed_child(test, env, &dir, MOVED_MARK);
    assert_eq!(
        reported.as_deref(),
        Some(CALLS.to_string().as_str()),
        "the child reported its writes before it was killed"
    );
    dir
}

/// The index's postings are moved out of the journal by a batch that is not logged: killed
/// before a flush, the process loses those moves with its memtables, journal deletes
/// included, and the next open moves every run again from the journal.
#[test]
fn postings_moved_but_not_flushed_survive_a_killed_process() {
    let dir = killed_moved_child(MOVED_TEST_NAME, MOVED_CHILD_ENV, false);
    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
    // Every write's run was moved, and every move was lost: all of them are moved again.
    assert_eq!(m.stats().journal_replayed, CALLS as u64);
    every_moved_event_is_found(&m);
    drop(m);
    // Closed cleanly, the store holds no journal: the next open replays nothing.
    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
    assert_eq!(m.stats().journal_replayed, 0);
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}

const FORGET_CHILD_ENV: &str = "MNEM_DURABILITY_FORGET_CHILD_DIR";
const FORGET_TEST_NAME: &str = "store_management_leaves_no_unlogged_move_to_replay";

/// Store management leaves nothing of the journal to move again behind its range deletes at
/// the next open (which would put a forgotten namespace's postings back). Two flushes see to
/// it here, the settle before the deletes and the compaction of the deleted ranges after
/// them, so this test passes with either; the unit test
/// `store::rocks::deferred::tests::settling_makes_the_unlogged_moves_durable` checks the
/// settle's alone, which covers a crash between the two.
#[test]
fn store_management_leaves_no_unlogged_move_to_replay() {
    let dir = killed_moved_child(FORGET_TEST_NAME, FORGET_CHILD_ENV, true);
    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
    assert_eq!(m.stats().journal_replayed, 0);
    every_moved_event_is_found(&m);
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}
