package mnem

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Embedder turns query text into a vector in the same space as the stored
// episode embeddings. It lives with the caller's embedding model.
type Embedder interface {
	Embed(text string) ([]float32, error)
}

// EmbedderFunc adapts a function to Embedder.
type EmbedderFunc func(text string) ([]float32, error)

// Embed calls f(text).
func (f EmbedderFunc) Embed(text string) ([]float32, error) { return f(text) }

// HybridSearchText embeds q.Text with e (unless q.Vector is already set) and
// runs HybridSearch. The embedder is not called when the search cannot use a
// vector: a negative Limit, blank or invalid text, or SemanticWeight 0 (a zero
// Limit is the default, as in HybridSearch).
func (s *Store) HybridSearchText(app, user string, q HybridQuery, e Embedder) ([]HybridResult, error) {
	q, err := embedQuery(q, e)
	if err != nil {
		return nil, err
	}
	return s.HybridSearch(app, user, q)
}

// embedQuery sets q.Vector from e when the search can use a vector.
func embedQuery(q HybridQuery, e Embedder) (HybridQuery, error) {
	if !utf8.ValidString(q.Text) {
		return q, invalidArg("hybrid_search", "invalid UTF-8 in Text")
	}
	needsVector := q.Vector == nil && e != nil && q.Limit >= 0 &&
		strings.TrimSpace(q.Text) != "" &&
		(q.SemanticWeight == nil || *q.SemanticWeight != 0)
	if needsVector {
		v, err := e.Embed(q.Text)
		if err != nil {
			return q, fmt.Errorf("mnem: embedding the query: %w", err)
		}
		q.Vector = v
	}
	return q, nil
}
