//! The committed C header must be what cbindgen generates from `src/ffi`.
//! Regenerate with `MNEM_UPDATE_HEADER=1 cargo test --release --test header`.

#[test]
fn committed_header_is_fresh() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).expect("cbindgen.toml");
    let bindings =
        cbindgen::Builder::new().with_crate(dir).with_config(config).generate().expect("cbindgen generates the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = format!("{dir}/include/mnem.h");
    if std::env::var_os("MNEM_UPDATE_HEADER").is_some() {
        std::fs::create_dir_all(format!("{dir}/include")).unwrap();
        std::fs::write(&path, &fresh).unwrap();
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
