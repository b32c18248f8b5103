/* C ABI conformance test for libmnem: every exported function, its bad-input paths and the
 * conventions of include/mnem.h (statuses, the error struct, output buffers, NULL and UTF-8
 * checks), plus stores this build cannot trust (newer format, damaged records and table
 * files). Run by scripts/test-c, which passes MNEM_TEST_VERSION and MNEM_TEST_FIXTURES. */
#define _GNU_SOURCE
#include "mnem.h"

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- tiny harness ---------------------------------------------------------------------- */

static int g_pass, g_fail;
static char g_ctx[256]; /* extra context printed with failures (loop index, ...) */
static mnem_error err;  /* the error struct every EXPECT inspects */

static void check_(bool ok, const char *file, int line, const char *what) {
  if (ok) {
    g_pass++;
    return;
  }
  g_fail++;
  fprintf(stderr, "%s:%d: FAIL: %s%s%s\n", file, line, what, g_ctx[0] ? "  [" : "",
          g_ctx[0] ? g_ctx : "");
  if (g_ctx[0]) fputs("]\n", stderr);
}
#define CHECK(cond) check_((cond), __FILE__, __LINE__, #cond)
#define CTX(...) snprintf(g_ctx, sizeof g_ctx, __VA_ARGS__)

static bool utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t k;
    uint32_t cp, min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      k = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (n - i <= k) return false;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += k + 1;
  }
  return true;
}

/* Checks the status and the error struct: code == status, detail 0, message NUL-terminated
 * valid UTF-8, "" on OK and non-empty otherwise. */
