//! The JSON wire format of the C ABI, in one place: every query and options parser, every
//! input line parser and every result writer (docs/WIRE.md describes each shape). The
//! operations take and return Rust values; only this module reads or writes their JSON.
//!
//! Inputs are parsed into `RawObject` (key + raw value text) so that values mnem only stores
//! (ADK `content`, episode `metadata`) keep their exact bytes, and every key is checked: a
//! key mnem does not define is an error, so typos surface.
//!
//! Parsers and writers of the operations' own types (`KeywordQuery::parse`,
//! `Episode::write_json`, ...) are inherent methods defined here, so that the modules that
//! define the types never import the wire format. Imports go one way: this module reads the
//! operations' types and the record format, and nothing it imports imports it back.

pub mod adk;
pub mod admin;
pub mod content;
pub mod episode;
pub mod export;
pub mod query;

use crate::error::{Error, Result};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;

/// A JSON object as `(key, raw value)` pairs in input order.
#[derive(Debug)]
pub struct RawObject<'a> {
    pub fields: Vec<(String, &'a RawValue)>,
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
                let mut fields = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                    fields.push((k, v));
                }
                Ok(RawObject { fields })
            }
        }
        d.deserialize_map(V)
    }
}

/// Parse `text` as one JSON object.
pub fn parse_object(text: &str) -> Result<RawObject<'_>> {
    serde_json::from_str::<RawObject>(text).map_err(|e| {
        if e.classify() == serde_json::error::Category::Data {
            Error::invalid("expected a JSON object")
        } else {
            Error::invalid(format!("malformed JSON ({e})"))
        }
    })
}

/// Reads the fields of one object by name, then rejects whatever was not read.
pub struct Fields<'a> {
    obj: RawObject<'a>,
    used: Vec<bool>,
    strict: bool,
}

impl<'a> Fields<'a> {
    /// Unknown keys are errors (objects that mnem defines).
    pub fn strict(obj: RawObject<'a>) -> Fields<'a> {
        let used = vec![false; obj.fields.len()];
        Fields { obj, used, strict: true }
    }
    /// Unknown keys are accepted (ADK objects, custom metadata).
    pub fn lenient(obj: RawObject<'a>) -> Fields<'a> {
        let used = vec![false; obj.fields.len()];
        Fields { obj, used, strict: false }
    }

    /// The raw value of `key`; the last occurrence wins, as in Python's `json` and serde.
    pub fn raw(&mut self, key: &str) -> Option<&'a RawValue> {
        let mut found = None;
        for (i, (k, v)) in self.obj.fields.iter().enumerate() {
            if k == key {
                self.used[i] = true;
                found = Some(*v);
            }
        }
        found
    }

    /// The value of `key`, absent or null as None, of type `T`.
    pub fn get<T: Deserialize<'a>>(&mut self, key: &str, expected: &str) -> Result<Option<T>> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) if v.get() == "null" => Ok(None),
            Some(v) => serde_json::from_str::<T>(v.get()).map(Some).map_err(|e| {
                // A string that is not text (a lone surrogate escape) deserves serde's words.
                if v.get().starts_with('"') && expected == "a string" {
                    Error::invalid(format!("`{key}` is not valid text: {e}"))
                } else {
                    Error::invalid(format!("`{key}` must be {expected}"))
                }
            }),
        }
    }

    pub fn string(&mut self, key: &str) -> Result<Option<String>> {
        self.get::<String>(key, "a string")
    }

    pub fn finish(self) -> Result<()> {
        if self.strict {
            if let Some(i) = self.used.iter().position(|u| !u) {
                return Err(Error::invalid(format!("unknown key `{}`", self.obj.fields[i].0)));
            }
        }
        Ok(())
    }
}

/// The largest JSON Lines batch one call accepts: a batch is parsed whole and committed as
/// one write under the store's write lock, so one call must stay a bounded amount of work.
pub const MAX_BATCH_BYTES: usize = 256 << 20;

/// Iterate the non-blank lines of a JSON Lines batch with their 1-based line numbers.
/// Blank means JSON whitespace only (space, tab, CR): bindings count lines by the same
/// rule to size `mnem_put_episodes`' id buffer, so it must not depend on Unicode tables.
pub fn lines(text: &str) -> Result<impl Iterator<Item = (usize, &str)>> {
    if text.len() > MAX_BATCH_BYTES {
        return Err(Error::invalid(format!(
            "the batch is {} bytes; one call accepts at most {MAX_BATCH_BYTES} (256 MiB): split it",
            text.len()
        )));
    }
    Ok(text
        .split('\n')
        .enumerate()
        .filter(|(_, l)| !l.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')))
        .map(|(i, l)| (i + 1, l)))
}

pub fn push_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing to a Vec cannot fail");
}

pub fn push_opt_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => push_str(out, s),
        None => out.extend_from_slice(b"null"),
    }
}

/// Shortest round-trip decimal; non-finite values (never produced by mnem) as null.
pub fn push_f64(out: &mut Vec<u8>, x: f64) {
    if x.is_finite() {
        serde_json::to_writer(&mut *out, &x).expect("writing to a Vec cannot fail");
    } else {
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_name_the_key_at_fault() {
        let mut f = Fields::strict(parse_object(r#"{"limit":"x","zzz":1}"#).unwrap());
        let e = f.get::<u32>("limit", "an integer").unwrap_err();
        assert!(e.message.contains("`limit`"), "{}", e.message);
        let mut f = Fields::strict(parse_object(r#"{"limit":3,"zzz":1}"#).unwrap());
        assert_eq!(f.get::<u32>("limit", "an integer").unwrap(), Some(3));
        assert!(f.finish().unwrap_err().message.contains("`zzz`"));
    }

    #[test]
    fn raw_values_keep_their_bytes() {
        let o = parse_object(r#"{"content": {"b":1.0, "a":[1e2]} }"#).unwrap();
        assert_eq!(o.fields[0].1.get(), r#"{"b":1.0, "a":[1e2]}"#);
        assert_eq!(parse_object("[1]").unwrap_err().message, "expected a JSON object");
        assert!(parse_object("{").unwrap_err().message.starts_with("malformed JSON"));
    }

    #[test]
    fn lines_skip_blank_and_number_from_one() {
        let v: Vec<_> = lines("a\n\n b\r\n \t\r\n\u{3000}").unwrap().collect();
        assert_eq!(v, vec![(1, "a"), (3, " b\r"), (5, "\u{3000}")], "only JSON whitespace is blank");
    }
}
