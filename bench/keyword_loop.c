/* One keyword query through the C ABI, many times: the median time of mnem_keyword_search on
 * the namespace bench/user of a store (a path, or a postgresql:// URI), as a C caller sees it
 * (no interpreter between). Used beside `perf stat` and bench/server_cpu.sh to split a
 * search's cost between caller and server, and to compare two builds of the library in turns.
 *
 *   . scripts/env && cargo build --release --lib
 *   cc -O2 -Iinclude bench/keyword_loop.c -o /tmp/keyword_loop -L"$CARGO_TARGET_DIR/release" -lmnem
 *   LD_LIBRARY_PATH=<directory of the build's libmnem.so.1> /tmp/keyword_loop STORE RUNS 'TEXT'
 *
 * Prints `TEXT: median M ms (N bytes)`, N the answer's size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mnem.h"

static mnem_str str(const char *s) {
  mnem_str r = {(const uint8_t *)s, strlen(s)};
  return r;
}

static int ascending(const void *a, const void *b) {
  double d = *(const double *)a - *(const double *)b;
  return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
  if (argc != 4 || atoi(argv[2]) < 1) {
    fprintf(stderr, "usage: %s STORE RUNS TEXT\n", argv[0]);
    return 2;
  }
  mnem_store *store;
  mnem_error e;
  if (mnem_open(str(argv[1]), 0, str("{}"), &store, &e) != MNEM_STATUS_OK) {
    fprintf(stderr, "open: %s\n", e.message);
    return 1;
  }
  int runs = atoi(argv[2]);
  /* The text goes into JSON as given: keep it free of quotes and backslashes. */
  char query[1024];
  snprintf(query, sizeof query, "{\"text\":\"%s\",\"limit\":10}", argv[3]);
  static uint8_t out[1 << 20];
  size_t len = 0;
  double *ms = malloc(sizeof(double) * (size_t)runs);
  for (int i = 0; i < runs; i++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (mnem_keyword_search(store, str("bench"), str("user"), str(query), out, sizeof out, &len, &e) !=
        MNEM_STATUS_OK) {
      fprintf(stderr, "search: %s\n", e.message);
      return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    ms[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
  }
  qsort(ms, (size_t)runs, sizeof(double), ascending);
  printf("%s: median %.3f ms (%zu bytes)\n", argv[3], ms[runs / 2], len);
  free(ms);
  mnem_free(store);
  return 0;
}
