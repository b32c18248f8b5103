package mnem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	app  = "test-app"
	user = "test-user"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func memStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(":memory:", Options{Create: true})
	if err != nil {
		t.Fatalf("open :memory:: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dirStore(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wantStatus fails unless err is a *Error with the given status.
func wantStatus(t *testing.T, err error, st Status, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got nil error, want %s", what, st)
	}
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("%s: error %v (%T) is not a *mnem.Error", what, err, err)
	}
	if me.Status != st || !errors.Is(err, st) {
		t.Fatalf("%s: got %v, want status %s", what, err, st)
	}
	if me.Message == "" {
		t.Errorf("%s: %s error has an empty message", what, st)
	}
}

// content is an ADK Content with deliberately odd spacing and escapes, so a
// byte-for-byte round trip is observable.
func content(role string, texts ...string) string {
	parts := make([]string, len(texts))
	for i, tx := range texts {
		b, _ := json.Marshal(tx)
		parts[i] = `{"text": ` + string(b) + `}`
	}
	return `{"parts":  [` + strings.Join(parts, ", ") + `], "role": "` + role + `"}`
}

// event is one ADK Event as model_dump_json writes it (plus fields mnem must ignore).
func event(id, author string, ts float64, contentJSON string) string {
	if contentJSON == "" {
		contentJSON = "null"
	}
	return fmt.Sprintf(`{"invocation_id":"inv-1","author":%q,"actions":{"state_delta":{}},"id":%q,"timestamp":%v,"content":%s}`,
		author, id, ts, contentJSON)
}

func jsonl(lines ...string) []byte { return []byte(strings.Join(lines, "\n")) }

func isoLocal(sec int64, usec int) string {
	s := time.Unix(sec, 0).Format("2006-01-02T15:04:05")
	if usec != 0 {
		s += fmt.Sprintf(".%06d", usec)
	}
	return s
}

func memoryIDs(ms []MemoryEntry) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

func episodeIDs(rs []ScoredEpisode) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.Record.ID
	}
	return ids
}

func eqStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func TestVersionAndStatusNames(t *testing.T) {
	if v := LibraryABIVersion(); v != ABIVersion {
		t.Fatalf("library ABI %d, binding %d", v, ABIVersion)
	}
	if Version() == "" {
		t.Fatal("empty version")
	}
	for _, st := range []Status{StatusOK, StatusInvalidArgument, StatusBufferTooSmall, StatusNotFound,
		StatusBusy, StatusReadOnly, StatusIO, StatusCorruption, StatusIncompatible, StatusInternal} {
		if got := StatusName(st); got != st.String() {
			t.Errorf("mnem_status_name(%d) = %q, binding says %q", st, got, st.String())
		}
	}
	if got := StatusName(12345); got != "UNKNOWN" {
		t.Errorf("unknown status name %q", got)
	}
	// The binding's table (Status.String) and the library's agree on every integer in a wide
	// range, so a status added to either one alone fails here.
	known := 0
	for code := int32(-16); code < 1024; code++ {
		st := Status(code)
		if got := StatusName(st); got != st.String() {
			t.Errorf("mnem_status_name(%d) = %q, binding says %q", code, got, st.String())
		}
		if st.String() != "UNKNOWN" {
			known++
		}
	}
	if known != 10 {
		t.Errorf("%d known statuses, want 10 (codes 0-8 and 100)", known)
	}
	err := error(&Error{Op: "x", Status: StatusBusy, Message: "m"})
	if !errors.Is(err, ErrBusy) || errors.Is(err, ErrNotFound) {
		t.Error("errors.Is does not match on status")
	}
	if err.Error() != "mnem: x: BUSY: m" {
		t.Errorf("Error() = %q", err.Error())
	}
}

