package mnem

import (
	"errors"
	"strings"
	"testing"
)

// The built-in embedder through the binding: Options.Embedder "builtin" marshals to the
// open option, the library finds its model (beside an installed library, or
// $MNEM_MODEL_DIR), and episodes written with Embed are found by meaning from text alone.
// The vectors themselves are checked against the model's reference by the Rust tests.
func TestBuiltinEmbedderSearchesByMeaning(t *testing.T) {
	s, err := Open(":memory:", Options{Create: true, Embedder: "builtin"})
	if err != nil {
		t.Fatalf("open with the built-in embedder: %v", err)
	}
	defer s.Close()
	notes := []EpisodeInput{
		{Primary: "Alice prefers green tea", Embed: true},
		{Primary: "the printer on floor two is broken", Embed: true},
	}
	if _, err := s.PutEpisodes(app, user, notes); err != nil {
		t.Fatal(err)
	}
	hits, err := s.HybridSearch(app, user, HybridQuery{Text: "a hot drink"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Record.Primary != "Alice prefers green tea" {
		t.Fatalf("hybrid search for a hot drink: %+v", hits)
	}
	if hits[0].KeywordScore != 0 || hits[0].SemanticScore <= 0 {
		t.Fatalf("found by its vector alone? %+v", hits[0])
	}
}

func TestBuiltinEmbedderErrorsAreNamed(t *testing.T) {
	_, err := Open(":memory:", Options{Create: true, Embedder: "builtin", ModelDir: "/nonexistent/model"})
	if !errors.Is(err, ErrEmbedderFailed) || !strings.Contains(err.Error(), "/nonexistent/model") {
		t.Fatalf("a missing model: %v, want EMBEDDER_FAILED naming the folder", err)
	}
	_, err = Open(":memory:", Options{Create: true, Embedder: "bert"})
	if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "`embedder` must be") {
		t.Fatalf("an unknown embedder: %v, want INVALID_ARGUMENT naming the option", err)
	}
}
