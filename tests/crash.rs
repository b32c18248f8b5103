//! Crash safety: a child process writes through every write path (ADK `add_events`,
//! `add_session` replacing a session, `delete_memory`, `put_episodes` with vectors,
//! `delete_episodes`) and prints a line after each call returns; the parent kills it with
//! SIGKILL after a random number of those acknowledgements, reopens the store and checks
//! that every search kind finds each acknowledged write and nothing deleted, and that the
//! write in flight at the kill landed whole or not at all. Later rounds crash a store that
//! already recovered. Without `sync_writes` an acknowledged write is in the WAL before the
//! call returns, so both variants must keep every one (only power loss may drop it).
//!
//! The child is this test binary re-executed with an environment variable; it runs a list
//! of operations the parent generated from a random seed. Setting the environment variable
//! `MNEM_CRASH_SEED` to a failure's seed replays its operations and kill counts (where in a
//! write the kill lands depends on timing).

use mnem::{EpisodeInput, HybridQuery, KeywordQuery, Mnem, Namespace, OpenOptions};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use uuid::Uuid;
mod common;
use common::Rng;

const CHILD_STORE: &str = "MNEM_CRASH_CHILD_STORE";
const CHILD_SCRIPT: &str = "MNEM_CRASH_CHILD_SCRIPT";
const CHILD_SYNC: &str = "MNEM_CRASH_CHILD_SYNC";
/// Starts every acknowledgement (libtest may have started the line with "test NAME ... ").
const MARK: &str = "mnem-crash-ack ";
const DIM: usize = 8;
const EVENTS_PER_CALL: usize = 20;
const SESSIONS: u64 = 10;
/// ADK search's fixed result count.
const ADK_TOP: usize = 10;
/// Kill after this many acknowledgements, one range per round, and the round's mix.
const ROUNDS: [(usize, usize, Mix); 6] =
    [(20, 60, GROW), (150, 250, GROW), (500, 750, GROW), (20, 60, SHRINK), (150, 250, SHRINK), (250, 400, SHRINK)];

/// A round's share of each write (percent) and episodes per call.
#[derive(Clone, Copy)]
struct Mix {
    add_events: usize,
    add_session: usize,
    delete_memory: usize,
    put: usize,
    put_size: usize,
    delete_size: usize,
}

/// The rest of each hundred is `delete_episodes`.
const GROW: Mix = Mix { add_events: 35, add_session: 5, delete_memory: 10, put: 32, put_size: 8, delete_size: 3 };
/// Deletes outrun puts, so dead vectors come to dominate the graph (which then rebuilds its
/// keys in the deleting batch).
const SHRINK: Mix = Mix { add_events: 20, add_session: 5, delete_memory: 10, put: 22, put_size: 6, delete_size: 8 };
/// Operations scripted beyond the kill point, so the child is still writing when killed.
const SLACK: usize = 60;

fn ns() -> Namespace {
    Namespace::new("crash-app", "crash-user")
}