func TestOpenClose(t *testing.T) {
	s, err := Open(":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Errorf("flush of a :memory: store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
	if _, err := s.Search(app, user, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Search after Close: %v", err)
	}
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "x"}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("PutEpisodes after Close: %v", err)
	}
	// Two in-memory stores are independent.
	a, b := memStore(t), memStore(t)
	if _, err := a.PutEpisodes(app, user, []EpisodeInput{{Primary: "only in a"}}); err != nil {
		t.Fatal(err)
	}
	if r, err := b.KeywordSearch(app, user, KeywordQuery{Text: "only"}); err != nil || len(r) != 0 {
		t.Fatalf("store b sees store a: %v %v", r, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "missing"), Options{})
	wantStatus(t, err, StatusNotFound, "open without create")

	_, err = Open(":memory:", Options{RawJSON: `{"sync_writez":true}`})
	wantStatus(t, err, StatusInvalidArgument, "unknown option")
	_, err = Open(":memory:", Options{RawJSON: `{"sync_writes":`})
	wantStatus(t, err, StatusInvalidArgument, "malformed options")
	_, err = Open(":memory:", Options{RawJSON: `{"sync_writes":"yes"}`})
	wantStatus(t, err, StatusInvalidArgument, "option of the wrong type")
	_, err = Open(filepath.Join(dir, "x"), Options{Create: true, ReadOnly: true})
	wantStatus(t, err, StatusInvalidArgument, "create + read-only")
	_, err = Open("", Options{Create: true})
	wantStatus(t, err, StatusInvalidArgument, "empty path")
	_, err = Open("bad\xffpath", Options{Create: true})
	wantStatus(t, err, StatusInvalidArgument, "path not UTF-8")

	s, err := Open(dir, Options{Create: true, SyncWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{Create: true})
	wantStatus(t, err, StatusBusy, "second open of a directory")
	_, err = Open(dir, Options{})
	wantStatus(t, err, StatusBusy, "second open without create")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	s2.Close()
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	s := dirStore(t, dir, Options{Create: true})
	ids, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "read only fact"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s1", jsonl(event("e1", "user", 1, content("user", "read only event")))); err != nil {
		t.Fatal(err)
	}
	s.Close()

	ro := dirStore(t, dir, Options{ReadOnly: true})
	_, err = ro.PutEpisodes(app, user, []EpisodeInput{{Primary: "x"}})
	wantStatus(t, err, StatusReadOnly, "put on read-only")
	_, err = ro.DeleteEpisodes(app, user, ids[0])
	wantStatus(t, err, StatusReadOnly, "delete on read-only")
	_, err = ro.AddSession(app, user, "s2", jsonl(event("e2", "user", 1, content("user", "x"))))
	wantStatus(t, err, StatusReadOnly, "add_session on read-only")
	_, err = ro.AddEvents(app, user, "s2", jsonl(event("e2", "user", 1, content("user", "x"))), nil)
	wantStatus(t, err, StatusReadOnly, "add_events on read-only")
	_, err = ro.DeleteMemory(app, user, "e1")
	wantStatus(t, err, StatusReadOnly, "delete_memory on read-only")
	// Reads still work.
	r, err := ro.KeywordSearch(app, user, KeywordQuery{Text: "fact"})
	if err != nil || len(r) != 1 || r[0].Record.ID != ids[0] {
		t.Fatalf("read-only keyword search: %v %v", r, err)
	}
	m, err := ro.Search(app, user, "event")
	if err != nil || len(m) != 1 {
		t.Fatalf("read-only search: %v %v", m, err)
	}
}

func TestBadInput(t *testing.T) {
	s := memStore(t)
	bad := "bad\xffname"

	_, err := s.Search(bad, user, "x")
	wantStatus(t, err, StatusInvalidArgument, "search: app not UTF-8")
	_, err = s.Search(app, bad, "x")
	wantStatus(t, err, StatusInvalidArgument, "search: user not UTF-8")
	_, err = s.Search(app, user, bad)
	wantStatus(t, err, StatusInvalidArgument, "search: query not UTF-8")
	_, err = s.AddSession(app, user, bad, nil)
	wantStatus(t, err, StatusInvalidArgument, "add_session: session id not UTF-8")
	_, err = s.PutEpisodes(bad, user, []EpisodeInput{{Primary: "x"}})
	wantStatus(t, err, StatusInvalidArgument, "put: app not UTF-8")
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "ok"}, {Tags: []string{bad}}})
	wantStatus(t, err, StatusInvalidArgument, "put: tag not UTF-8 (binding check)")
	_, err = s.KeywordSearch(app, user, KeywordQuery{Text: bad})
	wantStatus(t, err, StatusInvalidArgument, "keyword: text not UTF-8 (binding check)")
	_, err = s.PutEpisodesJSONL(app, user, []byte(`{"primary":"`+bad+`"}`))
	wantStatus(t, err, StatusInvalidArgument, "put: raw line not UTF-8")
	_, err = s.AddEvents(app, user, "s", jsonl(event("e1", "user", 1, content("user", "x"))), map[string]any{"tags": []any{bad}})
	wantStatus(t, err, StatusInvalidArgument, "add_events: metadata not UTF-8 (binding check)")

	// A batch with one malformed line is rejected whole.
	_, err = s.PutEpisodesJSONL(app, user, jsonl(`{"primary":"alpha one"}`, `{"primary": "alpha two"`, `{"primary":"alpha three"}`))
	wantStatus(t, err, StatusInvalidArgument, "put: malformed line")
	if !strings.Contains(err.Error(), "line 2") {
		t.Errorf("error does not name the line: %v", err)
	}
	_, err = s.PutEpisodesJSONL(app, user, jsonl(`{"primary":"alpha four"}`, `{"primary":"alpha five","bogus":1}`))
	wantStatus(t, err, StatusInvalidArgument, "put: unknown key")
	if !strings.Contains(err.Error(), "bogus") {
		t.Errorf("error does not name the key: %v", err)
	}
	_, err = s.PutEpisodesJSONL(app, user, []byte(`["not","an","object"]`))
	wantStatus(t, err, StatusInvalidArgument, "put: not an object")
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{ID: "not-a-uuid", Primary: "alpha six"}})
	wantStatus(t, err, StatusInvalidArgument, "put: bad id")
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "alpha", Metadata: json.RawMessage(`[1]`)}})
	wantStatus(t, err, StatusInvalidArgument, "put: metadata not an object")
	_, err = s.AddSession(app, user, "s1", jsonl(event("e1", "user", 1, content("user", "alpha event")), `{"id":"e2",`))
	wantStatus(t, err, StatusInvalidArgument, "add_session: malformed event line")
	_, err = s.AddEvents(app, user, "s1", []byte(`not json`), nil)
	wantStatus(t, err, StatusInvalidArgument, "add_events: malformed event line")
	if r, err := s.KeywordSearch(app, user, KeywordQuery{Text: "alpha", Limit: 100}); err != nil || len(r) != 0 {
		t.Fatalf("a rejected batch wrote something: %d results, %v", len(r), err)
	}
	if m, err := s.Search(app, user, "alpha"); err != nil || len(m) != 0 {
		t.Fatalf("a rejected event batch wrote something: %v %v", m, err)
	}

	_, err = s.DeleteEpisodes(app, user, "not-a-uuid")
	wantStatus(t, err, StatusInvalidArgument, "delete: bad id")
	_, err = s.KeywordSearchRaw(app, user, []byte(`{"text":"a","limt":3}`))
	wantStatus(t, err, StatusInvalidArgument, "keyword: unknown query key")
	_, err = s.KeywordSearchRaw(app, user, []byte(`{"text":`))
	wantStatus(t, err, StatusInvalidArgument, "keyword: malformed query")
	_, err = s.SubstringSearchRaw(app, user, []byte(`{"text":"a","nope":true}`))
	wantStatus(t, err, StatusInvalidArgument, "substring: unknown query key")
	_, err = s.LexicalPage(app, user, LexicalPageQuery{Text: ""})
	wantStatus(t, err, StatusInvalidArgument, "lexical: empty text")
	_, err = s.LexicalPage(app, user, LexicalPageQuery{Text: "?!, ..."})
	wantStatus(t, err, StatusInvalidArgument, "lexical: punctuation-only text")
	_, err = s.LexicalPage(app, user, LexicalPageQuery{Text: "a", Limit: 101})
	wantStatus(t, err, StatusInvalidArgument, "lexical: limit > 100")
	_, err = s.LexicalPage(app, user, LexicalPageQuery{Text: "a", After: "nope"})
	wantStatus(t, err, StatusInvalidArgument, "lexical: bad after")
	_, err = s.HybridSearch(app, user, HybridQuery{Text: "a", Limit: 5, SemanticWeight: Weight(1.5)})
	wantStatus(t, err, StatusInvalidArgument, "hybrid: weight > 1")
	_, err = s.HybridSearch(app, user, HybridQuery{Text: "a", Limit: 5, SemanticWeight: Weight(-0.1)})
	wantStatus(t, err, StatusInvalidArgument, "hybrid: weight < 0")
	_, err = s.HybridSearch(app, user, HybridQuery{Text: "a", Limit: 5, SemanticWeight: Weight(math.NaN())})
	wantStatus(t, err, StatusInvalidArgument, "hybrid: weight NaN (binding check)")
	_, err = s.HybridSearchRaw(app, user, []byte(`{"text":"a","limit":5,"semantic_weight":1e999}`))
	wantStatus(t, err, StatusInvalidArgument, "hybrid: weight not finite")
	_, err = s.AddEvents(app, user, "s", nil, map[string]any{"ttl_ms": math.Inf(1)})
	wantStatus(t, err, StatusInvalidArgument, "add_events: unencodable metadata")

	// Embedding dimension is fixed by the namespace's first vector.
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "vec", Embedding: []float32{1, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "vec2", Embedding: []float32{1, 0}}})
	wantStatus(t, err, StatusInvalidArgument, "put: embedding dimension mismatch")
}

