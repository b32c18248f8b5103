//! Replays the conformance corpus (tests/conformance/cases/*.json, format in
//! tests/conformance/README.md) through the C ABI functions of `mnem::ffi`, the same entry
//! points every binding calls. Every read also goes through the output-buffer protocol: a
//! size query, a buffer one byte short (BUFFER_TOO_SMALL, exact size, untouched) and an exact
//! fit (`put_episodes_v2` without `ids_cap` likewise, for its ids); every call's error struct
//! is checked against its status. The corpus's embedders are C callbacks (`corpus_embed`).

use mnem::ffi::*;
use mnem::Status;
use serde_json::Value;
use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::{Arc, Mutex};

mod conformance_match {
    use serde_json::Value;
    use std::collections::HashMap;

    pub fn is_uuid(s: &str) -> bool {
        let b = s.as_bytes();
        b.len() == 36
            && b.iter().enumerate().all(|(i, &c)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    c == b'-'
                } else {
                    c.is_ascii_digit() || (b'a'..=b'f').contains(&c)
                }
            })
    }

    /// Python's `datetime.fromtimestamp(secs).isoformat()` in the process's time zone.
    pub fn local_iso(secs: f64) -> String {
        let mut whole = secs.floor();
        let mut micros = ((secs - whole) * 1e6).round() as i64;
        if micros == 1_000_000 {
            whole += 1.0;
            micros = 0;
        }
        let t = whole as libc::time_t;
        // SAFETY: localtime_r writes into the zeroed tm we own.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        unsafe { libc::localtime_r(&t, &mut tm) };
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        );
        if micros != 0 {
            s.push_str(&format!(".{micros:06}"));
        }
        s
    }

    fn bind(vars: &mut HashMap<String, String>, name: &str, got: &str, path: &str) -> Result<(), String> {
        if name.is_empty() {
            return Ok(());
        }
        match vars.get(name) {
            Some(v) if v != got => Err(format!("{path}: ${name} is {v:?}, got {got:?}")),
            Some(_) => Ok(()),
            None => {
                vars.insert(name.to_string(), got.to_string());
                Ok(())
            }
        }
    }

    /// Compares `got` with the expectation `want` (matchers allowed), binding variables.
    pub fn check(want: &Value, got: &Value, vars: &mut HashMap<String, String>, path: &str) -> Result<(), String> {
        if let Value::Object(m) = want {
            if m.len() == 1 {
                let (k, arg) = m.iter().next().unwrap();
                match k.as_str() {
                    "$any" => {
                        let ok = match arg.as_str().unwrap_or("") {
                            "value" => true,
                            "string" => got.is_string(),
                            "number" => got.is_number(),
                            "integer" => got.as_f64().is_some_and(|f| f.fract() == 0.0),
                            "uuid" => got.as_str().is_some_and(is_uuid),
                            other => return Err(format!("{path}: unknown $any type {other:?}")),
                        };
                        return if ok { Ok(()) } else { Err(format!("{path}: {got} is not {arg}")) };
                    }
                    "$uuid" => {
                        let s = got.as_str().filter(|s| is_uuid(s)).ok_or(format!("{path}: {got} is not a UUID"))?;
                        return bind(vars, arg.as_str().unwrap_or(""), s, path);
                    }
                    "$var" => {
                        let s = got.as_str().ok_or(format!("{path}: {got} is not a string"))?;
                        return bind(vars, arg.as_str().unwrap_or(""), s, path);
                    }
                    "$localtime" => {
                        let want = local_iso(arg.as_f64().unwrap_or(f64::NAN));
                        return if got.as_str() == Some(want.as_str()) {
                            Ok(())
                        } else {
                            Err(format!("{path}: want local time {want:?}, got {got}"))
                        };
                    }
                    _ => {}
                }
            }
        }
        match (want, got) {
            (Value::Object(w), Value::Object(g)) => {
                for k in g.keys() {
                    if !w.contains_key(k) {
                        return Err(format!("{path}: unexpected key {k:?}"));
                    }
                }
                for (k, wv) in w {
                    let gv = g.get(k).ok_or(format!("{path}: missing key {k:?}"))?;
                    check(wv, gv, vars, &format!("{path}.{k}"))?;
                }
                Ok(())
            }
            (Value::Array(w), Value::Array(g)) => {
                if w.len() != g.len() {
                    return Err(format!("{path}: want {} elements, got {}: {got}", w.len(), g.len()));
                }
                for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                    check(wv, gv, vars, &format!("{path}[{i}]"))?;
                }
                Ok(())
            }
            (Value::Number(w), Value::Number(g)) if w.as_f64() == g.as_f64() => Ok(()),
            (w, g) if w == g => Ok(()),
            _ => Err(format!("{path}: want {want}, got {got}")),
        }
    }
}
use conformance_match::check;

