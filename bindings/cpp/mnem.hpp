// mnem.hpp: header-only C++17 RAII wrapper over the mnem C ABI (mnem.h), installed beside it.
//
//   mnem::Store store(":memory:", MNEM_OPEN_CREATE);
//   mnem::EpisodeInput note;
//   note.primary = "hello world";
//   store.put_episodes("app", "user", {note});
//   for (const mnem::ScoredEpisode& hit : store.keyword_search("app", "user", mnem::KeywordQuery{"hello"}))
//     std::cout << hit.record.primary << " " << hit.score << "\n";
//   std::string json = store.keyword_search("app", "user", R"({"text":"hello"})");  // raw
//
// Every call comes in two forms: typed (queries and results are the structs below, parsed
// with nlohmann/json) and raw (the query is JSON text and the result is the library's JSON,
// unparsed, byte for byte; ADK `content` is byte-exact only there); export and import take
// and return the JSON Lines text itself. Every failed call throws
// mnem::Error. One Store may be used from many threads at once (the C handle is
// thread-safe); as with any C++ object, it must not be destroyed, closed or moved while
// another thread is using it.
//
// Needs nlohmann/json 3.3 or later (get_to) (Debian: nlohmann-json3-dev); CMake's mnem::mnem target
// brings it along when CMake finds it.
#ifndef MNEM_HPP
#define MNEM_HPP

extern "C" {
#include "mnem.h"
}

#if defined(__has_include)
#if !__has_include(<nlohmann/json.hpp>)
#error "mnem.hpp needs nlohmann/json (Debian: apt-get install nlohmann-json3-dev)"
#endif
#endif
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace mnem {

/// A failed mnem call: the mnem_status, its name and the library's message.
class Error : public std::runtime_error {
 public:
  Error(mnem_status status, std::string op, std::string message)
      : std::runtime_error(format(status, op, message)),
        status_(status),
        op_(std::move(op)),
        message_(std::move(message)) {}

  mnem_status status() const noexcept { return status_; }
  /// "INVALID_ARGUMENT", "NOT_FOUND", ... (static storage, from mnem_status_name).
  const char* status_name() const noexcept { return mnem_status_name(status_); }
  /// The C function that failed, without its "mnem_" prefix.
  const std::string& op() const noexcept { return op_; }
  /// The library's message alone (what() also carries op and status).
  const std::string& message() const noexcept { return message_; }

 private:
  static std::string format(mnem_status status, const std::string& op, const std::string& message) {
    std::string s = "mnem_" + op + ": " + mnem_status_name(status);
    if (!message.empty()) s += ": " + message;
    return s;
  }

  mnem_status status_;
  std::string op_;
  std::string message_;
};

inline uint32_t abi_version() noexcept { return mnem_abi_version(); }
inline const char* version() noexcept { return mnem_version(); }
/// Any integer: "UNKNOWN" for one that is not a status. (In C++ `mnem_status` is an enum.)
inline const char* status_name(int32_t s) noexcept { return mnem_status_name(s); }

/// Turns query text into a vector in the space of the stored embeddings.
class Embedder {
 public:
  virtual ~Embedder() = default;
  virtual std::vector<float> embed(std::string_view text) = 0;
};

/// A text-to-vector function: what mnem_set_embedder, mnem_set_named_embedder and
/// mnem_hybrid_search_with call.
using EmbedFunction = std::function<std::vector<float>(std::string_view)>;

/// Options of Store::hybrid_search_text besides the text.
struct HybridOptions {
  std::optional<uint64_t> limit;           // library default (10) when empty; 0: no results
  std::optional<double> semantic_weight;   // library default (0.5) when empty
  std::optional<uint64_t> candidates;      // candidate multiplier; library default when empty
  std::optional<std::string> episode_type;
  std::optional<std::string> tag;
  // The model of the embedder of the call (the query's `vector_model`): it must be the model
  // the namespace's vectors name; empty: an unnamed embedder, refused where they name one.
  std::optional<std::string> vector_model;
  // Hit filters, as HybridQuery's.
  std::optional<std::string> session_id;
  std::optional<std::string> author;
  std::optional<double> since;
  std::optional<double> until;
  std::optional<double> min_score;
};

namespace detail {

inline mnem_str view(std::string_view s) noexcept {
  // An empty view must not pass a dangling pointer with len 0 as anything but "empty".
  return mnem_str{s.empty() ? nullptr : reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline std::string message_of(const mnem_error& e) {
  return std::string(e.message, strnlen(e.message, MNEM_ERROR_MESSAGE_CAP));
}

inline void check(const char* op, mnem_status rc, const mnem_error& e) {
  if (rc != MNEM_STATUS_OK) throw Error(rc, op, message_of(e));
}

/// Calls `call(out, cap, &len, &err)`, growing the buffer on BUFFER_TOO_SMALL.
/// Loops because a concurrent write can grow the result between attempts.
template <class Call>
std::string read(const char* op, Call&& call, std::size_t initial = 4096) {
  std::string out(initial, '\0');
  for (;;) {
    std::size_t len = 0;
    mnem_error err{};
    uint8_t* ptr = out.empty() ? nullptr : reinterpret_cast<uint8_t*>(&out[0]);
    mnem_status rc = call(ptr, out.size(), &len, &err);
    if (rc == MNEM_STATUS_BUFFER_TOO_SMALL) {
      if (len <= out.size())
        throw Error(MNEM_STATUS_INTERNAL, op, "BUFFER_TOO_SMALL without a larger out_len");
      out.assign(len + len / 8, '\0');
      continue;
    }
    check(op, rc, err);
    if (len > out.size()) throw Error(MNEM_STATUS_INTERNAL, op, "out_len exceeds out_cap");
    out.resize(len);
    return out;
  }
}

inline std::string uuid_string(const uint8_t* b) {
  static const char hex[] = "0123456789abcdef";
  std::string s;
  s.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += hex[b[i] >> 4];
    s += hex[b[i] & 15];
  }
  return s;
}

/// The mnem_embed_fn of an EmbedFunction (`user_data` points at it). An exception becomes
/// MNEM_STATUS_EMBEDDER_FAILED with its what(), never an unwind into C. The vector of a
/// too-small buffer is computed again on the retry (models are deterministic).
inline int32_t embed_trampoline(void* user_data, mnem_str text, float* out, std::size_t out_cap,
                                std::size_t* out_len, mnem_error* err) noexcept {
  try {
    const auto& f = *static_cast<const EmbedFunction*>(user_data);
    std::vector<float> v = f(std::string_view(reinterpret_cast<const char*>(text.ptr), text.len));
    *out_len = v.size();
    if (v.size() > out_cap) return MNEM_STATUS_BUFFER_TOO_SMALL;
    if (!v.empty()) std::memcpy(out, v.data(), v.size() * sizeof(float));
    return MNEM_STATUS_OK;
  } catch (const std::exception& e) {
    std::snprintf(err->message, MNEM_ERROR_MESSAGE_CAP, "%s", e.what());
  } catch (...) {
    std::snprintf(err->message, MNEM_ERROR_MESSAGE_CAP, "%s", "unknown exception");
  }
  return MNEM_STATUS_EMBEDDER_FAILED;
}

/// The first size of put_episodes' ids buffer: 16 bytes per line, blank or not, never
/// less than the library needs (it skips blank lines).
inline std::size_t ids_guess(std::string_view jsonl) {
  return 16 * (static_cast<std::size_t>(std::count(jsonl.begin(), jsonl.end(), '\n')) + 1);
}

/// mnem_put_episodes_v2 with an ids buffer of `cap` bytes first, then, on BUFFER_TOO_SMALL
/// (which writes nothing), once more at the size it reports: the size depends on the batch
/// alone, so that fits. Returns the ids in line order.
inline std::vector<std::string> put_episodes(mnem_store* h, std::string_view app, std::string_view user,
                                             std::string_view jsonl, std::size_t cap) {
  std::vector<uint8_t> raw;
  std::size_t len = 0;
  mnem_error err{};
  mnem_status rc = MNEM_STATUS_OK;
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Never a NULL buffer, even for 0 bytes: NULL would mean the ids are not wanted.
    raw.assign(cap == 0 ? 1 : cap, 0);
    err = mnem_error{};
    rc = mnem_put_episodes_v2(h, view(app), view(user), view(jsonl), raw.data(), cap, &len, &err);
    if (rc != MNEM_STATUS_BUFFER_TOO_SMALL || len <= cap) break;
    cap = len;
  }
  check("put_episodes", rc, err);
  if (len > cap || len % 16 != 0)
    throw Error(MNEM_STATUS_INTERNAL, "put_episodes", "out_ids_len is not 16 bytes per id within out_ids_cap");
  std::vector<std::string> ids;
  ids.reserve(len / 16);
  for (std::size_t i = 0; i < len; i += 16) ids.push_back(uuid_string(&raw[i]));
  return ids;
}

/// Appends s as a JSON string. Bytes >= 0x80 pass through; the library
/// validates UTF-8 and rejects (never repairs) bad input.
inline void append_json_string(std::string& out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

/// Appends a finite number in shortest round-trip form.
template <class T>
void append_number(std::string& out, T v, const char* op) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) throw Error(MNEM_STATUS_INVALID_ARGUMENT, op, "number is not finite");
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  if (r.ec != std::errc()) throw Error(MNEM_STATUS_INTERNAL, op, "cannot format number");
  out.append(buf, r.ptr);
}

}  // namespace detail

