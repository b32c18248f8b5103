//! Status codes and the error type every fallible operation returns.
//!
//! `Status` is the only definition of the status codes: cbindgen exports it to
//! `include/mnem.h` as the C enum `mnem_status` (`MNEM_STATUS_OK = 0`, ...), its variants'
//! doc comments included, and `status_table!` below gives every variant its C name and
//! default message.

use std::ffi::CStr;
use std::fmt;

/// The outcome of a call. A 32-bit integer in C: `mnem_status` is `int32_t` before C23, an
/// enum with underlying type `int32_t` in C23 and C++ (convert other integers with a cast).
/// The values never change; a new status only ever takes a new number, so treat an unknown
/// value as an error (`mnem_status_name` returns "UNKNOWN" for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// An argument is NULL, not UTF-8, malformed JSON, out of range, or otherwise invalid; the
    /// message names it. Nothing was changed.
    InvalidArgument = 1,
    /// The output buffer is too small: `*out_len` holds the exact size needed and `out` is
    /// untouched.
    BufferTooSmall = 2,
    /// `mnem_open` found no store at the path and `MNEM_OPEN_CREATE` was not given.
    NotFound = 3,
    /// The store is already open (in this process or another), or the storage engine reported
    /// a busy, timed-out or try-again condition (a PostgreSQL store: also a lost connection or
    /// a server restarting or failing over). Nothing was changed; retry later. One exception:
    /// when a PostgreSQL connection breaks during a write's commit, the write applied whole or
    /// not at all, and the server alone knows which.
    Busy = 4,
    /// A write on a handle opened with `MNEM_OPEN_READ_ONLY`. Nothing was changed.
    ReadOnly = 5,
    /// The operating system or the storage engine failed to read or write; the message
    /// carries its reason (for the engine: `rocksdb: <its status>`).
    Io = 6,
    /// Stored data is damaged: a record, index entry or key that mnem cannot parse, or
    /// damage the storage engine detected. Any function that reads the store can return it.
    Corruption = 7,
    /// `mnem_open`: the store was written in a newer on-disk format than this build reads.
    Incompatible = 8,
    /// The embedder (the caller's model, registered with `mnem_set_embedder` or given to one
    /// call) failed, panicked or returned something that is not a valid vector; the message
    /// says which. Nothing was changed.
    EmbedderFailed = 9,
    /// A bug in mnem (a caught panic). The handle is poisoned: every later call on it
    /// returns `MNEM_STATUS_INTERNAL` (with `*out_len` and counters 0); only `mnem_free`
    /// remains useful.
    Internal = 100,
}

/// Pairs every variant with its C name (without `MNEM_STATUS_`) and a one-line default
/// message. The `match`es it generates are exhaustive, so a variant cannot be added without
/// its row, and `ALL` is built from the same rows.
macro_rules! status_table {
    ($($variant:ident => $name:literal, $message:literal;)*) => {
        impl Status {
            /// Every status, in the order of its code.
            pub const ALL: &'static [Status] = &[$(Status::$variant),*];

            /// The C name without its `MNEM_STATUS_` prefix: "OK", "INVALID_ARGUMENT", ...
            pub const fn name(self) -> &'static str {
                match self {
                    $(Status::$variant => $name,)*
                }
            }

            /// `name` as a static C string.
            pub const fn c_name(self) -> &'static CStr {
                match self {
                    $(Status::$variant => const { c_str(concat!($name, "\0")) },)*
                }
            }

            /// A one-line description of the status, used where no specific message exists.
            pub const fn default_message(self) -> &'static CStr {
                match self {
                    $(Status::$variant => const { c_str(concat!($message, "\0")) },)*
                }
            }
        }
    };
}

status_table! {
    Ok => "OK", "success";
    InvalidArgument => "INVALID_ARGUMENT", "an argument is invalid";
    BufferTooSmall => "BUFFER_TOO_SMALL", "the output buffer is too small";
    NotFound => "NOT_FOUND", "no store at the path";
    Busy => "BUSY", "the store is busy; retry later";
    ReadOnly => "READ_ONLY", "the store is open read-only";
    Io => "IO", "the operating system or the storage engine failed";
    Corruption => "CORRUPTION", "stored data is damaged";
    Incompatible => "INCOMPATIBLE", "the store has a newer on-disk format";
    EmbedderFailed => "EMBEDDER_FAILED", "the embedder failed";
    Internal => "INTERNAL", "internal error in mnem; the handle is poisoned";
}

const fn c_str(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a status table string contains NUL"),
    }
}

impl Status {
    /// The status with this code, or None: never assumes `code` is valid.
    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL.iter().copied().find(|s| *s as i32 == code)
    }
}

/// An error: a status and a message that names the problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub status: Status,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArgument, message)
    }
    pub fn corruption(message: impl Into<String>) -> Error {
        Error::new(Status::Corruption, message)
    }
    /// Prefix the message with where the problem is (a field, a line).
    pub fn context(mut self, what: impl fmt::Display) -> Error {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_messages_come_from_one_table() {
        let codes: Vec<i32> = Status::ALL.iter().map(|s| *s as i32).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100]);
        for &s in Status::ALL {
            assert_eq!(Status::from_code(s as i32), Some(s));
            assert_eq!(s.c_name().to_str(), Ok(s.name()));
            assert!(!s.default_message().is_empty());
        }
        for code in [-1, 10, 99, 101, i32::MIN, i32::MAX] {
            assert_eq!(Status::from_code(code), None);
        }
    }
}
