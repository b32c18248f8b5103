//! The PostgreSQL backend: a store is one schema of a database, shared by any number of
//! processes on any number of machines.
//!
//! Each keyspace is a table `(ns bytea, key bytea, value bytea)` with primary key `(ns, key)`,
//! `ns` being the namespace prefix the key starts with (`keys::namespace_len`; empty for
//! `meta`), so every table can be distributed by namespace (Citus) and every per-namespace
//! statement filters on it. Because namespace prefixes are prefix-free, `(ns, key)` order is
//! key order. docs/FORMAT.md lists the tables.
//!
//! - A snapshot is a `REPEATABLE READ READ ONLY` transaction on a pooled connection, begun at
//!   its first read; `multi_get` is one statement, a cursor reads pages of growing size.
//!   `prefetch` reads the keys a write will read, whatever it writes, in one round trip (one
//!   statement per table, pipelined), and the view answers them from memory after.
//! - A write is one transaction: its ops collapsed to the last change of each key, then one
//!   statement per kind and keyspace (arrays bound as parameters). The postings it adds are
//!   inserted as new rows, without the upsert's search of the primary key (see `changes`).
//!   Its BEGIN, statements, sequence bumps and COMMIT go to the server together
//!   (`Session::pipeline`): one round trip, where each used to wait for its answer. A
//!   statement that fails aborts the transaction, the ones after it fail for it, and the
//!   COMMIT rolls it back; the write's error is the first failure.
//! - Each pooled session prepares a statement the first time it runs it (`session`), and is
//!   told to plan with the primary key alone (`open`).
//! - `lock_namespace` takes a session advisory lock on a connection of its own, on which the
//!   write then commits, and which sends the unlock without waiting for its answer: writers
//!   of one namespace serialize across processes, writers of different namespaces do not
//!   wait for each other, and a snapshot taken under the lock sees every earlier write of the
//!   namespace. If that connection dies the server releases the lock, and the commit on it
//!   fails too, so no write commits unlocked.
//! - `write_sequence` reads a sequence bumped in each write's transaction and again after its
//!   commit: an answer kept for a retry (`ffi`) is never served after a write acknowledged
//!   anywhere. A reader may count the first bump before the commit is visible to it; the
//!   second bump, after the commit, tells it again. A write refused by a read-only server is
//!   refused by its first bump, whole; one whose transaction began before the server turned
//!   read-only commits, and is acknowledged even if the second bump is then refused (its
//!   first bump already moved the sequence, so only a reader that counted it in that
//!   instant could keep a stale answer).
//!
//! Every statement binds its values; the only text put into statements is the schema name,
//! held to `[a-z_][a-z0-9_]*` (`config`).

mod config;
mod session;

use crate::codec::{len32, Reader};
use crate::error::{Error, Result, Status};
use crate::keys;
use crate::store::runs::RunOps;
use crate::store::{
    Backend, BackendStats, BatchOps, Cf, Cursor, Extent, KeyRange, NamespaceLock, Op, OpenOptions, View, Visit,
};
use config::{PgConfig, Verify};
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;
// Every statement names its parameters' types (`session` prepares it with them).
use postgres_openssl::MakeTlsConnector;
use session::{ConnectError, Manager, Params, Request, Session};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use tokio_postgres::types::{ToSql, Type};

type Pool = r2d2::Pool<Manager>;
type Conn = r2d2::PooledConnection<Manager>;

/// Rows bound in one statement of a write (bounds its parameter arrays).
const ROWS_PER_STATEMENT: usize = 5_000;
/// A cursor's first page, and its largest (pages double between them).
const FIRST_PAGE: i64 = 256;
const LAST_PAGE: i64 = 4_096;
/// The pages of a reader of whole lists (`Extent::Whole`): a round trip costs more than
/// reading rows ahead that are read anyway, but the rows a statement holds are bounded.
const WHOLE_PAGE: i64 = 16_384;
const WHOLE_ROWS: i64 = 65_536;
/// The page after one of `page` rows: pages double up to `LAST_PAGE`; a reader of whole
/// lists keeps its longer pages.
fn next_page(page: i64) -> i64 {
    page.max((page * 2).min(LAST_PAGE))
}

const BYTEA: Type = Type::BYTEA;
const BYTEA_ARRAY: Type = Type::BYTEA_ARRAY;
const INT8: Type = Type::INT8;

fn table(cf: Cf) -> &'static str {
    match cf {
        Cf::Meta => "meta",
        Cf::Episodes => "episodes",
        Cf::Adk => "adk",
        Cf::Index => "index_keys",
    }
}

/// The namespace column of `key` in `cf`.
fn ns_of(cf: Cf, key: &[u8]) -> &[u8] {
    match cf {
        Cf::Meta => &[],
        _ => keys::namespace_len(key).map_or(&[][..], |n| &key[..n]),
    }
}

/// The status a client error becomes: what the caller can do about it decides.
fn status_of(e: &tokio_postgres::Error) -> Status {
    let Some(db) = e.as_db_error() else {
        // The connection closed or could not be made: the server is down or failing over.
        return Status::Busy;
    };
    let code = db.code();
    if *code == SqlState::READ_ONLY_SQL_TRANSACTION {
        Status::ReadOnly
    } else if *code == SqlState::QUERY_CANCELED
        || *code == SqlState::T_R_SERIALIZATION_FAILURE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CRASH_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
        || *code == SqlState::TOO_MANY_CONNECTIONS
        || code.code().starts_with("08")
    {
        Status::Busy
    } else if code.code().starts_with("28") {
        Status::InvalidArgument
    } else if code.code().starts_with("42") || code.code().starts_with("XX") {
        Status::Corruption
    } else {
        Status::Io
    }
}