// ---- Typed queries and results (the JSON shapes in mnem.h) ----

/// A stored episode, as every retrieval returns it. Absent optionals are empty;
/// `metadata` and `content` are JSON values (null when absent).
struct Episode {
  std::string id;
  uint64_t revision = 0;
  std::string episode_type;
  std::vector<std::string> tags;
  std::string primary, secondary, context;
  nlohmann::json metadata;
  std::optional<std::string> author, session_id, event_id;
  std::optional<double> timestamp;  // seconds
  int64_t created_at_ms = 0, updated_at_ms = 0;
  std::optional<int64_t> expires_at_ms;
  nlohmann::json content;
};

/// An episode to write with Store::put_episodes. Empty fields are left out, so the library
/// applies its defaults (a new UUIDv7 id, type "episode", no expiry).
struct EpisodeInput {
  std::string id{};
  std::string episode_type{};
  std::vector<std::string> tags{};
  std::string primary{}, secondary{}, context{};
  nlohmann::json metadata{};  // null, or an object
  std::string author{}, session_id{}, event_id{};
  std::optional<double> timestamp{};
  std::optional<int64_t> expires_at_ms{};
  std::optional<int64_t> ttl_ms{};  // instead of expires_at_ms
  nlohmann::json content{};  // any JSON; null = none
  std::vector<float> embedding{};
};

/// A BM25 hit: the record and its raw BM25 score.
struct ScoredEpisode {
  Episode record;
  double score = 0;
};

/// A fused hybrid hit; keyword_score and semantic_score are the channels' reciprocal-rank
/// contributions, not raw BM25 or similarity.
struct HybridHit {
  Episode record;
  double score = 0, keyword_score = 0, semantic_score = 0;
};

/// ADK's MemoryEntry (Store::search_memory). `content` is parsed: for the ingested bytes
/// exactly, use the raw Store::search.
struct MemoryEntry {
  std::string id;
  nlohmann::json content;
  std::optional<std::string> author;
  std::optional<std::string> timestamp;  // local-time ISO 8601, as ADK formats it
  nlohmann::json custom_metadata;
};

/// One page of a bounded lexical scan; scores are local to the page.
struct LexicalPage {
  std::vector<ScoredEpisode> hits;
  uint64_t matched_records = 0, corpus_records = 0, scanned_records = 0, scanned_bytes = 0;
  std::optional<std::string> next_after;  // continue with LexicalPageQuery::after
  bool exhaustive = false;
};

/// One cache's use (mnem_stats).
struct CacheStats {
  uint64_t budget_bytes = 0, used_bytes = 0, entries = 0, hits = 0, misses = 0, evictions = 0;
  double hit_rate = 0;
};

/// The store's statistics (mnem_stats in mnem.h).
struct Stats {
  uint32_t format = 0, opened_format = 0;
  uint64_t indexes_built = 0, cache_bytes = 0;
  /// Writes whose index postings a writer that stopped without closing left in its journal;
  /// this open moved them into the index.
  uint64_t journal_replayed = 0;
  CacheStats graph_cache, block_cache;
};

/// BM25 over the namespace (mnem_keyword_search). Empty optionals take the library's defaults.
/// session_id, author, since, until and min_score choose which hits are returned without
/// changing any score.
struct KeywordQuery {
  std::string text{};
  std::optional<uint64_t> limit{};  // default 10; 0 returns no results
  std::optional<std::string> episode_type{};
  std::optional<std::string> tag{};
  std::optional<std::string> session_id{};  // the record's session_id equals it
  std::optional<std::string> author{};      // the record's author equals it
  // The record's time (its timestamp, else its creation), seconds since the Unix epoch:
  // since inclusive, until exclusive.
  std::optional<double> since{};
  std::optional<double> until{};
  std::optional<double> min_score{};  // the hit's BM25 score is at least this
};

