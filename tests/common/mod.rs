//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

/// xorshift64: the same sequence for the same seed, so a failure names a seed to replay.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        if self.0 == 0 {
            // xorshift's one fixed point; any seed must give a sequence.
            self.0 = 0x9E37_79B9_7F4A_7C15;
        }
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        (-2.0 * (self.unit() + 1e-12).ln()).sqrt() * (std::f64::consts::TAU * self.unit()).cos()
    }
}

/// A letters-only token for event `n`, distinct for every `n` below 26^5 (both tokenizers
/// keep it whole), so that a search for it finds that event alone.
pub fn token(n: usize) -> String {
    let mut s = String::from("tok");
    let mut n = n;
    for _ in 0..5 {
        s.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}

/// Where one test's store lives on one backend: a new directory for RocksDB, and, when
/// `MNEM_TEST_PG_URI` names a PostgreSQL server (scripts/test starts one), a new schema on it.
/// Removed when dropped, so a rerun starts empty.
pub struct Place {
    pub backend: &'static str,
    pub uri: String,
    server: Option<(String, String)>,
}

impl Place {
    pub fn open(&self) -> mnem::Mnem {
        // Not the URI: it holds the server's password (mnem's messages show it redacted).
        mnem::Mnem::open(&self.uri, mnem::OpenOptions { create: true, ..Default::default() })
            .unwrap_or_else(|e| panic!("{}: open: {e}", self.backend))
    }

    /// The schema of a place on PostgreSQL.
    pub fn schema(&self) -> Option<&str> {
        self.server.as_ref().map(|(_, schema)| schema.as_str())
    }
}

/// The PostgreSQL server of the run (`MNEM_TEST_PG_URI`, which scripts/test sets), or None
/// with a line saying the test skipped.
pub fn pg_server() -> Option<String> {
    let uri = std::env::var("MNEM_TEST_PG_URI").ok().filter(|u| !u.is_empty());
    if uri.is_none() {
        eprintln!("skipped: MNEM_TEST_PG_URI is not set");
    }
    uri
}

/// `server` (a postgresql:// URI) with the store in `schema`.
pub fn with_schema(server: &str, schema: &str) -> String {
    format!("{server}{}schema={schema}", if server.contains('?') { '&' } else { '?' })
}

/// A PostgreSQL call that failed while the server was away: BUSY, naming the server and
/// saying to retry.
pub fn assert_retryable(e: &mnem::Error, what: &str) {
    assert_eq!(e.status, mnem::Status::Busy, "{what}: a retryable status, got {e}");
    assert!(e.message.contains("postgresql: ") && e.message.contains("retry"), "{what}: {e}");
}

impl Drop for Place {
    fn drop(&mut self) {
        match &self.server {
            None => {
                let _ = std::fs::remove_dir_all(&self.uri);
            }
            Some((server, schema)) => {
                if let Ok(mut c) = postgres::Client::connect(server, postgres::NoTls) {
                    let _ = c.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
                }
            }
        }
    }
}

/// The backends this run tests: RocksDB always, PostgreSQL when `MNEM_TEST_PG_URI` is set.
pub fn backends() -> Vec<&'static str> {
    match pg_server() {
        Some(_) => vec!["rocksdb", "postgresql"],
        None => vec!["rocksdb"],
    }
}

/// A new place on `backend`. `stem` names the test (letters, digits and `_`), so leftovers
/// say whose they are.
pub fn place(backend: &'static str, stem: &str) -> Place {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("t{}_{n}_{}", std::process::id(), stem.to_ascii_lowercase());
    if backend == "postgresql" {
        let server = std::env::var("MNEM_TEST_PG_URI").expect("MNEM_TEST_PG_URI");
        let schema: String = name.chars().take(63).collect();
        return Place { backend, uri: with_schema(&server, &schema), server: Some((server, schema)) };
    }
    let dir = std::env::temp_dir().join(format!("mnem-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    Place { backend, uri: dir.to_string_lossy().into_owned(), server: None }
}

/// One new place per backend this run tests.
pub fn places(stem: &str) -> Vec<Place> {
    backends().into_iter().map(|b| place(b, stem)).collect()
}

/// A new store on `backend`, its place kept in `held` (declared before the store, so the
/// store closes first).
pub fn open_new(held: &mut Vec<Place>, backend: &'static str, stem: &str) -> mnem::Mnem {
    held.push(place(backend, stem));
    held.last().unwrap().open()
}

/// A tmpfs of some MiB mounted at a new directory, unmounted on drop (for full-disk tests;
/// mounting needs root).
pub struct Tmpfs(pub std::path::PathBuf);

impl Tmpfs {
    /// None when it cannot be mounted (not root).
    pub fn mount(name: &str, mib: usize) -> Option<Tmpfs> {
        let dir = std::env::temp_dir().join(format!("mnem-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=755"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(Tmpfs(dir))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}
