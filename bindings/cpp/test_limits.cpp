// The one meaning of a limit (docs/WIRE.md) in mnem.hpp's typed queries: an empty optional
// is absent, the library's default (10 results, 100 namespaces); 0 returns no results where
// the query accepts it. Prints failures, then "N passed, M failed".
#include "mnem.hpp"

#include <iostream>
#include <string>
#include <vector>

namespace {

int passed = 0;
int failed = 0;

void check(bool ok, const char* expr, int line) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::cerr << __FILE__ << ":" << line << ": CHECK failed: " << expr << "\n";
  }
}
#define CHECK(x) check(static_cast<bool>(x), #x, __LINE__)

constexpr std::size_t kDefault = 10;
const char* const A = "app";
const char* const U = "limits";

struct CountingEmbedder : mnem::Embedder {
  int calls = 0;
  std::vector<float> embed(std::string_view) override {
    ++calls;
    return {1.0f, 0.0f};
  }
};

std::size_t records(const std::string& json) {
  std::size_t n = 0;
  for (std::size_t at = json.find("\"record\""); at != std::string::npos; at = json.find("\"record\"", at + 1)) ++n;
  return n;
}

void test_limits() {
  mnem::Store s(":memory:", MNEM_OPEN_CREATE);
  std::vector<mnem::EpisodeInput> in;
  for (std::size_t i = 0; i < kDefault + 5; ++i) {
    mnem::EpisodeInput e;
    e.primary = "apple " + std::to_string(i);
    e.embedding = {1.0f, static_cast<float>(i)};
    in.push_back(e);
  }
  s.put_episodes(A, U, in);

  // Absent: the default.
  mnem::KeywordQuery kq;
  kq.text = "apple";
  CHECK(s.keyword_search(A, U, kq).size() == kDefault);
  mnem::SubstringQuery sq;
  sq.text = "apple";
  CHECK(s.substring_search(A, U, sq).size() == kDefault);
  mnem::LexicalPageQuery lq;
  lq.text = "apple";
  CHECK(s.lexical_page(A, U, lq).hits.size() == kDefault);
  mnem::HybridQuery hq;
  hq.text = "apple";
  CHECK(s.hybrid_search(A, U, hq).size() == kDefault);
  hq.vector = {1.0f, 0.0f};
  CHECK(s.hybrid_search(A, U, hq).size() == kDefault);
  CountingEmbedder emb;
  CHECK(records(s.hybrid_search_text(A, U, "apple", emb)) == kDefault);
  CHECK(emb.calls == 1);

  // Zero: no results, and no embedding.
  kq.limit = 0;
  CHECK(s.keyword_search(A, U, kq).empty());
  sq.limit = 0;
  CHECK(s.substring_search(A, U, sq).empty());
  hq.limit = 0;
  CHECK(s.hybrid_search(A, U, hq).empty());
  mnem::HybridOptions o;
  o.limit = 0;
  CHECK(s.hybrid_search_text(A, U, "apple", emb, o) == R"({"results":[]})");
  CHECK(emb.calls == 1);

  // Pages start at 1: a zero page is refused.
  lq.limit = 0;
  bool refused = false;
  try {
    s.lexical_page(A, U, lq);
  } catch (const mnem::Error& e) {
    refused = e.status() == MNEM_STATUS_INVALID_ARGUMENT;
  }
  CHECK(refused);

  for (int i = 0; i < 100; ++i) {
    mnem::EpisodeInput e;
    e.primary = "x";
    s.put_episodes("ns", "u" + std::to_string(1000 + i), {e});
  }
  mnem::NamespacePage page = s.list_namespaces(mnem::NamespaceQuery{});
  CHECK(page.namespaces.size() == 100 && page.next_after.has_value());
  mnem::NamespaceQuery zero;
  zero.limit = 0;
  refused = false;
  try {
    s.list_namespaces(zero);
  } catch (const mnem::Error& e) {
    refused = e.status() == MNEM_STATUS_INVALID_ARGUMENT;
  }
  CHECK(refused);
}

}  // namespace

int main() {
  try {
    test_limits();
  } catch (const std::exception& e) {
    ++failed;
    std::cerr << "unexpected exception: " << e.what() << "\n";
  }
  std::cout << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? 0 : 1;
}
