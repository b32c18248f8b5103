package mnem

/*
#include <stdint.h>
#include <stdlib.h>
#include "mnem.h"
extern int32_t mnemGoEmbed(void *user_data, mnem_str text, float *out, size_t out_cap, size_t *out_len, mnem_error *err);
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// Embedder turns text into a vector in the same space as the stored episode
// embeddings. It lives with the caller's embedding model. A registered embedder
// (SetEmbedder, SetNamedEmbedder) is called from the goroutines that call the Store,
// concurrently: it must be safe for concurrent use.
type Embedder interface {
	Embed(text string) ([]float32, error)
}

// EmbedderFunc adapts a function to Embedder.
type EmbedderFunc func(text string) ([]float32, error)

// Embed calls f(text).
func (f EmbedderFunc) Embed(text string) ([]float32, error) { return f(text) }

// recording is the embedder of one call: it keeps the error it last returned,
// so that the call's ErrEmbedderFailed can carry it (Error.Cause).
type recording struct {
	e    Embedder
	mu   sync.Mutex
	last error
}

func (r *recording) Embed(text string) ([]float32, error) {
	v, err := r.e.Embed(text)
	if err != nil {
		r.mu.Lock()
		r.last = err
		r.mu.Unlock()
	}
	return v, err
}

func (r *recording) cause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// withCause gives an embedder failure of one call the embedder's own error.
func withCause(err error, r *recording) error {
	var me *Error
	if errors.As(err, &me) && me.Status == StatusEmbedderFailed {
		me.Cause = r.cause()
	}
	return err
}

// embedders holds what a Store registered: a call in flight may still use an
// embedder replaced since, so each lives (and its C cell stays allocated) until Close.
type embedders struct {
	mu    sync.Mutex
	cells []unsafe.Pointer
}

// newCell returns C memory holding a cgo.Handle of e: the user_data of mnemGoEmbed
// (C memory, so no Go pointer is passed to C).
func newCell(e Embedder) unsafe.Pointer {
	p := C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0))))
	*(*C.uintptr_t)(p) = C.uintptr_t(cgo.NewHandle(e))
	return p
}

func freeCell(p unsafe.Pointer) {
	cgo.Handle(*(*C.uintptr_t)(p)).Delete()
	C.free(p)
}

func (r *embedders) add(p unsafe.Pointer) {
	r.mu.Lock()
	r.cells = append(r.cells, p)
	r.mu.Unlock()
}

func (r *embedders) free() {
	r.mu.Lock()
	for _, p := range r.cells {
		freeCell(p)
	}
	r.cells = nil
	r.mu.Unlock()
}

// mnemGoEmbed is the mnem_embed_fn of every Go embedder. A failure or a panic
// becomes MNEM_STATUS_EMBEDDER_FAILED with its message, never an unwind into C.
//
//export mnemGoEmbed
func mnemGoEmbed(ud unsafe.Pointer, text C.mnem_str, out *C.float, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) (rc C.int32_t) {
	e := cgo.Handle(*(*C.uintptr_t)(ud)).Value().(Embedder)
	t := ""
	if text.len > 0 {
		t = C.GoStringN((*C.char)(unsafe.Pointer(text.ptr)), C.int(text.len))
	}
	v, err := func() (v []float32, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return e.Embed(t)
	}()
	if err != nil {
		msg := err.Error()
		if len(msg) > errorMessageCap-1 {
			msg = msg[:errorMessageCap-1]
			for len(msg) > 0 && !utf8.ValidString(msg) {
				msg = msg[:len(msg)-1]
			}
		}
		dst := unsafe.Slice((*byte)(unsafe.Pointer(&cerr.message[0])), errorMessageCap)
		n := copy(dst, msg)
		dst[n] = 0
		return C.MNEM_STATUS_EMBEDDER_FAILED
	}
	*outLen = C.size_t(len(v))
	if len(v) > int(outCap) {
		return C.MNEM_STATUS_BUFFER_TOO_SMALL
	}
	if len(v) > 0 {
		copy(unsafe.Slice((*float32)(unsafe.Pointer(out)), len(v)), v)
	}
	return C.MNEM_STATUS_OK
}

// SetEmbedder registers e as the store's embedder (mnem_set_embedder; nil
// removes it). Then episodes with Embed set get the vector of their text, ADK
// writes store each event's vector, and HybridSearch and Recall embed a query
// without a Vector. Its errors become ErrEmbedderFailed, and nothing is written.
func (s *Store) SetEmbedder(e Embedder) error {
	return s.setEmbedder("set_embedder", nil, e)
}

// SetNamedEmbedder is SetEmbedder with the name of e's model
// (mnem_set_named_embedder; 1 to 256 bytes of UTF-8, else ErrInvalidArgument and
// the registered embedder stays). The name is recorded with the vectors e makes,
// as EpisodeInput.EmbeddingModel is, so two models' vectors never mix in a
// namespace: a write or query embedded by another model (or by an unnamed
// embedder) into a namespace whose vectors name one is ErrInvalidArgument,
// naming both, and nothing is written. A nil e removes the embedder; model is
// then ignored.
func (s *Store) SetNamedEmbedder(model string, e Embedder) error {
	return s.setEmbedder("set_named_embedder", &model, e)
}

// setEmbedder registers e, named by *model unless model is nil.
func (s *Store) setEmbedder(op string, model *string, e Embedder) error {
	return s.with(func(h *C.mnem_store) error {
		var cerr C.mnem_error
		fn, p := C.mnem_embed_fn(nil), unsafe.Pointer(nil)
		if e != nil {
			fn, p = C.mnem_embed_fn(C.mnemGoEmbed), newCell(e)
			s.embedders.add(p)
		}
		if model == nil {
			return check(op, C.mnem_set_embedder(h, fn, p, &cerr), &cerr)
		}
		m := *model
		rc := C.mnem_set_named_embedder(h, strView(m), fn, p, &cerr)
		runtime.KeepAlive(m)
		return check(op, rc, &cerr)
	})
}

// HybridSearchText runs HybridSearch with e as the embedder of this call
// (mnem_hybrid_search_with): the library asks e for the vector of q.Text only
// when the search can use one (not for blank text or SemanticWeight 0; a zero
// Limit is the default, as in HybridSearch). A nil e is the store's embedder.
func (s *Store) HybridSearchText(app, user string, q HybridQuery, e Embedder) ([]HybridResult, error) {
	if e == nil {
		return s.HybridSearch(app, user, q)
	}
	rec := &recording{e: e}
	p := newCell(rec)
	defer freeCell(p)
	var resp struct {
		Results []HybridResult `json:"results"`
	}
	fn := func(h *C.mnem_store, a, u, qs C.mnem_str, o *C.uint8_t, c C.size_t, n *C.size_t, cerr *C.mnem_error) C.mnem_status {
		return C.mnem_hybrid_search_with(h, a, u, qs, C.mnem_embed_fn(C.mnemGoEmbed), p, o, c, n, cerr)
	}
	err := s.typedQuery("hybrid_search_with", fn, app, user, q, &resp)
	runtime.KeepAlive(rec)
	return resp.Results, withCause(err, rec)
}

// Recall modes (RecallQuery.Mode): which rankings a recall fuses.
const (
	RecallADK        = "adk"         // ADK's ranking alone: Search's answer (at most 10)
	RecallBM25       = "bm25"        // BM25 over the namespace's ADK events and memories
	RecallHybrid     = "hybrid"      // BM25 fused with vectors
	RecallADKVectors = "adk_vectors" // ADK's ranking fused with vectors (the default)
)

// RecallQuery is a mnem_recall query: ADK search_memory with semantic recall.
type RecallQuery struct {
	Text   string    `json:"text"`
	Vector []float32 `json:"vector,omitempty"`
	// VectorModel names the model that made Vector, as HybridQuery.VectorModel.
	VectorModel string `json:"vector_model,omitempty"`
	Limit       int    `json:"limit,omitempty"` // 1-100; 0 = library default (10)
	// SemanticWeight in [0,1]; nil = library default (0.5).
	SemanticWeight *float64 `json:"semantic_weight,omitempty"`
	Candidates     int      `json:"candidates,omitempty"`
	// Mode is one of the Recall* constants; "" = the library default (RecallADKVectors).
	Mode string `json:"mode,omitempty"`
	// Hit filters, as KeywordQuery's. MinScore applies to BM25's score in mode
	// bm25, to the fused score in hybrid and adk_vectors; mode adk refuses it.
	SessionID string   `json:"session_id,omitempty"`
	Author    string   `json:"author,omitempty"`
	Since     *float64 `json:"since,omitempty"`
	Until     *float64 `json:"until,omitempty"`
	MinScore  *float64 `json:"min_score,omitempty"`
}

// Recall answers like Search, with the nearest vectors of the namespace's ADK
// events and memories fused in (mnem_recall); without a vector (no Vector, no
// embedder) it answers as Search. Mode chooses other rankings.
func (s *Store) Recall(app, user string, q RecallQuery) ([]MemoryEntry, error) {
	var resp struct {
		Memories []MemoryEntry `json:"memories"`
	}
	fn := func(h *C.mnem_store, a, u, qs C.mnem_str, o *C.uint8_t, c C.size_t, n *C.size_t, cerr *C.mnem_error) C.mnem_status {
		return C.mnem_recall(h, a, u, qs, o, c, n, cerr)
	}
	return resp.Memories, s.typedQuery("recall", fn, app, user, q, &resp)
}