/// A letters-only word (both tokenizers split on non-word characters; letters keep it one token).
fn word(prefix: &str, mut n: u64) -> String {
    let mut s = prefix.to_string();
    for _ in 0..7 {
        s.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}

/// An episode's vector, derived from its token so that child and parent agree.
fn vector(tok: &str) -> Vec<f32> {
    let seed = tok.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let mut r = Rng(seed);
    (0..DIM).map(|_| (r.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).collect()
}

fn primary(tok: &str) -> String {
    format!("episode {tok}")
}

fn event_line(id: &str, word: &str, tok: &str, ts: f64) -> String {
    serde_json::json!({"id": id, "author": "user", "timestamp": ts, "invocation_id": "inv",
        "content": {"role": "user", "parts": [{"text": format!("{word} {tok}")}]}})
    .to_string()
}

/// One write call of the script; `items` are `(event id, token)`.
#[derive(Clone, Debug)]
enum Op {
    Events { session: String, word: String, items: Vec<(String, String)> },
    Session { session: String, word: String, items: Vec<(String, String)> },
    DelMem { id: String, tok: String },
    Put { toks: Vec<String> },
    DelEp { toks: Vec<String> },
}

impl Op {
    fn kind(&self) -> &'static str {
        match self {
            Op::Events { .. } => "add_events",
            Op::Session { .. } => "add_session",
            Op::DelMem { .. } => "delmem",
            Op::Put { .. } => "put",
            Op::DelEp { .. } => "del",
        }
    }

    fn line(&self) -> String {
        let items = |items: &[(String, String)]| items.iter().map(|(i, t)| format!(" {i}:{t}")).collect::<String>();
        match self {
            Op::Events { session, word, items: it } => format!("E {session} {word}{}", items(it)),
            Op::Session { session, word, items: it } => format!("S {session} {word}{}", items(it)),
            Op::DelMem { id, tok } => format!("M {id} {tok}"),
            Op::Put { toks } => format!("P {}", toks.join(" ")),
            Op::DelEp { toks } => format!("D {}", toks.join(" ")),
        }
    }

    fn parse(line: &str) -> Op {
        let mut f = line.split(' ');
        let kind = f.next().unwrap();
        let items = |f: std::str::Split<'_, char>| {
            f.map(|x| {
                let (i, t) = x.split_once(':').unwrap();
                (i.to_string(), t.to_string())
            })
            .collect()
        };
        let rest = |f: std::str::Split<'_, char>| f.map(str::to_string).collect();
        match kind {
            "E" | "S" => {
                let (session, word) = (f.next().unwrap().to_string(), f.next().unwrap().to_string());
                let items = items(f);
                if kind == "E" {
                    Op::Events { session, word, items }
                } else {
                    Op::Session { session, word, items }
                }
            }
            "M" => Op::DelMem { id: f.next().unwrap().to_string(), tok: f.next().unwrap().to_string() },
            "P" => Op::Put { toks: rest(f) },
            "D" => Op::DelEp { toks: rest(f) },
            _ => panic!("bad script line {line:?}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Event {
    tok: String,
    session: String,
    live: bool,
}

#[derive(Clone, Debug)]
struct Ep {
    /// None for an episode whose write never landed.
    uuid: Option<Uuid>,
    live: bool,
}

/// What the store must hold: every event and episode ever scripted that was acknowledged
/// (or found after the kill), live or deleted, and those that never landed (not live).
#[derive(Clone, Default)]
struct Model {
    events: BTreeMap<String, Event>,
    /// Batch word → the event ids written with it.
    batches: BTreeMap<String, Vec<String>>,
    /// Session → its live event ids.
    sessions: BTreeMap<String, Vec<String>>,
    episodes: BTreeMap<String, Ep>,
}

impl Model {
    fn add_events(&mut self, session: &str, word: &str, items: &[(String, String)], live: bool) {
        for (id, tok) in items {
            self.events.insert(id.clone(), Event { tok: tok.clone(), session: session.to_string(), live });
            if live {
                self.sessions.entry(session.to_string()).or_default().push(id.clone());
            }
        }
        self.batches.entry(word.to_string()).or_default().extend(items.iter().map(|(id, _)| id.clone()));
    }

    /// The op's effect; `uuids` are a put's ids when known.
    fn apply(&mut self, op: &Op, uuids: &[Uuid]) {
        match op {
            Op::Events { session, word, items } => self.add_events(session, word, items, true),
            Op::Session { session, word, items } => {
                for id in self.sessions.remove(session).unwrap_or_default() {
                    self.events.get_mut(&id).unwrap().live = false;
                }
                self.sessions.insert(session.clone(), Vec::new());
                self.add_events(session, word, items, true);
            }
            Op::DelMem { id, .. } => {
                let e = self.events.get_mut(id).unwrap();
                e.live = false;
                self.sessions.get_mut(&e.session).unwrap().retain(|x| x != id);
            }
            Op::Put { toks } => {
                for (i, tok) in toks.iter().enumerate() {
                    self.episodes.insert(tok.clone(), Ep { uuid: uuids.get(i).copied(), live: true });
                }
            }
            Op::DelEp { toks } => {
                for tok in toks {
                    self.episodes.get_mut(tok).unwrap().live = false;
                }
            }
        }
    }

    /// Record a write that never landed, so its items are checked to be absent.
    fn lost(&mut self, op: &Op) {
        match op {
            Op::Events { session, word, items } | Op::Session { session, word, items } => {
                self.add_events(session, word, items, false)
            }
            Op::Put { toks } => {
                for tok in toks {
                    self.episodes.insert(tok.clone(), Ep { uuid: None, live: false });
                }
            }
            Op::DelMem { .. } | Op::DelEp { .. } => {}
        }
    }
}

/// Generates operations; its counter keeps ids and tokens unique across rounds.
struct Gen {
    rng: Rng,
    next: u64,
    mix: Mix,
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        word(prefix, self.next)
    }

    fn items(&mut self, n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|_| {
                let id = format!("ev{}", self.next + 1);
                (id, self.fresh("qe"))
            })
            .collect()
    }

    fn op(&mut self, sim: &Model) -> Op {
        let session = format!("s{}", self.rng.next() % SESSIONS);
        let Mix { add_events, add_session, delete_memory, put, put_size, delete_size } = self.mix;
        let (session_at, delmem_at) = (add_events + add_session, add_events + add_session + delete_memory);
        match self.rng.below(100) {
            x if x < add_events => {
                let word = self.fresh("qb");
                Op::Events { session, word, items: self.items(EVENTS_PER_CALL) }
            }
            x if x < session_at => {
                let word = self.fresh("qb");
                let n = self.rng.range(1, 6);
                Op::Session { session, word, items: self.items(n) }
            }
            x if x < delmem_at => {
                let live: Vec<(&String, &Event)> = sim.events.iter().filter(|(_, e)| e.live).collect();
                if live.is_empty() {
                    return self.op(sim);
                }
                let (id, e) = live[self.rng.below(live.len())];
                Op::DelMem { id: id.clone(), tok: e.tok.clone() }
            }
            x if x < delmem_at + put => {
                let n = self.rng.range(1, put_size);
                Op::Put { toks: (0..n).map(|_| self.fresh("qp")).collect() }
            }
            _ => {
                let mut live: Vec<&String> = sim.episodes.iter().filter(|(_, e)| e.live).map(|(t, _)| t).collect();
                if live.is_empty() {
                    return self.op(sim);
                }
                let mut toks = Vec::new();
                for _ in 0..self.rng.range(1, delete_size).min(live.len()) {
                    toks.push(live.swap_remove(self.rng.below(live.len())).clone());
                }
                Op::DelEp { toks }
            }
        }
    }

    fn script(&mut self, model: &Model, n: usize) -> Vec<Op> {
        let mut sim = model.clone();
        (0..n)
            .map(|_| {
                let op = self.op(&sim);
                sim.apply(&op, &[]);
                op
            })
            .collect()
    }
}

fn opts(sync_writes: bool) -> OpenOptions {
    OpenOptions { create: true, sync_writes, ..Default::default() }
}

/// In the child: run the script, acknowledging each call after it returns, then wait for
/// SIGKILL. Any error panics (the parent then sees too few acknowledgements).
fn child(store: &str, script: &str, sync: bool) -> ! {
    let m = Mnem::open(store, opts(sync)).unwrap();
    let text = std::fs::read_to_string(script).unwrap();
    let mut uuids: HashMap<String, Uuid> = HashMap::new();
    let mut out = std::io::stdout().lock();
    let mut n = 0;
    let mut ts = 1.7e9;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("known ") {
            let (tok, id) = rest.split_once(' ').unwrap();
            uuids.insert(tok.to_string(), Uuid::parse_str(id).unwrap());
            continue;
        }
        let op = Op::parse(line);
        let mut events = |items: &[(String, String)], word: &str| {
            let lines: Vec<String> = items
                .iter()
                .map(|(id, tok)| {
                    ts += 1.0;
                    event_line(id, word, tok, ts)
                })
                .collect();
            (lines.join("\n"), items.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>().join(" "))
        };
        let ack = match &op {
            Op::Events { session, word, items } => {
                let (jsonl, ids) = events(items, word);
                assert_eq!(m.add_events(&ns(), session, &jsonl, "").unwrap(), items.len() as u64, "{line}");
                format!("{word} {ids}")
            }
            Op::Session { session, word, items } => {
                let (jsonl, ids) = events(items, word);
                assert_eq!(m.add_session(&ns(), session, &jsonl).unwrap(), items.len() as u64, "{line}");
                format!("{session} {word} {ids}")
            }
            Op::DelMem { id, tok } => {
                assert_eq!(m.delete_memory(&ns(), id).unwrap(), 1, "{line}");
                format!("{id} {tok}")
            }
            Op::Put { toks } => {
                let inputs = toks
                    .iter()
                    .map(|t| EpisodeInput { primary: primary(t), embedding: Some(vector(t)), ..Default::default() })
                    .collect();
                let ids = m.put_episodes(&ns(), inputs).unwrap();
                assert_eq!(ids.len(), toks.len());
                uuids.extend(toks.iter().cloned().zip(ids.iter().copied()));
                toks.iter().zip(&ids).map(|(t, id)| format!("{id}:{t}")).collect::<Vec<_>>().join(" ")
            }
            Op::DelEp { toks } => {
                let ids: Vec<Uuid> = toks.iter().map(|t| uuids[t]).collect();
                assert_eq!(m.delete_episodes(&ns(), &ids).unwrap(), ids.len() as u64, "{line}");
                toks.iter().zip(&ids).map(|(t, id)| format!("{id}:{t}")).collect::<Vec<_>>().join(" ")
            }
        };
        writeln!(out, "{MARK}{n} {} {ack}", op.kind()).unwrap();
        out.flush().unwrap();
        n += 1;
    }
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Names the run in every failure.
struct Ctx {
    seed: u64,
    sync: bool,
    round: usize,
    phase: &'static str,
}

impl std::fmt::Display for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[MNEM_CRASH_SEED={} sync_writes={} round {} {}]", self.seed, self.sync, self.round, self.phase)
    }
}