/// The session behind a connection is gone: closed by the server (a restart, a failover, a
/// terminated backend: its last word is 57P01 or 57P02) or by the network (an I/O error). Not
/// a client-side error such as a value that does not convert, which no retry mends.
fn session_gone(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        Some(db) => *db.code() == SqlState::ADMIN_SHUTDOWN || *db.code() == SqlState::CRASH_SHUTDOWN,
        None => e.is_closed() || std::error::Error::source(e).is_some_and(|c| c.is::<std::io::Error>()),
    }
}

fn pg_error(e: tokio_postgres::Error) -> Error {
    let status = status_of(&e);
    let hint = match status {
        Status::Busy => " (retry: the server is busy, restarting or failing over)",
        Status::ReadOnly => " (the server refuses writes)",
        _ => "",
    };
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.code().code(), db.message()),
        None => {
            // The client's own text, and what caused it (an I/O or TLS error).
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            text
        }
    };
    Error::new(status, format!("postgresql: {text}{hint}"))
}

fn is_unique_violation(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| *db.code() == SqlState::UNIQUE_VIOLATION)
}

fn pool_error(e: r2d2::Error) -> Error {
    Error::new(Status::Busy, format!("postgresql: no connection to the server: {e} (retry)"))
}

struct PgBackend {
    pool: Pool,
    /// How the pool connects: used once more when it cannot, for the server's own reason.
    client: tokio_postgres::Config,
    tls: MakeTlsConnector,
    schema: String,
    shown: String,
    block_cache_bytes: usize,
}

fn tls(c: &PgConfig) -> Result<MakeTlsConnector> {
    let bad = |e: openssl::error::ErrorStack| Error::invalid(format!("PostgreSQL TLS setup: {e}"));
    let mut b = SslConnector::builder(SslMethod::tls_client()).map_err(bad)?;
    match c.verify {
        Verify::None => b.set_verify(SslVerifyMode::NONE),
        Verify::Ca | Verify::Full => {
            let ca = c.root_cert.as_ref().expect("checked by config::parse");
            b.set_ca_file(ca).map_err(|e| Error::invalid(format!("PostgreSQL `sslrootcert` {}: {e}", ca.display())))?;
            b.set_verify(SslVerifyMode::PEER);
        }
    }
    let mut connector = MakeTlsConnector::new(b.build());
    let verify = c.verify;
    connector.set_callback(move |cfg, _| {
        // libpq: `require` and `verify-ca` do not check the host name; `verify-full` does.
        cfg.set_verify_hostname(verify == Verify::Full);
        Ok(())
    });
    Ok(connector)
}

pub(crate) fn open(uri: &str, opts: OpenOptions) -> Result<Box<dyn Backend>> {
    let c = config::parse(uri)?;
    let mut client = c.client.clone();
    // Every session: a bound on each statement; and, since `session` keeps statements
    // prepared, plans that stay right as tables grow. Every statement of mnem reads or
    // changes keys through the primary key, so its plans are index scans and nested loops
    // over them; a plan cached while a table was small (a hash join over a sequential scan)
    // once made the writers' reads of a growing table take 5 ms and more (BENCHMARKS.md). Without
    // sequential scans a plan's estimated cost can pass `jit_above_cost`, and compiling
    // takes milliseconds that statements this short never win back: no JIT. For the same
    // reason one generic plan serves every call of a prepared statement: by default the
    // server plans each of its first calls again for the values bound, and keeps doing so
    // when the generic plan's estimate looks worse, which a search's statements, bound to
    // arrays, did on every call (0.1-0.2 ms of planning per statement in the server's log).
    // The URI's own `options` come after, so that they win.
    let own = client.get_options().map(|o| format!(" {o}")).unwrap_or_default();
    client.options(format!(
        "-c statement_timeout={} -c lock_timeout={} -c enable_seqscan=off -c enable_hashjoin=off \
         -c enable_mergejoin=off -c jit=off -c plan_cache_mode=force_generic_plan{own}",
        c.statement_timeout_ms, c.statement_timeout_ms
    ));
    let tls = tls(&c)?;
    let manager = Manager { config: client.clone(), tls: tls.clone() };
    let pool = r2d2::Pool::builder()
        .max_size(c.pool_size)
        .min_idle(Some(0))
        .connection_timeout(c.pool_timeout)
        .test_on_check_out(false)
        .build_unchecked(manager);
    let b =
        PgBackend { pool, client, tls, schema: c.schema, shown: c.shown, block_cache_bytes: opts.block_cache_bytes() };
    b.prepare(opts)?;
    Ok(Box::new(b))
}

impl PgBackend {
    fn conn(&self) -> Result<Conn> {
        self.pool.get().map_err(|e| {
            // The pool says only that it timed out: one direct attempt gives the reason
            // (authentication, TLS, an unknown database, a refused connection).
            let why = match Session::connect(&self.client, self.tls.clone()) {
                Err(ConnectError::Server(direct)) => pg_error(direct),
                Err(e @ ConnectError::Runtime(_)) => Error::new(Status::Io, format!("postgresql: {e}")),
                Ok(_) => pool_error(e),
            };
            why.context(&self.shown)
        })
    }

    fn t(&self, cf: Cf) -> String {
        format!("{}.{}", self.schema, table(cf))
    }

    /// The statement that reads the write sequence (parsed by `sequence_of`).
    fn sequence_sql(&self) -> String {
        format!("SELECT last_value, is_called FROM {}.write_sequence", self.schema)
    }

    /// A pooled connection on which `first` succeeded. An idle connection the server has
    /// closed (a restart, a failover, a killed session) is only found out by using it, so a
    /// `first` that fails because its connection is gone is tried again on another, as many
    /// times as the pool may hold connections: nothing ran on a closed session. Only for
    /// statements that change nothing lasting (BEGIN, reads, taking a session lock). When
    /// `first` fails otherwise, whatever transaction it began is rolled back before the
    /// connection goes back to the pool.
    fn conn_with<T>(
        &self,
        mut first: impl FnMut(&mut Conn) -> std::result::Result<T, tokio_postgres::Error>,
    ) -> Result<(Conn, T)> {
        let mut tries = 0;
        loop {
            let mut c = self.conn()?;
            match first(&mut c) {
                Ok(v) => return Ok((c, v)),
                Err(e) if session_gone(&e) && tries < self.pool.max_size() => tries += 1,
                Err(e) => {
                    let _ = c.batch_execute("ROLLBACK");
                    return Err(pg_error(e));
                }
            }
        }
    }

