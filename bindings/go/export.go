package mnem

/*
#include "mnem.h"
*/
import "C"

import (
	"context"
	"io"
	"runtime"
)

// exportPageBytes is the page size ExportTo asks for (1 MiB): the lines of one page take
// about this much memory (more when one line is longer). A variable so tests can page small.
var exportPageBytes uint64 = 1 << 20

// ExportPage is one page of an export (mnem_export_page).
type ExportPage struct {
	// Lines are the page's JSON Lines, to append to the export.
	Lines string `json:"lines"`
	// NextCursor is the cursor of the next page; nil on the page that holds the end line.
	NextCursor *string `json:"next_cursor"`
}

// ExportPageRaw runs mnem_export_page and returns its JSON.
func (s *Store) ExportPageRaw(app, user string, all bool, cursor string, maxBytes uint64) ([]byte, error) {
	var a C.int32_t
	if all {
		a = 1
	}
	return s.read("export_page", func(h *C.mnem_store, out *C.uint8_t, outCap C.size_t, outLen *C.size_t, cerr *C.mnem_error) C.mnem_status {
		rc := C.mnem_export_page(h, strView(app), strView(user), a, strView(cursor), C.uint64_t(maxBytes), out, outCap, outLen, cerr)
		runtime.KeepAlive(app)
		runtime.KeepAlive(user)
		runtime.KeepAlive(cursor)
		return rc
	})
}

// ExportPage returns the export's lines after cursor ("" for the first page) until at least
// maxBytes or the export's end, read from a snapshot of its own; with all, of every
// namespace (app and user are then ignored). app, user and all must stay the same from page
// to page. The pages together are the export Export writes when nothing is written to the
// store in between; writes between pages can make them inconsistent, which Import refuses.
// ExportTo does the paging.
func (s *Store) ExportPage(app, user string, all bool, cursor string, maxBytes uint64) (*ExportPage, error) {
	raw, err := s.ExportPageRaw(app, user, all, cursor, maxBytes)
	if err != nil {
		return nil, err
	}
	var p ExportPage
	if err := decode("export_page", raw, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ExportTo writes the export of the namespace (app, user) to w page by page (about 1 MiB
// each), so a large store is never held in memory whole, and returns the
// bytes written. Each page is read from its own snapshot: stop writes to the namespace
// meanwhile, or Import may refuse the result (Export reads one snapshot). An error from w
// ends the export and is returned as it is.
func (s *Store) ExportTo(w io.Writer, app, user string) (int64, error) {
	return s.exportTo(context.Background(), w, app, user, false)
}

// ExportAllTo is ExportTo of every namespace of the store.
func (s *Store) ExportAllTo(w io.Writer) (int64, error) {
	return s.exportTo(context.Background(), w, "", "", true)
}

// ExportToContext is ExportTo; when ctx ends it stops at once (the library's work on the
// current page finishes on its own) and returns ctx.Err(), with w holding whole pages only.
func (s *Store) ExportToContext(ctx context.Context, w io.Writer, app, user string) (int64, error) {
	return s.exportTo(ctx, w, app, user, false)
}

// ExportAllToContext is ExportAllTo, stopped by ctx as ExportToContext is.
func (s *Store) ExportAllToContext(ctx context.Context, w io.Writer) (int64, error) {
	return s.exportTo(ctx, w, "", "", true)
}

func (s *Store) exportTo(ctx context.Context, w io.Writer, app, user string, all bool) (int64, error) {
	var written int64
	cursor := ""
	for {
		p, err := readContext(ctx, func() (*ExportPage, error) {
			return s.ExportPage(app, user, all, cursor, exportPageBytes)
		})
		if err != nil {
			return written, err
		}
		n, err := io.WriteString(w, p.Lines)
		written += int64(n)
		if err != nil {
			return written, err
		}
		if p.NextCursor == nil {
			return written, nil
		}
		cursor = *p.NextCursor
	}
}