fn adk_ids(m: &Mnem, q: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&m.search(&ns(), q).unwrap()).unwrap();
    v["memories"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

fn keyword(m: &Mnem, tok: &str) -> Vec<mnem::Episode> {
    m.keyword_search(&ns(), &KeywordQuery::new(tok)).unwrap().into_iter().map(|r| r.record).collect()
}

/// Semantic channel only, with a wide candidate pool so the exact vector is found.
fn semantic(m: &Mnem, tok: &str) -> Vec<mnem::Episode> {
    let q = HybridQuery { vector: Some(vector(tok)), semantic_weight: 1.0, candidates: 10, ..HybridQuery::new(tok) };
    m.hybrid_search(&ns(), &q).unwrap().into_iter().map(|r| r.record).collect()
}

fn fused(m: &Mnem, tok: &str) -> Vec<mnem::Episode> {
    let q = HybridQuery { vector: Some(vector(tok)), ..HybridQuery::new(tok) };
    m.hybrid_search(&ns(), &q).unwrap().into_iter().map(|r| r.record).collect()
}

fn state(live: bool) -> &'static str {
    if live {
        "acknowledged and not deleted"
    } else {
        "deleted, replaced or never written"
    }
}

/// Every search kind agrees with the model.
fn check(m: &Mnem, model: &Model, ctx: &Ctx) {
    for (id, e) in &model.events {
        let what = format!("event {id} (token {}, session {}, {})", e.tok, e.session, state(e.live));
        let got = adk_ids(m, &e.tok);
        let want: Vec<String> = if e.live { vec![id.clone()] } else { Vec::new() };
        assert_eq!(got, want, "{ctx} search (ADK) for {what}");
        // BM25 indexes the events' episodes too.
        let got: Vec<Option<String>> = keyword(m, &e.tok).into_iter().map(|r| r.event_id).collect();
        let want: Vec<Option<String>> = want.into_iter().map(Some).collect();
        assert_eq!(got, want, "{ctx} keyword_search for {what}");
    }
    for (word, ids) in &model.batches {
        let live: Vec<&String> = ids.iter().filter(|id| model.events[*id].live).collect();
        let got = adk_ids(m, word);
        assert_eq!(
            got.len(),
            live.len().min(ADK_TOP),
            "{ctx} search (ADK) for batch word {word}: got {got:?}, live events of the batch {live:?}"
        );
        for id in &got {
            assert!(live.contains(&id), "{ctx} search (ADK) for batch word {word} returned {id}, which is not live");
        }
    }
    for (tok, e) in &model.episodes {
        let what = format!("episode {tok} ({:?}, {})", e.uuid, state(e.live));
        let kw: Vec<Uuid> = keyword(m, tok).iter().map(|r| r.id).collect();
        let sem = semantic(m, tok);
        let fus = fused(m, tok);
        if e.live {
            let id = e.uuid.unwrap();
            let got = m.get_episode(&ns(), &id).unwrap().map(|r| r.primary);
            assert_eq!(got, Some(primary(tok)), "{ctx} get_episode for {what}");
            assert_eq!(kw, [id], "{ctx} keyword_search for {what}");
            assert!(sem.iter().any(|r| r.id == id), "{ctx} hybrid_search (semantic_weight 1) misses {what}");
            assert!(fus.iter().any(|r| r.id == id), "{ctx} hybrid_search (default weights) misses {what}");
        } else {
            if let Some(id) = e.uuid {
                assert_eq!(m.get_episode(&ns(), &id).unwrap().map(|r| r.primary), None, "{ctx} get_episode for {what}");
            }
            assert_eq!(kw, Vec::<Uuid>::new(), "{ctx} keyword_search for {what}");
            let back = |rs: &[mnem::Episode]| rs.iter().any(|r| r.primary == primary(tok) || Some(r.id) == e.uuid);
            assert!(!back(&sem), "{ctx} hybrid_search (semantic_weight 1) returns {what}");
            assert!(!back(&fus), "{ctx} hybrid_search (default weights) returns {what}");
        }
    }
}

