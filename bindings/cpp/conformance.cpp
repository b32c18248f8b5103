// Replays the conformance corpus (tests/conformance/cases, format in
// tests/conformance/README.md) through mnem.hpp: every call through mnem::Store's raw form
// (JSON text in and out, parsed with nlohmann/json), errors as mnem::Error. For searches whose
// query converts to the typed query structs, the typed call runs too and must agree with the
// raw output (ids, scores, order), which checks the wrapper's parsing. The corpus's embedders are
// lambdas (set_embedder) and an Embedder (hybrid_search_text). Usage: conformance CASES_DIR
// [postgresql] (the second on the server MNEM_TEST_PG_URI names).
#include <mnem.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool is_uuid(const std::string& s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    char c = s[i];
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Python's datetime.fromtimestamp(secs).isoformat() in the local time zone.
std::string local_iso(double secs) {
  double whole = std::floor(secs);
  long micros = std::lround((secs - whole) * 1e6);
  if (micros == 1000000) whole += 1, micros = 0;
  std::time_t t = static_cast<std::time_t>(whole);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  if (micros) std::snprintf(buf + n, sizeof buf - n, ".%06ld", micros);
  return buf;
}

// The corpus's embedder `words` (tests/conformance/README.md): a count per word group, then 1.
std::vector<float> words(std::string_view text) {
  static const char* const groups[7] = {"tea coffee oolong drink", "cat kitten dog pet", "train flight lisbon travel",
                                        "green red blue colour",   "morning noon night late", "sofa cushion home house",
                                        "apple bread lunch food"};
  std::vector<float> v(8, 0.0f);
  v[7] = 1;
  for (std::size_t i = 0, n = 0; i < text.size(); i += n ? n : 1) {
    std::string w = " ";
    for (n = 0; i + n < text.size() && std::isalnum(static_cast<unsigned char>(text[i + n])) &&
                static_cast<unsigned char>(text[i + n]) < 128;
         ++n)
      w += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i + n])));
    for (int g = 0; n && g < 7; ++g)
      if ((" " + std::string(groups[g]) + " ").find(w + " ") != std::string::npos) ++v[g];
  }
  return v;
}

// mnem::Embedder for an EmbedFunction (hybrid_search_text takes an Embedder&).
struct FnEmbedder : mnem::Embedder {
  mnem::EmbedFunction f;
  explicit FnEmbedder(mnem::EmbedFunction fn) : f(std::move(fn)) {}
  std::vector<float> embed(std::string_view t) override { return f(t); }
};

struct Outcome {
  std::string status = "OK", message;
  std::optional<uint64_t> count;
  std::optional<std::vector<std::string>> ids;
  std::optional<uint64_t> ids_len;  // put_episodes_v2's *out_ids_len
  json value;
  std::optional<std::string> raw;
};

class Replay {
 public:
  // `pg_schema`: replay on the PostgreSQL server MNEM_TEST_PG_URI, every store the case names a
  // schema of its own starting with this stem (":memory:" a new one at each open).
  Replay(fs::path tmp, std::string pg_schema) : tmp_(std::move(tmp)), pg_schema_(std::move(pg_schema)) {}

