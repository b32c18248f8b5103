package mnem

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"
)

// filterStore holds five "river" episodes: four with a session, an author, a
// timestamp and a vector, one with none of them (its time is its creation).
func filterStore(t *testing.T) (*Store, map[string]EpisodeInput) {
	t.Helper()
	s := memStore(t)
	eps := []EpisodeInput{
		{ID: "01900000-0000-7000-8000-000000000001", Primary: "river stone", SessionID: "s1", Author: "alice", Timestamp: Float(1000), Embedding: []float32{1, 0, 0}},
		{ID: "01900000-0000-7000-8000-000000000002", Primary: "river river boat", SessionID: "s1", Author: "bob", Timestamp: Float(2000), Embedding: []float32{0.9, 0.1, 0}},
		{ID: "01900000-0000-7000-8000-000000000003", Primary: "river delta", SessionID: "s2", Author: "alice", Timestamp: Float(3000), Embedding: []float32{0, 1, 0}},
		{ID: "01900000-0000-7000-8000-000000000004", Primary: "river river river", SessionID: "s2", Author: "bob", Timestamp: Float(4000), Embedding: []float32{0, 0.9, 0.1}},
		{ID: "01900000-0000-7000-8000-000000000005", Primary: "a path by the river"},
	}
	if _, err := s.PutEpisodes(app, user, eps); err != nil {
		t.Fatal(err)
	}
	byID := map[string]EpisodeInput{}
	for _, e := range eps {
		byID[e.ID] = e
	}
	return s, byID
}

// wantSubsequence checks that got is all (and only) the hits of all that keep
// accepts, in all's order, with all's scores.
func wantSubsequence(t *testing.T, what string, all, got []ScoredEpisode, keep func(ScoredEpisode) bool) {
	t.Helper()
	var want []ScoredEpisode
	for _, h := range all {
		if keep(h) {
			want = append(want, h)
		}
	}
	if len(want) == 0 || len(want) == len(all) {
		t.Fatalf("%s: the filter must choose some hits, not none or all (%d of %d)", what, len(want), len(all))
	}
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, episodeIDs(got), episodeIDs(want))
	}
	for i := range want {
		if got[i].Record.ID != want[i].Record.ID || got[i].Score != want[i].Score {
			t.Fatalf("%s: hit %d is %s (%v), want %s (%v)", what, i, got[i].Record.ID, got[i].Score, want[i].Record.ID, want[i].Score)
		}
	}
}

