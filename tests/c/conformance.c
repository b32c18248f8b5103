/* Replays the conformance corpus (the JSON files of tests/conformance/cases; format in
 * tests/conformance/README.md) through the C ABI, parsing cases and outputs with cJSON. Every
 * read also goes through the output-buffer protocol (size query, one byte short, exact fit), as
 * does every put_episodes_v2 without ids_cap, and every call's error struct is checked against
 * its status. The corpus's embedders are C callbacks (corpus_embed). Usage: conformance CASES_DIR. */
#define _GNU_SOURCE
#include "mnem.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers --------------------------------------------------------------------- */

static char g_fail[2048]; /* the first mismatch of the current step */

static bool fail(const char *fmt, ...) {
  if (g_fail[0]) return false;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_fail, sizeof g_fail, fmt, ap);
  va_end(ap);
  return false;
}

/* A growable byte buffer. */
typedef struct {
  char *p;
  size_t n, cap;
} buf;
static void buf_add(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}
static char *buf_take(buf *b) {
  if (!b->p) buf_add(b, "", 0);
  return b->p;
}

static mnem_str S(const char *s) { return (mnem_str){(const uint8_t *)s, strlen(s)}; }

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  buf b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
  fclose(f);
  return buf_take(&b);
}

/* ---- variables ------------------------------------------------------------------------- */

#define MAXVARS 256
static struct {
  char *name, *value;
} g_vars[MAXVARS];
static int g_nvars;

static const char *var_get(const char *name) {
  for (int i = 0; i < g_nvars; i++)
    if (strcmp(g_vars[i].name, name) == 0) return g_vars[i].value;
  return NULL;
}
static void var_set(const char *name, const char *value) {
  for (int i = 0; i < g_nvars; i++)
    if (strcmp(g_vars[i].name, name) == 0) {
      free(g_vars[i].value);
      g_vars[i].value = strdup(value);
      return;
    }
  if (g_nvars < MAXVARS) g_vars[g_nvars].name = strdup(name), g_vars[g_nvars++].value = strdup(value);
}
static void vars_clear(void) {
  for (int i = 0; i < g_nvars; i++) free(g_vars[i].name), free(g_vars[i].value);
  g_nvars = 0;
}

/* `${name}` replaced by the variable's value; malloc'd, or NULL (g_fail set) when unbound. */
static char *subst(const char *s) {
  buf b = {0};
  for (const char *p = s; *p;) {
    const char *q = strstr(p, "${");
    if (!q) {
      buf_add(&b, p, strlen(p));
      break;
    }
    buf_add(&b, p, (size_t)(q - p));
    const char *end = strchr(q, '}');
    char name[128];
    size_t len = end ? (size_t)(end - q - 2) : 0;
    if (!end || len >= sizeof name) {
      fail("bad variable reference in %s", s);
      free(b.p);
      return NULL;
    }
    memcpy(name, q + 2, len);
    name[len] = '\0';
    const char *v = var_get(name);
    if (!v) {
      fail("unbound variable ${%s}", name);
      free(b.p);
      return NULL;
    }
    buf_add(&b, v, strlen(v));
    p = end + 1;
  }
  return buf_take(&b);
}

/* ---- matching -------------------------------------------------------------------------- */