  void step(const json& st) {
    const std::string call = st.at("call").get<std::string>();
    json args = subst(st.value("args", json::object()));
    const json want = st.value("expect", json::object());
    Outcome o;
    try {
      o = run(call, args);
    } catch (const mnem::Error& e) {
      o.status = e.status_name();
      o.message = e.message();
      // put_episodes threw: no ids, as *out_ids_len 0 on an error says (the raw form checks it).
      if (call == "put_episodes_v2") o.ids_len = 0;
    }
    const std::string ws = want.value("status", "OK");
    if (o.status != ws) throw Mismatch("status " + o.status + " (" + o.message + "), want " + ws);
    for (const auto& m : want.value("message_has", json::array()))
      if (o.message.find(m.get<std::string>()) == std::string::npos)
        throw Mismatch("message \"" + o.message + "\" lacks \"" + m.get<std::string>() + "\"");
    if (want.contains("count")) match(want["count"], o.count ? json(*o.count) : json(), "count");
    if (want.contains("ids")) match(want["ids"], o.ids ? json(*o.ids) : json(), "ids");
    if (want.contains("ids_len")) match(want["ids_len"], o.ids_len ? json(*o.ids_len) : json(), "ids_len");
    if (want.contains("value")) match(want["value"], o.value, "value");
    const std::string raw = o.raw.value_or("");
    if (want.contains("json")) {
      json got = json::parse(raw, nullptr, false);
      if (got.is_discarded()) throw Mismatch("output is not JSON: " + raw.substr(0, 200));
      match(want["json"], got, "json");
    }
    if (want.contains("lines")) {
      json got = json::array();
      std::istringstream in(raw);
      for (std::string line; std::getline(in, line);)
        if (!line.empty()) got.push_back(json::parse(line));
      match(want["lines"], got, "lines");
    }
    for (const auto& r : want.value("raw_contains", json::array()))
      if (raw.find(r.get<std::string>()) == std::string::npos)
        throw Mismatch("output lacks the bytes " + r.get<std::string>());
    if (want.contains("capture")) vars_[want["capture"].get<std::string>()] = raw;
  }

