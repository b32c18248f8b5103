// Tests of bindings/cpp/mnem.hpp against the real library. No framework:
// prints failures, then "N passed, M failed", exits non-zero on failure.
#include "mnem.hpp"

#include <atomic>
#include <stdexcept>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

int passed = 0;
int failed = 0;

void check(bool ok, const char* expr, const char* file, int line) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::cerr << file << ":" << line << ": CHECK failed: " << expr << "\n";
  }
}
#define CHECK(x) check(static_cast<bool>(x), #x, __FILE__, __LINE__)

// Runs f, which must throw mnem::Error with `status`.
void check_throws(mnem_status status, const std::function<void()>& f, const char* what, int line) {
  try {
    f();
    ++failed;
    std::cerr << __FILE__ << ":" << line << ": " << what << ": no exception, want "
              << mnem::status_name(status) << "\n";
  } catch (const mnem::Error& e) {
    bool ok = e.status() == status && std::string(e.status_name()) == mnem::status_name(status) &&
              !e.message().empty() && std::string(e.what()).find(e.message()) != std::string::npos;
    check(ok, what, __FILE__, line);
    if (!ok) std::cerr << "    got: " << e.what() << "\n";
  } catch (const std::exception& e) {
    ++failed;
    std::cerr << __FILE__ << ":" << line << ": " << what << ": wrong exception: " << e.what() << "\n";
  }
}
#define CHECK_THROWS(status, ...) check_throws(status, [&] { __VA_ARGS__; }, #__VA_ARGS__, __LINE__)

// Runs a test body; an unexpected exception counts as one failure.
void run(const char* name, const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    ++failed;
    std::cerr << name << ": unexpected exception: " << e.what() << "\n";
  }
}

std::size_t count(const std::string& hay, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + needle.size())) ++n;
  return n;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mnem-cpp-XXXXXX").string();
    if (!mkdtemp(&tmpl[0])) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string event(const std::string& id, const std::string& author, const std::string& ts,
                  const std::string& content) {
  return R"({"id":")" + id + R"(","author":")" + author + R"(","timestamp":)" + ts +
         R"(,"invocation_id":"i","content":)" + content + "}";
}

std::string text_content(const std::string& role, const std::string& text) {
  return R"({"parts": [ {"text": ")" + text + R"("} ],  "role":")" + role + R"("})";
}

std::string iso_local(std::time_t t) {
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

const std::string A = "test-app", U = "test-user";

// The header's status constants are the library's: every one named by mnem_status_name (and
// by mnem::Error), and no other integer in a wide range names a status.
void test_status_table() {
  const struct {
    mnem_status status;
    int32_t code;
    const char* name;
  } table[] = {
      {MNEM_STATUS_OK, 0, "OK"},
      {MNEM_STATUS_INVALID_ARGUMENT, 1, "INVALID_ARGUMENT"},
      {MNEM_STATUS_BUFFER_TOO_SMALL, 2, "BUFFER_TOO_SMALL"},
      {MNEM_STATUS_NOT_FOUND, 3, "NOT_FOUND"},
      {MNEM_STATUS_BUSY, 4, "BUSY"},
      {MNEM_STATUS_READ_ONLY, 5, "READ_ONLY"},
      {MNEM_STATUS_IO, 6, "IO"},
      {MNEM_STATUS_CORRUPTION, 7, "CORRUPTION"},
      {MNEM_STATUS_INCOMPATIBLE, 8, "INCOMPATIBLE"},
      {MNEM_STATUS_EMBEDDER_FAILED, 9, "EMBEDDER_FAILED"},
      {MNEM_STATUS_INTERNAL, 100, "INTERNAL"},
  };
  static_assert(sizeof(mnem_status) == 4, "mnem_status is 32 bits");
  std::size_t known = 0;
  for (int32_t code = -16; code < 1024; ++code) {
    std::string name = mnem::status_name(code);
    if (name != "UNKNOWN") ++known;
    bool listed = false;
    for (const auto& row : table) listed = listed || row.code == code;
    if (listed != (name != "UNKNOWN")) {
      check(false, "the library and the header disagree on a status", __FILE__, __LINE__);
      std::cerr << "    code " << code << ": library says " << name << "\n";
    }
  }
  CHECK(known == sizeof table / sizeof table[0]);
  for (const auto& row : table) {
    CHECK(static_cast<int32_t>(row.status) == row.code);
    CHECK(std::string(mnem::status_name(row.status)) == row.name);
    CHECK(std::string(mnem::Error(row.status, "op", "m").status_name()) == row.name);
  }
}

void test_basics() {
  CHECK(mnem::abi_version() == MNEM_ABI_VERSION);
  CHECK(std::string(mnem::version()).size() > 0);
  test_status_table();
  static_assert(!std::is_copy_constructible_v<mnem::Store>);
  static_assert(!std::is_copy_assignable_v<mnem::Store>);
  static_assert(std::is_nothrow_move_constructible_v<mnem::Store>);
  static_assert(std::is_nothrow_move_assignable_v<mnem::Store>);

  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  CHECK(s.is_open());
  CHECK(static_cast<bool>(s));
  s.flush();
  s.close();
  CHECK(!s.is_open());
  s.close();  // idempotent
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.flush());
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.search(A, U, "x"));
}

