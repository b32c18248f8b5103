package mnem

/*
#include "mnem.h"
*/
import "C"

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"unicode/utf8"
)

// ---- ADK memory seam (mnem_add_session ... mnem_search in include/mnem.h) ----

// AddSession is ADK's add_session_to_memory: it replaces the session's bucket
// with the events in eventsJSONL (one ADK Event JSON object per line) and
// returns how many were stored.
func (s *Store) AddSession(app, user, sessionID string, eventsJSONL []byte) (uint64, error) {
	var n C.uint64_t
	err := s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_add_session(h, strView(app), strView(user), strView(sessionID), bytesView(eventsJSONL), &n, &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(sessionID)
		runtime.KeepAlive(eventsJSONL)
		return check("add_session", rc, &cerr)
	})
	return uint64(n), err
}

// AddEvents is ADK's add_events_to_memory: it appends the events whose ids are
// new to the bucket and returns how many were added. An empty sessionID means
// ADK's unknown-session bucket, UnknownSessionID. customMetadata may be nil; mnem reads its
// documented keys (ttl_ms, tags, episode_type) and ignores the rest.
func (s *Store) AddEvents(app, user, sessionID string, eventsJSONL []byte, customMetadata map[string]any) (uint64, error) {
	var meta []byte
	if customMetadata != nil {
		var err error
		if meta, err = encodeJSON("add_events", customMetadata); err != nil {
			return 0, err
		}
	}
	var n C.uint64_t
	err := s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_add_events(h, strView(app), strView(user), strView(sessionID), bytesView(eventsJSONL), bytesView(meta), &n, &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(sessionID)
		runtime.KeepAlive(eventsJSONL)
		runtime.KeepAlive(meta)
		return check("add_events", rc, &cerr)
	})
	return uint64(n), err
}

// DeleteMemory is ADK's delete_memory: it removes every event with memoryID in
// the namespace, tombstones the id, and returns how many events were removed.
func (s *Store) DeleteMemory(app, user, memoryID string) (uint64, error) {
	var n C.uint64_t
	err := s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_delete_memory(h, strView(app), strView(user), strView(memoryID), &n, &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(memoryID)
		return check("delete_memory", rc, &cerr)
	})
	return uint64(n), err
}

// SearchRaw is ADK's search_memory; it returns the SearchMemoryResponse JSON.
func (s *Store) SearchRaw(app, user, query string) ([]byte, error) {
	return s.read("search", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := C.mnem_search(h, strView(app), strView(user), strView(query), out, outCap, outLen, cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(query)
		return rc
	})
}

// Search is ADK's search_memory with InMemoryMemoryService's exact ranking (top 10).
func (s *Store) Search(app, user, query string) ([]MemoryEntry, error) {
	raw, err := s.SearchRaw(app, user, query)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Memories []MemoryEntry `json:"memories"`
	}
	return resp.Memories, decode("search", raw, &resp)
}

// ---- Episodes and lexical search (mnem_put_episodes ... in include/mnem.h) ----

// PutEpisodes writes the episodes atomically (all or none) and returns their
// ids in input order. An existing id is updated to a new revision.
func (s *Store) PutEpisodes(app, user string, episodes []EpisodeInput) ([]string, error) {
	var lines [][]byte
	for i := range episodes {
		b, err := encodeJSON("put_episodes", &episodes[i])
		if err != nil {
			err.(*Error).Message = fmt.Sprintf("episode %d: %s", i, err.(*Error).Message)
			return nil, err
		}
		lines = append(lines, b)
	}
	return s.putEpisodes(app, user, bytes.Join(lines, []byte{'\n'}))
}

// PutEpisodesJSONL writes one episode JSON object per line of jsonl and
// returns their ids in line order. Blank lines are skipped, as the library does.
func (s *Store) PutEpisodesJSONL(app, user string, jsonl []byte) ([]string, error) {
	return s.putEpisodes(app, user, jsonl)
}

// idsGuess is the first size of the ids buffer: 16 bytes per line, blank or
// not, never less than the library needs (it skips blank lines). A variable so
// tests can force the retry.
var idsGuess = func(jsonl []byte) int { return 16 * (bytes.Count(jsonl, []byte{'\n'}) + 1) }

func (s *Store) putEpisodes(app, user string, jsonl []byte) ([]string, error) {
	ids := make([]byte, idsGuess(jsonl))
	n, err := s.putEpisodesOnce(app, user, jsonl, ids)
	if e, ok := err.(*Error); ok && e.Status == StatusBufferTooSmall && n > len(ids) {
		// Nothing was written, and the size depends on the batch alone: one retry fits.
		ids = make([]byte, n)
		n, err = s.putEpisodesOnce(app, user, jsonl, ids)
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, n/16)
	for i := range out {
		out[i] = formatUUID(ids[16*i : 16*i+16])
	}
	return out, nil
}