static bool is_uuid(const char *s) {
  if (!s || strlen(s) != 36) return false;
  for (int i = 0; i < 36; i++) {
    char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

/* Python's datetime.fromtimestamp(secs).isoformat() in the local time zone. */
static void local_iso(double secs, char *out, size_t cap) {
  double whole = floor(secs);
  long micros = lround((secs - whole) * 1e6);
  if (micros == 1000000) whole += 1, micros = 0;
  time_t t = (time_t)whole;
  struct tm tm;
  localtime_r(&t, &tm);
  size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
  if (micros) snprintf(out + n, cap - n, ".%06ld", micros);
}

static bool bind(const char *name, const char *got, const char *path) {
  if (!name[0]) return true;
  const char *v = var_get(name);
  if (!v) {
    var_set(name, got);
    return true;
  }
  if (strcmp(v, got) == 0) return true;
  return fail("%s: $%s is \"%s\", got \"%s\"", path, name, v, got);
}

static bool match(const cJSON *want, const cJSON *got, const char *path) {
  char sub[512];
  if (cJSON_IsObject(want) && want->child && !want->child->next && want->child->string[0] == '$') {
    const char *k = want->child->string;
    const cJSON *arg = want->child;
    if (strcmp(k, "$any") == 0) {
      const char *t = cJSON_IsString(arg) ? arg->valuestring : "";
      bool ok = strcmp(t, "value") == 0 ? true
                : strcmp(t, "string") == 0 ? cJSON_IsString(got)
                : strcmp(t, "number") == 0 ? cJSON_IsNumber(got)
                : strcmp(t, "integer") == 0 ? cJSON_IsNumber(got) && got->valuedouble == floor(got->valuedouble)
                : strcmp(t, "uuid") == 0 ? cJSON_IsString(got) && is_uuid(got->valuestring)
                                         : false;
      return ok || fail("%s: not a %s", path, t);
    }
    if (strcmp(k, "$uuid") == 0) {
      if (!cJSON_IsString(got) || !is_uuid(got->valuestring)) return fail("%s: not a UUID", path);
      return bind(cJSON_IsString(arg) ? arg->valuestring : "", got->valuestring, path);
    }
    if (strcmp(k, "$var") == 0) {
      if (!cJSON_IsString(got)) return fail("%s: not a string", path);
      return bind(cJSON_IsString(arg) ? arg->valuestring : "", got->valuestring, path);
    }
    if (strcmp(k, "$localtime") == 0) {
      char iso[64];
      local_iso(arg->valuedouble, iso, sizeof iso);
      if (cJSON_IsString(got) && strcmp(got->valuestring, iso) == 0) return true;
      return fail("%s: want local time %s, got %s", path, iso,
                  cJSON_IsString(got) ? got->valuestring : "(not a string)");
    }
  }
  if (cJSON_IsObject(want)) {
    if (!cJSON_IsObject(got)) return fail("%s: not an object", path);
    for (const cJSON *g = got->child; g; g = g->next)
      if (!cJSON_GetObjectItemCaseSensitive(want, g->string))
        return fail("%s: unexpected key \"%s\"", path, g->string);
    for (const cJSON *w = want->child; w; w = w->next) {
      const cJSON *g = cJSON_GetObjectItemCaseSensitive(got, w->string);
      if (!g) return fail("%s: missing key \"%s\"", path, w->string);
      snprintf(sub, sizeof sub, "%s.%s", path, w->string);
      if (!match(w, g, sub)) return false;
    }
    return true;
  }
  if (cJSON_IsArray(want)) {
    if (!cJSON_IsArray(got)) return fail("%s: not an array", path);
    if (cJSON_GetArraySize(want) != cJSON_GetArraySize(got))
      return fail("%s: want %d elements, got %d", path, cJSON_GetArraySize(want), cJSON_GetArraySize(got));
    int i = 0;
    for (const cJSON *w = want->child, *g = got->child; w; w = w->next, g = g->next, i++) {
      snprintf(sub, sizeof sub, "%s[%d]", path, i);
      if (!match(w, g, sub)) return false;
    }
    return true;
  }
  if (cJSON_IsNumber(want))
    return (cJSON_IsNumber(got) && got->valuedouble == want->valuedouble) ||
           fail("%s: want %.17g, got %s%.17g", path, want->valuedouble,
                cJSON_IsNumber(got) ? "" : "(not a number) ", got->valuedouble);
  if (cJSON_IsString(want))
    return (cJSON_IsString(got) && strcmp(got->valuestring, want->valuestring) == 0) ||
           fail("%s: want \"%s\", got \"%s\"", path, want->valuestring,
                cJSON_IsString(got) ? got->valuestring : "(not a string)");
  if (cJSON_IsBool(want))
    return (cJSON_IsBool(got) && cJSON_IsTrue(got) == cJSON_IsTrue(want)) || fail("%s: bool differs", path);
  if (cJSON_IsNull(want)) return cJSON_IsNull(got) || fail("%s: want null", path);
  return fail("%s: unsupported expectation", path);
}

/* ---- arguments ------------------------------------------------------------------------- */

/* A string argument with variables substituted: absent is "", a string itself, anything else its
 * JSON text (query objects). malloc'd; NULL when substitution failed. */
static char *text_arg(const cJSON *args, const char *key, const char *dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
  if (!v || cJSON_IsNull(v)) return subst(dflt);
  if (cJSON_IsString(v)) return subst(v->valuestring);
  char *json = cJSON_PrintUnformatted(v);
  char *out = subst(json);
  free(json);
  return out;
}

/* A JSON Lines argument: a string as is, or an array of lines joined by "\n". */
static char *lines_arg(const cJSON *args, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
  if (!cJSON_IsArray(v)) return text_arg(args, key, "");
  buf b = {0};
  for (const cJSON *x = v->child; x; x = x->next) {
    char *line = cJSON_IsString(x) ? subst(x->valuestring) : NULL;
    if (!line) {
      free(b.p);
      if (!cJSON_IsString(x)) fail("%s: a line is not a string", key);
      return NULL;
    }
    if (x != v->child) buf_add(&b, "\n", 1);
    buf_add(&b, line, strlen(line));
    free(line);
  }
  return buf_take(&b);
}

/* ---- one replay ------------------------------------------------------------------------ */

#define MAXSTORES 8
typedef struct {
  char tmp[512];
  /* Replaying on PostgreSQL (MNEM_TEST_PG_URI): every store the case names is a schema of
     its own starting with this stem (":memory:" a new one at each open); empty on disk. */
  char pg_schema[256];
  int opens;
  struct {
    char name[64];
    mnem_store *h;
  } stores[MAXSTORES];
} replay;

typedef struct {
  mnem_status status;
  char message[MNEM_ERROR_MESSAGE_CAP];
  bool has_count;
  uint64_t count;
  cJSON *ids;   /* array of strings, put_episodes */
  bool has_ids_len;
  size_t ids_len; /* *out_ids_len, put_episodes_v2 */
  cJSON *value; /* static calls */
  char *out;    /* output text, NUL-terminated */
  size_t out_len;
} outcome;

static void poison(mnem_error *e) { memset(e, 0x5A, sizeof *e); }

static cJSON *g_texts; /* the texts the corpus's embedders were asked since the last embedder_texts */

static bool check_err(mnem_status st, const mnem_error *e, outcome *o) {
  const char *nul = memchr(e->message, '\0', MNEM_ERROR_MESSAGE_CAP);
  if (e->code != st || e->detail != 0 || !nul) return fail("error struct not filled for status %d", st);
  if ((st == MNEM_STATUS_OK) != (e->message[0] == '\0')) return fail("status %d with message \"%s\"", st, e->message);
  o->status = st;
  snprintf(o->message, sizeof o->message, "%s", e->message);
  return true;
}

typedef mnem_status (*read_call)(void *ctx, uint8_t *out, size_t cap, size_t *len, mnem_error *err);

static bool do_read(read_call f, void *ctx, outcome *o) {
  mnem_error e;
  size_t need = 999;
  poison(&e);
  mnem_status st = f(ctx, NULL, 0, &need, &e);
  if (!check_err(st, &e, o)) return false;
  if (st != MNEM_STATUS_BUFFER_TOO_SMALL) {
    if (st == MNEM_STATUS_OK || need != 0) return fail("size query: status %d, *out_len %zu", st, need);
    return true;
  }
  /* The repeats below may ask an embedder again (a background write of the store between two
   * calls drops the answer kept for them): only the size query's texts are the step's. */
  int asked = cJSON_GetArraySize(g_texts);
  uint8_t *b = malloc(need + 16);
  memset(b, 0xCD, need + 16);
  size_t len = 999;
  poison(&e);
  st = f(ctx, b, need - 1, &len, &e);
  bool ok = check_err(st, &e, o);
  for (size_t i = 0; ok && i < need + 16; i++)
    if (b[i] != 0xCD) ok = fail("BUFFER_TOO_SMALL touched the buffer");
  if (ok && (st != MNEM_STATUS_BUFFER_TOO_SMALL || len != need))
    ok = fail("one byte short: status %d, *out_len %zu, need %zu", st, len, need);
  if (ok) {
    poison(&e);
    st = f(ctx, b, need, &len, &e);
    ok = check_err(st, &e, o);
    if (ok && (st != MNEM_STATUS_OK || len != need)) ok = fail("exact fit: status %d, *out_len %zu", st, len);
    for (size_t i = need; ok && i < need + 16; i++)
      if (b[i] != 0xCD) ok = fail("wrote past *out_len");
    if (ok && memchr(b, 0, need)) ok = fail("output contains NUL");
  }
  while (cJSON_GetArraySize(g_texts) > asked) cJSON_DeleteItemFromArray(g_texts, asked);
  if (!ok) {
    free(b);
    return false;
  }
  o->out = malloc(need + 1);
  memcpy(o->out, b, need);
  o->out[need] = '\0';
  o->out_len = need;
  free(b);
  return true;
}

/* A read whose answer may change between two calls (mnem_stats: live counters, and not kept
 * for a retry): sized by a query, then retried with room to spare. */
static bool do_read_moving(read_call f, void *ctx, outcome *o) {
  for (int attempt = 0; attempt < 5; attempt++) {
    mnem_error e;
    size_t need = 0, len = 0;
    poison(&e);
    mnem_status st = f(ctx, NULL, 0, &need, &e);
    if (!check_err(st, &e, o)) return false;
    if (st != MNEM_STATUS_BUFFER_TOO_SMALL) return true;
    uint8_t *b = malloc(need + 256);
    poison(&e);
    st = f(ctx, b, need + 256, &len, &e);
    if (!check_err(st, &e, o)) {
      free(b);
      return false;
    }
    if (st == MNEM_STATUS_BUFFER_TOO_SMALL) {
      free(b);
      continue;
    }
    if (st == MNEM_STATUS_OK) {
      o->out = malloc(len + 1);
      memcpy(o->out, b, len);
      o->out[len] = '\0';
      o->out_len = len;
    }
    free(b);
    return true;
  }
  return fail("the answer outgrew its buffer five times");
}

/* 16-byte ids as an array of UUID strings. */
static cJSON *ids_array(const uint8_t *ids, size_t n) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) {
    char t[37];
    static const char hex[] = "0123456789abcdef";
    int k = 0;
    for (int j = 0; j < 16; j++) {
      if (j == 4 || j == 6 || j == 8 || j == 10) t[k++] = '-';
      t[k++] = hex[ids[16 * i + j] >> 4], t[k++] = hex[ids[16 * i + j] & 15];
    }
    t[k] = '\0';
    cJSON_AddItemToArray(arr, cJSON_CreateString(t));
  }
  return arr;
}

