package mnem

import "context"

// Context variants. What cancellation can and cannot do to a C call is in the package
// documentation ("Contexts and cancellation").

// testHookRead, when set by a test, runs on a read's goroutine before the library call,
// standing in for a long search.
var testHookRead func()

// readContext runs f, a read, on its own goroutine and returns when f does or ctx ends,
// whichever comes first. f cannot be interrupted: after ctx ends it finishes on its own and
// its result is dropped.
func readContext[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil { // never ends: no goroutine needed
		return f()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned f never blocks
	hook := testHookRead
	go func() {
		if hook != nil {
			hook()
		}
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// writeContext runs f, a write, unless ctx has already ended. A started write is not
// abandoned: its outcome is what the caller gets.
func writeContext[T any](ctx context.Context, f func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	return f()
}

// OpenContext is Open, unless ctx has already ended. Opening a store written in an older
// format builds its indexes and can take a while; it is not abandoned once started.
func OpenContext(ctx context.Context, path string, opts Options) (*Store, error) {
	return writeContext(ctx, func() (*Store, error) { return Open(path, opts) })
}

// FlushContext is Flush, unless ctx has already ended.
func (s *Store) FlushContext(ctx context.Context) error {
	_, err := writeContext(ctx, func() (struct{}, error) { return struct{}{}, s.Flush() })
	return err
}

// AddSessionContext is AddSession, unless ctx has already ended.
func (s *Store) AddSessionContext(ctx context.Context, app, user, sessionID string, eventsJSONL []byte) (uint64, error) {
	return writeContext(ctx, func() (uint64, error) { return s.AddSession(app, user, sessionID, eventsJSONL) })
}

// AddEventsContext is AddEvents, unless ctx has already ended.
func (s *Store) AddEventsContext(ctx context.Context, app, user, sessionID string, eventsJSONL []byte, customMetadata map[string]any) (uint64, error) {
	return writeContext(ctx, func() (uint64, error) {
		return s.AddEvents(app, user, sessionID, eventsJSONL, customMetadata)
	})
}

// DeleteMemoryContext is DeleteMemory, unless ctx has already ended.
func (s *Store) DeleteMemoryContext(ctx context.Context, app, user, memoryID string) (uint64, error) {
	return writeContext(ctx, func() (uint64, error) { return s.DeleteMemory(app, user, memoryID) })
}

// PutEpisodesContext is PutEpisodes, unless ctx has already ended.
func (s *Store) PutEpisodesContext(ctx context.Context, app, user string, episodes []EpisodeInput) ([]string, error) {
	return writeContext(ctx, func() ([]string, error) { return s.PutEpisodes(app, user, episodes) })
}

// PutEpisodesJSONLContext is PutEpisodesJSONL, unless ctx has already ended.
func (s *Store) PutEpisodesJSONLContext(ctx context.Context, app, user string, jsonl []byte) ([]string, error) {
	return writeContext(ctx, func() ([]string, error) { return s.PutEpisodesJSONL(app, user, jsonl) })
}

// DeleteEpisodesContext is DeleteEpisodes, unless ctx has already ended.
func (s *Store) DeleteEpisodesContext(ctx context.Context, app, user string, ids ...string) (uint64, error) {
	return writeContext(ctx, func() (uint64, error) { return s.DeleteEpisodes(app, user, ids...) })
}

// SearchContext is Search; it returns ctx.Err() when ctx ends first.
func (s *Store) SearchContext(ctx context.Context, app, user, query string) ([]MemoryEntry, error) {
	return readContext(ctx, func() ([]MemoryEntry, error) { return s.Search(app, user, query) })
}

// KeywordSearchContext is KeywordSearch; it returns ctx.Err() when ctx ends first.
func (s *Store) KeywordSearchContext(ctx context.Context, app, user string, q KeywordQuery) ([]ScoredEpisode, error) {
	return readContext(ctx, func() ([]ScoredEpisode, error) { return s.KeywordSearch(app, user, q) })
}

// LexicalPageContext is LexicalPage; it returns ctx.Err() when ctx ends first.
func (s *Store) LexicalPageContext(ctx context.Context, app, user string, q LexicalPageQuery) (*LexicalPageResult, error) {
	return readContext(ctx, func() (*LexicalPageResult, error) { return s.LexicalPage(app, user, q) })
}

// SubstringSearchContext is SubstringSearch; it returns ctx.Err() when ctx ends first.
func (s *Store) SubstringSearchContext(ctx context.Context, app, user string, q SubstringQuery) ([]Episode, error) {
	return readContext(ctx, func() ([]Episode, error) { return s.SubstringSearch(app, user, q) })
}

// HybridSearchContext is HybridSearch; it returns ctx.Err() when ctx ends first.
func (s *Store) HybridSearchContext(ctx context.Context, app, user string, q HybridQuery) ([]HybridResult, error) {
	return readContext(ctx, func() ([]HybridResult, error) { return s.HybridSearch(app, user, q) })
}

// HybridSearchTextContext is HybridSearchText; ctx is checked before the call and after it,
// which returns ctx.Err() when ctx ended meanwhile. The embedder
// itself is not given ctx: an Embedder that can be cancelled should be built with it.
func (s *Store) HybridSearchTextContext(ctx context.Context, app, user string, q HybridQuery, e Embedder) ([]HybridResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := s.HybridSearchText(app, user, q, e)
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return res, err
}

// StatsContext is Stats; it returns ctx.Err() when ctx ends first.
func (s *Store) StatsContext(ctx context.Context) (Stats, error) {
	return readContext(ctx, s.Stats)
}
