//! ADK's timestamp format in a non-UTC zone. One test per process: it sets `TZ`.

use mnem::adk::timestamp::format_timestamp;

#[test]
fn formats_like_python_datetime_fromtimestamp() {
    std::env::set_var("TZ", "UTC");
    assert_eq!(format_timestamp(0.0).unwrap(), "1970-01-01T00:00:00");
    assert_eq!(format_timestamp(0.5).unwrap(), "1970-01-01T00:00:00.500000");
    assert_eq!(format_timestamp(-0.5).unwrap(), "1969-12-31T23:59:59.500000");
    assert_eq!(format_timestamp(1700000000.9999996).unwrap(), "2023-11-14T22:13:21");
    assert_eq!(format_timestamp(1700000000.5).unwrap(), "2023-11-14T22:13:20.500000");
    assert_eq!(format_timestamp(12345.0).unwrap(), "1970-01-01T03:25:45");
    assert_eq!(format_timestamp(f64::NAN), None);
    // glibc reads TZ again only through tzset(3); Python's time.tzset() does the same.
    std::env::set_var("TZ", "Asia/Kolkata");
    mnem::ffi::sys::tzset();
    assert_eq!(format_timestamp(1700000000.5).unwrap(), "2023-11-15T03:43:20.500000");
}
