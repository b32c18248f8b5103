/* What only C can test of libmnem's C ABI: NULL pointers, invalid UTF-8, NUL bytes in
 * strings, err == NULL, the output-buffer and out_ids protocols with every pointer case, static
 * strings, one handle under many threads, and stores this build cannot trust (newer format,
 * damaged records and table files). Behaviour, statuses and JSON shapes are the conformance
 * corpus's (tests/conformance, replayed by tests/c/conformance.c). Run by scripts/test-c, which
 * passes MNEM_TEST_VERSION and MNEM_TEST_FIXTURES. */
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
      {MNEM_STATUS_EMBEDDER_FAILED, 9, "EMBEDDER_FAILED"},
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
  /* Unknown statuses and every mnem_status_message: tests/conformance (static_names). */
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

  /* Statuses of open, flags and options: tests/conformance (open_*). Here: what only C can
   * pass (NULL pointers, invalid UTF-8) and err == NULL. */
  EXPECT_NOERR(mnem_open(S(missing), 0, EMPTY, &s, NULL), MNEM_STATUS_NOT_FOUND);
  CHECK(s == NULL);
  EXPECT(mnem_open(NULLSTR, MNEM_OPEN_CREATE, EMPTY, &s, &err), INVAL);
  EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, NULLSTR, &s, &err), INVAL);
  EXPECT(mnem_open(S(missing), MNEM_OPEN_CREATE, STR("{\"\xc3\x28\":true}"), &s, &err), INVAL);
  CHECK(s == NULL);
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

  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  CHECK(s != NULL);
  if (!s) return;
  mnem_store *s2 = (mnem_store *)&err; /* must be reset to NULL */
  EXPECT_NOERR(mnem_open(S(db), 0, EMPTY, &s2, NULL), MNEM_STATUS_BUSY);
  CHECK(s2 == NULL);
  EXPECT(mnem_stats(NULL, NULL, 0, NULL, &err), INVAL);
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

#define APP STR("adk-app")
#define USER STR("adk-user")

/* ADK ranking and semantics: tests/conformance (adk_*). Here: what only C can pass (a
 * {NULL,0} string, NUL bytes inside a namespace), err == NULL and the buffer protocol. */
static void test_adk(mnem_store *s) {
  uint64_t n = 99;
  EXPECT(mnem_add_session(s, APP, USER, STR("session-1"),
                          STR(EV("event-1a", "user", "12345.5", "The ADK is a great toolkit.")), &n,
                          &err),
         OK);
  CHECK(n == 1);
  CHECK(NRES(mnem_search, s, APP, USER, EMPTY) == 0); /* {NULL,0} is the empty string */
  CHECK(NRES(mnem_search, s, APP, USER, STR("toolkit")) == 1);
  EXPECT_NOERR(mnem_add_events(s, APP, USER, STR(""), EMPTY, EMPTY, NULL, NULL), OK);
  EXPECT_NOERR(mnem_delete_memory(s, APP, USER, STR("no-such-event"), NULL, NULL), OK);
  EXPECT(mnem_add_session(s, APP, USER, STR("session-empty"), EMPTY, &n, &err), OK);
  CHECK(n == 0);
  /* namespaces never collide, NUL bytes included */
  EXPECT(mnem_add_session(s, STR("x\0y"), STR("u"), STR("s"),
                          STR(EV("nul", "user", "1", "hidden nul")), &n, &err),
         OK);
  CHECK(NRES(mnem_search, s, STR("x"), STR("y\0u"), STR("hidden")) == 0);
  CHECK(NRES(mnem_search, s, STR("x\0y"), STR("u"), STR("hidden")) == 1);
  EXPECT(mnem_add_session(s, EMPTY, EMPTY, STR("s"), STR(EV("e0", "user", "1", "empty ns")),
                          &n, &err),
         OK);
  CHECK(NRES(mnem_search, s, EMPTY, EMPTY, STR("empty")) == 1);
  buffer_convention("mnem_search", mnem_search, s, APP, USER, STR("ADK toolkit"), STR("\xff"));
}

/* ---- put / delete episodes ------------------------------------------------------------- */

#define FIXED_ID "0190a5e4-0000-7000-8000-0000000000aa"
static const uint8_t FIXED_BYTES[16] = {0x01, 0x90, 0xa5, 0xe4, 0, 0, 0x70, 0,
                                        0x80, 0,    0,    0,    0, 0, 0,    0xaa};

