#include "plugins/cpu_cpp/address_space.h"

#include <sys/mman.h>

#include "stax/sdk/types.hpp"

namespace stax::cpu {

void require_address_space(size_t bytes, const std::string& what) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw sdk::PluginError(STAX_ERROR_RUNTIME,
                           "cpu_cpp: out of memory: " + what + " needs about " +
                               std::to_string(bytes >> 20) +
                               " MB of free address space (is `ulimit -v` too small?)");
  munmap(p, bytes);
}

}  // namespace stax::cpu