func TestADKRoundTrip(t *testing.T) {
	s := memStore(t)
	c1a := content("user", "The ADK is a great toolkit.")
	c1c := content("model", "I agree. The Agent Development Kit (ADK) rocks!")
	c2a := content("user", "I like to code in Python.")
	session1 := jsonl(
		event("event-1a", "user", 12345, c1a),
		event("event-1b", "user", 12346, ""), // no content: not stored
		event("event-1c", "model", 12347.5, c1c),
	)
	n, err := s.AddSession(app, user, "session-1", session1)
	if err != nil || n != 2 {
		t.Fatalf("add_session: stored %d, %v", n, err)
	}
	if n, err = s.AddSession(app, user, "session-2", jsonl(event("event-2a", "user", 54321, c2a))); err != nil || n != 1 {
		t.Fatalf("add_session 2: stored %d, %v", n, err)
	}
	if n, err = s.AddSession("other-app", user, "s", jsonl(event("x", "user", 1, content("user", "Python secret")))); err != nil || n != 1 {
		t.Fatalf("add_session other app: %d %v", n, err)
	}

	m, err := s.Search(app, user, "How about ADK?")
	if err != nil {
		t.Fatal(err)
	}
	if got := memoryIDs(m); !eqStrings(got, []string{"event-1a", "event-1c"}) {
		t.Fatalf("search ADK: %v", got)
	}
	if string(m[0].Content) != c1a || string(m[1].Content) != c1c {
		t.Errorf("content not returned byte-for-byte:\n%s\n%s", m[0].Content, m[1].Content)
	}
	if m[0].Author == nil || *m[0].Author != "user" || m[1].Author == nil || *m[1].Author != "model" {
		t.Errorf("authors: %v %v", m[0].Author, m[1].Author)
	}
	if m[0].Timestamp == nil || *m[0].Timestamp != isoLocal(12345, 0) {
		t.Errorf("timestamp %v, want %s", m[0].Timestamp, isoLocal(12345, 0))
	}
	if m[1].Timestamp == nil || *m[1].Timestamp != isoLocal(12347, 500000) {
		t.Errorf("timestamp %v, want %s", m[1].Timestamp, isoLocal(12347, 500000))
	}
	if m[0].CustomMetadata == nil || len(m[0].CustomMetadata) != 0 {
		t.Errorf("custom_metadata %v, want {}", m[0].CustomMetadata)
	}
	raw, err := s.SearchRaw(app, user, "python")
	if err != nil || !bytes.HasPrefix(raw, []byte(`{"memories":[`)) {
		t.Fatalf("raw search: %s %v", raw, err)
	}
	if m, _ := s.Search(app, user, "Python"); len(m) != 1 || m[0].ID != "event-2a" {
		t.Fatalf("search Python: %v", memoryIDs(m))
	}
	if m, _ := s.Search(app, user, "nonexistent"); len(m) != 0 {
		t.Fatalf("search nonexistent: %v", memoryIDs(m))
	}
	if m, _ := s.Search(app, user, "  ...  "); len(m) != 0 {
		t.Fatalf("search punctuation: %v", memoryIDs(m))
	}
	if m, _ := s.Search(app, "nobody", "python"); len(m) != 0 {
		t.Fatalf("search unknown user: %v", memoryIDs(m))
	}
	// Namespaces are pairs: no collision through a separator.
	if _, err := s.AddSession("app/other-user", "user", "s", jsonl(event("sec", "user", 1, content("user", "This is a secret.")))); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Search("app", "other-user/user", "secret"); len(m) != 0 {
		t.Fatalf("slash collision: %v", memoryIDs(m))
	}
	if m, _ := s.Search("app/other-user", "user", "secret"); len(m) != 1 {
		t.Fatalf("slash namespace: %v", memoryIDs(m))
	}

	// add_events: delta, first write wins, duplicates within the batch dropped.
	n, err = s.AddEvents(app, user, "session-1", jsonl(
		event("event-1a", "user", 1, content("user", "Updated duplicate text.")),
		event("event-1d", "user", 12348, content("user", "A new ADK fact.")),
		event("event-1d", "user", 12349, content("user", "dup in batch")),
	), map[string]any{"ignored_key": 1})
	if err != nil || n != 1 {
		t.Fatalf("add_events: added %d, %v", n, err)
	}
	if m, _ := s.Search(app, user, "updated"); len(m) != 0 {
		t.Fatalf("duplicate id overwrote: %v", memoryIDs(m))
	}
	if m, _ := s.Search(app, user, "adk"); !eqStrings(memoryIDs(m), []string{"event-1a", "event-1c", "event-1d"}) {
		t.Fatalf("after add_events: %v", memoryIDs(m))
	}
	// Unknown session bucket: empty session id.
	if n, err = s.AddEvents(app, user, "", jsonl(event("u1", "user", 5, content("user", "orphan ADK note"))), nil); err != nil || n != 1 {
		t.Fatalf("add_events unknown session: %d %v", n, err)
	}

	// delete_memory removes from every bucket and tombstones the id.
	if n, err = s.DeleteMemory(app, user, "event-1a"); err != nil || n != 1 {
		t.Fatalf("delete_memory: %d %v", n, err)
	}
	if n, err = s.DeleteMemory(app, user, ""); err != nil || n != 0 {
		t.Fatalf("delete_memory empty id: %d %v", n, err)
	}
	if n, err = s.DeleteMemory(app, user, "no-such-id"); err != nil || n != 0 {
		t.Fatalf("delete_memory unknown: %d %v", n, err)
	}
	if n, err = s.AddEvents(app, user, "session-9", jsonl(event("event-1a", "user", 1, c1a)), nil); err != nil || n != 0 {
		t.Fatalf("re-add of a tombstoned id: added %d, %v", n, err)
	}
	if m, _ := s.Search(app, user, "adk"); !eqStrings(memoryIDs(m), []string{"event-1c", "event-1d", "u1"}) {
		t.Fatalf("after delete_memory: %v", memoryIDs(m))
	}

	// add_session replaces the bucket wholesale.
	if n, err = s.AddSession(app, user, "session-1", jsonl(event("event-1c", "model", 12347.5, c1c))); err != nil || n != 1 {
		t.Fatalf("replace session: %d %v", n, err)
	}
	if m, _ := s.Search(app, user, "adk"); !eqStrings(memoryIDs(m), []string{"event-1c", "u1"}) {
		t.Fatalf("after replacing session-1: %v", memoryIDs(m))
	}

	// ADK events are episodes of type "event" to the other APIs.
	r, err := s.KeywordSearch(app, user, KeywordQuery{Text: "python", EpisodeType: "event"})
	if err != nil || len(r) != 1 || r[0].Record.EpisodeType != "event" {
		t.Fatalf("events as episodes: %+v %v", r, err)
	}
	if e := r[0].Record; e.EventID == nil || *e.EventID != "event-2a" || e.SessionID == nil || *e.SessionID != "session-2" || string(e.Content) != c2a {
		t.Errorf("event episode provenance: %+v", e)
	}
}

