//! The committed C header must be what cbindgen generates from `src/ffi`.
//! Regenerate with `MNEM_UPDATE_HEADER=1 cargo test --release --test header`.

#[test]
fn committed_header_is_fresh() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let mut config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(version_macros());
    let bindings = cbindgen::Builder::new()
        // The ABI is declared in these files only, so that no other `pub` item of the crate
        // can leak into the header.
        .with_src(format!("{dir}/src/error.rs"))
        .with_src(format!("{dir}/src/ffi/mod.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = format!("{dir}/include/mnem.h");
    if std::env::var_os("MNEM_UPDATE_HEADER").is_some() {
        std::fs::create_dir_all(format!("{dir}/include")).unwrap();
        // Written whole and renamed, so that the tests reading the header in parallel never
        // see half of it.
        std::fs::write(format!("{path}.tmp"), &fresh).unwrap();
        std::fs::rename(format!("{path}.tmp"), &path).unwrap();
    }
    // Every macro is the ABI's own; a new Rust `pub const` must be excluded in cbindgen.toml.
    let text = String::from_utf8(fresh.clone()).unwrap();
    for line in text.lines().filter(|l| l.starts_with("#define ")) {
        let name = line.split_whitespace().nth(1).unwrap();
        assert!(name.starts_with("MNEM_"), "{name} leaks into include/mnem.h: add it to [export] exclude");
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/mnem.h is stale: run `MNEM_UPDATE_HEADER=1 cargo test --release --test header` and commit it"
    );
}

/// The version macros, from the package version Cargo compiles this test with (Cargo.toml's):
/// a version bump leaves the committed header stale until it is regenerated, so the macros
/// cannot drift from the library's `mnem_version()`.
fn version_macros() -> String {
    format!(
        "\n// The version of the library these declarations come from (Cargo.toml's). `mnem_version()`\n\
         // returns the version of the library actually loaded; MNEM_ABI_VERSION is what must match.\n\
         #define MNEM_VERSION_MAJOR {}\n#define MNEM_VERSION_MINOR {}\n#define MNEM_VERSION_PATCH {}\n\
         #define MNEM_VERSION_STRING \"{}\"",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION"),
    )
}

/// The `[package]` version in Cargo.toml, the header's version macros and `mnem_version()` agree.
#[test]
fn version_macros_match_cargo_toml_and_library() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let manifest = std::fs::read_to_string(format!("{dir}/Cargo.toml")).unwrap();
    let mut in_package = false;
    let mut version = None;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let Some(v) = line.strip_prefix("version").map(str::trim_start).and_then(|r| r.strip_prefix('=')) {
            if in_package {
                version = Some(v.trim().trim_matches('"').to_string());
            }
        }
    }
    let version = version.expect("Cargo.toml has [package] version");
    let parts: Vec<&str> = version.split('.').collect();
    assert_eq!(parts.len(), 3, "Cargo.toml version {version} is not MAJOR.MINOR.PATCH");

    let header = std::fs::read_to_string(format!("{dir}/include/mnem.h")).unwrap();
    let define = |name: &str| -> String {
        let prefix = format!("#define {name} ");
        let line =
            header.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("include/mnem.h lacks {name}"));
        line[prefix.len()..].trim().to_string()
    };
    assert_eq!(define("MNEM_VERSION_MAJOR"), parts[0]);
    assert_eq!(define("MNEM_VERSION_MINOR"), parts[1]);
    assert_eq!(define("MNEM_VERSION_PATCH"), parts[2]);
    assert_eq!(define("MNEM_VERSION_STRING"), format!("\"{version}\""));
    assert_eq!(define("MNEM_ABI_VERSION"), mnem::ffi::mnem_abi_version().to_string());

    // SAFETY: mnem_version returns a pointer to a static NUL-terminated string.
    let loaded = unsafe { std::ffi::CStr::from_ptr(mnem::ffi::mnem_version()) };
    assert_eq!(loaded.to_str().unwrap(), version);
}

/// The header's `enum mnem_status` is `mnem::Status`: every C name with its code, and
/// `mnem_status_name` / `mnem_status_message` answer for each and for any other integer.
#[test]
fn status_enum_names_and_messages() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mnem.h")).unwrap();
    let c_str = |p: *const std::ffi::c_char| {
        assert!(!p.is_null());
        // SAFETY: both functions return pointers to static NUL-terminated strings.
        unsafe { std::ffi::CStr::from_ptr(p) }.to_str().unwrap().to_string()
    };
    let mut codes = Vec::new();
    for &s in mnem::Status::ALL {
        let line = format!("  MNEM_STATUS_{} = {},", s.name(), s as i32);
        assert!(header.lines().any(|l| l == line), "include/mnem.h lacks `{line}`");
        assert_eq!(c_str(mnem::ffi::mnem_status_name(s as i32)), s.name());
        assert_eq!(c_str(mnem::ffi::mnem_status_message(s as i32)), s.default_message().to_str().unwrap());
        codes.push(s as i32);
    }
    assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100]);
    let enumerators = header.lines().filter(|l| l.starts_with("  MNEM_STATUS_")).count();
    assert_eq!(enumerators, codes.len(), "a status in the header is not in Status::ALL");
    for code in [-1, 10, 99, 101, 12345, i32::MIN, i32::MAX] {
        assert_eq!(c_str(mnem::ffi::mnem_status_name(code)), "UNKNOWN");
        assert_eq!(c_str(mnem::ffi::mnem_status_message(code)), "unknown status");
    }
    // Every fault-injection hook is declared only for builds that define MNEM_FAULT_INJECTION.
    let mut guarded = false;
    for line in header.lines() {
        if line.starts_with("#if defined(MNEM_FAULT_INJECTION)") {
            guarded = true;
        } else if line.starts_with("#endif") {
            guarded = false;
        } else if line.contains("mnem_debug_") && !line.starts_with("//") && !line.starts_with(" *") {
            assert!(guarded, "`{line}` is outside #if defined(MNEM_FAULT_INJECTION)");
        }
    }
}
