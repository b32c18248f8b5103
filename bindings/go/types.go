package mnem

import "encoding/json"

// Episode is a stored record as every retrieval API returns it.
// Absent optionals are nil; Metadata and Content are the raw JSON (possibly "null").
type Episode struct {
	ID          string          `json:"id"`
	Revision    uint64          `json:"revision"`
	EpisodeType string          `json:"episode_type"`
	Tags        []string        `json:"tags"`
	Primary     string          `json:"primary"`
	Secondary   string          `json:"secondary"`
	Context     string          `json:"context"`
	Metadata    json.RawMessage `json:"metadata"`
	Author      *string         `json:"author"`
	SessionID   *string         `json:"session_id"`
	EventID     *string         `json:"event_id"`
	Timestamp   *float64        `json:"timestamp"`
	CreatedAtMs int64           `json:"created_at_ms"`
	UpdatedAtMs int64           `json:"updated_at_ms"`
	ExpiresAtMs *int64          `json:"expires_at_ms"`
	Content     json.RawMessage `json:"content"`
}

// EpisodeInput is one episode to write with PutEpisodes. Zero values are
// omitted, so the library applies its defaults (generated v7 id, type "episode").
type EpisodeInput struct {
	ID          string          `json:"id,omitempty"`
	EpisodeType string          `json:"episode_type,omitempty"`
	Tags        []string        `json:"tags,omitempty"`
	Primary     string          `json:"primary,omitempty"`
	Secondary   string          `json:"secondary,omitempty"`
	Context     string          `json:"context,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"` // a JSON object
	Author      string          `json:"author,omitempty"`
	SessionID   string          `json:"session_id,omitempty"`
	EventID     string          `json:"event_id,omitempty"`
	Timestamp   *float64        `json:"timestamp,omitempty"`
	ExpiresAtMs *int64          `json:"expires_at_ms,omitempty"`
	TTLMs       int64           `json:"ttl_ms,omitempty"` // instead of ExpiresAtMs
	Content     json.RawMessage `json:"content,omitempty"`
	Embedding   []float32       `json:"embedding,omitempty"`
	// EmbeddingModel names the model that made Embedding (1-256 bytes; only with
	// Embedding). A namespace holds one model's vectors: the first one fixes it.
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// Embed asks the store's embedder (SetEmbedder) for Embedding, from the text.
	Embed bool `json:"embed,omitempty"`
}

// MemoryEntry is ADK's MemoryEntry as returned by Search.
// Content is byte-for-byte the ADK Content JSON that was ingested.
type MemoryEntry struct {
	ID             string          `json:"id"`
	Content        json.RawMessage `json:"content"`
	Author         *string         `json:"author"`
	Timestamp      *string         `json:"timestamp"` // local-time ISO 8601, as ADK formats it
	CustomMetadata map[string]any  `json:"custom_metadata"`
}

// ScoredEpisode is a lexical hit with its raw BM25 score.
type ScoredEpisode struct {
	Record Episode `json:"record"`
	Score  float64 `json:"score"`
}

// HybridResult is a fused result; KeywordScore and SemanticScore are the
// per-channel reciprocal-rank contributions, not raw BM25 or similarity.
type HybridResult struct {
	Record        Episode `json:"record"`
	Score         float64 `json:"score"`
	KeywordScore  float64 `json:"keyword_score"`
	SemanticScore float64 `json:"semantic_score"`
}

// KeywordQuery is a BM25 search over all visible records of a namespace.
// SessionID, Author, Since, Until and MinScore choose which hits are returned
// without changing any score (empty or nil: no filter).
type KeywordQuery struct {
	Text        string `json:"text"`
	Limit       int    `json:"limit,omitempty"` // 0 = library default (10)
	EpisodeType string `json:"episode_type,omitempty"`
	Tag         string `json:"tag,omitempty"`
	SessionID   string `json:"session_id,omitempty"` // the record's session_id equals it
	Author      string `json:"author,omitempty"`     // the record's author equals it
	// Since and Until bound the record's time (its Timestamp, else its creation),
	// in seconds since the Unix epoch: Since inclusive, Until exclusive.
	Since    *float64 `json:"since,omitempty"`
	Until    *float64 `json:"until,omitempty"`
	MinScore *float64 `json:"min_score,omitempty"` // the hit's BM25 score is at least this
}