    /// Find the store's tables, or (create) make them, once, whoever else opens at once.
    fn prepare(&self, opts: OpenOptions) -> Result<()> {
        let mut conn = self.conn()?;
        let exists: bool = conn
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[(&format!("{}.episodes", self.schema), Type::TEXT)])
            .map_err(pg_error)?
            .get(0);
        if exists {
            return Ok(());
        }
        if !opts.create {
            return Err(Error::new(
                Status::NotFound,
                format!("no store at {:?} (pass MNEM_OPEN_CREATE to create one)", self.shown),
            ));
        }
        let mut tx = conn.transaction().map_err(pg_error)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('mnem create ' || $1, 0))",
            &[(&self.schema, Type::TEXT)],
        )
        .map_err(pg_error)?;
        let mut ddl = format!("CREATE SCHEMA IF NOT EXISTS {s};", s = self.schema);
        for cf in Cf::ALL {
            // The index's rows are postings, read by the thousand in key order and their values
            // small or empty: a key that includes the value lets those reads be index-only
            // scans once autovacuum has marked the pages all-visible (half the time of a
            // search over long posting lists).
            let include = if cf == Cf::Index { " INCLUDE (value)" } else { "" };
            ddl.push_str(&format!(
                "CREATE TABLE IF NOT EXISTS {t} (ns bytea NOT NULL, key bytea NOT NULL, value bytea NOT NULL, \
                 PRIMARY KEY (ns, key){include});",
                t = self.t(cf)
            ));
        }
        ddl.push_str(&format!("CREATE SEQUENCE IF NOT EXISTS {s}.write_sequence;", s = self.schema));
        tx.batch_execute(&ddl).map_err(pg_error)?;
        tx.commit().map_err(pg_error)
    }

    /// The statements that apply `ops` and `postings`: the last change of each key, after
    /// the range deletes (which remove the point changes before them that they cover).
    ///
    /// `fresh`: a posting the batch puts without changing it before (in its ops or its run)
    /// is inserted with a plain INSERT, not an upsert. The indexes delete a posting before
    /// they put it again, so such a key is new; an upsert would search the primary key for it
    /// first, which is a third of the server's work of an ingest. Should a key exist all the
    /// same, the INSERT fails with a unique violation, the transaction rolls back, and the
    /// batch is applied again without `fresh` (`write_on`).
    fn changes<'a>(&self, ops: &'a BatchOps, postings: Option<&[u8]>, fresh: bool) -> Result<Changes<'a>> {
        let mut out = Changes::default();
        let mut point: [BTreeMap<Vec<u8>, Option<Vec<u8>>>; 4] = Default::default();
        for op in ops.iter() {
            match op {
                Op::Put(cf, k, v) => {
                    point[cf as usize].insert(k.to_vec(), Some(v.to_vec()));
                }
                Op::Delete(cf, k) => {
                    point[cf as usize].insert(k.to_vec(), None);
                }
                Op::DeleteRange(cf, from, to) => {
                    point[cf as usize].retain(|k, _| !(k.as_slice() >= from && k.as_slice() < to));
                    let ns = ns_of(cf, from);
                    let within = keys::prefix_successor(ns).is_some_and(|end| to <= end.as_slice());
                    if !ns.is_empty() && within {
                        let sql = format!("DELETE FROM {} WHERE ns = $1 AND key >= $2 AND key < $3", self.t(cf));
                        out.ranges.push((sql, vec![ns, from, to]));
                    } else {
                        let sql = format!("DELETE FROM {} WHERE key >= $1 AND key < $2", self.t(cf));
                        out.ranges.push((sql, vec![from, to]));
                    }
                }
                Op::Clear(cf) => {
                    point[cf as usize].clear();
                    out.ranges.push((format!("DELETE FROM {}", self.t(cf)), Vec::new()));
                }
            }
        }
        let mut new_keys: HashSet<Vec<u8>> = HashSet::new();
        if let Some(run) = postings {
            let index = &mut point[Cf::Index as usize];
            for op in RunOps::new(run) {
                let (k, v) = op?;
                let changed_before = index.insert(k.to_vec(), v.map(<[u8]>::to_vec)).is_some();
                if changed_before {
                    new_keys.remove(k);
                } else if fresh && v.is_some() {
                    new_keys.insert(k.to_vec());
                }
            }
        }
        for cf in Cf::ALL {
            let changes = std::mem::take(&mut point[cf as usize]);
            let (puts, dels): (Vec<_>, Vec<_>) = changes.into_iter().partition(|(_, v)| v.is_some());
            let puts = puts.into_iter().map(|(k, v)| (k, v.expect("a put")));
            let (inserts, upserts) = puts.partition(|(k, _)| cf == Cf::Index && new_keys.contains(k));
            out.tables.push(TableChanges { cf, deletes: dels.into_iter().map(|(k, _)| k).collect(), inserts, upserts });
        }
        Ok(out)
    }

    /// One write transaction on `conn`, then the write sequence moves on. Every statement of
    /// it goes to the server at once (`Session::pipeline`): one round trip.
    fn write_on(&self, conn: &mut Conn, ops: &BatchOps, postings: Option<&[u8]>) -> Result<()> {
        match self.try_write(conn, ops, postings, true)? {
            // A posting thought new was there (see `changes`): nothing of the first attempt
            // stayed (its COMMIT rolled it back); every put is an upsert this time.
            Err(e) if is_unique_violation(&e) => self.try_write(conn, ops, postings, false)?,
            r => r,
        }
        .map_err(pg_error)
    }

    fn try_write(
        &self,
        conn: &mut Conn,
        ops: &BatchOps,
        postings: Option<&[u8]>,
        fresh: bool,
    ) -> Result<std::result::Result<(), tokio_postgres::Error>> {
        let changes = self.changes(ops, postings, fresh)?;
        let mut statements: Vec<(String, Vec<Arg<'_>>)> = Vec::new();
        for (sql, args) in &changes.ranges {
            statements.push((sql.clone(), args.iter().map(|a| Arg::One(a)).collect()));
        }
        for tc in &changes.tables {
            let t = self.t(tc.cf);
            let del_sql = format!(
                "DELETE FROM {t} USING unnest($1::bytea[], $2::bytea[]) AS d(ns, key) \
                 WHERE {t}.ns = d.ns AND {t}.key = d.key"
            );
            for chunk in tc.deletes.chunks(ROWS_PER_STATEMENT) {
                let ns = chunk.iter().map(|k| ns_of(tc.cf, k)).collect();
                let ks = chunk.iter().map(Vec::as_slice).collect();
                statements.push((del_sql.clone(), vec![Arg::Many(ns), Arg::Many(ks)]));
            }
            let insert_sql =
                format!("INSERT INTO {t} (ns, key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])");
            let upsert_sql = format!("{insert_sql} ON CONFLICT (ns, key) DO UPDATE SET value = EXCLUDED.value");
            for (sql, rows) in [(&insert_sql, &tc.inserts), (&upsert_sql, &tc.upserts)] {
                for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                    let ns = chunk.iter().map(|(k, _)| ns_of(tc.cf, k)).collect();
                    let ks = chunk.iter().map(|(k, _)| k.as_slice()).collect();
                    let vs = chunk.iter().map(|(_, v)| v.as_slice()).collect();
                    statements.push((sql.clone(), vec![Arg::Many(ns), Arg::Many(ks), Arg::Many(vs)]));
                }
            }
        }
        let params: Vec<Vec<(&(dyn ToSql + Sync), Type)>> = statements
            .iter()
            .map(|(_, args)| {
                args.iter()
                    .map(|a| match a {
                        Arg::One(v) => (v as &(dyn ToSql + Sync), BYTEA),
                        Arg::Many(v) => (v as &(dyn ToSql + Sync), BYTEA_ARRAY),
                    })
                    .collect()
            })
            .collect();
        // The write sequence moves in the transaction and again after it (the module's
        // documentation says why). Should the server turn read-only between the commit and
        // the second, the write committed all the same: it is acknowledged, not refused.
        let bump = format!("SELECT nextval('{}.write_sequence')", self.schema);
        let mut requests = vec![Request::Text("BEGIN")];
        requests.extend(statements.iter().zip(&params).map(|((sql, _), p)| Request::Prepared(sql, p)));
        requests.extend([Request::Prepared(&bump, &[]), Request::Text("COMMIT"), Request::Prepared(&bump, &[])]);
        let answers = match conn.pipeline(&requests) {
            Ok(answers) => answers,
            Err(e) => return Ok(Err(e)),
        };
        // The first failure is the write's (the ones after it failed for it, and the COMMIT
        // rolled the transaction back); the last bump's is ignored.
        Ok(answers.into_iter().take(requests.len() - 1).try_for_each(|a| a.map(drop)))
    }
}