void test_move() {
  mnem::Store a(":memory:");
  a.put_episodes(A, U, R"({"primary":"moved record"})");
  mnem_store* h = a.get();
  mnem::Store b(std::move(a));
  CHECK(!a.is_open());
  CHECK(b.get() == h);
  CHECK(count(b.keyword_search(A, U, R"({"text":"moved"})"), "\"record\"") == 1);
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, a.keyword_search(A, U, R"({"text":"moved"})"));

  mnem::Store c(":memory:");
  c = std::move(b);  // closes c's own store, takes b's
  CHECK(!b.is_open());
  CHECK(c.get() == h);
  CHECK(count(c.keyword_search(A, U, R"({"text":"moved"})"), "\"record\"") == 1);
  mnem::Store& alias = c;
  c = std::move(alias);  // self-move leaves it usable
  CHECK(c.is_open());

  std::vector<mnem::Store> v;
  v.push_back(std::move(c));
  v.emplace_back(":memory:");
  CHECK(v.size() == 2 && v[0].get() == h && v[1].is_open());
}

// Open statuses, options, BUSY and READ_ONLY writes: tests/conformance (open_*, persistence). Here:
// what mnem::Error carries and how it is caught.
void test_open_errors() {
  TempDir dir;
  std::string missing = dir.path + "/missing";
  CHECK_THROWS(MNEM_STATUS_NOT_FOUND, mnem::Store s(missing));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, mnem::Store s("bad\xff", MNEM_OPEN_CREATE));
  try {
    mnem::Store s(missing);
  } catch (const mnem::Error& e) {
    CHECK(e.op() == "open");
    CHECK(std::string(e.status_name()) == "NOT_FOUND");
    CHECK(contains(e.what(), "mnem_open: NOT_FOUND: "));
    const std::runtime_error& base = e;  // catchable as std::runtime_error
    CHECK(contains(base.what(), "NOT_FOUND"));
  }
}

// Refused input: tests/conformance. Here: bytes that are not UTF-8 go through std::string
// unchanged and are refused by the library, not repaired by the wrapper.
void test_bad_input() {
  mnem::Store s(":memory:");
  const std::string bad = "bad\xff";
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.search(bad, U, "x"));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.search(A, bad, "x"));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.search(A, U, bad));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, U, R"({"primary":")" + bad + "\"}"));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.keyword_search(A, U, R"({"text":")" + bad + "\"}"));
}

struct CountingEmbedder : mnem::Embedder {
  std::atomic<int> calls{0};
  std::vector<float> vec;
  explicit CountingEmbedder(std::vector<float> v) : vec(std::move(v)) {}
  std::vector<float> embed(std::string_view) override {
    ++calls;
    return vec;
  }
};

// What an embedder does to writes and searches: tests/conformance (embed_*), whose C++ replayer
// registers lambdas and gives hybrid_search_text an Embedder. Here: text that is not UTF-8 is
// refused before the embedder is asked, and any exception, a std::exception or not, is
// EMBEDDER_FAILED.
void test_embedder() {
  mnem::Store s(":memory:");
  s.put_episodes(A, U, R"({"primary":"apple","embedding":[1,0,0]})");
  CountingEmbedder emb({0.0f, 1.0f, 0.0f});
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.hybrid_search_text(A, U, "bad\xff", emb));
  CHECK(emb.calls == 0);
  s.set_embedder([](std::string_view) -> std::vector<float> { throw 42; });
  try {
    s.put_episodes(A, U, R"({"primary":"fig","embed":true})");
    CHECK(false && "a throwing embedder wrote");
  } catch (const mnem::Error& e) {
    CHECK(e.status() == MNEM_STATUS_EMBEDDER_FAILED && e.message() == "the embedder failed: unknown exception");
  }
}

// A named embedder (set_embedder with a model): its name is the namespace's embedding_model;
// another name, an unnamed embedder or a per-call embedder naming another model is refused,
// and a bad name leaves the registered embedder as it was (tests/conformance/cases/embed_models).
void test_named_embedder() {
  mnem::Store s(":memory:");
  auto embed = [](std::string_view) { return std::vector<float>{1.0f, 0.0f}; };
  s.set_embedder(embed, "model-a");
  s.put_episodes(A, U, R"({"primary":"green tea","embed":true})");
  CHECK(s.namespace_statistics(A, U).embedding_model == std::optional<std::string>("model-a"));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.set_embedder(embed, ""));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.set_embedder(embed, std::string(257, 'x')));
  s.put_episodes(A, U, R"({"primary":"black tea","embed":true})");  // still model-a
  s.set_embedder(embed, "model-b");
  try {
    s.put_episodes(A, U, R"({"primary":"coffee","embed":true})");
    CHECK(false && "another model's vector was written");
  } catch (const mnem::Error& e) {
    CHECK(e.status() == MNEM_STATUS_INVALID_ARGUMENT && contains(e.message(), "model-a") &&
          contains(e.message(), "model-b"));
  }
  CHECK(s.namespace_statistics(A, U).live == 2);
  s.set_embedder(embed);  // unnamed
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, U, R"({"primary":"coffee","embed":true})"));
  // The per-call embedder's model is HybridOptions::vector_model.
  CountingEmbedder emb({1.0f, 0.0f});
  mnem::HybridOptions o;
  o.semantic_weight = 1.0;
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.hybrid_search_text(A, U, "tea", emb, o));
  o.vector_model = "model-a";
  CHECK(nlohmann::json::parse(s.hybrid_search_text(A, U, "tea", emb, o))["results"].size() == 2);
  s.set_embedder({}, "ignored");  // removes it
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, U, R"({"primary":"coffee","embed":true})"));
}

