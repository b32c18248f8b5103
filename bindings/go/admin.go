package mnem

/*
#include "mnem.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"runtime"
	"unicode/utf8"
)

// ---- Store management (mnem_forget_namespace ... mnem_import in include/mnem.h) ----

// ForgetNamespace erases the namespace (app, user): every episode, ADK session, deleted
// memory id, index entry and its vector dimension go in one atomic write, then the
// namespace's key ranges are compacted so that its bytes leave the store's files, not only
// its answers. The namespace may be written again afterwards, as a new one. A namespace
// with nothing stored is a no-op. Other writes wait while it runs.
func (s *Store) ForgetNamespace(app, user string) error {
	return s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_forget_namespace(h, strView(app), strView(user), &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		return check("forget_namespace", rc, &cerr)
	})
}

// Compact compacts the whole store: every table file is rewritten down to the last level,
// so that the bytes of deleted episodes and sessions and of overwritten revisions leave the
// files. It takes time in proportion to the store's size; reads and writes go on meanwhile.
// A compaction that fails returns its cause (ErrCorruption for a damaged table file), and
// the store then refuses writes until it is reopened.
func (s *Store) Compact() error {
	return s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		return check("compact", C.mnem_compact(h, &cerr), &cerr)
	})
}

// DeleteSession deletes what one ADK session added (its events and its bucket) and returns
// how many events were deleted, expired ones included; an unknown session deletes nothing.
// Search then ranks the remaining memories as if the session had never been added.
// sessionID is taken as given: events that AddEvents added with an empty id are in the
// bucket UnknownSessionID. The events' text leaves the records at once, while older table
// files keep its bytes until RocksDB compacts them: ForgetNamespace erases.
func (s *Store) DeleteSession(app, user, sessionID string) (uint64, error) {
	var n C.uint64_t
	err := s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_delete_session(h, strView(app), strView(user), strView(sessionID), &n, &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(sessionID)
		return check("delete_session", rc, &cerr)
	})
	return uint64(n), err
}

// UnknownSessionID is ADK's bucket for events added without a session id: AddEvents stores
// events given an empty sessionID there.
const UnknownSessionID = "__unknown_session_id__"

// MaxGetEpisodes is the most ids one GetEpisodes call reads.
const MaxGetEpisodes = 10000

// GetEpisodesRaw runs mnem_get_episodes with caller-built JSON Lines (one JSON string UUID
// per line) and returns {"episodes":[Episode|null...]}.
func (s *Store) GetEpisodesRaw(app, user string, idsJSONL []byte) ([]byte, error) {
	return s.read("get_episodes", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := C.mnem_get_episodes(h, strView(app), strView(user), bytesView(idsJSONL), out, outCap, outLen, cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(idsJSONL)
		return rc
	})
}

// GetEpisodes returns the visible episodes with the given ids, read from one snapshot, one
// element per id in order: nil where no visible episode has the id (never stored, deleted
// or expired). An id that is not a UUID is ErrInvalidArgument; so are more than
// MaxGetEpisodes ids.
func (s *Store) GetEpisodes(app, user string, ids ...string) ([]*Episode, error) {
	lines, err := stringLines("get_episodes", ids)
	if err != nil {
		return nil, err
	}
	raw, err := s.GetEpisodesRaw(app, user, lines)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Episodes []*Episode `json:"episodes"`
	}
	if err := decode("get_episodes", raw, &resp); err != nil {
		return nil, err
	}
	if len(resp.Episodes) != len(ids) {
		return nil, &Error{Op: "get_episodes", Status: StatusInternal,
			Message: fmt.Sprintf("%d results for %d ids", len(resp.Episodes), len(ids))}
	}
	return resp.Episodes, nil
}

// stringLines encodes strs as JSON Lines of JSON strings, refusing invalid UTF-8 (which
// encoding/json would silently repair).
func stringLines(op string, strs []string) ([]byte, error) {
	var b []byte
	for i, v := range strs {
		if !utf8.ValidString(v) {
			return nil, invalidArg(op, fmt.Sprintf("id %d is not valid UTF-8", i))
		}
		enc, _ := json.Marshal(v) // a valid UTF-8 string always marshals
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, enc...)
	}
	return b, nil
}

// Namespace names one namespace: the pair (AppName, UserID).
type Namespace struct {
	AppName string `json:"app_name"`
	UserID  string `json:"user_id"`
}

// NamespaceInfo is one entry of a namespace page.
type NamespaceInfo struct {
	Namespace
	// Episodes counts the episodes not deleted (expired ones count until a later write
	// purges them), from a counter, not a scan.
	Episodes uint64 `json:"episodes"`
}

// NamespaceQuery asks for one page of namespaces (mnem_list_namespaces).
type NamespaceQuery struct {
	Limit int        `json:"limit,omitempty"` // 1-1000; 0 = default (100)
	After *Namespace `json:"after,omitempty"` // nil = from the start; else a NextAfter
}

// NamespacePage is one page of the store's namespaces, in key order: by the byte length of
// AppName, then its bytes, then likewise UserID.
type NamespacePage struct {
	Namespaces []NamespaceInfo `json:"namespaces"`
	// NextAfter is the After of the next page's query; nil on the last page.
	NextAfter *Namespace `json:"next_after"`
}

// ListNamespacesRaw runs mnem_list_namespaces with a caller-built query JSON ("" for defaults).
func (s *Store) ListNamespacesRaw(queryJSON []byte) ([]byte, error) {
	return s.read("list_namespaces", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := C.mnem_list_namespaces(h, bytesView(queryJSON), out, outCap, outLen, cerr)
		runtime.KeepAlive(queryJSON)
		return rc
	})
}

// ListNamespaces returns one page of the store's namespaces, from one snapshot. A namespace
// is listed while it holds any record or ADK session, deleted episodes included, until
// ForgetNamespace. Continue with After = NextAfter until NextAfter is nil, or use
// AllNamespaces.
func (s *Store) ListNamespaces(q NamespaceQuery) (*NamespacePage, error) {
	body, err := encodeJSON("list_namespaces", q)
	if err != nil {
		return nil, err
	}
	raw, err := s.ListNamespacesRaw(body)
	if err != nil {
		return nil, err
	}
	var page NamespacePage
	if err := decode("list_namespaces", raw, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllNamespaces iterates over every namespace of the store, one page of up to pageSize
// (0 = the default, 100) at a time. Each page is its own snapshot, so namespaces created or
// forgotten meanwhile may or may not be seen. An error ends the iteration, yielded once.
func (s *Store) AllNamespaces(pageSize int) iter.Seq2[NamespaceInfo, error] {
	return func(yield func(NamespaceInfo, error) bool) {
		q := NamespaceQuery{Limit: pageSize}
		for {
			page, err := s.ListNamespaces(q)
			if err != nil {
				yield(NamespaceInfo{}, err)
				return
			}
			for _, n := range page.Namespaces {
				if !yield(n, nil) {
					return
				}
			}
			if page.NextAfter == nil {
				return
			}
			q.After = page.NextAfter
		}
	}
}

// KeyCount is a number of keys and their bytes (key + value).
type KeyCount struct {
	Keys  uint64 `json:"keys"`
	Bytes uint64 `json:"bytes"`
}

// IndexStats counts the keys of a namespace's indexes.
type IndexStats struct {
	BM25   KeyCount `json:"bm25"`
	ADK    KeyCount `json:"adk"`
	Vector KeyCount `json:"vector"`
}

// NamespaceStats describes one namespace (mnem_namespace_stats). An unknown namespace has zeros.
type NamespaceStats struct {
	// Records are the stored episode records, tombstones included, split into Live
	// (visible now), Deleted and Expired.
	Records KeyCount `json:"records"`
	Live    uint64   `json:"live"`
	Deleted uint64   `json:"deleted"`
	Expired uint64   `json:"expired"`
	// Buckets, BucketEvents and MemoryTombstones count ADK sessions, the events they hold
	// and the ids removed by DeleteMemory.
	Buckets          uint64     `json:"buckets"`
	BucketEvents     uint64     `json:"bucket_events"`
	MemoryTombstones uint64     `json:"memory_tombstones"`
	ADK              KeyCount   `json:"adk"`
	Index            IndexStats `json:"index"`
	// Dimension is the namespace's vector dimension, nil before its first vector.
	Dimension *uint32 `json:"dimension"`
	// EmbeddingModel names the model that made the namespace's vectors; nil when
	// none was named (or before its first vector).
	EmbeddingModel *string `json:"embedding_model"`
	// ApproximateFileBytes is RocksDB's estimate of the namespace's table-file bytes.
	ApproximateFileBytes uint64 `json:"approximate_file_bytes"`
}

// NamespaceStatsRaw returns mnem_namespace_stats's JSON.
func (s *Store) NamespaceStatsRaw(app, user string) ([]byte, error) {
	return s.read("namespace_stats", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := C.mnem_namespace_stats(h, strView(app), strView(user), out, outCap, outLen, cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		return rc
	})
}

// NamespaceStats counts one namespace's records, sessions and index keys by a scan of its
// keys (time in proportion to them).
func (s *Store) NamespaceStats(app, user string) (NamespaceStats, error) {
	var st NamespaceStats
	raw, err := s.NamespaceStatsRaw(app, user)
	if err != nil {
		return st, err
	}
	return st, decode("namespace_stats", raw, &st)
}

// Backup copies the store, consistently and while it stays open, into the new directory
// dest (hard links on the same file system, copies otherwise). The copy is a store of its
// own that Open reads like the original. dest must not exist; a ":memory:" store or a
// read-only handle cannot be backed up. Writes wait while it runs; reads do not.
func (s *Store) Backup(dest string) error {
	return s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_backup(h, strView(dest), &cerr)
		runtime.KeepAlive(dest)
		return check("backup", rc, &cerr)
	})
}

// CheckKeys counts the keys an integrity check read, by column family.
type CheckKeys struct {
	Meta     uint64 `json:"meta"`
	Episodes uint64 `json:"episodes"`
	ADK      uint64 `json:"adk"`
	Index    uint64 `json:"index"`
}

// CheckProblem is the first problem an integrity check found.
type CheckProblem struct {
	StatusName string `json:"status"` // "CORRUPTION", "IO", ...: a Status's String()
	Message    string `json:"message"`
}

// Status is the problem's status (StatusInternal for a name this binding does not know).
func (p *CheckProblem) Status() Status {
	for _, st := range []Status{StatusInvalidArgument, StatusBufferTooSmall, StatusNotFound, StatusBusy,
		StatusReadOnly, StatusIO, StatusCorruption, StatusIncompatible, StatusInternal} {
		if st.String() == p.StatusName {
			return st
		}
	}
	return StatusInternal
}

// Err returns the problem as an *Error (Op "check"), for errors.Is(err, ErrCorruption).
func (p *CheckProblem) Err() error {
	return &Error{Op: "check", Status: p.Status(), Message: p.Message}
}

// CheckReport is the verdict of an integrity check: the counts read up to the problem, if any.
type CheckReport struct {
	OK       bool          `json:"ok"`
	Keys     CheckKeys     `json:"keys"`
	Bytes    uint64        `json:"bytes"`
	Episodes uint64        `json:"episodes"`
	Problem  *CheckProblem `json:"problem"` // nil when OK
}

// Err is nil for a sound store, else the problem as an *Error.
func (r CheckReport) Err() error {
	if r.Problem == nil {
		if !r.OK {
			return &Error{Op: "check", Status: StatusInternal, Message: "check failed without a problem"}
		}
		return nil
	}
	return r.Problem.Err()
}

// CheckRaw returns mnem_check's JSON.
func (s *Store) CheckRaw() ([]byte, error) {
	return s.read("check", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		return C.mnem_check(h, out, outCap, outLen, cerr)
	})
}

// Check reads every key of the store with RocksDB's block checksums verified and parses
// every episode record, stopping at the first problem; time in proportion to the store's
// size. The error is about running the check (a closed store, ...); its verdict is the
// report's OK (and Err). A report too large for the first buffer runs the check again.
func (s *Store) Check() (CheckReport, error) {
	var r CheckReport
	raw, err := s.CheckRaw()
	if err != nil {
		return r, err
	}
	return r, decode("check", raw, &r)
}

// Export returns the namespace (app, user) as JSON Lines (docs/EXPORT.md in the mnem
// repository): its ADK sessions, deleted memory ids and every episode record, tombstones
// included, from one snapshot. Import of the output into another store reproduces every
// search's answers. The whole export is built in memory (twice when it outgrows the first
// buffer); for large stores use ExportTo, which writes page by page.
func (s *Store) Export(app, user string) ([]byte, error) {
	return s.export(app, user, 0)
}

// ExportAll is Export of every namespace of the store.
func (s *Store) ExportAll() ([]byte, error) {
	return s.export("", "", 1)
}

func (s *Store) export(app, user string, all C.int32_t) ([]byte, error) {
	return s.read("export", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := C.mnem_export(h, strView(app), strView(user), all, out, outCap, outLen, cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		return rc
	})
}

// Import writes an export (Export, ExportAll, the mnem tool's export) and returns the
// number of episode records imported. The whole input is checked first: a bad line, a
// truncated input or a namespace that already holds data in this store is
// ErrInvalidArgument naming the line, and nothing is written. An I/O failure part-way can
// leave a namespace partial: ForgetNamespace it and import again.
func (s *Store) Import(exportJSONL []byte) (uint64, error) {
	var n C.uint64_t
	err := s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_import(h, bytesView(exportJSONL), &n, &cerr)
		runtime.KeepAlive(exportJSONL)
		return check("import", rc, &cerr)
	})
	return uint64(n), err
}

// ---- Context variants (see "Contexts and cancellation" in the package documentation) ----

// ForgetNamespaceContext is ForgetNamespace, unless ctx has already ended.
func (s *Store) ForgetNamespaceContext(ctx context.Context, app, user string) error {
	_, err := writeContext(ctx, func() (struct{}, error) { return struct{}{}, s.ForgetNamespace(app, user) })
	return err
}

// CompactContext is Compact, unless ctx has already ended.
func (s *Store) CompactContext(ctx context.Context) error {
	_, err := writeContext(ctx, func() (struct{}, error) { return struct{}{}, s.Compact() })
	return err
}

// DeleteSessionContext is DeleteSession, unless ctx has already ended.
func (s *Store) DeleteSessionContext(ctx context.Context, app, user, sessionID string) (uint64, error) {
	return writeContext(ctx, func() (uint64, error) { return s.DeleteSession(app, user, sessionID) })
}

// ImportContext is Import, unless ctx has already ended.
func (s *Store) ImportContext(ctx context.Context, exportJSONL []byte) (uint64, error) {
	return writeContext(ctx, func() (uint64, error) { return s.Import(exportJSONL) })
}

// BackupContext is Backup, unless ctx has already ended. A backup that has started
// completes: dest is then a whole store, never half of one.
func (s *Store) BackupContext(ctx context.Context, dest string) error {
	_, err := writeContext(ctx, func() (struct{}, error) { return struct{}{}, s.Backup(dest) })
	return err
}

// ExportContext is Export; it returns ctx.Err() when ctx ends first.
func (s *Store) ExportContext(ctx context.Context, app, user string) ([]byte, error) {
	return readContext(ctx, func() ([]byte, error) { return s.Export(app, user) })
}

// ExportAllContext is ExportAll; it returns ctx.Err() when ctx ends first.
func (s *Store) ExportAllContext(ctx context.Context) ([]byte, error) {
	return readContext(ctx, s.ExportAll)
}

// CheckContext is Check; it returns ctx.Err() when ctx ends first.
func (s *Store) CheckContext(ctx context.Context) (CheckReport, error) {
	return readContext(ctx, s.Check)
}

// GetEpisodesContext is GetEpisodes; it returns ctx.Err() when ctx ends first.
func (s *Store) GetEpisodesContext(ctx context.Context, app, user string, ids ...string) ([]*Episode, error) {
	return readContext(ctx, func() ([]*Episode, error) { return s.GetEpisodes(app, user, ids...) })
}

// ListNamespacesContext is ListNamespaces; it returns ctx.Err() when ctx ends first.
func (s *Store) ListNamespacesContext(ctx context.Context, q NamespaceQuery) (*NamespacePage, error) {
	return readContext(ctx, func() (*NamespacePage, error) { return s.ListNamespaces(q) })
}

// NamespaceStatsContext is NamespaceStats; it returns ctx.Err() when ctx ends first.
func (s *Store) NamespaceStatsContext(ctx context.Context, app, user string) (NamespaceStats, error) {
	return readContext(ctx, func() (NamespaceStats, error) { return s.NamespaceStats(app, user) })
}
