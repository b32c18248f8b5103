// mnem.hpp: header-only C++17 RAII wrapper over the mnem C ABI (include/mnem.h).
//
//   mnem::Store store(":memory:", MNEM_OPEN_CREATE);
//   store.put_episodes("app", "user", R"({"primary":"hello world"})");
//   std::string json = store.keyword_search("app", "user", R"({"text":"hello"})");
//
// Every failed call throws mnem::Error. Results are the library's JSON, unparsed.
// One Store may be used from many threads at once (the C handle is thread-safe);
// as with any C++ object, it must not be destroyed, closed or moved while
// another thread is using it.
#ifndef MNEM_HPP
#define MNEM_HPP

extern "C" {
#include "mnem.h"
}

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
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

/// Options of Store::hybrid_search_text besides the text.
struct HybridOptions {
  uint64_t limit = 10;                     // 0 returns no results
  std::optional<double> semantic_weight;   // library default (0.5) when empty
  std::optional<uint64_t> candidates;      // candidate multiplier; library default when empty
  std::optional<std::string> episode_type;
  std::optional<std::string> tag;
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

/// Decodes one UTF-8 code point at s[i]; returns false on invalid UTF-8.
inline bool next_code_point(std::string_view s, std::size_t& i, char32_t& cp) {
  auto u = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = u(i);
  std::size_t n;
  if (c < 0x80) {
    cp = c;
    n = 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    cp = c & 0x1F;
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    cp = c & 0x0F;
    n = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    cp = c & 0x07;
    n = 4;
  } else {
    return false;
  }
  if (i + n > s.size()) return false;
  for (std::size_t k = 1; k < n; ++k) {
    if ((u(i + k) & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (u(i + k) & 0x3F);
  }
  static const char32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_for_len[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  i += n;
  return true;
}

/// Unicode White_Space (what Rust's str::trim removes): hybrid search's blank-text rule.
inline bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

enum class TextKind { blank, text, invalid_utf8 };

inline TextKind classify(std::string_view s) {
  bool blank = true;
  for (std::size_t i = 0; i < s.size();) {
    char32_t cp;
    if (!next_code_point(s, i, cp)) return TextKind::invalid_utf8;
    if (!is_white_space(cp)) blank = false;
  }
  return blank ? TextKind::blank : TextKind::text;
}

/// Records in a JSON Lines buffer, counted as the library counts them: split on
/// '\n', lines of only spaces, tabs and CR skipped (they get no id slot).
inline std::size_t count_lines(std::string_view s) {
  std::size_t n = 0;
  for (;;) {
    std::size_t nl = s.find('\n');
    if (s.substr(0, nl).find_first_not_of(" \t\r") != std::string_view::npos) ++n;
    if (nl == std::string_view::npos) return n;
    s.remove_prefix(nl + 1);
  }
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

/// An open mnem store; move-only, closed by the destructor.
class Store {
 public:
  /// Opens the store at `path` (a directory, or ":memory:"). `flags`:
  /// MNEM_OPEN_CREATE and/or MNEM_OPEN_READ_ONLY. `options_json`: "" or e.g.
  /// {"sync_writes":true}.
  explicit Store(std::string_view path, uint32_t flags = 0, std::string_view options_json = {}) {
    mnem_error err{};
    detail::check("open", mnem_open(detail::view(path), flags, detail::view(options_json), &h_, &err), err);
  }

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  Store(Store&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  Store& operator=(Store&& other) noexcept {
    if (this != &other) {
      close();
      h_ = std::exchange(other.h_, nullptr);
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
    std::vector<uint8_t> raw(16 * detail::count_lines(episodes_jsonl));
    mnem_error err{};
    detail::check("put_episodes",
                  mnem_put_episodes(handle("put_episodes"), detail::view(app), detail::view(user),
                                    detail::view(episodes_jsonl), raw.empty() ? nullptr : raw.data(),
                                    raw.size(), &err),
                  err);
    std::vector<std::string> ids;
    ids.reserve(raw.size() / 16);
    for (std::size_t i = 0; i < raw.size(); i += 16) ids.push_back(detail::uuid_string(&raw[i]));
    return ids;
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

  /// Embeds `text` with `embedder` and runs hybrid_search. The embedder is not
  /// called when no vector can matter: limit 0, blank text, semantic weight 0.
  std::string hybrid_search_text(std::string_view app, std::string_view user, std::string_view text,
                                 Embedder& embedder, const HybridOptions& opts = {}) const {
    static const char* op = "hybrid_search";
    handle(op);
    std::string q = "{\"text\":";
    detail::append_json_string(q, text);
    q += ",\"limit\":";
    detail::append_number(q, opts.limit, op);
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
    // Invalid UTF-8 goes to the library unembedded, which rejects it.
    bool wants_vector = opts.limit > 0 && detail::classify(text) == detail::TextKind::text &&
                        !(opts.semantic_weight && *opts.semantic_weight == 0.0);
    if (wants_vector) {
      std::vector<float> v = embedder.embed(text);
      if (!v.empty()) {
        q += ",\"vector\":[";
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (i) q += ',';
          detail::append_number(q, v[i], op);
        }
        q += ']';
      }
    }
    q += '}';
    return hybrid_search(app, user, q);
  }

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

  mnem_store* h_ = nullptr;
};

}  // namespace mnem

#endif  // MNEM_HPP
