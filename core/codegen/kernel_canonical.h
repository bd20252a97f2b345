// The canonical bytes of a kernel description for the kernel cache (core/cache): every field of
// StaxKernelDesc that decides the compiled code, with the names normalised away (the kernel's
// name, buffer names and body names are left out: buffers are referenced by position, and a
// plugin's deserialize takes the current description for names). Two descriptions with equal
// canonical bytes compile to kernels that compute the same values.
#pragma once

#include <string>

#include "stax/plugin_api.h"

namespace stax {

std::string canonical_kernel_bytes(const StaxKernelDesc& kernel);

}  // namespace stax
