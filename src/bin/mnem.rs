//! `mnem`: inspect and manage a mnem store from the shell.
//!
//! `mnem <command> <store-dir> [options]`. Commands that only read open a read-only view
//! (`Mnem::open_view`, usable beside a writing process); `import`, `forget`, `backup` and
//! `compact` open the store read-write (and so need it not to be open in another process). Tables by default, `--json` for scripts; progress bars go to
//! stderr only when it is a terminal.

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mnem::{
    EmbeddingProvider, Error, HybridQuery, KeywordQuery, LexicalQuery, Mnem, Namespace, OpenOptions, RecallQuery,
    Status,
};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, ExitCode, Stdio};
use std::sync::{Arc, Mutex};

const EXIT_CODES: &str = "\
EXIT STATUS
    0   success
    1   any other failure (I/O, internal error)
    2   bad usage: unknown command or option, invalid argument or input line
    3   not found: no store at the path, or (get) an id with no visible episode
    4   corruption: the store is damaged (check found a problem, or a read failed on damage)
    5   busy: the store is open for writing in another process
    6   incompatible: the store was written by a newer mnem, or needs a read-write open to upgrade
    7   read-only: a write through a read-only open
    8   the embedder failed: the --embedder command did not answer a vector";

#[derive(Parser)]
#[command(name = "mnem", version, about = "Inspect and manage a mnem store", after_help = EXIT_CODES)]
#[command(long_about = "Inspect and manage a mnem store (a directory written by libmnem).\n\n\
Commands that only read (info, namespaces, search, get, export, check) open a read-only view: \
they never change the store, work while another process has it open for writing, and see the \
store as it was when the command started. import, forget, backup and compact open it \
read-write, which needs the store not to be open in any other process (exit status 5 \
otherwise). Output is a table for people; --json prints JSON for scripts. Progress is shown on \
stderr when it is a terminal.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Store {
    /// The store's directory.
    store: String,
}

#[derive(Args)]
struct Ns {
    /// The namespace's app_name.
    #[arg(long)]
    app: String,
    /// The namespace's user_id.
    #[arg(long)]
    user: String,
}

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    /// ADK memory search (mnem_search): google-adk's InMemoryMemoryService ranking.
    Adk,
    /// BM25 keyword search over every visible episode (mnem_keyword_search).
    Keyword,
    /// One bounded BM25 page over a scan (mnem_lexical_page).
    Page,
    /// BM25 fused with vector search (mnem_hybrid_search); lexical only without --vector or
    /// --embedder.
    Hybrid,
    /// ADK memory search with semantic recall (mnem_recall): by default ADK's ranking fused
    /// with the nearest ADK events (ADK's ranking alone without --vector or --embedder);
    /// --mode chooses other rankings.
    Recall,
}

/// `mnem search --kind recall --mode`: which rankings mnem_recall fuses.
#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    /// ADK's ranking alone: --kind adk's answer (at most 10), which the filters narrow.
    Adk,
    /// BM25 over the namespace's ADK events and memories.
    Bm25,
    /// BM25 fused with the nearest vectors.
    Hybrid,
    /// ADK's ranking fused with the nearest vectors (the default).
    #[value(name = "adk_vectors")]
    AdkVectors,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Adk => "adk",
            Mode::Bm25 => "bm25",
            Mode::Hybrid => "hybrid",
            Mode::AdkVectors => "adk_vectors",
        }
    }
}

/// `mnem search`'s hit filters: they choose which hits are returned without changing any
/// score. Keyword, hybrid and recall take them.
#[derive(Args)]
struct Filters {
    /// Keyword, hybrid and recall: only hits whose record's session_id is ID (ADK: the
    /// session the event was added with).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Keyword, hybrid and recall: only hits whose record's author is NAME.
    #[arg(long, value_name = "NAME")]
    author: Option<String>,
    /// Keyword, hybrid and recall: only records of this time or later, in seconds since the
    /// Unix epoch (the record's timestamp, else when it was created).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    since: Option<f64>,
    /// Keyword, hybrid and recall: only records before this time (exclusive), in seconds since
    /// the Unix epoch.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    until: Option<f64>,
    /// Keyword, hybrid and recall: only hits scoring at least X: BM25's score for keyword and
    /// --mode bm25, the fused score for hybrid and the other recall modes (--mode adk has
    /// no scores).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    min_score: Option<f64>,
}