static void expect_(mnem_status got, mnem_status want, const mnem_error *e, const char *file,
                    int line, const char *expr) {
  const char *why = NULL;
  const char *nul = memchr(e->message, '\0', MNEM_ERROR_MESSAGE_CAP);
  if (got != want)
    why = "wrong status";
  else if (e->code != got)
    why = "err.code != returned status";
  else if (e->detail != 0)
    why = "err.detail != 0";
  else if (!nul)
    why = "err.message not NUL-terminated within MNEM_ERROR_MESSAGE_CAP";
  else if (got == MNEM_STATUS_OK && e->message[0] != '\0')
    why = "err.message not empty on OK";
  else if (got != MNEM_STATUS_OK && e->message[0] == '\0')
    why = "err.message empty on failure";
  else if (!utf8_valid((const unsigned char *)e->message, (size_t)(nul - e->message)))
    why = "err.message not valid UTF-8";
  if (!why) {
    g_pass++;
    return;
  }
  g_fail++;
  int mlen = nul ? (int)(nul - e->message) : 80;
  fprintf(stderr, "%s:%d: FAIL: %s\n    %s: want %s, got %s (err.code %d) \"%.*s\"%s%s\n", file,
          line, expr, why, mnem_status_name(want), mnem_status_name(got), (int)e->code, mlen,
          e->message, g_ctx[0] ? "  ctx: " : "", g_ctx);
}
/* `call` must pass &err; err is poisoned first so a call that does not fill it is caught. */
#define EXPECT(call, want)                                                                   \
  do {                                                                                       \
    memset(&err, 0x5A, sizeof err);                                                          \
    mnem_status st_ = (call);                                                                \
    expect_(st_, (want), &err, __FILE__, __LINE__, #call);                                   \
  } while (0)
/* For calls made with err == NULL. */
#define EXPECT_NOERR(call, want)                                                             \
  do {                                                                                       \
    mnem_status st_ = (call);                                                                \
    if (st_ == (want)) {                                                                     \
      g_pass++;                                                                              \
    } else {                                                                                 \
      g_fail++;                                                                              \
      fprintf(stderr, "%s:%d: FAIL: %s\n    want %s, got %s  %s\n", __FILE__, __LINE__,      \
              #call, mnem_status_name(want), mnem_status_name(st_), g_ctx);                  \
    }                                                                                        \
  } while (0)

static bool msg_has(const char *needle) { return strcasestr(err.message, needle) != NULL; }

/* ---- strings and JSON helpers ---------------------------------------------------------- */

#define STR(lit) ((mnem_str){(const uint8_t *)(lit), sizeof(lit) - 1})
static const mnem_str EMPTY = {NULL, 0};
static const mnem_str NULLSTR = {NULL, 3}; /* ptr == NULL && len > 0 */
static mnem_str S(const char *s) { return (mnem_str){(const uint8_t *)s, strlen(s)}; }

enum { OK = MNEM_STATUS_OK, INVAL = MNEM_STATUS_INVALID_ARGUMENT };

/* Value of the n-th occurrence of "key": (whitespace-tolerant), or NULL. */
static const char *kv_nth(const char *json, const char *key, int n) {
  if (!json) return NULL;
  size_t kl = strlen(key);
  for (const char *p = strchr(json, '"'); p; p = strchr(p + 1, '"')) {
    if (strncmp(p + 1, key, kl) != 0 || p[1 + kl] != '"') continue;
    const char *q = p + 2 + kl;
    while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') q++;
    if (*q != ':') continue;
    q++;
    while (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t') q++;
    if (n-- == 0) return q;
  }
  return NULL;
}
static int count_key(const char *json, const char *key) {
  int n = 0;
  while (kv_nth(json, key, n)) n++;
  return n;
}
/* Occurrences of "key": whose value text starts with lit. */
static int count_kv(const char *json, const char *key, const char *lit) {
  int n = 0;
  const char *v;
  for (int i = 0; (v = kv_nth(json, key, i)) != NULL; i++)
    if (strncmp(v, lit, strlen(lit)) == 0) n++;
  return n;
}
/* Copies the n-th string value of key (without quotes); "" when absent or not a string. */
static void str_value(const char *json, const char *key, int n, char *out, size_t cap) {
  const char *v = kv_nth(json, key, n);
  out[0] = '\0';
  if (!v || *v != '"') return;
  const char *end = strchr(v + 1, '"');
  if (!end || (size_t)(end - v - 1) >= cap) return;
  memcpy(out, v + 1, (size_t)(end - v - 1));
  out[end - v - 1] = '\0';
}
/* Position of the value "lit" of key in json, or -1. */
static long pos_of(const char *json, const char *key, const char *lit) {
  const char *v;
  for (int i = 0; (v = kv_nth(json, key, i)) != NULL; i++)
    if (strncmp(v, lit, strlen(lit)) == 0) return (long)(v - json);
  return -1;
}

static void uuid_text(const uint8_t *b, char out[37]) {
  static const char hex[] = "0123456789abcdef";
  int o = 0;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
    out[o++] = hex[b[i] >> 4];
    out[o++] = hex[b[i] & 15];
  }
  out[o] = '\0';
}
static bool is_v7(const uint8_t *b) { return (b[6] >> 4) == 7 && (b[8] & 0xC0) == 0x80; }

static bool all_bytes(const uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return false;
  return true;
}

/* ---- read calls ------------------------------------------------------------------------ */

typedef mnem_status (*read_fn)(const mnem_store *, mnem_str, mnem_str, mnem_str, uint8_t *, size_t,
                               size_t *, mnem_error *);
static const struct {
  const char *name;
  read_fn fn;
} READS[] = {
    {"mnem_search", mnem_search},
    {"mnem_keyword_search", mnem_keyword_search},
    {"mnem_lexical_page", mnem_lexical_page},
    {"mnem_substring_search", mnem_substring_search},
    {"mnem_hybrid_search", mnem_hybrid_search},
};
#define NREADS (sizeof READS / sizeof READS[0])

/* Grow-and-retry read. want OK: returns a malloc'd NUL-terminated copy of the output.
 * Otherwise checks the failure (and *out_len == 0) and returns NULL. */
static char *fetch_(const char *file, int line, read_fn fn, const mnem_store *s, mnem_str app,
                    mnem_str user, mnem_str q, mnem_status want) {
  size_t need = 999;
  if (want != OK) {
    uint8_t buf[64];
    memset(&err, 0x5A, sizeof err);
    expect_(fn(s, app, user, q, buf, sizeof buf, &need, &err), want, &err, file, line,
            "fetch (failure expected)");
    check_(need == 0, file, line, "*out_len == 0 on failure");
    return NULL;
  }
  memset(&err, 0x5A, sizeof err);
  mnem_status st = fn(s, app, user, q, NULL, 0, &need, &err);
  expect_(st, MNEM_STATUS_BUFFER_TOO_SMALL, &err, file, line, "fetch size query");
  if (st != MNEM_STATUS_BUFFER_TOO_SMALL || need == 0) return NULL;
  char *buf = malloc(need + 1);
  size_t len = 999;
  memset(&err, 0x5A, sizeof err);
  st = fn(s, app, user, q, (uint8_t *)buf, need, &len, &err);
  expect_(st, OK, &err, file, line, "fetch read");
  check_(len == need, file, line, "fetch: *out_len == size reported by BUFFER_TOO_SMALL");
  if (st != OK || len != need) {
    free(buf);
    return NULL;
  }
  buf[len] = '\0';
  check_(strlen(buf) == len, file, line, "fetch: output contains no NUL");
  check_(utf8_valid((const unsigned char *)buf, len), file, line, "fetch: output is UTF-8");
  check_(buf[0] == '{' && buf[len - 1] == '}', file, line, "fetch: output is a JSON object");
  return buf;
}
#define FETCH(fn, s, app, user, q) fetch_(__FILE__, __LINE__, (fn), (s), (app), (user), (q), OK)
#define READ_FAILS(fn, s, app, user, q, want)                                                 \
  free(fetch_(__FILE__, __LINE__, (fn), (s), (app), (user), (q), (want)))

/* Result count of a read (-1 on failure). */
static int nres_(const char *file, int line, read_fn fn, const mnem_store *s, mnem_str app,
                 mnem_str user, mnem_str q) {
  char *j = fetch_(file, line, fn, s, app, user, q, OK);
  if (!j) return -1;
  int n = count_key(j, fn == mnem_search ? "custom_metadata" : "record");
  free(j);
  return n;
}
#define NRES(fn, s, app, user, q) nres_(__FILE__, __LINE__, (fn), (s), (app), (user), (q))

/* The output-buffer convention of include/mnem.h, for one read call whose output is non-empty. */
static void buffer_convention(const char *name, read_fn fn, const mnem_store *s, mnem_str app,
                              mnem_str user, mnem_str q, mnem_str bad_q) {
  CTX("%s", name);
  size_t need = 999;
  EXPECT(fn(s, app, user, q, NULL, 0, &need, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(need > 1 && need < (1u << 24));
  if (need <= 1 || need >= (1u << 24)) return;
  const size_t slack = 64;
  uint8_t *buf = malloc(need + slack);
  size_t caps[] = {1, need / 2, need - 1};
  for (size_t i = 0; i < 3; i++) {
    memset(buf, 0xCD, need + slack);
    size_t len = 999;
    EXPECT(fn(s, app, user, q, buf, caps[i], &len, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
    CHECK(len == need);                        /* exact size needed */
    CHECK(all_bytes(buf, need + slack, 0xCD)); /* out untouched */
  }
  memset(buf, 0xCD, need + slack);
  size_t len = 999;
  EXPECT(fn(s, app, user, q, buf, need + slack, &len, &err), OK);
  CHECK(len == need);
  CHECK(all_bytes(buf + need, slack, 0xCD)); /* nothing past *out_len */
  CHECK(memchr(buf, 0, need) == NULL);       /* JSON, no NUL */
  CHECK(buf[0] == '{' && buf[need - 1] == '}');
  memset(buf, 0xCD, need + slack);
  len = 999;
  EXPECT(fn(s, app, user, q, buf, need, &len, &err), OK); /* exact fit */
  CHECK(len == need);
  len = 999;
  EXPECT_NOERR(fn(s, app, user, q, buf, need, &len, NULL), OK); /* err == NULL */
  CHECK(len == need);
  len = 999;
  EXPECT(fn(s, app, user, q, NULL, 16, &len, &err), INVAL); /* out NULL, cap > 0 */
  CHECK(len == 0);
  EXPECT(fn(s, app, user, q, buf, need, NULL, &err), INVAL); /* out_len NULL */
  len = 999;
  EXPECT(fn(NULL, app, user, q, buf, need, &len, &err), INVAL); /* NULL store */
  CHECK(len == 0);
  len = 999;
  EXPECT_NOERR(fn(NULL, app, user, q, buf, need, &len, NULL), INVAL);
  CHECK(len == 0);
  len = 999;
  EXPECT(fn(s, app, user, bad_q, buf, need, &len, &err), INVAL); /* other error: len 0 */
  CHECK(len == 0);
  len = 999;
  EXPECT(fn(s, app, user, bad_q, NULL, 0, &len, &err), INVAL); /* error wins over size query */
  CHECK(len == 0);
  free(buf);
  g_ctx[0] = '\0';
}

/* ---- fixtures -------------------------------------------------------------------------- */

#define EV_CONTENT(role, text) "{\"role\":\"" role "\",\"parts\":[{\"text\":\"" text "\"}]}"
#define EV(id, author, ts, text)                                                           \
  "{\"id\":\"" id "\",\"author\":\"" author "\",\"timestamp\":" ts                            \
  ",\"content\":" EV_CONTENT(author, text) "}"

/* Invalid UTF-8 spellings: bad continuation, overlong, surrogate, > U+10FFFF, 0xFF, truncated. */
static const char *const BAD_UTF8[] = {"\xc3\x28", "\xc0\xaf", "\xed\xa0\x80",
                                       "\xf4\x90\x80\x80", "\xff", "ab\xe2\x82"};
#define BADU STR("ok\xc3\x28")

static char g_tmp[PATH_MAX];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}
static void rm_rf(const char *path) { nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }
static bool path_exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

static mnem_store *open_memory(void) {
  mnem_store *s = NULL;
  EXPECT(mnem_open(STR(":memory:"), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  CHECK(s != NULL);
  if (!s) {
    fprintf(stderr, "cannot open :memory:, giving up\n");
    exit(2);
  }
  return s;
}

/* ---- static data ----------------------------------------------------------------------- */

/* Everything scripts/test-c passes in: the version Cargo.toml names, the stores written by
 * examples/c_fixtures.rs. Missing values fail the tests that need them (never skipped). */
static const char *env_or_fail(const char *name) {
  const char *v = getenv(name);
  if (!v || !v[0]) {
    g_fail++;
    fprintf(stderr, "FAIL: %s is not set (run this program through scripts/test-c)\n", name);
    return NULL;
  }
  return v;
}

static void test_static(void) {
  CHECK(mnem_abi_version() == MNEM_ABI_VERSION);
  CHECK(MNEM_ABI_VERSION == 1);
  CHECK(MNEM_ERROR_MESSAGE_CAP == 512);
  CHECK(MNEM_OPEN_CREATE == 1u && MNEM_OPEN_READ_ONLY == 2u);
  CHECK(sizeof(mnem_error) == 8 + MNEM_ERROR_MESSAGE_CAP);
  CHECK(offsetof(mnem_error, detail) == 4 && offsetof(mnem_error, message) == 8);
  CHECK(sizeof(mnem_str) == 2 * sizeof(void *));
  /* The version is the crate's, NUL-terminated, and one static string. */
  const char *v = mnem_version();
  const char *want_version = env_or_fail("MNEM_TEST_VERSION");
  CHECK(v != NULL && want_version != NULL && strcmp(v, want_version) == 0);
  CHECK(mnem_version() == v);
  const struct {
    int32_t st;
    int32_t value;
    const char *name;
  } names[] = {
      {MNEM_STATUS_OK, 0, "OK"},
      {MNEM_STATUS_INVALID_ARGUMENT, 1, "INVALID_ARGUMENT"},
      {MNEM_STATUS_BUFFER_TOO_SMALL, 2, "BUFFER_TOO_SMALL"},
      {MNEM_STATUS_NOT_FOUND, 3, "NOT_FOUND"},
      {MNEM_STATUS_BUSY, 4, "BUSY"},
      {MNEM_STATUS_READ_ONLY, 5, "READ_ONLY"},
      {MNEM_STATUS_IO, 6, "IO"},
      {MNEM_STATUS_CORRUPTION, 7, "CORRUPTION"},
      {MNEM_STATUS_INCOMPATIBLE, 8, "INCOMPATIBLE"},
      {MNEM_STATUS_INTERNAL, 100, "INTERNAL"},
  };
  enum { NNAMES = sizeof names / sizeof names[0] };
  const char *kept[NNAMES];
  for (size_t i = 0; i < NNAMES; i++) {
    CTX("status %d", (int)names[i].value);
    const char *n = mnem_status_name(names[i].st);
    kept[i] = n;
    CHECK(names[i].st == names[i].value);
    CHECK(n != NULL && strcmp(n, names[i].name) == 0);
    CHECK(mnem_status_name(names[i].st) == n); /* static: the same string every time */
  }
  const int32_t unknown[] = {9, 42, 99, 101, -1, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    CTX("status %d", (int)unknown[i]);
    const char *n = mnem_status_name(unknown[i]);
    CHECK(n != NULL && strcmp(n, "UNKNOWN") == 0);
  }
  g_ctx[0] = '\0';
  mnem_free(NULL); /* a no-op: it must not crash */
  /* Static strings outlive every store: use one, free it, read them again (ASan and valgrind
   * would flag a string owned by the store). */
  mnem_store *s = NULL;
  EXPECT(mnem_open(STR(":memory:"), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  EXPECT(mnem_put_episodes(s, STR("a"), STR("u"), STR("{\"primary\":\"x\"}"), NULL, 0, &err), OK);
  mnem_free(s);
  CHECK(want_version != NULL && strcmp(v, want_version) == 0);
  for (size_t i = 0; i < NNAMES; i++) {
    CTX("status %d after mnem_free", (int)names[i].value);
    CHECK(strcmp(kept[i], names[i].name) == 0);
  }
  g_ctx[0] = '\0';
}

/* ---- mnem_open ------------------------------------------------------------------------- */

static void test_open(void) {
  char missing[PATH_MAX + 16], db[PATH_MAX + 16];
  snprintf(missing, sizeof missing, "%s/missing", g_tmp);
  snprintf(db, sizeof db, "%s/opened", g_tmp);
  mnem_store *s = NULL;

  EXPECT(mnem_open(S(missing), 0, EMPTY, &s, &err), MNEM_STATUS_NOT_FOUND);
  CHECK(s == NULL);
  EXPECT(mnem_open(S(missing), MNEM_OPEN_READ_ONLY, EMPTY, &s, &err), MNEM_STATUS_NOT_FOUND);
  CHECK(s == NULL);
  EXPECT_NOERR(mnem_open(S(missing), 0, EMPTY, &s, NULL), MNEM_STATUS_NOT_FOUND);
  CHECK(!path_exists(missing));

  const uint32_t bad_flags[] = {16u, 8u, 0x80000000u, MNEM_OPEN_CREATE | 0x100u,
                                MNEM_OPEN_CREATE | MNEM_OPEN_READ_ONLY,
                                MNEM_OPEN_CREATE | MNEM_OPEN_VIEW};
  for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
    CTX("flags 0x%x", (unsigned)bad_flags[i]);
    EXPECT(mnem_open(S(missing), bad_flags[i], EMPTY, &s, &err), INVAL);
    CHECK(s == NULL);
    EXPECT(mnem_open(STR(":memory:"), bad_flags[i], EMPTY, &s, &err), INVAL);
    CHECK(s == NULL);
  }
  const char *bad_opts[] = {"{\"bogus\":true}",
                            "{\"sync_writes\":true,\"sync_write\":true}",
                            "{",
                            "{\"sync_writes\":true",
                            "[]",
                            "null",
                            "true",
                            "{\"sync_writes\":\"yes\"}",
                            "{\"sync_writes\":1}",
                            "{\"sync_writes\":true} x",
                            "{\"sync_writes\":true}{}",
                            "{\"\xc3\x28\":true}"};
  for (size_t i = 0; i < sizeof bad_opts / sizeof bad_opts[0]; i++) {
    CTX("options %s", bad_opts[i]);
    EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, S(bad_opts[i]), &s, &err), INVAL);
    CHECK(s == NULL);
    EXPECT(mnem_open(STR(":memory:"), MNEM_OPEN_CREATE, S(bad_opts[i]), &s, &err), INVAL);
    CHECK(s == NULL);
  }
  g_ctx[0] = '\0';
  EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, STR("{\"bogus\":1}"), &s, &err), INVAL);
  CHECK(msg_has("bogus")); /* unknown option key named */
  EXPECT(mnem_open(NULLSTR, MNEM_OPEN_CREATE, EMPTY, &s, &err), INVAL);
  EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, NULLSTR, &s, &err), INVAL);
  for (size_t i = 0; i < sizeof BAD_UTF8 / sizeof BAD_UTF8[0]; i++) {
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/x%s", g_tmp, BAD_UTF8[i]);
    CTX("bad utf8 #%zu", i);
    EXPECT(mnem_open(S(p), MNEM_OPEN_CREATE, EMPTY, &s, &err), INVAL);
    CHECK(s == NULL && !path_exists(p));
  }
  g_ctx[0] = '\0';
  EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, EMPTY, NULL, &err), INVAL); /* out_store NULL */
  EXPECT_NOERR(mnem_open(S(missing), MNEM_OPEN_CREATE, EMPTY, NULL, NULL), INVAL);
  CHECK(!path_exists(missing)); /* no rejected open created anything */

  /* sync_writes, BUSY, CREATE on an existing store */
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, STR("{\"sync_writes\":true}"), &s, &err), OK);
  CHECK(s != NULL);
  if (!s) return;
  mnem_store *s2 = NULL;
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, EMPTY, &s2, &err), MNEM_STATUS_BUSY);
  CHECK(s2 == NULL);
  EXPECT(mnem_open(S(db), 0, EMPTY, &s2, &err), MNEM_STATUS_BUSY);
  CHECK(s2 == NULL);
  EXPECT_NOERR(mnem_open(S(db), 0, EMPTY, &s2, NULL), MNEM_STATUS_BUSY);
  CHECK(s2 == NULL);
  EXPECT(mnem_put_episodes(s, STR("a"), STR("u"), STR("{\"primary\":\"synced wombat\"}"), NULL, 0,
                           &err),
         OK);
  uint64_t n = 99;
  EXPECT(mnem_add_session(s, STR("a"), STR("u"), STR("s"), STR(EV("w1", "user", "1", "wombat")),
                          &n, &err),
         OK);
  CHECK(n == 1);
  EXPECT(mnem_flush(s, &err), OK);
  mnem_free(s);
  s = NULL;
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, STR("{}"), &s, &err), OK); /* exists: just opens */
  CHECK(s != NULL);
  CHECK(NRES(mnem_keyword_search, s, STR("a"), STR("u"), STR("{\"text\":\"wombat\"}")) == 2);
  mnem_free(s);
  s = NULL;
  EXPECT(mnem_open(S(db), 0, STR("{\"sync_writes\":false}"), &s, &err), OK);
  CHECK(NRES(mnem_search, s, STR("a"), STR("u"), STR("wombat")) == 1);
  mnem_free(s);

  /* cache_bytes: at least 1 MiB, an integer; reported by mnem_stats */
  const char *bad_cache[] = {"{\"cache_bytes\":1048575}", "{\"cache_bytes\":-1}",
                             "{\"cache_bytes\":1.5}", "{\"cache_bytes\":\"8M\"}"};
  for (size_t i = 0; i < sizeof bad_cache / sizeof bad_cache[0]; i++) {
    CTX("options %s", bad_cache[i]);
    s = NULL;
    EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, S(bad_cache[i]), &s, &err), INVAL);
    CHECK(s == NULL && msg_has("cache_bytes"));
  }
  g_ctx[0] = '\0';
  CHECK(!path_exists(missing));
  EXPECT(mnem_open(S(db), 0, STR("{\"cache_bytes\":8388608}"), &s, &err), OK);
  size_t len = 0;
  EXPECT(mnem_stats(s, NULL, 0, &len, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(len > 0);
  char stats[2048];
  size_t need = len;
  EXPECT(mnem_stats(s, (uint8_t *)stats, sizeof stats - 1, &len, &err), OK);
  CHECK(len == need);
  stats[len < sizeof stats ? len : sizeof stats - 1] = '\0';
  CHECK(strstr(stats, "\"cache_bytes\":8388608") != NULL);
  CHECK(strstr(stats, "\"opened_format\":3") != NULL);
  CHECK(strstr(stats, "\"journal_replayed\":0") != NULL);
  CHECK(strstr(stats, "\"block_cache\":{\"budget_bytes\":2097152") != NULL);
  EXPECT(mnem_stats(NULL, (uint8_t *)stats, sizeof stats, &len, &err), INVAL);
  mnem_free(s);
}

/* ---- NULL store and bad strings -------------------------------------------------------- */

static void test_null_store(void) {
  uint64_t n = 7;
  uint8_t ids[16];
  EXPECT(mnem_flush(NULL, &err), INVAL);
  EXPECT_NOERR(mnem_flush(NULL, NULL), INVAL);
  EXPECT(mnem_add_session(NULL, STR("a"), STR("u"), STR("s"), EMPTY, &n, &err), INVAL);
  EXPECT_NOERR(mnem_add_session(NULL, STR("a"), STR("u"), STR("s"), EMPTY, &n, NULL), INVAL);
  EXPECT(mnem_add_events(NULL, STR("a"), STR("u"), STR("s"), EMPTY, EMPTY, &n, &err), INVAL);
  EXPECT_NOERR(mnem_add_events(NULL, STR("a"), STR("u"), STR("s"), EMPTY, EMPTY, &n, NULL), INVAL);
  EXPECT(mnem_delete_memory(NULL, STR("a"), STR("u"), STR("x"), &n, &err), INVAL);
  EXPECT_NOERR(mnem_delete_memory(NULL, STR("a"), STR("u"), STR("x"), &n, NULL), INVAL);
  EXPECT(mnem_put_episodes(NULL, STR("a"), STR("u"), STR("{}"), ids, sizeof ids, &err), INVAL);
  EXPECT_NOERR(mnem_put_episodes(NULL, STR("a"), STR("u"), STR("{}"), ids, sizeof ids, NULL),
               INVAL);
  EXPECT(mnem_delete_episodes(NULL, STR("a"), STR("u"), EMPTY, &n, &err), INVAL);
  EXPECT_NOERR(mnem_delete_episodes(NULL, STR("a"), STR("u"), EMPTY, &n, NULL), INVAL);
  const char *qs[] = {"x", "{\"text\":\"x\"}", "{\"text\":\"x\"}", "{\"text\":\"x\"}",
                      "{\"text\":\"x\"}"};
  for (size_t i = 0; i < NREADS; i++) {
    CTX("%s", READS[i].name);
    READ_FAILS(READS[i].fn, NULL, STR("a"), STR("u"), S(qs[i]), INVAL);
  }
  g_ctx[0] = '\0';
}

/* Replaces each string argument in turn by ptr NULL/len 3 and by invalid UTF-8. */
#define MAXARGS 5
static void bad_args(const char *fname, int nargs, const mnem_str *good, const mnem_str *bad,
                     mnem_status (*call)(mnem_store *, const mnem_str *), mnem_store *s) {
  for (int i = 0; i < nargs; i++) {
    mnem_str a[MAXARGS];
    memcpy(a, good, sizeof(mnem_str) * (size_t)nargs);
    a[i] = NULLSTR;
    CTX("%s: string arg %d is {NULL,3}", fname, i);
    EXPECT(call(s, a), INVAL);
    a[i] = bad[i];
    CTX("%s: string arg %d is invalid UTF-8", fname, i);
    EXPECT(call(s, a), INVAL);
  }
  g_ctx[0] = '\0';
}
static mnem_status call_add_session(mnem_store *s, const mnem_str *a) {
  uint64_t n;
  return mnem_add_session(s, a[0], a[1], a[2], a[3], &n, &err);
}
static mnem_status call_add_events(mnem_store *s, const mnem_str *a) {
  uint64_t n;
  return mnem_add_events(s, a[0], a[1], a[2], a[3], a[4], &n, &err);
}
static mnem_status call_delete_memory(mnem_store *s, const mnem_str *a) {
  uint64_t n;
  return mnem_delete_memory(s, a[0], a[1], a[2], &n, &err);
}
static mnem_status call_put_episodes(mnem_store *s, const mnem_str *a) {
  uint8_t ids[16];
  return mnem_put_episodes(s, a[0], a[1], a[2], ids, sizeof ids, &err);
}
static mnem_status call_delete_episodes(mnem_store *s, const mnem_str *a) {
  uint64_t n;
  return mnem_delete_episodes(s, a[0], a[1], a[2], &n, &err);
}
static read_fn g_read;
static mnem_status call_read(mnem_store *s, const mnem_str *a) {
  uint8_t out[4096];
  size_t len = 999;
  mnem_status st = g_read(s, a[0], a[1], a[2], out, sizeof out, &len, &err);
  if (len != 0) {
    g_fail++;
    fprintf(stderr, "FAIL: *out_len %zu != 0 after a failed read  [%s]\n", len, g_ctx);
  }
  return st;
}

static void test_bad_strings(mnem_store *s) {
  const mnem_str ns_bad[2] = {BADU, BADU};
  {
    mnem_str good[4] = {STR("bad"), STR("u"), STR("s"), STR(EV("b1", "user", "1", "kiwi"))};
    mnem_str bad[4] = {ns_bad[0], ns_bad[1], STR("s\xed\xa0\x80"),
                       STR(EV("b1", "user", "1", "kiwi \xc3\x28"))};
    bad_args("mnem_add_session", 4, good, bad, call_add_session, s);
  }
  {
    mnem_str good[5] = {STR("bad"), STR("u"), STR("s"), STR(EV("b2", "user", "1", "kiwi")),
                        STR("{\"note\":\"x\"}")};
    mnem_str bad[5] = {ns_bad[0], ns_bad[1], STR("\xff"),
                       STR(EV("b2\xc0\xaf", "user", "1", "kiwi")), STR("{\"note\":\"\xc3\x28\"}")};
    bad_args("mnem_add_events", 5, good, bad, call_add_events, s);
  }
  {
    mnem_str good[3] = {STR("bad"), STR("u"), STR("b1")};
    mnem_str bad[3] = {ns_bad[0], ns_bad[1], STR("b1\xc3\x28")};
    bad_args("mnem_delete_memory", 3, good, bad, call_delete_memory, s);
  }
  {
    mnem_str good[3] = {STR("bad"), STR("u"), STR("{\"primary\":\"kiwi\"}")};
    mnem_str bad[3] = {ns_bad[0], ns_bad[1], STR("{\"primary\":\"kiwi \xf4\x90\x80\x80\"}")};
    bad_args("mnem_put_episodes", 3, good, bad, call_put_episodes, s);
  }
  {
    mnem_str good[3] = {STR("bad"), STR("u"), STR("\"0190a5e4-0000-7000-8000-000000000001\"")};
    mnem_str bad[3] = {ns_bad[0], ns_bad[1], STR("\"0190a5e4-0000-7000-8000-00000000000\xff\"")};
    bad_args("mnem_delete_episodes", 3, good, bad, call_delete_episodes, s);
  }
  const char *good_q[NREADS] = {"kiwi", "{\"text\":\"kiwi\"}", "{\"text\":\"kiwi\"}",
                                "{\"text\":\"kiwi\"}", "{\"text\":\"kiwi\"}"};
  const char *bad_q[NREADS] = {"kiwi\xc3\x28", "{\"text\":\"kiwi\xc3\x28\"}",
                               "{\"text\":\"kiwi\xc3\x28\"}", "{\"text\":\"kiwi\xc3\x28\"}",
                               "{\"text\":\"kiwi\xc3\x28\"}"};
  for (size_t r = 0; r < NREADS; r++) {
    mnem_str good[3] = {STR("bad"), STR("u"), S(good_q[r])};
    mnem_str bad[3] = {ns_bad[0], ns_bad[1], S(bad_q[r])};
    g_read = READS[r].fn;
    bad_args(READS[r].name, 3, good, bad, call_read, s);
  }
  /* every invalid UTF-8 spelling, in a namespace argument */
  for (size_t i = 0; i < sizeof BAD_UTF8 / sizeof BAD_UTF8[0]; i++) {
    CTX("bad utf8 #%zu", i);
    EXPECT(mnem_put_episodes(s, S(BAD_UTF8[i]), STR("u"), STR("{\"primary\":\"kiwi\"}"), NULL, 0,
                             &err),
           INVAL);
    EXPECT(mnem_add_session(s, STR("bad"), S(BAD_UTF8[i]), STR("s"),
                            STR(EV("b3", "user", "1", "kiwi")), NULL, &err),
           INVAL);
    READ_FAILS(mnem_search, s, STR("bad"), STR("u"), S(BAD_UTF8[i]), INVAL);
  }
  g_ctx[0] = '\0';
  /* nothing of the above was written */
  CHECK(NRES(mnem_search, s, STR("bad"), STR("u"), STR("kiwi")) == 0);
  CHECK(NRES(mnem_keyword_search, s, STR("bad"), STR("u"), STR("{\"text\":\"kiwi\"}")) == 0);
}

/* ---- ADK seam -------------------------------------------------------------------------- */

static void local_iso(time_t t, const char *frac, char *out, size_t cap) {
  struct tm tm;
  localtime_r(&t, &tm);
  size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, cap - n, "%s", frac);
}

