package mnem

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An ended context stops every Context method before the library is called: nothing is
// written, and the error is the context's.
func TestContextEndedBeforeCall(t *testing.T) {
	s := memStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := jsonl(event("c1", "user", 1, content("user", "cancelled event")))
	checks := map[string]error{}
	_, checks["PutEpisodes"] = s.PutEpisodesContext(ctx, app, user, []EpisodeInput{{Primary: "cancelled put"}})
	_, checks["PutEpisodesJSONL"] = s.PutEpisodesJSONLContext(ctx, app, user, []byte(`{"primary":"cancelled put"}`))
	_, checks["AddSession"] = s.AddSessionContext(ctx, app, user, "s", ev)
	_, checks["AddEvents"] = s.AddEventsContext(ctx, app, user, "s", ev, nil)
	_, checks["DeleteMemory"] = s.DeleteMemoryContext(ctx, app, user, "c1")
	_, checks["DeleteEpisodes"] = s.DeleteEpisodesContext(ctx, app, user, "01900000-0000-7000-8000-00000000000a")
	checks["Flush"] = s.FlushContext(ctx)
	_, checks["Search"] = s.SearchContext(ctx, app, user, "cancelled")
	_, checks["KeywordSearch"] = s.KeywordSearchContext(ctx, app, user, KeywordQuery{Text: "cancelled"})
	_, checks["LexicalPage"] = s.LexicalPageContext(ctx, app, user, LexicalPageQuery{Text: "cancelled"})
	_, checks["SubstringSearch"] = s.SubstringSearchContext(ctx, app, user, SubstringQuery{Text: "cancelled"})
	_, checks["HybridSearch"] = s.HybridSearchContext(ctx, app, user, HybridQuery{Text: "cancelled", Limit: 1})
	emb := &countingEmbedder{vec: []float32{1}}
	_, checks["HybridSearchText"] = s.HybridSearchTextContext(ctx, app, user, HybridQuery{Text: "cancelled", Limit: 1}, emb)
	_, checks["Stats"] = s.StatsContext(ctx)
	_, checks["Open"] = OpenContext(ctx, ":memory:", Options{Create: true})
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%sContext with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
	if emb.calls.Load() != 0 {
		t.Errorf("embedder called %d times under a cancelled context", emb.calls.Load())
	}
	r, err := s.SubstringSearch(app, user, SubstringQuery{Text: "cancelled"})
	if err != nil || len(r) != 0 {
		t.Fatalf("a cancelled write was stored: %+v %v", r, err)
	}
	if m, err := s.Search(app, user, "cancelled"); err != nil || len(m) != 0 {
		t.Fatalf("a cancelled ADK write was stored: %+v %v", m, err)
	}
}

// Live contexts change nothing: the Context methods return what the plain ones do.
func TestContextLive(t *testing.T) {
	s := memStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids, err := s.PutEpisodesContext(ctx, app, user, []EpisodeInput{{Primary: "live apple", Embedding: []float32{1, 0}}, {Primary: "live pear", Embedding: []float32{0, 1}}})
	if err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	if n, err := s.AddSessionContext(ctx, app, user, "s", jsonl(event("l1", "user", 1, content("user", "live event")))); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	k, err := s.KeywordSearchContext(ctx, app, user, KeywordQuery{Text: "apple"})
	if err != nil || len(k) != 1 || k[0].Record.ID != ids[0] {
		t.Fatalf("keyword: %+v %v", k, err)
	}
	m, err := s.SearchContext(ctx, app, user, "live")
	if err != nil || !eqStrings(memoryIDs(m), []string{"l1"}) {
		t.Fatalf("search: %v %v", memoryIDs(m), err)
	}
	emb := EmbedderFunc(func(string) ([]float32, error) { return []float32{0, 1}, nil })
	h, err := s.HybridSearchTextContext(ctx, app, user, HybridQuery{Text: "zzz", Limit: 1, SemanticWeight: Weight(1)}, emb)
	if err != nil || len(h) != 1 || h[0].Record.ID != ids[1] {
		t.Fatalf("hybrid: %+v %v", h, err)
	}
	if n, err := s.DeleteEpisodesContext(ctx, app, user, ids[0]); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if st, err := s.StatsContext(ctx); err != nil || st.Format == 0 {
		t.Fatal(st, err)
	}
	if err := s.FlushContext(ctx); err != nil {
		t.Fatal(err)
	}
	// Library errors come through unchanged.
	_, err = s.KeywordSearchContext(ctx, app, user, KeywordQuery{Text: "x", Limit: -1})
	wantStatus(t, err, StatusInvalidArgument, "negative limit")
}

// A read whose context ends while the library works returns at once with the context's
// error; the abandoned call finishes on its own and the store stays usable (and closable).
func TestContextEndsDuringRead(t *testing.T) {
	s, err := Open(":memory:", Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "slow search"}}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	entered := make(chan struct{})
	testHookRead = func() { close(entered); <-release }
	defer func() { testHookRead = nil }()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.KeywordSearchContext(ctx, app, user, KeywordQuery{Text: "slow"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	<-entered
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("returned after %v, not when the deadline passed", d)
	}
	close(release) // the abandoned search now runs to its end
	testHookRead = nil
	r, err := s.KeywordSearchContext(context.Background(), app, user, KeywordQuery{Text: "slow"})
	if err != nil || len(r) != 1 {
		t.Fatalf("after an abandoned read: %+v %v", r, err)
	}
	if err := s.Close(); err != nil { // waits for the abandoned call if still running
		t.Fatal(err)
	}
}