fn view(s: &[u8]) -> mnem_str {
    mnem_str { ptr: if s.is_empty() { ptr::null() } else { s.as_ptr() }, len: s.len() }
}

fn new_err() -> mnem_error {
    // Poisoned, so a call that does not fill it is caught.
    mnem_error { code: 0x5A5A, detail: 0x5A5A, message: [0x5A; MNEM_ERROR_MESSAGE_CAP] }
}

fn status_name(code: i32) -> String {
    // SAFETY: a static NUL-terminated string.
    unsafe { CStr::from_ptr(mnem_status_name(code)) }.to_string_lossy().into_owned()
}

/// The corpus's embedders (tests/conformance/README.md): `words`, `fails`, `zero`.
struct Embedder {
    kind: String,
    texts: Arc<Mutex<Vec<String>>>,
}

const GROUPS: [&str; 7] = [
    "tea coffee oolong drink",
    "cat kitten dog pet",
    "train flight lisbon travel",
    "green red blue colour",
    "morning noon night late",
    "sofa cushion home house",
    "apple bread lunch food",
];

fn words(text: &str) -> [f32; 8] {
    let mut v = [0f32; 8];
    v[7] = 1.0;
    for w in text.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase) {
        for (i, g) in GROUPS.iter().enumerate() {
            v[i] += g.split(' ').filter(|x| *x == w).count() as f32;
        }
    }
    v
}

/// The `mnem_embed_fn` of an `Embedder` (`user_data`).
unsafe extern "C" fn corpus_embed(
    user_data: *mut c_void,
    text: mnem_str,
    out: *mut f32,
    out_cap: usize,
    out_len: *mut usize,
    err: *mut mnem_error,
) -> i32 {
    // SAFETY: user_data is an `Embedder` the replay keeps alive; text, out, out_len and err are
    // valid for the call (include/mnem.h).
    unsafe {
        let e = &*user_data.cast::<Embedder>();
        let t = if text.len == 0 { &[][..] } else { std::slice::from_raw_parts(text.ptr, text.len) };
        let t = String::from_utf8(t.to_vec()).expect("mnem passes UTF-8");
        let v = if e.kind == "zero" { [0.0; 8] } else { words(&t) };
        e.texts.lock().unwrap().push(t);
        if e.kind == "fails" {
            let m = b"model offline\0";
            ptr::copy_nonoverlapping(m.as_ptr().cast(), (*err).message.as_mut_ptr(), m.len());
            return 42;
        }
        *out_len = 8;
        if out_cap < 8 {
            return Status::BufferTooSmall as i32;
        }
        ptr::copy_nonoverlapping(v.as_ptr(), out, 8);
        0
    }
}

/// Cuts the recorded texts back to a length when dropped.
struct Truncate<'a>(&'a Mutex<Vec<String>>, usize);

impl Drop for Truncate<'_> {
    fn drop(&mut self) {
        self.0.lock().unwrap().truncate(self.1);
    }
}

/// The outcome of one call, in the corpus's terms.
#[derive(Default)]
struct Outcome {
    status: String,
    message: String,
    count: Option<u64>,
    ids: Option<Vec<String>>,
    /// `*out_ids_len` of `put_episodes_v2`.
    ids_len: Option<u64>,
    out: Option<Vec<u8>>,
    value: Option<Value>,
}

struct Replay {
    tmp: PathBuf,
    handles: HashMap<String, *mut mnem_store>,
    vars: HashMap<String, String>,
    /// Every embedder given to the library, alive (and in place) until the handles are freed.
    embedders: Vec<Arc<Embedder>>,
    /// The texts they were asked to embed since the last `embedder_texts`.
    texts: Arc<Mutex<Vec<String>>>,
    /// Replaying on PostgreSQL: the server's URI and the case's schema stem. Every store
    /// the case names becomes a schema of its own (`:memory:`, a new one at each open).
    pg: Option<(String, String)>,
    opens: std::cell::Cell<u32>,
}

