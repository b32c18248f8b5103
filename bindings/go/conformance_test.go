package mnem_test

// Replays the conformance corpus (../../tests/conformance/cases, format in
// ../../tests/conformance/README.md) through this package's public API: the typed calls
// (PutEpisodes, KeywordSearch, GetEpisodes, ...) where a step's input converts to their Go
// types without loss, whose results are marshalled back to JSON and matched, and the Raw
// calls otherwise. Errors are matched by their Status and Message. The corpus's embedders are Go
// funcs (SetEmbedder, SetNamedEmbedder, HybridSearchText).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	mnem "github.com/mnem-memory/mnem-go"
)

var confUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// errSkip marks a step whose input this binding cannot express.
var errSkip = errors.New("not expressible through the Go API")

type confOutcome struct {
	err    error
	count  *uint64
	ids    []string
	idsLen *uint64 // put_episodes_v2's *out_ids_len
	out    any     // parsed output (typed result marshalled back, or raw output parsed)
	raw    []byte  // raw output, when a raw call was made
	value  any
}

type replay struct {
	tmp    string
	stores map[string]*mnem.Store
	vars   map[string]string
	texts  []any // what the embedders were asked since the last embedder_texts
	// Replaying on the PostgreSQL server MNEM_TEST_PG_URI: every store the case names is a
	// schema of its own starting with pgSchema (":memory:", a new one at each open).
	pgSchema string
	opens    int
}

// directoryCases are about what only a store directory has (tests/conformance.rs says which
// and why): not replayed on PostgreSQL.
var directoryCases = map[string]bool{"open_busy_and_reopen": true, "open_errors": true,
	"check_backup_compact": true, "view": true, "open_stats": true}

// storePath is where the case's store `path` lives: in the case's directory, or a schema.
func (r *replay) storePath(path string) string {
	if r.pgSchema != "" && path != "" {
		name := ""
		if path == ":memory:" {
			r.opens++
			name = fmt.Sprintf("m%d", r.opens)
		} else {
			for _, c := range path {
				if c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c)) {
					name += strings.ToLower(string(c))
				} else {
					name += "_"
				}
			}
		}
		server := os.Getenv("MNEM_TEST_PG_URI")
		sep := "?"
		if strings.Contains(server, "?") {
			sep = "&"
		}
		return server + sep + "schema=" + r.pgSchema + "_" + name
	}
	if path != "" && path != ":memory:" {
		return filepath.Join(r.tmp, path)
	}
	return path
}

// The corpus's embedder `words` (../../tests/conformance/README.md): a count per word group, then 1.
var groups = []string{"tea coffee oolong drink", "cat kitten dog pet", "train flight lisbon travel",
	"green red blue colour", "morning noon night late", "sofa cushion home house", "apple bread lunch food"}

func words(text string) []float32 {
	v := make([]float32, 8)
	v[7] = 1
	notWord := func(r rune) bool { return r > 127 || !(unicode.IsLetter(r) || unicode.IsDigit(r)) }
	for _, w := range strings.FieldsFunc(text, notWord) {
		for i, g := range groups {
			if slices.Contains(strings.Fields(g), strings.ToLower(w)) {
				v[i]++
			}
		}
	}
	return v
}

// embedder is the corpus's embedder kind as a Go func (nil for "none"); it records each text.
func (r *replay) embedder(kind string) mnem.Embedder {
	if kind == "none" {
		return nil
	}
	return mnem.EmbedderFunc(func(text string) ([]float32, error) {
		r.texts = append(r.texts, text)
		switch kind {
		case "fails":
			return nil, errors.New("model offline")
		case "zero":
			return make([]float32, 8), nil
		}
		return words(text), nil
	})
}

func localISO(secs float64) string {
	whole := math.Floor(secs)
	micros := int64(math.Round((secs - whole) * 1e6))
	if micros == 1e6 {
		whole++
		micros = 0
	}
	s := time.Unix(int64(whole), 0).Local().Format("2006-01-02T15:04:05")
	if micros != 0 {
		s += fmt.Sprintf(".%06d", micros)
	}
	return s
}

func (r *replay) bind(name, got, path string) error {
	if name == "" {
		return nil
	}
	if v, ok := r.vars[name]; ok && v != got {
		return fmt.Errorf("%s: $%s is %q, got %q", path, name, v, got)
	}
	r.vars[name] = got
	return nil
}