  Outcome run(const std::string& call, const json& a) {
    Outcome o;
    if (call == "abi_version") return o.value = mnem_abi_version(), o;
    if (call == "version") return o.value = std::string(mnem_version()), o;
    if (call == "status_name") return o.value = std::string(mnem_status_name(a.at("status").get<int32_t>())), o;
    if (call == "status_message")
      return o.value = std::string(mnem_status_message(a.at("status").get<int32_t>())), o;
    if (call == "embedder_texts") return o.value = std::exchange(texts_, json::array()), o;
    if (call == "open") {
      uint32_t flags = MNEM_OPEN_CREATE;
      if (a.contains("flags") && a["flags"].is_number()) flags = a["flags"].get<uint32_t>();
      if (a.contains("flags") && a["flags"].is_array()) {
        flags = 0;
        for (const auto& f : a["flags"])
          flags |= f == "create" ? MNEM_OPEN_CREATE : f == "read_only" ? MNEM_OPEN_READ_ONLY : MNEM_OPEN_VIEW;
      }
      const std::string as = a.value("as", "main");
      if (stores_.count(as)) throw Mismatch("store " + as + " is already open");
      auto s = std::make_unique<mnem::Store>(path(a.value("path", ":memory:")), flags, text(a, "options"));
      stores_[as] = std::move(s);
      return o;
    }
    auto it = stores_.find(a.value("store", "main"));
    if (it == stores_.end()) throw Mismatch("no open store " + a.value("store", "main"));
    mnem::Store& s = *it->second;
    const std::string app = a.value("app", "app"), user = a.value("user", "user");
    if (call == "close") {
      stores_.erase(it);  // RAII: the destructor frees the handle
    } else if (call == "flush") {
      s.flush();
    } else if (call == "compact") {
      s.compact();
    } else if (call == "forget_namespace") {
      s.forget_namespace(app, user);
    } else if (call == "set_embedder") {
      if (a.contains("model"))
        s.set_embedder(embedder(a.value("kind", "words")), a.at("model").get<std::string>());
      else
        s.set_embedder(embedder(a.value("kind", "words")));
    } else if (call == "recall") {
      o.raw = s.recall(app, user, text(a, "query"));
    } else if (call == "hybrid_search_with") {
      o.raw = hybrid_search_with(s, app, user, a.value("query", json()), embedder(a.value("embedder", "words")));
    } else if (call == "backup") {
      s.backup(path(a.value("dest", "")));
    } else if (call == "add_session") {
      o.count = s.add_session(app, user, a.value("session_id", ""), lines(a, "events"));
    } else if (call == "add_events") {
      o.count = s.add_events(app, user, a.value("session_id", ""), lines(a, "events"), text(a, "metadata"));
    } else if (call == "delete_memory") {
      o.count = s.delete_memory(app, user, a.value("memory_id", ""));
    } else if (call == "delete_session") {
      o.count = s.delete_session(app, user, a.value("session_id", ""));
    } else if (call == "delete_episodes") {
      o.count = s.delete_episodes(app, user, lines(a, "ids"));
    } else if (call == "import") {
      o.count = s.import_jsonl(lines(a, "lines"));
    } else if (call == "put_episodes") {
      o.ids = s.put_episodes(app, user, lines(a, "episodes"));
    } else if (call == "put_episodes_v2") {
      const std::string data = lines(a, "episodes");
      const bool wanted = a.value("ids_wanted", true);
      if (wanted && !a.contains("ids_cap")) {
        o.ids = s.put_episodes(app, user, data);  // the wrapper's own sizing and retry
        o.ids_len = 16 * o.ids->size();
      } else {
        // A given size, or NULL: what the wrapper never passes, so the C function itself.
        const std::size_t cap = wanted ? a["ids_cap"].get<std::size_t>() : 0;
        std::vector<uint8_t> buf(cap + 16, 0xEE);
        std::size_t len = 999;
        mnem_error err{};
        mnem_status rc = mnem_put_episodes_v2(s.get(), mnem::detail::view(app), mnem::detail::view(user),
                                              mnem::detail::view(data), wanted ? buf.data() : nullptr, cap, &len, &err);
        o.status = mnem_status_name(rc);
        o.message = mnem::detail::message_of(err);
        o.ids_len = len;
        const std::size_t written = rc == MNEM_STATUS_OK && wanted ? len : 0;
        if (written > cap || std::any_of(buf.begin() + written, buf.end(), [](uint8_t b) { return b != 0xEE; }))
          throw Mismatch("put_episodes_v2 wrote out_ids past " + std::to_string(written) + " bytes");
        if (rc == MNEM_STATUS_OK && wanted) {
          o.ids.emplace();
          for (std::size_t i = 0; i < len; i += 16) o.ids->push_back(mnem::detail::uuid_string(&buf[i]));
        }
      }
    } else if (call == "search") {
      o.raw = s.search(app, user, text(a, "query"));
      typed_search(s, app, user, text(a, "query"), *o.raw);
    } else if (call == "keyword_search" || call == "substring_search" || call == "hybrid_search" ||
               call == "lexical_page") {
      const std::string q = text(a, "query");
      o.raw = call == "keyword_search"     ? s.keyword_search(app, user, q)
              : call == "substring_search" ? s.substring_search(app, user, q)
              : call == "hybrid_search"    ? s.hybrid_search(app, user, q)
                                           : s.lexical_page(app, user, q);
      // The typed call is a second call: what it asks the embedder is not the step's.
      const std::size_t asked = texts_.size();
      if (a.contains("query") && a["query"].is_object()) typed_query(s, call, app, user, a["query"], *o.raw);
      texts_.erase(texts_.begin() + static_cast<std::ptrdiff_t>(asked), texts_.end());
    } else if (call == "get_episodes") {
      o.raw = s.get_episodes(app, user, lines(a, "ids"));
    } else if (call == "list_namespaces") {
      o.raw = s.list_namespaces(text(a, "query"));
    } else if (call == "namespace_stats") {
      o.raw = s.namespace_stats(app, user);
    } else if (call == "stats") {
      o.raw = s.stats();
    } else if (call == "check") {
      o.raw = s.check();
    } else if (call == "export") {
      o.raw = a.value("all", false) ? s.export_all_jsonl() : s.export_jsonl(app, user);
    } else if (call == "export_page") {
      o.raw = s.export_page(app, user, a.value("all", false), text(a, "cursor"), a.value("max_bytes", uint64_t{0}));
    } else {
      throw Mismatch("unknown call " + call);
    }
    return o;
  }