/* One mnem_put_episodes_v2 with `cap` bytes of ids (`null`: NULL and 0, ids not wanted) and
   16 guard bytes: only OK writes them, and only the ids. */
static bool put_v2_once(mnem_store *h, mnem_str a, mnem_str u, mnem_str data, bool null, size_t cap, outcome *o) {
  mnem_error e;
  poison(&e);
  uint8_t *b = malloc(cap + 16);
  memset(b, 0xEE, cap + 16);
  size_t len = 999;
  mnem_status st = mnem_put_episodes_v2(h, a, u, data, null ? NULL : b, cap, &len, &e);
  bool ok = check_err(st, &e, o);
  size_t from = st == MNEM_STATUS_OK && !null && len <= cap ? len : 0;
  for (size_t i = from; ok && i < cap + 16; i++)
    if (b[i] != 0xEE) ok = fail("put_episodes_v2 (status %d) wrote out_ids past %zu bytes", st, from);
  if (ok && st == MNEM_STATUS_OK && !null && len > cap) ok = fail("OK with *out_ids_len %zu > cap %zu", len, cap);
  if (ok && st == MNEM_STATUS_BUFFER_TOO_SMALL && len <= cap)
    ok = fail("BUFFER_TOO_SMALL with *out_ids_len %zu for cap %zu", len, cap);
  if (ok && st != MNEM_STATUS_OK && st != MNEM_STATUS_BUFFER_TOO_SMALL && len != 0)
    ok = fail("status %d with *out_ids_len %zu", st, len);
  o->has_ids_len = true, o->ids_len = len;
  cJSON_Delete(o->ids), o->ids = NULL;
  if (ok && st == MNEM_STATUS_OK && !null) o->ids = ids_array(b, len / 16);
  free(b);
  return ok;
}