/// Case-insensitive substring search (mnem_substring_search); KeywordQuery's filters but
/// min_score (substring hits have no score).
struct SubstringQuery {
  std::string text{};
  std::optional<uint64_t> limit{};  // default 10; 0 returns no results
  std::optional<std::string> episode_type{};
  std::optional<std::string> tag{};
  std::optional<std::string> session_id{};
  std::optional<std::string> author{};
  std::optional<double> since{};
  std::optional<double> until{};
};

/// One bounded BM25 page (mnem_lexical_page).
struct LexicalPageQuery {
  std::string text{};
  std::optional<uint64_t> limit{};     // 1-100, default 10
  std::optional<std::string> after{};  // a previous page's next_after
  std::optional<std::string> episode_type{};
  std::optional<std::string> tag{};
  std::optional<uint64_t> scan_limit{};
  std::optional<uint64_t> scan_bytes_limit{};
};

/// Hybrid search (mnem_hybrid_search): `vector` empty = lexical only.
struct HybridQuery {
  std::string text{};
  std::vector<float> vector{};
  std::optional<uint64_t> limit{};  // default 10; 0 returns no results
  std::optional<double> semantic_weight{};
  std::optional<uint64_t> candidates{};
  std::optional<std::string> episode_type{};
  std::optional<std::string> tag{};
  // The model that made `vector`: it must be the model of the namespace's vectors (empty
  // matches vectors stored without a model name).
  std::optional<std::string> vector_model{};
  // Hit filters, as KeywordQuery's; min_score applies to the fused score.
  std::optional<std::string> session_id{};
  std::optional<std::string> author{};
  std::optional<double> since{};
  std::optional<double> until{};
  std::optional<double> min_score{};
};

/// One namespace: the pair (app_name, user_id).
struct Namespace {
  std::string app_name{};
  std::string user_id{};
  bool operator==(const Namespace& o) const { return app_name == o.app_name && user_id == o.user_id; }
  bool operator!=(const Namespace& o) const { return !(*this == o); }
};

/// One entry of a namespace page: `episodes` counts the episodes not deleted (expired ones
/// count until a later write purges them), read from a counter.
struct NamespaceInfo {
  Namespace ns;
  uint64_t episodes = 0;
};

/// One page of namespaces (mnem_list_namespaces): empty optionals take the defaults.
struct NamespaceQuery {
  std::optional<uint64_t> limit{};   // 1-1000, default 100
  std::optional<Namespace> after{};  // a previous page's next_after
};

/// Namespaces in key order (byte length of app_name, its bytes, then likewise user_id).
struct NamespacePage {
  std::vector<NamespaceInfo> namespaces;
  std::optional<Namespace> next_after;  // empty on the last page
};

/// A number of keys and their bytes (key + value).
struct KeyCount {
  uint64_t keys = 0, bytes = 0;
};

/// One namespace's statistics (mnem_namespace_stats); an unknown namespace has zeros.
struct NamespaceStats {
  KeyCount records;  // episode records, tombstones included
  uint64_t live = 0, deleted = 0, expired = 0;
  uint64_t buckets = 0, bucket_events = 0, memory_tombstones = 0;  // ADK sessions, their events, delete_memory ids
  KeyCount adk;
  KeyCount bm25_index, adk_index, vector_index;
  std::optional<uint32_t> dimension;  // empty before the first vector
  std::optional<std::string> embedding_model;  // the model of its vectors; empty when none was named
  uint64_t approximate_file_bytes = 0;
};

/// The first problem an integrity check found.
struct CheckProblem {
  mnem_status status = MNEM_STATUS_INTERNAL;  // from the name; INTERNAL for one this header does not know
  std::string status_name;                    // "CORRUPTION", "IO", ...
  std::string message;
};

/// The verdict of Store::check_report: the counts read up to the problem, if any.
struct CheckReport {
  bool ok = false;
  uint64_t meta_keys = 0, episode_keys = 0, adk_keys = 0, index_keys = 0;
  uint64_t bytes = 0, episodes = 0;
  std::optional<CheckProblem> problem;
};