  void match(const json& want, const json& got, const std::string& path) {
    if (want.is_object() && want.size() == 1 && want.begin().key()[0] == '$') {
      const std::string k = want.begin().key();
      const json& arg = want.begin().value();
      const std::string s = got.is_string() ? got.get<std::string>() : "";
      if (k == "$any") {
        const std::string t = arg.get<std::string>();
        bool ok = t == "value" || (t == "string" && got.is_string()) || (t == "number" && got.is_number()) ||
                  (t == "integer" && got.is_number() && std::floor(got.get<double>()) == got.get<double>()) ||
                  (t == "uuid" && is_uuid(s));
        if (!ok) throw Mismatch(path + ": " + got.dump() + " is not " + t);
        return;
      }
      if (k == "$uuid" || k == "$var") {
        if (!got.is_string() || (k == "$uuid" && !is_uuid(s))) throw Mismatch(path + ": " + got.dump() + " does not match " + k);
        const std::string name = arg.get<std::string>();
        if (name.empty()) return;
        auto v = vars_.find(name);
        if (v == vars_.end()) vars_[name] = s;
        else if (v->second != s) throw Mismatch(path + ": $" + name + " is " + v->second + ", got " + s);
        return;
      }
      if (k == "$localtime") {
        const std::string w = local_iso(arg.get<double>());
        if (s != w) throw Mismatch(path + ": want local time " + w + ", got " + got.dump());
        return;
      }
    }
    if (want.is_object()) {
      if (!got.is_object()) throw Mismatch(path + ": want an object, got " + got.dump());
      for (auto g = got.begin(); g != got.end(); ++g)
        if (!want.contains(g.key())) throw Mismatch(path + ": unexpected key " + g.key());
      for (auto w = want.begin(); w != want.end(); ++w) {
        if (!got.contains(w.key())) throw Mismatch(path + ": missing key " + w.key());
        match(w.value(), got[w.key()], path + "." + w.key());
      }
    } else if (want.is_array()) {
      if (!got.is_array() || got.size() != want.size())
        throw Mismatch(path + ": want " + std::to_string(want.size()) + " elements, got " + got.dump());
      for (std::size_t i = 0; i < want.size(); ++i) match(want[i], got[i], path + "[" + std::to_string(i) + "]");
    } else if (want.is_number()) {
      if (!got.is_number() || got.get<double>() != want.get<double>())
        throw Mismatch(path + ": want " + want.dump() + ", got " + got.dump());
    } else if (want != got) {
      throw Mismatch(path + ": want " + want.dump() + ", got " + got.dump());
    }
  }

 private:
  // The corpus's embedder `kind` (empty for "none"); it records each text.
  mnem::EmbedFunction embedder(const std::string& kind) {
    if (kind == "none") return {};
    return [this, kind](std::string_view t) {
      texts_.push_back(std::string(t));
      if (kind == "fails") throw std::runtime_error("model offline");
      return kind == "zero" ? std::vector<float>(8, 0.0f) : words(t);
    };
  }

