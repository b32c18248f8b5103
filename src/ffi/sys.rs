//! Safe wrappers over the few C library calls the core needs.

/// Broken-down local time of `secs` since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// `localtime_r(3)`: the process's local time zone as the C library knows it (`TZ`,
/// `/etc/localtime`), the same source CPython's `datetime.fromtimestamp` reads.
pub fn local_time(secs: i64) -> Option<LocalTime> {
    let t = libc::time_t::try_from(secs).ok()?;
    // SAFETY: `tm` is plain old data, so all-zero is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live, properly aligned locals; localtime_r is the
    // re-entrant form and writes only to `tm`.
    let r = unsafe { libc::localtime_r(&t, &mut tm) };
    if r.is_null() {
        return None;
    }
    Some(LocalTime {
        year: i64::from(tm.tm_year) + 1900,
        month: (tm.tm_mon + 1) as u32,
        day: tm.tm_mday as u32,
        hour: tm.tm_hour as u32,
        minute: tm.tm_min as u32,
        // A leap second (60) is clamped as CPython does.
        second: tm.tm_sec.min(59) as u32,
    })
}

/// `tzset(3)`: re-read `TZ`, as Python's `time.tzset()` does.
pub fn tzset() {
    extern "C" {
        fn tzset();
    }
    // SAFETY: tzset takes no arguments and only updates the C library's time zone state.
    unsafe { tzset() }
}

/// The file mnem's code was loaded from, resolved: `libmnem.so` when mnem is a shared
/// library, the program when it is linked in (`dladdr(3)` of one of its own functions).
/// The built-in embedder looks for its model beside it.
pub fn library_path() -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: `Dl_info` is plain old data (pointers and an integer), so all-zero is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let addr = library_path as *const () as *const libc::c_void;
    // SAFETY: `addr` is the address of a function of this object and `info` a live local;
    // dladdr only writes `info`, whose strings point into the loader's own tables.
    let found = unsafe { libc::dladdr(addr, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned non-zero, so `dli_fname` is a NUL-terminated path the loader
    // keeps for as long as the object stays loaded; it is copied before returning.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    std::fs::canonicalize(std::ffi::OsStr::from_bytes(name.to_bytes())).ok()
}
