//! The `mnem` tool, run as a user runs it: every command, its exit statuses, an export and
//! import that keep every search's answer, `forget` erasing bytes from the files, `check`
//! on a damaged table file, and a reading command beside a process that holds the store.

use mnem::{EpisodeInput, Mnem, Namespace, OpenOptions};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn mnem_cmd(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnem"));
    c.args(args);
    c
}

fn run(args: &[&str]) -> Output {
    mnem_cmd(args).output().expect("the mnem binary runs")
}

fn run_ok(args: &[&str]) -> Vec<u8> {
    let o = run(args);
    assert!(o.status.success(), "mnem {args:?}: {:?} {}", o.status, String::from_utf8_lossy(&o.stderr));
    o.stdout
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited normally")
}

fn tempdir(tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mnem-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.to_string_lossy().into_owned()
}

fn ev(id: &str, ts: f64, text: &str) -> String {
    json!({"id": id, "author": "user", "timestamp": ts, "content": {"parts": [{"text": text}], "role": "user"}})
        .to_string()
}

/// A store with two namespaces: ADK sessions, episodes with vectors, deletions.
fn build(dir: &str) -> Vec<String> {
    let m = Mnem::open(dir, OpenOptions { create: true, ..Default::default() }).unwrap();
    let mut ids = Vec::new();
    for (user, word) in [("alice", "marmalade"), ("bob", "quinceflower")] {
        let ns = Namespace::new("app", user);
        let events: Vec<String> =
            (0..30).map(|i| ev(&format!("{user}-{i}"), 1000.0 + i as f64, &format!("{word} river note {i}"))).collect();
        m.add_session(&ns, "s1", &events.join("\n")).unwrap();
        m.add_session(&ns, "s2", &ev(&format!("{user}-x"), 5.0, "river stone")).unwrap();
        let inputs = (0..30)
            .map(|i| EpisodeInput {
                primary: format!("{word} episode {i} river"),
                embedding: Some(vec![1.0, i as f32 * 0.1, 0.5]),
                ..Default::default()
            })
            .collect();
        let got = m.put_episodes(&ns, inputs).unwrap();
        m.delete_episodes(&ns, &got[..3]).unwrap();
        ids.extend(got.iter().map(|u| u.to_string()));
    }
    ids
}

const QUERIES: [&str; 4] = ["river", "marmalade note", "stone", "episode river"];
const KINDS: [&str; 4] = ["adk", "keyword", "hybrid", "page"];

fn search_json(dir: &str, user: &str, kind: &str, q: &str) -> Vec<u8> {
    let mut args = vec!["search", dir, "--app", "app", "--user", user, "--kind", kind, "--json"];
    if kind == "hybrid" {
        args.extend(["--vector", "[1.0, 0.7, 0.5]"]);
    }
    args.push(q);
    run_ok(&args)
}

