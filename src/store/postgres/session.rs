//! A pooled session: one connection, driven by a single-threaded runtime of its own, with
//! the statements prepared on it.
//!
//! A statement sent with its text is parsed and planned again on every call: in the server's
//! log of a short search, parse and bind (planning) took longer than the executions, and in
//! a profile of an ingest they were 6% of the machine. Each session therefore prepares a
//! statement the first time it runs it and then only binds and executes it.
//!
//! The asynchronous client (`tokio_postgres`) sends every request it is given before it reads
//! an answer, so requests made together share one round trip (`begin_then_query`: a read's
//! `BEGIN` and its first statement). Its runtime runs only inside a call, on the caller's
//! thread: the caller sees a blocking client, as with the `postgres` crate, which wraps the
//! same client the same way but sends one request at a time.

use postgres_openssl::MakeTlsConnector;
use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, Error, Row, SimpleQueryMessage, Statement};

/// A statement's parameters, each with its type.
pub(super) type Params<'p> = [(&'p (dyn ToSql + Sync), Type)];

/// The statements a session keeps prepared; the texts are mnem's own (a store's few dozen),
/// so this bound is only a guard.
const MAX_PREPARED: usize = 256;

/// The connection's side of the client: reads answers and writes requests while polled.
type Driver = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

/// A runtime and the connection it drives.
struct Io {
    runtime: tokio::runtime::Runtime,
    connection: Driver,
    /// The connection's future has finished (the session is closed): never polled again.
    ended: bool,
}

/// Poll the connection once: it writes the requests queued and reads the answers that came.
/// Its end (the session closed) is its error, when it had one.
fn drive(connection: &mut Driver, ended: &mut bool, cx: &mut Context<'_>) -> Result<(), Error> {
    if !*ended {
        if let Poll::Ready(r) = connection.as_mut().poll(cx) {
            *ended = true;
            r?;
        }
    }
    Ok(())
}

impl Io {
    /// Run `f` to its end, driving the connection meanwhile. A connection that fails while
    /// `f` waits makes `f`'s answer its error (the server's last word, when it sent one).
    fn block_on<T>(&mut self, f: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
        let mut f = pin!(f);
        let (connection, ended) = (&mut self.connection, &mut self.ended);
        self.runtime.block_on(poll_fn(|cx| {
            drive(connection, ended, cx)?;
            f.as_mut().poll(cx)
        }))
    }

    /// Queue `request` (its first poll) and write it, without waiting for its answer.
    fn send<T>(&mut self, request: impl Future<Output = T>) {
        let mut request = pin!(request);
        let (connection, ended) = (&mut self.connection, &mut self.ended);
        self.runtime.block_on(poll_fn(|cx| {
            let _ = request.as_mut().poll(cx);
            let _ = drive(connection, ended, cx);
            Poll::Ready(())
        }));
    }
}

/// One request of a pipeline (`Session::pipeline`).
#[derive(Clone)]
pub(super) enum Request<'r> {
    /// Statements without parameters, sent as text (transaction control).
    Text(&'r str),
    /// A statement with its parameters, prepared on the session.
    Prepared(&'r str, &'r Params<'r>),
}

/// What the pool hands out: a session and its prepared statements.
pub(super) struct Session {
    client: Client,
    io: Io,
    prepared: HashMap<String, Statement>,
}

/// Why a session could not be made.
#[derive(Debug)]
pub(super) enum ConnectError {
    /// The server, the network or TLS: the client's error.
    Server(Error),
    /// No runtime for the session (the process is out of file descriptors or threads).
    Runtime(std::io::Error),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Server(e) => e.fmt(f),
            ConnectError::Runtime(e) => write!(f, "no runtime for a connection: {e}"),
        }
    }
}

impl std::error::Error for ConnectError {}

impl Session {
    /// A new session on the server `config` names.
    pub fn connect(config: &Config, tls: MakeTlsConnector) -> Result<Session, ConnectError> {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ConnectError::Runtime)?;
        let (client, connection) = runtime.block_on(config.connect(tls)).map_err(ConnectError::Server)?;
        let io = Io { runtime, connection: Box::pin(connection), ended: false };
        Ok(Session { client, io, prepared: HashMap::new() })
    }
}

/// Connects sessions for the pool.
pub(super) struct Manager {
    pub config: Config,
    pub tls: MakeTlsConnector,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Session;
    type Error = ConnectError;

    fn connect(&self) -> Result<Session, ConnectError> {
        Session::connect(&self.config, self.tls.clone())
    }

    fn is_valid(&self, s: &mut Session) -> Result<(), ConnectError> {
        s.simple_query("").map(|_| ()).map_err(ConnectError::Server)
    }

    fn has_broken(&self, s: &mut Session) -> bool {
        s.io.ended || s.client.is_closed()
    }
}