func TestADKTopTen(t *testing.T) {
	s := memStore(t)
	var lines []string
	for i := 0; i < 20; i++ {
		lines = append(lines, event(fmt.Sprintf("n%d", i), "user", float64(i), content("user", fmt.Sprintf("note %d about work", i))))
	}
	lines = append(lines, event("backlog", "user", 99, content("user", "the backlog note about work")))
	if _, err := s.AddSession(app, user, "s", jsonl(lines...)); err != nil {
		t.Fatal(err)
	}
	m, err := s.Search(app, user, "work backlog note")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"backlog", "n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}
	if !eqStrings(memoryIDs(m), want) {
		t.Fatalf("top ten: %v", memoryIDs(m))
	}
}

func TestEpisodesRoundTrip(t *testing.T) {
	s := memStore(t)
	aID := "01900000-0000-7000-8000-00000000000a"
	ts := 1.5
	in := []EpisodeInput{
		{ID: aID, EpisodeType: "note", Tags: []string{"x", "y"}, Primary: "The quick brown fox",
			Secondary: "jumps over", Context: "the lazy dog", Metadata: json.RawMessage(`{"k":1,"s":"v"}`),
			Author: "alice", SessionID: "sess", EventID: "ev", Timestamp: &ts, Content: json.RawMessage(`{"a":[1,2]}`)},
		{Primary: "brown bread recipe", Tags: []string{"y"}},
		{Primary: "nothing relevant here"},
	}
	ids, err := s.PutEpisodes(app, user, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0] != aID {
		t.Fatalf("ids %v", ids)
	}
	for _, id := range ids[1:] {
		if !uuidRE.MatchString(id) || id[14] != '7' {
			t.Errorf("generated id %q is not a lowercase v7 UUID", id)
		}
	}
	bID, cID := ids[1], ids[2]

	r, err := s.KeywordSearch(app, user, KeywordQuery{Text: "brown fox"})
	if err != nil {
		t.Fatal(err)
	}
	if !eqStrings(episodeIDs(r), []string{aID, bID}) || !(r[0].Score > r[1].Score && r[1].Score > 0) {
		t.Fatalf("keyword ranking: %v", r)
	}
	a := r[0].Record
	if a.Revision != 1 || a.EpisodeType != "note" || !eqStrings(a.Tags, []string{"x", "y"}) ||
		a.Primary != in[0].Primary || a.Secondary != in[0].Secondary || a.Context != in[0].Context ||
		a.Author == nil || *a.Author != "alice" || a.SessionID == nil || *a.SessionID != "sess" ||
		a.EventID == nil || *a.EventID != "ev" || a.Timestamp == nil || *a.Timestamp != 1.5 ||
		a.ExpiresAtMs != nil || a.CreatedAtMs <= 0 || a.UpdatedAtMs < a.CreatedAtMs {
		t.Fatalf("episode fields: %+v", a)
	}
	var meta map[string]any
	if err := json.Unmarshal(a.Metadata, &meta); err != nil || meta["k"] != 1.0 || meta["s"] != "v" {
		t.Errorf("metadata %s", a.Metadata)
	}
	if string(a.Content) != `{"a":[1,2]}` {
		t.Errorf("content %s", a.Content)
	}
	if b := r[1].Record; b.EpisodeType != "episode" || b.Author != nil || b.Timestamp != nil || string(b.Content) != "null" {
		t.Errorf("defaults: %+v", b)
	}

	if r, _ := s.KeywordSearch(app, user, KeywordQuery{Text: "brown", Tag: "x"}); !eqStrings(episodeIDs(r), []string{aID}) {
		t.Errorf("tag filter: %v", episodeIDs(r))
	}
	if r, _ := s.KeywordSearch(app, user, KeywordQuery{Text: "brown", EpisodeType: "episode"}); !eqStrings(episodeIDs(r), []string{bID}) {
		t.Errorf("type filter: %v", episodeIDs(r))
	}
	if r, _ := s.KeywordSearch(app, user, KeywordQuery{Text: "brown", Limit: 1}); len(r) != 1 {
		t.Errorf("limit: %v", episodeIDs(r))
	}
	if r, _ := s.KeywordSearch(app, "other", KeywordQuery{Text: "brown"}); len(r) != 0 {
		t.Errorf("other namespace sees records: %v", episodeIDs(r))
	}

	// Update: new revision, same creation time.
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{ID: aID, EpisodeType: "note", Primary: "The slow brown fox"}}); err != nil {
		t.Fatal(err)
	}
	r, _ = s.KeywordSearch(app, user, KeywordQuery{Text: "slow"})
	if len(r) != 1 || r[0].Record.Revision != 2 || r[0].Record.CreatedAtMs != a.CreatedAtMs || r[0].Record.Secondary != "" {
		t.Fatalf("update: %+v", r)
	}

	// Substring: case-insensitive, ascending UUID order.
	sub, err := s.SubstringSearch(app, user, SubstringQuery{Text: "ROWN"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{aID, bID}
	sort.Strings(want)
	if got := []string{}; true {
		for _, e := range sub {
			got = append(got, e.ID)
		}
		if !eqStrings(got, want) {
			t.Fatalf("substring: %v want %v", got, want)
		}
	}
	if sub, _ := s.SubstringSearch(app, user, SubstringQuery{Text: "relevant"}); len(sub) != 1 || sub[0].ID != cID {
		t.Fatalf("substring 2: %v", sub)
	}

	// Delete: counted once, never resurrected, id never reused.
	n, err := s.DeleteEpisodes(app, user, bID, "01900000-0000-7000-8000-0000000000ff")
	if err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
	if n, err = s.DeleteEpisodes(app, user, bID); err != nil || n != 0 {
		t.Fatalf("second delete: %d %v", n, err)
	}
	if r, _ := s.KeywordSearch(app, user, KeywordQuery{Text: "brown"}); !eqStrings(episodeIDs(r), []string{aID}) {
		t.Fatalf("after delete: %v", episodeIDs(r))
	}
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{ID: bID, Primary: "brown again"}})
	wantStatus(t, err, StatusInvalidArgument, "re-put of a deleted id")

	// Expiry: invisible at and after expires_at_ms.
	past := time.Now().Add(-time.Minute).UnixMilli()
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "ephemeral", ExpiresAtMs: &past}, {Primary: "ephemeral ttl", TTLMs: 1}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if r, _ := s.KeywordSearch(app, user, KeywordQuery{Text: "ephemeral"}); len(r) != 0 {
		t.Fatalf("expired records visible: %v", episodeIDs(r))
	}

	// Raw JSONL put: blank lines skipped, ids in line order.
	rawIDs, err := s.PutEpisodesJSONL(app, user, []byte("{\"primary\":\"raw one\"}\n\n  \r\n{\"primary\":\"raw two\"}\n"))
	if err != nil || len(rawIDs) != 2 {
		t.Fatalf("raw put: %v %v", rawIDs, err)
	}
	sub, _ = s.SubstringSearch(app, user, SubstringQuery{Text: "raw "})
	if len(sub) != 2 || sub[0].ID != rawIDs[0] || sub[0].Primary != "raw one" || sub[1].ID != rawIDs[1] {
		t.Fatalf("raw put ids: %v vs %+v", rawIDs, sub)
	}
	if ids, err := s.PutEpisodes(app, user, nil); err != nil || len(ids) != 0 {
		t.Fatalf("empty put: %v %v", ids, err)
	}
}