func (r *replay) match(want, got any, path string) error {
	if m, ok := want.(map[string]any); ok && len(m) == 1 {
		for k, arg := range m {
			s, _ := got.(string)
			name, _ := arg.(string)
			switch k {
			case "$any":
				f, isNum := got.(float64)
				ok := map[string]bool{"value": true, "string": reflect.TypeOf(got) == reflect.TypeOf(""),
					"number": isNum, "integer": isNum && f == math.Trunc(f), "uuid": confUUID.MatchString(s)}[name]
				if !ok {
					return fmt.Errorf("%s: %v is not %s", path, got, name)
				}
				return nil
			case "$uuid":
				if !confUUID.MatchString(s) {
					return fmt.Errorf("%s: %v is not a UUID", path, got)
				}
				return r.bind(name, s, path)
			case "$var":
				if _, isStr := got.(string); !isStr {
					return fmt.Errorf("%s: %v is not a string", path, got)
				}
				return r.bind(name, s, path)
			case "$localtime":
				if w := localISO(arg.(float64)); s != w {
					return fmt.Errorf("%s: want local time %q, got %v", path, w, got)
				}
				return nil
			}
		}
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %v", path, got)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				return fmt.Errorf("%s: unexpected key %q", path, k)
			}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: missing key %q", path, k)
			}
			if err := r.match(w[k], gv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want %d elements, got %v", path, len(w), got)
		}
		for i := range w {
			if err := r.match(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("%s: want %v, got %v", path, want, got)
	}
	return nil
}

func (r *replay) subst(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("bad variable reference in %q", s)
		}
		v, ok := r.vars[s[i+2:i+end]]
		if !ok {
			return "", fmt.Errorf("unbound variable %s", s[i:i+end+1])
		}
		b.WriteString(s[:i] + v)
		s = s[i+end+1:]
	}
}

