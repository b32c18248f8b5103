package mnem

// The header and the library come from an installed mnem, found by pkg-config (mnem.pc);
// see the package documentation.

/*
#cgo pkg-config: mnem
#include <stdlib.h>
#include "mnem.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// ABIVersion is the MNEM_ABI_VERSION this binding was written against.
const ABIVersion = 1

// errorMessageCap mirrors MNEM_ERROR_MESSAGE_CAP.
const errorMessageCap = 512

// initialOutCap is the first output buffer size; larger results cost one
// retry. A variable so tests can force the growth path (0 passes out = NULL).
var initialOutCap = 16 << 10

// LibraryABIVersion returns mnem_abi_version() of the loaded library.
func LibraryABIVersion() uint32 { return uint32(C.mnem_abi_version()) }

// Version returns mnem_version() of the loaded library.
func Version() string { return C.GoString(C.mnem_version()) }

// StatusName returns mnem_status_name(s) from the loaded library.
func StatusName(s Status) string { return C.GoString(C.mnem_status_name(C.int32_t(s))) }

// Options configure Open.
type Options struct {
	Create   bool // MNEM_OPEN_CREATE: create the store if missing
	ReadOnly bool // MNEM_OPEN_READ_ONLY: every write returns ErrReadOnly
	// View (MNEM_OPEN_VIEW) opens a read-only view that works beside a process or handle
	// holding the store open for writing (where a ReadOnly open is ErrBusy): it takes no
	// lock, answers every read from the state at open (open a new view to see later
	// writes), and every write returns ErrReadOnly. Not with Create.
	View bool
	// SyncWrites fsyncs every write batch ({"sync_writes": true}).
	SyncWrites bool
	// Embedder "builtin" registers the model mnem carries ({"embedder": "builtin"}):
	// ADK events and episodes written with Embed get vectors, and HybridSearch and Recall
	// take text alone. No model download: the library finds the model installed beside
	// it (ModelDir, or $MNEM_MODEL_DIR, names another folder). "" registers nothing.
	Embedder string
	// ModelDir is the built-in embedder's model folder ({"model_dir": ...}); "" looks
	// where the library says (include/mnem.h, mnem_open).
	ModelDir string
	// RawJSON, when non-empty, is passed as options_json verbatim and the fields
	// above that are options are ignored. Useful for options newer than this binding.
	RawJSON string
}

func (o Options) flags() C.uint32_t {
	var f C.uint32_t
	if o.Create {
		f |= C.MNEM_OPEN_CREATE
	}
	if o.ReadOnly {
		f |= C.MNEM_OPEN_READ_ONLY
	}
	if o.View {
		f |= C.MNEM_OPEN_VIEW
	}
	return f
}

func (o Options) json() string {
	if o.RawJSON != "" {
		return o.RawJSON
	}
	opts := map[string]any{}
	if o.SyncWrites {
		opts["sync_writes"] = true
	}
	if o.Embedder != "" {
		opts["embedder"] = o.Embedder
	}
	if o.ModelDir != "" {
		opts["model_dir"] = o.ModelDir
	}
	if len(opts) == 0 {
		return ""
	}
	b, _ := json.Marshal(opts) // strings and bools always marshal
	return string(b)
}

// Store is an open mnem store. Use Close to release it.
type Store struct {
	// mu is held shared by every call and exclusively by Close, so mnem_free
	// never runs while another call on the handle is in flight.
	mu sync.RWMutex
	h  *C.mnem_store
	// embedders are the ones SetEmbedder registered, freed by Close.
	embedders embedders
}

// Open opens the store at path (a directory, or ":memory:" for an in-process store).
func Open(path string, opts Options) (*Store, error) {
	if v := LibraryABIVersion(); v != ABIVersion {
		return nil, &Error{Op: "open", Status: StatusIncompatible,
			Message: fmt.Sprintf("library ABI version %d, binding expects %d", v, ABIVersion)}
	}
	optJSON := opts.json()
	var h *C.mnem_store
	var cerr C.mnem_error
	rc := C.mnem_open(strView(path), opts.flags(), strView(optJSON), &h, &cerr)
	runtime.KeepAlive(path)
	runtime.KeepAlive(optJSON)
	if err := check("open", rc, &cerr); err != nil {
		return nil, err
	}
	s := &Store{h: h}
	// A leaked Store must not keep the directory locked (BUSY) forever.
	runtime.SetFinalizer(s, (*Store).Close)
	return s, nil
}

// Close releases the store. It waits for in-flight calls, is idempotent, and
// after it every method returns ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == nil {
		return nil
	}
	C.mnem_free(s.h)
	s.h = nil
	s.embedders.free()
	runtime.SetFinalizer(s, nil)
	return nil
}

// Flush makes every write so far durable.
func (s *Store) Flush() error {
	return s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		return check("flush", C.mnem_flush(h, &cerr), &cerr)
	})
}

// with runs fn with the live handle under the shared lock.
func (s *Store) with(fn func(h *C.mnem_store) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.h == nil {
		return ErrClosed
	}
	return fn(s.h)
}

// readFn is one call of a C function with an output buffer.
type readFn func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status

// read calls fn, growing the buffer on BUFFER_TOO_SMALL. Results may grow
// between attempts under concurrent writes, so it loops (reads are repeatable).
// The attempts run on one OS thread: mnem keeps an answer that did not fit for
// the same call again from the same thread, so a retry does not read the store again.
func (s *Store) read(op string, fn readFn) ([]byte, error) {
	var out []byte
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := s.with(func(h *C.mnem_store) error {
		buf := make([]byte, initialOutCap)
		for {
			var n C.size_t
			var cerr C.mnem_error
			rc := fn(h, bufPtr(buf), C.size_t(len(buf)), &n, &cerr)
			runtime.KeepAlive(buf)
			if Status(rc) == StatusBufferTooSmall {
				need := int(n)
				if need <= len(buf) { // would loop forever: a library bug
					return &Error{Op: op, Status: StatusInternal,
						Message: fmt.Sprintf("BUFFER_TOO_SMALL with out_len %d <= cap %d", need, len(buf))}
				}
				buf = make([]byte, need+need/8)
				continue
			}
			if err := check(op, rc, &cerr); err != nil {
				return err
			}
			if int(n) > len(buf) {
				return &Error{Op: op, Status: StatusInternal, Message: "out_len exceeds out_cap"}
			}
			out = buf[:n:n]
			return nil
		}
	})
	return out, err
}

// check converts a status and the error struct into a Go error.
func check(op string, rc C.mnem_status, cerr *C.mnem_error) error {
	st := Status(rc)
	if st == StatusOK {
		return nil
	}
	return &Error{Op: op, Status: st, Message: errMessage(cerr)}
}

func errMessage(cerr *C.mnem_error) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&cerr.message[0])), errorMessageCap)
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b) // not NUL-terminated: take the whole buffer
}

// strView borrows s as a mnem_str. The caller keeps s alive across the call.
func strView(s string) C.mnem_str {
	if len(s) == 0 {
		return C.mnem_str{}
	}
	return C.mnem_str{ptr: (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(s))), len: C.size_t(len(s))}
}

// bytesView borrows b as a mnem_str. The caller keeps b alive across the call.
func bytesView(b []byte) C.mnem_str {
	if len(b) == 0 {
		return C.mnem_str{}
	}
	return C.mnem_str{ptr: (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b))), len: C.size_t(len(b))}
}

func bufPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b)))
}
