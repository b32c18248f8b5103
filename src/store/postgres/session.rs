//! A pooled session with the statements prepared on it.
//!
//! A statement sent with its text is parsed and planned again on every call: in the server's
//! log of a short search, parse and bind (planning) took longer than the executions, and in
//! a profile of an ingest they were 6% of the machine. Each session therefore prepares a statement the first
//! time it runs it and then only binds and executes it (the same single round trip).

use postgres::types::{ToSql, Type};
use postgres::{Client, GenericClient, Row, Statement, Transaction};
use r2d2_postgres::PostgresConnectionManager;
use std::collections::HashMap;

type Inner = PostgresConnectionManager<postgres_openssl::MakeTlsConnector>;

/// A statement's parameters, each with its type.
pub(super) type Params<'p> = [(&'p (dyn ToSql + Sync), Type)];

/// The statements a session keeps prepared; the texts are mnem's own (a store's few dozen),
/// so this bound is only a guard.
const MAX_PREPARED: usize = 256;

/// What the pool hands out: a session and its prepared statements.
pub(super) struct Session {
    client: Client,
    prepared: HashMap<String, Statement>,
}

/// Connects sessions for the pool (`r2d2_postgres` for the connection itself).
pub(super) struct Manager(pub(super) Inner);

impl r2d2::ManageConnection for Manager {
    type Connection = Session;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Session, postgres::Error> {
        Ok(Session { client: self.0.connect()?, prepared: HashMap::new() })
    }

    fn is_valid(&self, s: &mut Session) -> Result<(), postgres::Error> {
        self.0.is_valid(&mut s.client)
    }

    fn has_broken(&self, s: &mut Session) -> bool {
        self.0.has_broken(&mut s.client)
    }
}

fn statement<C: GenericClient>(
    prepared: &mut HashMap<String, Statement>,
    client: &mut C,
    sql: &str,
    params: &Params<'_>,
) -> Result<Statement, postgres::Error> {
    if let Some(s) = prepared.get(sql) {
        return Ok(s.clone());
    }
    let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
    let s = client.prepare_typed(sql, &types)?;
    if prepared.len() >= MAX_PREPARED {
        prepared.clear();
    }
    prepared.insert(sql.to_owned(), s.clone());
    Ok(s)
}

fn values<'p>(params: &'p Params<'p>) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|(v, _)| *v).collect()
}

impl Session {
    pub fn query(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>, postgres::Error> {
        let s = statement(&mut self.prepared, &mut self.client, sql, params)?;
        self.client.query(&s, &values(params))
    }

    pub fn query_opt(&mut self, sql: &str, params: &Params<'_>) -> Result<Option<Row>, postgres::Error> {
        let s = statement(&mut self.prepared, &mut self.client, sql, params)?;
        self.client.query_opt(&s, &values(params))
    }

    pub fn query_one(&mut self, sql: &str, params: &Params<'_>) -> Result<Row, postgres::Error> {
        let s = statement(&mut self.prepared, &mut self.client, sql, params)?;
        self.client.query_one(&s, &values(params))
    }

    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, postgres::Error> {
        let s = statement(&mut self.prepared, &mut self.client, sql, params)?;
        self.client.execute(&s, &values(params))
    }

    /// Statements without parameters, sent as text (transaction control, DDL).
    pub fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.client.batch_execute(sql)
    }

    /// Statements without parameters, sent as text in one round trip, with their rows.
    pub fn simple_query(&mut self, sql: &str) -> Result<Vec<postgres::SimpleQueryMessage>, postgres::Error> {
        self.client.simple_query(sql)
    }

    pub fn transaction(&mut self) -> Result<Tx<'_>, postgres::Error> {
        Ok(Tx { tx: self.client.transaction()?, prepared: &mut self.prepared })
    }
}

/// A transaction on a session, its statements prepared as the session's are.
pub(super) struct Tx<'a> {
    tx: Transaction<'a>,
    prepared: &'a mut HashMap<String, Statement>,
}

impl Tx<'_> {
    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, postgres::Error> {
        let s = statement(self.prepared, &mut self.tx, sql, params)?;
        self.tx.execute(&s, &values(params))
    }

    pub fn batch_execute(&mut self, sql: &str) -> Result<(), postgres::Error> {
        self.tx.batch_execute(sql)
    }

    pub fn commit(self) -> Result<(), postgres::Error> {
        self.tx.commit()
    }
}