func TestLexicalPage(t *testing.T) {
	s := memStore(t)
	var in []EpisodeInput
	for i := 0; i < 7; i++ {
		p := fmt.Sprintf("filler record %d", i)
		if i%2 == 0 {
			p = fmt.Sprintf("lexical target %d", i)
		}
		in = append(in, EpisodeInput{Primary: p})
	}
	if _, err := s.PutEpisodes(app, user, in); err != nil {
		t.Fatal(err)
	}
	page, err := s.LexicalPage(app, user, LexicalPageQuery{Text: "target"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Hits) != 4 || page.MatchedRecords != 4 || page.CorpusRecords != 7 || page.ScannedRecords != 7 ||
		page.ScannedBytes == 0 || page.NextAfter != nil || !page.Exhaustive {
		t.Fatalf("full page: %+v", page)
	}
	for i := 1; i < len(page.Hits); i++ {
		if page.Hits[i].Score > page.Hits[i-1].Score {
			t.Fatalf("hits not sorted by score: %+v", page.Hits)
		}
	}
	// Paginate two records at a time.
	seen := map[string]bool{}
	var scanned uint64
	q := LexicalPageQuery{Text: "target", ScanLimit: 2}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not terminate")
		}
		p, err := s.LexicalPage(app, user, q)
		if err != nil {
			t.Fatal(err)
		}
		if p.Exhaustive {
			t.Fatalf("a bounded or continued page claims exhaustive: %+v", p)
		}
		scanned += p.ScannedRecords
		for _, h := range p.Hits {
			seen[h.Record.ID] = true
		}
		if p.NextAfter == nil {
			break
		}
		q.After = *p.NextAfter
	}
	if len(seen) != 4 || scanned != 7 {
		t.Fatalf("pagination saw %d hits over %d records", len(seen), scanned)
	}
	_, err = s.LexicalPage(app, user, LexicalPageQuery{Text: "target", ScanBytesLimit: 1})
	wantStatus(t, err, StatusInvalidArgument, "byte budget smaller than one record")
}