/// A write's statements (`PgBackend::changes`).
#[derive(Default)]
struct Changes<'a> {
    /// Range deletes and clears, in the write's order: statements and their values.
    ranges: Vec<(String, Vec<&'a [u8]>)>,
    tables: Vec<TableChanges>,
}

/// The point changes of one table: keys deleted, rows inserted as new, rows upserted.
struct TableChanges {
    cf: Cf,
    deletes: Vec<Vec<u8>>,
    inserts: Vec<(Vec<u8>, Vec<u8>)>,
    upserts: Vec<(Vec<u8>, Vec<u8>)>,
}

/// A parameter of a write's statement: one value, or an array.
enum Arg<'a> {
    One(&'a [u8]),
    Many(Vec<&'a [u8]>),
}

impl Backend for PgBackend {
    fn recover(&mut self) -> Result<()> {
        Ok(())
    }

    fn snapshot(&self) -> Result<Box<dyn View + '_>> {
        Ok(Box::new(PgView::new(self)))
    }

    fn snapshot_without_postings(&self) -> Box<dyn View + '_> {
        Box::new(PgView::new(self))
    }

    fn write(&self, ops: BatchOps, postings: Option<Vec<u8>>) -> Result<()> {
        let mut conn = self.conn()?;
        self.write_on(&mut conn, &ops, postings.as_deref())
    }

    fn lock_namespace(&self, prefix: &[u8]) -> Result<Box<dyn NamespaceLock + '_>> {
        let key = lock_key(&self.schema, prefix);
        let sql = format!("SELECT pg_advisory_lock({LOCK_ID})");
        let (conn, _) = self.conn_with(|c| c.execute(&sql, &[(&key, BYTEA)]))?;
        Ok(Box::new(PgLock { backend: self, conn: RefCell::new(Some(conn)), key }))
    }

    fn settle(&self) -> Result<()> {
        Ok(())
    }

    fn set_postings_limit(&self, _bytes: usize) {}

    fn write_sequence(&self) -> u64 {
        let sql = self.sequence_sql();
        match self.conn_with(|c| c.query_one(&sql, &[])).ok().and_then(|(_, row)| sequence_of(&row)) {
            Some(v) => v,
            // Unknown: a number no earlier call saw, so nothing kept is reused.
            None => u64::MAX - (crate::store::now_ms() as u64),
        }
    }

    fn flush(&self) -> Result<()> {
        // A commit returns once it is as durable as the server's `synchronous_commit` and
        // `synchronous_standby_names` make it (README): nothing is left to flush here.
        Ok(())
    }

    fn erase(&self, _ranges: &[KeyRange<'_>]) -> Result<()> {
        // Deleted rows leave the tables' pages at VACUUM; the write-ahead log and base
        // backups keep them until they are recycled (SECURITY.md).
        let mut conn = self.conn()?;
        let tables: Vec<String> = Cf::ALL.iter().map(|&cf| self.t(cf)).collect();
        conn.batch_execute(&format!("VACUUM {}", tables.join(", "))).map_err(pg_error)
    }

    fn approximate_bytes(&self, cf: Cf, from: &[u8], to: &[u8]) -> u64 {
        let Ok(mut conn) = self.conn() else { return 0 };
        let sql = format!(
            "SELECT coalesce(sum(pg_column_size(key) + pg_column_size(value)), 0)::bigint FROM {} \
             WHERE ns = $1 AND key >= $2 AND key < $3",
            self.t(cf)
        );
        conn.query_one(&sql, &[(&ns_of(cf, from), BYTEA), (&from, BYTEA), (&to, BYTEA)])
            .map_or(0, |r| r.get::<_, i64>(0) as u64)
    }

    fn backup(&self, _dest: &str) -> Result<()> {
        Err(Error::invalid(
            "a PostgreSQL store is backed up by the server (pg_dump, base backups) or copied with mnem_export",
        ))
    }

    fn verify(&self, cf: Cf, visit: &mut Visit<'_>) -> Result<()> {
        let view = PgView::new(self);
        let mut c = view.cursor(cf, &[]);
        c.seek(&[]);
        while let Some((k, v)) = c.current() {
            visit(k, v)?;
            c.next();
        }
        c.status()
    }

    fn stats(&self) -> BackendStats {
        // The budget stays the share `cache_bytes` gives the storage, as on disk; the
        // server's shared buffers do the caching, so none of it is used here.
        BackendStats { block_cache_capacity: self.block_cache_bytes, ..BackendStats::default() }
    }

    fn is_in_memory(&self) -> bool {
        false
    }

    fn is_shared(&self) -> bool {
        true
    }
}