namespace detail {

template <class T>
std::optional<T> optional_field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

inline nlohmann::json field_or_null(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nlohmann::json() : *it;
}

template <class T>
void set_if(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

inline void set_if(nlohmann::json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

/// Sets a number the library needs finite (JSON has no NaN: it would be sent as null).
inline void set_finite(nlohmann::json& j, const char* key, const std::optional<double>& v, const char* op) {
  if (!v) return;
  if (!std::isfinite(*v)) throw Error(MNEM_STATUS_INVALID_ARGUMENT, op, std::string(key) + " is not finite");
  j[key] = *v;
}

/// The hit filters on records (session_id, author, since, until) of a query.
template <class Q>
void set_hit_filters(nlohmann::json& j, const Q& q, const char* op) {
  set_if(j, "session_id", q.session_id);
  set_if(j, "author", q.author);
  set_finite(j, "since", q.since, op);
  set_finite(j, "until", q.until, op);
}

inline nlohmann::json finite_array(const std::vector<float>& v, const char* op) {
  nlohmann::json a = nlohmann::json::array();
  for (float x : v) {
    if (!std::isfinite(x)) throw Error(MNEM_STATUS_INVALID_ARGUMENT, op, "a vector component is not finite");
    a.push_back(x);
  }
  return a;
}

/// Serializes a query or episode; invalid UTF-8 is INVALID_ARGUMENT, as the library says.
inline std::string dump(const nlohmann::json& j, const char* op) {
  try {
    return j.dump();
  } catch (const nlohmann::json::exception& e) {
    throw Error(MNEM_STATUS_INVALID_ARGUMENT, op, e.what());
  }
}

/// Runs f, which decodes the library's output; a mismatch is a bug on one side: INTERNAL.
template <class F>
auto decode(const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const nlohmann::json::exception& e) {
    throw Error(MNEM_STATUS_INTERNAL, op, std::string("decoding library output: ") + e.what());
  }
}

template <class T>
T parse(const char* op, const std::string& raw) {
  return decode(op, [&] { return nlohmann::json::parse(raw).get<T>(); });
}

/// The "results" array of a search's output.
template <class T>
std::vector<T> results(const char* op, const std::string& raw) {
  return decode(op, [&] { return nlohmann::json::parse(raw).at("results").get<std::vector<T>>(); });
}

}  // namespace detail

inline void from_json(const nlohmann::json& j, Episode& e) {
  j.at("id").get_to(e.id);
  j.at("revision").get_to(e.revision);
  j.at("episode_type").get_to(e.episode_type);
  j.at("tags").get_to(e.tags);
  j.at("primary").get_to(e.primary);
  j.at("secondary").get_to(e.secondary);
  j.at("context").get_to(e.context);
  e.metadata = detail::field_or_null(j, "metadata");
  e.author = detail::optional_field<std::string>(j, "author");
  e.session_id = detail::optional_field<std::string>(j, "session_id");
  e.event_id = detail::optional_field<std::string>(j, "event_id");
  e.timestamp = detail::optional_field<double>(j, "timestamp");
  j.at("created_at_ms").get_to(e.created_at_ms);
  j.at("updated_at_ms").get_to(e.updated_at_ms);
  e.expires_at_ms = detail::optional_field<int64_t>(j, "expires_at_ms");
  e.content = detail::field_or_null(j, "content");
}

inline void from_json(const nlohmann::json& j, ScoredEpisode& h) {
  j.at("record").get_to(h.record);
  j.at("score").get_to(h.score);
}

inline void from_json(const nlohmann::json& j, HybridHit& h) {
  j.at("record").get_to(h.record);
  j.at("score").get_to(h.score);
  j.at("keyword_score").get_to(h.keyword_score);
  j.at("semantic_score").get_to(h.semantic_score);
}

inline void from_json(const nlohmann::json& j, MemoryEntry& m) {
  j.at("id").get_to(m.id);
  m.content = detail::field_or_null(j, "content");
  m.author = detail::optional_field<std::string>(j, "author");
  m.timestamp = detail::optional_field<std::string>(j, "timestamp");
  m.custom_metadata = detail::field_or_null(j, "custom_metadata");
}

inline void from_json(const nlohmann::json& j, LexicalPage& p) {
  j.at("hits").get_to(p.hits);
  j.at("matched_records").get_to(p.matched_records);
  j.at("corpus_records").get_to(p.corpus_records);
  j.at("scanned_records").get_to(p.scanned_records);
  j.at("scanned_bytes").get_to(p.scanned_bytes);
  p.next_after = detail::optional_field<std::string>(j, "next_after");
  j.at("exhaustive").get_to(p.exhaustive);
}

inline void from_json(const nlohmann::json& j, CacheStats& c) {
  j.at("budget_bytes").get_to(c.budget_bytes);
  j.at("used_bytes").get_to(c.used_bytes);
  j.at("entries").get_to(c.entries);
  j.at("hits").get_to(c.hits);
  j.at("misses").get_to(c.misses);
  j.at("hit_rate").get_to(c.hit_rate);
  j.at("evictions").get_to(c.evictions);
}

inline void from_json(const nlohmann::json& j, Stats& s) {
  j.at("format").get_to(s.format);
  j.at("opened_format").get_to(s.opened_format);
  j.at("indexes_built").get_to(s.indexes_built);
  j.at("journal_replayed").get_to(s.journal_replayed);
  j.at("cache_bytes").get_to(s.cache_bytes);
  j.at("graph_cache").get_to(s.graph_cache);
  j.at("block_cache").get_to(s.block_cache);
}

inline void from_json(const nlohmann::json& j, Namespace& n) {
  j.at("app_name").get_to(n.app_name);
  j.at("user_id").get_to(n.user_id);
}

inline void to_json(nlohmann::json& j, const Namespace& n) {
  j = {{"app_name", n.app_name}, {"user_id", n.user_id}};
}

inline void from_json(const nlohmann::json& j, NamespaceInfo& n) {
  j.get_to(n.ns);
  j.at("episodes").get_to(n.episodes);
}

inline void from_json(const nlohmann::json& j, NamespacePage& p) {
  j.at("namespaces").get_to(p.namespaces);
  p.next_after = detail::optional_field<Namespace>(j, "next_after");
}

inline void to_json(nlohmann::json& j, const NamespaceQuery& q) {
  nlohmann::json o = nlohmann::json::object();
  detail::set_if(o, "limit", q.limit);
  if (q.after) o["after"] = *q.after;
  j = std::move(o);
}

inline void from_json(const nlohmann::json& j, KeyCount& c) {
  j.at("keys").get_to(c.keys);
  j.at("bytes").get_to(c.bytes);
}

inline void from_json(const nlohmann::json& j, NamespaceStats& s) {
  j.at("records").get_to(s.records);
  j.at("live").get_to(s.live);
  j.at("deleted").get_to(s.deleted);
  j.at("expired").get_to(s.expired);
  j.at("buckets").get_to(s.buckets);
  j.at("bucket_events").get_to(s.bucket_events);
  j.at("memory_tombstones").get_to(s.memory_tombstones);
  j.at("adk").get_to(s.adk);
  const nlohmann::json& index = j.at("index");
  index.at("bm25").get_to(s.bm25_index);
  index.at("adk").get_to(s.adk_index);
  index.at("vector").get_to(s.vector_index);
  s.dimension = detail::optional_field<uint32_t>(j, "dimension");
  s.embedding_model = detail::optional_field<std::string>(j, "embedding_model");
  j.at("approximate_file_bytes").get_to(s.approximate_file_bytes);
}

inline void from_json(const nlohmann::json& j, CheckProblem& p) {
  j.at("status").get_to(p.status_name);
  j.at("message").get_to(p.message);
  p.status = MNEM_STATUS_INTERNAL;
  for (mnem_status s : {MNEM_STATUS_INVALID_ARGUMENT, MNEM_STATUS_BUFFER_TOO_SMALL, MNEM_STATUS_NOT_FOUND,
                        MNEM_STATUS_BUSY, MNEM_STATUS_READ_ONLY, MNEM_STATUS_IO, MNEM_STATUS_CORRUPTION,
                        MNEM_STATUS_INCOMPATIBLE, MNEM_STATUS_EMBEDDER_FAILED, MNEM_STATUS_INTERNAL})
    if (p.status_name == mnem_status_name(s)) p.status = s;
}

inline void from_json(const nlohmann::json& j, CheckReport& r) {
  j.at("ok").get_to(r.ok);
  const nlohmann::json& keys = j.at("keys");
  keys.at("meta").get_to(r.meta_keys);
  keys.at("episodes").get_to(r.episode_keys);
  keys.at("adk").get_to(r.adk_keys);
  keys.at("index").get_to(r.index_keys);
  j.at("bytes").get_to(r.bytes);
  j.at("episodes").get_to(r.episodes);
  r.problem = detail::optional_field<CheckProblem>(j, "problem");
}

inline void to_json(nlohmann::json& j, const EpisodeInput& e) {
  // Built in a local and moved into j at the end: a throw leaves j untouched (a throw
  // while nlohmann::json(e) constructs j would leak what j already held).
  nlohmann::json o = nlohmann::json::object();
  detail::set_if(o, "id", e.id);
  detail::set_if(o, "episode_type", e.episode_type);
  if (!e.tags.empty()) o["tags"] = e.tags;
  detail::set_if(o, "primary", e.primary);
  detail::set_if(o, "secondary", e.secondary);
  detail::set_if(o, "context", e.context);
  if (!e.metadata.is_null()) o["metadata"] = e.metadata;
  detail::set_if(o, "author", e.author);
  detail::set_if(o, "session_id", e.session_id);
  detail::set_if(o, "event_id", e.event_id);
  if (e.timestamp) {
    if (!std::isfinite(*e.timestamp)) throw Error(MNEM_STATUS_INVALID_ARGUMENT, "put_episodes", "timestamp is not finite");
    o["timestamp"] = *e.timestamp;
  }
  detail::set_if(o, "expires_at_ms", e.expires_at_ms);
  detail::set_if(o, "ttl_ms", e.ttl_ms);
  if (!e.content.is_null()) o["content"] = e.content;
  if (!e.embedding.empty()) o["embedding"] = detail::finite_array(e.embedding, "put_episodes");
  j = std::move(o);
}

inline void to_json(nlohmann::json& j, const KeywordQuery& q) {
  nlohmann::json o = {{"text", q.text}};
  detail::set_if(o, "limit", q.limit);
  detail::set_if(o, "episode_type", q.episode_type);
  detail::set_if(o, "tag", q.tag);
  detail::set_hit_filters(o, q, "keyword_search");
  detail::set_finite(o, "min_score", q.min_score, "keyword_search");
  j = std::move(o);
}

inline void to_json(nlohmann::json& j, const SubstringQuery& q) {
  nlohmann::json o = {{"text", q.text}};
  detail::set_if(o, "limit", q.limit);
  detail::set_if(o, "episode_type", q.episode_type);
  detail::set_if(o, "tag", q.tag);
  detail::set_hit_filters(o, q, "substring_search");
  j = std::move(o);
}

inline void to_json(nlohmann::json& j, const LexicalPageQuery& q) {
  j = {{"text", q.text}};
  detail::set_if(j, "limit", q.limit);
  detail::set_if(j, "after", q.after);
  detail::set_if(j, "episode_type", q.episode_type);
  detail::set_if(j, "tag", q.tag);
  detail::set_if(j, "scan_limit", q.scan_limit);
  detail::set_if(j, "scan_bytes_limit", q.scan_bytes_limit);
}

inline void to_json(nlohmann::json& j, const HybridQuery& q) {
  nlohmann::json o = {{"text", q.text}};
  detail::set_if(o, "limit", q.limit);
  if (!q.vector.empty()) o["vector"] = detail::finite_array(q.vector, "hybrid_search");
  if (q.semantic_weight) {
    if (!std::isfinite(*q.semantic_weight))
      throw Error(MNEM_STATUS_INVALID_ARGUMENT, "hybrid_search", "semantic_weight is not finite");
    o["semantic_weight"] = *q.semantic_weight;
  }
  detail::set_if(o, "candidates", q.candidates);
  detail::set_if(o, "episode_type", q.episode_type);
  detail::set_if(o, "tag", q.tag);
  detail::set_if(o, "vector_model", q.vector_model);
  detail::set_hit_filters(o, q, "hybrid_search");
  detail::set_finite(o, "min_score", q.min_score, "hybrid_search");
  j = std::move(o);
}

/// An open mnem store; move-only, closed by the destructor.
class Store {
 public:
  /// Opens the store at `path` (a directory, or ":memory:"). `flags`:
  /// MNEM_OPEN_CREATE, MNEM_OPEN_READ_ONLY, or MNEM_OPEN_VIEW (a read-only view beside a
  /// writer, as of its open). `options_json`: "" or e.g. {"sync_writes":true}.
  explicit Store(std::string_view path, uint32_t flags = 0, std::string_view options_json = {}) {
    mnem_error err{};
    detail::check("open", mnem_open(detail::view(path), flags, detail::view(options_json), &h_, &err), err);
  }

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  // The registered embedders move with the handle (their addresses do not change).
  Store(Store&& other) noexcept
      : h_(std::exchange(other.h_, nullptr)), embedders_(std::move(other.embedders_)) {}
  Store& operator=(Store&& other) noexcept {
    if (this != &other) {
      close();
      h_ = std::exchange(other.h_, nullptr);
      embedders_ = std::move(other.embedders_);
    }
    return *this;
  }
  ~Store() { close(); }

