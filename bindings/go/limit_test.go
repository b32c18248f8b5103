package mnem

import (
	"fmt"
	"testing"
)

// A zero Limit is an absent limit in every query (docs/WIRE.md): the library's default.
func TestZeroLimitIsTheDefault(t *testing.T) {
	s := memStore(t)
	const app, user = "app", "limits"
	in := make([]EpisodeInput, DefaultLimit+5)
	for i := range in {
		in[i] = EpisodeInput{Primary: fmt.Sprintf("apple %d", i), Embedding: []float32{1, float32(i)}}
	}
	if _, err := s.PutEpisodes(app, user, in); err != nil {
		t.Fatal(err)
	}

	kw, err := s.KeywordSearch(app, user, KeywordQuery{Text: "apple"})
	if err != nil || len(kw) != DefaultLimit {
		t.Fatalf("keyword, Limit 0: %d results, %v; want %d", len(kw), err, DefaultLimit)
	}
	sub, err := s.SubstringSearch(app, user, SubstringQuery{Text: "apple"})
	if err != nil || len(sub) != DefaultLimit {
		t.Fatalf("substring, Limit 0: %d results, %v; want %d", len(sub), err, DefaultLimit)
	}
	page, err := s.LexicalPage(app, user, LexicalPageQuery{Text: "apple"})
	if err != nil || len(page.Hits) != DefaultLimit {
		t.Fatalf("lexical page, Limit 0: %+v, %v; want %d hits", page, err, DefaultLimit)
	}
	for _, q := range []HybridQuery{
		{Text: "apple"},
		{Text: "apple", Vector: []float32{1, 0}},
		{Text: "apple", Vector: []float32{1, 0}, SemanticWeight: Weight(1)},
	} {
		res, err := s.HybridSearch(app, user, q)
		if err != nil || len(res) != DefaultLimit {
			t.Fatalf("hybrid %+v: %d results, %v; want %d", q, len(res), err, DefaultLimit)
		}
	}
	emb := &countingEmbedder{vec: []float32{1, 0}}
	res, err := s.HybridSearchText(app, user, HybridQuery{Text: "apple"}, emb)
	if err != nil || len(res) != DefaultLimit || emb.calls.Load() != 1 {
		t.Fatalf("hybrid text, Limit 0: %d results, %v, %d embedder calls; want %d and 1",
			len(res), err, emb.calls.Load(), DefaultLimit)
	}

	// The same queries with the default spelled out answer the same.
	kw10, err := s.KeywordSearch(app, user, KeywordQuery{Text: "apple", Limit: DefaultLimit})
	if err != nil || fmt.Sprint(kw10) != fmt.Sprint(kw) {
		t.Fatalf("keyword, Limit %d differs from Limit 0: %v", DefaultLimit, err)
	}
	h0, err := s.HybridSearch(app, user, HybridQuery{Text: "apple"})
	h10, err2 := s.HybridSearch(app, user, HybridQuery{Text: "apple", Limit: DefaultLimit})
	if err != nil || err2 != nil || fmt.Sprint(h0) != fmt.Sprint(h10) {
		t.Fatalf("hybrid, Limit %d differs from Limit 0: %v %v", DefaultLimit, err, err2)
	}

	// Namespaces: the default page is 100.
	for i := 0; i < 101; i++ {
		if _, err := s.PutEpisodes("ns", fmt.Sprintf("u%03d", i), []EpisodeInput{{Primary: "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	nsPage, err := s.ListNamespaces(NamespaceQuery{})
	if err != nil || len(nsPage.Namespaces) != 100 || nsPage.NextAfter == nil {
		t.Fatalf("namespaces, Limit 0: %d, %v", len(nsPage.Namespaces), err)
	}
}
