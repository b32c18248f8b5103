// Proves include/mnem.h compiles as C++17 (-Wall -Wextra -Werror) and links with C linkage.
#include "mnem.h"

#include <cstdio>
#include <cstring>

static_assert(sizeof(mnem_error) == 8 + MNEM_ERROR_MESSAGE_CAP, "mnem_error layout");

int main() {
  const char *path = ":memory:";
  mnem_str p{reinterpret_cast<const uint8_t *>(path), std::strlen(path)};
  mnem_str none{nullptr, 0};
  mnem_store *store = nullptr;
  mnem_error err{};
  mnem_status st = mnem_open(p, MNEM_OPEN_CREATE, none, &store, &err);
  if (st != MNEM_STATUS_OK || mnem_abi_version() != MNEM_ABI_VERSION) {
    std::fprintf(stderr, "C++: %s %s\n", mnem_status_name(st), err.message);
    return 1;
  }
  mnem_free(store);
  std::printf("C++ header check OK (mnem %s)\n", mnem_version());
  return 0;
}
