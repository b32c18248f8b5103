package mnem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// filesWith lists the files under dir whose bytes contain needle.
func filesWith(t *testing.T, dir, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func TestDeleteSession(t *testing.T) {
	s := memStore(t)
	s1 := jsonl(event("a1", "user", 1, content("user", "apples in session one")),
		event("a2", "model", 2, content("model", "more apples, one")))
	s2 := jsonl(event("b1", "user", 3, content("user", "apples in session two")))
	if _, err := s.AddSession(app, user, "s1", s1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s2", s2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEvents(app, user, "", jsonl(event("u1", "user", 4, content("user", "apples without a session"))), nil); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Search(app, user, "apples"); err != nil || !eqStrings(memoryIDs(m), []string{"a1", "a2", "b1", "u1"}) {
		t.Fatalf("before: %v %v", memoryIDs(m), err)
	}

	n, err := s.DeleteSession(app, user, "s1")
	if err != nil || n != 2 {
		t.Fatalf("DeleteSession s1: %d %v, want 2", n, err)
	}
	if m, err := s.Search(app, user, "apples"); err != nil || !eqStrings(memoryIDs(m), []string{"b1", "u1"}) {
		t.Fatalf("after deleting s1: %v %v", memoryIDs(m), err)
	}
	// The events are gone from the lexical channel too.
	if k, err := s.KeywordSearch(app, user, KeywordQuery{Text: "one"}); err != nil || len(k) != 0 {
		t.Fatalf("keyword search finds a deleted session's events: %v %v", episodeIDs(k), err)
	}
	// Events added with an empty session id are in UnknownSessionID's bucket; "" names
	// another (empty) one.
	if n, err := s.DeleteSession(app, user, ""); err != nil || n != 0 {
		t.Fatalf("DeleteSession \"\": %d %v, want 0", n, err)
	}
	if n, err := s.DeleteSession(app, user, UnknownSessionID); err != nil || n != 1 {
		t.Fatalf("DeleteSession(UnknownSessionID): %d %v, want 1", n, err)
	}
	if n, err := s.DeleteSession(app, user, "never-added"); err != nil || n != 0 {
		t.Fatalf("unknown session: %d %v", n, err)
	}
	if n, err := s.DeleteSession(app, user, "s1"); err != nil || n != 0 {
		t.Fatalf("second delete: %d %v", n, err)
	}
	if m, err := s.Search(app, user, "apples"); err != nil || !eqStrings(memoryIDs(m), []string{"b1"}) {
		t.Fatalf("the other session: %v %v", memoryIDs(m), err)
	}
	// Adding the session again puts it after the existing one.
	if _, err := s.AddSession(app, user, "s1", s1); err != nil {
		t.Fatal(err)
	}
	if m, err := s.Search(app, user, "apples"); err != nil || !eqStrings(memoryIDs(m), []string{"b1", "a1", "a2"}) {
		t.Fatalf("re-added session: %v %v", memoryIDs(m), err)
	}

	_, err = s.DeleteSession(app, user, "bad\xff")
	wantStatus(t, err, StatusInvalidArgument, "session id not UTF-8")
	s.Close()
	if _, err := s.DeleteSession(app, user, "s1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A deleted session's text stays in older table files until Compact; the kept one stays.
func TestCompactErasesDeletedSessions(t *testing.T) {
	dir := t.TempDir()
	s := dirStore(t, dir, Options{Create: true})
	// Texts that share no word with ids or each other, so that LZ4 leaves them literal.
	if _, err := s.AddSession(app, "alice", "s1", jsonl(event("e1", "user", 1, content("user", "zyxgone marmalade")))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, "alice", "s2", jsonl(event("e2", "user", 2, content("user", "quinceflower jam")))); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteSession(app, "alice", "s1"); err != nil || n != 1 {
		t.Fatalf("DeleteSession: %d %v", n, err)
	}
	if len(filesWith(t, dir, "zyxgone marmalade")) == 0 {
		t.Fatal("a delete alone erased the text: the check below proves nothing")
	}
	if err := s.CompactContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := filesWith(t, dir, "zyxgone marmalade"); len(f) != 0 {
		t.Fatalf("the deleted text is still in %v after Compact", f)
	}
	// One word, not the phrase: LZ4 may split a phrase into a literal and a back-reference
	// (about once in 200 stores), while the word is literal in several index keys too.
	if len(filesWith(t, dir, "quinceflower")) == 0 {
		t.Fatal("the kept session's text left the files")
	}
	if m, err := s.Search(app, "alice", "quinceflower"); err != nil || !eqStrings(memoryIDs(m), []string{"e2"}) {
		t.Fatalf("the kept session after Compact: %v %v", memoryIDs(m), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ro := dirStore(t, dir, Options{ReadOnly: true})
	if err := ro.Compact(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Compact on a read-only store: %v, want ErrReadOnly", err)
	}
}

// Forgetting a user erases its episodes, sessions and bytes; another namespace stays.
func TestForgetNamespace(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.PutEpisodes(app, "alice", []EpisodeInput{
		{Primary: "alice keeps marmalade in the cupboard", Embedding: []float32{1, 0}},
		{Primary: "second alice fact"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, "alice", "s", jsonl(event("e1", "user", 1, content("user", "marmalade session")))); err != nil {
		t.Fatal(err)
	}
	bobIDs, err := s.PutEpisodes(app, "bob", []EpisodeInput{{Primary: "bob grows quinceflower"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, "bob", "s", jsonl(event("e1", "user", 1, content("user", "quinceflower session")))); err != nil {
		t.Fatal(err)
	}
	if len(filesWith(t, dir, "marmalade")) == 0 {
		t.Fatal("the text is not in the store's files before the forget: the check below proves nothing")
	}

	if err := s.ForgetNamespace(app, "alice"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetEpisodes(app, "alice", ids...)
	if err != nil || len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Fatalf("episodes after forget: %+v %v", got, err)
	}
	if m, err := s.Search(app, "alice", "marmalade"); err != nil || len(m) != 0 {
		t.Fatalf("ADK search after forget: %v %v", memoryIDs(m), err)
	}
	if k, err := s.KeywordSearch(app, "alice", KeywordQuery{Text: "alice"}); err != nil || len(k) != 0 {
		t.Fatalf("keyword search after forget: %v %v", episodeIDs(k), err)
	}
	st, err := s.NamespaceStats(app, "alice")
	if err != nil || !reflect.DeepEqual(st, NamespaceStats{ApproximateFileBytes: st.ApproximateFileBytes}) {
		t.Fatalf("stats after forget: %+v %v", st, err)
	}
	page, err := s.ListNamespaces(NamespaceQuery{})
	if err != nil || len(page.Namespaces) != 1 || page.Namespaces[0].Namespace != (Namespace{app, "bob"}) {
		t.Fatalf("namespaces after forget: %+v %v", page, err)
	}
	// Bob is intact.
	if got, err := s.GetEpisodes(app, "bob", bobIDs...); err != nil || got[0] == nil || got[0].Primary != "bob grows quinceflower" {
		t.Fatalf("bob's episode: %+v %v", got, err)
	}
	if m, err := s.Search(app, "bob", "quinceflower"); err != nil || !eqStrings(memoryIDs(m), []string{"e1"}) {
		t.Fatalf("bob's session: %v %v", memoryIDs(m), err)
	}
	// The namespace may be written again, as a new one (its vector dimension is gone too).
	if _, err := s.PutEpisodes(app, "alice", []EpisodeInput{{Primary: "a new alice", Embedding: []float32{1, 0, 0}}}); err != nil {
		t.Fatalf("writing a forgotten namespace again: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f := filesWith(t, dir, "marmalade"); len(f) != 0 {
		t.Fatalf("the forgotten text is still in %v", f)
	}
	if len(filesWith(t, dir, "quinceflower")) == 0 {
		t.Fatal("the other namespace's text left the files")
	}

	ro := dirStore(t, dir, Options{ReadOnly: true})
	wantStatus(t, ro.ForgetNamespace(app, "bob"), StatusReadOnly, "forget on a read-only handle")
	if m, err := ro.Search(app, "bob", "quinceflower"); err != nil || len(m) != 1 {
		t.Fatalf("bob after a refused forget: %v %v", memoryIDs(m), err)
	}
	ro.Close()
	mem := memStore(t)
	if err := mem.ForgetNamespace(app, "nobody"); err != nil {
		t.Fatalf("forgetting an empty namespace: %v", err)
	}
	wantStatus(t, mem.ForgetNamespace("bad\xff", "bob"), StatusInvalidArgument, "app not UTF-8")
}

func TestGetEpisodes(t *testing.T) {
	s := memStore(t)
	ids, err := s.PutEpisodes(app, user, []EpisodeInput{
		{Primary: "first", Tags: []string{"t"}, Metadata: []byte(`{"k": 1}`)},
		{Primary: "second"},
		{Primary: "third"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEpisodes(app, user, ids[1]); err != nil {
		t.Fatal(err)
	}
	missing := "01900000-0000-7000-8000-00000000abcd"
	got, err := s.GetEpisodes(app, user, ids[2], missing, ids[0], ids[1], ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 || got[0] == nil || got[1] != nil || got[2] == nil || got[3] != nil || got[4] == nil {
		t.Fatalf("results do not line up with the ids: %+v", got)
	}
	if got[0].ID != ids[2] || got[0].Primary != "third" || got[4].ID != ids[2] {
		t.Fatalf("third: %+v", got[0])
	}
	if g := got[2]; g.ID != ids[0] || g.Primary != "first" || !eqStrings(g.Tags, []string{"t"}) || string(g.Metadata) != `{"k":1}` || g.Revision != 1 {
		t.Fatalf("first: %+v (metadata %s)", g, g.Metadata)
	}
	// Another namespace does not see them.
	if got, err := s.GetEpisodes(app, "other", ids[0]); err != nil || len(got) != 1 || got[0] != nil {
		t.Fatalf("another namespace: %+v %v", got, err)
	}
	if got, err := s.GetEpisodes(app, user); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %+v %v", got, err)
	}
	// The raw form is the library's JSON.
	raw, err := s.GetEpisodesRaw(app, user, []byte(`"`+missing+`"`))
	if err != nil || string(raw) != `{"episodes":[null]}` {
		t.Fatalf("raw: %s %v", raw, err)
	}

	_, err = s.GetEpisodes(app, user, "not-a-uuid")
	wantStatus(t, err, StatusInvalidArgument, "an id that is not a UUID")
	_, err = s.GetEpisodes(app, user, ids[0], "bad\xff")
	wantStatus(t, err, StatusInvalidArgument, "an id that is not UTF-8")
	many := make([]string, MaxGetEpisodes+1)
	for i := range many {
		many[i] = missing
	}
	_, err = s.GetEpisodes(app, user, many...)
	wantStatus(t, err, StatusInvalidArgument, "too many ids")
	if got, err := s.GetEpisodes(app, user, many[:MaxGetEpisodes]...); err != nil || len(got) != MaxGetEpisodes {
		t.Fatalf("%d ids: %d results, %v", MaxGetEpisodes, len(got), err)
	}
}

func TestListNamespaces(t *testing.T) {
	s := memStore(t)
	// Key order: by the byte length of app_name, then its bytes, then likewise user_id.
	want := []NamespaceInfo{
		{Namespace{"", "z"}, 1},
		{Namespace{"b", ""}, 2},
		{Namespace{"b", "a"}, 1},
		{Namespace{"b", "aa"}, 3},
		{Namespace{"c", "\x00"}, 1},
		{Namespace{"aa", ""}, 1},
		{Namespace{"ü", "x"}, 1}, // two bytes
	}
	for i := len(want) - 1; i >= 0; i-- { // written out of order
		ns := want[i]
		var in []EpisodeInput
		for k := uint64(0); k < ns.Episodes; k++ {
			in = append(in, EpisodeInput{Primary: fmt.Sprintf("episode %d", k)})
		}
		if _, err := s.PutEpisodes(ns.AppName, ns.UserID, in); err != nil {
			t.Fatal(err)
		}
	}
	// A deleted episode still counts its namespace, not itself.
	ids, err := s.PutEpisodes("zz", "deleted", []EpisodeInput{{Primary: "gone"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEpisodes("zz", "deleted", ids...); err != nil {
		t.Fatal(err)
	}
	want = append(want[:6], append([]NamespaceInfo{{Namespace{"zz", "deleted"}, 0}}, want[6:]...)...)

	all, err := s.ListNamespaces(NamespaceQuery{})
	if err != nil || all.NextAfter != nil || !reflect.DeepEqual(all.Namespaces, want) {
		t.Fatalf("one page:\n got %+v %v\nwant %+v", all, err, want)
	}
	var paged []NamespaceInfo
	q := NamespaceQuery{Limit: 3}
	pages := 0
	for {
		page, err := s.ListNamespaces(q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(page.Namespaces) > 3 {
			t.Fatalf("page of %d with limit 3", len(page.Namespaces))
		}
		paged = append(paged, page.Namespaces...)
		if page.NextAfter == nil {
			break
		}
		if *page.NextAfter != page.Namespaces[len(page.Namespaces)-1].Namespace {
			t.Fatalf("next_after %+v is not the page's last namespace", page.NextAfter)
		}
		q.After = page.NextAfter
	}
	if pages != 3 || !reflect.DeepEqual(paged, want) {
		t.Fatalf("%d pages: %+v", pages, paged)
	}
	var iterated []NamespaceInfo
	for n, err := range s.AllNamespaces(2) {
		if err != nil {
			t.Fatal(err)
		}
		iterated = append(iterated, n)
	}
	if !reflect.DeepEqual(iterated, want) {
		t.Fatalf("AllNamespaces: %+v", iterated)
	}
	for n := range s.AllNamespaces(1) { // stopping early is allowed
		if n.Namespace != want[0].Namespace {
			t.Fatalf("first: %+v", n)
		}
		break
	}
	// After a namespace that does not exist: from the next one in key order (a shorter
	// user_id comes first).
	page, err := s.ListNamespaces(NamespaceQuery{After: &Namespace{"b", "z"}})
	if err != nil || len(page.Namespaces) == 0 || page.Namespaces[0].Namespace != (Namespace{"b", "aa"}) {
		t.Fatalf("after an absent namespace: %+v %v", page, err)
	}
	raw, err := s.ListNamespacesRaw([]byte(`{"limit":1}`))
	if err != nil || string(raw) != `{"namespaces":[{"app_name":"","user_id":"z","episodes":1}],"next_after":{"app_name":"","user_id":"z"}}` {
		t.Fatalf("raw: %s %v", raw, err)
	}

	_, err = s.ListNamespaces(NamespaceQuery{Limit: 1001})
	wantStatus(t, err, StatusInvalidArgument, "limit over 1000")
	_, err = s.ListNamespaces(NamespaceQuery{Limit: -1})
	wantStatus(t, err, StatusInvalidArgument, "negative limit")
	_, err = s.ListNamespaces(NamespaceQuery{After: &Namespace{"bad\xff", ""}})
	wantStatus(t, err, StatusInvalidArgument, "after not UTF-8")
	_, err = s.ListNamespacesRaw([]byte(`{"limit":1,"cursor":null}`))
	wantStatus(t, err, StatusInvalidArgument, "unknown key")
	for _, err := range s.AllNamespaces(5000) {
		wantStatus(t, err, StatusInvalidArgument, "AllNamespaces with a bad page size")
	}
}

func TestNamespaceStats(t *testing.T) {
	s := memStore(t)
	ids, err := s.PutEpisodes(app, user, []EpisodeInput{
		{Primary: "live one", Embedding: []float32{1, 0, 0}},
		{Primary: "live two"},
		{Primary: "to delete"},
		{Primary: "expiring", TTLMs: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEpisodes(app, user, ids[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s1", jsonl(event("e1", "user", 1, content("user", "stats event one")),
		event("e2", "user", 2, content("user", "stats event two")))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s2", jsonl(event("e3", "user", 3, content("user", "stats event three")))); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteMemory(app, user, "e3"); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	time.Sleep(5 * time.Millisecond) // the 1 ms TTL passes

	st, err := s.NamespaceStats(app, user)
	if err != nil {
		t.Fatal(err)
	}
	// Records: the four episodes and the three events; live: two episodes, e1 and e2.
	if st.Records.Keys != 7 || st.Live != 4 || st.Deleted != 2 || st.Expired != 1 {
		t.Errorf("records %+v live %d deleted %d expired %d", st.Records, st.Live, st.Deleted, st.Expired)
	}
	if st.Buckets != 2 || st.BucketEvents != 2 || st.MemoryTombstones != 1 {
		t.Errorf("buckets %d bucket_events %d memory_tombstones %d", st.Buckets, st.BucketEvents, st.MemoryTombstones)
	}
	if st.Dimension == nil || *st.Dimension != 3 {
		t.Errorf("dimension %v", st.Dimension)
	}
	if st.Records.Bytes == 0 || st.ADK.Keys == 0 || st.Index.BM25.Keys == 0 || st.Index.ADK.Keys == 0 || st.Index.Vector.Keys == 0 {
		t.Errorf("key counts: %+v", st)
	}
	empty, err := s.NamespaceStats(app, "nobody")
	if err != nil || !reflect.DeepEqual(empty, NamespaceStats{}) {
		t.Fatalf("unknown namespace: %+v %v", empty, err)
	}
	raw, err := s.NamespaceStatsRaw(app, "nobody")
	if err != nil || !strings.Contains(string(raw), `"dimension":null`) {
		t.Fatalf("raw: %s %v", raw, err)
	}
	_, err = s.NamespaceStats(app, "bad\xff")
	wantStatus(t, err, StatusInvalidArgument, "user not UTF-8")
}

// fill writes a namespace with every kind of data an export carries.
func fill(t *testing.T, s *Store, user string) []string {
	t.Helper()
	ids, err := s.PutEpisodes(app, user, []EpisodeInput{
		{Primary: "the lighthouse keeper's log", Tags: []string{"log"}, Embedding: []float32{1, 0, 0}, Metadata: []byte(`{"src": "x"}`)},
		{Primary: "a storm over the lighthouse", Embedding: []float32{0, 1, 0}, Secondary: "waves"},
		{Primary: "deleted lighthouse note", Embedding: []float32{0, 0, 1}},
		{Primary: "lighthouse paint is red", EpisodeType: "fact", Context: "harbour"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteEpisodes(app, user, ids[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSession(app, user, "s1", jsonl(event("e1", "user", 1700000000.25, content("user", "the lighthouse is tall")),
		event("e2", "model", 1700000001, content("model", "lighthouses guide ships")))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddEvents(app, user, "s2", jsonl(event("e3", "user", 1700000002, content("user", "a lighthouse at night"))), map[string]any{"tags": []string{"night"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteMemory(app, user, "e2"); err != nil {
		t.Fatal(err)
	}
	return ids
}

// answers collects every search's answer for a namespace, as comparable text.
func answers(t *testing.T, s *Store, user string, ids []string) string {
	t.Helper()
	var b strings.Builder
	m, err := s.SearchRaw(app, user, "lighthouse")
	if err != nil {
		t.Fatal(err)
	}
	b.Write(m)
	for _, q := range []string{`{"text":"lighthouse","limit":100}`, `{"text":"lighthouse","tag":"log"}`} {
		k, err := s.KeywordSearchRaw(app, user, []byte(q))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(k)
	}
	h, err := s.HybridSearchRaw(app, user, []byte(`{"text":"lighthouse","vector":[0.1,0.9,0],"limit":10}`))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(h)
	sub, err := s.SubstringSearchRaw(app, user, []byte(`{"text":"LIGHT","limit":100}`))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(sub)
	p, err := s.LexicalPageRaw(app, user, []byte(`{"text":"lighthouse","limit":100}`))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(p)
	g, err := s.GetEpisodesRaw(app, user, []byte(`"`+strings.Join(ids, "\"\n\"")+`"`))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(g)
	return b.String()
}

func TestExportImport(t *testing.T) {
	src := memStore(t)
	ids := fill(t, src, "alice")
	fill(t, src, "bob")
	want := answers(t, src, "alice", ids)
	if !strings.Contains(want, "lighthouse keeper") || !strings.Contains(want, `"e1"`) {
		t.Fatalf("the source answers nothing: %s", want)
	}

	dump, err := src.Export(app, "alice")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(dump), "\n"), "\n")
	if !strings.Contains(lines[0], `"type":"header"`) || !strings.Contains(lines[len(lines)-1], `"type":"end"`) ||
		strings.Contains(string(dump), `"bob"`) {
		t.Fatalf("export of one namespace:\n%s", dump)
	}

	dst := memStore(t)
	n, err := dst.Import(dump)
	if err != nil || n != 7 { // four episodes (one deleted) and three events
		t.Fatalf("import: %d %v", n, err)
	}
	if got := answers(t, dst, "alice", ids); got != want {
		t.Fatalf("answers differ after import:\n got %s\nwant %s", got, want)
	}
	if again, err := dst.Export(app, "alice"); err != nil || !bytes.Equal(again, dump) {
		t.Fatalf("export of the imported store differs: %v\n%s", err, again)
	}
	// The deleted memory id is still blocked, the deleted episode's id still unusable.
	if n, err := dst.AddEvents(app, "alice", "s3", jsonl(event("e2", "user", 5, content("user", "again"))), nil); err != nil || n != 0 {
		t.Fatalf("a deleted memory id was added again after import: %d %v", n, err)
	}
	if page, err := dst.ListNamespaces(NamespaceQuery{}); err != nil || len(page.Namespaces) != 1 {
		t.Fatalf("namespaces after import: %+v %v", page, err)
	}

	// An occupied namespace is refused, and nothing is written.
	_, err = dst.Import(dump)
	wantStatus(t, err, StatusInvalidArgument, "import into an occupied namespace")
	// A truncated export is refused, and nothing is written.
	all, err := src.ExportAll()
	if err != nil || !strings.Contains(string(all), `"bob"`) || !strings.Contains(string(all), `"alice"`) {
		t.Fatalf("export of the store: %v\n%s", err, all)
	}
	cut := all[:bytes.LastIndex(bytes.TrimSuffix(all, []byte{'\n'}), []byte{'\n'})+1]
	fresh := memStore(t)
	_, err = fresh.Import(cut)
	wantStatus(t, err, StatusInvalidArgument, "a truncated export")
	if page, err := fresh.ListNamespaces(NamespaceQuery{}); err != nil || len(page.Namespaces) != 0 {
		t.Fatalf("a refused import wrote: %+v %v", page, err)
	}
	_, err = fresh.Import([]byte("{\"type\":\"header\"}\nnot json\n"))
	var me *Error
	if !errors.As(err, &me) || me.Status != StatusInvalidArgument || !strings.Contains(me.Message, "line") {
		t.Fatalf("a bad line: %v", err)
	}
	// The whole store moves too.
	if n, err := fresh.Import(all); err != nil || n != 14 {
		t.Fatalf("import of the store: %d %v", n, err)
	}
	if got := answers(t, fresh, "alice", ids); got != want {
		t.Fatalf("answers differ after a whole-store import")
	}
	if again, err := fresh.ExportAll(); err != nil || !bytes.Equal(again, all) {
		t.Fatalf("whole-store export differs after import: %v", err)
	}

	// Bad input and read-only handles.
	_, err = src.Export("bad\xff", user)
	wantStatus(t, err, StatusInvalidArgument, "export of a namespace not UTF-8")
	_, err = fresh.Import([]byte("bad\xff"))
	wantStatus(t, err, StatusInvalidArgument, "import of bytes not UTF-8")
	dir := t.TempDir()
	dirStore(t, dir, Options{Create: true}).Close()
	ro := dirStore(t, dir, Options{ReadOnly: true})
	_, err = ro.Import(dump)
	wantStatus(t, err, StatusReadOnly, "import on a read-only handle")
	if e, err := ro.ExportAll(); err != nil || !strings.Contains(string(e), `"namespaces":0`) {
		t.Fatalf("export of an empty read-only store: %s %v", e, err)
	}
}

// The export outgrows the first buffer: the retry returns the whole of it.
func TestExportBufferGrowth(t *testing.T) {
	s := memStore(t)
	var in []EpisodeInput
	for i := 0; i < 300; i++ {
		in = append(in, EpisodeInput{Primary: strings.Repeat(fmt.Sprintf("word%d ", i), 20)})
	}
	if _, err := s.PutEpisodes(app, user, in); err != nil {
		t.Fatal(err)
	}
	dump, err := s.Export(app, user)
	if err != nil || len(dump) <= initialOutCap || !bytes.HasSuffix(dump, []byte("\"episodes\":300}\n")) {
		t.Fatalf("%d bytes, %v, ends %q", len(dump), err, dump[max(0, len(dump)-40):])
	}
	dst := memStore(t)
	if n, err := dst.Import(dump); err != nil || n != 300 {
		t.Fatalf("import: %d %v", n, err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	s := dirStore(t, dir, Options{Create: true})
	fill(t, s, "alice")
	r, err := s.Check()
	if err != nil || !r.OK || r.Problem != nil || r.Err() != nil {
		t.Fatalf("check of a good store: %+v %v", r, err)
	}
	if r.Episodes != 7 || r.Keys.Episodes != 7 || r.Keys.Meta == 0 || r.Keys.ADK == 0 || r.Keys.Index == 0 || r.Bytes == 0 {
		t.Fatalf("counts: %+v", r)
	}
	raw, err := s.CheckRaw()
	if err != nil || !strings.HasPrefix(string(raw), `{"ok":true,`) {
		t.Fatalf("raw: %s %v", raw, err)
	}
	mem := memStore(t)
	if r, err := mem.Check(); err != nil || !r.OK || r.Episodes != 0 {
		t.Fatalf("check of an empty store: %+v %v", r, err)
	}
	s.Close()
	if _, err := s.Check(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A damaged table file: the check runs (no error) and its verdict names the corruption.
func TestCheckFindsCorruption(t *testing.T) {
	dir := t.TempDir()
	s := dirStore(t, dir, Options{Create: true})
	if _, err := s.PutEpisodes(app, user, []EpisodeInput{{Primary: strings.Repeat("quinceflower ", 50)}}); err != nil {
		t.Fatal(err)
	}
	s.Close() // the text is in a table file afterwards (checked below)
	damaged := 0
	for _, p := range filesWith(t, dir, "quinceflower") {
		if !strings.HasSuffix(p, ".sst") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(b, []byte("quinceflower"))
		for i := at; i < at+12; i++ {
			b[i] ^= 0x5A
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		damaged++
	}
	if damaged == 0 {
		t.Fatal("no table file holds the text")
	}
	s = dirStore(t, dir, Options{ReadOnly: true})
	r, err := s.Check()
	if err != nil {
		t.Fatalf("the check did not run: %v", err)
	}
	if r.OK || r.Problem == nil || r.Problem.StatusName != "CORRUPTION" || r.Problem.Message == "" {
		t.Fatalf("verdict on a damaged store: %+v", r)
	}
	if !errors.Is(r.Err(), ErrCorruption) || r.Problem.Status() != StatusCorruption {
		t.Fatalf("Err(): %v", r.Err())
	}
}

func TestBackup(t *testing.T) {
	dir := t.TempDir()
	s := dirStore(t, dir, Options{Create: true})
	ids := fill(t, s, "alice")
	want := answers(t, s, "alice", ids)
	dest := filepath.Join(t.TempDir(), "backup")
	if err := s.Backup(dest); err != nil {
		t.Fatal(err)
	}
	// The original goes on; the backup keeps the state it had.
	if _, err := s.PutEpisodes(app, "alice", []EpisodeInput{{Primary: "lighthouse written after the backup"}}); err != nil {
		t.Fatal(err)
	}
	b := dirStore(t, dest, Options{ReadOnly: true})
	if got := answers(t, b, "alice", ids); got != want {
		t.Fatalf("the backup answers differently:\n got %s\nwant %s", got, want)
	}
	if r, err := b.Check(); err != nil || !r.OK {
		t.Fatalf("check of the backup: %+v %v", r, err)
	}

	wantStatus(t, s.Backup(dest), StatusInvalidArgument, "backup into an existing directory")
	wantStatus(t, s.Backup(""), StatusInvalidArgument, "backup to an empty path")
	wantStatus(t, s.Backup("bad\xff"), StatusInvalidArgument, "dest not UTF-8")
	wantStatus(t, memStore(t).Backup(filepath.Join(t.TempDir(), "m")), StatusInvalidArgument, "backup of :memory:")
	wantStatus(t, b.Backup(filepath.Join(t.TempDir(), "ro")), StatusReadOnly, "backup of a read-only handle")
}

// Every management method with a Context: an ended context stops it before the library is
// called; a live one changes nothing.
func TestAdminContext(t *testing.T) {
	s := dirStore(t, t.TempDir(), Options{Create: true})
	ids := fill(t, s, "alice")
	dump, err := s.Export(app, "alice")
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "b")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	checks := map[string]error{}
	checks["ForgetNamespace"] = s.ForgetNamespaceContext(ctx, app, "alice")
	checks["Compact"] = s.CompactContext(ctx)
	_, checks["DeleteSession"] = s.DeleteSessionContext(ctx, app, "alice", "s1")
	_, checks["Import"] = memStore(t).ImportContext(ctx, dump)
	checks["Backup"] = s.BackupContext(ctx, dest)
	_, checks["Export"] = s.ExportContext(ctx, app, "alice")
	_, checks["ExportAll"] = s.ExportAllContext(ctx)
	_, checks["Check"] = s.CheckContext(ctx)
	_, checks["GetEpisodes"] = s.GetEpisodesContext(ctx, app, "alice", ids...)
	_, checks["ListNamespaces"] = s.ListNamespacesContext(ctx, NamespaceQuery{})
	_, checks["NamespaceStats"] = s.NamespaceStatsContext(ctx, app, "alice")
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%sContext with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
	if _, err := os.Stat(dest); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a cancelled backup created %s: %v", dest, err)
	}
	if m, err := s.Search(app, "alice", "lighthouse"); err != nil || len(m) != 2 {
		t.Fatalf("a cancelled forget or delete changed the store: %v %v", memoryIDs(m), err)
	}

	live, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if got, err := s.GetEpisodesContext(live, app, "alice", ids[0]); err != nil || got[0] == nil {
		t.Fatal(got, err)
	}
	if p, err := s.ListNamespacesContext(live, NamespaceQuery{}); err != nil || len(p.Namespaces) != 1 {
		t.Fatal(p, err)
	}
	if st, err := s.NamespaceStatsContext(live, app, "alice"); err != nil || st.Buckets != 2 {
		t.Fatal(st, err)
	}
	if r, err := s.CheckContext(live); err != nil || !r.OK {
		t.Fatal(r, err)
	}
	if e, err := s.ExportContext(live, app, "alice"); err != nil || !bytes.Equal(e, dump) {
		t.Fatal(err)
	}
	if e, err := s.ExportAllContext(live); err != nil || !bytes.Contains(e, []byte(`"scope":"store"`)) {
		t.Fatalf("%s %v", e, err)
	}
	other := memStore(t)
	if n, err := other.ImportContext(live, dump); err != nil || n != 7 {
		t.Fatal(n, err)
	}
	if err := s.BackupContext(live, dest); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteSessionContext(live, app, "alice", "s1"); err != nil || n != 1 { // e2 went by DeleteMemory
		t.Fatal(n, err)
	}
	if err := s.ForgetNamespaceContext(live, app, "alice"); err != nil {
		t.Fatal(err)
	}
	if p, err := s.ListNamespaces(NamespaceQuery{}); err != nil || len(p.Namespaces) != 0 {
		t.Fatal(p, err)
	}
	// A library error comes through unchanged.
	wantStatus(t, s.BackupContext(live, dest), StatusInvalidArgument, "backup into an existing directory")
}

// A view reads beside a writer, from the state at its open, and refuses writes.
func TestView(t *testing.T) {
	dir := t.TempDir()
	w := dirStore(t, dir, Options{Create: true})
	ids := fill(t, w, "alice")
	want := answers(t, w, "alice", ids)
	_, err := Open(dir, Options{ReadOnly: true})
	wantStatus(t, err, StatusBusy, "a read-only open beside the writer")

	v := dirStore(t, dir, Options{View: true})
	if got := answers(t, v, "alice", ids); got != want {
		t.Fatalf("the view answers differently:\n got %s\nwant %s", got, want)
	}
	_, err = v.PutEpisodes(app, "alice", []EpisodeInput{{Primary: "x"}})
	wantStatus(t, err, StatusReadOnly, "a write on a view")
	wantStatus(t, v.ForgetNamespace(app, "alice"), StatusReadOnly, "forget on a view")
	if _, err := w.PutEpisodes(app, "bob", []EpisodeInput{{Primary: "written after the view opened"}}); err != nil {
		t.Fatal(err)
	}
	if p, err := v.ListNamespaces(NamespaceQuery{}); err != nil || len(p.Namespaces) != 1 {
		t.Fatalf("the view sees a later write: %+v %v", p, err)
	}
	if e, err := v.Export(app, "alice"); err != nil || len(e) == 0 {
		t.Fatalf("export from a view: %v", err)
	}
	v2 := dirStore(t, dir, Options{View: true})
	if p, err := v2.ListNamespaces(NamespaceQuery{}); err != nil || len(p.Namespaces) != 2 {
		t.Fatalf("a new view does not see the later write: %+v %v", p, err)
	}
	_, err = Open(dir, Options{View: true, Create: true})
	wantStatus(t, err, StatusInvalidArgument, "View with Create")
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

// Pages concatenate to the export; ExportTo streams them.
func TestExportPages(t *testing.T) {
	s := memStore(t)
	fill(t, s, "alice")
	fill(t, s, "bob")
	whole, err := s.Export(app, "alice")
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.ExportAll()
	if err != nil {
		t.Fatal(err)
	}
	var paged strings.Builder
	cursor, pages := "", 0
	for {
		p, err := s.ExportPage(app, "alice", false, cursor, 300)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		paged.WriteString(p.Lines)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	if pages < 3 || paged.String() != string(whole) {
		t.Fatalf("%d pages differ from the export:\n%s", pages, paged.String())
	}
	raw, err := s.ExportPageRaw(app, "alice", false, "", 1<<30)
	if err != nil || !bytes.HasPrefix(raw, []byte(`{"lines":"{\"type\":\"header\"`)) || !bytes.HasSuffix(raw, []byte(`"next_cursor":null}`)) {
		t.Fatalf("one page: %s %v", raw, err)
	}
	_, err = s.ExportPage(app, "alice", false, "not a cursor", 300)
	wantStatus(t, err, StatusInvalidArgument, "a cursor the library did not write")

	defer func(n uint64) { exportPageBytes = n }(exportPageBytes)
	exportPageBytes = 300
	var buf bytes.Buffer
	if n, err := s.ExportTo(&buf, app, "alice"); err != nil || n != int64(len(whole)) || !bytes.Equal(buf.Bytes(), whole) {
		t.Fatalf("ExportTo: %d %v", n, err)
	}
	buf.Reset()
	if n, err := s.ExportAllTo(&buf); err != nil || n != int64(len(all)) || !bytes.Equal(buf.Bytes(), all) {
		t.Fatalf("ExportAllTo: %d %v", n, err)
	}
	dst := memStore(t)
	if n, err := dst.Import(buf.Bytes()); err != nil || n != 14 {
		t.Fatalf("import of the streamed export: %d %v", n, err)
	}
	if _, err := s.ExportTo(&failingWriter{after: 1}, app, "alice"); err == nil || err.Error() != "disk full" {
		t.Fatalf("a failing writer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	buf.Reset()
	if n, err := s.ExportToContext(ctx, &buf, app, "alice"); !errors.Is(err, context.Canceled) || n != 0 || buf.Len() != 0 {
		t.Fatalf("cancelled ExportToContext: %d %v", n, err)
	}
	if _, err := s.ExportAllToContext(ctx, &buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ExportAllToContext: %v", err)
	}
	live, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	buf.Reset()
	if _, err := s.ExportToContext(live, &buf, app, "alice"); err != nil || !bytes.Equal(buf.Bytes(), whole) {
		t.Fatalf("ExportToContext: %v", err)
	}
}