/// The write sequence from a row of `sequence_sql`: 0 until the first write bumps it.
fn sequence_of(row: &Row) -> Option<u64> {
    let value: i64 = row.try_get(0).ok()?;
    let called: bool = row.try_get(1).ok()?;
    Some(if called { value as u64 } else { 0 })
}

/// The bytes whose digest (64 bits of md5, computed by the server, so the same for every
/// client) names the advisory lock of a namespace of the store in `schema`.
fn lock_key(schema: &str, prefix: &[u8]) -> Vec<u8> {
    [schema.as_bytes(), b"\0", prefix].concat()
}

const LOCK_ID: &str = "('x' || left(md5($1::bytea), 16))::bit(64)::bigint";

struct PgLock<'b> {
    backend: &'b PgBackend,
    conn: RefCell<Option<Conn>>,
    key: Vec<u8>,
}

impl NamespaceLock for PgLock<'_> {
    fn write(&self, ops: BatchOps, postings: Option<Vec<u8>>) -> Result<()> {
        let mut conn = self.conn.borrow_mut();
        let conn = conn.as_mut().expect("held until drop");
        self.backend.write_on(conn, &ops, postings.as_deref())
    }
}

impl Drop for PgLock<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.get_mut().take() {
            // Sent without waiting for its answer: the next writer of the namespace, waiting
            // on the server, has the lock as soon as the server reads this. An unlock that
            // fails at the server fails because the session is gone, and the lock with it.
            let unlock = format!("SELECT pg_advisory_unlock({LOCK_ID})");
            if conn.send_unanswered(&Request::Prepared(&unlock, &[(&self.key, BYTEA)])).is_err() {
                // A pooled session must not keep the lock for its next user: release every
                // advisory lock it holds (if this fails too, the session is broken and the
                // server released them with it; the pool drops a closed connection).
                let _ = conn.batch_execute("SELECT pg_advisory_unlock_all()");
            }
        }
    }
}

const BEGIN_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// The values read ahead of one keyspace (`None`: no such key).
type ReadAhead = HashMap<Vec<u8>, Option<Vec<u8>>>;

/// A consistent view: one read-only repeatable-read transaction, begun at the first read.
struct PgView<'b> {
    backend: &'b PgBackend,
    conn: RefCell<Option<Conn>>,
    /// What `prefetch` read, by keyspace: the snapshot never changes, so it stays true.
    ahead: RefCell<[ReadAhead; 4]>,
}

impl<'b> PgView<'b> {
    fn new(backend: &'b PgBackend) -> PgView<'b> {
        PgView { backend, conn: RefCell::new(None), ahead: RefCell::default() }
    }
}

impl PgView<'_> {
    /// The rows of the prepared statement `sql`, read in the view's snapshot.
    fn rows(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        Ok(self.reads(&[Request::Prepared(sql, params)])?.pop().expect("one answer"))
    }