#[test]
fn search_json_is_the_c_functions_json_and_tables_are_readable() {
    let dir = tempdir("search");
    build(&dir);
    let m = Mnem::open_view(&dir, OpenOptions::default()).unwrap();
    let ns = Namespace::new("app", "alice");
    for q in QUERIES {
        let mut want = m.search(&ns, q).unwrap();
        want.push(b'\n');
        assert_eq!(search_json(&dir, "alice", "adk", q), want, "{q}");
        let mut want = Vec::new();
        mnem::output::write_results(&mut want, &m.keyword_search(&ns, &mnem::KeywordQuery::new(q)).unwrap());
        want.push(b'\n');
        assert_eq!(search_json(&dir, "alice", "keyword", q), want, "{q}");
    }
    let table = String::from_utf8(run_ok(&["search", &dir, "--app", "app", "--user", "alice", "marmalade"])).unwrap();
    assert!(table.starts_with("RANK") && table.contains("marmalade river note"), "{table}");
    assert_eq!(table.lines().count(), 11, "a header and ADK's 10 results");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn info_namespaces_get_check_compact_backup() {
    let dir = tempdir("cmds");
    let ids = build(&dir);
    let info: Value = serde_json::from_slice(&run_ok(&["info", &dir, "--json"])).unwrap();
    assert_eq!((info["namespaces"].as_u64(), info["episodes"].as_u64()), (Some(2), Some(2 * (31 + 27))));
    assert!(String::from_utf8(run_ok(&["info", &dir])).unwrap().contains("namespaces  2"));
    let lines: Vec<Value> = String::from_utf8(run_ok(&["namespaces", &dir, "--json"]))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Key order: the shorter user_id first.
    assert_eq!(
        lines,
        vec![
            json!({"app_name":"app","user_id":"bob","episodes":58}),
            json!({"app_name":"app","user_id":"alice","episodes":58})
        ]
    );
    assert!(String::from_utf8(run_ok(&["namespaces", &dir])).unwrap().contains("alice"));

    let got: Value =
        serde_json::from_slice(&run_ok(&["get", &dir, "--app", "app", "--user", "alice", "--json", &ids[5]])).unwrap();
    assert_eq!(got["episodes"][0]["id"], ids[5]);
    // A deleted id and another namespace's id: printed as null, exit status 3 (not found).
    let o = run(&["get", &dir, "--app", "app", "--user", "alice", "--json", &ids[5], &ids[0], &ids[40]]);
    assert_eq!(code(&o), 3, "{}", String::from_utf8_lossy(&o.stderr));
    let got: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((got["episodes"][1].is_null(), got["episodes"][2].is_null()), (true, true));
    assert_eq!(code(&run(&["get", &dir, "--app", "app", "--user", "alice", "not-a-uuid"])), 2);

    let check: Value = serde_json::from_slice(&run_ok(&["check", &dir, "--json"])).unwrap();
    assert_eq!((check["ok"].as_bool(), check["episodes"].as_u64()), (Some(true), Some(2 * (30 + 1 + 30))));
    run_ok(&["compact", &dir]);
    let backup = format!("{dir}-backup");
    let _ = std::fs::remove_dir_all(&backup);
    run_ok(&["backup", &dir, &backup]);
    assert_eq!(code(&run(&["backup", &dir, &backup])), 2, "an existing destination is refused");
    for kind in KINDS {
        assert_eq!(search_json(&backup, "bob", kind, "river"), search_json(&dir, "bob", kind, "river"), "{kind}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&backup);
}

#[test]
fn usage_errors_and_missing_stores_have_their_exit_statuses() {
    assert_eq!(code(&run(&["frobnicate"])), 2);
    assert_eq!(code(&run(&["search", "/nonexistent", "--app", "a", "q"])), 2, "--user missing");
    assert_eq!(code(&run(&["info", "/nonexistent/mnem-store"])), 3);
    assert_eq!(code(&run(&["info", ":memory:"])), 2);
    let help = run(&["--help"]);
    assert_eq!(code(&help), 0);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("EXIT STATUS") && help.contains("corruption"), "{help}");
    let help = String::from_utf8(run(&["help", "export"]).stdout).unwrap();
    assert!(help.contains("docs/EXPORT.md"), "{help}");
}

#[test]
fn export_then_import_keeps_every_search() {
    let (src, dst) = (tempdir("export-src"), tempdir("export-dst"));
    build(&src);
    let dump = run_ok(&["export", &src]);
    let mut child =
        mnem_cmd(&["import", &dst]).stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &dump).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(run_ok(&["export", &dst]), dump, "the imported store exports the same lines");
    for user in ["alice", "bob"] {
        for kind in KINDS {
            for q in QUERIES {
                assert!(search_json(&src, user, kind, q) == search_json(&dst, user, kind, q), "{user} {kind} {q:?}");
            }
        }
    }
    // One namespace; a second import of it is refused (exit 2) and changes nothing.
    let one = run_ok(&["export", &src, "--app", "app", "--user", "bob"]);
    assert!(
        String::from_utf8_lossy(&one).contains("quinceflower") && !String::from_utf8_lossy(&one).contains("marmalade")
    );
    let mut child = mnem_cmd(&["import", &dst]).stdin(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), &one).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("already holds data"));
    assert_eq!(run_ok(&["export", &dst]), dump);
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&dst);
}

