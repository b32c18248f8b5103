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
    let mut out = std::io::stdout().lock();
    writeln!(out, "{MARK}{}", ids[0]).unwrap();
    out.flush().unwrap();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

#[test]
fn acknowledged_writes_survive_a_killed_process() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(&dir);
    }
    let dir = std::env::temp_dir().join(format!("mnem-durability-{}", uuid::Uuid::now_v7()));
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = c.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // The harness may have started the line ("test NAME ... ").
            if let Some((_, rest)) = line.split_once(MARK) {
                let _ = tx.send(uuid::Uuid::parse_str(rest.trim()).unwrap());
                return;
            }
        }
    });
    // A child that neither reports nor dies must not hang the suite.
    let id = rx.recv_timeout(std::time::Duration::from_secs(120)).ok();
    c.kill().unwrap(); // SIGKILL: no destructor, no flush, no close
    let status = c.wait().unwrap();
    assert!(!status.success(), "the child was killed");
    let id = id.expect("the child reported its write before it was killed");

    let m = Mnem::open(dir.to_str().unwrap(), OpenOptions::default()).unwrap();
    assert_eq!(m.get_episode(&ns(), &id).unwrap().map(|e| e.primary), Some("an episode".to_string()));
    assert_eq!(m.session_event_ids(&ns(), "s1").unwrap(), Some(vec!["e1".to_string()]));
    let found: serde_json::Value = serde_json::from_slice(&m.search(&ns(), "kill").unwrap()).unwrap();
    assert_eq!(found["memories"][0]["id"], "e1");
    drop(m);
    std::fs::remove_dir_all(&dir).unwrap();
}