// The built-in embedder by its open option: found by meaning from text alone (the vectors
// themselves are checked against the model's reference by the Rust tests).
void test_builtin_embedder() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE, R"({"embedder":"builtin"})");
  s.put_episodes(A, U, "{\"primary\":\"Alice prefers green tea\",\"embed\":true}\n"
                       "{\"primary\":\"the printer on floor two is broken\",\"embed\":true}");
  mnem::HybridQuery q;
  q.text = "a hot drink";
  auto hits = s.hybrid_search(A, U, q);
  CHECK(hits.size() == 2 && hits[0].record.primary == "Alice prefers green tea");
  CHECK(hits[0].keyword_score == 0 && hits[0].semantic_score > 0);
  try {
    mnem::Store bad(":memory:", MNEM_OPEN_CREATE, R"({"embedder":"builtin","model_dir":"/nonexistent/model"})");
    CHECK(false && "opened without a model");
  } catch (const mnem::Error& e) {
    CHECK(e.status() == MNEM_STATUS_EMBEDDER_FAILED && e.message().find("/nonexistent/model") != std::string::npos);
  }
}

void test_buffer_growth() {
  mnem::Store s(":memory:");
  std::string batch;
  for (int i = 0; i < 300; ++i) {
    batch += "{\"primary\":\"needle " + std::to_string(i) + " " + std::string(500, 'x') + "\"}\n";
  }
  CHECK(s.put_episodes(A, U, batch).size() == 300);
  std::string r = s.keyword_search(A, U, R"({"text":"needle","limit":1000})");
  CHECK(r.size() > 150000);
  CHECK(count(r, "\"record\"") == 300);
  CHECK(r.back() == '}');
  // Drive detail::read from an empty (NULL) buffer directly.
  mnem_store* h = s.get();
  std::string r2 = mnem::detail::read(
      "keyword_search",
      [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
        return mnem_keyword_search(h, mnem::detail::view(A), mnem::detail::view(U),
                                   mnem::detail::view(R"({"text":"needle","limit":1000})"), out, cap, len, err);
      },
      0);
  CHECK(r2 == r);
  // The raw protocol: BUFFER_TOO_SMALL reports the exact size.
  std::size_t need = 0;
  mnem_error err{};
  uint8_t small[8];
  mnem_status st = mnem_keyword_search(h, mnem::detail::view(A), mnem::detail::view(U),
                                       mnem::detail::view(R"({"text":"needle","limit":1000})"), small,
                                       sizeof small, &need, &err);
  CHECK(st == MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(need == r.size());
  CHECK(err.code == MNEM_STATUS_BUFFER_TOO_SMALL);
}

void test_threads() {
  mnem::Store s(":memory:");
  s.put_episodes(A, U, R"({"primary":"shared seed"})");
  std::atomic<bool> done{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      while (!done) {
        try {
          if (t % 2)
            s.keyword_search(A, U, R"({"text":"shared","limit":1000})");
          else
            s.search(A, U, "shared");
        } catch (const std::exception&) {
          ++errors;
        }
      }
    });
  }
  for (int i = 0; i < 100; ++i) {
    s.put_episodes(A, U, "{\"primary\":\"shared item " + std::to_string(i) + "\"}");
    s.add_events(A, U, "s", event("e" + std::to_string(i), "user", "1", text_content("user", "shared event")));
  }
  done = true;
  for (auto& th : readers) th.join();
  CHECK(errors == 0);
  CHECK(count(s.keyword_search(A, U, R"({"text":"item","limit":1000})"), "\"record\"") == 100);
}