/* ---- the corpus's embedders (tests/conformance/README.md): user_data is the kind ------- */

static char KINDS[3][8] = {"words", "fails", "zero"};
static const char *const GROUPS[7] = {"tea coffee oolong drink",    "cat kitten dog pet",
                                      "train flight lisbon travel", "green red blue colour",
                                      "morning noon night late",    "sofa cushion home house",
                                      "apple bread lunch food"};

/* The kind named `k` ("none": NULL). */
static void *kind_of(const char *k) {
  for (int i = 0; i < 3; i++)
    if (!strcmp(k, KINDS[i])) return KINDS[i];
  if (strcmp(k, "none")) fail("unknown embedder %s", k);
  return NULL;
}

static int32_t corpus_embed(void *user_data, mnem_str text, float *out, size_t out_cap, size_t *out_len,
                            mnem_error *e) {
  char *t = calloc(text.len + 1, 1);
  if (text.len) memcpy(t, text.ptr, text.len);
  cJSON_AddItemToArray(g_texts, cJSON_CreateString(t));
  float v[8] = {0, 0, 0, 0, 0, 0, 0, 1};
  for (size_t i = 0, n = 0; i < text.len; i += n ? n : 1) { /* words: runs of ASCII letters, digits */
    for (n = 0; i + n < text.len && t[i + n] > 0 && isalnum((unsigned char)t[i + n]); n++)
      t[i + n] = (char)tolower((unsigned char)t[i + n]);
    char w[72], group[64];
    for (int g = 0; n && n < 64 && g < 7; g++) {
      snprintf(w, sizeof w, " %.*s ", (int)n, t + i), snprintf(group, sizeof group, " %s ", GROUPS[g]);
      if (strstr(group, w)) v[g] += 1;
    }
  }
  free(t);
  if (!strcmp(user_data, "fails")) return snprintf(e->message, sizeof e->message, "model offline"), 42;
  if (!strcmp(user_data, "zero")) memset(v, 0, sizeof v);
  *out_len = 8;
  if (out_cap < 8) return MNEM_STATUS_BUFFER_TOO_SMALL;
  memcpy(out, v, sizeof v);
  return MNEM_STATUS_OK;
}

/* The read calls, adapted to read_call. */
typedef struct {
  const char *call;
  mnem_store *h;
  mnem_str app, user, q, cursor;
  int32_t all;
  uint64_t max;
  void *embedder; /* hybrid_search_with's */
} read_ctx;
static mnem_status read_dispatch(void *p, uint8_t *out, size_t cap, size_t *len, mnem_error *e) {
  read_ctx *c = p;
  const char *n = c->call;
  if (!strcmp(n, "search")) return mnem_search(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "keyword_search")) return mnem_keyword_search(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "lexical_page")) return mnem_lexical_page(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "substring_search")) return mnem_substring_search(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "hybrid_search")) return mnem_hybrid_search(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "hybrid_search_with"))
    return mnem_hybrid_search_with(c->h, c->app, c->user, c->q, c->embedder ? corpus_embed : NULL, c->embedder, out,
                                   cap, len, e);
  if (!strcmp(n, "recall")) return mnem_recall(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "get_episodes")) return mnem_get_episodes(c->h, c->app, c->user, c->q, out, cap, len, e);
  if (!strcmp(n, "list_namespaces")) return mnem_list_namespaces(c->h, c->q, out, cap, len, e);
  if (!strcmp(n, "namespace_stats")) return mnem_namespace_stats(c->h, c->app, c->user, out, cap, len, e);
  if (!strcmp(n, "stats")) return mnem_stats(c->h, out, cap, len, e);
  if (!strcmp(n, "check")) return mnem_check(c->h, out, cap, len, e);
  if (!strcmp(n, "export")) return mnem_export(c->h, c->app, c->user, c->all, out, cap, len, e);
  return mnem_export_page(c->h, c->app, c->user, c->all, c->cursor, c->max, out, cap, len, e);
}

