//! From a `postgresql://` URI to a client configuration, with libpq's rules where the client
//! crate has none: defaults from libpq's environment (`PGHOST`, `PGPORT`, `PGUSER`,
//! `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT`, `PGAPPNAME`, `PGCONNECT_TIMEOUT`,
//! `PGSERVICE`), a service file, the password file, and `sslmode` up to `verify-full`.
//! mnem's own parameters (`schema`, `pool_size`, `pool_timeout`, `statement_timeout`) are
//! taken out before the rest reaches the client. No message made here carries a password.

use crate::error::{Error, Result};
use percent_encoding::percent_decode_str;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
use tokio_postgres::config::SslMode;

/// The schema a store lives in when the URI names none.
pub const DEFAULT_SCHEMA: &str = "mnem";
pub const DEFAULT_POOL_SIZE: u32 = 8;
pub const DEFAULT_POOL_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_STATEMENT_TIMEOUT_MS: u64 = 30_000;

/// How certificates are checked (libpq's `sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// `disable`, `allow`, `prefer`, `require`: encrypted when asked, nothing verified.
    None,
    /// `verify-ca`: the server's chain ends at `sslrootcert`.
    Ca,
    /// `verify-full`: and its name is the host connected to.
    Full,
}

pub struct PgConfig {
    pub client: tokio_postgres::Config,
    pub verify: Verify,
    /// `sslrootcert`: the CA file certificates are checked against.
    pub root_cert: Option<PathBuf>,
    pub schema: String,
    pub pool_size: u32,
    pub pool_timeout: Duration,
    pub statement_timeout_ms: u64,
    /// The URI without its password, for messages.
    pub shown: String,
}

/// The URI with any password replaced by `***`.
pub fn redact(uri: &str) -> String {
    let (head, query) = uri.split_once('?').map_or((uri, None), |(h, q)| (h, Some(q)));
    let mut out = match (head.find("://"), head.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &head[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            let hidden = if userinfo.contains(':') { format!("{user}:***") } else { user.to_string() };
            format!("{}{}{}", &head[..s + 3], hidden, &head[at..])
        }
        _ => head.to_string(),
    };
    if let Some(q) = query {
        let parts: Vec<String> = q
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k == "password" => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out.push('?');
        out.push_str(&parts.join("&"));
    }
    out
}

fn decode(s: &str) -> Result<String> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| Error::invalid("a PostgreSQL URI parameter is not UTF-8 after percent-decoding"))
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A schema name mnem accepts: it is written into statements as an identifier, so it is
/// held to `[a-z_][a-z0-9_]{0,62}` instead of being quoted.
fn check_schema(s: &str) -> Result<()> {
    let ok = !s.is_empty()
        && s.len() <= 63
        && s.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "PostgreSQL URI: `schema` {s:?} must be 1-63 of a-z, 0-9 and _, not starting with a digit"
        )))
    }
}

fn number<T: FromStr>(name: &str, v: &str) -> Result<T> {
    v.parse().map_err(|_| Error::invalid(format!("PostgreSQL URI: `{name}` {v:?} is not a valid number")))
}

/// A service file's section `[service]` (libpq's `pg_service.conf` format).
fn service_params(service: &str) -> Result<BTreeMap<String, String>> {
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(f) = env("PGSERVICEFILE") {
        files.push(f.into());
    } else if let Some(home) = env("HOME") {
        files.push(PathBuf::from(home).join(".pg_service.conf"));
    }
    files.push(
        PathBuf::from(env("PGSYSCONFDIR").unwrap_or_else(|| "/etc/postgresql-common".into())).join("pg_service.conf"),
    );
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        let mut inside = false;
        let mut found = BTreeMap::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                if inside {
                    break;
                }
                inside = name == service;
            } else if inside {
                if let Some((k, v)) = line.split_once('=') {
                    found.insert(k.trim().to_string(), v.trim().to_string());
                }
            }
        }
        if inside || !found.is_empty() {
            return Ok(found);
        }
    }
    Err(Error::invalid(format!("PostgreSQL service {service:?} is not defined in any service file")))
}

/// The password for `host:port:db:user` from the password file (libpq's `.pgpass` rules: a
/// file readable by group or others is ignored, `*` matches anything, `\` escapes).
fn passfile_password(file: &std::path::Path, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let port = port.to_string();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => cur.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        fields.push(cur);
        if fields.len() != 5 {
            continue;
        }
        let want = [host, port.as_str(), db, user];
        if fields[..4].iter().zip(want).all(|(f, w)| f == "*" || f == w) {
            return Some(fields[4].clone());
        }
    }
    None
}