    /// The rows of each prepared statement of `reads`, read in the view's snapshot, all in
    /// one round trip. The first read begins the snapshot in the same round trip.
    fn reads(&self, reads: &[Request<'_>]) -> Result<Vec<Vec<Row>>> {
        // The first failure is the read's.
        let answers = |c: &mut Conn, requests: &[Request<'_>]| {
            c.pipeline(requests)?.into_iter().collect::<std::result::Result<Vec<_>, _>>()
        };
        let mut slot = self.conn.borrow_mut();
        if let Some(c) = slot.as_mut() {
            return answers(c, reads).map_err(pg_error);
        }
        // The write sequence, when it is wanted, is read in a statement of its own (its own
        // transaction, ended before the snapshot's begins, so that the snapshot holds every
        // write it counts), sent with the BEGIN and the first reads: one round trip.
        let wanted = crate::store::sequence_wanted();
        let sequence = self.backend.sequence_sql();
        let mut requests = Vec::with_capacity(reads.len() + 2);
        if wanted {
            requests.push(Request::Prepared(&sequence, &[]));
        }
        requests.push(Request::Text(BEGIN_READ));
        requests.extend(reads.iter().map(Request::clone));
        let (c, mut got) = self.backend.conn_with(|c| answers(c, &requests))?;
        let rows = got.split_off(got.len() - reads.len());
        if wanted {
            match got.first().and_then(|rows| rows.first()).and_then(sequence_of) {
                Some(v) => crate::store::note_sequence(v),
                None => return Err(Error::corruption("postgresql: the write sequence reads as no number")),
            }
        }
        *slot = Some(c);
        Ok(rows)
    }

    /// The statement that reads many keys of `cf` (`multi_get`), its rows `(ordinal, value)`.
    fn multi_get_sql(&self, cf: Cf) -> String {
        let t = self.backend.t(cf);
        format!(
            "SELECT k.i, {t}.value FROM unnest($1::bytea[], $2::bytea[]) WITH ORDINALITY AS k(ns, key, i) \
             JOIN {t} ON {t}.ns = k.ns AND {t}.key = k.key"
        )
    }

    /// The answers of `multi_get_sql`'s rows, in the keys' order.
    fn found(rows: Vec<Row>, n: usize) -> Vec<Option<Vec<u8>>> {
        let mut out = vec![None; n];
        for r in rows {
            let i: i64 = r.get(0);
            out[(i - 1) as usize] = Some(r.get::<_, Vec<u8>>(1));
        }
        out
    }

    /// Up to `limit` rows of `cf` from `start` (inclusive), below `upper`, in key order.
    fn page(&self, cf: Cf, start: &[u8], upper: Option<&[u8]>, limit: i64) -> Result<Page> {
        let t = self.backend.t(cf);
        let ns = ns_of(cf, start);
        // Within one namespace when the bounds are: the common case, and the one statement
        // a distributed table routes to one shard.
        let one_ns =
            !ns.is_empty() && upper.is_some_and(|u| keys::prefix_successor(ns).is_some_and(|e| u <= e.as_slice()));
        let rows = if one_ns {
            let sql =
                format!("SELECT key, value FROM {t} WHERE ns = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4");
            self.rows(&sql, &[(&ns, BYTEA), (&start, BYTEA), (&upper.expect("one_ns"), BYTEA), (&limit, INT8)])
        } else {
            // `(ns, key) >= (ns of start, start)` lets the primary key's order answer.
            let lower_ns: &[u8] = if ns.is_empty() { start } else { ns };
            let sql = format!(
                "SELECT key, value FROM {t} WHERE (ns, key) >= ($1, $2) AND key >= $2 AND ($3::bytea IS NULL OR key < $3) \
                 ORDER BY ns, key LIMIT $4"
            );
            self.rows(&sql, &[(&lower_ns, BYTEA), (&start, BYTEA), (&upper, BYTEA), (&limit, INT8)])
        }?;
        let mut page = Page::default();
        for r in &rows {
            page.push(&[r.get::<_, &[u8]>(0)], r.get(1));
        }
        Ok(page)
    }
}

/// The rows of a cursor's page, every key and value in one buffer: a search reads hundreds
/// of postings, and an allocation for each cost more than reading it.
#[derive(Default)]
struct Page {
    bytes: Vec<u8>,
    /// Where each row's key starts, the key's length, the value's length (after the key).
    rows: Vec<(usize, u32, u32)>,
}

impl Page {
    /// Add a row whose key is `key`'s parts joined.
    fn push(&mut self, key: &[&[u8]], value: &[u8]) {
        let start = self.bytes.len();
        for part in key {
            self.bytes.extend_from_slice(part);
        }
        let key_len = self.bytes.len() - start;
        self.bytes.extend_from_slice(value);
        self.rows.push((start, len32(key_len), len32(value.len())));
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(start, k, v) = self.rows.get(i)?;
        let key_end = start + k as usize;
        Some((&self.bytes[start..key_end], &self.bytes[key_end..key_end + v as usize]))
    }

    /// The key of a row of `bytes`.
    fn key_of<'b>(bytes: &'b [u8], &(start, k, _): &(usize, u32, u32)) -> &'b [u8] {
        &bytes[start..start + k as usize]
    }

    fn last_key(&self) -> Option<&[u8]> {
        self.rows.last().map(|r| Page::key_of(&self.bytes, r))
    }

    /// The first row whose key is at or after `target`.
    fn seek(&self, target: &[u8]) -> usize {
        self.rows.partition_point(|r| Page::key_of(&self.bytes, r) < target)
    }

    /// Put the rows in key order (they come in it from every plan seen so far): each row
    /// says where its bytes are, so only the rows move.
    fn sort(&mut self) {
        let bytes = &self.bytes;
        if !self.rows.is_sorted_by(|a, b| Page::key_of(bytes, a) <= Page::key_of(bytes, b)) {
            self.rows.sort_unstable_by(|a, b| Page::key_of(bytes, a).cmp(Page::key_of(bytes, b)));
        }
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.rows.clear();
    }
}

/// The rows of one list as the lists' statement returns them (`PgView::cursors`), after
/// `prefix`: the key after the prefix, then the value, each as `push_be_bytes` writes it
/// (the server's `int4send` is big-endian), repeated; the statement alone writes these bytes.
fn parse_list(prefix: &[u8], rows: &[u8], page: &mut Page) -> Result<()> {
    let mut r = Reader::new(rows, "postgresql: a posting list from the server");
    while !r.rest.is_empty() {
        let key = r.be_bytes()?;
        page.push(&[prefix, key], r.be_bytes()?);
    }
    Ok(())
}

impl Drop for PgView<'_> {
    fn drop(&mut self) {
        if let Some(mut c) = self.conn.get_mut().take() {
            // Nothing to learn from the answer: a read-only snapshot changed nothing.
            let _ = c.send_unanswered(&Request::Text("ROLLBACK"));
        }
    }
}