#define APP STR("adk-app")
#define USER STR("adk-user")

static void test_adk(mnem_store *s) {
  uint64_t n = 99;
  const char session1[] = EV("event-1a", "user", "12345.5", "The ADK is a great toolkit.") "\n"
      "{\"id\":\"event-1b\",\"author\":\"user\",\"timestamp\":12346.0}\n"
      EV("event-1c", "model", "12347", "I agree. The Agent Development Kit (ADK) rocks!") "\n"
      "{\"id\":\"event-1e\",\"author\":\"user\",\"timestamp\":12348.0,"
      "\"content\":{\"role\":\"user\",\"parts\":[]}}\n";
  EXPECT(mnem_add_session(s, APP, USER, STR("session-1"), STR(session1), &n, &err), OK);
  CHECK(n == 2); /* no-content and empty-parts events are dropped */

  /* unknown Event/Content fields accepted and content returned byte for byte */
#define ODD_CONTENT                                                                            \
  "{\"parts\":[{\"text\":\"I like to code in Python quux.\",\"x_part\":[1,2.5,null]},"         \
  "{\"function_call\":{\"name\":\"f\",\"args\":{\"q\":\"quux\"}}}],\"role\":\"user\","         \
  "\"x_top\":{\"k\":\"v\"}}"
  n = 99;
  EXPECT(mnem_add_session(s, APP, USER, STR("session-2"),
                          STR("{\"id\":\"event-2a\",\"author\":\"user\",\"timestamp\":54321.0,"
                              "\"invocationId\":\"inv-9\",\"actions\":{\"state_delta\":{}},"
                              "\"content\":" ODD_CONTENT "}"),
                          &n, &err),
         OK);
  CHECK(n == 1);

  char *j = FETCH(mnem_search, s, APP, USER, STR("How about ADK?"));
  if (j) {
    char want[64], got[64];
    CHECK(strncmp(j, "{\"memories\"", 11) == 0);
    CHECK(count_key(j, "custom_metadata") == 2);
    CHECK(count_kv(j, "custom_metadata", "{}") == 2);
    long a = pos_of(j, "id", "\"event-1a\""), c = pos_of(j, "id", "\"event-1c\"");
    CHECK(a >= 0 && c > a); /* equal scores keep insertion order */
    CHECK(strstr(j, EV_CONTENT("user", "The ADK is a great toolkit.")) != NULL);
    CHECK(count_kv(j, "author", "\"model\"") == 1);
    local_iso(12345, ".500000", want, sizeof want); /* local time, no offset */
    str_value(j, "timestamp", 0, got, sizeof got);
    CHECK(strcmp(want, got) == 0);
    local_iso(12347, "", want, sizeof want); /* no microseconds when zero */
    str_value(j, "timestamp", 1, got, sizeof got);
    CHECK(strcmp(want, got) == 0);
    free(j);
  }
  j = FETCH(mnem_search, s, APP, USER, STR("quux"));
  if (j) {
    CHECK(count_key(j, "custom_metadata") == 1);
    CHECK(strstr(j, ODD_CONTENT) != NULL);
    free(j);
  }
  /* ranking by number of distinct matching words */
  j = FETCH(mnem_search, s, APP, USER, STR("agent rocks adk adk"));
  if (j) {
    long a = pos_of(j, "id", "\"event-1a\""), c = pos_of(j, "id", "\"event-1c\"");
    CHECK(c >= 0 && a > c);
    free(j);
  }
  CHECK(NRES(mnem_search, s, APP, USER, STR("nonexistent")) == 0);
  CHECK(NRES(mnem_search, s, APP, USER, STR("  ...  ")) == 0);
  CHECK(NRES(mnem_search, s, APP, USER, EMPTY) == 0); /* {NULL,0} is the empty string */
  CHECK(NRES(mnem_search, s, APP, STR("other-user"), STR("ADK")) == 0);

  /* add_events: delta, dedup against the bucket and within the batch, first write wins */
  n = 99;
  EXPECT(mnem_add_events(s, APP, USER, STR("session-1"),
                         STR(EV("event-1a", "user", "1", "Updated duplicate text.") "\n"
                             EV("event-1d", "user", "2", "A new fact about zebras.") "\n"
                             EV("event-1d", "user", "3", "second zebras copy")),
                         EMPTY, &n, &err),
         OK);
  CHECK(n == 1);
  CHECK(NRES(mnem_search, s, APP, USER, STR("Updated")) == 0);
  CHECK(NRES(mnem_search, s, APP, USER, STR("copy")) == 0);
  CHECK(NRES(mnem_search, s, APP, USER, STR("zebras")) == 1);
  n = 99;
  EXPECT(mnem_add_events(s, APP, USER, STR("session-1"), EMPTY, EMPTY, &n, &err), OK);
  CHECK(n == 0);
  /* dedup is per bucket: same id in another session is stored again */
  EXPECT(mnem_add_events(s, APP, USER, STR("session-other"),
                         STR(EV("event-1d", "user", "2", "A new fact about zebras.")),
                         STR("{\"ttl_ms\":3600000,\"tags\":[\"t1\"],\"ignored\":{\"x\":[1]}}"), &n,
                         &err),
         OK);
  CHECK(n == 1);
  CHECK(NRES(mnem_search, s, APP, USER, STR("zebras")) == 2);
  /* empty session id is the __unknown_session_id__ bucket */
  EXPECT(mnem_add_events(s, APP, USER, EMPTY, STR(EV("event-u1", "user", "5", "walrus")),
                         EMPTY, &n, &err),
         OK);
  CHECK(n == 1);
  EXPECT(mnem_add_events(s, APP, USER, STR("__unknown_session_id__"),
                         STR(EV("event-u1", "user", "5", "walrus again")), EMPTY, &n, &err),
         OK);
  CHECK(n == 0);
  EXPECT_NOERR(mnem_add_events(s, APP, USER, STR(""), EMPTY, EMPTY, NULL, NULL), OK);
  /* custom metadata: "" or an object; documented keys are validated */
  const char *bad_meta[] = {"[1]", "{", "null", "\"x\"", "{\"ttl_ms\":0}", "{\"ttl_ms\":-5}",
                            "{\"ttl_ms\":\"1h\"}", "{\"tags\":\"t\"}", "{\"tags\":[1]}",
                            "{\"episode_type\":7}"};
  for (size_t i = 0; i < sizeof bad_meta / sizeof bad_meta[0]; i++) {
    CTX("custom_metadata %s", bad_meta[i]);
    EXPECT(mnem_add_events(s, APP, USER, STR("s-meta"),
                           STR(EV("event-m1", "user", "5", "meerkat")), S(bad_meta[i]), &n,
                           &err),
           INVAL);
  }
  g_ctx[0] = '\0';
  CHECK(NRES(mnem_search, s, APP, USER, STR("meerkat")) == 0);

  /* delete_memory: no-op on "", unknown id, every bucket, tombstone blocks later adds */
  n = 99;
  EXPECT(mnem_delete_memory(s, APP, USER, EMPTY, &n, &err), OK);
  CHECK(n == 0);
  n = 99;
  EXPECT(mnem_delete_memory(s, APP, USER, STR("no-such-event"), &n, &err), OK);
  CHECK(n == 0);
  EXPECT_NOERR(mnem_delete_memory(s, APP, USER, STR("no-such-event-2"), NULL, NULL), OK);
  n = 99;
  EXPECT(mnem_delete_memory(s, APP, USER, STR("event-1d"), &n, &err), OK);
  CHECK(n == 2);
  CHECK(NRES(mnem_search, s, APP, USER, STR("zebras")) == 0);
  n = 99;
  EXPECT(mnem_add_events(s, APP, USER, STR("session-1"),
                         STR(EV("event-1d", "user", "2", "zebras are back")), EMPTY, &n, &err),
         OK);
  CHECK(n == 0);
  EXPECT(mnem_add_session(s, APP, USER, STR("session-9"),
                          STR(EV("event-1d", "user", "2", "zebras are back")), &n, &err),
         OK);
  CHECK(NRES(mnem_search, s, APP, USER, STR("zebras")) == 0);
  n = 99;
  EXPECT(mnem_delete_memory(s, APP, USER, STR("event-1d"), &n, &err), OK);
  CHECK(n == 0);

  /* add_session replaces the bucket wholesale */
  EXPECT(mnem_add_session(s, APP, USER, STR("session-1"),
                          STR(EV("event-1f", "user", "9", "replacement yak")), &n, &err),
         OK);
  CHECK(n == 1);
  CHECK(NRES(mnem_search, s, APP, USER, STR("toolkit")) == 0);
  CHECK(NRES(mnem_search, s, APP, USER, STR("yak")) == 1);
  EXPECT(mnem_add_session(s, APP, USER, STR("session-empty"), EMPTY, &n, &err), OK);
  CHECK(n == 0);

  /* namespaces never collide, whatever the bytes (/, NUL, empty) */
  EXPECT(mnem_add_session(s, STR("app/other-user"), STR("user"), STR("s"),
                          STR(EV("sec", "user", "1", "This is a secret.")), &n, &err),
         OK);
  CHECK(NRES(mnem_search, s, STR("app"), STR("other-user/user"), STR("secret")) == 0);
  CHECK(NRES(mnem_search, s, STR("app/other-user"), STR("user"), STR("secret")) == 1);
  EXPECT(mnem_add_session(s, STR("x\0y"), STR("u"), STR("s"),
                          STR(EV("nul", "user", "1", "hidden nul")), &n, &err),
         OK);
  CHECK(NRES(mnem_search, s, STR("x"), STR("y\0u"), STR("hidden")) == 0);
  CHECK(NRES(mnem_search, s, STR("x\0y"), STR("u"), STR("hidden")) == 1);
  EXPECT(mnem_add_session(s, EMPTY, EMPTY, STR("s"), STR(EV("e0", "user", "1", "empty ns")),
                          &n, &err),
         OK);
  CHECK(NRES(mnem_search, s, EMPTY, EMPTY, STR("empty")) == 1);
  /* ADK events are episodes of type "event", visible to the other APIs */
  CHECK(NRES(mnem_substring_search, s, APP, USER, STR("{\"text\":\"replacement y\"}")) == 1);
  CHECK(NRES(mnem_keyword_search, s, APP, USER,
             STR("{\"text\":\"yak\",\"episode_type\":\"event\"}")) == 1);

  buffer_convention("mnem_search", mnem_search, s, APP, USER, STR("ADK python yak"),
                    STR("\xff"));
}

