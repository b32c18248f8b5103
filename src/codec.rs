//! The small byte codec of index values and keys (docs/FORMAT.md): little-endian values,
//! length-prefixed strings, optional expiry times; reading past the end is corruption.

use crate::error::{Error, Result};

/// A length as the encodings write it: every key, value and field is far below 4 GiB (the
/// records' and requests' limits keep them so).
pub(crate) fn len32(n: usize) -> u32 {
    u32::try_from(n).expect("keys, values and fields are below 4 GiB")
}

/// Append `u32le(len) ‖ bytes` (values).
pub(crate) fn push_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&len32(b.len()).to_le_bytes());
    out.extend_from_slice(b);
}

/// Append `u32be(len) ‖ bytes` (keys: big-endian, so that shorter strings sort first).
pub(crate) fn push_be_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&len32(b.len()).to_be_bytes());
    out.extend_from_slice(b);
}

/// Append `00` (never) or `01 ‖ i64le(ms)`.
pub(crate) fn push_expiry(out: &mut Vec<u8>, e: Option<i64>) {
    match e {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
}

/// A reader of one value of `what` (named in corruption messages, e.g. "a keyword index value").
pub(crate) struct Reader<'a> {
    pub rest: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Reader<'a> {
        Reader { rest: bytes, what }
    }

    fn damaged(&self, how: &str) -> Error {
        Error::corruption(format!("{} {how}", self.what))
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.rest.len() < n {
            return Err(self.damaged("is truncated"));
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Ok(a)
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// What `push_bytes` wrote: `u32le(len) ‖ bytes`.
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// What `push_be_bytes` wrote: `u32be(len) ‖ bytes`.
    pub fn be_bytes(&mut self) -> Result<&'a [u8]> {
        let n = u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
        self.take(n)
    }

    /// A `u32le(len) ‖ UTF-8` string.
    pub fn str(&mut self) -> Result<&'a str> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| self.damaged("holds a string that is not UTF-8"))
    }

    /// What `push_expiry` wrote.
    pub fn expiry(&mut self) -> Result<Option<i64>> {
        match self.take(1)?[0] {
            0 => Ok(None),
            1 => Ok(Some(self.i64()?)),
            _ => Err(self.damaged("has a malformed expiry flag")),
        }
    }

    /// The rest, as UTF-8.
    pub fn rest_str(&mut self) -> Result<&'a str> {
        let b = std::mem::take(&mut self.rest);
        std::str::from_utf8(b).map_err(|_| self.damaged("holds a string that is not UTF-8"))
    }

    pub fn done(&self) -> Result<()> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(self.damaged("has trailing bytes"))
        }
    }
}