static mnem_store **store_slot(replay *r, const char *name, bool create) {
  for (int i = 0; i < MAXSTORES; i++)
    if (r->stores[i].h && strcmp(r->stores[i].name, name) == 0) return &r->stores[i].h;
  if (!create) return NULL;
  for (int i = 0; i < MAXSTORES; i++)
    if (!r->stores[i].h) {
      snprintf(r->stores[i].name, sizeof r->stores[i].name, "%s", name);
      return &r->stores[i].h;
    }
  return NULL;
}

static char *resolve(replay *r, const char *p) {
  if (r->pg_schema[0] && p[0]) {
    const char *server = getenv("MNEM_TEST_PG_URI");
    char name[128];
    if (strcmp(p, ":memory:") == 0) {
      snprintf(name, sizeof name, "m%d", ++r->opens);
    } else {
      size_t i = 0;
      for (; p[i] && i + 1 < sizeof name; i++) {
        unsigned char c = (unsigned char)p[i];
        name[i] = (c < 128 && isalnum(c)) ? (char)tolower(c) : '_';
      }
      name[i] = '\0';
    }
    size_t n = strlen(server) + strlen(r->pg_schema) + strlen(name) + 16;
    char *out = malloc(n);
    snprintf(out, n, "%s%cschema=%s_%s", server, strchr(server, '?') ? '&' : '?', r->pg_schema, name);
    return out;
  }
  if (!p[0] || strcmp(p, ":memory:") == 0) return strdup(p);
  size_t n = strlen(r->tmp) + strlen(p) + 2;
  char *out = malloc(n);
  snprintf(out, n, "%s/%s", r->tmp, p);
  return out;
}

static const char *str_or(const cJSON *args, const char *key, const char *dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
  return cJSON_IsString(v) ? v->valuestring : dflt;
}