/// All or none of `found`; true when all.
fn whole(found: &[bool], ctx: &Ctx, what: &str) -> bool {
    let n = found.iter().filter(|f| **f).count();
    assert!(n == 0 || n == found.len(), "{ctx} in-flight {what} landed partly: {n} of {} found", found.len());
    n == found.len() && n > 0
}

/// The write in flight at the kill: find out whether it landed (true), require all or
/// nothing, and record the outcome in the model.
fn settle(m: &Mnem, model: &mut Model, op: &Op, ctx: &Ctx) -> bool {
    let found_events = |items: &[(String, String)]| -> Vec<bool> {
        items.iter().map(|(id, tok)| adk_ids(m, tok) == [id.clone()]).collect()
    };
    let mut uuids = Vec::new();
    let landed = match op {
        Op::Events { items, .. } => whole(&found_events(items), ctx, &op.line()),
        Op::Session { session, items, .. } => {
            let old: Vec<(String, String)> = model
                .sessions
                .get(session)
                .into_iter()
                .flatten()
                .map(|id| (id.clone(), model.events[id].tok.clone()))
                .collect();
            let new_in = whole(&found_events(items), ctx, &op.line());
            let old_in = whole(&found_events(&old), ctx, &format!("{} (the replaced events)", op.line()));
            assert!(
                old.is_empty() || new_in != old_in,
                "{ctx} in-flight {}: new events present {new_in}, replaced events present {old_in}",
                op.line()
            );
            new_in
        }
        Op::DelMem { id, tok } => {
            let got = adk_ids(m, tok);
            assert!(got.is_empty() || got == [id.clone()], "{ctx} in-flight {}: search found {got:?}", op.line());
            got.is_empty()
        }
        Op::Put { toks } => {
            let hits: Vec<Vec<Uuid>> = toks.iter().map(|t| keyword(m, t).iter().map(|r| r.id).collect()).collect();
            let found: Vec<bool> = hits.iter().map(|h| !h.is_empty()).collect();
            uuids = hits.iter().filter_map(|h| h.first().copied()).collect();
            whole(&found, ctx, &op.line())
        }
        Op::DelEp { toks } => {
            let gone: Vec<bool> = toks
                .iter()
                .map(|t| m.get_episode(&ns(), &model.episodes[t].uuid.unwrap()).unwrap().is_none())
                .collect();
            whole(&gone, ctx, &op.line())
        }
    };
    if landed {
        model.apply(op, &uuids);
    } else {
        model.lost(op);
    }
    landed
}