func (r *replay) substAll(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return r.subst(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			var err error
			if out[i], err = r.substAll(x[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			var err error
			if out[k], err = r.substAll(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

func textArg(a map[string]any, key, dflt string) string {
	switch v := a[key].(type) {
	case nil:
		return dflt
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func linesArg(a map[string]any, key string) string {
	arr, ok := a[key].([]any)
	if !ok {
		return textArg(a, key, "")
	}
	parts := make([]string, len(arr))
	for i, x := range arr {
		parts[i], _ = x.(string)
	}
	return strings.Join(parts, "\n")
}

func parseJSON(b []byte) (any, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// roundTrip is v marshalled and parsed back: a typed result as the JSON it stands for.
func roundTrip(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("cannot marshal: %v", err)
	}
	out, _ := parseJSON(b)
	return out
}

// typedInto decodes the JSON text s into dst strictly and reports whether dst marshals back
// to the same JSON value: only then does the typed call send what the step says.
func typedInto(s string, dst any) bool {
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if d.Decode(dst) != nil || d.More() {
		return false
	}
	orig, err := parseJSON([]byte(s))
	return err == nil && reflect.DeepEqual(orig, roundTrip(dst))
}

// jsonStrings parses JSON Lines of JSON strings (ids), or reports false.
func jsonStrings(lines string) ([]string, bool) {
	if lines == "" {
		return nil, true
	}
	var out []string
	for _, l := range strings.Split(lines, "\n") {
		var s string
		// null would decode to "" here: only a JSON string is an id.
		if !strings.HasPrefix(l, `"`) || json.Unmarshal([]byte(l), &s) != nil || strings.TrimSpace(l) != l {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func raw(b []byte, err error) confOutcome {
	o := confOutcome{err: err, raw: b}
	if err == nil {
		o.out, o.err = parseJSON(b)
	}
	return o
}

func typed(v any, err error) confOutcome { return confOutcome{err: err, out: roundTrip(v)} }

func counted(n uint64, err error) (confOutcome, error) { return confOutcome{err: err, count: &n}, nil }

func (r *replay) call(name string, a map[string]any) (confOutcome, error) {
	switch name {
	case "abi_version":
		return confOutcome{value: float64(mnem.LibraryABIVersion())}, nil
	case "version":
		return confOutcome{value: mnem.Version()}, nil
	case "status_name":
		return confOutcome{value: mnem.StatusName(mnem.Status(int32(a["status"].(float64))))}, nil
	case "status_message":
		return confOutcome{}, errSkip
	case "embedder_texts":
		texts := append([]any{}, r.texts...)
		r.texts = nil
		return confOutcome{value: texts}, nil
	case "open":
		var o mnem.Options
		switch f := a["flags"].(type) {
		case nil:
			o.Create = true
		case []any:
			for _, x := range f {
				switch x {
				case "create":
					o.Create = true
				case "read_only":
					o.ReadOnly = true
				case "view":
					o.View = true
				}
			}
		default:
			return confOutcome{}, errSkip // raw flag bits: Options has no field for them
		}
		o.RawJSON = textArg(a, "options", "")
		path := r.storePath(textArg(a, "path", ":memory:"))
		as := textArg(a, "as", "main")
		if r.stores[as] != nil {
			return confOutcome{}, fmt.Errorf("store %s is already open", as)
		}
		s, err := mnem.Open(path, o)
		if err == nil {
			r.stores[as] = s
		}
		return confOutcome{err: err}, nil
	}
	s := r.stores[textArg(a, "store", "main")]
	if s == nil {
		return confOutcome{}, fmt.Errorf("no open store %v", a["store"])
	}
	app, user := textArg(a, "app", "app"), textArg(a, "user", "user")
	switch name {
	case "close":
		delete(r.stores, textArg(a, "store", "main"))
		return confOutcome{err: s.Close()}, nil
	case "flush":
		return confOutcome{err: s.Flush()}, nil
	case "compact":
		return confOutcome{err: s.Compact()}, nil
	case "forget_namespace":
		return confOutcome{err: s.ForgetNamespace(app, user)}, nil
	case "set_embedder":
		e := r.embedder(textArg(a, "kind", "words"))
		if m, ok := a["model"].(string); ok {
			return confOutcome{err: s.SetNamedEmbedder(m, e)}, nil
		}
		return confOutcome{err: s.SetEmbedder(e)}, nil
	case "recall":
		var rq mnem.RecallQuery
		if !typedInto(textArg(a, "query", ""), &rq) {
			return confOutcome{}, errSkip // Recall takes a RecallQuery
		}
		res, err := s.Recall(app, user, rq)
		return typed(map[string]any{"memories": nonNil(res)}, err), nil
	case "hybrid_search_with":
		var hq mnem.HybridQuery
		if !typedInto(textArg(a, "query", ""), &hq) {
			return confOutcome{}, errSkip // HybridSearchText takes a HybridQuery
		}
		res, err := s.HybridSearchText(app, user, hq, r.embedder(textArg(a, "embedder", "words")))
		return typed(map[string]any{"results": nonNil(res)}, err), nil
	case "backup":
		dest := textArg(a, "dest", "")
		if dest != "" {
			dest = filepath.Join(r.tmp, dest)
		}
		return confOutcome{err: s.Backup(dest)}, nil
	case "add_session":
		return counted(s.AddSession(app, user, textArg(a, "session_id", ""), []byte(linesArg(a, "events"))))
	case "add_events":
		var meta map[string]any
		if m := textArg(a, "metadata", ""); m != "" {
			if json.Unmarshal([]byte(m), &meta) != nil || meta == nil {
				return confOutcome{}, errSkip // the binding takes custom metadata as a map
			}
		}
		return counted(s.AddEvents(app, user, textArg(a, "session_id", ""), []byte(linesArg(a, "events")), meta))
	case "delete_memory":
		return counted(s.DeleteMemory(app, user, textArg(a, "memory_id", "")))
	case "delete_session":
		return counted(s.DeleteSession(app, user, textArg(a, "session_id", "")))
	case "delete_episodes":
		ids, ok := jsonStrings(linesArg(a, "ids"))
		if !ok {
			return confOutcome{}, errSkip // DeleteEpisodes takes ids, not JSON Lines
		}
		return counted(s.DeleteEpisodes(app, user, ids...))
	case "import":
		return counted(s.Import([]byte(linesArg(a, "lines"))))
	case "put_episodes":
		data := linesArg(a, "episodes")
		var eps []mnem.EpisodeInput
		ok := data != ""
		for _, l := range strings.Split(data, "\n") {
			var e mnem.EpisodeInput
			if ok = ok && typedInto(l, &e); ok {
				eps = append(eps, e)
			}
		}
		var ids []string
		var err error
		if ok {
			ids, err = s.PutEpisodes(app, user, eps)
		} else {
			ids, err = s.PutEpisodesJSONL(app, user, []byte(data))
		}
		return confOutcome{err: err, ids: ids}, nil
	case "put_episodes_v2":
		data := []byte(linesArg(a, "episodes"))
		var n uint64
		c, sized := a["ids_cap"].(float64)
		if w, ok := a["ids_wanted"].(bool); sized || ok && !w {
			// A given size or NULL, which the API never passes: one call (export_test.go).
			ids, need, err := s.PutEpisodesOnce(app, user, data, int(c), !ok || w)
			n = uint64(need)
			return confOutcome{err: err, ids: ids, idsLen: &n}, nil
		}
		ids, err := s.PutEpisodesJSONL(app, user, data)
		n = uint64(16 * len(ids)) // an error carries no ids: 0, as *out_ids_len is then
		return confOutcome{err: err, ids: ids, idsLen: &n}, nil
	case "search":
		q := textArg(a, "query", "")
		o := raw(s.SearchRaw(app, user, q))
		if o.err == nil {
			mem, err := s.Search(app, user, q)
			if err != nil {
				return confOutcome{}, fmt.Errorf("Search failed after SearchRaw: %v", err)
			}
			if mem == nil {
				mem = []mnem.MemoryEntry{}
			}
			o.out = roundTrip(map[string]any{"memories": mem})
		}
		return o, nil
	case "keyword_search", "lexical_page", "substring_search", "hybrid_search":
		q := textArg(a, "query", "")
		switch name {
		case "keyword_search":
			var kq mnem.KeywordQuery
			if typedInto(q, &kq) {
				res, err := s.KeywordSearch(app, user, kq)
				return typed(map[string]any{"results": nonNil(res)}, err), nil
			}
			return raw(s.KeywordSearchRaw(app, user, []byte(q))), nil
		case "lexical_page":
			var lq mnem.LexicalPageQuery
			if typedInto(q, &lq) {
				return typed(s.LexicalPage(app, user, lq)), nil
			}
			return raw(s.LexicalPageRaw(app, user, []byte(q))), nil
		case "substring_search":
			var sq mnem.SubstringQuery
			if typedInto(q, &sq) {
				res, err := s.SubstringSearch(app, user, sq)
				recs := []map[string]any{}
				for _, e := range res {
					recs = append(recs, map[string]any{"record": e})
				}
				return typed(map[string]any{"results": recs}, err), nil
			}
			return raw(s.SubstringSearchRaw(app, user, []byte(q))), nil
		default:
			var hq mnem.HybridQuery
			if typedInto(q, &hq) {
				res, err := s.HybridSearch(app, user, hq)
				return typed(map[string]any{"results": nonNil(res)}, err), nil
			}
			return raw(s.HybridSearchRaw(app, user, []byte(q))), nil
		}
	case "get_episodes":
		lines := linesArg(a, "ids")
		if ids, ok := jsonStrings(lines); ok && len(ids) > 0 {
			eps, err := s.GetEpisodes(app, user, ids...)
			return typed(map[string]any{"episodes": eps}, err), nil
		}
		return raw(s.GetEpisodesRaw(app, user, []byte(lines))), nil
	case "list_namespaces":
		q := textArg(a, "query", "")
		var nq mnem.NamespaceQuery
		if q != "" && typedInto(q, &nq) {
			page, err := s.ListNamespaces(nq)
			if page != nil && page.Namespaces == nil {
				page.Namespaces = []mnem.NamespaceInfo{}
			}
			return typed(page, err), nil
		}
		return raw(s.ListNamespacesRaw([]byte(q))), nil
	case "namespace_stats":
		return typed(s.NamespaceStats(app, user)), nil
	case "stats":
		return typed(s.Stats()), nil
	case "check":
		return typed(s.Check()), nil
	case "export":
		var b []byte
		var err error
		if a["all"] == true {
			b, err = s.ExportAll()
		} else {
			b, err = s.Export(app, user)
		}
		return confOutcome{err: err, raw: b}, nil
	case "export_page":
		maxBytes, _ := a["max_bytes"].(float64)
		p, err := s.ExportPage(app, user, a["all"] == true, textArg(a, "cursor", ""), uint64(maxBytes))
		return typed(p, err), nil
	}
	return confOutcome{}, fmt.Errorf("unknown call %s", name)
}

// nonNil keeps an empty result an empty JSON array, as the library writes it.
func nonNil[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

func (r *replay) step(st map[string]any) error {
	name, _ := st["call"].(string)
	args, _ := st["args"].(map[string]any)
	sub, err := r.substAll(args)
	if err != nil {
		return err
	}
	args, _ = sub.(map[string]any)
	if args == nil {
		args = map[string]any{}
	}
	o, err := r.call(name, args)
	if err != nil {
		return err
	}
	want, _ := st["expect"].(map[string]any)
	status, message := "OK", ""
	if o.err != nil {
		var me *mnem.Error
		if !errors.As(o.err, &me) {
			return fmt.Errorf("error is not a *mnem.Error: %v", o.err)
		}
		status, message = me.Status.String(), me.Message
		if !errors.Is(o.err, me.Status) {
			return fmt.Errorf("errors.Is(err, %v) is false", me.Status)
		}
	}
	ws, _ := want["status"].(string)
	if ws == "" {
		ws = "OK"
	}
	if status != ws {
		return fmt.Errorf("status %s (%q), want %s", status, message, ws)
	}
	if hs, ok := want["message_has"].([]any); ok {
		for _, h := range hs {
			if !strings.Contains(message, h.(string)) {
				return fmt.Errorf("message %q lacks %q", message, h)
			}
		}
	}
	if w, ok := want["count"]; ok {
		var got any
		if o.count != nil {
			got = float64(*o.count)
		}
		if err := r.match(w, got, "count"); err != nil {
			return err
		}
	}
	if w, ok := want["ids"]; ok {
		got := []any{}
		for _, id := range o.ids {
			got = append(got, id)
		}
		if err := r.match(w, got, "ids"); err != nil {
			return err
		}
	}
	if w, ok := want["ids_len"]; ok {
		var got any
		if o.idsLen != nil {
			got = float64(*o.idsLen)
		}
		if err := r.match(w, got, "ids_len"); err != nil {
			return err
		}
	}
	if w, ok := want["value"]; ok {
		if err := r.match(w, o.value, "value"); err != nil {
			return err
		}
	}
	if w, ok := want["json"]; ok {
		if err := r.match(w, o.out, "json"); err != nil {
			return err
		}
	}
	if w, ok := want["lines"]; ok {
		got := []any{}
		for _, l := range strings.Split(string(o.raw), "\n") {
			if l == "" {
				continue
			}
			v, err := parseJSON([]byte(l))
			if err != nil {
				return fmt.Errorf("output line is not JSON: %v", err)
			}
			got = append(got, v)
		}
		if err := r.match(w, got, "lines"); err != nil {
			return err
		}
	}
	if rc, ok := want["raw_contains"].([]any); ok {
		for _, x := range rc {
			if !bytes.Contains(o.raw, []byte(x.(string))) {
				return fmt.Errorf("output lacks the bytes %s", x)
			}
		}
	}
	if c, ok := want["capture"].(string); ok {
		if o.raw == nil {
			return fmt.Errorf("capture %s: no raw output", c)
		}
		r.vars[c] = string(o.raw)
	}
	return nil
}

func TestConformance(t *testing.T) {
	replayCorpus(t, "")
}

// TestConformanceOnPostgreSQL replays the corpus on the server MNEM_TEST_PG_URI names (as
// scripts/test sets it), every case but directoryCases: the same answers on both backends.
func TestConformanceOnPostgreSQL(t *testing.T) {
	if os.Getenv("MNEM_TEST_PG_URI") == "" {
		t.Skip("MNEM_TEST_PG_URI is not set")
	}
	replayCorpus(t, fmt.Sprintf("go%d", os.Getpid()))
}

func replayCorpus(t *testing.T, pgSchema string) {
	// The corpus lives in the repository; a copy of the module elsewhere names it.
	dir := os.Getenv("MNEM_CONFORMANCE_CASES")
	if dir == "" {
		dir = filepath.Join("..", "..", "tests", "conformance", "cases")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in %s: %v", dir, err)
	}
	steps, skipped := 0, 0
	for _, f := range files {
		stem := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(stem, func(t *testing.T) {
			if pgSchema != "" && directoryCases[stem] {
				t.Skip("a case about store directories")
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			r := &replay{tmp: t.TempDir(), stores: map[string]*mnem.Store{}, vars: map[string]string{}}
			if pgSchema != "" {
				r.pgSchema = pgSchema + "_" + stem
			}
			defer func() {
				for _, s := range r.stores {
					s.Close()
				}
			}()
			open, has := doc["open"]
			if !has {
				open = map[string]any{"path": ":memory:", "flags": []any{"create"}}
			}
			if o, ok := open.(map[string]any); ok {
				if out, err := r.call("open", o); err != nil || out.err != nil {
					t.Fatalf("open: %v %v", err, out.err)
				}
			}
			for i, s := range doc["steps"].([]any) {
				st := s.(map[string]any)
				err := r.step(st)
				if errors.Is(err, errSkip) {
					skipped++
					continue
				}
				if err != nil {
					t.Fatalf("step %d (%v): %v", i+1, st["call"], err)
				}
				steps++
			}
		})
	}
	t.Logf("conformance: %d cases, %d steps run, %d skipped (not expressible through the Go API)", len(files), steps, skipped)
}