/* ---- batch atomicity ------------------------------------------------------------------- */

static void test_atomicity(mnem_store *s) {
  uint64_t n = 99;
  mnem_str app = STR("atom"), user = STR("u");
  const char bad3[] = EV("atom-1", "user", "1", "atomic ibex") "\n"
      EV("atom-2", "user", "2", "atomic ibex two") "\n"
      "{\"id\":\"atom-3\",\"content\":\n"
      EV("atom-4", "user", "4", "atomic ibex four") "\n";
  EXPECT(mnem_add_session(s, app, user, STR("s"), STR(bad3), &n, &err), INVAL);
  CHECK(msg_has("line 3"));
  const char badtype2[] = EV("atom-1", "user", "1", "atomic ibex") "\n"
      "{\"id\":\"atom-2\",\"timestamp\":\"noon\",\"content\":" EV_CONTENT("user", "ibex") "}\n";
  EXPECT(mnem_add_session(s, app, user, STR("s"), STR(badtype2), &n, &err), INVAL);
  CHECK(msg_has("line 2"));
  EXPECT(mnem_add_events(s, app, user, STR("s"), STR(bad3), EMPTY, &n, &err), INVAL);
  CHECK(msg_has("line 3"));
  EXPECT(mnem_add_events(s, app, user, STR("s"), STR(badtype2), EMPTY, &n, &err), INVAL);
  CHECK(msg_has("line 2"));
  EXPECT(mnem_add_events(s, app, user, STR("s"), STR(EV("atom-1", "user", "1", "ibex") "\n[]"),
                         EMPTY, &n, &err),
         INVAL);
  CHECK(msg_has("line 2"));
  CHECK(NRES(mnem_search, s, app, user, STR("ibex")) == 0);

  const char ep_bad[] = "{\"primary\":\"atomic ibex\"}\n"
                        "{\"primary\":\"atomic ibex\",\"bogus_key\":1}\n"
                        "{\"primary\":\"atomic ibex\"}\n";
  uint8_t ids[48];
  EXPECT(mnem_put_episodes(s, app, user, STR(ep_bad), ids, sizeof ids, &err), INVAL);
  CHECK(msg_has("line 2"));
  CHECK(msg_has("bogus_key"));
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"ibex\"}")) == 0);
  CHECK(NRES(mnem_search, s, app, user, STR("ibex")) == 0);
}

/* ---- put / delete episodes ------------------------------------------------------------- */

#define FIXED_ID "0190a5e4-0000-7000-8000-0000000000aa"
static const uint8_t FIXED_BYTES[16] = {0x01, 0x90, 0xa5, 0xe4, 0, 0, 0x70, 0,
                                        0x80, 0,    0,    0,    0, 0, 0,    0xaa};

static void test_episodes(mnem_store *s) {
  mnem_str app = STR("ep"), user = STR("u");
  const char batch[] =
      "{\"primary\":\"aardvark alpha\",\"tags\":[\"t1\"],\"episode_type\":\"note\"}\n"
      "{\"id\":\"" FIXED_ID "\",\"primary\":\"aardvark beta\",\"secondary\":\"second field\","
      "\"context\":\"ctx\",\"metadata\":{\"k\":[1,2]},\"author\":\"me\",\"session_id\":\"s\","
      "\"event_id\":\"e\",\"timestamp\":1.5,\"ttl_ms\":3600000,\"content\":{\"any\":\"json\"}}\n"
      "{\"primary\":\"gamma aardvark aardvark\",\"expires_at_ms\":4102444800000}\n";
  uint8_t ids[64];
  const mnem_str q = STR("{\"text\":\"aardvark\"}");

  /* out_ids too small: rejected before anything is written */
  memset(ids, 0xEE, sizeof ids);
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), ids, 47, &err), INVAL);
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), ids, 16, &err), INVAL);
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), NULL, 48, &err), INVAL);
  EXPECT_NOERR(mnem_put_episodes(s, app, user, STR(batch), ids, 47, NULL), INVAL);
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 0);

  memset(ids, 0xEE, sizeof ids);
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), ids, sizeof ids, &err), OK);
  CHECK(memcmp(ids + 16, FIXED_BYTES, 16) == 0); /* line order */
  CHECK(is_v7(ids) && is_v7(ids + 32));
  CHECK(memcmp(ids, ids + 32, 16) != 0);
  CHECK(all_bytes(ids + 48, 16, 0xEE)); /* nothing past 16 x lines */
  char id1[37], id3[37];
  uuid_text(ids, id1);
  uuid_text(ids + 32, id3);

  char *j = FETCH(mnem_keyword_search, s, app, user, q);
  if (j) {
    CHECK(count_key(j, "record") == 3);
    CHECK(count_kv(j, "revision", "1") == 3);
    CHECK(count_kv(j, "id", "\"" FIXED_ID "\"") == 1);
    CHECK(count_kv(j, "episode_type", "\"note\"") == 1);
    CHECK(count_kv(j, "episode_type", "\"episode\"") == 2);
    CHECK(count_kv(j, "metadata", "{\"k\":[1,2]}") == 1);
    CHECK(count_kv(j, "content", "{\"any\":\"json\"}") == 1);
    CHECK(count_kv(j, "expires_at_ms", "4102444800000") == 1);
    CHECK(count_kv(j, "timestamp", "1.5") == 1);
    CHECK(count_key(j, "created_at_ms") == 3 && count_key(j, "updated_at_ms") == 3);
    CHECK(count_key(j, "score") == 3);
    free(j);
  }
  /* same id again: new revision */
  EXPECT(mnem_put_episodes(s, app, user,
                           STR("{\"id\":\"" FIXED_ID "\",\"primary\":\"aardvark beta again\"}"),
                           NULL, 0, &err),
         OK);
  j = FETCH(mnem_keyword_search, s, app, user, q);
  if (j) {
    CHECK(count_key(j, "record") == 3);
    CHECK(count_kv(j, "revision", "2") == 1);
    CHECK(strstr(j, "aardvark beta again") != NULL);
    free(j);
  }
  /* expired at write time: invisible */
  EXPECT(mnem_put_episodes(s, app, user, STR("{\"primary\":\"expired okapi\",\"expires_at_ms\":1}"),
                           NULL, 0, &err),
         OK);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"okapi\"}")) == 0);
  CHECK(NRES(mnem_substring_search, s, app, user, STR("{\"text\":\"okapi\"}")) == 0);
  /* empty batch */
  EXPECT(mnem_put_episodes(s, app, user, EMPTY, NULL, 0, &err), OK);
  EXPECT_NOERR(mnem_put_episodes(s, app, user, STR(""), ids, sizeof ids, NULL), OK);
  /* bad lines */
  const char *bad[] = {"{\"id\":\"not-a-uuid\",\"primary\":\"x\"}",
                       "{\"id\":7}",
                       "{\"ttl_ms\":0}",
                       "{\"ttl_ms\":-1}",
                       "{\"ttl_ms\":5000,\"expires_at_ms\":99999999999999}",
                       "{\"bogus\":1}",
                       "{\"revision\":3}",
                       "{\"created_at_ms\":3}",
                       "[1]",
                       "\"str\"",
                       "{\"tags\":\"t\"}",
                       "{\"tags\":[1]}",
                       "{\"metadata\":[1]}",
                       "{\"primary\":5}",
                       "{\"embedding\":\"x\"}",
                       "{\"primary\":\"x\"",
                       "{\"primary\":\"x\"} {}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CTX("episode line %s", bad[i]);
    EXPECT(mnem_put_episodes(s, app, user, S(bad[i]), ids, sizeof ids, &err), INVAL);
  }
  g_ctx[0] = '\0';
  EXPECT(mnem_put_episodes(s, app, user, STR("{\"bogus\":1}"), NULL, 0, &err), INVAL);
  CHECK(msg_has("bogus") && msg_has("line 1"));

  /* embeddings: one dimension per namespace */
  mnem_str vapp = STR("vec");
  EXPECT(mnem_put_episodes(s, vapp, user,
                           STR("{\"primary\":\"v1\",\"embedding\":[1,0,0]}\n"
                               "{\"primary\":\"v2\",\"embedding\":[1,0]}"),
                           NULL, 0, &err),
         INVAL);
  CHECK(msg_has("line 2"));
  EXPECT(mnem_put_episodes(s, vapp, user, STR("{\"primary\":\"v1\",\"embedding\":[1,0,0]}"), NULL,
                           0, &err),
         OK);
  EXPECT(mnem_put_episodes(s, vapp, user, STR("{\"primary\":\"v2\",\"embedding\":[1,0]}"), NULL, 0,
                           &err),
         INVAL);
  EXPECT(mnem_put_episodes(s, STR("vec2"), user, STR("{\"primary\":\"v2\",\"embedding\":[1,0]}"),
                           NULL, 0, &err),
         OK); /* other namespace, own dimension */

  /* delete_episodes */
  uint64_t n = 99;
  char line[64];
  snprintf(line, sizeof line, "\"%s\"\n", id1);
  EXPECT(mnem_delete_episodes(s, app, user, S(line), &n, &err), OK);
  CHECK(n == 1);
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 2);
  n = 99;
  EXPECT(mnem_delete_episodes(s, app, user, S(line), &n, &err), OK); /* already deleted */
  CHECK(n == 0);
  n = 99;
  EXPECT(mnem_delete_episodes(s, app, user, STR("\"0190a5e4-0000-7000-8000-0000000000ff\""), &n,
                              &err),
         OK); /* unknown */
  CHECK(n == 0);
  n = 99;
  EXPECT(mnem_delete_episodes(s, STR("other"), user, STR("\"" FIXED_ID "\""), &n, &err), OK);
  CHECK(n == 0); /* other namespace untouched */
  n = 99;
  EXPECT(mnem_delete_episodes(s, app, user, EMPTY, &n, &err), OK);
  CHECK(n == 0);
  const char *bad_ids[] = {"42", "\"nope\"", "{\"id\":\"" FIXED_ID "\"}", "[\"" FIXED_ID "\"]",
                           "null", "\"" FIXED_ID};
  for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
    CTX("ids line %s", bad_ids[i]);
    EXPECT(mnem_delete_episodes(s, app, user, S(bad_ids[i]), &n, &err), INVAL);
  }
  g_ctx[0] = '\0';
  char reuse[128];
  snprintf(reuse, sizeof reuse, "{\"id\":\"%s\",\"primary\":\"aardvark back\"}", id1);
  EXPECT(mnem_put_episodes(s, app, user, S(reuse), NULL, 0, &err), INVAL); /* deleted id */
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 2);
  snprintf(line, sizeof line, "\"%s\"\n\"nope\"\n", id3);
  EXPECT(mnem_delete_episodes(s, app, user, S(line), &n, &err), INVAL); /* atomic */
  CHECK(msg_has("line 2"));
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 2);
  snprintf(line, sizeof line, "\"%s\"", id3);
  EXPECT_NOERR(mnem_delete_episodes(s, app, user, S(line), NULL, NULL), OK);
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 1);
}