// The typed API against real results: every field of an episode, hits, pages, memories and
// statistics, and typed inputs round-tripping through the library.
void test_typed() {
  mnem::Store s(":memory:", 0, R"({"cache_bytes":8388608})");
  const std::string a_id = "01900000-0000-7000-8000-00000000000a";
  mnem::EpisodeInput full;
  full.id = a_id;
  full.episode_type = "note";
  full.tags = {"x", "y"};
  full.primary = "typed brown fox";
  full.secondary = "second \"quoted\" text";
  full.context = "context words";
  full.metadata = {{"k", 1}};
  full.author = "alice";
  full.session_id = "s1";
  full.event_id = "ev1";
  full.timestamp = 1700000000.25;
  full.ttl_ms = 3600000;
  full.content = {{"a", {1, 2}}};
  full.embedding = {1.0f, 0.0f};
  mnem::EpisodeInput bare;
  bare.primary = "typed brown bread";
  bare.embedding = {0.0f, 1.0f};
  auto ids = s.put_episodes(A, U, {full, bare});
  CHECK(ids.size() == 2);
  if (ids.size() != 2) return;
  CHECK(ids[0] == a_id);

  mnem::KeywordQuery kq;
  kq.text = "brown fox";
  auto hits = s.keyword_search(A, U, kq);
  CHECK(hits.size() == 2);
  if (hits.size() != 2) return;
  CHECK(hits[0].score > hits[1].score && hits[1].score > 0);
  const mnem::Episode& e = hits[0].record;
  CHECK(e.id == a_id);
  CHECK(e.revision == 1);
  CHECK(e.episode_type == "note");
  CHECK((e.tags == std::vector<std::string>{"x", "y"}));
  CHECK(e.primary == "typed brown fox" && e.secondary == "second \"quoted\" text" && e.context == "context words");
  CHECK(e.metadata == nlohmann::json({{"k", 1}}));
  CHECK(e.author == std::optional<std::string>("alice"));
  CHECK(e.session_id == std::optional<std::string>("s1") && e.event_id == std::optional<std::string>("ev1"));
  CHECK(e.timestamp == std::optional<double>(1700000000.25));
  CHECK(e.created_at_ms > 0 && e.updated_at_ms == e.created_at_ms);
  CHECK(e.expires_at_ms && *e.expires_at_ms == e.created_at_ms + 3600000);
  CHECK(e.content == nlohmann::json({{"a", {1, 2}}}));
  const mnem::Episode& b = hits[1].record;
  CHECK(b.id == ids[1] && b.episode_type == "episode" && b.tags.empty());
  CHECK(!b.author && !b.session_id && !b.event_id && !b.timestamp && !b.expires_at_ms);
  CHECK(b.content.is_null() && b.metadata == nlohmann::json::object());  // the library writes {} for no metadata
  // Typed keyword, substring and lexical-page queries (tag, limit, scan_limit, after): their ids
  // and scores against the raw ones, by bindings/cpp/conformance.cpp on every such query of
  // tests/conformance. Here: the page's counters it does not compare.
  mnem::LexicalPageQuery lq;
  lq.text = "brown";
  lq.scan_limit = 1;
  mnem::LexicalPage page = s.lexical_page(A, U, lq);
  CHECK(page.scanned_bytes > 0 && page.matched_records == 1 && page.corpus_records == 1);

  mnem::HybridQuery hq;
  hq.text = "zzz";
  hq.vector = {0.0f, 1.0f};
  hq.limit = 1;
  hq.semantic_weight = 1.0;
  auto fused = s.hybrid_search(A, U, hq);
  CHECK(fused.size() == 1 && fused[0].record.id == ids[1]);
  CHECK(fused.size() == 1 && fused[0].semantic_score > 0 && fused[0].keyword_score == 0 &&
        fused[0].score == fused[0].semantic_score);
  hq.semantic_weight = std::nan("");
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.hybrid_search(A, U, hq));
  hq.semantic_weight = 0.5;
  hq.vector = {1.0f};
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.hybrid_search(A, U, hq));

  const std::string c1 = text_content("user", "The typed ADK memory");
  s.add_session(A, U, "sess", event("m1", "user", "12345.5", c1));
  auto memories = s.search_memory(A, U, "typed memory");
  CHECK(memories.size() == 1);
  if (memories.size() == 1) {
    CHECK(memories[0].id == "m1");
    CHECK(memories[0].author == std::optional<std::string>("user"));
    CHECK(memories[0].timestamp == std::optional<std::string>(iso_local(12345) + ".500000"));
    CHECK(memories[0].content == nlohmann::json::parse(c1));
    CHECK(memories[0].custom_metadata == nlohmann::json::object());
  }
  CHECK(s.search_memory(A, U, "absent").empty());

  mnem::Stats st = s.statistics();
  CHECK(st.cache_bytes == 8388608 && st.block_cache.budget_bytes == 2097152 && st.graph_cache.budget_bytes == 6291456);
  CHECK(st.format == 5 && st.opened_format == 5 && st.indexes_built == 0 && st.journal_replayed == 0);
  CHECK(st.graph_cache.entries == 1);

  // Bad typed input is rejected like raw input, and nothing is written.
  mnem::EpisodeInput bad;
  bad.primary = "bad\xff";
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, U, {bare, bad}));
  mnem::EpisodeInput nan_vec;
  nan_vec.primary = "nan vector";
  nan_vec.embedding = {NAN, 0.0f};
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, U, {nan_vec}));
  mnem::EpisodeInput both;
  both.primary = "both expiries";
  both.ttl_ms = 5;
  both.expires_at_ms = 5;
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, U, {both}));
  kq = mnem::KeywordQuery{};
  kq.text = "typed";
  kq.limit = 100;
  CHECK(s.keyword_search(A, U, kq).size() == 3);  // the two episodes and the ADK event
  CHECK(s.put_episodes(A, U, std::vector<mnem::EpisodeInput>{}).empty());
}


// ---- Store management ----

std::vector<std::string> files_with(const std::string& dir, const std::string& needle) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (contains(bytes, needle)) out.push_back(e.path().string());
  }
  return out;
}

// Every kind of data an export carries; returns the episode ids.
std::vector<std::string> fill(mnem::Store& s, const std::string& user) {
  std::vector<std::string> ids = s.put_episodes(
      A, user,
      R"({"primary":"the lighthouse keeper's log","tags":["log"],"embedding":[1,0,0],"metadata":{"src":"x"}}
{"primary":"a storm over the lighthouse","secondary":"waves","embedding":[0,1,0]}
{"primary":"deleted lighthouse note","embedding":[0,0,1]}
{"primary":"lighthouse paint is red","episode_type":"fact","context":"harbour"})");
  s.delete_episodes(A, user, "\"" + ids[2] + "\"");
  s.add_session(A, user, "s1",
                event("e1", "user", "1700000000.25", text_content("user", "the lighthouse is tall")) + "\n" +
                    event("e2", "model", "1700000001", text_content("model", "lighthouses guide ships")));
  s.add_events(A, user, "s2", event("e3", "user", "1700000002", text_content("user", "a lighthouse at night")),
               R"({"tags":["night"]})");
  s.delete_memory(A, user, "e2");
  return ids;
}

std::vector<std::string> memory_ids(const mnem::Store& s, const std::string& user, const std::string& q) {
  std::vector<std::string> ids;
  for (const auto& m : s.search_memory(A, user, q)) ids.push_back(m.id);
  return ids;
}

// Session deletion and its ranking: tests/conformance (delete_session). Here: the wrapper's
// name for the bucket of events added without a session id, and a closed handle.
void test_delete_session() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  s.add_events(A, U, "", event("u1", "user", "4", text_content("user", "apples without a session")));
  CHECK(s.delete_session(A, U, mnem::Store::unknown_session_id) == 1);
  CHECK(memory_ids(s, U, "apples").empty());
  s.close();
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.delete_session(A, U, "s2"));
}