  // hybrid_search_text for a query it can take (text and its options), the C function otherwise.
  static std::string hybrid_search_with(const mnem::Store& s, const std::string& app, const std::string& user,
                                        const json& q, mnem::EmbedFunction f) {
    mnem::HybridOptions o;
    bool typed = f && q.is_object() && q.contains("text") && q["text"].is_string();
    for (auto it = q.begin(); typed && it != q.end(); ++it) {
      const json& v = it.value();
      if (it.key() == "text") continue;
      if (it.key() == "limit" && v.is_number_unsigned()) o.limit = v.get<uint64_t>();
      else if (it.key() == "semantic_weight" && v.is_number()) o.semantic_weight = v.get<double>();
      else if (it.key() == "candidates" && v.is_number_unsigned()) o.candidates = v.get<uint64_t>();
      else if (it.key() == "episode_type" && v.is_string()) o.episode_type = v.get<std::string>();
      else if (it.key() == "tag" && v.is_string()) o.tag = v.get<std::string>();
      else if (it.key() == "vector_model" && v.is_string()) o.vector_model = v.get<std::string>();
      else if (!fill_filter(it.key(), v, o)) typed = false;
    }
    if (typed) {
      FnEmbedder e(f);
      return s.hybrid_search_text(app, user, q["text"].get<std::string>(), e, o);
    }
    const std::string qs = q.is_string() ? q.get<std::string>() : q.dump();
    using mnem::detail::view;
    return mnem::detail::read("hybrid_search_with", [&](uint8_t* out, std::size_t cap, std::size_t* len,
                                                        mnem_error* err) {
      return mnem_hybrid_search_with(s.get(), view(app), view(user), view(qs), f ? mnem::detail::embed_trampoline : nullptr,
                                     f ? &f : nullptr, out, cap, len, err);
    });
  }

  std::string path(const std::string& p) {
    if (!pg_schema_.empty() && !p.empty()) {
      std::string name;
      if (p == ":memory:") {
        name = "m" + std::to_string(++opens_);
      } else {
        for (unsigned char c : p)
          name += (c < 128 && std::isalnum(c)) ? static_cast<char>(std::tolower(c)) : '_';
      }
      const std::string server = std::getenv("MNEM_TEST_PG_URI");
      return server + (server.find('?') == std::string::npos ? "?" : "&") + "schema=" + pg_schema_ + "_" + name;
    }
    return p.empty() || p == ":memory:" ? p : (tmp_ / p).string();
  }

  static std::string text(const json& a, const char* key) {
    if (!a.contains(key) || a[key].is_null()) return "";
    return a[key].is_string() ? a[key].get<std::string>() : a[key].dump();
  }
  static std::string lines(const json& a, const char* key) {
    if (!a.contains(key) || !a[key].is_array()) return text(a, key);
    std::string out;
    for (std::size_t i = 0; i < a[key].size(); ++i) out += (i ? "\n" : "") + a[key][i].get<std::string>();
    return out;
  }

  std::string subst(const std::string& s) const {
    std::string out;
    std::size_t pos = 0;
    for (std::size_t i; (i = s.find("${", pos)) != std::string::npos;) {
      std::size_t end = s.find('}', i);
      if (end == std::string::npos) throw Mismatch("bad variable reference in " + s);
      auto v = vars_.find(s.substr(i + 2, end - i - 2));
      if (v == vars_.end()) throw Mismatch("unbound variable " + s.substr(i, end - i + 1));
      out += s.substr(pos, i - pos) + v->second;
      pos = end + 1;
    }
    return out + s.substr(pos);
  }
  json subst(const json& v) const {
    if (v.is_string()) return subst(v.get<std::string>());
    json out = v;
    if (v.is_array() || v.is_object())
      for (auto it = out.begin(); it != out.end(); ++it) *it = subst(*it);
    return out;
  }

  // The typed search_memory must parse the raw output into the same entries.
  static void typed_search(const mnem::Store& s, const std::string& app, const std::string& user,
                           const std::string& q, const std::string& raw) {
    json r = json::parse(raw)["memories"];
    std::vector<mnem::MemoryEntry> typed = s.search_memory(app, user, q);
    if (typed.size() != r.size()) throw Mismatch("search_memory: size differs from the raw output");
    for (std::size_t i = 0; i < typed.size(); ++i)
      if (typed[i].id != r[i]["id"] || typed[i].content != r[i]["content"] ||
          typed[i].timestamp != (r[i]["timestamp"].is_null()
                                     ? std::nullopt
                                     : std::optional<std::string>(r[i]["timestamp"].get<std::string>())))
        throw Mismatch("search_memory: entry " + std::to_string(i) + " differs from the raw output");
  }