/* Episode fields, revisions, bad lines and deletes: tests/conformance (episodes_*). Here: the
 * out_ids buffer (raw bytes, its capacity rule, nothing past 16 x lines), NULL pointers and
 * err == NULL. */
static void test_episodes(mnem_store *s) {
  mnem_str app = STR("ep"), user = STR("u");
  const char batch[] = "{\"primary\":\"aardvark alpha\"}\n"
                       "{\"id\":\"" FIXED_ID "\",\"primary\":\"aardvark beta\"}\n"
                       "{\"primary\":\"gamma aardvark aardvark\"}\n";
  uint8_t ids[64];
  const mnem_str q = STR("{\"text\":\"aardvark\"}");

  /* out_ids too small: rejected before anything is written */
  memset(ids, 0xEE, sizeof ids);
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), ids, 47, &err), INVAL);
  CHECK(msg_has("out_ids"));
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), ids, 16, &err), INVAL);
  EXPECT(mnem_put_episodes(s, app, user, STR(batch), NULL, 48, &err), INVAL);
  EXPECT_NOERR(mnem_put_episodes(s, app, user, STR(batch), ids, 47, NULL), INVAL);
  CHECK(all_bytes(ids, sizeof ids, 0xEE));
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 0);

  EXPECT(mnem_put_episodes(s, app, user, STR(batch), ids, sizeof ids, &err), OK);
  CHECK(memcmp(ids + 16, FIXED_BYTES, 16) == 0); /* line order, raw bytes */
  CHECK(is_v7(ids) && is_v7(ids + 32));
  CHECK(memcmp(ids, ids + 32, 16) != 0);
  CHECK(all_bytes(ids + 48, 16, 0xEE)); /* nothing past 16 x lines */
  char id1[37];
  uuid_text(ids, id1);
  char *j = FETCH(mnem_keyword_search, s, app, user, q);
  CHECK(j && strstr(j, id1) != NULL && strstr(j, FIXED_ID) != NULL);
  free(j);
  /* without out_ids */
  EXPECT(mnem_put_episodes(s, app, user, STR("{\"primary\":\"aardvark four\"}"), NULL, 0, &err), OK);
  EXPECT_NOERR(mnem_put_episodes(s, app, user, STR(""), ids, sizeof ids, NULL), OK);
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 4);

  uint64_t n = 99;
  char line[64];
  snprintf(line, sizeof line, "\"%s\"", id1);
  EXPECT_NOERR(mnem_delete_episodes(s, app, user, S(line), NULL, NULL), OK);
  EXPECT(mnem_delete_episodes(s, app, user, EMPTY, &n, &err), OK);
  CHECK(n == 0);
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 3);

  /* mnem_put_episodes_v2's pointer cases and invalid UTF-8 (its protocol and its refusals: the
   * corpus, whose C and Rust replayers size every put_episodes_v2 step) */
  size_t len = 999;
  EXPECT(mnem_put_episodes_v2(s, app, user, STR(batch), NULL, 48, &len, &err), INVAL);
  CHECK(len == 0 && msg_has("`out_ids` is NULL"));
  EXPECT(mnem_put_episodes_v2(s, app, user, STR(batch), ids, sizeof ids, NULL, &err), INVAL);
  CHECK(msg_has("`out_ids_len` is NULL"));
  len = 999;
  EXPECT(mnem_put_episodes_v2(NULL, app, user, STR(batch), ids, sizeof ids, &len, &err), INVAL);
  CHECK(len == 0 && msg_has("`store` is NULL"));
  len = 999;
  EXPECT(mnem_put_episodes_v2(s, app, user, STR("{\"primary\":\"a\"}\n{\"primary\":\"\xff\"}"), ids,
                              sizeof ids, &len, &err),
         INVAL);
  CHECK(len == 0 && msg_has("line 2"));
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 3);
  EXPECT_NOERR(mnem_put_episodes_v2(s, app, user, STR("{\"primary\":\"aardvark five\"}"), NULL, 0, NULL, NULL), OK);
  CHECK(NRES(mnem_keyword_search, s, app, user, q) == 4);
}

/* ---- the embedder callback ------------------------------------------------------------- */

/* What embedding does (texts, vectors, calls, failures, hybrid search, recall): tests/conformance
 * (embed_*), whose C replayer registers C callbacks. Here: a NULL store, and a callback whose
 * vector is longer than mnem's first room (it answers BUFFER_TOO_SMALL, then fills the retry).
 * user_data points at the dimension. */