// What a forget leaves to the searches, and READ_ONLY: tests/conformance (forget_namespace,
// check_backup_compact, persistence). Here: the bytes leave the files, through the wrapper.
void test_forget() {
  TempDir dir;
  {
    mnem::Store s(dir.path, MNEM_OPEN_CREATE);
    s.put_episodes(A, "alice", R"({"primary":"alice keeps marmalade","embedding":[1,0]})");
    s.add_session(A, "alice", "s", event("e1", "user", "1", text_content("user", "marmalade session")));
    s.put_episodes(A, "bob", R"({"primary":"bob grows quinceflower"})");
    s.add_session(A, "bob", "s", event("e1", "user", "1", text_content("user", "quinceflower session")));
    CHECK(!files_with(dir.path, "marmalade").empty());
    s.forget_namespace(A, "alice");
    CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.forget_namespace("bad\xff", "x"));
  }
  CHECK(files_with(dir.path, "marmalade").empty());
  CHECK(!files_with(dir.path, "quinceflower").empty());
  {
    // A deleted session's text stays in older table files until a compaction.
    mnem::Store s(dir.path);
    s.add_session(A, "bob", "gone", event("e2", "user", "2", text_content("user", "zyxgone plum")));
    s.flush();
    CHECK(s.delete_session(A, "bob", "gone") == 1);
    CHECK(!files_with(dir.path, "zyxgone plum").empty());
    s.compact();
    CHECK(files_with(dir.path, "zyxgone plum").empty());
    CHECK(!files_with(dir.path, "quinceflower").empty());
  }
}

// Nulls for other namespaces, deleted and expired ids, and refused lines: tests/conformance
// (get_episodes). Here: the typed result, the ids as lines, and the limit of 10000 ids.
void test_get_episodes() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  auto ids = s.put_episodes(A, U, R"({"primary":"first","tags":["t"]}
{"primary":"second"})");
  s.delete_episodes(A, U, "\"" + ids[1] + "\"");
  const std::string missing = "01900000-0000-7000-8000-00000000abcd";
  auto got = s.get_episodes(A, U, std::vector<std::string>{ids[0], missing, ids[1], ids[0]});
  CHECK(got.size() == 4 && got[0] && !got[1] && !got[2] && got[3]);
  if (got.size() == 4 && got[0]) CHECK(got[0]->id == ids[0] && got[0]->primary == "first" && got[0]->tags.at(0) == "t");
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.get_episodes(A, U, std::vector<std::string>{"bad\xff"}));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.get_episodes(A, U, std::vector<std::string>(10001, missing)));
  CHECK(s.get_episodes(A, U, std::vector<std::string>(10000, missing)).size() == 10000);
}

// put_episodes' ids line up with the lines that are not blank (empty, spaces and tabs,
// CR), whatever the first size of the ids buffer: too small costs one retry, written once.
void test_put_episodes_blank_lines() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  const std::string a = "0190f0a0-0000-7000-8000-00000000000a", b = "0190f0a0-0000-7000-8000-00000000000b";
  const std::string batch = "\n{\"id\":\"" + a + "\",\"primary\":\"apple\"}\r\n \t \n{\"primary\":\"generated\"}\n\r\n" +
                            "{\"id\":\"" + b + "\",\"primary\":\"banana\"}\n   \n";
  const std::size_t guesses[] = {mnem::detail::ids_guess(batch), 0, 16, 256};
  for (std::size_t guess : guesses) {
    const std::string u = "guess" + std::to_string(guess);
    auto ids = mnem::detail::put_episodes(s.get(), A, u, batch, guess);
    CHECK(ids.size() == 3);
    if (ids.size() != 3) continue;
    CHECK(ids[0] == a && ids[2] == b && ids[1] != a && ids[1] != b && ids[1].size() == 36);
    auto got = s.get_episodes(A, u, ids);
    CHECK(got.size() == 3 && got[0] && got[1] && got[2]);
    if (got.size() == 3 && got[1]) CHECK(got[1]->primary == "generated");
    mnem::NamespaceStats st = s.namespace_statistics(A, u);
    CHECK(st.records.keys == 3 && st.live == 3);  // the BUFFER_TOO_SMALL attempt wrote nothing
  }
  auto again = s.put_episodes(A, U, batch);
  CHECK(again.size() == 3 && again[0] == a && again[2] == b);
  CHECK(s.put_episodes(A, "blank", "\n \t\r\n").empty() && s.put_episodes(A, "blank", "").empty());
  // A bad line after blank lines, named by its number: tests/conformance (episodes_invalid).
}

// Raw listings, pages and refused queries: tests/conformance (list_namespaces). Here: the typed
// query and page, and all_namespaces' paging.
void test_namespaces() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  // Key order: byte length of app_name, its bytes, then likewise user_id.
  const std::vector<std::pair<mnem::Namespace, uint64_t>> want = {
      {{"", "z"}, 1}, {{"b", ""}, 2}, {{"b", "a"}, 1}, {{"b", "aa"}, 3}, {{"aa", ""}, 1}, {{"\xc3\xbc", "x"}, 1}};
  for (auto it = want.rbegin(); it != want.rend(); ++it) {
    std::string jsonl;
    for (uint64_t k = 0; k < it->second; ++k) jsonl += R"({"primary":"episode"})" "\n";
    s.put_episodes(it->first.app_name, it->first.user_id, jsonl);
  }
  auto same = [&](const std::vector<mnem::NamespaceInfo>& got) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < got.size(); ++i)
      if (got[i].ns != want[i].first || got[i].episodes != want[i].second) return false;
    return true;
  };
  mnem::NamespacePage one = s.list_namespaces(mnem::NamespaceQuery{});
  CHECK(same(one.namespaces) && !one.next_after);
  std::vector<mnem::NamespaceInfo> paged;
  mnem::NamespaceQuery q;
  q.limit = 4;
  int pages = 0;
  for (;;) {
    mnem::NamespacePage p = s.list_namespaces(q);
    ++pages;
    CHECK(p.namespaces.size() <= 4);
    paged.insert(paged.end(), p.namespaces.begin(), p.namespaces.end());
    if (!p.next_after) break;
    CHECK(*p.next_after == p.namespaces.back().ns);
    q.after = p.next_after;
  }
  CHECK(pages == 2 && same(paged));
  CHECK(same(s.all_namespaces(1)));
  q = mnem::NamespaceQuery{};
  q.after = mnem::Namespace{"b", "z"};  // absent: from the next in key order
  CHECK(s.list_namespaces(q).namespaces.at(0).ns == (mnem::Namespace{"b", "aa"}));
  q = mnem::NamespaceQuery{};
  q.limit = 1001;
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.list_namespaces(q));
}