  /// Frees the handle; idempotent. Later calls throw Error(INVALID_ARGUMENT).
  void close() noexcept { mnem_free(std::exchange(h_, nullptr)); }
  bool is_open() const noexcept { return h_ != nullptr; }
  explicit operator bool() const noexcept { return is_open(); }
  /// The C handle, for calls this wrapper does not cover. Still owned by *this.
  mnem_store* get() const noexcept { return h_; }

  void flush() {
    mnem_error err{};
    detail::check("flush", mnem_flush(handle("flush"), &err), err);
  }

  // ---- ADK memory seam ----

  /// add_session_to_memory: replaces the session's bucket; returns events stored.
  uint64_t add_session(std::string_view app, std::string_view user, std::string_view session_id,
                       std::string_view events_jsonl) {
    uint64_t n = 0;
    mnem_error err{};
    detail::check("add_session",
                  mnem_add_session(handle("add_session"), detail::view(app), detail::view(user),
                                   detail::view(session_id), detail::view(events_jsonl), &n, &err),
                  err);
    return n;
  }

  /// add_events_to_memory: appends unseen event ids; returns events added.
  uint64_t add_events(std::string_view app, std::string_view user, std::string_view session_id,
                      std::string_view events_jsonl, std::string_view custom_metadata_json = {}) {
    uint64_t n = 0;
    mnem_error err{};
    detail::check("add_events",
                  mnem_add_events(handle("add_events"), detail::view(app), detail::view(user),
                                  detail::view(session_id), detail::view(events_jsonl),
                                  detail::view(custom_metadata_json), &n, &err),
                  err);
    return n;
  }

