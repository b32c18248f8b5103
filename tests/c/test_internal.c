/* MNEM_STATUS_INTERNAL through the C ABI: a panic inside mnem returns INTERNAL with a message,
 * poisons only its handle (every later call on it returns INTERNAL with `*out_len` and
 * counters 0), and mnem_free still frees it. A panic in mnem_open returns INTERNAL with no
 * handle. Needs a library built with the cargo feature `fault-injection`, which exports the
 * mnem_debug_* hooks; scripts/test-c builds one and runs this under ASan+UBSan and valgrind. */
#define MNEM_FAULT_INJECTION 1
#include "mnem.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);       \
      failures++;                                                                    \
    }                                                                                \
  } while (0)

static mnem_str str(const char *s) {
  mnem_str r = {(const uint8_t *)s, strlen(s)};
  return r;
}

static const char EVENT[] =
    "{\"id\":\"e1\",\"author\":\"user\",\"content\":{\"role\":\"user\",\"parts\":[{\"text\":\"hello\"}]}}";
static const char EPISODE[] = "{\"context\":\"hello\"}";

typedef mnem_status (*read_fn)(const mnem_store *, mnem_str, mnem_str, mnem_str, uint8_t *, size_t, size_t *,
                               mnem_error *);

/* A fresh error struct, so that each check sees what this call wrote. */
static void reset(mnem_error *err) {
  memset(err, 0x5A, sizeof *err);
}

static int is_internal(mnem_status st, const mnem_error *err, const char *needle) {
  return st == MNEM_STATUS_INTERNAL && err->code == MNEM_STATUS_INTERNAL && err->detail == 0 &&
         memchr(err->message, 0, sizeof err->message) != NULL && strstr(err->message, needle) != NULL;
}

/* Every call on a poisoned handle returns INTERNAL and leaves its outputs at 0. */
static void check_poisoned(mnem_store *db) {
  static const struct {
    const char *name;
    read_fn fn;
    const char *query;
  } reads[] = {
      {"mnem_search", mnem_search, "hello"},
      {"mnem_keyword_search", mnem_keyword_search, "{\"text\":\"hello\"}"},
      {"mnem_lexical_page", mnem_lexical_page, "{\"text\":\"hello\"}"},
      {"mnem_substring_search", mnem_substring_search, "{\"text\":\"hello\"}"},
      {"mnem_hybrid_search", mnem_hybrid_search, "{\"text\":\"hello\"}"},
  };
  const char *poisoned = "poisoned";
  mnem_error err;
  uint8_t buf[4096];
  for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
    for (size_t cap = 0; cap <= sizeof buf; cap += sizeof buf) {
      size_t len = 77;
      memset(buf, 0xAA, sizeof buf);
      reset(&err);
      mnem_status st = reads[i].fn(db, str("app"), str("user"), str(reads[i].query), buf, cap, &len, &err);
      if (!is_internal(st, &err, poisoned) || len != 0 || buf[0] != 0xAA) {
        fprintf(stderr, "%s (cap %zu) on a poisoned handle: %s, out_len %zu, \"%s\"\n", reads[i].name, cap,
                mnem_status_name(st), len, err.message);
        failures++;
      }
    }
  }
  uint64_t n = 77;
  reset(&err);
  CHECK(is_internal(mnem_add_session(db, str("app"), str("user"), str("s2"), str(EVENT), &n, &err), &err, poisoned));
  CHECK(n == 0);
  n = 77;
  reset(&err);
  CHECK(is_internal(mnem_add_events(db, str("app"), str("user"), str("s1"), str(EVENT), str(""), &n, &err), &err,
                    poisoned));
  CHECK(n == 0);
  n = 77;
  reset(&err);
  CHECK(is_internal(mnem_delete_memory(db, str("app"), str("user"), str("e1"), &n, &err), &err, poisoned));
  CHECK(n == 0);
  n = 77;
  reset(&err);
  CHECK(is_internal(mnem_delete_episodes(db, str("app"), str("user"), str("\"0190f0a0-0000-7000-8000-000000000001\""),
                                         &n, &err),
                    &err, poisoned));
  CHECK(n == 0);
  uint8_t ids[16];
  memset(ids, 0xAA, sizeof ids);
  reset(&err);
  CHECK(is_internal(mnem_put_episodes(db, str("app"), str("user"), str(EPISODE), ids, sizeof ids, &err), &err,
                    poisoned));
  CHECK(ids[0] == 0xAA && ids[15] == 0xAA);
  size_t ids_len = 77;
  reset(&err);
  CHECK(is_internal(mnem_put_episodes_v2(db, str("app"), str("user"), str(EPISODE), ids, sizeof ids, &ids_len, &err),
                    &err, poisoned));
  CHECK(ids_len == 0 && ids[0] == 0xAA && ids[15] == 0xAA);
  reset(&err);
  CHECK(is_internal(mnem_flush(db, &err), &err, poisoned));
  reset(&err);
  CHECK(is_internal(mnem_debug_panic(db, &err), &err, poisoned));
  /* Without an error struct the status alone still says INTERNAL. */
  CHECK(mnem_flush(db, NULL) == MNEM_STATUS_INTERNAL);
}