// The raw report: tests/conformance (namespace_stats). Here: every field of the typed one.
void test_namespace_stats() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  auto ids = s.put_episodes(A, U, R"({"primary":"live one","embedding":[1,0,0]}
{"primary":"live two"}
{"primary":"to delete"}
{"primary":"expiring","ttl_ms":1})");
  s.delete_episodes(A, U, "\"" + ids[2] + "\"");
  s.add_session(A, U, "s1",
                event("e1", "user", "1", text_content("user", "one")) + "\n" +
                    event("e2", "user", "2", text_content("user", "two")));
  s.add_session(A, U, "s2", event("e3", "user", "3", text_content("user", "three")));
  CHECK(s.delete_memory(A, U, "e3") == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  mnem::NamespaceStats st = s.namespace_statistics(A, U);
  CHECK(st.records.keys == 7 && st.records.bytes > 0);
  CHECK(st.live == 4 && st.deleted == 2 && st.expired == 1);
  CHECK(st.buckets == 2 && st.bucket_events == 2 && st.memory_tombstones == 1);
  CHECK(st.dimension == std::optional<uint32_t>(3));
  CHECK(st.adk.keys > 0 && st.bm25_index.keys > 0 && st.adk_index.keys > 0 && st.vector_index.keys > 0);
  mnem::NamespaceStats none = s.namespace_statistics(A, "nobody");
  CHECK(none.records.keys == 0 && none.live == 0 && none.buckets == 0 && !none.dimension && none.approximate_file_bytes == 0);
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.namespace_stats(A, "bad\xff"));
}

// Export and import answers, refused imports, pages and cursors, and READ_ONLY: tests/conformance
// (export_import, export_page, persistence). Here: outputs larger than the first buffer, and
// export_to and export_all_to, which stream pages into an std::ostream.
void test_export_import() {
  mnem::Store src(":memory:", MNEM_OPEN_CREATE);
  fill(src, "alice");
  fill(src, "bob");
  const std::string dump = src.export_jsonl(A, "alice");
  const std::string all = src.export_all_jsonl();
  CHECK(contains(all, R"("bob")") && contains(all, R"("alice")") && !contains(dump, R"("bob")"));
  mnem::Store fresh(":memory:", MNEM_OPEN_CREATE);
  CHECK(fresh.import_jsonl(all) == 14);
  CHECK(fresh.export_all_jsonl() == all);

  // Larger than the first buffer.
  mnem::Store big(":memory:", MNEM_OPEN_CREATE);
  std::string jsonl;
  for (int i = 0; i < 300; ++i) jsonl += R"({"primary":"word)" + std::to_string(i) + R"( filler filler filler filler"})" "\n";
  big.put_episodes(A, U, jsonl);
  std::string bigdump = big.export_jsonl(A, U);
  CHECK(bigdump.size() > 4096 && contains(bigdump, "\"episodes\":300}\n"));
  mnem::Store big2(":memory:", MNEM_OPEN_CREATE);
  CHECK(big2.import_jsonl(bigdump) == 300);

  std::ostringstream streamed;
  CHECK(src.export_to(streamed, A, "alice", 300) == dump.size() && streamed.str() == dump);
  std::ostringstream streamed_all;
  CHECK(src.export_all_to(streamed_all, 300) == all.size() && streamed_all.str() == all);
  CHECK(src.export_all_to(streamed_all) == all.size());  // default page size: one page here
  std::ostringstream broken;
  broken.setstate(std::ios_base::badbit);
  bool threw = false;
  try {
    src.export_to(broken, A, "alice");
  } catch (const std::ios_base::failure&) {
    threw = true;
  }
  CHECK(threw);
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, src.export_jsonl("bad\xff", U));
}

// The raw report, backups and their refusals: tests/conformance (check_backup_compact). Here:
// the typed report, parsed from the library's and from a problem's JSON.
void test_check_report() {
  TempDir dir;
  mnem::Store s(dir.path, MNEM_OPEN_CREATE);
  fill(s, "alice");
  mnem::CheckReport r = s.check_report();
  CHECK(r.ok && !r.problem && r.episodes == 7 && r.episode_keys == 7 && r.meta_keys > 0 && r.adk_keys > 0 &&
        r.index_keys > 0 && r.bytes > 0);

  // A problem's status name maps to the status.
  auto bad = nlohmann::json::parse(
                 R"({"ok":false,"keys":{"meta":1,"episodes":0,"adk":0,"index":0},"bytes":9,"episodes":0,"problem":{"status":"CORRUPTION","message":"m"}})")
                 .get<mnem::CheckReport>();
  CHECK(!bad.ok && bad.problem && bad.problem->status == MNEM_STATUS_CORRUPTION && bad.problem->message == "m");
}