static int g_embed_calls;
static int32_t ones_cb(void *user_data, mnem_str text, float *out, size_t out_cap, size_t *out_len,
                       mnem_error *e) {
  (void)text, (void)e;
  size_t dim = *(const size_t *)user_data;
  g_embed_calls++;
  *out_len = dim;
  if (out_cap < dim) return MNEM_STATUS_BUFFER_TOO_SMALL;
  for (size_t i = 0; i < dim; i++) out[i] = 1.0f;
  return MNEM_STATUS_OK;
}

static void test_embedder(mnem_store *s) {
  static size_t big = 3000;
  EXPECT(mnem_set_embedder(NULL, ones_cb, &big, &err), INVAL);
  EXPECT_NOERR(mnem_set_embedder(NULL, NULL, NULL, NULL), INVAL);
  uint8_t out[1 << 14];
  size_t len = 0;
  EXPECT(mnem_hybrid_search_with(s, STR("emb"), STR("big"), STR("{\"text\":\"tea\"}"), ones_cb, &big, out,
                                 sizeof out, &len, &err),
         OK);
  CHECK(g_embed_calls == 2); /* room for 1024 floats, then for 3000 */
  /* A model's name the corpus cannot write: NULL with a length, and bytes that are not UTF-8.
   * Each is refused and leaves no embedder registered (the store had none). */
  EXPECT(mnem_set_named_embedder(NULL, STR("m"), ones_cb, &big, &err), INVAL);
  EXPECT(mnem_set_named_embedder(s, (mnem_str){NULL, 3}, ones_cb, &big, &err), INVAL);
  CHECK(msg_has("`model` is NULL with length 3"));
  EXPECT(mnem_set_named_embedder(s, STR("mini\xff"), ones_cb, &big, &err), INVAL);
  CHECK(msg_has("`model` is not valid UTF-8"));
  EXPECT(mnem_put_episodes_v2(s, STR("emb"), STR("named"), STR("{\"primary\":\"tea\",\"embed\":true}"), NULL, 0,
                              NULL, &err),
         INVAL);
  CHECK(msg_has("no embedder is registered"));
  EXPECT_NOERR(mnem_set_named_embedder(s, (mnem_str){NULL, 0}, NULL, NULL, NULL), OK); /* removes: none */
}

/* ---- keyword / lexical page / substring / hybrid --------------------------------------- */

/* Ranking, filters and refused queries: tests/conformance. Here: the output-buffer protocol
 * of each read, with NULL pointers and err == NULL. */
