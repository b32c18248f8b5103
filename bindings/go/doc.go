// Package mnem is the Go binding of mnem, a persistent memory store for AI agents, over
// libmnem's stable C ABI (mnem.h). It uses cgo and the standard library only.
//
// # Installing
//
// The module path is github.com/mnem-memory/mnem-go; its source is the bindings/go
// directory of the mnem repository, and it is not published on a module proxy: a program
// requires it and replaces it with a copy of that directory. The package links the
// installed C library, found with pkg-config. Install mnem once (from the repository:
// scripts/install PREFIX), then:
//
//	export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig   # not needed for /usr or /usr/local
//	export LD_LIBRARY_PATH=PREFIX/lib             # or run ldconfig, or link with an rpath:
//	                                              # CGO_LDFLAGS="-Wl,-rpath,PREFIX/lib"
//	go mod edit -require github.com/mnem-memory/mnem-go@v0.0.0 \
//	            -replace github.com/mnem-memory/mnem-go=/path/to/mnem/bindings/go
//
// Open checks that the loaded library speaks the C ABI this package was written for
// (ABIVersion) and fails with ErrIncompatible otherwise.
//
// # Use
//
// A *Store is safe for concurrent use by many goroutines; Close waits for calls in flight.
// Inputs are passed to C as pointer+length views of Go memory, which the library never
// retains after a call returns, so nothing is copied or pinned. Every failed call returns
// an *Error carrying the library's Status and message; errors.Is(err, ErrBusy) and the
// other sentinels match on the status.
//
// # Store management
//
// Beside reads and writes, a Store manages its data: ForgetNamespace erases a user (from
// the files, not only from answers), DeleteSession removes one ADK session, GetEpisodes
// reads records by id, ListNamespaces / AllNamespaces and NamespaceStats describe what is
// stored, Export / ExportAll (or ExportTo an io.Writer, page by page) and Import move
// namespaces between stores as JSON Lines, Backup copies an open store, and Check verifies
// every stored byte against its checksum; Compact rewrites the files so that deleted data
// leaves them. Options.View opens a read-only view beside a process that holds the store
// for writing.
//
// # Contexts and cancellation
//
// The methods whose names end in Context take a context.Context. A call into the C library
// cannot be interrupted once it has started, so cancellation means:
//
//   - Every Context method returns ctx.Err() without calling the library when ctx has
//     already ended.
//   - Reads (searches, pages, Stats, GetEpisodes, ListNamespaces, NamespaceStats, Export,
//     ExportTo, Check) return ctx.Err() as soon as ctx ends while the library is still
//     working. The library call runs to its end on its own thread and its result is
//     dropped; Close waits for it. ExportTo's writer then holds whole pages only.
//   - Writes (puts, deletes, ADK adds, DeleteSession, ForgetNamespace, Import, Backup,
//     Compact, Flush) and OpenContext are checked only before they start. A write that has started
//     completes, and its outcome is returned even if ctx ended meanwhile: a batch is
//     committed whole or not at all, and reporting ctx.Err() for a committed batch would
//     hide it; a forget that has begun erases, a backup that has begun leaves a whole
//     store. Opening cannot be abandoned halfway either: the store's directory would stay
//     locked until the open finished.
//
// The methods without a context behave like their Context variants with
// context.Background().
package mnem