impl Filters {
    /// The flags given, as typed.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--session", self.session.is_some()),
            ("--author", self.author.is_some()),
            ("--since", self.since.is_some()),
            ("--until", self.until.is_some()),
            ("--min-score", self.min_score.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}

#[derive(Subcommand)]
enum Command {
    /// Summary of the store: format, namespaces, records, statistics.
    #[command(long_about = "Print the store's on-disk format, its namespaces with their episode \
counts, and the library's statistics (mnem_stats). Opens the store read-only.")]
    Info {
        #[command(flatten)]
        store: Store,
        /// Print JSON: {"path", "format", "namespaces", "episodes", "stats"}.
        #[arg(long)]
        json: bool,
    },
    /// List the namespaces with their episode counts.
    #[command(long_about = "List every namespace (app_name, user_id) of the store with the number \
of its episodes that are not deleted (expired ones count until purged), in key order. Opens the \
store read-only. With --json, one JSON object per line: {\"app_name\",\"user_id\",\"episodes\"}.")]
    Namespaces {
        #[command(flatten)]
        store: Store,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Search one namespace.
    #[command(long_about = "Search one namespace. --kind adk (default) ranks like google-adk's \
InMemoryMemoryService (mnem_search); keyword is BM25 (mnem_keyword_search); page is one bounded \
BM25 scan page (mnem_lexical_page); hybrid fuses BM25 and vectors (mnem_hybrid_search); recall \
is ADK's ranking with semantic recall (mnem_recall), or with --mode adk, bm25 or hybrid ADK's \
ranking alone, BM25 over the ADK events and memories, or BM25 fused with vectors. For hybrid \
and recall give --vector as a JSON array, or --embedder builtin (or CMD) to embed the query \
text, else they are lexical only. --session, --author, --since, --until and --min-score \
choose which hits keyword, hybrid and recall return without changing any score; adk and page \
take none (for ADK's ranking with filters use --kind recall --mode adk). With --json the \
output is exactly the JSON the C function writes. Opens the store read-only.")]
    Search {
        #[command(flatten)]
        store: Store,
        #[command(flatten)]
        ns: Ns,
        /// Which search runs.
        #[arg(long, value_enum, default_value = "adk")]
        kind: Kind,
        /// Results wanted (keyword, page, hybrid, recall); the C function's default when omitted.
        #[arg(long)]
        limit: Option<u32>,
        /// Recall: which rankings (default adk_vectors).
        #[arg(long, value_enum)]
        mode: Option<Mode>,
        #[command(flatten)]
        filters: Filters,
        /// Hybrid and recall: the query vector, a JSON array of numbers.
        #[arg(long)]
        vector: Option<String>,
        /// Hybrid and recall: the semantic weight, 0 to 1.
        #[arg(long)]
        semantic_weight: Option<f64>,
        /// Hybrid and recall: embed the query text with `builtin` (the model mnem carries; the
        /// store's vectors must be its own) or CMD (run by `sh -c`), which reads one text per
        /// line as a JSON string on stdin and writes one JSON array of numbers per line on
        /// stdout.
        #[arg(long, value_name = "CMD")]
        embedder: Option<String>,
        /// Hybrid and recall: the model that made --vector, or whose vectors the --embedder
        /// command answers; needed when the namespace's vectors name their model.
        #[arg(long, value_name = "NAME")]
        vector_model: Option<String>,
        /// Print exactly the JSON the C function writes, instead of a table.
        #[arg(long)]
        json: bool,
        /// The query text.
        query: String,
    },
    /// Print episodes by id.
    #[command(long_about = "Print the visible episodes with the given UUIDs, as JSON \
({\"episodes\":[Episode|null...]}, null for an id without a visible episode) with --json, \
else as a table. Exit status 3 when any id has no visible episode. Opens the store read-only.")]
    Get {
        #[command(flatten)]
        store: Store,
        #[command(flatten)]
        ns: Ns,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Episode UUIDs.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Export a namespace, or the whole store, as JSON Lines on stdout.
    #[command(long_about = "Write the namespace given by --app and --user, or every namespace \
when both are omitted, to stdout as JSON Lines (docs/EXPORT.md): records with ids, revisions, \
times, expiry, metadata, content, vectors, and ADK buckets and order. `mnem import` reproduces \
the records and every search's answers. Opens the store read-only; streams from one snapshot.")]
    Export {
        #[command(flatten)]
        store: Store,
        /// Export only this namespace's app_name (with --user).
        #[arg(long, requires = "user")]
        app: Option<String>,
        /// Export only this namespace's user_id (with --app).
        #[arg(long, requires = "app")]
        user: Option<String>,
    },
    /// Import an export from stdin.
    #[command(long_about = "Read an export (mnem export) from stdin and write it into the store, \
which is created if missing. The whole input is checked first: a bad line (exit status 2, its \
number in the message), a truncated input or a namespace that already holds data leaves the \
store unchanged. Opens the store read-write.")]
    Import {
        #[command(flatten)]
        store: Store,
    },
    /// Forget a namespace: delete everything in it and erase it from the files.
    #[command(long_about = "Delete every record, ADK session, tombstone and index entry of the \
namespace and compact its key ranges so that its bytes are gone from the store's files \
(mnem_forget_namespace). Opens the store read-write.")]
    Forget {
        #[command(flatten)]
        store: Store,
        #[command(flatten)]
        ns: Ns,
    },
    /// Copy the store to a new directory (a consistent checkpoint).
    #[command(long_about = "Copy the store to DEST, a directory that must not exist, as a \
consistent RocksDB checkpoint (hard links on the same file system). The copy opens like the \
original. Opens the store read-write; from a process that holds the store open, use \
mnem_backup instead.")]
    Backup {
        #[command(flatten)]
        store: Store,
        /// The new directory.
        dest: String,
    },
    /// Verify every record and RocksDB checksum.
    #[command(long_about = "Read every key of the store with RocksDB's block checksums verified \
and parse every episode record. Prints the counts; exit status 4 on the first problem found, \
which is named. Opens the store read-only.")]
    Check {
        #[command(flatten)]
        store: Store,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Compact the store so deleted data leaves the files.
    #[command(long_about = "Rewrite every table file down to the last level: deleted episodes \
and overwritten revisions leave the disk. Opens the store read-write.")]
    Compact {
        #[command(flatten)]
        store: Store,
    },
}

/// A failure and its exit status.
struct Fail {
    code: u8,
    message: String,
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        let code = match e.status {
            Status::InvalidArgument => 2,
            Status::NotFound => 3,
            Status::Corruption => 4,
            Status::Busy => 5,
            Status::Incompatible => 6,
            Status::ReadOnly => 7,
            Status::EmbedderFailed => 8,
            _ => 1,
        };
        Fail { code, message: e.message }
    }
}

fn fail(code: u8, message: impl Into<String>) -> Fail {
    Fail { code, message: message.into() }
}

type Outcome = Result<(), Fail>;

fn open(path: &str, write: bool, create: bool) -> Result<Mnem, Fail> {
    if write {
        return open_writable(path, OpenOptions { create, ..OpenOptions::default() });
    }
    // Reading commands open a view: they work beside a process that has the store open.
    Ok(Mnem::open_view(on_disk(path)?, OpenOptions::default())?)
}

fn open_writable(path: &str, opts: OpenOptions) -> Result<Mnem, Fail> {
    Ok(Mnem::open(on_disk(path)?, opts)?)
}

/// The tool works on stores on disk only.
fn on_disk(path: &str) -> Result<&str, Fail> {
    if path == mnem::MEMORY_PATH {
        return Err(fail(2, "`:memory:` is not a store on disk"));
    }
    Ok(path)
}

fn progress(what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template("{spinner} {msg} {pos} {elapsed}").expect("a valid template"));
    bar.set_message(what.to_string());
    bar
}

fn stdout_write(bytes: &[u8]) -> Outcome {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|_| out.flush()).map_err(|e| fail(1, format!("writing to stdout: {e}")))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("mnem: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn run(cmd: Command) -> Outcome {
    match cmd {
        Command::Info { store, json } => info(&store.store, json),
        Command::Namespaces { store, json } => namespaces(&store.store, json),
        Command::Search {
            store,
            ns,
            kind,
            limit,
            mode,
            filters,
            vector,
            semantic_weight,
            embedder,
            vector_model,
            json,
            query,
        } => {
            let q = SearchArgs { kind, limit, mode, filters, vector, weight: semantic_weight, embedder, vector_model };
            search(&store.store, &ns, q, json, &query)
        }
        Command::Get { store, ns, json, ids } => get(&store.store, &ns, json, &ids),
        Command::Export { store, app, user } => export(&store.store, app.zip(user)),
        Command::Import { store } => import(&store.store),
        Command::Forget { store, ns } => {
            // The forget compacts the namespace's ranges itself; a compaction started by the
            // opening (of level-0 files a writer left behind) would delay it, then be redone.
            let opts = OpenOptions { compact_in_background: false, ..OpenOptions::default() };
            let m = open_writable(&store.store, opts)?;
            let f = m.forget_namespace(&Namespace::new(ns.app, ns.user))?;
            eprintln!("forgot {} episode records", f.episodes);
            Ok(())
        }
        Command::Backup { store, dest } => {
            open(&store.store, true, false)?.backup(&dest)?;
            eprintln!("backed up to {dest}");
            Ok(())
        }
        Command::Check { store, json } => check(&store.store, json),
        Command::Compact { store } => Ok(open(&store.store, true, false)?.compact()?),
    }
}

fn all_namespaces(m: &Mnem) -> Result<Vec<mnem::NamespaceInfo>, Fail> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = m.list_namespaces(after.as_ref(), 1000)?;
        all.extend(page.namespaces);
        match page.next_after {
            Some(a) => after = Some(a),
            None => return Ok(all),
        }
    }
}