/* ---- keyword / lexical page / substring / hybrid --------------------------------------- */

static void test_keyword(mnem_store *s) {
  mnem_str app = STR("kw"), user = STR("u");
  EXPECT(mnem_put_episodes(
             s, app, user,
             STR("{\"primary\":\"red fox\",\"episode_type\":\"animal\",\"tags\":[\"wild\"]}\n"
                 "{\"primary\":\"red red red apple\",\"episode_type\":\"fruit\",\"tags\":[\"food\"]}\n"
                 "{\"primary\":\"blue whale\",\"secondary\":\"small\",\"context\":\"Red krill\","
                 "\"episode_type\":\"animal\",\"tags\":[\"sea\",\"wild\"]}\n"),
             NULL, 0, &err),
         OK);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"red\"}")) == 3);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"RED\"}")) == 3);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"krill\"}")) == 1);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"red\",\"limit\":1}")) == 1);
  CHECK(NRES(mnem_keyword_search, s, app, user,
             STR("{\"text\":\"red\",\"episode_type\":\"animal\"}")) == 2);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"red\",\"tag\":\"sea\"}")) == 1);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"purple\"}")) == 0);
  CHECK(NRES(mnem_keyword_search, s, STR("kw-other"), user, STR("{\"text\":\"red\"}")) == 0);
  char *j = FETCH(mnem_keyword_search, s, app, user, STR("{\"text\":\"red apple\",\"limit\":1}"));
  if (j) {
    CHECK(strncmp(j, "{\"results\"", 10) == 0);
    CHECK(strstr(j, "red red red apple") != NULL);
    free(j);
  }
  /* limit 0 is no results, not an error (as in hybrid search) */
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"red\",\"limit\":0}")) == 0);
  CHECK(NRES(mnem_keyword_search, s, app, user, STR("{\"text\":\"...\"}")) == 0);
  const char *bad[] = {"{\"text\":\"red\",\"limit\":1001}",
                       "{\"text\":\"red\",\"limit\":-1}", "{\"text\":\"red\",\"bogus\":1}",
                       "{\"text\":5}",  "{", "[]", "\"red\"", "{\"text\":\"red\"} x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CTX("keyword query %s", bad[i]);
    READ_FAILS(mnem_keyword_search, s, app, user, S(bad[i]), INVAL);
  }
  g_ctx[0] = '\0';
  buffer_convention("mnem_keyword_search", mnem_keyword_search, s, app, user,
                    STR("{\"text\":\"red\"}"), STR("{\"text\":\"red\",\"limit\":1001}"));
}

static void test_lexical(mnem_store *s) {
  mnem_str app = STR("lex"), user = STR("u");
  EXPECT(mnem_put_episodes(s, app, user,
                           STR("{\"primary\":\"apple pie 1\"}\n{\"primary\":\"apple pie 2\"}\n"
                               "{\"primary\":\"apple pie 3\"}\n{\"primary\":\"apple pie 4\"}\n"
                               "{\"primary\":\"apple pie 5\",\"tags\":[\"x\"]}\n"
                               "{\"primary\":\"banana bread\"}"),
                           NULL, 0, &err),
         OK);
  char *j = FETCH(mnem_lexical_page, s, app, user, STR("{\"text\":\"apple\"}"));
  if (j) {
    CHECK(strncmp(j, "{\"hits\"", 7) == 0);
    CHECK(count_key(j, "record") == 5);
    CHECK(count_kv(j, "matched_records", "5") == 1);
    CHECK(count_kv(j, "corpus_records", "6") == 1);
    CHECK(count_kv(j, "scanned_records", "6") == 1);
    CHECK(count_key(j, "scanned_bytes") == 1);
    CHECK(count_kv(j, "next_after", "null") == 1);
    CHECK(count_kv(j, "exhaustive", "true") == 1);
    free(j);
  }
  CHECK(NRES(mnem_lexical_page, s, app, user, STR("{\"text\":\"apple\",\"limit\":2}")) == 2);
  CHECK(NRES(mnem_lexical_page, s, app, user, STR("{\"text\":\"apple\",\"tag\":\"x\"}")) == 1);
  CHECK(NRES(mnem_lexical_page, s, app, user, STR("{\"text\":\"apple\",\"after\":null}")) == 5);
  CHECK(NRES(mnem_lexical_page, s, app, user,
             STR("{\"text\":\"bread\",\"episode_type\":\"episode\"}")) == 1);
  /* paging: 6 records, scan_limit 4 -> 4 + 2 */
  char after[64], q[256];
  j = FETCH(mnem_lexical_page, s, app, user, STR("{\"text\":\"apple\",\"scan_limit\":4}"));
  after[0] = '\0';
  if (j) {
    CHECK(count_kv(j, "scanned_records", "4") == 1);
    CHECK(count_kv(j, "exhaustive", "false") == 1);
    str_value(j, "next_after", 0, after, sizeof after);
    CHECK(strlen(after) == 36);
    free(j);
  }
  snprintf(q, sizeof q, "{\"text\":\"apple\",\"scan_limit\":4,\"after\":\"%s\"}", after);
  j = FETCH(mnem_lexical_page, s, app, user, S(q));
  if (j) {
    CHECK(count_kv(j, "scanned_records", "2") == 1);
    CHECK(count_kv(j, "next_after", "null") == 1);
    CHECK(count_kv(j, "exhaustive", "false") == 1); /* a continued request never is */
    free(j);
  }
  static char long_text[4200 + 32], many_terms[65 * 8 + 32];
  strcpy(long_text, "{\"text\":\"");
  memset(long_text + 9, 'a', 4097);
  strcpy(long_text + 9 + 4097, "\"}");
  strcpy(many_terms, "{\"text\":\"");
  for (int i = 0; i < 65; i++) sprintf(many_terms + strlen(many_terms), "t%d ", i);
  strcat(many_terms, "\"}");
  const char *bad[] = {"{\"text\":\"apple\",\"limit\":0}",
                       "{\"text\":\"apple\",\"limit\":101}",
                       "{\"text\":\"apple\",\"after\":\"bad\"}",
                       "{\"text\":\"apple\",\"after\":5}",
                       "{\"text\":\"\"}",
                       "{\"text\":\"!!! ... ,\"}",
                       "{\"text\":\"apple\",\"scan_limit\":0}",
                       "{\"text\":\"apple\",\"scan_limit\":10001}",
                       "{\"text\":\"apple\",\"scan_bytes_limit\":0}",
                       "{\"text\":\"apple\",\"scan_bytes_limit\":67108865}",
                       "{\"text\":\"apple\",\"scan_bytes_limit\":1}",
                       "{\"text\":\"apple\",\"bogus\":1}",
                       "{\"text\":\"apple\"",
                       long_text,
                       many_terms};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CTX("lexical query #%zu %.60s", i, bad[i]);
    READ_FAILS(mnem_lexical_page, s, app, user, S(bad[i]), INVAL);
  }
  g_ctx[0] = '\0';
  buffer_convention("mnem_lexical_page", mnem_lexical_page, s, app, user,
                    STR("{\"text\":\"apple\"}"), STR("{\"text\":\"apple\",\"limit\":0}"));
}

static void test_substring(mnem_store *s) {
  mnem_str app = STR("lex"), user = STR("u");
  char *j = FETCH(mnem_substring_search, s, app, user, STR("{\"text\":\"PPLE P\"}"));
  if (j) {
    CHECK(strncmp(j, "{\"results\"", 10) == 0);
    CHECK(count_key(j, "record") == 5);
    char prev[64] = "", cur[64];
    for (int i = 0; i < 5; i++) { /* ascending UUID order */
      str_value(j, "id", i, cur, sizeof cur);
      CHECK(strlen(cur) == 36 && strcmp(prev, cur) < 0);
      strcpy(prev, cur);
    }
    free(j);
  }
  CHECK(NRES(mnem_substring_search, s, app, user, STR("{\"text\":\"pie 3\"}")) == 1);
  CHECK(NRES(mnem_substring_search, s, app, user, STR("{\"text\":\"zzz\"}")) == 0);
  CHECK(NRES(mnem_substring_search, s, app, user, STR("{\"text\":\"apple\",\"limit\":2}")) == 2);
  CHECK(NRES(mnem_substring_search, s, app, user, STR("{\"text\":\"apple\",\"limit\":0}")) == 0);
  CHECK(NRES(mnem_substring_search, s, app, user, STR("{\"text\":\"apple\",\"tag\":\"x\"}")) == 1);
  const char *bad[] = {"{\"text\":\"apple\",\"bogus\":1}", "{\"text\":", "[]", "{\"text\":1}",
                       "{\"text\":\"\"}", "{\"text\":\"apple\",\"limit\":1001}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CTX("substring query %s", bad[i]);
    READ_FAILS(mnem_substring_search, s, app, user, S(bad[i]), INVAL);
  }
  g_ctx[0] = '\0';
  buffer_convention("mnem_substring_search", mnem_substring_search, s, app, user,
                    STR("{\"text\":\"apple\"}"), STR("{\"text\":\"apple\",\"bogus\":1}"));
}

static void test_hybrid(mnem_store *s) {
  mnem_str app = STR("hy"), user = STR("u");
  EXPECT(mnem_put_episodes(s, app, user,
                           STR("{\"primary\":\"alpha apple\",\"embedding\":[1,0,0]}\n"
                               "{\"primary\":\"beta apple\",\"embedding\":[0,1,0]}\n"
                               "{\"primary\":\"gamma\",\"embedding\":[0.6,0.8,0]}\n"),
                           NULL, 0, &err),
         OK);
  char *j = FETCH(mnem_hybrid_search, s, app, user,
                  STR("{\"text\":\"apple\",\"vector\":[0,1,0],\"semantic_weight\":0.5}"));
  if (j) {
    CHECK(strncmp(j, "{\"results\"", 10) == 0);
    CHECK(count_key(j, "record") == 3);
    CHECK(count_key(j, "keyword_score") == 3 && count_key(j, "semantic_score") == 3);
    long b = pos_of(j, "primary", "\"beta apple\""), a = pos_of(j, "primary", "\"alpha apple\"");
    CHECK(b >= 0 && a > b); /* beta wins both channels */
    free(j);
  }
  CHECK(NRES(mnem_hybrid_search, s, app, user, STR("{\"text\":\"gamma\"}")) == 1);
  CHECK(NRES(mnem_hybrid_search, s, app, user,
             STR("{\"text\":\"apple\",\"vector\":[0,1,0],\"semantic_weight\":0}")) == 2);
  CHECK(NRES(mnem_hybrid_search, s, app, user,
             STR("{\"text\":\"apple\",\"vector\":[0,1,0],\"limit\":0}")) == 0);
  CHECK(NRES(mnem_hybrid_search, s, app, user, STR("{\"text\":\"\",\"vector\":[0,1,0]}")) == 0);
  CHECK(NRES(mnem_hybrid_search, s, app, user,
             STR("{\"text\":\"apple\",\"vector\":[0,1,0],\"semantic_weight\":1,"
                 "\"candidates\":4294967295,\"limit\":2}")) == 2);
  const char *bad[] = {"{\"text\":\"apple\",\"semantic_weight\":1.5}",
                       "{\"text\":\"apple\",\"semantic_weight\":-0.1}",
                       "{\"text\":\"apple\",\"semantic_weight\":1e999}",
                       "{\"text\":\"apple\",\"semantic_weight\":\"0.5\"}",
                       "{\"text\":\"apple\",\"bogus\":1}",
                       "{\"text\":\"apple\",\"vector\":\"x\"}",
                       "{\"text\":\"apple\",\"vector\":[1,0]}",
                       "{\"text\":\"apple\",\"limit\":1001}",
                       "{\"text\":\"apple\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CTX("hybrid query %s", bad[i]);
    READ_FAILS(mnem_hybrid_search, s, app, user, S(bad[i]), INVAL);
  }
  g_ctx[0] = '\0';
  buffer_convention("mnem_hybrid_search", mnem_hybrid_search, s, app, user,
                    STR("{\"text\":\"apple\",\"vector\":[0,1,0]}"),
                    STR("{\"text\":\"apple\",\"semantic_weight\":1.5}"));
}

/* ---- one handle, many threads ---------------------------------------------------------- */

typedef struct {
  mnem_store *s;
  int id;
  int bad;
  uint64_t added;
} thr_arg;

