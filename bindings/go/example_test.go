package mnem_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	mnem "github.com/mnem-memory/mnem-go"
)

// Store episodes in a namespace (app, user) and find them again with BM25.
func Example() {
	store, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	_, err = store.PutEpisodes("notes-app", "alice", []mnem.EpisodeInput{
		{Primary: "Alice prefers green tea in the morning", Tags: []string{"preference"}},
		{Primary: "Alice's flight to Lisbon leaves on Friday"},
		{Primary: "Bob drinks black tea", Tags: []string{"preference"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := store.KeywordSearch("notes-app", "alice", mnem.KeywordQuery{Text: "green tea", Limit: 5})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hits {
		fmt.Println(h.Record.Primary)
	}
	// Output:
	// Alice prefers green tea in the morning
	// Bob drinks black tea
}

// The ADK memory seam: a session's events go in, search_memory's top ten come out.
func ExampleStore_Search() {
	store, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	events := []byte(`{"id":"e1","author":"user","timestamp":1700000000,"content":{"parts":[{"text":"My cat is called Miso"}],"role":"user"}}
{"id":"e2","author":"model","timestamp":1700000001,"content":{"parts":[{"text":"Miso is a lovely name"}],"role":"model"}}`)
	n, err := store.AddSession("chat", "alice", "session-1", events)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored", n)
	memories, err := store.Search("chat", "alice", "cat")
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range memories {
		fmt.Println(m.ID, *m.Author, string(m.Content))
	}
	// Output:
	// stored 2
	// e1 user {"parts":[{"text":"My cat is called Miso"}],"role":"user"}
}

// Hybrid search fuses BM25 with vector similarity; here the vector decides.
func ExampleStore_HybridSearch() {
	store, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	_, err = store.PutEpisodes("app", "user", []mnem.EpisodeInput{
		{Primary: "apples and pears", Embedding: []float32{1, 0, 0}},
		{Primary: "cherries", Embedding: []float32{0, 1, 0}},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := store.HybridSearch("app", "user", mnem.HybridQuery{
		Text:           "fruit",
		Vector:         []float32{0.1, 0.9, 0},
		Limit:          1,
		SemanticWeight: mnem.Weight(1),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res[0].Record.Primary)
	// Output: cherries
}

// A read with a deadline; a context that has already ended stops the call before it starts.
func ExampleStore_KeywordSearchContext() {
	store, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if _, err := store.PutEpisodes("app", "user", []mnem.EpisodeInput{{Primary: "deadline test"}}); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hits, err := store.KeywordSearchContext(ctx, "app", "user", mnem.KeywordQuery{Text: "deadline"})
	fmt.Println(len(hits), err)

	cancel()
	_, err = store.KeywordSearchContext(ctx, "app", "user", mnem.KeywordQuery{Text: "deadline"})
	fmt.Println(errors.Is(err, context.Canceled))
	// Output:
	// 1 <nil>
	// true
}

// Page through a namespace with bounded scans.
func ExampleStore_LexicalPage() {
	store, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	var in []mnem.EpisodeInput
	for i := 0; i < 5; i++ {
		in = append(in, mnem.EpisodeInput{Primary: fmt.Sprintf("log line %d", i)})
	}
	if _, err := store.PutEpisodes("app", "user", in); err != nil {
		log.Fatal(err)
	}

	q := mnem.LexicalPageQuery{Text: "log", Limit: 100, ScanLimit: 2}
	for pages := 1; ; pages++ {
		page, err := store.LexicalPage("app", "user", q)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("page %d: %d hits of %d scanned\n", pages, len(page.Hits), page.ScannedRecords)
		if page.NextAfter == nil {
			break
		}
		q.After = *page.NextAfter
	}
	// Output:
	// page 1: 2 hits of 2 scanned
	// page 2: 2 hits of 2 scanned
	// page 3: 1 hits of 1 scanned
}

// Errors carry the library's status: match them with errors.Is.
func ExampleOpen_errors() {
	dir, err := os.MkdirTemp("", "mnem-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_, err = mnem.Open(filepath.Join(dir, "missing"), mnem.Options{}) // no Create
	fmt.Println(errors.Is(err, mnem.ErrNotFound))

	var e *mnem.Error
	_, err = mnem.Open(":memory:", mnem.Options{RawJSON: `{"cache_bytes":1}`})
	fmt.Println(errors.As(err, &e), e.Status.String())
	// Output:
	// true
	// true INVALID_ARGUMENT
}

// Forget a user: everything stored for (app, user) is erased, from the store's files too,
// while other users keep theirs.
func ExampleStore_ForgetNamespace() {
	dir, err := os.MkdirTemp("", "mnem-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := mnem.Open(filepath.Join(dir, "memories"), mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	for _, u := range []string{"alice", "bob"} {
		if _, err := store.PutEpisodes("app", u, []mnem.EpisodeInput{{Primary: u + " likes tea"}}); err != nil {
			log.Fatal(err)
		}
	}

	if err := store.ForgetNamespace("app", "alice"); err != nil {
		log.Fatal(err)
	}
	for ns, err := range store.AllNamespaces(0) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ns.AppName, ns.UserID, ns.Episodes)
	}
	hits, err := store.KeywordSearch("app", "alice", mnem.KeywordQuery{Text: "tea"})
	fmt.Println(len(hits), err)
	// Output:
	// app bob 1
	// 0 <nil>
}

// Move a user to another store: export it as JSON Lines, import it elsewhere, and every
// search answers the same.
func ExampleStore_Export() {
	src, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	if _, err := src.PutEpisodes("app", "alice", []mnem.EpisodeInput{
		{Primary: "Alice prefers green tea"},
		{Primary: "Alice lives in Lisbon"},
	}); err != nil {
		log.Fatal(err)
	}
	dump, err := src.Export("app", "alice")
	if err != nil {
		log.Fatal(err)
	}

	dst, err := mnem.Open(":memory:", mnem.Options{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()
	n, err := dst.Import(dump)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("imported", n)
	hits, err := dst.KeywordSearch("app", "alice", mnem.KeywordQuery{Text: "tea"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hits[0].Record.Primary)
	// Importing into a namespace that holds data is refused; nothing is written.
	_, err = dst.Import(dump)
	fmt.Println(errors.Is(err, mnem.ErrInvalidArgument))
	// Output:
	// imported 2
	// Alice prefers green tea
	// true
}