impl Drop for Replay {
    fn drop(&mut self) {
        for (_, h) in self.handles.drain() {
            mnem_free(h);
        }
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}

fn subst(s: &str, vars: &HashMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find('}').ok_or(format!("unterminated variable in {s:?}"))? + i;
        let name = &rest[i + 2..end];
        out.push_str(vars.get(name).ok_or(format!("unbound variable ${{{name}}}"))?);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn subst_value(v: &Value, vars: &HashMap<String, String>) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => Value::String(subst(s, vars)?),
        Value::Array(a) => Value::Array(a.iter().map(|x| subst_value(x, vars)).collect::<Result<_, _>>()?),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, x)| Ok((k.clone(), subst_value(x, vars)?))).collect::<Result<_, String>>()?)
        }
        other => other.clone(),
    })
}

/// A string argument: absent is "", a string is itself, anything else its JSON text.
fn text_arg(a: &Value, key: &str) -> String {
    match a.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// A JSON Lines argument: a string as is, or an array of lines joined by "\n".
fn lines_arg(a: &Value, key: &str) -> String {
    match a.get(key) {
        Some(Value::Array(v)) => v
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => text_arg(a, key),
    }
}

fn check_err(status: Status, e: &mnem_error) -> Result<String, String> {
    let code = status as i32;
    let msg = unsafe { CStr::from_ptr(e.message.as_ptr()) }.to_str().map_err(|_| "message not UTF-8".to_string())?;
    if e.code != code || e.detail != 0 {
        return Err(format!("err.code {} / detail {} for status {code}", e.code, e.detail));
    }
    if (code == 0) != msg.is_empty() {
        return Err(format!("status {code} with message {msg:?}"));
    }
    Ok(msg.to_string())
}

impl Replay {
    /// The embedder `kind` as a callback and its `user_data` (`none`: NULL).
    fn embedder(&mut self, kind: &str) -> Result<(mnem_embed_fn, *mut c_void), String> {
        match kind {
            "none" => return Ok((None, ptr::null_mut())),
            "words" | "fails" | "zero" => {}
            other => return Err(format!("unknown embedder {other:?}")),
        }
        let e = Arc::new(Embedder { kind: kind.into(), texts: self.texts.clone() });
        self.embedders.push(e.clone());
        Ok((Some(corpus_embed), Arc::as_ptr(&e).cast_mut().cast()))
    }

    fn path(&self, p: &str) -> String {
        if let (Some((uri, stem)), false) = (&self.pg, p.is_empty()) {
            let name = if p == ":memory:" {
                self.opens.set(self.opens.get() + 1);
                format!("m{}", self.opens.get())
            } else {
                p.bytes()
                    .map(|b| if b.is_ascii_alphanumeric() { b.to_ascii_lowercase() as char } else { '_' })
                    .collect()
            };
            let sep = if uri.contains('?') { '&' } else { '?' };
            return format!("{uri}{sep}schema={stem}_{name}");
        }
        if p.is_empty() || p == ":memory:" {
            p.to_string()
        } else {
            self.tmp.join(p).to_string_lossy().into_owned()
        }
    }

    fn handle(&self, a: &Value) -> Result<*mut mnem_store, String> {
        let name = a.get("store").and_then(Value::as_str).unwrap_or("main");
        self.handles.get(name).copied().ok_or(format!("no open store {name:?}"))
    }

    /// One read through the buffer protocol.
    fn read(&self, f: &dyn Fn(*mut u8, usize, *mut usize, *mut mnem_error) -> Status) -> Result<Outcome, String> {
        let mut e = new_err();
        let mut need = 999usize;
        let st = f(ptr::null_mut(), 0, &mut need, &mut e);
        let msg = check_err(st, &e)?;
        if st != Status::BufferTooSmall {
            if st == Status::Ok || need != 0 {
                return Err(format!("size query: status {st:?}, *out_len {need}"));
            }
            return Ok(Outcome { status: status_name(st as i32), message: msg, ..Default::default() });
        }
        // The repeats below may ask an embedder again (a background write of the store between
        // two calls drops the answer kept for them): only the size query's texts are the step's.
        let asked = self.texts.lock().unwrap().len();
        let _repeats = Truncate(&self.texts, asked);
        let mut buf = vec![0xCDu8; need + 16];
        let mut len = 999usize;
        let mut e = new_err();
        let st = f(buf.as_mut_ptr(), need - 1, &mut len, &mut e);
        check_err(st, &e)?;
        if st != Status::BufferTooSmall || len != need || buf.iter().any(|&b| b != 0xCD) {
            return Err(format!("one byte short: {st:?}, *out_len {len} (need {need}), buffer touched?"));
        }
        let mut e = new_err();
        let st = f(buf.as_mut_ptr(), need, &mut len, &mut e);
        check_err(st, &e)?;
        if st != Status::Ok || len != need || buf[need..].iter().any(|&b| b != 0xCD) {
            return Err(format!("exact fit: {st:?}, *out_len {len} (need {need})"));
        }
        buf.truncate(need);
        Ok(Outcome { status: "OK".into(), out: Some(buf), ..Default::default() })
    }

    /// A read whose answer may change between two calls (`mnem_stats`: live counters, and
    /// not kept for a retry): sized by a query, then retried with room to spare.
    fn read_moving(
        &self,
        f: &dyn Fn(*mut u8, usize, *mut usize, *mut mnem_error) -> Status,
    ) -> Result<Outcome, String> {
        for _ in 0..5 {
            let (mut e, mut need) = (new_err(), 0usize);
            let st = f(ptr::null_mut(), 0, &mut need, &mut e);
            let msg = check_err(st, &e)?;
            if st != Status::BufferTooSmall {
                return Ok(Outcome { status: status_name(st as i32), message: msg, ..Default::default() });
            }
            let mut buf = vec![0u8; need + 256];
            let (mut e, mut len) = (new_err(), 0usize);
            let st = f(buf.as_mut_ptr(), buf.len(), &mut len, &mut e);
            let msg = check_err(st, &e)?;
            match st {
                Status::Ok => {
                    buf.truncate(len);
                    return Ok(Outcome { status: "OK".into(), out: Some(buf), ..Default::default() });
                }
                Status::BufferTooSmall => continue,
                _ => return Ok(Outcome { status: status_name(st as i32), message: msg, ..Default::default() }),
            }
        }
        Err("the answer outgrew its buffer five times".into())
    }

    fn call(&mut self, call: &str, a: &Value) -> Result<Outcome, String> {
        let app = text_arg(a, "app");
        let app = if a.get("app").is_none() { "app".to_string() } else { app };
        let user = if a.get("user").is_none() { "user".to_string() } else { text_arg(a, "user") };
        let (app_s, user_s) = (view(app.as_bytes()), view(user.as_bytes()));
        let mut e = new_err();
        let mut n: u64 = 0x5A5A;
        let done = |st: Status, e: &mnem_error, count: Option<u64>| -> Result<Outcome, String> {
            let message = check_err(st, e)?;
            Ok(Outcome { status: status_name(st as i32), message, count, ..Default::default() })
        };
        let statics = |v: Value| Ok(Outcome { status: "OK".into(), value: Some(v), ..Default::default() });
        let cstr = |p: *const std::ffi::c_char| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        let status_arg = || a.get("status").and_then(Value::as_i64).unwrap_or(0) as i32;
        match call {
            "abi_version" => return statics(mnem_abi_version().into()),
            "version" => return statics(cstr(mnem_version()).into()),
            "status_name" => return statics(cstr(mnem_status_name(status_arg())).into()),
            "status_message" => return statics(cstr(mnem_status_message(status_arg())).into()),
            "embedder_texts" => return statics(std::mem::take(&mut *self.texts.lock().unwrap()).into()),
            "open" => {
                let flags = match a.get("flags") {
                    Some(Value::Number(n)) => n.as_u64().unwrap_or(0) as u32,
                    Some(Value::Array(v)) => v.iter().fold(0, |f, x| {
                        f | match x.as_str() {
                            Some("create") => MNEM_OPEN_CREATE,
                            Some("read_only") => MNEM_OPEN_READ_ONLY,
                            Some("view") => MNEM_OPEN_VIEW,
                            _ => 1 << 31,
                        }
                    }),
                    _ => MNEM_OPEN_CREATE,
                };
                let path = self.path(a.get("path").and_then(Value::as_str).unwrap_or(":memory:"));
                let opts = text_arg(a, "options");
                let name = a.get("as").and_then(Value::as_str).unwrap_or("main").to_string();
                if self.handles.contains_key(&name) {
                    return Err(format!("store {name:?} is already open"));
                }
                let mut poison = 0u8; // mnem_open must reset the handle to NULL on failure
                let mut h = (&raw mut poison).cast::<mnem_store>();
                let st = mnem_open(view(path.as_bytes()), flags, view(opts.as_bytes()), &mut h, &mut e);
                if (st == Status::Ok) == h.is_null() {
                    return Err(format!("open {st:?} with handle {h:?}"));
                }
                if st == Status::Ok {
                    self.handles.insert(name, h);
                }
                return done(st, &e, None);
            }
            _ => {}
        }
        let h = self.handle(a)?;
        let s = |k: &str| text_arg(a, k);
        let out = match call {
            "close" => {
                mnem_free(h);
                self.handles.retain(|_, v| *v != h);
                Outcome { status: "OK".into(), ..Default::default() }
            }
            "flush" => done(mnem_flush(h, &mut e), &e, None)?,
            "compact" => done(mnem_compact(h, &mut e), &e, None)?,
            "forget_namespace" => done(mnem_forget_namespace(h, app_s, user_s, &mut e), &e, None)?,
            "set_embedder" => {
                let (f, ud) = self.embedder(a.get("kind").and_then(Value::as_str).unwrap_or("words"))?;
                match a.get("model").and_then(Value::as_str) {
                    Some(model) => done(mnem_set_named_embedder(h, view(model.as_bytes()), f, ud, &mut e), &e, None)?,
                    None => done(mnem_set_embedder(h, f, ud, &mut e), &e, None)?,
                }
            }
            "backup" => {
                let dest = self.path(&s("dest"));
                done(mnem_backup(h, view(dest.as_bytes()), &mut e), &e, None)?
            }
            "add_session" | "add_events" | "delete_memory" | "delete_session" | "delete_episodes" | "import" => {
                let st = match call {
                    "add_session" => {
                        let (sid, ev) = (s("session_id"), lines_arg(a, "events"));
                        mnem_add_session(h, app_s, user_s, view(sid.as_bytes()), view(ev.as_bytes()), &mut n, &mut e)
                    }
                    "add_events" => {
                        let (sid, ev, meta) = (s("session_id"), lines_arg(a, "events"), s("metadata"));
                        mnem_add_events(
                            h,
                            app_s,
                            user_s,
                            view(sid.as_bytes()),
                            view(ev.as_bytes()),
                            view(meta.as_bytes()),
                            &mut n,
                            &mut e,
                        )
                    }
                    "delete_memory" => {
                        mnem_delete_memory(h, app_s, user_s, view(s("memory_id").as_bytes()), &mut n, &mut e)
                    }
                    "delete_session" => {
                        mnem_delete_session(h, app_s, user_s, view(s("session_id").as_bytes()), &mut n, &mut e)
                    }
                    "delete_episodes" => {
                        mnem_delete_episodes(h, app_s, user_s, view(lines_arg(a, "ids").as_bytes()), &mut n, &mut e)
                    }
                    _ => mnem_import(h, view(lines_arg(a, "lines").as_bytes()), &mut n, &mut e),
                };
                if st != Status::Ok && n != 0 && n != 0x5A5A {
                    return Err(format!("{call} failed with count {n}"));
                }
                done(st, &e, (st == Status::Ok).then_some(n))?
            }
            "put_episodes" => {
                let data = lines_arg(a, "episodes");
                let lines = data.split('\n').filter(|l| !l.trim_matches([' ', '\t', '\r']).is_empty()).count();
                let mut ids = vec![0xEEu8; 16 * lines + 16];
                let st =
                    mnem_put_episodes(h, app_s, user_s, view(data.as_bytes()), ids.as_mut_ptr(), 16 * lines, &mut e);
                let mut o = done(st, &e, None)?;
                if ids[16 * lines..].iter().any(|&b| b != 0xEE) {
                    return Err("put_episodes wrote past 16 bytes per line".into());
                }
                if st == Status::Ok {
                    o.ids = Some(
                        ids[..16 * lines].chunks(16).map(|c| uuid::Uuid::from_slice(c).unwrap().to_string()).collect(),
                    );
                }
                o
            }
            "put_episodes_v2" => {
                let data = lines_arg(a, "episodes");
                let wanted = a.get("ids_wanted").and_then(Value::as_bool).unwrap_or(true);
                // One call with `cap` bytes of ids (None: NULL, not wanted) and 16 guard bytes.
                let put = |cap: Option<usize>| -> Result<(Outcome, Vec<u8>), String> {
                    let n = cap.unwrap_or(0);
                    let mut buf = vec![0xEEu8; n + 16];
                    let out = if cap.is_some() { buf.as_mut_ptr() } else { ptr::null_mut() };
                    let (mut len, mut e) = (0x5A5Ausize, new_err());
                    let st = mnem_put_episodes_v2(h, app_s, user_s, view(data.as_bytes()), out, n, &mut len, &mut e);
                    let mut o = done(st, &e, None)?;
                    let untouched_from = if st == Status::Ok { len.min(n) } else { 0 };
                    if buf[untouched_from..].iter().any(|&b| b != 0xEE) {
                        return Err(format!("{st:?}: out_ids written past {untouched_from} bytes"));
                    }
                    if !matches!(st, Status::Ok | Status::BufferTooSmall) && len != 0 {
                        return Err(format!("{st:?} with *out_ids_len {len}"));
                    }
                    if st == Status::BufferTooSmall && len <= n {
                        return Err(format!("BUFFER_TOO_SMALL with *out_ids_len {len} for out_ids_cap {n}"));
                    }
                    if st == Status::Ok && cap.is_some() {
                        o.ids = Some(
                            buf[..len].chunks(16).map(|c| uuid::Uuid::from_slice(c).unwrap().to_string()).collect(),
                        );
                    }
                    o.ids_len = Some(len as u64);
                    Ok((o, buf))
                };
                match (a.get("ids_cap").and_then(Value::as_u64), wanted) {
                    (_, false) => put(None)?.0,
                    (Some(cap), true) => put(Some(cap as usize))?.0,
                    // The protocol: a size query, a buffer one byte short, then the exact size.
                    (None, true) => {
                        let (q, _) = put(Some(0))?;
                        if q.status != "BUFFER_TOO_SMALL" {
                            q // the OK of a batch without ids, or the call's error
                        } else {
                            let need = q.ids_len.unwrap() as usize;
                            let (short, _) = put(Some(need - 1))?;
                            if short.status != "BUFFER_TOO_SMALL" || short.ids_len != Some(need as u64) {
                                return Err(format!(
                                    "one byte short: {}, *out_ids_len {:?}",
                                    short.status, short.ids_len
                                ));
                            }
                            let (o, _) = put(Some(need))?;
                            if o.status == "OK" && o.ids_len != Some(need as u64) {
                                return Err(format!("exact fit: *out_ids_len {:?}, need {need}", o.ids_len));
                            }
                            o
                        }
                    }
                }
            }
            "search" => {
                let q = s("query");
                self.read(&|o, c, l, e| mnem_search(h, app_s, user_s, view(q.as_bytes()), o, c, l, e))?
            }
            "keyword_search" | "lexical_page" | "substring_search" | "hybrid_search" | "get_episodes" => {
                let q = if call == "get_episodes" { lines_arg(a, "ids") } else { s("query") };
                let f = match call {
                    "keyword_search" => mnem_keyword_search,
                    "lexical_page" => mnem_lexical_page,
                    "substring_search" => mnem_substring_search,
                    "hybrid_search" => mnem_hybrid_search,
                    _ => mnem_get_episodes,
                };
                self.read(&|o, c, l, e| f(h, app_s, user_s, view(q.as_bytes()), o, c, l, e))?
            }
            "recall" => {
                let q = s("query");
                self.read(&|o, c, l, e| mnem_recall(h, app_s, user_s, view(q.as_bytes()), o, c, l, e))?
            }
            "hybrid_search_with" => {
                let (q, (f, ud)) =
                    (s("query"), self.embedder(a.get("embedder").and_then(Value::as_str).unwrap_or("words"))?);
                self.read(&|o, c, l, e| {
                    mnem_hybrid_search_with(h, app_s, user_s, view(q.as_bytes()), f, ud, o, c, l, e)
                })?
            }
            "list_namespaces" => {
                let q = s("query");
                self.read(&|o, c, l, e| mnem_list_namespaces(h, view(q.as_bytes()), o, c, l, e))?
            }
            "namespace_stats" => self.read(&|o, c, l, e| mnem_namespace_stats(h, app_s, user_s, o, c, l, e))?,
            "stats" => self.read_moving(&|o, c, l, e| mnem_stats(h, o, c, l, e))?,
            "check" => self.read(&|o, c, l, e| mnem_check(h, o, c, l, e))?,
            "export" | "export_page" => {
                let all = i32::from(a.get("all").and_then(Value::as_bool).unwrap_or(false));
                if call == "export" {
                    self.read(&|o, c, l, e| mnem_export(h, app_s, user_s, all, o, c, l, e))?
                } else {
                    let cursor = s("cursor");
                    let max = a.get("max_bytes").and_then(Value::as_u64).unwrap_or(0);
                    self.read(&|o, c, l, e| {
                        mnem_export_page(h, app_s, user_s, all, view(cursor.as_bytes()), max, o, c, l, e)
                    })?
                }
            }
            other => return Err(format!("unknown call {other:?}")),
        };
        Ok(out)
    }

    fn step(&mut self, step: &Value) -> Result<(), String> {
        let call = step["call"].as_str().ok_or("step without call")?;
        let args = subst_value(step.get("args").unwrap_or(&Value::Null), &self.vars)?;
        let args = if args.is_null() { Value::Object(Default::default()) } else { args };
        let got = self.call(call, &args)?;
        let want = &step["expect"];
        let want_status = want.get("status").and_then(Value::as_str).unwrap_or("OK");
        if got.status != want_status {
            return Err(format!("status {} ({:?}), want {want_status}", got.status, got.message));
        }
        for m in want.get("message_has").and_then(Value::as_array).into_iter().flatten() {
            let m = m.as_str().unwrap_or("");
            if !got.message.contains(m) {
                return Err(format!("message {:?} lacks {m:?}", got.message));
            }
        }
        let vars = &mut self.vars;
        if let Some(c) = want.get("count") {
            check(c, &got.count.map_or(Value::Null, Value::from), vars, "count")?;
        }
        if let Some(w) = want.get("ids") {
            let ids = got.ids.clone().map(Value::from).unwrap_or(Value::Null);
            check(w, &ids, vars, "ids")?;
        }
        if let Some(w) = want.get("ids_len") {
            check(w, &got.ids_len.map_or(Value::Null, Value::from), vars, "ids_len")?;
        }
        if let Some(w) = want.get("value") {
            check(w, got.value.as_ref().unwrap_or(&Value::Null), vars, "value")?;
        }
        let raw = got.out.as_deref().unwrap_or_default();
        let text = std::str::from_utf8(raw).map_err(|_| "output is not UTF-8")?;
        if let Some(w) = want.get("json") {
            let v: Value = serde_json::from_str(text).map_err(|e| format!("output is not JSON: {e}"))?;
            check(w, &v, vars, "json")?;
        }
        if let Some(w) = want.get("lines") {
            let v = text
                .split('\n')
                .filter(|l| !l.is_empty())
                .map(serde_json::from_str)
                .collect::<Result<Vec<Value>, _>>()
                .map_err(|e| format!("output line is not JSON: {e}"))?;
            check(w, &Value::Array(v), vars, "lines")?;
        }
        for r in want.get("raw_contains").and_then(Value::as_array).into_iter().flatten() {
            let r = r.as_str().unwrap_or("");
            if !text.contains(r) {
                return Err(format!("output lacks the bytes {r:?}: {text}"));
            }
        }
        if let Some(name) = want.get("capture").and_then(Value::as_str) {
            vars.insert(name.to_string(), text.to_string());
        }
        Ok(())
    }
}

fn run_case(path: &Path, pg: Option<&str>) -> Result<usize, String> {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).map_err(|e| e.to_string())?)
        .map_err(|e| format!("not JSON: {e}"))?;
    let tmp = std::env::temp_dir().join(format!(
        "mnem-conformance-{}-{}",
        std::process::id(),
        path.file_stem().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let pg = pg.map(|uri| {
        (uri.to_string(), format!("c{}_{}", std::process::id(), path.file_stem().unwrap().to_string_lossy()))
    });
    let mut r = Replay {
        tmp,
        handles: HashMap::new(),
        vars: HashMap::new(),
        embedders: Vec::new(),
        texts: Default::default(),
        pg,
        opens: Default::default(),
    };
    match doc.get("open") {
        Some(Value::Null) => {}
        Some(o) => r.call("open", o).map(|_| ())?,
        None => {
            let o = r.call("open", &serde_json::json!({"path": ":memory:", "flags": ["create"]}))?;
            if o.status != "OK" {
                return Err(format!("default open: {}", o.message));
            }
        }
    }
    let steps = doc["steps"].as_array().ok_or("no steps")?;
    for (i, s) in steps.iter().enumerate() {
        r.step(s).map_err(|e| format!("step {} ({}): {e}", i + 1, s["call"]))?;
    }
    Ok(steps.len())
}

/// Cases about what only a store directory has: one process's exclusive open (BUSY; a
/// PostgreSQL store is shared, so a second read-write open or a view beside a writer is
/// OK), paths that are not there, backups into a directory (the server backs up its
/// databases), and RocksDB's block cache in `stats`.
const DIRECTORY_CASES: [&str; 5] =
    ["open_busy_and_reopen", "open_errors", "check_backup_compact", "view", "open_stats"];

#[test]
fn conformance_corpus() {
    replay_corpus(None);
}

/// The same corpus on PostgreSQL (`MNEM_TEST_PG_URI`, as scripts/test sets it; skipped
/// without it), every case but `DIRECTORY_CASES`: the same answers on both backends.
#[test]
fn conformance_corpus_on_postgresql() {
    match std::env::var("MNEM_TEST_PG_URI") {
        Ok(uri) if !uri.is_empty() => replay_corpus(Some(&uri)),
        _ => eprintln!("conformance on PostgreSQL: skipped (MNEM_TEST_PG_URI is not set)"),
    }
}

fn replay_corpus(pg: Option<&str>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    if pg.is_some() {
        files.retain(|p| !DIRECTORY_CASES.iter().any(|c| p.file_stem().is_some_and(|s| s == *c)));
    }
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    let (mut steps, mut failed) = (0, Vec::new());
    for f in &files {
        match run_case(f, pg) {
            Ok(n) => steps += n,
            Err(e) => failed.push(format!("{}: {e}", f.file_name().unwrap().to_string_lossy())),
        }
    }
    eprintln!("conformance: {} cases, {steps} steps, {} failed", files.len(), failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn matchers_reject_what_they_must() {
    // The replayer's comparison must be able to fail: a wrong value, an extra key, a wrong
    // length, a rebound variable and a wrong local time are all mismatches.
    use serde_json::json;
    let mut v = HashMap::new();
    assert!(check(&json!({"a": 1}), &json!({"a": 2}), &mut v, "").is_err());
    assert!(check(&json!({"a": 1}), &json!({"a": 1, "b": 2}), &mut v, "").is_err());
    assert!(check(&json!([1, 2]), &json!([1]), &mut v, "").is_err());
    assert!(check(&json!(1), &json!(1.0), &mut v, "").is_ok());
    let id = "0190a5e4-0000-7000-8000-000000000001";
    assert!(check(&json!({"$uuid": "x"}), &json!(id), &mut v, "").is_ok());
    assert!(check(&json!({"$uuid": "x"}), &json!("0190a5e4-0000-7000-8000-000000000002"), &mut v, "").is_err());
    assert!(check(&json!({"$uuid": ""}), &json!("not-a-uuid"), &mut v, "").is_err());
    assert!(check(&json!({"$any": "integer"}), &json!(1.5), &mut v, "").is_err());
    let t = conformance_match::local_iso(12345.5);
    assert!(t.ends_with(".500000") && t.len() == 26, "{t}");
    assert!(check(&json!({"$localtime": 12345}), &json!(t), &mut v, "").is_err());
}