static void *writer(void *p) {
  thr_arg *a = p;
  char sess[32], line[256];
  snprintf(sess, sizeof sess, "thr-%d", a->id);
  for (int i = 0; i < 20; i++) {
    snprintf(line, sizeof line,
             "{\"id\":\"w%d-%d\",\"author\":\"user\",\"timestamp\":%d,\"content\":"
             "{\"role\":\"user\",\"parts\":[{\"text\":\"thread fact %d\"}]}}",
             a->id, i, i, i);
    mnem_error e;
    uint64_t n = 0;
    if (mnem_add_events(a->s, STR("thr"), STR("u"), S(sess), S(line), EMPTY, &n, &e) != OK)
      a->bad++;
    a->added += n;
  }
  return NULL;
}
static void *reader(void *p) {
  thr_arg *a = p;
  static const char q[] = "{\"text\":\"fact\",\"limit\":100}";
  uint8_t *buf = malloc(1 << 16);
  for (int i = 0; i < 20; i++) {
    size_t len;
    mnem_error e;
    if (mnem_search(a->s, STR("thr"), STR("u"), STR("thread fact"), buf, 1 << 16, &len, &e) != OK)
      a->bad++;
    if (mnem_keyword_search(a->s, STR("thr"), STR("u"), STR(q), buf, 1 << 16, &len, &e) != OK)
      a->bad++;
  }
  free(buf);
  return NULL;
}

static void test_threads(mnem_store *s) {
  pthread_t t[4];
  thr_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (thr_arg){s, i, 0, 0};
    CHECK(pthread_create(&t[i], NULL, i < 2 ? writer : reader, &a[i]) == 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK(a[0].bad + a[1].bad + a[2].bad + a[3].bad == 0);
  CHECK(a[0].added + a[1].added == 40);
  CHECK(NRES(mnem_keyword_search, s, STR("thr"), STR("u"),
             STR("{\"text\":\"fact\",\"limit\":100}")) == 40);
}

/* ---- :memory: independence, flush, persistence and READ_ONLY --------------------------- */

static void test_memory_stores(void) {
  mnem_store *a = open_memory(), *b = open_memory();
  EXPECT(mnem_put_episodes(a, STR("m"), STR("u"), STR("{\"primary\":\"only in a\"}"), NULL, 0,
                           &err),
         OK);
  CHECK(NRES(mnem_keyword_search, a, STR("m"), STR("u"), STR("{\"text\":\"only\"}")) == 1);
  CHECK(NRES(mnem_keyword_search, b, STR("m"), STR("u"), STR("{\"text\":\"only\"}")) == 0);
  EXPECT(mnem_flush(a, &err), OK);
  EXPECT_NOERR(mnem_flush(b, NULL), OK);
  mnem_free(a);
  mnem_free(b);
}

typedef struct {
  char *search, *keyword, *lexical, *substring, *hybrid;
} snapshot;
static void snap(mnem_store *s, snapshot *o) {
  mnem_str app = STR("p"), user = STR("u");
  o->search = FETCH(mnem_search, s, app, user, STR("persist"));
  o->keyword = FETCH(mnem_keyword_search, s, app, user, STR("{\"text\":\"persist\"}"));
  o->lexical = FETCH(mnem_lexical_page, s, app, user, STR("{\"text\":\"persist\"}"));
  o->substring = FETCH(mnem_substring_search, s, app, user, STR("{\"text\":\"persist\"}"));
  o->hybrid = FETCH(mnem_hybrid_search, s, app, user,
                    STR("{\"text\":\"persist\",\"vector\":[1,0]}"));
}
static bool same(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }
static void snap_check(const char *file, int line, const snapshot *x, const snapshot *y) {
  check_(same(x->search, y->search), file, line, "mnem_search output unchanged");
  check_(same(x->keyword, y->keyword), file, line, "mnem_keyword_search output unchanged");
  check_(same(x->lexical, y->lexical), file, line, "mnem_lexical_page output unchanged");
  check_(same(x->substring, y->substring), file, line, "mnem_substring_search output unchanged");
  check_(same(x->hybrid, y->hybrid), file, line, "mnem_hybrid_search output unchanged");
}
#define SNAP_SAME(x, y) snap_check(__FILE__, __LINE__, (x), (y))
static void snap_free(snapshot *o) {
  free(o->search), free(o->keyword), free(o->lexical), free(o->substring), free(o->hybrid);
}

static void test_persistence(void) {
  char db[PATH_MAX + 16];
  snprintf(db, sizeof db, "%s/db", g_tmp);
  mnem_str app = STR("p"), user = STR("u");
  mnem_store *s = NULL;
  uint64_t n = 99;
  uint8_t ids[32];
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  if (!s) return;
  EXPECT(mnem_add_session(s, app, user, STR("s1"),
                          STR(EV("p1", "user", "100.25", "persist me") "\n"
                              EV("p2", "model", "101", "persist you too")),
                          &n, &err),
         OK);
  CHECK(n == 2);
  EXPECT(mnem_put_episodes(s, app, user,
                           STR("{\"primary\":\"persist episode\",\"embedding\":[1,0]}\n"
                               "{\"primary\":\"persist other\",\"embedding\":[0,1]}"),
                           ids, sizeof ids, &err),
         OK);
  EXPECT(mnem_delete_memory(s, app, user, STR("p2"), &n, &err), OK); /* tombstone persists */
  CHECK(n == 1);
  snapshot before;
  snap(s, &before);
  CHECK(count_key(before.search, "custom_metadata") == 1);
  CHECK(count_key(before.keyword, "record") == 3);
  EXPECT(mnem_flush(s, &err), OK);
  EXPECT_NOERR(mnem_flush(s, NULL), OK);
  mnem_free(s);

  /* reopen: everything is there, tombstone included */
  s = NULL;
  EXPECT(mnem_open(S(db), 0, STR("{\"sync_writes\":true}"), &s, &err), OK);
  if (!s) {
    snap_free(&before);
    return;
  }
  snapshot after;
  snap(s, &after);
  SNAP_SAME(&before, &after);
  snap_free(&after);
  EXPECT(mnem_add_events(s, app, user, STR("s2"), STR(EV("p2", "model", "101", "persist p2")),
                         EMPTY, &n, &err),
         OK);
  CHECK(n == 0);
  /* the dimension fixed by the first vector persists too */
  EXPECT(mnem_put_episodes(s, app, user, STR("{\"primary\":\"x\",\"embedding\":[1,0,0]}"), NULL,
                           0, &err),
         INVAL);
  mnem_free(s);

  /* READ_ONLY: reads work, every write is refused and changes nothing */
  s = NULL;
  EXPECT(mnem_open(S(db), MNEM_OPEN_READ_ONLY, EMPTY, &s, &err), OK);
  if (!s) {
    snap_free(&before);
    return;
  }
  snap(s, &after);
  SNAP_SAME(&before, &after);
  snap_free(&after);
  char idline[64], id0[37];
  uuid_text(ids, id0);
  snprintf(idline, sizeof idline, "\"%s\"", id0);
  const mnem_status RO = MNEM_STATUS_READ_ONLY;
  EXPECT(mnem_add_session(s, app, user, STR("s1"), STR(EV("p3", "user", "1", "persist ro")), &n,
                          &err),
         RO);
  EXPECT(mnem_add_session(s, app, user, STR("s1"), EMPTY, &n, &err), RO);
  EXPECT(mnem_add_events(s, app, user, STR("s1"), STR(EV("p4", "user", "1", "persist ro")),
                         EMPTY, &n, &err),
         RO);
  EXPECT(mnem_delete_memory(s, app, user, STR("p1"), &n, &err), RO);
  EXPECT(mnem_put_episodes(s, app, user, STR("{\"primary\":\"persist ro\"}"), ids, sizeof ids,
                           &err),
         RO);
  EXPECT(mnem_delete_episodes(s, app, user, S(idline), &n, &err), RO);
  EXPECT_NOERR(mnem_add_session(s, app, user, STR("s1"), EMPTY, NULL, NULL), RO);
  EXPECT_NOERR(mnem_add_events(s, app, user, STR("s1"), EMPTY, EMPTY, NULL, NULL), RO);
  EXPECT_NOERR(mnem_delete_memory(s, app, user, STR("p1"), NULL, NULL), RO);
  EXPECT_NOERR(mnem_put_episodes(s, app, user, STR("{\"primary\":\"persist ro\"}"), NULL, 0, NULL),
               RO);
  EXPECT_NOERR(mnem_delete_episodes(s, app, user, S(idline), NULL, NULL), RO);
  EXPECT(mnem_flush(s, &err), OK); /* documented no-op on a read-only handle */
  snap(s, &after);
  SNAP_SAME(&before, &after);
  snap_free(&after);
  mnem_free(s);

  /* and nothing changed on disk */
  s = NULL;
  EXPECT(mnem_open(S(db), 0, EMPTY, &s, &err), OK);
  if (s) {
    snap(s, &after);
    SNAP_SAME(&before, &after);
    snap_free(&after);
    mnem_free(s);
  }
  snap_free(&before);
}

/* ---- stores this build cannot trust: a newer format, damaged records, a damaged table ---- */

/* Copies the directory tree src to dst (dst must not exist): each run opens its own copy of a
 * fixture, since opening a store writes to its directory. */
static const char *g_copy_src, *g_copy_dst;
static int copy_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)ftw;
  char to[PATH_MAX * 2];
  snprintf(to, sizeof to, "%s%s", g_copy_dst, path + strlen(g_copy_src));
  if (flag == FTW_D) return mkdir(to, 0700);
  if (flag != FTW_F) return -1;
  FILE *in = fopen(path, "rb"), *out = fopen(to, "wb");
  int rc = (in && out) ? 0 : -1;
  char buf[65536];
  size_t n;
  while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
    if (fwrite(buf, 1, n, out) != n) rc = -1;
  if (in) fclose(in);
  if (out && fclose(out) != 0) rc = -1;
  (void)sb;
  return rc;
}
static bool copy_fixture(const char *name, char *dst, size_t cap) {
  const char *dir = env_or_fail("MNEM_TEST_FIXTURES");
  if (!dir) return false;
  char src[PATH_MAX];
  snprintf(src, sizeof src, "%s/%s", dir, name);
  snprintf(dst, cap, "%s/%s", g_tmp, name);
  g_copy_src = src, g_copy_dst = dst;
  bool ok = path_exists(src) && nftw(src, copy_entry, 16, FTW_PHYS) == 0;
  if (!ok) {
    g_fail++;
    fprintf(stderr, "FAIL: cannot copy fixture %s (scripts/test-c writes it)\n", src);
  }
  return ok;
}

/* A store whose format record is newer than this build's: every open is refused, and a
 * refused open keeps neither the handle nor the directory lock. */
static void test_newer_format(void) {
  char db[PATH_MAX];
  if (!copy_fixture("format-newer", db, sizeof db)) return;
  const uint32_t flags[] = {0, MNEM_OPEN_CREATE, MNEM_OPEN_READ_ONLY, 0};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
    CTX("flags %u, attempt %zu", (unsigned)flags[i], i);
    mnem_store *s = (mnem_store *)&err; /* must be reset to NULL */
    EXPECT(mnem_open(S(db), flags[i], EMPTY, &s, &err), MNEM_STATUS_INCOMPATIBLE);
    CHECK(s == NULL);
    CHECK(msg_has("format"));
    if (s && s != (mnem_store *)&err) mnem_free(s);
  }
  mnem_store *s = NULL;
  EXPECT_NOERR(mnem_open(S(db), 0, EMPTY, &s, NULL), MNEM_STATUS_INCOMPATIBLE);
  CHECK(s == NULL);
  g_ctx[0] = '\0';
}

#define DAMAGED_ID "0190a5e4-0000-7000-8000-0000000000dd"
#define Q_TEA "{\"text\":\"tea\"}"
#define Q_COFFEE "{\"text\":\"coffee\"}"

/* What a read of the damaged fixture returns: CORRUPTION exactly when it must read the damaged
 * record (its header in `head`, the whole record in `tail`), otherwise an answer. */
static mnem_status damaged_want(read_fn fn, const char *user, const char *word) {
  bool head = strcmp(user, "head") == 0, tea = strcmp(word, "tea") == 0;
  if (fn == mnem_search) return OK; /* not an ADK memory: the ADK index never leads to it */
  if (fn == mnem_hybrid_search) return MNEM_STATUS_CORRUPTION; /* the query vector is its own */
  if (fn == mnem_keyword_search) /* the BM25 index reads a record only to return it */
    return tea ? MNEM_STATUS_CORRUPTION : OK;
  /* the lexical page and substring search scan every record's searchable prefix */
  return head || tea ? MNEM_STATUS_CORRUPTION : OK;
}

/* Every read of `user` in the damaged fixture, with the text `word` (and for hybrid search
 * the damaged record's own vector). */
static void damaged_reads(const mnem_store *s, const char *user, const char *word) {
  char q[128];
  for (size_t i = 0; i < NREADS; i++) {
    CTX("%s of user %s for %s", READS[i].name, user, word);
    if (READS[i].fn == mnem_search)
      snprintf(q, sizeof q, "%s", word);
    else if (READS[i].fn == mnem_hybrid_search)
      snprintf(q, sizeof q, "{\"text\":\"%s\",\"vector\":[0,1]}", word);
    else
      snprintf(q, sizeof q, "{\"text\":\"%s\"}", word);
    mnem_status want = damaged_want(READS[i].fn, user, word);
    if (want == OK) {
      free(FETCH(READS[i].fn, s, STR("damaged"), S(user), S(q)));
    } else {
      READ_FAILS(READS[i].fn, s, STR("damaged"), S(user), S(q), want);
      CHECK(msg_has("record"));
    }
  }
  g_ctx[0] = '\0';
}