func TestKeywordHitFilters(t *testing.T) {
	s, _ := filterStore(t)
	all, err := s.KeywordSearch(app, user, KeywordQuery{Text: "river", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("unfiltered: %d hits, want 5", len(all))
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	timeOf := func(h ScoredEpisode) float64 {
		if h.Record.Timestamp != nil {
			return *h.Record.Timestamp
		}
		return float64(h.Record.CreatedAtMs) / 1000
	}
	recent := float64(time.Now().Add(-time.Hour).Unix())
	cases := []struct {
		what string
		q    KeywordQuery
		keep func(ScoredEpisode) bool
	}{
		{"session s1", KeywordQuery{SessionID: "s1"}, func(h ScoredEpisode) bool { return str(h.Record.SessionID) == "s1" }},
		{"author bob", KeywordQuery{Author: "bob"}, func(h ScoredEpisode) bool { return str(h.Record.Author) == "bob" }},
		{"since 2000 until 4000", KeywordQuery{Since: Float(2000), Until: Float(4000)},
			func(h ScoredEpisode) bool { return timeOf(h) >= 2000 && timeOf(h) < 4000 }},
		// The episode without a timestamp is as old as its creation.
		{"since an hour ago", KeywordQuery{Since: Float(recent)}, func(h ScoredEpisode) bool { return h.Record.Timestamp == nil }},
		{"session s2 before 3000.5", KeywordQuery{Until: Float(3000.5), SessionID: "s2"},
			func(h ScoredEpisode) bool { return str(h.Record.SessionID) == "s2" && timeOf(h) < 3000.5 }},
		{"author alice, min score", KeywordQuery{Author: "alice", MinScore: Float(all[2].Score)},
			func(h ScoredEpisode) bool { return str(h.Record.Author) == "alice" && h.Score >= all[2].Score }},
	}
	for _, c := range cases {
		q := c.q
		q.Text, q.Limit = "river", 100
		got, err := s.KeywordSearch(app, user, q)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		wantSubsequence(t, c.what, all, got, c.keep)
	}

	// A minimum score cuts the unfiltered ranking: its prefix of scores at least the minimum.
	for _, i := range []int{0, 1, 3} {
		min := all[i].Score
		got, err := s.KeywordSearch(app, user, KeywordQuery{Text: "river", Limit: 100, MinScore: Float(min)})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for n < len(all) && all[n].Score >= min {
			n++
		}
		if !eqStrings(episodeIDs(got), episodeIDs(all[:n])) {
			t.Fatalf("min_score %v: got %v, want the prefix %v", min, episodeIDs(got), episodeIDs(all[:n]))
		}
	}
	// A limit applies after the filters.
	got, err := s.KeywordSearch(app, user, KeywordQuery{Text: "river", Limit: 1, Author: "alice"})
	if err != nil || len(got) != 1 || *got[0].Record.Author != "alice" {
		t.Fatalf("limit 1, author alice: %v %v", got, err)
	}

	_, err = s.KeywordSearch(app, user, KeywordQuery{Text: "river", Since: Float(5), Until: Float(4)})
	wantStatus(t, err, StatusInvalidArgument, "since after until")
}

func TestSubstringHitFilters(t *testing.T) {
	s, byID := filterStore(t)
	got, err := s.SubstringSearch(app, user, SubstringQuery{Text: "RIVER", Limit: 100, SessionID: "s2", Until: Float(4000)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || byID[got[0].ID].Primary != "river delta" {
		t.Fatalf("session s2 before 4000: %v", got)
	}
	got, err = s.SubstringSearch(app, user, SubstringQuery{Text: "river", Limit: 100, Author: "alice"})
	if err != nil || len(got) != 2 || *got[0].Author != "alice" || *got[1].Author != "alice" {
		t.Fatalf("author alice: %v %v", got, err)
	}
	// Substring hits have no score: a minimum is refused.
	_, err = s.SubstringSearchRaw(app, user, []byte(`{"text":"river","min_score":0}`))
	wantStatus(t, err, StatusInvalidArgument, "substring min_score")
}

func TestHybridHitFilters(t *testing.T) {
	s, _ := filterStore(t)
	base := HybridQuery{Text: "river", Vector: []float32{0, 1, 0}, Limit: 100}
	all, err := s.HybridSearch(app, user, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 || all[0].SemanticScore == 0 {
		t.Fatalf("unfiltered: %d hits %+v", len(all), all)
	}
	q := base
	q.Author = "alice"
	got, err := s.HybridSearch(app, user, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("author alice: %d hits", len(got))
	}
	for _, h := range got {
		if *h.Record.Author != "alice" {
			t.Fatalf("author alice: hit by %s", *h.Record.Author)
		}
	}
	// The fused minimum: the unfiltered ranking's prefix.
	q = base
	q.MinScore = Float(all[1].Score)
	got, err = s.HybridSearch(app, user, q)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < len(all) && all[n].Score >= all[1].Score {
		n++
	}
	if len(got) != n {
		t.Fatalf("min_score: %d hits, want %d", len(got), n)
	}
	for i := range got {
		if got[i].Record.ID != all[i].Record.ID || got[i].Score != all[i].Score {
			t.Fatalf("min_score: hit %d is %s, want %s", i, got[i].Record.ID, all[i].Record.ID)
		}
	}
}

func TestRecallModesAndFilters(t *testing.T) {
	s := memStore(t)
	s1 := jsonl(
		event("e1", "user", 1000, content("user", "the river is cold")),
		event("e2", "model", 1001, content("model", "a river boat trip")),
		event("e3", "user", 1002, content("user", "river fishing with bob")),
	)
	s2 := jsonl(
		event("e4", "user", 2000, content("user", "river river everywhere")),
		event("e5", "model", 2001, content("model", "mountains, not rivers")),
	)
	if _, err := s.AddSession(app, user, "s1", s1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s2", s2); err != nil {
		t.Fatal(err)
	}
	search, err := s.Search(app, user, "river")
	if err != nil {
		t.Fatal(err)
	}
	if len(search) < 4 {
		t.Fatalf("search: %v", memoryIDs(search))
	}
	recall := func(q RecallQuery) []string {
		t.Helper()
		q.Text = "river"
		ms, err := s.Recall(app, user, q)
		if err != nil {
			t.Fatalf("recall %+v: %v", q, err)
		}
		return memoryIDs(ms)
	}
	// Mode adk is Search's answer; the default (adk_vectors) is too, without vectors.
	if got := recall(RecallQuery{Mode: RecallADK}); !eqStrings(got, memoryIDs(search)) {
		t.Fatalf("mode adk: %v, search: %v", got, memoryIDs(search))
	}
	if got := recall(RecallQuery{}); !eqStrings(got, memoryIDs(search)) {
		t.Fatalf("default mode: %v, search: %v", got, memoryIDs(search))
	}
	// Filtered, mode adk keeps Search's order.
	inS1 := map[string]bool{"e1": true, "e2": true, "e3": true}
	var want []string
	for _, id := range memoryIDs(search) {
		if inS1[id] {
			want = append(want, id)
		}
	}
	if got := recall(RecallQuery{Mode: RecallADK, SessionID: "s1"}); !eqStrings(got, want) {
		t.Fatalf("mode adk, session s1: %v, want %v", got, want)
	}
	// BM25 ranks "river river everywhere" first; filters choose among its hits.
	bm25 := recall(RecallQuery{Mode: RecallBM25})
	if len(bm25) < 4 || bm25[0] != "e4" {
		t.Fatalf("mode bm25: %v", bm25)
	}
	for _, c := range []struct {
		q    RecallQuery
		want []string
	}{
		{RecallQuery{Mode: RecallBM25, Author: "model"}, []string{"e2"}},
		{RecallQuery{Mode: RecallBM25, SessionID: "s2"}, []string{"e4"}},
		{RecallQuery{Mode: RecallHybrid, Since: Float(1001), Until: Float(2000)}, []string{"e2", "e3"}},
	} {
		got := recall(c.q)
		sort.Strings(got)
		if !eqStrings(got, c.want) {
			t.Fatalf("%+v: %v, want %v", c.q, got, c.want)
		}
	}
	// An unknown mode, and a minimum score in mode adk (no scores), are invalid arguments.
	_, err = s.Recall(app, user, RecallQuery{Text: "river", Mode: "nearest"})
	wantStatus(t, err, StatusInvalidArgument, "unknown mode")
	var me *Error
	if !errors.As(err, &me) || me.Op != "recall" {
		t.Fatalf("unknown mode: %#v", err)
	}
	_, err = s.Recall(app, user, RecallQuery{Text: "river", Mode: RecallADK, MinScore: Float(0)})
	wantStatus(t, err, StatusInvalidArgument, "min_score in mode adk")
	// A limit above 10 is allowed now (at most 100).
	if _, err = s.Recall(app, user, RecallQuery{Text: "river", Mode: RecallBM25, Limit: 100}); err != nil {
		t.Fatalf("limit 100: %v", err)
	}
	_, err = s.Recall(app, user, RecallQuery{Text: "river", Limit: 101})
	wantStatus(t, err, StatusInvalidArgument, "limit 101")
}

func TestVectorModels(t *testing.T) {
	s := memStore(t)
	named := []EpisodeInput{
		{Primary: "green tea", Embedding: []float32{1, 0}, EmbeddingModel: "model-a"},
		{Primary: "black coffee", Embedding: []float32{0, 1}, EmbeddingModel: "model-a"},
	}
	if _, err := s.PutEpisodes(app, user, named); err != nil {
		t.Fatal(err)
	}
	st, err := s.NamespaceStats(app, user)
	if err != nil {
		t.Fatal(err)
	}
	if st.EmbeddingModel == nil || *st.EmbeddingModel != "model-a" || st.Dimension == nil || *st.Dimension != 2 {
		t.Fatalf("stats: model %v, dimension %v", st.EmbeddingModel, st.Dimension)
	}
	// Another model's vectors, or unnamed ones, are refused; nothing is written.
	for _, m := range []string{"model-b", ""} {
		_, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "water", Embedding: []float32{1, 1}, EmbeddingModel: m}})
		wantStatus(t, err, StatusInvalidArgument, "put with model "+m)
	}
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "no vector", EmbeddingModel: "model-a"}})
	wantStatus(t, err, StatusInvalidArgument, "embedding_model without embedding")

	q := HybridQuery{Text: "tea", Vector: []float32{1, 0}, SemanticWeight: Weight(1), VectorModel: "model-a"}
	got, err := s.HybridSearch(app, user, q)
	if err != nil || len(got) == 0 || got[0].Record.Primary != "green tea" {
		t.Fatalf("the namespace's model: %v %v", got, err)
	}
	for _, m := range []string{"model-b", ""} {
		q.VectorModel = m
		_, err = s.HybridSearch(app, user, q)
		wantStatus(t, err, StatusInvalidArgument, "hybrid with model "+m)
		_, err = s.Recall(app, user, RecallQuery{Text: "tea", Vector: []float32{1, 0}, VectorModel: m})
		wantStatus(t, err, StatusInvalidArgument, "recall with model "+m)
	}
	if _, err = s.Recall(app, user, RecallQuery{Text: "tea", Vector: []float32{1, 0}, VectorModel: "model-a"}); err != nil {
		t.Fatalf("recall with the namespace's model: %v", err)
	}

	// A namespace of unnamed vectors: no model in its stats, and a named query is refused.
	if _, err := s.PutEpisodes(app, "other", []EpisodeInput{{Primary: "tea", Embedding: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	st, err = s.NamespaceStats(app, "other")
	if err != nil || st.EmbeddingModel != nil {
		t.Fatalf("unnamed stats: %v %v", st.EmbeddingModel, err)
	}
	_, err = s.HybridSearch(app, "other", HybridQuery{Text: "tea", Vector: []float32{1, 0}, VectorModel: "model-a"})
	wantStatus(t, err, StatusInvalidArgument, "named query, unnamed vectors")
}

func TestNamedEmbedder(t *testing.T) {
	s := memStore(t)
	vec := EmbedderFunc(func(string) ([]float32, error) { return []float32{1, 0}, nil })
	if err := s.SetNamedEmbedder("model-a", vec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: "green tea", Embed: true}}); err != nil {
		t.Fatal(err)
	}
	st, err := s.NamespaceStats(app, user)
	if err != nil || st.EmbeddingModel == nil || *st.EmbeddingModel != "model-a" {
		t.Fatalf("stats: model %v, %v", st.EmbeddingModel, err)
	}
	// A per-call embedder names its model with VectorModel.
	q := HybridQuery{Text: "tea", SemanticWeight: Weight(1), VectorModel: "model-a"}
	if got, err := s.HybridSearchText(app, user, q, vec); err != nil || len(got) != 1 {
		t.Fatalf("per-call embedder of the namespace's model: %v %v", got, err)
	}
	q.VectorModel = "model-b"
	_, err = s.HybridSearchText(app, user, q, vec)
	wantStatus(t, err, StatusInvalidArgument, "per-call embedder of another model")

	// Another model's embedder: its writes into the namespace are refused, naming both.
	if err := s.SetNamedEmbedder("model-b", vec); err != nil {
		t.Fatal(err)
	}
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "black coffee", Embed: true}})
	wantStatus(t, err, StatusInvalidArgument, "embed with another model")
	if !strings.Contains(err.Error(), "model-a") || !strings.Contains(err.Error(), "model-b") {
		t.Fatalf("the error names both models: %v", err)
	}
	// A bad name is refused and leaves model-b registered; nil removes the embedder.
	err = s.SetNamedEmbedder("", vec)
	wantStatus(t, err, StatusInvalidArgument, "empty model name")
	if _, err := s.PutEpisodes(app, "other", []EpisodeInput{{Primary: "water", Embed: true}}); err != nil {
		t.Fatal(err)
	}
	if st, err = s.NamespaceStats(app, "other"); err != nil || st.EmbeddingModel == nil || *st.EmbeddingModel != "model-b" {
		t.Fatalf("other stats: model %v, %v", st.EmbeddingModel, err)
	}
	if err := s.SetNamedEmbedder("", nil); err != nil {
		t.Fatalf("nil embedder, name ignored: %v", err)
	}
	_, err = s.PutEpisodes(app, user, []EpisodeInput{{Primary: "juice", Embed: true}})
	wantStatus(t, err, StatusInvalidArgument, "embed without an embedder")
}
