package mnem

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
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
	// The library's names: the corpus (static_names). The binding's table (Status.String) and
	// the library's agree on every integer in a wide range, so a status added to either one
	// alone fails here.
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
	if known != 11 {
		t.Errorf("%d known statuses, want 11 (codes 0-9 and 100)", known)
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
	// Flush and two independent :memory: stores: the corpus (memory_stores_independent).
	s, err := Open(":memory:", Options{})
	if err != nil {
		t.Fatal(err)
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
}

// Refused input in general: the conformance corpus. Here: strings that are not UTF-8 (which
// the corpus cannot carry) and the checks the binding makes before calling the library.
func TestBadInput(t *testing.T) {
	s := memStore(t)
	bad := "bad\xffname"
	_, err := Open("bad\xffpath", Options{Create: true})
	wantStatus(t, err, StatusInvalidArgument, "path not UTF-8")

	_, err = s.Search(bad, user, "x")
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

	_, err = s.HybridSearch(app, user, HybridQuery{Text: "a", Limit: 5, SemanticWeight: Weight(math.NaN())})
	wantStatus(t, err, StatusInvalidArgument, "hybrid: weight NaN (binding check)")
	_, err = s.AddEvents(app, user, "s", nil, map[string]any{"ttl_ms": math.Inf(1)})
	wantStatus(t, err, StatusInvalidArgument, "add_events: unencodable metadata")
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

// What an embedder does to writes and searches: the conformance corpus (embed_*), replayed
// with Go funcs. Here: the embedder's own error, or its panic, is what ErrEmbedderFailed says.
func TestEmbedderErrors(t *testing.T) {
	s := memStore(t)
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "apple", Embedding: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("model offline")
	_, err := s.HybridSearchText(app, user, HybridQuery{Text: "apple", Limit: 3}, &countingEmbedder{err: boom})
	wantStatus(t, err, StatusEmbedderFailed, "a failing embedder")
	if !errors.Is(err, ErrEmbedderFailed) || !errors.Is(err, boom) || !strings.Contains(err.Error(), "the embedder failed: "+boom.Error()) {
		t.Fatalf("embedder error: %v (errors.Is the embedder's own error: %v)", err, errors.Is(err, boom))
	}
	if err := s.SetEmbedder(EmbedderFunc(func(string) ([]float32, error) { panic("model bug") })); err != nil {
		t.Fatal(err)
	}
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "fig", Embed: true}})
	wantStatus(t, err, StatusEmbedderFailed, "a panicking embedder")
	if !strings.Contains(err.Error(), "panic: model bug") {
		t.Fatalf("a panicking embedder: %v", err)
	}
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

// PutEpisodesJSONL's ids skip blank lines as the library does (empty, spaces and
// tabs, CR), whatever the first guess of the ids buffer: a guess too small costs
// a retry, and the BUFFER_TOO_SMALL attempt writes nothing.
func TestPutEpisodesJSONLIdsSkipBlankLines(t *testing.T) {
	const a, b, c = "0190f0a0-0000-7000-8000-00000000000a", "0190f0a0-0000-7000-8000-00000000000b", "0190f0a0-0000-7000-8000-00000000000c"
	jsonl := []byte("\n{\"id\":\"" + a + "\",\"primary\":\"apple\"}\r\n \t \n{\"primary\":\"generated\"}\n\r\n" +
		"{\"id\":\"" + b + "\",\"primary\":\"banana\"}\n   \n{\"id\":\"" + c + "\",\"primary\":\"cherry\"}\n")
	s := memStore(t)
	old := idsGuess
	defer func() { idsGuess = old }()
	// -1: the binding's own guess; then too small (0, one id), and more than needed.
	for _, guess := range []int{-1, 0, 16, 128} {
		if guess >= 0 {
			idsGuess = func([]byte) int { return guess }
		}
		u := fmt.Sprintf("guess%d", guess)
		ids, err := s.PutEpisodesJSONL(app, u, jsonl)
		if err != nil {
			t.Fatalf("guess %d: %v", guess, err)
		}
		if len(ids) != 4 || ids[0] != a || !uuidRE.MatchString(ids[1]) || ids[1] == a || ids[2] != b || ids[3] != c {
			t.Fatalf("guess %d: ids %q", guess, ids)
		}
		eps, err := s.GetEpisodes(app, u, ids...)
		if err != nil || len(eps) != 4 || eps[1] == nil || eps[1].Primary != "generated" || eps[3] == nil || eps[3].Primary != "cherry" {
			t.Fatalf("guess %d: stored %+v, %v", guess, eps, err)
		}
		st, err := s.NamespaceStats(app, u)
		if err != nil || st.Live != 4 || st.Records.Keys != 4 {
			t.Fatalf("guess %d: %+v, %v (a retried attempt wrote too?)", guess, st, err)
		}
	}
	// Only blank lines, and a bad line after blank lines: the corpus (episodes_put_v2, episodes_invalid).
}