// A damaged table file: the check runs (no exception) and its verdict names the corruption.
void test_check_corruption() {
  TempDir dir;
  {
    mnem::Store s(dir.path, MNEM_OPEN_CREATE);
    std::string text;
    for (int i = 0; i < 50; ++i) text += "quinceflower ";
    s.put_episodes(A, U, R"({"primary":")" + text + R"("})");
  }  // closed: the text is in a table file (checked below)
  int damaged = 0;
  for (const std::string& p : files_with(dir.path, "quinceflower")) {
    if (p.size() < 4 || p.compare(p.size() - 4, 4, ".sst") != 0) continue;
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::size_t at = bytes.find("quinceflower");
    for (std::size_t i = at; i < at + 12; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
    f.seekp(0);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ++damaged;
  }
  CHECK(damaged > 0);
  mnem::Store s(dir.path, MNEM_OPEN_READ_ONLY);
  mnem::CheckReport r = s.check_report();
  CHECK(!r.ok && r.problem && r.problem->status == MNEM_STATUS_CORRUPTION && r.problem->status_name == "CORRUPTION" &&
        !r.problem->message.empty());
  CHECK(contains(s.check(), R"("status":"CORRUPTION")"));
}


std::vector<std::string> hit_ids(const std::vector<mnem::ScoredEpisode>& hits) {
  std::vector<std::string> ids;
  for (const auto& h : hits) ids.push_back(h.record.id);
  return ids;
}

// The hits of `all` that `keep` accepts, in order: what a filtered search must return.
std::vector<std::string> kept(const std::vector<mnem::ScoredEpisode>& all,
                              const std::function<bool(const mnem::ScoredEpisode&)>& keep) {
  std::vector<std::string> ids;
  for (const auto& h : all)
    if (keep(h)) ids.push_back(h.record.id);
  return ids;
}

// Hit filters choose among the unfiltered hits without changing a score; min_score cuts the
// unfiltered ranking; substring search takes the filters on records but not min_score.
void test_hit_filters() {
  mnem::Store s(":memory:");
  s.put_episodes(A, U, R"({"primary":"river stone","session_id":"s1","author":"alice","timestamp":1000,"embedding":[1,0,0]}
{"primary":"river river boat","session_id":"s1","author":"bob","timestamp":2000,"embedding":[0.9,0.1,0]}
{"primary":"river delta","session_id":"s2","author":"alice","timestamp":3000,"embedding":[0,1,0]}
{"primary":"river river river","session_id":"s2","author":"bob","timestamp":4000,"embedding":[0,0.9,0.1]}
{"primary":"a path by the river"})");
  mnem::KeywordQuery kq;
  kq.text = "river";
  kq.limit = 100;
  const auto all = s.keyword_search(A, U, kq);
  CHECK(all.size() == 5);
  if (all.size() != 5) return;

  mnem::KeywordQuery q = kq;
  q.session_id = "s1";
  auto got = s.keyword_search(A, U, q);
  CHECK(hit_ids(got) == kept(all, [](const auto& h) { return h.record.session_id == std::optional<std::string>("s1"); }));
  CHECK(got.size() == 2);
  for (const auto& h : got)
    for (const auto& a : all)
      if (a.record.id == h.record.id) CHECK(a.score == h.score);

  q = kq;
  q.author = "bob";
  q.since = 2000.0;
  q.until = 4000.0;  // exclusive: the 4000 one is out
  got = s.keyword_search(A, U, q);
  CHECK(got.size() == 1 && got[0].record.primary == "river river boat");

  // The episode without a timestamp is as old as its creation.
  q = kq;
  q.since = static_cast<double>(std::time(nullptr) - 3600);
  got = s.keyword_search(A, U, q);
  CHECK(got.size() == 1 && got[0].record.primary == "a path by the river");

  for (std::size_t i : {0, 1, 3}) {
    q = kq;
    q.min_score = all[i].score;
    const double min = all[i].score;
    CHECK(hit_ids(s.keyword_search(A, U, q)) == kept(all, [min](const auto& h) { return h.score >= min; }));
  }

  q = kq;
  q.since = 5.0;
  q.until = 4.0;
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.keyword_search(A, U, q));
  q.since = std::nan("");
  q.until.reset();
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.keyword_search(A, U, q));
  // Set fields only are sent.
  CHECK(nlohmann::json(kq) == nlohmann::json({{"text", "river"}, {"limit", 100}}));
  q = kq;
  q.author = "bob";
  q.min_score = 0.5;
  CHECK(nlohmann::json(q) == nlohmann::json({{"text", "river"}, {"limit", 100}, {"author", "bob"}, {"min_score", 0.5}}));

  mnem::SubstringQuery sq;
  sq.text = "RIVER";
  sq.author = "alice";
  sq.until = 3000.0;
  auto subs = s.substring_search(A, U, sq);
  CHECK(subs.size() == 1 && subs[0].primary == "river stone");
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.substring_search(A, U, R"({"text":"river","min_score":0})"));

  mnem::HybridQuery hq;
  hq.text = "river";
  hq.vector = {0.0f, 1.0f, 0.0f};
  hq.limit = 100;
  const auto fused = s.hybrid_search(A, U, hq);
  CHECK(fused.size() == 5);
  if (fused.size() != 5) return;
  hq.session_id = "s2";
  auto hs = s.hybrid_search(A, U, hq);
  CHECK(hs.size() == 2);
  for (const auto& h : hs) CHECK(h.record.session_id == std::optional<std::string>("s2"));
  hq.session_id.reset();
  hq.min_score = fused[1].score;
  hs = s.hybrid_search(A, U, hq);
  std::size_t n = 0;
  while (n < fused.size() && fused[n].score >= fused[1].score) ++n;
  CHECK(hs.size() == n);
  for (std::size_t i = 0; i < hs.size() && i < n; ++i) CHECK(hs[i].record.id == fused[i].record.id);

  // hybrid_search_text sends its options' filters too.
  CountingEmbedder emb({0.0f, 1.0f, 0.0f});
  mnem::HybridOptions o;
  o.limit = 100;
  o.author = "alice";
  o.until = 2500.0;
  auto text_hits = nlohmann::json::parse(s.hybrid_search_text(A, U, "river", emb, o))["results"];
  CHECK(emb.calls == 1 && text_hits.size() == 1 && text_hits[0]["record"]["primary"] == "river stone");
}