impl View for PgView<'_> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(v) = self.ahead.borrow()[cf as usize].get(key) {
            return Ok(v.clone());
        }
        let sql = format!("SELECT value FROM {} WHERE ns = $1 AND key = $2", self.backend.t(cf));
        let rows = self.rows(&sql, &[(&ns_of(cf, key), BYTEA), (&key, BYTEA)])?;
        Ok(rows.into_iter().next().map(|r| r.get::<_, Vec<u8>>(0)))
    }

    fn multi_get(&self, cf: Cf, keys: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        {
            let ahead = &self.ahead.borrow()[cf as usize];
            if keys.iter().all(|k| ahead.contains_key(k.as_slice())) {
                return Ok(keys.iter().map(|k| ahead[k.as_slice()].clone()).collect());
            }
        }
        let ns: Vec<&[u8]> = keys.iter().map(|k| ns_of(cf, k)).collect();
        let ks: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let rows = self.rows(&self.multi_get_sql(cf), &[(&ns, BYTEA_ARRAY), (&ks, BYTEA_ARRAY)])?;
        Ok(PgView::found(rows, keys.len()))
    }

    /// One statement per keyspace, all in one round trip.
    fn prefetch(&self, keys: &[(Cf, Vec<u8>)]) -> Result<()> {
        // For each keyspace with keys to read: its namespace and key arrays.
        type Keys<'k> = Vec<&'k [u8]>;
        let by_cf: Vec<(Cf, Keys<'_>, Keys<'_>)> = Cf::ALL
            .iter()
            .map(|&cf| {
                let ks: Vec<&[u8]> = keys.iter().filter(|(c, _)| *c == cf).map(|(_, k)| k.as_slice()).collect();
                (cf, ks.iter().map(|k| ns_of(cf, k)).collect(), ks)
            })
            .filter(|(_, _, ks)| !ks.is_empty())
            .collect();
        let sql: Vec<String> = by_cf.iter().map(|(cf, _, _)| self.multi_get_sql(*cf)).collect();
        let params: Vec<[(&(dyn ToSql + Sync), Type); 2]> = by_cf
            .iter()
            .map(|(_, ns, ks)| [(ns as &(dyn ToSql + Sync), BYTEA_ARRAY), (ks as _, BYTEA_ARRAY)])
            .collect();
        let requests: Vec<Request<'_>> = sql.iter().zip(&params).map(|(sql, p)| Request::Prepared(sql, p)).collect();
        let answers = self.reads(&requests)?;
        let mut ahead = self.ahead.borrow_mut();
        for ((cf, _, ks), rows) in by_cf.iter().zip(answers) {
            for (k, v) in ks.iter().zip(PgView::found(rows, ks.len())) {
                ahead[*cf as usize].insert(k.to_vec(), v);
            }
        }
        Ok(())
    }

    fn cursor(&self, cf: Cf, prefix: &[u8]) -> Box<dyn Cursor + '_> {
        Box::new(self.new_cursor(cf, prefix, FIRST_PAGE))
    }

    /// The first page of every prefix in one statement, when they are all of one namespace
    /// (a search's posting lists): a lateral join, one index range scan per prefix. A reader
    /// of whole lists gets pages as long as `WHOLE_PAGE` (most lists in that one round trip),
    /// within `WHOLE_ROWS` for the statement.
    fn cursors(&self, cf: Cf, prefixes: &[Vec<u8>], extent: Extent) -> Vec<Box<dyn Cursor + '_>> {
        let (first, later) = match extent {
            Extent::Whole => {
                let each = (WHOLE_ROWS / prefixes.len().max(1) as i64).clamp(FIRST_PAGE, WHOLE_PAGE);
                (each, WHOLE_PAGE)
            }
            Extent::Start => (FIRST_PAGE, next_page(FIRST_PAGE)),
        };
        let ns = prefixes.first().map_or(&[][..], |p| ns_of(cf, p));
        let uppers: Option<Vec<Vec<u8>>> = prefixes.iter().map(|p| keys::prefix_successor(p)).collect();
        let one_ns = prefixes.len() > 1 && !ns.is_empty() && prefixes.iter().all(|p| ns_of(cf, p) == ns);
        let (Some(uppers), true) = (uppers, one_ns) else {
            return prefixes.iter().map(|p| self.opened(cf, p, first)).collect();
        };
        let t = self.backend.t(cf);
        // Each list's rows come as one value (`parse_list` has its bytes): a row of the
        // protocol for each posting cost the client more than the posting (its messages,
        // its allocations), and the prefix that every key of a list repeats stays behind.
        let sql = format!(
            "SELECT p.i, (SELECT string_agg(int4send(length(k.key) - length(p.lo)) || substring(k.key FROM length(p.lo) + 1) \
             || int4send(length(k.value)) || k.value, ''::bytea) \
             FROM (SELECT key, value FROM {t} WHERE ns = $1 AND key >= p.lo AND key < p.hi ORDER BY key LIMIT $4) k) \
             FROM unnest($2::bytea[], $3::bytea[]) WITH ORDINALITY AS p(lo, hi, i)"
        );
        let lo: Vec<&[u8]> = prefixes.iter().map(Vec::as_slice).collect();
        let hi: Vec<&[u8]> = uppers.iter().map(Vec::as_slice).collect();
        let mut pages: Vec<Page> = prefixes.iter().map(|_| Page::default()).collect();
        let read =
            self.rows(&sql, &[(&ns, BYTEA), (&lo, BYTEA_ARRAY), (&hi, BYTEA_ARRAY), (&first, INT8)]).and_then(|rows| {
                for r in &rows {
                    let i: i64 = r.get(0);
                    let slot = usize::try_from(i - 1).ok().filter(|&s| s < prefixes.len());
                    let slot = slot.ok_or_else(|| Error::corruption("postgresql: a posting list came back unasked"))?;
                    if let Some(list) = r.get::<_, Option<&[u8]>>(1) {
                        parse_list(&prefixes[slot], list, &mut pages[slot])?;
                    }
                }
                // The aggregate reads its subquery's rows in their key order; an ORDER BY in
                // it would sort them again. Should a plan ever give them otherwise, they are
                // put in order here.
                for page in &mut pages {
                    page.sort();
                }
                Ok(())
            });
        if read.is_err() {
            pages.iter_mut().for_each(Page::clear);
        }
        prefixes
            .iter()
            .zip(uppers)
            .zip(pages)
            .map(|((prefix, upper), rows)| {
                let error = read.as_ref().err().map(|e| Error::new(e.status, e.message.clone()));
                Box::new(PgCursor {
                    view: self,
                    cf,
                    prefix: prefix.clone(),
                    upper: Some(upper),
                    more: rows.len() as i64 == first,
                    rows,
                    from: Some(prefix.clone()),
                    at: 0,
                    page: later,
                    error,
                }) as Box<dyn Cursor + '_>
            })
            .collect()
    }
}