type countingEmbedder struct {
	calls atomic.Int32
	vec   []float32
	err   error
}

func (c *countingEmbedder) Embed(string) ([]float32, error) {
	c.calls.Add(1)
	return c.vec, c.err
}

func TestHybrid(t *testing.T) {
	s := memStore(t)
	ids, err := s.PutEpisodes(app, user, []EpisodeInput{
		{Primary: "apple banana", Embedding: []float32{1, 0, 0}},
		{Primary: "cherry date", Embedding: []float32{0, 1, 0}},
		{Primary: "apple cherry", Embedding: []float32{0.7, 0.7, 0}},
		{Primary: "apple only text"},
	})
	if err != nil {
		t.Fatal(err)
	}
	d1, d2, d3, d4 := ids[0], ids[1], ids[2], ids[3]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

	res, err := s.HybridSearch(app, user, HybridQuery{Text: "apple", Vector: []float32{0, 1, 0}, Limit: 10, SemanticWeight: Weight(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]HybridResult{}
	for i, r := range res {
		byID[r.Record.ID] = r
		if !near(r.Score, r.KeywordScore+r.SemanticScore) {
			t.Errorf("score %v != %v + %v", r.Score, r.KeywordScore, r.SemanticScore)
		}
		if i > 0 && r.Score > res[i-1].Score {
			t.Errorf("results not sorted: %+v", res)
		}
	}
	if r, ok := byID[d2]; !ok || r.KeywordScore != 0 || !near(r.SemanticScore, 0.5/61) {
		t.Errorf("semantic-only hit d2: %+v (present %v)", r, ok)
	}
	if r, ok := byID[d4]; !ok || r.SemanticScore != 0 || r.KeywordScore <= 0 {
		t.Errorf("lexical-only hit d4: %+v (present %v)", r, ok)
	}
	if _, ok := byID[d1]; !ok {
		t.Errorf("d1 missing: %+v", res)
	}
	if _, ok := byID[d3]; !ok {
		t.Errorf("d3 missing: %+v", res)
	}

	// Lexical weight only: RRF scale, no semantic contribution.
	res, err = s.HybridSearch(app, user, HybridQuery{Text: "cherry", Vector: []float32{1, 0, 0}, Limit: 10, SemanticWeight: Weight(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("weight 0: %+v", res)
	}
	for i, r := range res {
		if r.SemanticScore != 0 || !near(r.KeywordScore, 1.0/float64(61+i)) || !near(r.Score, r.KeywordScore) {
			t.Errorf("weight 0 result %d: %+v", i, r)
		}
	}
	// Semantic weight only.
	res, err = s.HybridSearch(app, user, HybridQuery{Text: "zzz", Vector: []float32{0, 1, 0}, Limit: 1, SemanticWeight: Weight(1)})
	if err != nil || len(res) != 1 || res[0].Record.ID != d2 || res[0].KeywordScore != 0 || !near(res[0].Score, 1.0/61) {
		t.Fatalf("weight 1: %+v %v", res, err)
	}
	// No vector: lexical weight becomes 1.
	res, err = s.HybridSearch(app, user, HybridQuery{Text: "banana", Limit: 10})
	if err != nil || len(res) != 1 || res[0].Record.ID != d1 || !near(res[0].Score, 1.0/61) {
		t.Fatalf("no vector: %+v %v", res, err)
	}
	res, err = s.HybridSearch(app, user, HybridQuery{Text: "  \t ", Limit: 10})
	if err != nil || len(res) != 0 {
		t.Fatalf("blank text: %+v %v", res, err)
	}

	// HybridSearchText calls the embedder only when a vector can matter.
	emb := &countingEmbedder{vec: []float32{0, 1, 0}}
	for _, q := range []HybridQuery{
		{Text: " \n ", Limit: 10},
		{Text: "", Limit: 10},
		{Text: "apple", Limit: 10, SemanticWeight: Weight(0)},
	} {
		if _, err := s.HybridSearchText(app, user, q, emb); err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
	}
	if emb.calls.Load() != 0 {
		t.Fatalf("embedder called %d times for queries that cannot use it", emb.calls.Load())
	}
	res, err = s.HybridSearchText(app, user, HybridQuery{Text: "zzz", Limit: 1, SemanticWeight: Weight(1)}, emb)
	if err != nil || emb.calls.Load() != 1 || len(res) != 1 || res[0].Record.ID != d2 {
		t.Fatalf("HybridSearchText: %+v %v (calls %d)", res, err, emb.calls.Load())
	}
	boom := errors.New("model offline")
	_, err = s.HybridSearchText(app, user, HybridQuery{Text: "apple", Limit: 3}, &countingEmbedder{err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("embedder error not wrapped: %v", err)
	}
	var fn Embedder = EmbedderFunc(func(string) ([]float32, error) { return []float32{1, 0}, nil })
	_, err = s.HybridSearchText(app, user, HybridQuery{Text: "apple", Limit: 3}, fn)
	wantStatus(t, err, StatusInvalidArgument, "query vector of the wrong dimension")
}

func TestBufferGrowth(t *testing.T) {
	s := memStore(t)
	const n = 300
	in := make([]EpisodeInput, n)
	for i := range in {
		in[i] = EpisodeInput{Primary: fmt.Sprintf("needle %d %s", i, strings.Repeat("é", 300))}
	}
	if _, err := s.PutEpisodes(app, user, in); err != nil {
		t.Fatal(err)
	}
	raw, err := s.KeywordSearchRaw(app, user, []byte(`{"text":"needle","limit":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) <= initialOutCap {
		t.Fatalf("result of %d bytes does not exercise growth", len(raw))
	}
	r, err := s.KeywordSearch(app, user, KeywordQuery{Text: "needle", Limit: 1000})
	if err != nil || len(r) != n {
		t.Fatalf("large keyword search: %d results, %v", len(r), err)
	}
	// Start from a zero-capacity (NULL) buffer: the first call must only report the size.
	old := initialOutCap
	initialOutCap = 0
	defer func() { initialOutCap = old }()
	raw2, err := s.KeywordSearchRaw(app, user, []byte(`{"text":"needle","limit":1000}`))
	if err != nil || !bytes.Equal(raw, raw2) {
		t.Fatalf("growth from zero: %v (equal %v)", err, bytes.Equal(raw, raw2))
	}
	var lines []string
	for i := 0; i < 12; i++ {
		lines = append(lines, event(fmt.Sprintf("big%d", i), "user", float64(i), content("user", "big "+strings.Repeat("word ", 2000))))
	}
	if _, err := s.AddSession(app, user, "big", jsonl(lines...)); err != nil {
		t.Fatal(err)
	}
	m, err := s.Search(app, user, "big")
	if err != nil || len(m) != 10 {
		t.Fatalf("large ADK search: %d, %v", len(m), err)
	}
	if _, err := s.SubstringSearch(app, user, SubstringQuery{Text: "needle", Limit: 1000}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrent(t *testing.T) {
	// Opened by hand: on a deadlock the store is leaked, since Close would wait forever.
	s, err := Open(":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	const writes = 200
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "shared seed"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 64)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := 0; i < writes; i++ {
			if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: fmt.Sprintf("shared item %d", i)}}); err != nil {
				errs <- err
				return
			}
			if _, err := s.AddEvents(app, user, "s", jsonl(event(fmt.Sprintf("e%d", i), "user", float64(i), content("user", "shared event"))), nil); err != nil {
				errs <- err
				return
			}
		}
	}()
	var searches atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				var err error
				switch g % 4 {
				case 0:
					_, err = s.KeywordSearch(app, user, KeywordQuery{Text: "shared", Limit: 1000})
				case 1:
					_, err = s.Search(app, user, "shared event")
				case 2:
					_, err = s.LexicalPage(app, user, LexicalPageQuery{Text: "shared item", Limit: 100})
				case 3:
					_, err = s.HybridSearch(app, user, HybridQuery{Text: "shared", Limit: 50})
				}
				if err != nil {
					errs <- err
					return
				}
				searches.Add(1)
			}
		}(g)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		t.Fatalf("deadlock: writer and readers still blocked in the library after 60s (done=%v, %d searches)",
			isClosed(done), searches.Load())
	}
	defer s.Close()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := s.KeywordSearch(app, user, KeywordQuery{Text: "item", Limit: 1000})
	if err != nil || len(r) != writes {
		t.Fatalf("after concurrent writes: %d, %v", len(r), err)
	}
	t.Logf("%d concurrent searches", searches.Load())
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Close while other goroutines are mid-call: they finish or see ErrClosed.
func TestConcurrentClose(t *testing.T) {
	s, err := Open(":memory:", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "closing soon"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var closedSeen atomic.Int32
	start := make(chan struct{})
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				_, err := s.KeywordSearch(app, user, KeywordQuery{Text: "closing"})
				if errors.Is(err, ErrClosed) {
					closedSeen.Add(1)
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if closedSeen.Load() != 6 {
		t.Fatalf("%d goroutines saw ErrClosed", closedSeen.Load())
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "durable fact", Embedding: []float32{0, 0, 1}}, {Primary: "durable but deleted"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEpisodes(app, user, ids[1]); err != nil {
		t.Fatal(err)
	}
	c := content("user", "remember the durable event")
	if _, err := s.AddSession(app, user, "s1", jsonl(event("pe1", "user", 7, c))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s2", jsonl(event("pe2", "user", 8, content("user", "durable gone")))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteMemory(app, user, "pe2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = dirStore(t, dir, Options{SyncWrites: true})
	r, err := s.KeywordSearch(app, user, KeywordQuery{Text: "durable", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, x := range r {
		types = append(types, x.Record.EpisodeType+":"+x.Record.Primary)
	}
	if len(r) != 2 {
		t.Fatalf("after reopen: %v", types)
	}
	m, err := s.Search(app, user, "durable")
	if err != nil || len(m) != 1 || m[0].ID != "pe1" || string(m[0].Content) != c {
		t.Fatalf("ADK after reopen: %+v %v", m, err)
	}
	if n, err := s.AddEvents(app, user, "s3", jsonl(event("pe2", "user", 9, content("user", "durable again"))), nil); err != nil || n != 0 {
		t.Fatalf("tombstone lost across reopen: added %d, %v", n, err)
	}
	res, err := s.HybridSearch(app, user, HybridQuery{Text: "zzz", Vector: []float32{0, 0, 1}, Limit: 1, SemanticWeight: Weight(1)})
	if err != nil || len(res) != 1 || res[0].Record.ID != ids[0] {
		t.Fatalf("vectors after reopen: %+v %v", res, err)
	}
}

// Namespaces are (app, user) pairs of arbitrary UTF-8, U+0000 and empty included.
func TestNamespaces(t *testing.T) {
	s := memStore(t)
	spaces := [][2]string{{"", ""}, {"a", "\x00b"}, {"a\x00", "b"}, {"a:b", ""}, {"a", ":b"}, {"ü", "/"}}
	for i, ns := range spaces {
		if _, err := s.PutEpisodes(ns[0], ns[1], []EpisodeInput{{Primary: fmt.Sprintf("namespace marker%d", i)}}); err != nil {
			t.Fatalf("put %q: %v", ns, err)
		}
		if _, err := s.AddSession(ns[0], ns[1], "s", jsonl(event(fmt.Sprintf("e%d", i), "user", 1, content("user", "namespace event")))); err != nil {
			t.Fatalf("add_session %q: %v", ns, err)
		}
	}
	for i, ns := range spaces {
		r, err := s.KeywordSearch(ns[0], ns[1], KeywordQuery{Text: "namespace", Limit: 100})
		if err != nil || len(r) != 2 {
			t.Fatalf("keyword %q: %d results, %v", ns, len(r), err)
		}
		m, err := s.Search(ns[0], ns[1], "namespace")
		if err != nil || !eqStrings(memoryIDs(m), []string{fmt.Sprintf("e%d", i)}) {
			t.Fatalf("search %q: %v %v", ns, memoryIDs(m), err)
		}
	}
}

func TestCacheBytesAndStats(t *testing.T) {
	_, err := Open(":memory:", Options{Create: true, RawJSON: `{"cache_bytes":1000}`})
	wantStatus(t, err, StatusInvalidArgument, "cache_bytes below 1 MiB")
	s := dirStore(t, t.TempDir(), Options{Create: true, RawJSON: `{"cache_bytes":8388608}`})
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.CacheBytes != 8<<20 || st.BlockCache.BudgetBytes != 2<<20 || st.GraphCache.BudgetBytes != 6<<20 {
		t.Fatalf("budgets: %+v", st)
	}
	if st.Format != 3 || st.OpenedFormat != 3 || st.IndexesBuilt != 0 || st.JournalReplayed != 0 {
		t.Fatalf("formats: %+v", st)
	}
}