// putEpisodesOnce is one call of mnem_put_episodes_v2 with ids as out_ids (nil:
// NULL, the ids not wanted); it returns *out_ids_len. On BUFFER_TOO_SMALL (an
// *Error) nothing was written.
func (s *Store) putEpisodesOnce(app, user string, jsonl, ids []byte) (int, error) {
	var n C.size_t
	buf := ids
	if ids != nil && len(ids) == 0 {
		buf = make([]byte, 1) // not NULL: an empty buffer still wants the ids
	}
	err := s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_put_episodes_v2(h, strView(app), strView(user), bytesView(jsonl), bufPtr(buf), C.size_t(len(ids)), &n, &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(jsonl)
		runtime.KeepAlive(buf)
		return check("put_episodes", rc, &cerr)
	})
	if err == nil && ids != nil && (int(n) > len(ids) || n%16 != 0) {
		return 0, &Error{Op: "put_episodes", Status: StatusInternal,
			Message: fmt.Sprintf("out_ids_len %d with out_ids_cap %d", n, len(ids))}
	}
	return int(n), err
}

// DeleteEpisodes tombstones the given episode ids and returns how many visible
// episodes were deleted (unknown or already deleted ids are not counted).
func (s *Store) DeleteEpisodes(app, user string, ids ...string) (uint64, error) {
	jsonl, err := stringLines("delete_episodes", ids)
	if err != nil {
		return 0, err
	}
	var n C.uint64_t
	err = s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		rc := C.mnem_delete_episodes(h, strView(app), strView(user), bytesView(jsonl), &n, &cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(jsonl)
		return check("delete_episodes", rc, &cerr)
	})
	return uint64(n), err
}

// ---- Searches ----