  /// delete_memory: removes the id from every bucket and tombstones it; returns events removed.
  uint64_t delete_memory(std::string_view app, std::string_view user, std::string_view memory_id) {
    uint64_t n = 0;
    mnem_error err{};
    detail::check("delete_memory",
                  mnem_delete_memory(handle("delete_memory"), detail::view(app), detail::view(user),
                                     detail::view(memory_id), &n, &err),
                  err);
    return n;
  }

  /// search_memory: returns {"memories":[MemoryEntry...]}.
  std::string search(std::string_view app, std::string_view user, std::string_view query) const {
    mnem_store* h = handle("search");
    return detail::read("search", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_search(h, detail::view(app), detail::view(user), detail::view(query), out, cap, len, err);
    });
  }

  // ---- Episodes ----

  /// Writes one episode per non-blank line, atomically; returns the ids in line order.
  std::vector<std::string> put_episodes(std::string_view app, std::string_view user,
                                        std::string_view episodes_jsonl) {
    return detail::put_episodes(handle("put_episodes"), app, user, episodes_jsonl,
                                detail::ids_guess(episodes_jsonl));
  }

  /// Tombstones the ids (one JSON string per line); returns how many were visible.
  uint64_t delete_episodes(std::string_view app, std::string_view user, std::string_view ids_jsonl) {
    uint64_t n = 0;
    mnem_error err{};
    detail::check("delete_episodes",
                  mnem_delete_episodes(handle("delete_episodes"), detail::view(app), detail::view(user),
                                       detail::view(ids_jsonl), &n, &err),
                  err);
    return n;
  }