fn info(path: &str, as_json: bool) -> Outcome {
    let m = open(path, false, false)?;
    let nss = all_namespaces(&m)?;
    let episodes: u64 = nss.iter().map(|n| n.episodes).sum();
    let stats: Value = serde_json::from_slice(&m.stats_json()).expect("stats are JSON");
    if as_json {
        let v = json!({"path": path, "format": mnem::FORMAT_VERSION, "namespaces": nss.len(), "episodes": episodes, "stats": stats});
        return stdout_write(format!("{v}\n").as_bytes());
    }
    let text = format!(
        "store       {path}\nformat      {}\nnamespaces  {}\nepisodes    {episodes} (not deleted)\ncache       {} bytes\n",
        stats["format"], nss.len(), stats["cache_bytes"]
    );
    stdout_write(text.as_bytes())
}

fn namespaces(path: &str, as_json: bool) -> Outcome {
    let m = open(path, false, false)?;
    let mut out = String::new();
    if !as_json {
        out.push_str(&format!("{:<24} {:<24} {:>10}\n", "APP", "USER", "EPISODES"));
    }
    for n in all_namespaces(&m)? {
        if as_json {
            let v = json!({"app_name": n.namespace.app_name, "user_id": n.namespace.user_id, "episodes": n.episodes});
            out.push_str(&format!("{v}\n"));
        } else {
            out.push_str(&format!("{:<24} {:<24} {:>10}\n", n.namespace.app_name, n.namespace.user_id, n.episodes));
        }
    }
    stdout_write(out.as_bytes())
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut t: String = flat.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// What `mnem search` was asked, beside the store, namespace and text.
struct SearchArgs {
    kind: Kind,
    limit: Option<u32>,
    mode: Option<Mode>,
    filters: Filters,
    vector: Option<String>,
    weight: Option<f64>,
    embedder: Option<String>,
    vector_model: Option<String>,
}

/// "--a", "--a and --b", "--a, --b and --c".
fn flag_list(flags: &[&str]) -> String {
    match flags {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The search's query JSON, after refusing the flags that do not apply to it.
fn search_query(args: &SearchArgs, query: &str) -> Result<Value, Fail> {
    let SearchArgs { kind, limit, mode, filters, vector, weight, embedder, vector_model } = args;
    let mut q = json!({"text": query});
    if let Some(l) = limit {
        q["limit"] = json!(l);
    }
    let semantic = matches!(kind, Kind::Hybrid | Kind::Recall);
    let vector_flags = vector.is_some() || weight.is_some() || embedder.is_some() || vector_model.is_some();
    if !semantic && vector_flags {
        return Err(fail(
            2,
            "--vector, --semantic-weight, --embedder and --vector-model apply to --kind hybrid and recall only",
        ));
    }
    if matches!(kind, Kind::Adk) && limit.is_some() {
        return Err(fail(2, "--limit does not apply to --kind adk (ADK returns at most 10)"));
    }
    if mode.is_some() && !matches!(kind, Kind::Recall) {
        return Err(fail(2, "--mode applies to --kind recall only"));
    }
    let given = filters.given();
    let verb = if given.len() == 1 { "does" } else { "do" };
    match kind {
        Kind::Adk if !given.is_empty() => {
            return Err(fail(
                2,
                format!(
                    "{} {verb} not apply to --kind adk: mnem_search takes no filters (--kind recall --mode adk \
                     is ADK's ranking with them)",
                    flag_list(&given)
                ),
            ))
        }
        Kind::Page if !given.is_empty() => {
            return Err(fail(
                2,
                format!("{} {verb} not apply to --kind page: mnem_lexical_page takes no filters", flag_list(&given)),
            ))
        }
        _ => {}
    }
    if let Some(m) = mode {
        if matches!(m, Mode::Adk) && filters.min_score.is_some() {
            return Err(fail(2, "--min-score does not apply to --mode adk, which has no scores"));
        }
        if matches!(m, Mode::Adk | Mode::Bm25) && vector_flags {
            return Err(fail(
                2,
                format!(
                    "--vector, --semantic-weight, --embedder and --vector-model do not apply to --mode {}, which \
                     uses no vectors",
                    m.name()
                ),
            ));
        }
        q["mode"] = json!(m.name());
    }
    for (flag, v) in [("--since", filters.since), ("--until", filters.until), ("--min-score", filters.min_score)] {
        if v.is_some_and(|v| !v.is_finite()) {
            return Err(fail(2, format!("{flag} must be a finite number")));
        }
    }
    if let (Some(s), Some(u)) = (filters.since, filters.until) {
        if s > u {
            return Err(fail(2, format!("--since ({s}) is after --until ({u})")));
        }
    }
    for (key, v) in [("session_id", &filters.session), ("author", &filters.author)] {
        if let Some(v) = v {
            q[key] = json!(v);
        }
    }
    for (key, v) in [("since", filters.since), ("until", filters.until), ("min_score", filters.min_score)] {
        if let Some(v) = v {
            q[key] = json!(v);
        }
    }
    if vector.is_some() && embedder.is_some() {
        return Err(fail(2, "give --vector or --embedder, not both"));
    }
    if vector_model.is_some() {
        match embedder.as_deref() {
            Some("builtin") => {
                return Err(fail(2, "--vector-model does not apply to --embedder builtin, which names its own model"))
            }
            Some(_) => {}
            None if vector.is_none() => {
                return Err(fail(2, "--vector-model names the model of --vector or --embedder"))
            }
            None => q["vector_model"] = json!(vector_model),
        }
    }
    if let Some(v) = &vector {
        q["vector"] = serde_json::from_str::<Value>(v).map_err(|e| fail(2, format!("--vector is not JSON: {e}")))?;
    }
    if let Some(w) = weight {
        q["semantic_weight"] = json!(w);
    }
    Ok(q)
}

fn search(path: &str, ns: &Ns, args: SearchArgs, as_json: bool, query: &str) -> Outcome {
    let q = search_query(&args, query)?;
    let SearchArgs { kind, embedder, vector_model, .. } = args;
    let m = open(path, false, false)?;
    let namespace = Namespace::new(&ns.app, &ns.user);
    match embedder.as_deref() {
        Some("builtin") => m.set_embedder(Some(mnem::embed::builtin::shared(None)?)),
        Some(cmd) => m.set_embedder(Some(Arc::new(CommandEmbedder::start(cmd, vector_model)?))),
        None => {}
    }
    let q = q.to_string();
    let mut out = Vec::new();
    match kind {
        Kind::Adk => out = m.search(&namespace, query)?,
        Kind::Keyword => {
            mnem::output::write_results(&mut out, &m.keyword_search(&namespace, &KeywordQuery::parse(&q)?)?)
        }
        Kind::Page => {
            mnem::output::write_page(&mut out, &m.search_memory_lexical(&namespace, &LexicalQuery::parse(&q)?)?)
        }
        Kind::Hybrid => {
            mnem::output::write_hybrid_results(&mut out, &m.hybrid_search(&namespace, &HybridQuery::parse(&q)?)?)
        }
        Kind::Recall => out = m.recall(&namespace, &RecallQuery::parse(&q)?)?,
    }
    if as_json {
        out.push(b'\n');
        return stdout_write(&out);
    }
    let v: Value = serde_json::from_slice(&out).expect("search output is JSON");
    let mut table = format!("{:>4} {:>10}  {:<36}  TEXT\n", "RANK", "SCORE", "ID");
    let rows: Vec<(String, String, String)> = match kind {
        Kind::Adk | Kind::Recall => v["memories"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let text: Vec<&str> =
                    r["content"]["parts"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect();
                (String::new(), r["id"].as_str().unwrap_or_default().to_string(), text.join(" "))
            })
            .collect(),
        _ => v[if matches!(kind, Kind::Page) { "hits" } else { "results" }]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                let score = r["score"].as_f64().map_or(String::new(), |s| format!("{s:.4}"));
                let rec = &r["record"];
                (
                    score,
                    rec["id"].as_str().unwrap_or_default().to_string(),
                    rec["primary"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
    };
    for (i, (score, id, text)) in rows.iter().enumerate() {
        table.push_str(&format!("{:>4} {:>10}  {:<36}  {}\n", i + 1, score, one_line(id, 36), one_line(text, 60)));
    }
    stdout_write(table.as_bytes())
}

fn get(path: &str, ns: &Ns, as_json: bool, ids: &[String]) -> Outcome {
    let m = open(path, false, false)?;
    let mut parsed = Vec::with_capacity(ids.len());
    for id in ids {
        parsed.push(uuid_arg(id)?);
    }
    let out = m.get_episodes(&Namespace::new(&ns.app, &ns.user), &parsed)?;
    let v: Value = serde_json::from_slice(&out).expect("episodes are JSON");
    let missing: Vec<&str> = ids
        .iter()
        .zip(v["episodes"].as_array().into_iter().flatten())
        .filter(|(_, e)| e.is_null())
        .map(|(i, _)| i.as_str())
        .collect();
    if as_json {
        let mut out = out;
        out.push(b'\n');
        stdout_write(&out)?;
    } else {
        let mut t = String::new();
        for e in v["episodes"].as_array().into_iter().flatten().filter(|e| !e.is_null()) {
            t.push_str(&format!(
                "{}  rev {}  {}  {}\n",
                e["id"].as_str().unwrap_or_default(),
                e["revision"],
                e["episode_type"].as_str().unwrap_or_default(),
                one_line(e["primary"].as_str().unwrap_or_default(), 60)
            ));
        }
        stdout_write(t.as_bytes())?;
    }
    if !missing.is_empty() {
        return Err(fail(3, format!("no visible episode with id {}", missing.join(", "))));
    }
    Ok(())
}

fn uuid_arg(s: &str) -> Result<uuid::Uuid, Fail> {
    uuid::Uuid::parse_str(s).map_err(|_| fail(2, format!("{s:?} is not a UUID")))
}

fn export(path: &str, only: Option<(String, String)>) -> Outcome {
    let m = open(path, false, false)?;
    let ns = only.map(|(a, u)| Namespace::new(a, u));
    let bar = progress("exporting episodes");
    let stdout = std::io::stdout().lock();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout);
    let t = m.export(ns.as_ref(), &mut out, &mut |n, _| bar.set_position(n))?;
    bar.finish_and_clear();
    eprintln!("exported {} namespaces, {} episode records", t.namespaces, t.episodes);
    Ok(())
}

fn import(path: &str) -> Outcome {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).map_err(|e| fail(2, format!("reading stdin: {e}")))?;
    let m = open(path, true, true)?;
    let bar = progress("importing episodes");
    let t = m.import(&input, &mut |n, _| bar.set_position(n))?;
    bar.finish_and_clear();
    eprintln!("imported {} namespaces, {} episode records", t.namespaces, t.episodes);
    Ok(())
}

fn check(path: &str, as_json: bool) -> Outcome {
    let m = open(path, false, false)?;
    let bar = progress("checking bytes");
    let r = m.check(&mut |b| bar.set_position(b));
    bar.finish_and_clear();
    if as_json {
        let mut out = r.to_json();
        out.push(b'\n');
        stdout_write(&out)?;
    } else {
        let t = format!(
            "keys        meta {}, episodes {}, adk {}, index {}\nbytes read  {}\nepisodes    {} records parsed\n",
            r.keys[0], r.keys[1], r.keys[2], r.keys[3], r.bytes, r.episodes
        );
        stdout_write(t.as_bytes())?;
    }
    match r.problem {
        None => Ok(()),
        Some(e) => {
            let code = if e.status == Status::Corruption { 4 } else { Fail::from(e.clone()).code };
            Err(fail(code, format!("check failed: {} ({})", e.message, e.status.name())))
        }
    }
}

/// An embedder that is a command the tool starts once (`sh -c CMD`) and talks to through
/// pipes: one text per line as a JSON string on its stdin (so newlines in a text cannot
/// split it), one JSON array of numbers per line back on its stdout. A model in any
/// language fits behind it.
struct CommandEmbedder {
    cmd: String,
    /// The model its vectors are from (--vector-model), when named.
    model: Option<String>,
    io: Mutex<(Child, ChildStdin, BufReader<ChildStdout>)>,
}

impl CommandEmbedder {
    fn start(cmd: &str, model: Option<String>) -> Result<CommandEmbedder, Fail> {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| fail(2, format!("--embedder: cannot start {cmd:?}: {e}")))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(CommandEmbedder { cmd: cmd.to_string(), model, io: Mutex::new((child, stdin, stdout)) })
    }
}

impl EmbeddingProvider for CommandEmbedder {
    fn embed(&self, text: &str) -> mnem::Result<Vec<f32>> {
        let failed = |what: String| Error::new(Status::EmbedderFailed, format!("--embedder {:?}: {what}", self.cmd));
        let mut io = self.io.lock().map_err(|_| failed("an earlier call panicked".into()))?;
        let (_, stdin, stdout) = &mut *io;
        let line = serde_json::to_string(text).expect("a string is JSON");
        writeln!(stdin, "{line}").and_then(|()| stdin.flush()).map_err(|e| failed(format!("cannot write: {e}")))?;
        let mut answer = String::new();
        match stdout.read_line(&mut answer) {
            Ok(0) => Err(failed("exited without answering".into())),
            Ok(_) => serde_json::from_str::<Vec<f32>>(answer.trim_end())
                .map_err(|e| failed(format!("answered {:?}, not a JSON array of numbers: {e}", one_line(&answer, 60)))),
            Err(e) => Err(failed(format!("cannot read: {e}"))),
        }
    }

    fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }
}

impl Drop for CommandEmbedder {
    fn drop(&mut self) {
        if let Ok(mut io) = self.io.lock() {
            let _ = io.0.kill();
            let _ = io.0.wait();
        }
    }
}