static bool call(replay *r, const char *name, const cJSON *args, outcome *o) {
  mnem_error e;
  poison(&e);
  if (!strcmp(name, "abi_version")) return (o->value = cJSON_CreateNumber(mnem_abi_version())), true;
  if (!strcmp(name, "version")) return (o->value = cJSON_CreateString(mnem_version())), true;
  if (!strcmp(name, "embedder_texts")) return (o->value = g_texts), (g_texts = cJSON_CreateArray()), true;
  const cJSON *sv = cJSON_GetObjectItemCaseSensitive(args, "status");
  int32_t status_arg = cJSON_IsNumber(sv) ? (int32_t)sv->valuedouble : 0;
  if (!strcmp(name, "status_name")) return (o->value = cJSON_CreateString(mnem_status_name(status_arg))), true;
  if (!strcmp(name, "status_message"))
    return (o->value = cJSON_CreateString(mnem_status_message(status_arg))), true;
  if (!strcmp(name, "open")) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(args, "flags");
    uint32_t flags = MNEM_OPEN_CREATE;
    if (cJSON_IsNumber(f)) flags = (uint32_t)f->valuedouble;
    if (cJSON_IsArray(f)) {
      flags = 0;
      for (const cJSON *x = f->child; x; x = x->next) {
        const char *s = cJSON_IsString(x) ? x->valuestring : "";
        flags |= !strcmp(s, "create") ? MNEM_OPEN_CREATE
                 : !strcmp(s, "read_only") ? MNEM_OPEN_READ_ONLY
                 : !strcmp(s, "view") ? MNEM_OPEN_VIEW
                                      : 0x80000000u;
      }
    }
    const char *as = str_or(args, "as", "main");
    if (store_slot(r, as, false)) return fail("store %s is already open", as);
    char *path = resolve(r, str_or(args, "path", ":memory:"));
    char *opts = text_arg(args, "options", "");
    mnem_store *h = (mnem_store *)&e; /* must be reset */
    mnem_status st = mnem_open(S(path), flags, S(opts ? opts : ""), &h, &e);
    free(path), free(opts);
    if ((st == MNEM_STATUS_OK) != (h != NULL)) return fail("open: status %d with handle %p", st, (void *)h);
    if (st == MNEM_STATUS_OK) {
      mnem_store **slot = store_slot(r, as, true);
      if (!slot) return fail("too many stores");
      *slot = h;
    }
    return check_err(st, &e, o);
  }
  mnem_store **slot = store_slot(r, str_or(args, "store", "main"), false);
  if (!slot) return fail("no open store %s", str_or(args, "store", "main"));
  mnem_store *h = *slot;
  if (!strcmp(name, "close")) {
    mnem_free(h);
    *slot = NULL;
    o->status = MNEM_STATUS_OK;
    return true;
  }
  char *app = text_arg(args, "app", "app"), *user = text_arg(args, "user", "user");
  bool ok = app && user;
  mnem_str a = S(app ? app : ""), u = S(user ? user : "");
  uint64_t n = 0x5A5A;
  if (!ok) {
  } else if (!strcmp(name, "flush")) {
    ok = check_err(mnem_flush(h, &e), &e, o);
  } else if (!strcmp(name, "compact")) {
    ok = check_err(mnem_compact(h, &e), &e, o);
  } else if (!strcmp(name, "forget_namespace")) {
    ok = check_err(mnem_forget_namespace(h, a, u, &e), &e, o);
  } else if (!strcmp(name, "set_embedder")) {
    void *k = kind_of(str_or(args, "kind", "words"));
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(args, "model");
    if (cJSON_IsString(model))
      ok = !g_fail[0] &&
           check_err(mnem_set_named_embedder(h, S(model->valuestring), k ? corpus_embed : NULL, k, &e), &e, o);
    else
      ok = !g_fail[0] && check_err(mnem_set_embedder(h, k ? corpus_embed : NULL, k, &e), &e, o);
  } else if (!strcmp(name, "backup")) {
    char *d = text_arg(args, "dest", ""), *dest = d ? resolve(r, d) : NULL;
    ok = dest && check_err(mnem_backup(h, S(dest), &e), &e, o);
    free(d), free(dest);
  } else if (!strcmp(name, "add_session") || !strcmp(name, "add_events") || !strcmp(name, "delete_memory") ||
             !strcmp(name, "delete_session") || !strcmp(name, "delete_episodes") || !strcmp(name, "import")) {
    char *x = NULL, *y = NULL, *z = NULL;
    mnem_status st = MNEM_STATUS_INTERNAL;
    if (!strcmp(name, "add_session")) {
      x = text_arg(args, "session_id", ""), y = lines_arg(args, "events");
      if (x && y) st = mnem_add_session(h, a, u, S(x), S(y), &n, &e);
    } else if (!strcmp(name, "add_events")) {
      x = text_arg(args, "session_id", ""), y = lines_arg(args, "events"), z = text_arg(args, "metadata", "");
      if (x && y && z) st = mnem_add_events(h, a, u, S(x), S(y), S(z), &n, &e);
    } else if (!strcmp(name, "delete_memory")) {
      x = text_arg(args, "memory_id", "");
      if (x) st = mnem_delete_memory(h, a, u, S(x), &n, &e);
    } else if (!strcmp(name, "delete_session")) {
      x = text_arg(args, "session_id", "");
      if (x) st = mnem_delete_session(h, a, u, S(x), &n, &e);
    } else if (!strcmp(name, "delete_episodes")) {
      x = lines_arg(args, "ids");
      if (x) st = mnem_delete_episodes(h, a, u, S(x), &n, &e);
    } else {
      x = lines_arg(args, "lines");
      if (x) st = mnem_import(h, S(x), &n, &e);
    }
    ok = !g_fail[0] && check_err(st, &e, o);
    if (ok && st == MNEM_STATUS_OK) o->has_count = true, o->count = n;
    free(x), free(y), free(z);
  } else if (!strcmp(name, "put_episodes")) {
    char *data = lines_arg(args, "episodes");
    ok = data != NULL;
    size_t lines = 0;
    for (char *p = data; ok && p;) { /* lines of only spaces, tabs and CR are skipped */
      char *nl = strchr(p, '\n');
      size_t len = nl ? (size_t)(nl - p) : strlen(p);
      if (strspn(p, " \t\r") < len) lines++;
      p = nl ? nl + 1 : NULL;
    }
    uint8_t *ids = malloc(16 * lines + 16);
    memset(ids, 0xEE, 16 * lines + 16);
    mnem_status st = ok ? mnem_put_episodes(h, a, u, S(data), ids, 16 * lines, &e) : MNEM_STATUS_INTERNAL;
    ok = ok && check_err(st, &e, o);
    for (size_t i = 16 * lines; ok && i < 16 * lines + 16; i++)
      if (ids[i] != 0xEE) ok = fail("put_episodes wrote past 16 bytes per line");
    if (ok && st == MNEM_STATUS_OK) o->ids = ids_array(ids, lines);
    free(ids), free(data);
  } else if (!strcmp(name, "put_episodes_v2")) {
    char *data = lines_arg(args, "episodes");
    const cJSON *cap = cJSON_GetObjectItemCaseSensitive(args, "ids_cap");
    bool wanted = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(args, "ids_wanted"));
    ok = data != NULL;
    if (ok && !wanted) {
      ok = put_v2_once(h, a, u, S(data), true, 0, o);
    } else if (ok && cJSON_IsNumber(cap)) {
      ok = put_v2_once(h, a, u, S(data), false, (size_t)cap->valuedouble, o);
    } else if (ok) { /* the protocol: a size query, a buffer one byte short, then the exact size */
      ok = put_v2_once(h, a, u, S(data), false, 0, o);
      size_t need = o->ids_len;
      if (ok && o->status == MNEM_STATUS_BUFFER_TOO_SMALL) {
        ok = put_v2_once(h, a, u, S(data), false, need - 1, o);
        if (ok && (o->status != MNEM_STATUS_BUFFER_TOO_SMALL || o->ids_len != need))
          ok = fail("one byte short: status %d, *out_ids_len %zu, need %zu", o->status, o->ids_len, need);
        ok = ok && put_v2_once(h, a, u, S(data), false, need, o);
        if (ok && o->status == MNEM_STATUS_OK && o->ids_len != need)
          ok = fail("exact fit: *out_ids_len %zu, need %zu", o->ids_len, need);
      }
    }
    free(data);
  } else {
    static const char *reads[] = {"search", "keyword_search", "lexical_page", "substring_search", "hybrid_search",
                                  "hybrid_search_with", "recall", "get_episodes", "list_namespaces",
                                  "namespace_stats", "stats", "check", "export", "export_page"};
    bool known = false;
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) known |= strcmp(name, reads[i]) == 0;
    if (!known) {
      ok = fail("unknown call %s", name);
    } else {
      char *q = !strcmp(name, "get_episodes") ? lines_arg(args, "ids") : text_arg(args, "query", "");
      char *cursor = text_arg(args, "cursor", "");
      const cJSON *all = cJSON_GetObjectItemCaseSensitive(args, "all");
      const cJSON *max = cJSON_GetObjectItemCaseSensitive(args, "max_bytes");
      read_ctx c = {name, h, a, u, S(q ? q : ""), S(cursor ? cursor : ""), cJSON_IsTrue(all) ? 1 : 0,
                    cJSON_IsNumber(max) ? (uint64_t)max->valuedouble : 0,
                    strcmp(name, "hybrid_search_with") ? NULL : kind_of(str_or(args, "embedder", "words"))};
      ok = q && cursor && !g_fail[0] &&
           (strcmp(name, "stats") ? do_read(read_dispatch, &c, o) : do_read_moving(read_dispatch, &c, o));
      free(q), free(cursor);
    }
  }
  free(app), free(user);
  return ok;
}