/// Parse `uri` (`postgresql://` or `postgres://`).
pub fn parse(uri: &str) -> Result<PgConfig> {
    let shown = redact(uri);
    let (head, query) = uri.split_once('?').map_or((uri, ""), |(h, q)| (h, q));
    let mut params: BTreeMap<String, String> = BTreeMap::new();
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        params.insert(decode(k)?, decode(v)?);
    }
    // Service-file values are defaults below the URI's own.
    if let Some(service) = params.remove("service").or_else(|| env("PGSERVICE")) {
        for (k, v) in service_params(&service)? {
            params.entry(k).or_insert(v);
        }
    }
    let schema = params.remove("schema").unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
    check_schema(&schema)?;
    let pool_size = match params.remove("pool_size") {
        Some(v) => number::<u32>("pool_size", &v)?,
        None => DEFAULT_POOL_SIZE,
    };
    if pool_size == 0 {
        return Err(Error::invalid("PostgreSQL URI: `pool_size` must be at least 1"));
    }
    let pool_timeout = match params.remove("pool_timeout") {
        Some(v) => Duration::from_secs_f64(number::<f64>("pool_timeout", &v)?.max(0.001)),
        None => DEFAULT_POOL_TIMEOUT,
    };
    let statement_timeout_ms = match params.remove("statement_timeout") {
        Some(v) => number::<u64>("statement_timeout", &v)?,
        None => DEFAULT_STATEMENT_TIMEOUT_MS,
    };
    let sslmode = params.remove("sslmode").or_else(|| env("PGSSLMODE")).unwrap_or_else(|| "prefer".into());
    let root_cert = params.remove("sslrootcert").or_else(|| env("PGSSLROOTCERT")).map(PathBuf::from);
    let passfile = params.remove("passfile").or_else(|| env("PGPASSFILE")).map(PathBuf::from);
    let (mode, verify) = match sslmode.as_str() {
        "disable" => (SslMode::Disable, Verify::None),
        "allow" | "prefer" => (SslMode::Prefer, Verify::None),
        "require" => (SslMode::Require, Verify::None),
        "verify-ca" => (SslMode::Require, Verify::Ca),
        "verify-full" => (SslMode::Require, Verify::Full),
        other => return Err(Error::invalid(format!("PostgreSQL URI: unknown `sslmode` {other:?}"))),
    };
    if verify != Verify::None && root_cert.is_none() {
        return Err(Error::invalid(format!("PostgreSQL URI: `sslmode={sslmode}` needs `sslrootcert` (the CA file)")));
    }
    let rest: Vec<String> = params
        .iter()
        .map(|(k, v)| {
            let enc =
                |s: &str| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string();
            format!("{}={}", enc(k), enc(v))
        })
        .collect();
    let base = if rest.is_empty() { head.to_string() } else { format!("{head}?{}", rest.join("&")) };
    let mut client =
        tokio_postgres::Config::from_str(&base).map_err(|e| Error::invalid(format!("PostgreSQL URI {shown}: {e}")))?;
    client.ssl_mode(mode);
    if client.get_hosts().is_empty() {
        let hosts = env("PGHOST").unwrap_or_else(|| "/var/run/postgresql".into());
        for h in hosts.split(',') {
            client.host(h);
        }
    }
    if client.get_ports().is_empty() {
        if let Some(p) = env("PGPORT") {
            client.port(number("PGPORT", &p)?);
        }
    }
    if client.get_user().is_none() {
        if let Some(u) = env("PGUSER").or_else(|| env("USER")) {
            client.user(&u);
        }
    }
    if client.get_dbname().is_none() {
        if let Some(d) = env("PGDATABASE") {
            client.dbname(&d);
        }
    }
    if client.get_application_name().is_none() {
        client.application_name(env("PGAPPNAME").unwrap_or_else(|| "mnem".into()));
    }
    if client.get_connect_timeout().is_none() {
        let secs = match env("PGCONNECT_TIMEOUT") {
            Some(v) => number::<u64>("PGCONNECT_TIMEOUT", &v)?,
            None => 10,
        };
        client.connect_timeout(Duration::from_secs(secs.max(1)));
    }
    if client.get_password().is_none() {
        if let Some(p) = env("PGPASSWORD") {
            client.password(p);
        } else {
            let file = passfile.or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".pgpass")));
            let user = client.get_user().unwrap_or("").to_string();
            let db = client.get_dbname().unwrap_or(&user).to_string();
            let port = client.get_ports().first().copied().unwrap_or(5432);
            let host = match client.get_hosts().first() {
                Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
                _ => "localhost".to_string(),
            };
            if let Some(p) = file.and_then(|f| passfile_password(&f, &host, port, &db, &user)) {
                client.password(p);
            }
        }
    }
    Ok(PgConfig { client, verify, root_cert, schema, pool_size, pool_timeout, statement_timeout_ms, shown })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hides_passwords_in_userinfo_and_query() {
        assert_eq!(redact("postgresql://u:secret@h:5/db?sslmode=require"), "postgresql://u:***@h:5/db?sslmode=require");
        assert_eq!(redact("postgres://h/db?password=secret&schema=x"), "postgres://h/db?password=***&schema=x");
        assert_eq!(redact("postgresql://u@h/db"), "postgresql://u@h/db");
    }

    #[test]
    fn mnem_parameters_are_taken_out_and_checked() {
        let c = parse("postgresql://u:p@127.0.0.1:1/db?schema=t_1&pool_size=3&statement_timeout=50").unwrap();
        assert_eq!((c.schema.as_str(), c.pool_size, c.statement_timeout_ms), ("t_1", 3, 50));
        assert_eq!(c.client.get_dbname(), Some("db"));
        for bad in ["schema=A", "schema=1x", "schema=a;drop", "pool_size=0", "sslmode=verify-full", "sslmode=nope"] {
            let e = parse(&format!("postgresql://u:p@h/db?{bad}")).err().expect(bad);
            assert!(!e.message.contains(":p@"), "{}", e.message);
        }
    }
}