type cQueryFn func(h *C.mnem_store, app, user, query C.mnem_str, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status

func (s *Store) query(op string, fn cQueryFn, app, user string, query []byte) ([]byte, error) {
	return s.read(op, func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := fn(h, strView(app), strView(user), bytesView(query), out, outCap, outLen, cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(query)
		return rc
	})
}

// Thin adapters: cgo function values cannot be taken directly.
func cKeyword(h *C.mnem_store, a, u, q C.mnem_str, o *C.uint8_t, c C.size_t, n *C.size_t, e *C.mnem_error) C.mnem_status {
	return C.mnem_keyword_search(h, a, u, q, o, c, n, e)
}
func cLexical(h *C.mnem_store, a, u, q C.mnem_str, o *C.uint8_t, c C.size_t, n *C.size_t, e *C.mnem_error) C.mnem_status {
	return C.mnem_lexical_page(h, a, u, q, o, c, n, e)
}
func cSubstring(h *C.mnem_store, a, u, q C.mnem_str, o *C.uint8_t, c C.size_t, n *C.size_t, e *C.mnem_error) C.mnem_status {
	return C.mnem_substring_search(h, a, u, q, o, c, n, e)
}
func cHybrid(h *C.mnem_store, a, u, q C.mnem_str, o *C.uint8_t, c C.size_t, n *C.size_t, e *C.mnem_error) C.mnem_status {
	return C.mnem_hybrid_search(h, a, u, q, o, c, n, e)
}

// KeywordSearchRaw runs mnem_keyword_search with a caller-built query JSON.
func (s *Store) KeywordSearchRaw(app, user string, queryJSON []byte) ([]byte, error) {
	return s.query("keyword_search", cKeyword, app, user, queryJSON)
}

// LexicalPageRaw runs mnem_lexical_page with a caller-built query JSON.
func (s *Store) LexicalPageRaw(app, user string, queryJSON []byte) ([]byte, error) {
	return s.query("lexical_page", cLexical, app, user, queryJSON)
}

// SubstringSearchRaw runs mnem_substring_search with a caller-built query JSON.
func (s *Store) SubstringSearchRaw(app, user string, queryJSON []byte) ([]byte, error) {
	return s.query("substring_search", cSubstring, app, user, queryJSON)
}

// HybridSearchRaw runs mnem_hybrid_search with a caller-built query JSON.
func (s *Store) HybridSearchRaw(app, user string, queryJSON []byte) ([]byte, error) {
	return s.query("hybrid_search", cHybrid, app, user, queryJSON)
}

// KeywordSearch ranks every visible record of the namespace by BM25.
func (s *Store) KeywordSearch(app, user string, q KeywordQuery) ([]ScoredEpisode, error) {
	var resp struct {
		Results []ScoredEpisode `json:"results"`
	}
	return resp.Results, s.typedQuery("keyword_search", cKeyword, app, user, q, &resp)
}

// LexicalPage runs one bounded BM25 scan; continue with After = *NextAfter.
func (s *Store) LexicalPage(app, user string, q LexicalPageQuery) (*LexicalPageResult, error) {
	var resp LexicalPageResult
	if err := s.typedQuery("lexical_page", cLexical, app, user, q, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// SubstringSearch returns records whose primary, secondary or context contain
// Text case-insensitively, in ascending id order.
func (s *Store) SubstringSearch(app, user string, q SubstringQuery) ([]Episode, error) {
	var resp struct {
		Results []struct {
			Record Episode `json:"record"`
		} `json:"results"`
	}
	if err := s.typedQuery("substring_search", cSubstring, app, user, q, &resp); err != nil {
		return nil, err
	}
	out := make([]Episode, len(resp.Results))
	for i := range resp.Results {
		out[i] = resp.Results[i].Record
	}
	return out, nil
}

// HybridSearch fuses BM25 and vector similarity by weighted reciprocal rank.
// Without q.Vector it is lexical only; see HybridSearchText to embed the text.
func (s *Store) HybridSearch(app, user string, q HybridQuery) ([]HybridResult, error) {
	var resp struct {
		Results []HybridResult `json:"results"`
	}
	return resp.Results, s.typedQuery("hybrid_search", cHybrid, app, user, q, &resp)
}

func (s *Store) typedQuery(op string, fn cQueryFn, app, user string, q any, resp any) error {
	body, err := encodeJSON(op, q)
	if err != nil {
		return err
	}
	raw, err := s.query(op, fn, app, user, body)
	if err != nil {
		return err
	}
	return decode(op, raw, resp)
}

// ---- JSON helpers ----

// encodeJSON encodes v as one line of JSON. encoding/json silently replaces
// invalid UTF-8 with U+FFFD; mnem rejects, never repairs (include/mnem.h), so strings
// are checked first. Encoding errors (NaN weights, ...) are INVALID_ARGUMENT.
func encodeJSON(op string, v any) ([]byte, error) {
	if path, ok := findInvalidUTF8(reflect.ValueOf(v), ""); ok {
		return nil, invalidArg(op, "invalid UTF-8 in "+path)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, invalidArg(op, err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// findInvalidUTF8 walks strings reachable from v; raw JSON ([]byte) is left
// to the library, which validates it.
func findInvalidUTF8(v reflect.Value, path string) (string, bool) {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return orValue(path), true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return findInvalidUTF8(v.Elem(), path)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		for i := 0; i < v.Len(); i++ {
			if p, bad := findInvalidUTF8(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); bad {
				return p, true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p, bad := findInvalidUTF8(it.Key(), path+" key"); bad {
				return p, true
			}
			if p, bad := findInvalidUTF8(it.Value(), fmt.Sprintf("%s[%v]", path, it.Key())); bad {
				return p, true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			name := t.Field(i).Name
			if path != "" {
				name = path + "." + name
			}
			if p, bad := findInvalidUTF8(v.Field(i), name); bad {
				return p, true
			}
		}
	}
	return "", false
}

func orValue(path string) string {
	if path == "" {
		return "value"
	}
	return path
}

func decode(op string, raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return &Error{Op: op, Status: StatusInternal, Message: "decoding library output: " + err.Error()}
	}
	return nil
}

func formatUUID(b []byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:16])
	return string(s[:])
}

// CacheStats describes one of the store's caches (see mnem_stats in mnem.h).
type CacheStats struct {
	BudgetBytes uint64  `json:"budget_bytes"`
	UsedBytes   uint64  `json:"used_bytes"`
	Entries     uint64  `json:"entries"`
	Hits        uint64  `json:"hits"`
	Misses      uint64  `json:"misses"`
	HitRate     float64 `json:"hit_rate"`
	Evictions   uint64  `json:"evictions"`
}

// Stats is the store's statistics: formats, the cache budget (the cache_bytes option), and
// the use of RocksDB's block cache and of the loaded vector graphs.
type Stats struct {
	Format       uint32 `json:"format"`
	OpenedFormat uint32 `json:"opened_format"`
	IndexesBuilt uint64 `json:"indexes_built"`
	// JournalReplayed counts writes whose index postings a writer that stopped without
	// closing had not moved from its journal into the index; this open moved them.
	JournalReplayed uint64     `json:"journal_replayed"`
	CacheBytes      uint64     `json:"cache_bytes"`
	GraphCache      CacheStats `json:"graph_cache"`
	BlockCache      CacheStats `json:"block_cache"`
}

// Stats returns the store's statistics (mnem_stats).
func (s *Store) Stats() (Stats, error) {
	var st Stats
	raw, err := s.read("stats", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		return C.mnem_stats(h, out, outCap, outLen, cerr)
	})
	if err != nil {
		return st, err
	}
	return st, decode("stats", raw, &st)
}