/// One line from the child: the text and whether it was complete (a kill can cut a line).
type Line = (String, bool);

/// Open the store this test just closed. The other test in this binary spawns children at
/// any time, and a child holds copies of this process's descriptors, the store's lock
/// included, between its fork and its exec: a BUSY then lasts microseconds, so retry it for
/// up to two seconds.
fn reopen(store: &Path, opts: OpenOptions) -> Mnem {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match Mnem::open(store.to_str().unwrap(), opts.clone()) {
            Err(e) if e.status == mnem::Status::Busy && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            r => return r.unwrap(),
        }
    }
}

fn spawn_child(test: &str, store: &Path, script: &Path, sync: bool) -> (std::process::Child, mpsc::Receiver<Line>) {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, store)
        .env(CHILD_SCRIPT, script)
        .env(CHILD_SYNC, if sync { "1" } else { "0" })
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(c.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || loop {
        let mut s = String::new();
        match stdout.read_line(&mut s) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let complete = s.ends_with('\n');
                if tx.send((s.trim_end().to_string(), complete)).is_err() {
                    return;
                }
            }
        }
    });
    (c, rx)
}

/// Apply an acknowledgement to the model (other lines are libtest's).
fn acknowledge(line: &str, script: &[Op], acks: &mut usize, model: &mut Model, ctx: &Ctx) {
    let Some((_, rest)) = line.split_once(MARK) else { return };
    let mut f = rest.split(' ');
    let n: usize = f.next().unwrap().parse().unwrap();
    let kind = f.next().unwrap();
    assert_eq!(n, *acks, "{ctx} acknowledgements out of order: {line}");
    let op = &script[n];
    assert_eq!(kind, op.kind(), "{ctx} acknowledgement {line} for {}", op.line());
    let uuids: Vec<Uuid> = match op {
        Op::Put { .. } => f.map(|p| Uuid::parse_str(p.split_once(':').unwrap().0).unwrap()).collect(),
        _ => Vec::new(),
    };
    model.apply(op, &uuids);
    *acks += 1;
}