/// Files under `dir` holding `needle`.
fn files_with(dir: &str, needle: &[u8]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && std::fs::read(p).unwrap().windows(needle.len()).any(|w| w == needle))
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn forget_erases_the_namespace_from_the_files() {
    let dir = tempdir("forget");
    build(&dir);
    assert!(!files_with(&dir, b"marmalade").is_empty());
    run_ok(&["forget", &dir, "--app", "app", "--user", "alice"]);
    assert_eq!(files_with(&dir, b"marmalade"), Vec::<String>::new(), "the forgotten text is on disk");
    assert!(!files_with(&dir, b"quinceflower").is_empty(), "the other namespace's text is kept");
    let nss = String::from_utf8(run_ok(&["namespaces", &dir, "--json"])).unwrap();
    assert!(!nss.contains("alice") && nss.contains("bob"), "{nss}");
    assert_eq!(search_json(&dir, "alice", "adk", "marmalade"), b"{\"memories\":[]}\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_fails_with_the_corruption_status_on_a_damaged_table() {
    let dir = tempdir("check");
    build(&dir);
    run_ok(&["compact", &dir]);
    assert_eq!(code(&run(&["check", &dir])), 0);
    // Damage the middle of every table file that holds record text (data blocks).
    let mut damaged = 0;
    for p in files_with(&dir, b"quinceflower").iter().filter(|p| p.ends_with(".sst")) {
        let mut bytes = std::fs::read(p).unwrap();
        let at = bytes.windows(12).position(|w| w == b"quinceflower").unwrap();
        for b in &mut bytes[at..at + 12] {
            *b ^= 0x5A;
        }
        std::fs::write(p, bytes).unwrap();
        damaged += 1;
    }
    assert!(damaged > 0);
    let o = run(&["check", &dir, "--json"]);
    assert_eq!(code(&o), 4, "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((r["ok"].as_bool(), r["problem"]["status"].as_str()), (Some(false), Some("CORRUPTION")), "{r}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("check failed"));
    // Compaction reads the damaged block too: it fails with the same status, not success.
    let o = run(&["compact", &dir]);
    assert_eq!(code(&o), 4, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("block checksum mismatch"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run by `a_reader_works_beside_a_writing_process` in a child process: holds the store
/// open for writing until the parent removes the `hold` file.
#[test]
#[ignore = "a helper process, started by another test"]
fn hold_store_open_for_writing() {
    let Ok(dir) = std::env::var("MNEM_CLI_HOLD") else { return };
    let m = Mnem::open(&dir, OpenOptions::default()).unwrap();
    m.add_events(&Namespace::new("app", "alice"), "s3", &ev("held", 1.0, "written by the holder river"), "").unwrap();
    m.flush().unwrap();
    let hold = Path::new(&dir).with_extension("hold");
    std::fs::write(&hold, b"").unwrap();
    while hold.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_reader_works_beside_a_writing_process() {
    let dir = tempdir("beside");
    build(&dir);
    let hold = Path::new(&dir).with_extension("hold");
    let _ = std::fs::remove_file(&hold);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "hold_store_open_for_writing", "--ignored", "--nocapture"])
        .env("MNEM_CLI_HOLD", &dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !hold.exists() {
        assert!(start.elapsed().as_secs() < 60, "the holder did not start");
        assert!(child.try_wait().unwrap().is_none(), "the holder exited early");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Reading commands work and see the holder's acknowledged write; writing ones are BUSY.
    let found = String::from_utf8(search_json(&dir, "alice", "adk", "holder")).unwrap();
    assert!(found.contains("written by the holder"), "{found}");
    run_ok(&["namespaces", &dir]);
    assert_eq!(code(&run(&["forget", &dir, "--app", "app", "--user", "bob"])), 5);
    std::fs::remove_file(&hold).unwrap();
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A deterministic embedder command: 3 numbers from a text's length and letters.
const EMBEDDER: &str = r#"import json, sys
for line in sys.stdin:
    t = json.loads(line)
    print(json.dumps([1.0, (len(t) % 7) / 7 + 0.1, t.count("r") / 10 + 0.2]), flush=True)
"#;

#[test]
fn search_embeds_the_query_through_an_embedder_command() {
    let dir = tempdir("embedder");
    build(&dir);
    let script = format!("{dir}-embed.py");
    std::fs::write(&script, EMBEDDER).unwrap();
    let cmd = format!("python3 {script}");
    let text = "marmalade river";
    // What the command answers for the text, passed as --vector: the same search.
    let mut child = Command::new("sh").args(["-c", &cmd]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    {
        use std::io::Write;
        writeln!(child.stdin.take().unwrap(), "{}", serde_json::to_string(text).unwrap()).unwrap();
    }
    let vector = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap().trim().to_string();
    for kind in ["hybrid", "recall"] {
        let base = ["search", &dir, "--app", "app", "--user", "alice", "--kind", kind, "--json"];
        let embedded = run_ok(&[&base[..], &["--embedder", &cmd, text]].concat());
        let given = run_ok(&[&base[..], &["--vector", &vector, text]].concat());
        assert_eq!(String::from_utf8_lossy(&embedded), String::from_utf8_lossy(&given), "--kind {kind}");
        if kind == "hybrid" {
            let v: Value = serde_json::from_slice(&embedded).unwrap();
            let semantic = v["results"].as_array().unwrap().iter().filter(|r| r["semantic_score"].as_f64() > Some(0.0));
            assert!(semantic.count() > 0, "the embedded query reached the vector channel: {v}");
        }
    }
    // A command that fails is the embedder's failure, named, and nothing is printed.
    let o = run(&["search", &dir, "--app", "app", "--user", "alice", "--kind", "hybrid", "--embedder", "exit 3", text]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!((code(&o), o.stdout.is_empty()), (8, true), "{err}");
    assert!(err.contains("--embedder \"exit 3\""), "{err}");
    // --embedder is refused where no vector is used, and beside --vector.
    for extra in [
        &["--kind", "keyword", "--embedder", "true"][..],
        &["--kind", "hybrid", "--embedder", "true", "--vector", "[1]"],
    ] {
        let o = run(&[&["search", &dir, "--app", "app", "--user", "alice"][..], extra, &[text]].concat());
        assert_eq!(code(&o), 2, "{extra:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let _ = std::fs::remove_file(&script);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `search --embedder builtin`: the tool embeds the query with the model mnem carries
/// ($MNEM_MODEL_DIR here, beside the installed tool after scripts/install).
#[test]
fn search_embeds_the_query_with_the_builtin_model() {
    let dir = tempdir("builtin");
    {
        let opts = OpenOptions { create: true, builtin_embedder: true, ..Default::default() };
        let m = Mnem::open(&dir, opts).expect("open with the built-in embedder (run scripts/model)");
        let note = |t: &str| EpisodeInput { primary: t.into(), embed: true, ..Default::default() };
        m.put_episodes(&Namespace::new("a", "u"), vec![note("Alice prefers green tea"), note("the printer is broken")])
            .unwrap();
    }
    let out = run_ok(&[
        "search",
        &dir,
        "--app",
        "a",
        "--user",
        "u",
        "--kind",
        "hybrid",
        "--embedder",
        "builtin",
        "--json",
        "a hot drink",
    ]);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["results"][0]["record"]["primary"], "Alice prefers green tea", "{v}");
    assert!(v["results"][0]["semantic_score"].as_f64().unwrap() > 0.0);
}

/// `mnem search … --json` with `extra` flags before the query, parsed.
fn search_with(dir: &str, kind: &str, extra: &[&str], q: &str) -> Value {
    let base = ["search", dir, "--app", "app", "--user", "alice", "--kind", kind, "--json"];
    serde_json::from_slice(&run_ok(&[&base[..], extra, &[q]].concat())).unwrap()
}

/// The (id, score) of each hit of a keyword or hybrid answer, in order.
fn hits(v: &Value) -> Vec<(String, f64)> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["record"]["id"].as_str().unwrap().to_string(), r["score"].as_f64().unwrap()))
        .collect()
}

/// The ids of a recall's memories, in order.
fn memory_ids(v: &Value) -> Vec<String> {
    v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()
}

/// The record's time as the filters read it: its timestamp, else its creation.
fn record_time(r: &Value) -> f64 {
    r["timestamp"].as_f64().unwrap_or_else(|| r["created_at_ms"].as_f64().unwrap() / 1000.0)
}

/// Does a filter accept the record?
type RecordTest = &'static dyn Fn(&Value) -> bool;

#[test]
fn search_filters_choose_hits_without_changing_scores() {
    let dir = tempdir("filters");
    build(&dir);
    let all = search_with(&dir, "keyword", &["--limit", "100"], "river");
    let records: Vec<&Value> = all["results"].as_array().unwrap().iter().map(|r| &r["record"]).collect();
    assert_eq!(records.len(), 58, "31 ADK events and 27 episodes");
    // Each filter returns the unfiltered hits it accepts, in order, with their scores.
    let cases: [(&[&str], RecordTest); 4] = [
        (&["--session", "s2"], &|r| r["session_id"] == "s2"),
        (&["--author", "user", "--since", "1010", "--until", "1020"], &|r| {
            r["author"] == "user" && (1010.0..1020.0).contains(&record_time(r))
        }),
        // Episodes without a timestamp are as old as their creation.
        (&["--since", "1000000000"], &|r| r["timestamp"].is_null()),
        (&["--until", "-5"], &|_| false),
    ];
    for (flags, keep) in cases {
        let got = search_with(&dir, "keyword", &[&["--limit", "100"], flags].concat(), "river");
        let want: Vec<(String, f64)> =
            hits(&all).into_iter().zip(&records).filter(|(_, r)| keep(r)).map(|(h, _)| h).collect();
        assert_eq!(hits(&got), want, "{flags:?}");
    }
    assert_eq!(hits(&search_with(&dir, "keyword", &["--session", "s2"], "river")).len(), 1);
    // A minimum score cuts the unfiltered ranking to its prefix of scores at least the minimum
    // ("river stone" scores above the notes, which score above the episodes).
    let ranked = hits(&search_with(&dir, "keyword", &["--limit", "100"], "river stone note"));
    let mut cuts = Vec::new();
    for i in [0, 5, 40] {
        let min = ranked[i].1;
        let got =
            search_with(&dir, "keyword", &["--limit", "100", "--min-score", &min.to_string()], "river stone note");
        let want: Vec<(String, f64)> = ranked.iter().take_while(|h| h.1 >= min).cloned().collect();
        assert_eq!(hits(&got), want, "--min-score {min}");
        cuts.push(want.len());
    }
    assert_eq!(cuts, [1, 31, 58]);

    // Hybrid: the fused ranking, filtered and cut the same way.
    let vector = ["--vector", "[1.0, 0.7, 0.5]", "--limit", "100"];
    let fused = search_with(&dir, "hybrid", &vector, "river");
    let got = search_with(&dir, "hybrid", &[&vector[..], &["--session", "s1"]].concat(), "river");
    let in_s1: Vec<(String, f64)> = hits(&fused)
        .into_iter()
        .zip(fused["results"].as_array().unwrap())
        .filter(|(_, r)| r["record"]["session_id"] == "s1")
        .map(|(h, _)| h)
        .collect();
    assert_eq!(in_s1.len(), 30);
    let got_ids: Vec<String> = hits(&got).into_iter().map(|h| h.0).collect();
    assert_eq!(got_ids, in_s1.iter().map(|h| h.0.clone()).collect::<Vec<_>>());
    let min = hits(&fused)[9].1;
    let got = search_with(&dir, "hybrid", &[&vector[..], &["--min-score", &min.to_string()]].concat(), "river");
    let want: Vec<(String, f64)> = hits(&fused).into_iter().take_while(|h| h.1 >= min).collect();
    assert_eq!(hits(&got), want);

    // Recall: --mode adk is --kind adk's answer, which the filters narrow.
    let adk: Value = serde_json::from_slice(&search_json(&dir, "alice", "adk", "river stone")).unwrap();
    assert_eq!(search_with(&dir, "recall", &["--mode", "adk"], "river stone"), adk);
    assert_eq!(
        memory_ids(&search_with(&dir, "recall", &["--mode", "adk", "--session", "s2"], "river stone")),
        ["alice-x"]
    );
    // BM25 over the events: all 31 "river" events, then narrowed by time and by score.
    let bm25 = memory_ids(&search_with(&dir, "recall", &["--mode", "bm25", "--limit", "100"], "river"));
    assert_eq!(bm25.len(), 31);
    let mut late = memory_ids(&search_with(&dir, "recall", &["--mode", "bm25", "--since", "1025"], "river"));
    late.sort();
    assert_eq!(late, ["alice-25", "alice-26", "alice-27", "alice-28", "alice-29"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_refuses_flags_that_do_not_apply_and_names_them() {
    let dir = tempdir("filter-usage");
    build(&dir);
    let cases: [(&[&str], &str); 12] = [
        (&["--kind", "adk", "--session", "s1"], "--session"),
        (&["--author", "user", "--min-score", "1"], "--author and --min-score"),
        (&["--kind", "page", "--until", "5"], "--until"),
        (&["--kind", "keyword", "--mode", "bm25"], "--mode"),
        (&["--kind", "recall", "--mode", "nearest"], "--mode"),
        (&["--kind", "recall", "--mode", "adk", "--min-score", "0"], "--min-score"),
        (&["--kind", "recall", "--mode", "bm25", "--vector", "[1,0,0]"], "--vector"),
        (&["--kind", "keyword", "--since", "5", "--until", "4"], "--since"),
        (&["--kind", "keyword", "--min-score", "NaN"], "--min-score"),
        (&["--kind", "keyword", "--vector-model", "m"], "--vector-model"),
        (&["--kind", "hybrid", "--vector-model", "m"], "--vector-model"),
        (&["--kind", "hybrid", "--embedder", "builtin", "--vector-model", "m"], "--vector-model"),
    ];
    for (extra, flag) in cases {
        let o = run(&[&["search", &dir, "--app", "app", "--user", "alice"][..], extra, &["river"]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!((code(&o), o.stdout.is_empty()), (2, true), "{extra:?}: {err}");
        assert!(err.contains(flag), "{extra:?}: the message names {flag}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn search_names_the_model_of_its_query_vector() {
    let dir = tempdir("models");
    {
        let m = Mnem::open(&dir, OpenOptions { create: true, ..Default::default() }).unwrap();
        let note = |t: &str, v: Vec<f32>| EpisodeInput {
            primary: t.into(),
            embedding: Some(v),
            embedding_model: Some("model-a".into()),
            ..Default::default()
        };
        m.put_episodes(
            &Namespace::new("app", "alice"),
            vec![note("green tea", vec![1.0, 0.0]), note("coffee", vec![0.0, 1.0])],
        )
        .unwrap();
    }
    let base = ["search", &dir, "--app", "app", "--user", "alice", "--kind", "hybrid", "--json"];
    let found =
        |extra: &[&str]| -> Value { serde_json::from_slice(&run_ok(&[&base[..], extra, &["tea"]].concat())).unwrap() };
    let v = found(&["--vector", "[1,0]", "--vector-model", "model-a", "--semantic-weight", "1"]);
    assert_eq!(v["results"][0]["record"]["primary"], "green tea", "{v}");
    // An --embedder command's vectors are the model --vector-model names.
    let cmd = "while read -r t; do echo '[1,0]'; done";
    let w = found(&["--embedder", cmd, "--vector-model", "model-a", "--semantic-weight", "1"]);
    assert_eq!(w["results"], v["results"]);
    for extra in [&["--vector", "[1,0]"][..], &["--vector", "[1,0]", "--vector-model", "model-b"], &["--embedder", cmd]]
    {
        let o = run(&[&base[..], extra, &["tea"]].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(code(&o), 2, "{extra:?}: {err}");
        assert!(err.contains("model-a") && err.contains("one model's vectors"), "{extra:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