  // A hit filter of the query type Q (false: not one Q has, or a value it cannot hold).
  template <class Q>
  static bool fill_filter(const std::string& k, const json& v, Q& out) {
    if constexpr (std::is_same_v<Q, mnem::LexicalPageQuery>) {
      return false;
    } else {
      if (k == "session_id" && v.is_string()) out.session_id = v.get<std::string>();
      else if (k == "author" && v.is_string()) out.author = v.get<std::string>();
      else if (k == "since" && v.is_number()) out.since = v.get<double>();
      else if (k == "until" && v.is_number()) out.until = v.get<double>();
      else if constexpr (std::is_same_v<Q, mnem::SubstringQuery>) return false;
      else if (k == "min_score" && v.is_number()) out.min_score = v.get<double>();
      else return false;
      return true;
    }
  }

  template <class Q>
  static bool fill_common(const json& q, Q& out) {
    for (auto it = q.begin(); it != q.end(); ++it) {
      const std::string& k = it.key();
      const json& v = it.value();
      if (k == "text" && v.is_string()) out.text = v.get<std::string>();
      else if (k == "limit" && v.is_number_unsigned()) out.limit = v.get<uint64_t>();
      else if (k == "episode_type" && v.is_string()) out.episode_type = v.get<std::string>();
      else if (k == "tag" && v.is_string()) out.tag = v.get<std::string>();
      else if (!fill_filter(k, v, out)) return false;
    }
    return true;
  }

  // Runs the typed form when the query converts losslessly and compares ids and scores.
  static void typed_query(const mnem::Store& s, const std::string& call, const std::string& app,
                          const std::string& user, const json& q, const std::string& raw) {
    json r = json::parse(raw);
    std::vector<std::pair<std::string, double>> typed, untyped;
    auto key = [&](const json& rec, double score) { untyped.emplace_back(rec["id"].get<std::string>(), score); };
    if (call == "keyword_search") {
      mnem::KeywordQuery kq;
      if (!fill_common(q, kq)) return;
      for (const auto& h : s.keyword_search(app, user, kq)) typed.emplace_back(h.record.id, h.score);
      for (const auto& h : r["results"]) key(h["record"], h["score"].get<double>());
    } else if (call == "substring_search") {
      mnem::SubstringQuery sq;
      if (!fill_common(q, sq)) return;
      for (const auto& e : s.substring_search(app, user, sq)) typed.emplace_back(e.id, 0);
      for (const auto& h : r["results"]) key(h["record"], 0);
    } else if (call == "lexical_page") {
      mnem::LexicalPageQuery lq;
      json rest = q;
      for (const char* k : {"after", "scan_limit", "scan_bytes_limit"}) {
        if (!q.contains(k)) continue;
        if (k == std::string("after") && q[k].is_string()) lq.after = q[k].get<std::string>();
        else if (k != std::string("after") && q[k].is_number_unsigned()) (k == std::string("scan_limit") ? lq.scan_limit : lq.scan_bytes_limit) = q[k].get<uint64_t>();
        else return;
        rest.erase(k);
      }
      if (!fill_common(rest, lq)) return;
      mnem::LexicalPage p = s.lexical_page(app, user, lq);
      for (const auto& h : p.hits) typed.emplace_back(h.record.id, h.score);
      for (const auto& h : r["hits"]) key(h["record"], h["score"].get<double>());
      if (p.next_after.value_or("") != (r["next_after"].is_null() ? "" : r["next_after"].get<std::string>()) ||
          p.exhaustive != r["exhaustive"].get<bool>() || p.scanned_records != r["scanned_records"].get<uint64_t>())
        throw Mismatch("lexical_page: typed page differs from the raw output");
    } else {
      mnem::HybridQuery hq;
      if (!q.contains("limit")) return;  // the typed limit is always sent
      for (auto it = q.begin(); it != q.end(); ++it) {
        const std::string& k = it.key();
        const json& v = it.value();
        if (k == "text" && v.is_string()) hq.text = v.get<std::string>();
        else if (k == "limit" && v.is_number_unsigned()) hq.limit = v.get<uint64_t>();
        else if (k == "semantic_weight" && v.is_number()) hq.semantic_weight = v.get<double>();
        else if (k == "candidates" && v.is_number_unsigned()) hq.candidates = v.get<uint64_t>();
        else if (k == "vector" && v.is_array()) hq.vector = v.get<std::vector<float>>();
        else if (k == "vector_model" && v.is_string()) hq.vector_model = v.get<std::string>();
        else if (!fill_filter(k, v, hq)) return;
      }
      for (const auto& h : s.hybrid_search(app, user, hq)) typed.emplace_back(h.record.id, h.score);
      for (const auto& h : r["results"]) key(h["record"], h["score"].get<double>());
    }
    if (typed != untyped)
      throw Mismatch(call + ": the typed result differs from the raw output");
  }

