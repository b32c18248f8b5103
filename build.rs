//! Gives the cdylib the SONAME `libmnem.so.<ABI major>` (the loader's name for an ABI, the
//! way `libsqlite3.so.0` names sqlite's), and puts that name beside the built `libmnem.so`
//! so programs linked against the build tree run from it, as they do from an installed prefix.
//!
//! The ABI major is `MNEM_ABI_VERSION` in src/ffi/mod.rs, read from the source so that the two
//! cannot disagree.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src/ffi/mod.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let abi = abi_major(Path::new("src/ffi/mod.rs"));
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmnem.so.{abi}");
        link_soname_in_build_tree(abi);
    }
}

/// The value of `pub const MNEM_ABI_VERSION: u32 = N;`.
fn abi_major(path: &Path) -> u32 {
    let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    src.lines()
        .find_map(|l| l.trim().strip_prefix("pub const MNEM_ABI_VERSION: u32 = ")?.strip_suffix(';')?.parse().ok())
        .expect("src/ffi/mod.rs declares `pub const MNEM_ABI_VERSION: u32 = N;`")
}

/// `<profile dir>/libmnem.so.N -> libmnem.so`. Cargo writes the cdylib to the profile
/// directory, three levels above OUT_DIR (`<profile>/build/<crate>-<hash>/out`); the link is
/// relative, so it is valid as soon as the library is linked.
fn link_soname_in_build_tree(abi: u32) {
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else { return };
    let Some(profile) = out.ancestors().nth(3) else { return };
    let link = profile.join(format!("libmnem.so.{abi}"));
    if std::fs::read_link(&link).is_ok_and(|t| t == Path::new("libmnem.so")) {
        return;
    }
    let _ = std::fs::remove_file(&link);
    #[cfg(unix)]
    if let Err(e) = std::os::unix::fs::symlink("libmnem.so", &link) {
        println!("cargo:warning=cannot link {}: {e}", link.display());
    }
}