int main(void) {
  mnem_str none = {NULL, 0};
  mnem_error err;
  mnem_store *db = NULL, *other = NULL;
  CHECK(mnem_open(str(":memory:"), MNEM_OPEN_CREATE, none, &db, &err) == MNEM_STATUS_OK && db != NULL);
  CHECK(mnem_open(str(":memory:"), MNEM_OPEN_CREATE, none, &other, &err) == MNEM_STATUS_OK && other != NULL);
  if (db == NULL || other == NULL) return 1;
  uint64_t n = 0;
  CHECK(mnem_add_session(db, str("app"), str("user"), str("s1"), str(EVENT), &n, &err) == MNEM_STATUS_OK && n == 1);

  /* A NULL store is an argument error, checked before the hook panics. */
  reset(&err);
  CHECK(mnem_debug_panic(NULL, &err) == MNEM_STATUS_INVALID_ARGUMENT && err.code == MNEM_STATUS_INVALID_ARGUMENT);

  /* The panic becomes INTERNAL with the panic's message. */
  reset(&err);
  mnem_status st = mnem_debug_panic(db, &err);
  CHECK(is_internal(st, &err, "internal error (panic): injected by mnem_debug_panic"));
  CHECK(strcmp(mnem_status_name(st), "INTERNAL") == 0);
  check_poisoned(db);

  /* Only that handle is poisoned. */
  n = 0;
  CHECK(mnem_add_session(other, str("app"), str("user"), str("s1"), str(EVENT), &n, &err) == MNEM_STATUS_OK && n == 1);
  size_t len = 0;
  uint8_t buf[4096];
  CHECK(mnem_search(other, str("app"), str("user"), str("hello"), buf, sizeof buf - 1, &len, &err) == MNEM_STATUS_OK);
  buf[len < sizeof buf ? len : 0] = 0;
  CHECK(strstr((const char *)buf, "hello") != NULL);
  mnem_free(db);
  mnem_free(other);

  /* A panic inside mnem_open: INTERNAL, and no handle. */
  mnem_debug_panic_next_open();
  mnem_store *opened = (mnem_store *)&err; /* not NULL: mnem_open must clear it */
  reset(&err);
  st = mnem_open(str(":memory:"), MNEM_OPEN_CREATE, none, &opened, &err);
  CHECK(is_internal(st, &err, "injected by mnem_debug_panic_next_open"));
  CHECK(opened == NULL);
  /* The hook fires once: the next open works. */
  CHECK(mnem_open(str(":memory:"), MNEM_OPEN_CREATE, none, &opened, &err) == MNEM_STATUS_OK && opened != NULL);
  mnem_free(opened);

  if (failures) {
    fprintf(stderr, "test_internal: %d check(s) FAILED\n", failures);
    return 1;
  }
  printf("test_internal: all passed\n");
  return 0;
}