static void test_reads(mnem_store *s) {
  mnem_str app = STR("rd"), user = STR("u");
  EXPECT(mnem_put_episodes(s, app, user,
                           STR("{\"primary\":\"alpha apple\",\"embedding\":[1,0,0]}\n"
                               "{\"primary\":\"beta apple\",\"embedding\":[0,1,0]}\n"),
                           NULL, 0, &err),
         OK);
  buffer_convention("mnem_keyword_search", mnem_keyword_search, s, app, user,
                    STR("{\"text\":\"apple\"}"), STR("{\"text\":\"apple\",\"limit\":1001}"));
  buffer_convention("mnem_lexical_page", mnem_lexical_page, s, app, user,
                    STR("{\"text\":\"apple\"}"), STR("{\"text\":\"apple\",\"limit\":0}"));
  buffer_convention("mnem_substring_search", mnem_substring_search, s, app, user,
                    STR("{\"text\":\"apple\"}"), STR("{\"text\":\"apple\",\"bogus\":1}"));
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

/* Store management: tests/conformance (delete_session, get_episodes, list_namespaces,
 * namespace_stats, export_*, check_backup_compact, forget_namespace, view). Here: NULL
 * pointers, invalid UTF-8, err == NULL and the buffer protocol of each management read. */
static void test_admin(void) {
  char db[PATH_MAX + 16];
  snprintf(db, sizeof db, "%s/admin", g_tmp);
  mnem_str app = STR("a"), u1 = STR("u1");
  mnem_store *s = NULL;
  uint64_t n = 99;
  uint8_t ids[32];
  char id0[37], id1[37], q[256];
  EXPECT(mnem_open(S(db), MNEM_OPEN_CREATE, EMPTY, &s, &err), OK);
  if (!s) return;
  EXPECT(mnem_add_session(s, app, u1, STR("s1"),
                          STR(EV("e1", "user", "1", "apple pear") "\n" EV("e2", "user", "2", "pear")),
                          &n, &err),
         OK);
  EXPECT(mnem_put_episodes(s, app, u1,
                           STR("{\"primary\":\"banana\",\"embedding\":[1,0]}\n{\"primary\":\"cherry\"}"),
                           ids, sizeof ids, &err),
         OK);
  uuid_text(ids, id0), uuid_text(ids + 16, id1);

  CTX("delete_session");
  EXPECT_NOERR(mnem_delete_session(s, app, u1, STR("never"), NULL, NULL), OK);
  n = 9;
  EXPECT(mnem_delete_session(s, app, u1, BADU, &n, &err), INVAL);
  CHECK(n == 0 && msg_has("session_id"));
  EXPECT(mnem_delete_session(s, app, NULLSTR, STR("s1"), &n, &err), INVAL);
  EXPECT(mnem_delete_session(NULL, app, u1, STR("s1"), &n, &err), INVAL);
  CHECK(n == 0);

  CTX("get_episodes");
  snprintf(q, sizeof q, "\"%s\"\n\"01900000-0000-7000-8000-000000000000\"\n\"%s\"", id1, id0);
  buffer_convention("mnem_get_episodes", mnem_get_episodes, s, app, u1, S(q), STR("[1]"));
  CTX("list_namespaces");
  buffer_convention("mnem_list_namespaces", list_fn, s, EMPTY, EMPTY, EMPTY, STR("{\"limit\":1001}"));
  READ_FAILS(list_fn, s, EMPTY, EMPTY, NULLSTR, INVAL);
  CTX("namespace_stats");
  free(FETCH(stats_fn, s, app, u1, EMPTY));
  READ_FAILS(stats_fn, s, BADU, u1, EMPTY, INVAL);
  READ_FAILS(stats_fn, s, app, NULLSTR, EMPTY, INVAL);
  CTX("check");
  free(FETCH(check_fn, s, EMPTY, EMPTY, EMPTY));
  READ_FAILS(check_fn, NULL, EMPTY, EMPTY, EMPTY, INVAL);

  CTX("export/import");
  size_t need = 9;
  EXPECT(mnem_export(NULL, app, u1, 0, NULL, 0, &need, &err), INVAL);
  CHECK(need == 0);
  EXPECT(mnem_export(s, BADU, u1, 0, NULL, 0, &need, &err), INVAL);
  CHECK(need == 0);
  EXPECT(mnem_export(s, BADU, u1, 1, NULL, 0, &need, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(need > 0); /* `all` ignores the namespace */
  char *dump = malloc(need + 1);
  size_t len = 0;
  EXPECT(mnem_export(s, app, u1, 1, (uint8_t *)dump, need - 1, &len, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(len == need);
  EXPECT(mnem_export(s, app, u1, 1, (uint8_t *)dump, need, &len, &err), OK);
  CHECK(len == need && dump[len - 1] == '\n');
  dump[len] = '\0';
  size_t plen = 9;
  EXPECT(mnem_export_page(NULL, app, u1, 1, EMPTY, 300, NULL, 0, &plen, &err), INVAL);
  CHECK(plen == 0);
  EXPECT(mnem_export_page(s, app, u1, 1, BADU, 300, NULL, 0, &plen, &err), INVAL);
  EXPECT(mnem_export_page(s, app, u1, 1, EMPTY, 300, NULL, 0, &plen, &err), MNEM_STATUS_BUFFER_TOO_SMALL);
  CHECK(plen > 0);
  mnem_store *m = open_memory();
  EXPECT(mnem_import(NULL, S(dump), &n, &err), INVAL);
  EXPECT(mnem_import(m, NULLSTR, &n, &err), INVAL);
  EXPECT_NOERR(mnem_import(m, S(dump), NULL, NULL), OK);
  CHECK(NRES(mnem_search, m, app, u1, STR("pear")) == 2);
  free(dump);

  CTX("backup/compact/forget");
  EXPECT(mnem_backup(s, NULLSTR, &err), INVAL);
  EXPECT(mnem_backup(s, BADU, &err), INVAL);
  EXPECT(mnem_backup(NULL, STR("/tmp/never-written"), &err), INVAL);
  EXPECT_NOERR(mnem_compact(m, NULL), OK);
  EXPECT(mnem_compact(NULL, &err), INVAL);
  CHECK(msg_has("store"));
  EXPECT_NOERR(mnem_forget_namespace(s, app, STR("never"), NULL), OK);
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
  test_episodes(m);
  test_reads(m);
  test_threads(m);
  test_embedder(m);
  EXPECT(mnem_flush(m, &err), OK);
  mnem_free(m);
  test_admin();
  test_newer_format();
  test_damaged_records();
  test_damaged_table();
  rm_rf(g_tmp);
  CHECK(!path_exists(g_tmp));
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