std::vector<std::string> recall_ids(const mnem::Store& s, const nlohmann::json& q) {
  std::vector<std::string> ids;
  const nlohmann::json r = nlohmann::json::parse(s.recall(A, U, q.dump()));
  for (const auto& m : r.at("memories")) ids.push_back(m.at("id"));
  return ids;
}

// Recall's modes (adk is search_memory's answer) and filters; a namespace holds one model's
// vectors, and a query vector from another is refused.
void test_recall_modes_and_models() {
  mnem::Store s(":memory:");
  s.add_session(A, U, "s1",
                event("e1", "user", "1000", text_content("user", "the river is cold")) + "\n" +
                    event("e2", "model", "1001", text_content("model", "a river boat trip")) + "\n" +
                    event("e3", "user", "1002", text_content("user", "river fishing with bob")));
  s.add_session(A, U, "s2",
                event("e4", "user", "2000", text_content("user", "river river everywhere")) + "\n" +
                    event("e5", "model", "2001", text_content("model", "mountains, not rivers")));
  const std::vector<std::string> search = memory_ids(s, U, "river");
  CHECK(search.size() == 4);
  CHECK(recall_ids(s, {{"text", "river"}, {"mode", "adk"}}) == search);
  CHECK(recall_ids(s, {{"text", "river"}}) == search);  // adk_vectors without vectors
  std::vector<std::string> s1;
  for (const auto& id : search)
    if (id != "e4") s1.push_back(id);
  CHECK(recall_ids(s, {{"text", "river"}, {"mode", "adk"}, {"session_id", "s1"}}) == s1);
  auto bm25 = recall_ids(s, {{"text", "river"}, {"mode", "bm25"}});
  CHECK(bm25.size() == 4 && bm25[0] == "e4");
  CHECK(recall_ids(s, {{"text", "river"}, {"mode", "bm25"}, {"author", "model"}}) == std::vector<std::string>{"e2"});
  auto hy = recall_ids(s, {{"text", "river"}, {"mode", "hybrid"}, {"since", 1001}, {"until", 2000}});
  std::sort(hy.begin(), hy.end());
  CHECK((hy == std::vector<std::string>{"e2", "e3"}));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.recall(A, U, R"({"text":"river","mode":"nearest"})"));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.recall(A, U, R"({"text":"river","mode":"adk","min_score":0})"));
  CHECK(recall_ids(s, {{"text", "river"}, {"mode", "bm25"}, {"limit", 100}}).size() == 4);
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.recall(A, U, R"({"text":"river","limit":101})"));

  const std::string N = "models";
  s.put_episodes(A, N, R"({"primary":"green tea","embedding":[1,0],"embedding_model":"model-a"}
{"primary":"black coffee","embedding":[0,1],"embedding_model":"model-a"})");
  mnem::NamespaceStats st = s.namespace_statistics(A, N);
  CHECK(st.dimension == std::optional<uint32_t>(2) && st.embedding_model == std::optional<std::string>("model-a"));
  CHECK(!s.namespace_statistics(A, U).embedding_model);
  mnem::EpisodeInput other;
  other.primary = "water";
  other.embedding = {1.0f, 1.0f};
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.put_episodes(A, N, {other}));  // unnamed
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT,
               s.put_episodes(A, N, R"({"primary":"water","embedding":[1,1],"embedding_model":"model-b"})"));
  mnem::HybridQuery hq;
  hq.text = "tea";
  hq.vector = {1.0f, 0.0f};
  hq.semantic_weight = 1.0;
  hq.vector_model = "model-a";
  auto hits = s.hybrid_search(A, N, hq);
  CHECK(!hits.empty() && hits[0].record.primary == "green tea");
  hq.vector_model = "model-b";
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.hybrid_search(A, N, hq));
  hq.vector_model.reset();
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT, s.hybrid_search(A, N, hq));
  CHECK_THROWS(MNEM_STATUS_INVALID_ARGUMENT,
               s.recall(A, N, R"({"text":"tea","vector":[1,0],"vector_model":"model-b"})"));
  s.recall(A, N, R"({"text":"tea","vector":[1,0],"vector_model":"model-a"})");
}


}  // namespace

int main() {
  // A deadlock in the library must fail the run, not hang it.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(120));
    std::cerr << "timeout: the tests did not finish in 120 s (deadlock?)\n";
    std::cout << passed << " passed, " << failed + 1 << " failed" << std::endl;
    std::_Exit(2);
  }).detach();
  run("basics", test_basics);
  run("move", test_move);
  run("open_errors", test_open_errors);
  run("bad_input", test_bad_input);
  run("embedder", test_embedder);
  run("named_embedder", test_named_embedder);
  run("builtin_embedder", test_builtin_embedder);
  run("buffer_growth", test_buffer_growth);
  run("threads", test_threads);
  run("typed", test_typed);
  run("hit_filters", test_hit_filters);
  run("recall_modes_and_models", test_recall_modes_and_models);
  run("delete_session", test_delete_session);
  run("forget", test_forget);
  run("get_episodes", test_get_episodes);
  run("put_episodes_blank_lines", test_put_episodes_blank_lines);
  run("namespaces", test_namespaces);
  run("namespace_stats", test_namespace_stats);
  run("export_import", test_export_import);
  run("check_report", test_check_report);
  run("check_corruption", test_check_corruption);
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