impl PgView<'_> {
    fn opened(&self, cf: Cf, prefix: &[u8], page: i64) -> Box<dyn Cursor + '_> {
        let mut c = self.new_cursor(cf, prefix, page);
        c.seek(prefix);
        Box::new(c)
    }

    fn new_cursor(&self, cf: Cf, prefix: &[u8], page: i64) -> PgCursor<'_> {
        PgCursor {
            view: self,
            cf,
            prefix: prefix.to_vec(),
            upper: keys::prefix_successor(prefix),
            rows: Page::default(),
            from: None,
            at: 0,
            more: false,
            page,
            error: None,
        }
    }
}

struct PgCursor<'v> {
    view: &'v PgView<'v>,
    cf: Cf,
    prefix: Vec<u8>,
    upper: Option<Vec<u8>>,
    rows: Page,
    /// Where the page held starts: it holds every key from there to its last (or, when not
    /// `more`, to the prefix's end).
    from: Option<Vec<u8>>,
    at: usize,
    /// The last page was full: rows may follow it.
    more: bool,
    page: i64,
    error: Option<Error>,
}

impl PgCursor<'_> {
    fn fetch(&mut self, start: &[u8]) {
        self.from = Some(start.to_vec());
        match self.view.page(self.cf, start, self.upper.as_deref(), self.page) {
            Ok(rows) => {
                self.more = rows.len() as i64 == self.page;
                self.rows = rows;
            }
            Err(e) => {
                self.rows.clear();
                self.more = false;
                self.error = Some(e);
            }
        }
        self.at = 0;
        self.page = next_page(self.page);
    }
}

impl Cursor for PgCursor<'_> {
    fn seek(&mut self, target: &[u8]) {
        let start = if target < self.prefix.as_slice() { self.prefix.clone() } else { target.to_vec() };
        // A seek within the page held (posting lists skip forward) costs no round trip.
        if let Some(from) = &self.from {
            let within = self.rows.last_key().is_some_and(|last| start.as_slice() <= last) || !self.more;
            if from.as_slice() <= start.as_slice() && within && self.error.is_none() {
                self.at = self.rows.seek(&start);
                return;
            }
        }
        // A seek past the page keeps the page size reached: a scan that seeks forward through a
        // long posting list is as long as one that steps through it.
        self.fetch(&start);
    }

    fn next(&mut self) {
        self.at += 1;
        if self.at >= self.rows.len() && self.more {
            let mut start = self.rows.last_key().expect("a full page").to_vec();
            start.push(0);
            self.fetch(&start);
        }
    }

    fn current(&self) -> Option<(&[u8], &[u8])> {
        self.rows.get(self.at)
    }

    fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(Error::new(e.status, e.message.clone())),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list_bytes(rows: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in rows {
            crate::codec::push_be_bytes(&mut out, k);
            crate::codec::push_be_bytes(&mut out, v);
        }
        out
    }

    #[test]
    fn a_lists_rows_parse_into_keys_after_its_prefix() {
        let mut page = Page::default();
        let bytes = list_bytes(&[(b"a", b""), (b"bb", b"value"), (b"", b"x")]);
        parse_list(b"pre", &bytes, &mut page).unwrap();
        assert_eq!(page.len(), 3);
        assert_eq!(page.get(0), Some((&b"prea"[..], &b""[..])));
        assert_eq!(page.get(1), Some((&b"prebb"[..], &b"value"[..])));
        assert_eq!(page.get(2), Some((&b"pre"[..], &b"x"[..])));
        assert_eq!(page.get(3), None);
    }

    #[test]
    fn a_truncated_list_is_corruption_not_a_panic() {
        let bytes = list_bytes(&[(b"key", b"value")]);
        for cut in 1..bytes.len() {
            let mut page = Page::default();
            let e = parse_list(b"p", &bytes[..cut], &mut page).unwrap_err();
            assert_eq!(e.status, Status::Corruption, "cut at {cut}");
        }
        // A length that points past the end.
        let mut page = Page::default();
        let e = parse_list(b"p", &[0xFF, 0xFF, 0xFF, 0xFF, 1], &mut page).unwrap_err();
        assert_eq!(e.status, Status::Corruption);
    }

    #[test]
    fn a_page_sorts_and_seeks_by_key() {
        let mut page = Page::default();
        for k in [&b"c"[..], b"a", b"d", b"b"] {
            page.push(&[k], &[k[0], k[0]]);
        }
        page.sort();
        let keys: Vec<&[u8]> = (0..page.len()).map(|i| page.get(i).unwrap().0).collect();
        assert_eq!(keys, [&b"a"[..], b"b", b"c", b"d"]);
        assert_eq!(page.get(2), Some((&b"c"[..], &b"cc"[..])));
        assert_eq!(page.last_key(), Some(&b"d"[..]));
        assert_eq!(page.seek(b""), 0);
        assert_eq!(page.seek(b"b"), 1);
        assert_eq!(page.seek(b"bb"), 2);
        assert_eq!(page.seek(b"e"), 4);
        page.clear();
        assert_eq!((page.len(), page.last_key()), (0, None));
    }
}