/* The fixture's namespaces (see examples/c_fixtures.rs) hold the same data; in `head` the
 * record DAMAGED_ID has an unknown record version, in `tail` it lost its last byte (its
 * searchable prefix still reads). */
static void test_damaged_records(void) {
  char db[PATH_MAX];
  if (!copy_fixture("damaged", db, sizeof db)) return;
  mnem_store *s = NULL;
  EXPECT(mnem_open(S(db), 0, EMPTY, &s, &err), OK);
  if (!s) return;
  mnem_str app = STR("damaged");
  const mnem_status BAD = MNEM_STATUS_CORRUPTION;

  /* The control namespace reads normally, damaged record's twin included. */
  CHECK(NRES(mnem_search, s, app, STR("intact"), STR("tea")) == 1);
  CHECK(NRES(mnem_keyword_search, s, app, STR("intact"), STR(Q_TEA)) == 2);
  CHECK(NRES(mnem_lexical_page, s, app, STR("intact"), STR(Q_TEA)) == 2);
  CHECK(NRES(mnem_substring_search, s, app, STR("intact"), STR(Q_TEA)) == 2);
  CHECK(NRES(mnem_hybrid_search, s, app, STR("intact"),
             STR("{\"text\":\"tea\",\"vector\":[0,1]}")) == 3);

  /* A read fails when it reaches the damaged record: a scan reads every header, an index
   * reads a record only to return it. */
  damaged_reads(s, "head", "tea");
  damaged_reads(s, "head", "coffee");
  damaged_reads(s, "tail", "tea");
  damaged_reads(s, "tail", "coffee");
  /* A read that neither returns nor decodes it whole answers exactly as the control
   * namespace does. */
  const struct {
    read_fn fn;
    const char *q;
  } lexical[] = {{mnem_keyword_search, Q_COFFEE},
                 {mnem_lexical_page, Q_COFFEE},
                 {mnem_substring_search, Q_COFFEE},
                 {mnem_hybrid_search, Q_COFFEE}};
  for (size_t i = 0; i < sizeof lexical / sizeof lexical[0]; i++) {
    CTX("lexical read #%zu of tail for coffee", i);
    char *got = FETCH(lexical[i].fn, s, app, STR("tail"), S(lexical[i].q));
    char *want = FETCH(lexical[i].fn, s, app, STR("intact"), S(lexical[i].q));
    CHECK(got && want && count_key(got, "record") == 1 && count_key(want, "record") == 1);
    CHECK(count_kv(got, "primary", "\"intact coffee\"") == 1);
    const char *stats[] = {"matched_records", "corpus_records", "scanned_records", "score"};
    for (size_t k = 0; k < sizeof stats / sizeof stats[0]; k++) {
      const char *a = kv_nth(got, stats[k], 0), *b = kv_nth(want, stats[k], 0);
      CHECK((a == NULL) == (b == NULL));
      if (a && b) CHECK(strncmp(a, b, strcspn(b, ",}")) == 0);
    }
    free(got), free(want);
  }
  g_ctx[0] = '\0';

  /* Writes that read the damaged record fail and change nothing; ADK writes never read it. */
  const char *users[] = {"head", "tail"};
  for (size_t i = 0; i < 2; i++) {
    mnem_str user = S(users[i]);
    uint64_t n = 99;
    uint8_t id[16];
    CTX("writes to %s", users[i]);
    EXPECT(mnem_put_episodes(s, app, user,
                             STR("{\"id\":\"" DAMAGED_ID "\",\"primary\":\"replacement tea\"}"),
                             id, sizeof id, &err),
           BAD);
    EXPECT(mnem_delete_episodes(s, app, user, STR("\"" DAMAGED_ID "\""), &n, &err), BAD);
    EXPECT(mnem_add_events(s, app, user, STR("s"), STR(EV("e3", "user", "3", "new tea")), EMPTY,
                           &n, &err),
           OK);
    CHECK(n == 1);
    EXPECT(mnem_delete_memory(s, app, user, STR("e3"), &n, &err), OK);
    CHECK(n == 1);
  }
  g_ctx[0] = '\0';
  damaged_reads(s, "head", "tea");
  damaged_reads(s, "tail", "tea");
  CHECK(NRES(mnem_keyword_search, s, app, STR("tail"), STR(Q_COFFEE)) == 1);
  CHECK(NRES(mnem_substring_search, s, app, STR("tail"), STR("{\"text\":\"replacement\"}")) == 0);
  /* The damage stays in its namespace: the control still reads and writes. */
  EXPECT(mnem_put_episodes(s, app, STR("intact"), STR("{\"primary\":\"more tea\"}"), NULL, 0,
                           &err),
         OK);
  CHECK(NRES(mnem_keyword_search, s, app, STR("intact"), STR(Q_TEA)) == 3);
  mnem_free(s);
}

/* Flips bytes in the middle of every large table (.sst) file of a closed store (its records'
 * and its index's): a later open fails with CORRUPTION, or every read either fails with
 * CORRUPTION or returns exactly what it returned before the damage; reads that scan every
 * record always fail. */
static void test_damaged_table(void) {
  char db[PATH_MAX + 16];
  snprintf(db, sizeof db, "%s/table", g_tmp);
  mnem_str app = STR("t"), user = STR("u");
  mnem_store *s = NULL;
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  if (!s) return;
  /* ~240 KB of text LZ4 cannot shrink, so data blocks fill the table files. */
  enum { NREC = 400, HEX = 600 };
  static char lines[NREC * (HEX + 64)];
  char *p = lines;
  uint64_t x = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < NREC; i++) {
    p += sprintf(p, "%s{\"primary\":\"tablecheck ", i ? "\n" : "");
    for (int k = 0; k < HEX; k++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      *p++ = "0123456789abcdef"[x & 15];
    }
    p += sprintf(p, "\"}");
  }
  EXPECT(mnem_put_episodes(s, app, user, S(lines), NULL, 0, &err), OK);
  mnem_free(s); /* a clean close writes the table files */
  s = NULL;
  EXPECT(mnem_open(S(db), 0, EMPTY, &s, &err), OK);
  if (!s) return;
  const char *q = "{\"text\":\"tablecheck\",\"limit\":1000}";
  CHECK(NRES(mnem_keyword_search, s, app, user, S(q)) == NREC);
  const char *qs[] = {"tablecheck", q, "{\"text\":\"tablecheck\",\"limit\":100}", q, q};
  char *before[NREADS];
  for (size_t i = 0; i < NREADS; i++) before[i] = FETCH(READS[i].fn, s, app, user, S(qs[i]));
  mnem_free(s);

  long largest = 0;
  int damaged = 0;
  DIR *d = opendir(db);
  CHECK(d != NULL);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n < 4 || strcmp(e->d_name + n - 4, ".sst") != 0) continue;
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", db, e->d_name);
    struct stat sb;
    if (stat(path, &sb) != 0 || sb.st_size < 64 * 1024) continue; /* the middle is data */
    if (sb.st_size > largest) largest = sb.st_size;
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) continue;
    unsigned char buf[64];
    long at = sb.st_size / 2;
    CHECK(fseek(f, at, SEEK_SET) == 0 && fread(buf, 1, sizeof buf, f) == sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++) buf[i] ^= 0xA5;
    CHECK(fseek(f, at, SEEK_SET) == 0 && fwrite(buf, 1, sizeof buf, f) == sizeof buf);
    CHECK(fclose(f) == 0);
    damaged++;
  }
  if (d) closedir(d);
  CHECK(largest > NREC * HEX / 2 && damaged >= 1); /* the records are in table files */

  s = NULL;
  memset(&err, 0x5A, sizeof err);
  mnem_status st = mnem_open(S(db), 0, EMPTY, &s, &err);
  if (st != OK) {
    expect_(st, MNEM_STATUS_CORRUPTION, &err, __FILE__, __LINE__, "open of a damaged table");
    CHECK(s == NULL);
  }
  for (size_t i = 0; s && i < NREADS; i++) {
    CTX("%s over a damaged table", READS[i].name);
    bool scans = READS[i].fn == mnem_lexical_page || READS[i].fn == mnem_substring_search;
    size_t cap = (before[i] ? strlen(before[i]) : 0) + 4096, len = 999;
    char *buf = malloc(cap);
    memset(&err, 0x5A, sizeof err);
    st = READS[i].fn(s, app, user, S(qs[i]), (uint8_t *)buf, cap, &len, &err);
    if (st == OK && !scans) {
      CHECK(before[i] && len == strlen(before[i]) && memcmp(buf, before[i], len) == 0);
    } else {
      expect_(st, MNEM_STATUS_CORRUPTION, &err, __FILE__, __LINE__, "read of a damaged table");
      CHECK(len == 0);
    }
    free(buf);
  }
  g_ctx[0] = '\0';
  for (size_t i = 0; i < NREADS; i++) free(before[i]);
  mnem_free(s);
}

/* ---- store management ------------------------------------------------------------------ */

/* The management reads, adapted to read_fn so FETCH and buffer_convention apply. */
static mnem_status stats_fn(const mnem_store *s, mnem_str app, mnem_str user, mnem_str q,
                            uint8_t *out, size_t cap, size_t *len, mnem_error *e) {
  (void)q;
  return mnem_namespace_stats(s, app, user, out, cap, len, e);
}
static mnem_status list_fn(const mnem_store *s, mnem_str app, mnem_str user, mnem_str q,
                           uint8_t *out, size_t cap, size_t *len, mnem_error *e) {
  (void)app, (void)user;
  return mnem_list_namespaces(s, q, out, cap, len, e);
}
static mnem_status check_fn(const mnem_store *s, mnem_str app, mnem_str user, mnem_str q,
                            uint8_t *out, size_t cap, size_t *len, mnem_error *e) {
  (void)app, (void)user, (void)q;
  return mnem_check(s, out, cap, len, e);
}
/* The export (JSON Lines, so not one JSON object), malloc'd and NUL-terminated, or NULL. */
static char *fetch_export(const mnem_store *s, mnem_str app, mnem_str user, int all) {
  size_t need = 0, len = 0;
  EXPECT(mnem_export(s, app, user, all, NULL, 0, &need, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  if (need == 0) return NULL;
  char *buf = malloc(need + 1);
  EXPECT(mnem_export(s, app, user, all, (uint8_t *)buf, need, &len, &err), OK);
  CHECK(len == need && buf[len - 1] == '\n');
  buf[len] = '\0';
  CHECK(strlen(buf) == len && utf8_valid((const unsigned char *)buf, len));
  return buf;
}

/* Appends the JSON string value that starts at `v` (at its opening quote) to `out`, unescaped
 * (mnem escapes only quotes, backslashes and control characters). Returns false if malformed. */
static bool append_json_string(const char *v, char *out, size_t *len, size_t cap) {
  if (*v != '"') return false;
  for (v++; *v != '"'; v++) {
    char c = *v;
    if (c == '\\') {
      v++;
      switch (*v) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          char hex[5] = {v[1], v[2], v[3], v[4], 0};
          long cp = strtol(hex, NULL, 16);
          if (cp >= 0x80) return false;
          c = (char)cp;
          v += 4;
          break;
        }
        default: c = *v; /* quote, backslash, slash */
      }
    } else if (c == '\0') {
      return false;
    }
    if (*len + 1 >= cap) return false;
    out[(*len)++] = c;
  }
  out[*len] = '\0';
  return true;
}

static long num_value(const char *json, const char *key, int n) {
  const char *v = kv_nth(json, key, n);
  return v ? strtol(v, NULL, 10) : -1;
}