fn crash_rounds(test: &str, sync: bool) {
    if let (Ok(store), Ok(script)) = (std::env::var(CHILD_STORE), std::env::var(CHILD_SCRIPT)) {
        child(&store, &script, std::env::var(CHILD_SYNC).as_deref() == Ok("1"));
    }
    let seed = match std::env::var("MNEM_CRASH_SEED") {
        Ok(s) => s.parse().expect("MNEM_CRASH_SEED is a number"),
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
    };
    let dir: PathBuf = std::env::temp_dir().join(format!("mnem-crash-{}", Uuid::now_v7()));
    // A failure leaves the store there.
    eprintln!("{test}: MNEM_CRASH_SEED={seed}, store in {}", dir.display());
    std::fs::create_dir_all(&dir).unwrap();
    let store = dir.join("store");
    let script_path = dir.join("script");
    let mut gen = Gen { rng: Rng(seed), next: 0, mix: GROW };
    let mut model = Model::default();
    let started = Instant::now();
    let mut journaled_rounds = 0;
    for (round, &(lo, hi, mix)) in ROUNDS.iter().enumerate() {
        gen.mix = mix;
        let mut ctx = Ctx { seed, sync, round, phase: "writing" };
        let kill_at = gen.rng.range(lo, hi);
        let script = gen.script(&model, kill_at + SLACK);
        let mut text = String::new();
        for (tok, e) in &model.episodes {
            if let (true, Some(id)) = (e.live, e.uuid) {
                text.push_str(&format!("known {tok} {id}\n"));
            }
        }
        for op in &script {
            text.push_str(&op.line());
            text.push('\n');
        }
        std::fs::write(&script_path, text).unwrap();

        let (mut c, rx) = spawn_child(test, &store, &script_path, sync);
        let mut acks = 0;
        while acks < kill_at {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok((line, _)) => acknowledge(&line, &script, &mut acks, &mut model, &ctx),
                Err(e) => {
                    let _ = c.kill();
                    panic!("{ctx} the child stopped after {acks} of {kill_at} acknowledgements ({e:?}; its stderr is above)");
                }
            }
        }
        // A random delay spreads the kill over the whole of the next write, commit included.
        std::thread::sleep(Duration::from_micros(gen.rng.below(4000) as u64));
        c.kill().unwrap(); // SIGKILL: no destructor, no flush, no close
        assert!(!c.wait().unwrap().success(), "{ctx} the child was killed");
        // Lines already in the pipe were acknowledged too; a cut last line was not.
        while let Ok((line, complete)) = rx.recv_timeout(Duration::from_secs(10)) {
            if complete {
                acknowledge(&line, &script, &mut acks, &mut model, &ctx);
            }
        }
        eprintln!("{ctx} killed after {acks} acknowledgements (at {:.1?})", started.elapsed());

        // Read-only first: postings the child journaled but did not write to the index are
        // read into an overlay, and the store is left as the kill left it.
        ctx.phase = "after the kill, read-only";
        let ro = reopen(&store, OpenOptions { read_only: true, create: false, ..opts(sync) });
        let mut ro_model = model.clone();
        let ro_landed = script.get(acks).map(|op| settle(&ro, &mut ro_model, op, &ctx));
        check(&ro, &ro_model, &ctx);
        let overlaid = ro.stats().journal_replayed;
        drop(ro);

        ctx.phase = "after the kill";
        let m = reopen(&store, opts(sync));
        assert_eq!(m.stats().journal_replayed, overlaid, "{ctx} the read-only open changed nothing");
        journaled_rounds += usize::from(overlaid > 0);
        if let Some(op) = script.get(acks) {
            let landed = settle(&m, &mut model, op, &ctx);
            assert_eq!(Some(landed), ro_landed, "{ctx} read-only and read-write opens agree");
            eprintln!(
                "{ctx} in flight: {} {}; {overlaid} journal entries of postings written at the reopen",
                op.kind(),
                if landed { "landed" } else { "did not land" }
            );
        }
        let t = Instant::now();
        check(&m, &model, &ctx);
        let live = model.episodes.values().filter(|e| e.live).count();
        eprintln!("{ctx} checked in {:.1?}; episodes {} ({live} live)", t.elapsed(), model.episodes.len());
        drop(m);
    }
    // The child only writes, so its postings are mostly held when it is killed.
    assert!(journaled_rounds > 0, "no kill left postings journaled: the test did not exercise their replay");
    let ctx = Ctx { seed, sync, round: ROUNDS.len() - 1, phase: "after a clean reopen" };
    let m = Mnem::open(store.to_str().unwrap(), opts(sync)).unwrap();
    check(&m, &model, &ctx);
    drop(m);
    let live_events = model.events.values().filter(|e| e.live).count();
    let live_eps = model.episodes.values().filter(|e| e.live).count();
    eprintln!(
        "{test}: {} events ({live_events} live), {} episodes ({live_eps} live), {:.1?}",
        model.events.len(),
        model.episodes.len(),
        started.elapsed()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    crash_rounds("acknowledged_writes_survive_kill_9", false);
}

#[test]
fn acknowledged_synced_writes_survive_kill_9() {
    crash_rounds("acknowledged_synced_writes_survive_kill_9", true);
}