  fs::path tmp_;
  std::string pg_schema_;
  int opens_ = 0;
  std::map<std::string, std::unique_ptr<mnem::Store>> stores_;
  std::map<std::string, std::string> vars_;
  json texts_ = json::array();  // what the embedders were asked since the last embedder_texts
};

// Returns the number of steps, or -1 after printing the failure.
int run_case(const fs::path& file, const fs::path& tmp_root, bool pg) {
  std::ifstream in(file);
  json doc = json::parse(in);
  fs::path tmp = tmp_root / file.stem();
  fs::create_directories(tmp);
  std::string schema;
  if (pg) {
    schema = "cpp" + std::to_string(::getpid()) + "_" + file.stem().string();
    for (char& c : schema)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  Replay r(tmp, schema);
  int n = 0;
  try {
    if (!doc.contains("open")) r.run("open", {{"path", ":memory:"}, {"flags", {"create"}}});
    else if (!doc["open"].is_null()) r.run("open", doc["open"]);
    for (const auto& st : doc.at("steps")) {
      ++n;
      r.step(st);
    }
  } catch (const std::exception& e) {
    std::cerr << "FAIL " << file.filename().string() << ": step " << n << ": " << e.what() << "\n";
    return -1;
  }
  return n;
}

}  // namespace

// Cases about what only a store directory has (tests/conformance.rs says which and why): not
// replayed on PostgreSQL.
const char* const kDirectoryCases[] = {"open_busy_and_reopen", "open_errors", "check_backup_compact", "view",
                                       "open_stats"};

int main(int argc, char** argv) {
  // `postgresql`: replay on the server MNEM_TEST_PG_URI names, every case but the directory ones.
  const bool pg = argc == 3 && std::string(argv[2]) == "postgresql";
  if (argc != 2 && !pg) {
    std::cerr << "usage: " << argv[0] << " CASES_DIR [postgresql]\n";
    return 2;
  }
  if (pg && (!std::getenv("MNEM_TEST_PG_URI") || !*std::getenv("MNEM_TEST_PG_URI"))) {
    std::cerr << argv[0] << ": postgresql needs MNEM_TEST_PG_URI\n";
    return 2;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(argv[1])) {
    if (e.path().extension() != ".json") continue;
    if (pg && std::find(std::begin(kDirectoryCases), std::end(kDirectoryCases), e.path().stem().string()) !=
                  std::end(kDirectoryCases))
      continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  fs::path tmp = fs::temp_directory_path() / ("mnem-conformance-cpp-" + std::to_string(::getpid()));
  int failed = 0, steps = 0;
  for (const auto& f : files) {
    int n = run_case(f, tmp, pg);
    if (n < 0) ++failed;
    else steps += n;
  }
  fs::remove_all(tmp);
  std::cout << "conformance: " << files.size() << " cases, " << steps << " steps, " << failed << " failed\n";
  return failed || files.empty() ? 1 : 0;
}