static void test_admin(void) {
  char db[PATH_MAX + 16], backup[PATH_MAX + 32];
  snprintf(db, sizeof db, "%s/admin", g_tmp);
  snprintf(backup, sizeof backup, "%s/admin-backup", g_tmp);
  mnem_str app = STR("a"), u1 = STR("u1"), u2 = STR("u2");
  mnem_store *s = NULL;
  uint64_t n = 99;
  uint8_t ids[32];
  char id0[37], id1[37], q[256];
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  if (!s) return;
  EXPECT(mnem_add_session(s, app, u1, STR("s1"),
                          STR(EV("e1", "user", "1", "apple pear") "\n" EV("e2", "user", "2", "pear")
                              "\n" EV("e3", "model", "3", "apple kiwi")),
                          &n, &err),
         OK);
  EXPECT(mnem_add_session(s, app, u1, STR("s2"),
                          STR(EV("k1", "user", "4", "kiwi kiwi") "\n" EV("k2", "user", "5", "kiwi")),
                          &n, &err),
         OK);
  EXPECT(mnem_add_session(s, app, u2, STR("s1"), STR(EV("o1", "user", "6", "kiwi other")), &n,
                          &err),
         OK);
  EXPECT(mnem_put_episodes(s, app, u1,
                           STR("{\"primary\":\"banana\",\"embedding\":[1,0]}\n{\"primary\":\"cherry\"}"),
                           ids, sizeof ids, &err),
         OK);
  uuid_text(ids, id0), uuid_text(ids + 16, id1);
  char *before = FETCH(mnem_search, s, app, u1, STR("kiwi"));
  CHECK(count_key(before, "custom_metadata") == 3);

  /* mnem_delete_session: the bucket's events go; the rest rank as before, without them. */
  CTX("delete_session");
  EXPECT(mnem_delete_session(s, app, u1, STR("s2"), &n, &err), OK);
  CHECK(n == 2);
  char *after = FETCH(mnem_search, s, app, u1, STR("kiwi"));
  CHECK(count_key(after, "custom_metadata") == 1 && pos_of(after, "id", "\"e3\"") > 0);
  n = 9;
  EXPECT(mnem_delete_session(s, app, u1, STR("s2"), &n, &err), OK);
  CHECK(n == 0);
  EXPECT_NOERR(mnem_delete_session(s, app, u1, STR("never"), NULL, NULL), OK);
  n = 9;
  EXPECT(mnem_delete_session(s, app, u1, BADU, &n, &err), INVAL);
  CHECK(n == 0 && msg_has("session_id"));
  EXPECT(mnem_delete_session(s, app, NULLSTR, STR("s1"), &n, &err), INVAL);
  EXPECT(mnem_delete_session(NULL, app, u1, STR("s1"), &n, &err), INVAL);
  CHECK(n == 0);
  free(before), free(after);

  /* mnem_get_episodes: line order, null for an id without a visible episode. */
  CTX("get_episodes");
  snprintf(q, sizeof q, "\"%s\"\n\"01900000-0000-7000-8000-000000000000\"\n\"%s\"", id1, id0);
  char *got = FETCH(mnem_get_episodes, s, app, u1, S(q));
  CHECK(got && count_key(got, "revision") == 2 && strstr(got, "},null,{") != NULL);
  CHECK(pos_of(got, "primary", "\"cherry\"") < pos_of(got, "primary", "\"banana\""));
  free(got);
  got = FETCH(mnem_get_episodes, s, app, u2, S(q)); /* another namespace: all null */
  CHECK(same(got, "{\"episodes\":[null,null,null]}"));
  free(got);
  READ_FAILS(mnem_get_episodes, s, app, u1, STR("\"x\"\n\"nope\""), INVAL);
  buffer_convention("mnem_get_episodes", mnem_get_episodes, s, app, u1, S(q), STR("[1]"));

  /* mnem_list_namespaces: pages by cursor. */
  CTX("list_namespaces");
  char *all = FETCH(list_fn, s, EMPTY, EMPTY, EMPTY);
  CHECK(count_key(all, "app_name") == 2 && strstr(all, "\"next_after\":null") != NULL);
  free(all);
  char *page = FETCH(list_fn, s, EMPTY, EMPTY, STR("{\"limit\":1}"));
  CHECK(count_key(page, "episodes") == 1 && strstr(page, "\"next_after\":{") != NULL);
  char user[64];
  str_value(page, "user_id", 0, user, sizeof user);
  snprintf(q, sizeof q, "{\"limit\":1,\"after\":{\"app_name\":\"a\",\"user_id\":\"%s\"}}", user);
  free(page);
  page = FETCH(list_fn, s, EMPTY, EMPTY, S(q));
  char user2[64];
  str_value(page, "user_id", 0, user2, sizeof user2);
  CHECK(strcmp(user, user2) != 0 && user2[0] != '\0');
  free(page);
  READ_FAILS(list_fn, s, EMPTY, EMPTY, STR("{\"limit\":0}"), INVAL);
  READ_FAILS(list_fn, s, EMPTY, EMPTY, STR("{\"after\":{\"app_name\":\"a\"}}"), INVAL);
  READ_FAILS(list_fn, s, EMPTY, EMPTY, STR("{\"zzz\":1}"), INVAL);
  buffer_convention("mnem_list_namespaces", list_fn, s, EMPTY, EMPTY, EMPTY, STR("{\"limit\":1001}"));

  /* mnem_namespace_stats */
  CTX("namespace_stats");
  char *st = FETCH(stats_fn, s, app, u1, EMPTY);
  CHECK(num_value(st, "live", 0) == 5 && num_value(st, "deleted", 0) == 2);
  CHECK(num_value(st, "buckets", 0) == 1 && num_value(st, "bucket_events", 0) == 3);
  CHECK(num_value(st, "dimension", 0) == 2);
  free(st);
  st = FETCH(stats_fn, s, app, STR("nobody"), EMPTY);
  CHECK(num_value(st, "keys", 0) == 0 && strstr(st, "\"dimension\":null") != NULL);
  free(st);
  READ_FAILS(stats_fn, s, BADU, u1, EMPTY, INVAL);

  /* mnem_export / mnem_import: the same answers from a fresh store. */
  CTX("export/import");
  char *dump = fetch_export(s, app, u1, 1);
  char *one = fetch_export(s, app, u2, 0);
  const char *head = "{\"type\":\"header\",\"mnem_export\":1,";
  CHECK(dump && one && strncmp(dump, head, strlen(head)) == 0);
  CHECK(one && strstr(one, "\"o1\"") && !strstr(one, "\"e1\""));
  mnem_store *m = open_memory();
  /* mnem_export_page: pages of about 300 bytes concatenate to the export. */
  size_t cap = strlen(dump) + 1, joined_len = 0;
  char *joined = malloc(cap), cursor[1024] = "";
  int pages = 0;
  for (;;) {
    char *page = NULL;
    size_t plen = 0;
    mnem_status pst = mnem_export_page(s, app, u1, 1, S(cursor), 300, NULL, 0, &plen, &err);
    CHECK(pst == MNEM_STATUS_BUFFER_TOO_SMALL);
    if (pst != MNEM_STATUS_BUFFER_TOO_SMALL) break;
    page = malloc(plen + 1);
    EXPECT(mnem_export_page(s, app, u1, 1, S(cursor), 300, (uint8_t *)page, plen, &plen, &err), OK);
    page[plen] = '\0';
    pages++;
    bool ok = append_json_string(kv_nth(page, "lines", 0), joined, &joined_len, cap);
    CHECK(ok);
    const char *next = kv_nth(page, "next_cursor", 0);
    bool more = next && *next == '"';
    if (more) str_value(page, "next_cursor", 0, cursor, sizeof cursor);
    free(page);
    if (!ok || !more || pages > 1000) break;
  }
  CHECK(pages > 2 && same(joined, dump));
  free(joined);
  size_t plen = 9;
  EXPECT(mnem_export_page(s, app, u1, 1, STR("zz"), 300, NULL, 0, &plen, &err), INVAL);
  CHECK(plen == 0 && msg_has("cursor"));
  EXPECT(mnem_export_page(NULL, app, u1, 1, EMPTY, 300, NULL, 0, &plen, &err), INVAL);
  EXPECT(mnem_import(m, STR("{\"type\":\"header\",\"mnem_export\":1}\n{\"type\":\"oops\"}"), &n,
                     &err),
         INVAL);
  CHECK(n == 0 && msg_has("line 2"));
  EXPECT(mnem_import(m, S(dump), &n, &err), OK);
  CHECK(n == 8); /* 3 + 2 (tombstones) + 1 + 2 */
  char *x = FETCH(mnem_search, s, app, u1, STR("apple kiwi")),
       *y = FETCH(mnem_search, m, app, u1, STR("apple kiwi"));
  CHECK(same(x, y));
  free(x), free(y);
  x = FETCH(mnem_hybrid_search, s, app, u1, STR("{\"text\":\"banana\",\"vector\":[1,0]}"));
  y = FETCH(mnem_hybrid_search, m, app, u1, STR("{\"text\":\"banana\",\"vector\":[1,0]}"));
  CHECK(same(x, y));
  free(x), free(y);
  EXPECT(mnem_import(m, S(one), &n, &err), INVAL);
  CHECK(n == 0 && msg_has("already holds data"));
  EXPECT(mnem_import(NULL, S(one), &n, &err), INVAL);
  size_t need = 9;
  EXPECT(mnem_export(NULL, app, u1, 0, NULL, 0, &need, &err), INVAL);
  CHECK(need == 0);
  EXPECT(mnem_export(s, BADU, u1, 0, NULL, 0, &need, &err), INVAL);
  EXPECT(mnem_export(s, BADU, u1, 1, NULL, 0, &need, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(need > 0); /* `all` ignores the namespace */
  free(dump), free(one);

  /* mnem_check, mnem_backup */
  CTX("check/backup");
  char *ck = FETCH(check_fn, s, EMPTY, EMPTY, EMPTY);
  CHECK(ck && strncmp(ck, "{\"ok\":true", 10) == 0 && strstr(ck, "\"problem\":null"));
  free(ck);
  EXPECT(mnem_backup(s, S(backup), &err), OK);
  EXPECT(mnem_backup(s, S(backup), &err), INVAL); /* exists */
  EXPECT(mnem_backup(s, EMPTY, &err), INVAL);
  EXPECT(mnem_backup(m, STR("/tmp/never-written"), &err), INVAL); /* :memory: */
  EXPECT(mnem_backup(NULL, S(backup), &err), INVAL);
  mnem_store *b = NULL;
  EXPECT(mnem_open(S(backup), MNEM_OPEN_READ_ONLY, EMPTY, &b, &err), OK);
  if (b) {
    x = FETCH(mnem_search, s, app, u1, STR("apple"));
    y = FETCH(mnem_search, b, app, u1, STR("apple"));
    CHECK(same(x, y));
    free(x), free(y);
    EXPECT(mnem_backup(b, STR("/tmp/never-written"), &err), MNEM_STATUS_READ_ONLY);
    EXPECT(mnem_forget_namespace(b, app, u1, &err), MNEM_STATUS_READ_ONLY);
    EXPECT(mnem_delete_session(b, app, u1, STR("s1"), &n, &err), MNEM_STATUS_READ_ONLY);
    mnem_free(b);
  }

  /* MNEM_OPEN_VIEW: a read-only view beside this read-write handle, as of its open. */
  CTX("view");
  mnem_store *v = NULL;
  EXPECT(mnem_open(S(db), MNEM_OPEN_READ_ONLY, EMPTY, &v, &err), MNEM_STATUS_BUSY);
  EXPECT(mnem_open(S(db), MNEM_OPEN_VIEW, EMPTY, &v, &err), OK);
  if (v) {
    x = FETCH(mnem_search, s, app, u1, STR("apple pear"));
    y = FETCH(mnem_search, v, app, u1, STR("apple pear"));
    CHECK(same(x, y) && count_key(y, "custom_metadata") == 3);
    free(x), free(y);
    EXPECT(mnem_add_events(v, app, u1, STR("s1"), STR(EV("v1", "user", "7", "apple")), EMPTY, &n,
                           &err),
           MNEM_STATUS_READ_ONLY);
    EXPECT(mnem_add_events(s, app, u1, STR("s1"), STR(EV("w1", "user", "8", "apple late")),
                           EMPTY, &n, &err),
           OK);
    CHECK(NRES(mnem_search, v, app, u1, STR("late")) == 0); /* the state at its open */
    mnem_store *v2 = NULL;
    EXPECT(mnem_open(S(db), MNEM_OPEN_VIEW | MNEM_OPEN_READ_ONLY, EMPTY, &v2, &err), OK);
    CHECK(NRES(mnem_search, v2, app, u1, STR("late")) == 1);
    mnem_free(v2);
    mnem_free(v);
  }
  EXPECT(mnem_open(STR(":memory:"), MNEM_OPEN_VIEW, EMPTY, &v, &err), INVAL);

  /* mnem_compact: answers unchanged; read-only handles and NULL refused. */
  CTX("compact");
  x = FETCH(mnem_search, s, app, u1, STR("apple pear"));
  EXPECT(mnem_compact(s, &err), OK);
  y = FETCH(mnem_search, s, app, u1, STR("apple pear"));
  CHECK(same(x, y));
  free(x), free(y);
  EXPECT_NOERR(mnem_compact(m, NULL), OK);
  EXPECT(mnem_compact(NULL, &err), INVAL);
  CHECK(msg_has("store"));
  mnem_store *ro = NULL;
  EXPECT(mnem_open(S(backup), MNEM_OPEN_READ_ONLY, EMPTY, &ro, &err), OK);
  if (ro) {
    EXPECT(mnem_compact(ro, &err), MNEM_STATUS_READ_ONLY);
    mnem_free(ro);
  }

  /* mnem_forget_namespace */
  CTX("forget_namespace");
  EXPECT(mnem_forget_namespace(s, app, u1, &err), OK);
  CHECK(NRES(mnem_search, s, app, u1, STR("apple")) == 0);
  CHECK(NRES(mnem_search, s, app, u2, STR("kiwi")) == 1);
  all = FETCH(list_fn, s, EMPTY, EMPTY, EMPTY);
  CHECK(count_key(all, "app_name") == 1);
  free(all);
  EXPECT_NOERR(mnem_forget_namespace(s, app, u1, NULL), OK);
  EXPECT(mnem_forget_namespace(s, BADU, u1, &err), INVAL);
  CHECK(msg_has("app_name"));
  EXPECT(mnem_forget_namespace(NULL, app, u1, &err), INVAL);
  mnem_free(m);
  mnem_free(s);
  g_ctx[0] = '\0';
}

int main(void) {
  tzset();
  snprintf(g_tmp, sizeof g_tmp, "%s/mnem-c-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return 2;
  }
  test_static();
  test_open();
  test_null_store();
  mnem_store *m = open_memory();
  test_bad_strings(m);
  test_adk(m);
  test_atomicity(m);
  test_episodes(m);
  test_keyword(m);
  test_lexical(m);
  test_substring(m);
  test_hybrid(m);
  test_threads(m);
  EXPECT(mnem_flush(m, &err), OK);
  mnem_free(m);
  test_memory_stores();
  test_persistence();
  test_admin();
  test_newer_format();
  test_damaged_records();
  test_damaged_table();
  rm_rf(g_tmp);
  CHECK(!path_exists(g_tmp));
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