// SubstringQuery is a case-insensitive substring search of primary/secondary/context.
// Its filters are KeywordQuery's but MinScore: substring hits have no score.
type SubstringQuery struct {
	Text        string   `json:"text"`
	Limit       int      `json:"limit,omitempty"` // 0 = library default (10)
	EpisodeType string   `json:"episode_type,omitempty"`
	Tag         string   `json:"tag,omitempty"`
	SessionID   string   `json:"session_id,omitempty"`
	Author      string   `json:"author,omitempty"`
	Since       *float64 `json:"since,omitempty"`
	Until       *float64 `json:"until,omitempty"`
}

// LexicalPageQuery is one bounded BM25 scan (mnem_lexical_page in include/mnem.h).
type LexicalPageQuery struct {
	Text           string `json:"text"`
	Limit          int    `json:"limit,omitempty"` // 0 = default (10)
	After          string `json:"after,omitempty"` // "" = from the start; else a NextAfter
	EpisodeType    string `json:"episode_type,omitempty"`
	Tag            string `json:"tag,omitempty"`
	ScanLimit      int    `json:"scan_limit,omitempty"`       // 0 = default
	ScanBytesLimit int    `json:"scan_bytes_limit,omitempty"` // 0 = default
}

// LexicalPageResult is one page of a lexical scan. Scores are local to the page.
type LexicalPageResult struct {
	Hits           []ScoredEpisode `json:"hits"`
	MatchedRecords uint64          `json:"matched_records"`
	CorpusRecords  uint64          `json:"corpus_records"`
	ScannedRecords uint64          `json:"scanned_records"`
	ScannedBytes   uint64          `json:"scanned_bytes"`
	NextAfter      *string         `json:"next_after"` // nil when nothing was left unvisited
	Exhaustive     bool            `json:"exhaustive"`
}

// DefaultLimit is the library's default result limit: what a Limit of 0 asks for in
// KeywordQuery, SubstringQuery, LexicalPageQuery and HybridQuery. In Go a zero Limit is
// an absent one (docs/WIRE.md: an absent limit takes the default); to get no results,
// make no call.
const DefaultLimit = 10

// HybridQuery is a fused lexical + vector search (mnem_hybrid_search in include/mnem.h).
type HybridQuery struct {
	Text   string    `json:"text"`
	Vector []float32 `json:"vector,omitempty"`
	Limit  int       `json:"limit,omitempty"` // 0 = library default (10)
	// SemanticWeight in [0,1]; nil = library default (0.5). Lexical weight is 1 - this.
	SemanticWeight *float64 `json:"semantic_weight,omitempty"`
	Candidates     int      `json:"candidates,omitempty"` // multiplier; 0 = default
	EpisodeType    string   `json:"episode_type,omitempty"`
	Tag            string   `json:"tag,omitempty"`
	// VectorModel names the model that made Vector (with HybridSearchText and no
	// Vector: the model of that call's embedder); it must be the model of the
	// namespace's vectors ("" matches vectors stored without a model name).
	VectorModel string `json:"vector_model,omitempty"`
	// Hit filters, as KeywordQuery's; MinScore applies to the fused Score.
	SessionID string   `json:"session_id,omitempty"`
	Author    string   `json:"author,omitempty"`
	Since     *float64 `json:"since,omitempty"`
	Until     *float64 `json:"until,omitempty"`
	MinScore  *float64 `json:"min_score,omitempty"`
}

// Weight returns a pointer to w, for HybridQuery.SemanticWeight.
func Weight(w float64) *float64 { return &w }

// Float returns a pointer to f, for the optional numbers of a query
// (Since, Until, MinScore).
func Float(f float64) *float64 { return &f }
