//! Fault injection, compiled only with the cargo feature `fault-injection` (off by default,
//! never in a shipped library): C tests use it to reach the panic boundary, which no correct
//! input can. The header declares these functions inside `#if defined(MNEM_FAULT_INJECTION)`.

use super::{guard, mnem_error, mnem_store, need_store, store_ref};
use crate::Status;
use std::sync::atomic::{AtomicBool, Ordering};

static PANIC_NEXT_OPEN: AtomicBool = AtomicBool::new(false);

/// Fault injection (test builds only): panic inside the panic boundary of a call on
/// `store`, as a bug in mnem would. The handle is then poisoned.
/// Returns INTERNAL (message: "internal error (panic): ..."); INVALID_ARGUMENT (NULL store).
#[no_mangle]
pub extern "C" fn mnem_debug_panic(store: *mut mnem_store, err: *mut mnem_error) -> Status {
    let s = store_ref(store);
    guard(err, s, || {
        need_store(s)?;
        panic!("injected by mnem_debug_panic")
    })
}

/// Fault injection (test builds only): the next `mnem_open` in this process, from any
/// thread, panics inside its panic boundary after checking `out_store`, so it returns
/// INTERNAL with `*out_store` NULL.
#[no_mangle]
pub extern "C" fn mnem_debug_panic_next_open() {
    PANIC_NEXT_OPEN.store(true, Ordering::SeqCst);
}

/// Called by `mnem_open` inside its boundary.
pub(super) fn open_hook() {
    if PANIC_NEXT_OPEN.swap(false, Ordering::SeqCst) {
        panic!("injected by mnem_debug_panic_next_open");
    }
}