static const char *status_str(mnem_status st) { return mnem_status_name(st); }

static bool step(replay *r, const cJSON *s) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(s, "call");
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(s, "args");
  const cJSON *want = cJSON_GetObjectItemCaseSensitive(s, "expect");
  if (!cJSON_IsString(c)) return fail("step without call");
  cJSON *empty = cJSON_CreateObject();
  outcome o = {0};
  bool ok = call(r, c->valuestring, args ? args : empty, &o);
  cJSON_Delete(empty);
  const char *ws = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(want, "status"))
                       ? cJSON_GetObjectItemCaseSensitive(want, "status")->valuestring
                       : "OK";
  if (ok && strcmp(status_str(o.status), ws) != 0)
    ok = fail("status %s (\"%s\"), want %s", status_str(o.status), o.message, ws);
  const cJSON *m;
  cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(want, "message_has")) {
    if (ok && (!cJSON_IsString(m) || !strstr(o.message, m->valuestring)))
      ok = fail("message \"%s\" lacks \"%s\"", o.message, cJSON_IsString(m) ? m->valuestring : "?");
  }
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(want, "count");
  if (ok && w) {
    cJSON *g = o.has_count ? cJSON_CreateNumber((double)o.count) : cJSON_CreateNull();
    ok = match(w, g, "count");
    cJSON_Delete(g);
  }
  if (ok && (w = cJSON_GetObjectItemCaseSensitive(want, "ids"))) ok = o.ids ? match(w, o.ids, "ids") : fail("no ids");
  if (ok && (w = cJSON_GetObjectItemCaseSensitive(want, "ids_len"))) {
    cJSON *g = o.has_ids_len ? cJSON_CreateNumber((double)o.ids_len) : cJSON_CreateNull();
    ok = match(w, g, "ids_len");
    cJSON_Delete(g);
  }
  if (ok && (w = cJSON_GetObjectItemCaseSensitive(want, "value")))
    ok = o.value ? match(w, o.value, "value") : fail("no value");
  const char *text = o.out ? o.out : "";
  if (ok && (w = cJSON_GetObjectItemCaseSensitive(want, "json"))) {
    cJSON *g = cJSON_Parse(text);
    ok = g ? match(w, g, "json") : fail("output is not JSON: %.200s", text);
    cJSON_Delete(g);
  }
  if (ok && (w = cJSON_GetObjectItemCaseSensitive(want, "lines"))) {
    cJSON *arr = cJSON_CreateArray();
    char *copy = strdup(text);
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); ok && line; line = strtok_r(NULL, "\n", &save)) {
      cJSON *g = cJSON_Parse(line);
      if (!g) ok = fail("output line is not JSON: %.200s", line);
      else cJSON_AddItemToArray(arr, g);
    }
    free(copy);
    ok = ok && match(w, arr, "lines");
    cJSON_Delete(arr);
  }
  cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(want, "raw_contains")) {
    if (ok && (!cJSON_IsString(m) || !strstr(text, m->valuestring)))
      ok = fail("output lacks the bytes %s", cJSON_IsString(m) ? m->valuestring : "?");
  }
  if (ok && cJSON_IsString(w = cJSON_GetObjectItemCaseSensitive(want, "capture"))) var_set(w->valuestring, text);
  cJSON_Delete(o.ids), cJSON_Delete(o.value), free(o.out);
  return ok;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* Cases about what only a store directory has (tests/conformance.rs says which and why):
   not replayed on PostgreSQL. */
