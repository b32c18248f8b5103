//! Status codes and the error type every fallible operation returns.

use std::fmt;

/// The status of an operation; the numeric values are the C ABI's (append-only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Status {
    Ok = 0,
    InvalidArgument = 1,
    BufferTooSmall = 2,
    NotFound = 3,
    Busy = 4,
    ReadOnly = 5,
    Io = 6,
    Corruption = 7,
    Incompatible = 8,
    Internal = 100,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::InvalidArgument => "INVALID_ARGUMENT",
            Status::BufferTooSmall => "BUFFER_TOO_SMALL",
            Status::NotFound => "NOT_FOUND",
            Status::Busy => "BUSY",
            Status::ReadOnly => "READ_ONLY",
            Status::Io => "IO",
            Status::Corruption => "CORRUPTION",
            Status::Incompatible => "INCOMPATIBLE",
            Status::Internal => "INTERNAL",
        }
    }

    pub fn from_code(code: i32) -> Option<Status> {
        Some(match code {
            0 => Status::Ok,
            1 => Status::InvalidArgument,
            2 => Status::BufferTooSmall,
            3 => Status::NotFound,
            4 => Status::Busy,
            5 => Status::ReadOnly,
            6 => Status::Io,
            7 => Status::Corruption,
            8 => Status::Incompatible,
            100 => Status::Internal,
            _ => return None,
        })
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

impl From<rocksdb::Error> for Error {
    fn from(e: rocksdb::Error) -> Error {
        use rocksdb::ErrorKind;
        let status = match e.kind() {
            ErrorKind::Corruption => Status::Corruption,
            ErrorKind::NotFound => Status::NotFound,
            ErrorKind::InvalidArgument => Status::InvalidArgument,
            ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain => Status::Busy,
            _ => Status::Io,
        };
        Error::new(status, format!("rocksdb: {}", e.into_string()))
    }
}
