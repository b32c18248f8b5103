//! ADK's `_utils.format_timestamp`: `datetime.fromtimestamp(ts).isoformat()`.

use crate::ffi::sys::local_time;

/// Format like CPython: local time, no offset, `.ffffff` only when the microseconds are not
/// zero, microseconds rounded half-to-even with carry into the seconds.
pub fn format_timestamp(ts: f64) -> Option<String> {
    if !ts.is_finite() {
        return None;
    }
    let int = ts.trunc();
    let mut frac = ((ts - int) * 1e6).round_ties_even();
    let mut secs = int;
    if frac >= 1e6 {
        frac -= 1e6;
        secs += 1.0;
    } else if frac < 0.0 {
        frac += 1e6;
        secs -= 1.0;
    }
    if secs.abs() > 1e15 {
        return None;
    }
    let t = local_time(secs as i64)?;
    if !(1..=9999).contains(&t.year) {
        return None;
    }
    let us = frac as u32;
    let mut s = format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second);
    if us != 0 {
        s.push_str(&format!(".{us:06}"));
    }
    Some(s)
}