fn values<'p>(params: &'p Params<'p>) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|(v, _)| *v).collect()
}

impl Session {
    /// `sql` prepared on this session (prepared now, the first time).
    fn statement(&mut self, sql: &str, params: &Params<'_>) -> Result<Statement, Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let s = self.io.block_on(self.client.prepare_typed(sql, &types))?;
        if self.prepared.len() >= MAX_PREPARED {
            self.prepared.clear();
        }
        self.prepared.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    pub fn query_one(&mut self, sql: &str, params: &Params<'_>) -> Result<Row, Error> {
        let s = self.statement(sql, params)?;
        self.io.block_on(self.client.query_one(&s, &values(params)))
    }

    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, Error> {
        let s = self.statement(sql, params)?;
        self.io.block_on(self.client.execute(&s, &values(params)))
    }

    /// Statements without parameters, sent as text (transaction control, DDL).
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.io.block_on(self.client.batch_execute(sql))
    }

    /// Statements without parameters, sent as text in one round trip, with their rows.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<SimpleQueryMessage>, Error> {
        self.io.block_on(self.client.simple_query(sql))
    }

    /// Every request of `requests` sent at once, in their order, and then every answer read:
    /// one round trip (after the first use of a statement, which prepares it). Each request
    /// has its own answer; a request that fails does not stop the server from running the
    /// ones after it (within a transaction they then fail as the transaction is aborted, and
    /// its COMMIT rolls it back). The outer error is the connection's.
    pub fn pipeline(&mut self, requests: &[Request<'_>]) -> Result<Vec<Result<Vec<Row>, Error>>, Error> {
        let mut statements = Vec::with_capacity(requests.len());
        for r in requests {
            statements.push(match r {
                Request::Text(_) => None,
                Request::Prepared(sql, params) => Some((self.statement(sql, params)?, values(params))),
            });
        }
        let client = &self.client;
        type Answer<'f> = Pin<Box<dyn Future<Output = Result<Vec<Row>, Error>> + 'f>>;
        let mut answers: Vec<Answer<'_>> = requests
            .iter()
            .zip(&statements)
            .map(|(r, s)| match (r, s) {
                (Request::Prepared(..), Some((s, v))) => Box::pin(client.query(s, v)) as Answer<'_>,
                (Request::Text(text), _) | (Request::Prepared(text, _), None) => {
                    Box::pin(async move { client.batch_execute(text).await.map(|()| Vec::new()) })
                }
            })
            .collect();
        let mut results: Vec<Option<Result<Vec<Row>, Error>>> = requests.iter().map(|_| None).collect();
        // A request goes on the wire when its future is first polled, so they are polled in
        // their order, every one before any answer is awaited.
        self.io.block_on(poll_fn(|cx| {
            let mut pending = false;
            for (answer, result) in answers.iter_mut().zip(results.iter_mut()) {
                if result.is_none() {
                    match answer.as_mut().poll(cx) {
                        Poll::Ready(r) => *result = Some(r),
                        Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                Poll::Pending
            } else {
                Poll::Ready(Ok(()))
            }
        }))?;
        Ok(results.into_iter().map(|r| r.expect("every answer read")).collect())
    }

    /// Send `request` without waiting for its answer, which the session's next call reads
    /// past. For a statement whose answer changes nothing for the caller (the end of a
    /// read-only snapshot, the release of a lock): it is written to the connection now, so
    /// the server runs it at once, not at the session's next use, and a failure shows at that
    /// next use as a closed session. The error is only that of preparing the statement.
    pub fn send_unanswered(&mut self, request: &Request<'_>) -> Result<(), Error> {
        match *request {
            Request::Text(sql) => self.io.send(self.client.batch_execute(sql)),
            Request::Prepared(sql, params) => {
                let s = self.statement(sql, params)?;
                let values = values(params);
                self.io.send(self.client.execute(&s, &values));
            }
        }
        Ok(())
    }

    /// A transaction, rolled back unless committed.
    pub fn transaction(&mut self) -> Result<Tx<'_>, Error> {
        self.batch_execute("BEGIN")?;
        Ok(Tx { session: self, open: true })
    }
}

/// A transaction on a session, its statements prepared as the session's are.
pub(super) struct Tx<'a> {
    session: &'a mut Session,
    open: bool,
}

impl Tx<'_> {
    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, Error> {
        self.session.execute(sql, params)
    }

    pub fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.session.batch_execute(sql)
    }

    pub fn commit(mut self) -> Result<(), Error> {
        self.open = false;
        self.session.batch_execute("COMMIT")
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            // A session whose rollback fails is broken, and the pool drops it.
            let _ = self.session.batch_execute("ROLLBACK");
        }
    }
}