  /// The store's statistics as JSON (`mnem_stats` in include/mnem.h): formats, the cache
  /// budget and the use, hits and misses of the block cache and the graph cache.
  std::string stats() const {
    mnem_store* h = handle("stats");
    return detail::read("stats", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_stats(h, out, cap, len, err);
    });
  }

  /// BM25 over the namespace: {"results":[{"record","score"}...]}.
  std::string keyword_search(std::string_view app, std::string_view user, std::string_view query_json) const {
    return query("keyword_search", mnem_keyword_search, app, user, query_json);
  }
  /// One bounded, paged BM25 scan (`mnem_lexical_page` in include/mnem.h).
  std::string lexical_page(std::string_view app, std::string_view user, std::string_view query_json) const {
    return query("lexical_page", mnem_lexical_page, app, user, query_json);
  }
  /// Case-insensitive substring of primary/secondary/context: {"results":[{"record"}...]}.
  std::string substring_search(std::string_view app, std::string_view user, std::string_view query_json) const {
    return query("substring_search", mnem_substring_search, app, user, query_json);
  }
  /// Weighted reciprocal rank fusion of BM25 and vectors (`mnem_hybrid_search` in include/mnem.h).
  std::string hybrid_search(std::string_view app, std::string_view user, std::string_view query_json) const {
    return query("hybrid_search", mnem_hybrid_search, app, user, query_json);
  }

  /// Registers `embed` as the store's embedder (`mnem_set_embedder`; an empty function
  /// removes it): episodes with "embed": true, ADK events and hybrid_search/recall queries
  /// without a vector then get their vectors from it. It is called from the threads that
  /// call the store, concurrently; its exceptions become mnem::Error EMBEDDER_FAILED.
  /// Unnamed: its vectors into a namespace whose vectors name a model are refused
  /// (mnem::Error INVALID_ARGUMENT); register it with its model's name instead.
  void set_embedder(EmbedFunction embed) { register_embedder(std::move(embed), nullptr); }

  /// set_embedder with the name of `embed`'s model (`mnem_set_named_embedder`): the name is
  /// recorded with the namespace's vectors it makes (namespace_statistics' embedding_model),
  /// and vectors of another model, or of an unnamed embedder, into a namespace whose vectors
  /// name one are refused: mnem::Error INVALID_ARGUMENT naming both, nothing written. A query
  /// with a `vector_model` other than `model` is refused likewise. `model` must be 1 to 256
  /// bytes of UTF-8, else INVALID_ARGUMENT and the registered embedder stays as it was. An
  /// empty function removes the embedder (`model` ignored).
  void set_embedder(EmbedFunction embed, std::string_view model) { register_embedder(std::move(embed), &model); }

  /// ADK search_memory with semantic recall (`mnem_recall`): {"memories":[...]} as JSON.
  std::string recall(std::string_view app, std::string_view user, std::string_view query_json) const {
    return query("recall", mnem_recall, app, user, query_json);
  }

  /// Hybrid search with `embedder` for this call (`mnem_hybrid_search_with`): the library
  /// calls it only when the search can use a vector (not for limit 0, blank text or
  /// semantic weight 0).
  std::string hybrid_search_text(std::string_view app, std::string_view user, std::string_view text,
                                 Embedder& embedder, const HybridOptions& opts = {}) const {
    static const char* op = "hybrid_search";
    handle(op);
    std::string q = "{\"text\":";
    detail::append_json_string(q, text);
    if (opts.limit) {
      q += ",\"limit\":";
      detail::append_number(q, *opts.limit, op);
    }
    if (opts.semantic_weight) {
      q += ",\"semantic_weight\":";
      detail::append_number(q, *opts.semantic_weight, op);
    }
    if (opts.candidates) {
      q += ",\"candidates\":";
      detail::append_number(q, *opts.candidates, op);
    }
    if (opts.episode_type) {
      q += ",\"episode_type\":";
      detail::append_json_string(q, *opts.episode_type);
    }
    if (opts.tag) {
      q += ",\"tag\":";
      detail::append_json_string(q, *opts.tag);
    }
    if (opts.vector_model) {
      q += ",\"vector_model\":";
      detail::append_json_string(q, *opts.vector_model);
    }
    for (auto [key, v] : {std::pair{"session_id", &opts.session_id}, std::pair{"author", &opts.author}}) {
      if (!*v) continue;
      q.append(",\"").append(key).append("\":");
      detail::append_json_string(q, **v);
    }
    for (auto [key, v] : {std::pair{"since", &opts.since}, std::pair{"until", &opts.until},
                          std::pair{"min_score", &opts.min_score}}) {
      if (!*v) continue;
      q.append(",\"").append(key).append("\":");
      detail::append_number(q, **v, op);
    }
    q += '}';
    EmbedFunction f = [&embedder](std::string_view t) { return embedder.embed(t); };
    mnem_store* h = handle(op);
    return detail::read(op, [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_hybrid_search_with(h, detail::view(app), detail::view(user), detail::view(q),
                                     detail::embed_trampoline, &f, out, cap, len, err);
    });
  }

  // ---- Store management ----

  /// Erases the namespace: every episode, ADK session, delete_memory id and index entry in
  /// one atomic write, then a compaction of its key ranges, so its bytes leave the store's
  /// files. A namespace with nothing stored is a no-op.
  void forget_namespace(std::string_view app, std::string_view user) {
    mnem_error err{};
    detail::check("forget_namespace",
                  mnem_forget_namespace(handle("forget_namespace"), detail::view(app), detail::view(user), &err),
                  err);
  }

  /// Compacts the whole store: every table file rewritten down to the last level, so that the
  /// bytes of deleted episodes and sessions and of overwritten revisions leave the files.
  /// Throws mnem::Error with the cause if the compaction fails (CORRUPTION: a damaged file);
  /// the store then refuses writes until it is reopened.
  void compact() {
    mnem_error err{};
    detail::check("compact", mnem_compact(handle("compact"), &err), err);
  }

  /// Deletes what one ADK session added (its bucket and events; the id as given: events
  /// added with an empty id are under unknown_session_id); returns the events deleted.
  uint64_t delete_session(std::string_view app, std::string_view user, std::string_view session_id) {
    uint64_t n = 0;
    mnem_error err{};
    detail::check("delete_session",
                  mnem_delete_session(handle("delete_session"), detail::view(app), detail::view(user),
                                      detail::view(session_id), &n, &err),
                  err);
    return n;
  }

  /// ADK's bucket for events added without a session id.
  static constexpr const char* unknown_session_id = "__unknown_session_id__";

  /// The visible episodes with the ids of `ids_jsonl` (one JSON string UUID per line, at
  /// most 10,000): {"episodes":[Episode|null...]}, one element per line.
  std::string get_episodes(std::string_view app, std::string_view user, std::string_view ids_jsonl) const {
    mnem_store* h = handle("get_episodes");
    return detail::read("get_episodes", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_get_episodes(h, detail::view(app), detail::view(user), detail::view(ids_jsonl), out, cap, len, err);
    });
  }

  /// One page of namespaces, raw: `query_json` "" for the defaults, or
  /// {"limit", "after": {"app_name","user_id"}}.
  std::string list_namespaces(std::string_view query_json = {}) const {
    mnem_store* h = handle("list_namespaces");
    return detail::read("list_namespaces", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_list_namespaces(h, detail::view(query_json), out, cap, len, err);
    });
  }

  /// One namespace's statistics as JSON (namespace_statistics parses them); a scan of its keys.
  std::string namespace_stats(std::string_view app, std::string_view user) const {
    mnem_store* h = handle("namespace_stats");
    return detail::read("namespace_stats", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_namespace_stats(h, detail::view(app), detail::view(user), out, cap, len, err);
    });
  }

  /// Copies the open store into the new directory `dest` (which must not exist); the copy
  /// opens as a store of its own. Not for ":memory:" or a read-only handle.
  void backup(std::string_view dest) {
    mnem_error err{};
    detail::check("backup", mnem_backup(handle("backup"), detail::view(dest), &err), err);
  }

  /// Integrity check as JSON (check_report parses it). It throws only when the check could
  /// not run; its verdict is "ok".
  std::string check() const {
    mnem_store* h = handle("check");
    return detail::read("check", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_check(h, out, cap, len, err);
    });
  }

  /// The namespace as JSON Lines (docs/EXPORT.md), from one snapshot, built in memory (for
  /// large stores, export_to writes page by page).
  std::string export_jsonl(std::string_view app, std::string_view user) const { return export_call(app, user, 0); }
  /// Every namespace of the store as JSON Lines.
  std::string export_all_jsonl() const { return export_call({}, {}, 1); }

  /// One page of an export, raw (`mnem_export_page`): the lines after `cursor` ("" for the
  /// first page) until at least `max_bytes`, as {"lines": "<JSON Lines>", "next_cursor":
  /// "<opaque>"|null}. export_to does the paging.
  std::string export_page(std::string_view app, std::string_view user, bool all, std::string_view cursor,
                          uint64_t max_bytes) const {
    mnem_store* h = handle("export_page");
    return detail::read("export_page", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_export_page(h, detail::view(app), detail::view(user), all ? 1 : 0, detail::view(cursor), max_bytes,
                              out, cap, len, err);
    });
  }

  /// Writes the namespace's export to `out` page by page (about `page_bytes` each), never
  /// holding it whole; returns the bytes written. Each page is read from its own snapshot:
  /// stop writes to the namespace meanwhile, or import_jsonl may refuse the result. A
  /// failed stream throws std::ios_base::failure.
  uint64_t export_to(std::ostream& out, std::string_view app, std::string_view user,
                     uint64_t page_bytes = 1 << 20) const {
    return export_stream(out, app, user, false, page_bytes);
  }
  /// export_to of every namespace of the store.
  uint64_t export_all_to(std::ostream& out, uint64_t page_bytes = 1 << 20) const {
    return export_stream(out, {}, {}, true, page_bytes);
  }

  /// Imports an export; returns the episode records imported. The input is checked whole
  /// first: a bad line, a truncated input or an occupied namespace throws
  /// INVALID_ARGUMENT and nothing is written. An I/O failure part-way can leave a namespace
  /// partial: forget_namespace it and import again.
  uint64_t import_jsonl(std::string_view export_jsonl) {
    uint64_t n = 0;
    mnem_error err{};
    detail::check("import", mnem_import(handle("import"), detail::view(export_jsonl), &n, &err), err);
    return n;
  }

  /// Typed get_episodes: one element per id, empty where no visible episode has it.
  std::vector<std::optional<Episode>> get_episodes(std::string_view app, std::string_view user,
                                                   const std::vector<std::string>& ids) const {
    std::string jsonl;
    for (const std::string& id : ids) {
      if (!jsonl.empty()) jsonl += '\n';
      detail::append_json_string(jsonl, id);
    }
    std::string raw = get_episodes(app, user, jsonl);
    return detail::decode("get_episodes", [&] {
      std::vector<std::optional<Episode>> out;
      const nlohmann::json parsed = nlohmann::json::parse(raw);
      for (const auto& e : parsed.at("episodes")) {
        if (e.is_null())
          out.emplace_back();
        else
          out.emplace_back(e.get<Episode>());
      }
      if (out.size() != ids.size()) throw Error(MNEM_STATUS_INTERNAL, "get_episodes", "results do not match the ids");
      return out;
    });
  }

  NamespacePage list_namespaces(const NamespaceQuery& q) const {
    return detail::parse<NamespacePage>("list_namespaces", list_namespaces(detail::dump(nlohmann::json(q), "list_namespaces")));
  }

  /// Every namespace, paging with `page_size` (0 = the library default) until next_after is empty.
  std::vector<NamespaceInfo> all_namespaces(uint64_t page_size = 0) const {
    std::vector<NamespaceInfo> out;
    NamespaceQuery q;
    if (page_size) q.limit = page_size;
    for (;;) {
      NamespacePage page = list_namespaces(q);
      out.insert(out.end(), page.namespaces.begin(), page.namespaces.end());
      if (!page.next_after) return out;
      q.after = std::move(page.next_after);
    }
  }

  NamespaceStats namespace_statistics(std::string_view app, std::string_view user) const {
    return detail::parse<NamespaceStats>("namespace_stats", namespace_stats(app, user));
  }

  CheckReport check_report() const { return detail::parse<CheckReport>("check", check()); }

  // ---- Typed forms ----

  /// Writes the episodes atomically (all or none); returns their ids in order.
  std::vector<std::string> put_episodes(std::string_view app, std::string_view user,
                                        const std::vector<EpisodeInput>& episodes) {
    std::string jsonl;
    for (const EpisodeInput& e : episodes) {
      if (!jsonl.empty()) jsonl += '\n';
      jsonl += detail::dump(nlohmann::json(e), "put_episodes");
    }
    return put_episodes(app, user, jsonl);
  }

  /// ADK search_memory: at most 10 memories, best first.
  std::vector<MemoryEntry> search_memory(std::string_view app, std::string_view user, std::string_view query) const {
    std::string raw = search(app, user, query);
    return detail::decode("search", [&] { return nlohmann::json::parse(raw).at("memories").get<std::vector<MemoryEntry>>(); });
  }

  std::vector<ScoredEpisode> keyword_search(std::string_view app, std::string_view user, const KeywordQuery& q) const {
    return detail::results<ScoredEpisode>("keyword_search", keyword_search(app, user, detail::dump(nlohmann::json(q), "keyword_search")));
  }

  LexicalPage lexical_page(std::string_view app, std::string_view user, const LexicalPageQuery& q) const {
    return detail::parse<LexicalPage>("lexical_page", lexical_page(app, user, detail::dump(nlohmann::json(q), "lexical_page")));
  }

  /// The matching records in ascending id order.
  std::vector<Episode> substring_search(std::string_view app, std::string_view user, const SubstringQuery& q) const {
    std::string raw = substring_search(app, user, detail::dump(nlohmann::json(q), "substring_search"));
    return detail::decode("substring_search", [&] {
      std::vector<Episode> out;
      const nlohmann::json parsed = nlohmann::json::parse(raw);
      for (const auto& hit : parsed.at("results")) out.push_back(hit.at("record").get<Episode>());
      return out;
    });
  }

  std::vector<HybridHit> hybrid_search(std::string_view app, std::string_view user, const HybridQuery& q) const {
    return detail::results<HybridHit>("hybrid_search", hybrid_search(app, user, detail::dump(nlohmann::json(q), "hybrid_search")));
  }

  /// The statistics of stats(), parsed.
  Stats statistics() const { return detail::parse<Stats>("stats", stats()); }

 private:
  using QueryFn = mnem_status (*)(const mnem_store*, mnem_str, mnem_str, mnem_str, uint8_t*, size_t,
                                  size_t*, mnem_error*);

  mnem_store* handle(const char* op) const {
    if (!h_) throw Error(MNEM_STATUS_INVALID_ARGUMENT, op, "store is closed");
    return h_;
  }

  std::string query(const char* op, QueryFn fn, std::string_view app, std::string_view user,
                    std::string_view query_json) const {
    mnem_store* h = handle(op);
    return detail::read(op, [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return fn(h, detail::view(app), detail::view(user), detail::view(query_json), out, cap, len, err);
    });
  }

  uint64_t export_stream(std::ostream& out, std::string_view app, std::string_view user, bool all,
                         uint64_t page_bytes) const {
    uint64_t written = 0;
    std::string cursor;
    for (;;) {
      std::string raw = export_page(app, user, all, cursor, page_bytes);
      std::optional<std::string> next;
      std::string lines = detail::decode("export_page", [&] {
        nlohmann::json page = nlohmann::json::parse(raw);
        next = detail::optional_field<std::string>(page, "next_cursor");
        return page.at("lines").get<std::string>();
      });
      out.write(lines.data(), static_cast<std::streamsize>(lines.size()));
      if (!out) throw std::ios_base::failure("mnem export: writing to the stream failed");
      written += lines.size();
      if (!next) return written;
      cursor = std::move(*next);
    }
  }

  std::string export_call(std::string_view app, std::string_view user, int32_t all) const {
    mnem_store* h = handle("export");
    return detail::read("export", [&](uint8_t* out, std::size_t cap, std::size_t* len, mnem_error* err) {
      return mnem_export(h, detail::view(app), detail::view(user), all, out, cap, len, err);
    });
  }

  // mnem_set_embedder, or mnem_set_named_embedder when `model` is not null.
  void register_embedder(EmbedFunction embed, const std::string_view* model) {
    static const char* op = "set_embedder";
    mnem_store* h = handle(op);
    std::lock_guard<std::mutex> lock(embedders_mu_);
    mnem_error err{};
    auto set = [&](mnem_embed_fn fn, void* user_data) {
      return model ? mnem_set_named_embedder(h, detail::view(*model), fn, user_data, &err)
                   : mnem_set_embedder(h, fn, user_data, &err);
    };
    if (!embed) {
      detail::check(op, set(nullptr, nullptr), err);
      return;
    }
    // Kept as long as the store: a call in flight may still use a replaced one.
    embedders_.push_back(std::make_unique<EmbedFunction>(std::move(embed)));
    mnem_status rc = set(detail::embed_trampoline, embedders_.back().get());
    if (rc == MNEM_STATUS_INVALID_ARGUMENT) embedders_.pop_back();  // refused: never held
    detail::check(op, rc, err);
  }

  mnem_store* h_ = nullptr;
  std::mutex embedders_mu_;
  std::vector<std::unique_ptr<EmbedFunction>> embedders_;
};

}  // namespace mnem

#endif  // MNEM_HPP