static const char *const DIRECTORY_CASES[] = {"open_busy_and_reopen.json", "open_errors.json",
                                              "check_backup_compact.json", "view.json", "open_stats.json"};

static bool is_directory_case(const char *file) {
  for (size_t i = 0; i < sizeof DIRECTORY_CASES / sizeof DIRECTORY_CASES[0]; i++)
    if (strcmp(file, DIRECTORY_CASES[i]) == 0) return true;
  return false;
}

/* Runs one case file (on PostgreSQL when `pg`); returns its number of steps, or -1 (message
   printed). */
static int run_case(const char *dir, const char *file, bool pg) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  char *text = read_file(path);
  cJSON *doc = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!doc) {
    fprintf(stderr, "FAIL %s: cannot read or parse\n", file);
    return -1;
  }
  replay r = {0};
  if (pg) {
    size_t stem = strlen(file) - 5; /* without ".json" */
    snprintf(r.pg_schema, sizeof r.pg_schema, "c%ld_%.*s", (long)getpid(), (int)stem, file);
    for (char *c = r.pg_schema; *c; c++)
      if (!isalnum((unsigned char)*c)) *c = '_';
  }
  g_texts = cJSON_CreateArray();
  snprintf(r.tmp, sizeof r.tmp, "%s/mnem-conformance-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  int steps = 0, rc = 0;
  g_fail[0] = '\0';
  if (!mkdtemp(r.tmp)) {
    perror("mkdtemp");
    cJSON_Delete(doc);
    return -1;
  }
  const cJSON *open = cJSON_GetObjectItemCaseSensitive(doc, "open");
  outcome o = {0};
  if (!open) {
    cJSON *dflt = cJSON_Parse("{\"path\":\":memory:\",\"flags\":[\"create\"]}");
    if (!call(&r, "open", dflt, &o) || o.status != MNEM_STATUS_OK) fail("default open failed");
    cJSON_Delete(dflt);
  } else if (!cJSON_IsNull(open) && (!call(&r, "open", open, &o) || o.status != MNEM_STATUS_OK)) {
    fail("case open failed");
  }
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(doc, "steps")) {
    if (g_fail[0]) break;
    steps++;
    if (!step(&r, s)) {
      const cJSON *c = cJSON_GetObjectItemCaseSensitive(s, "call");
      fprintf(stderr, "FAIL %s: step %d (%s): %s\n", file, steps, cJSON_IsString(c) ? c->valuestring : "?",
              g_fail);
      rc = -1;
    }
  }
  if (g_fail[0] && rc == 0) {
    fprintf(stderr, "FAIL %s: %s\n", file, g_fail);
    rc = -1;
  }
  for (int i = 0; i < MAXSTORES; i++) mnem_free(r.stores[i].h);
  nftw(r.tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  vars_clear();
  cJSON_Delete(g_texts);
  cJSON_Delete(doc);
  return rc ? rc : steps;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  /* `postgresql`: replay on the server MNEM_TEST_PG_URI names, every case but the
     directory ones. */
  bool pg = argc == 3 && strcmp(argv[2], "postgresql") == 0;
  if (argc != 2 && !pg) {
    fprintf(stderr, "usage: %s CASES_DIR [postgresql]\n", argv[0]);
    return 2;
  }
  if (pg && !(getenv("MNEM_TEST_PG_URI") && getenv("MNEM_TEST_PG_URI")[0])) {
    fprintf(stderr, "%s: postgresql needs MNEM_TEST_PG_URI\n", argv[0]);
    return 2;
  }
  tzset();
  DIR *d = opendir(argv[1]);
  if (!d) {
    perror(argv[1]);
    return 2;
  }
  char *files[1024];
  int nfiles = 0;
  for (struct dirent *de; (de = readdir(d)) && nfiles < 1024;) {
    size_t n = strlen(de->d_name);
    if (n > 5 && strcmp(de->d_name + n - 5, ".json") == 0) files[nfiles++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(files, (size_t)nfiles, sizeof files[0], by_name);
  int failed = 0, steps = 0;
  for (int i = 0; i < nfiles; i++) {
    if (pg && is_directory_case(files[i])) {
      free(files[i]);
      continue;
    }
    int n = run_case(argv[1], files[i], pg);
    if (n < 0) failed++;
    else steps += n;
    free(files[i]);
  }
  printf("conformance: %d cases, %d steps, %d failed\n", nfiles, steps, failed);
  return failed || nfiles == 0 ? 1 : 0;
}
