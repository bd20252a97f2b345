// The check cpu_cpp makes before the JIT links an object file read from the kernel cache
// (docs/security.md, "The kernel cache"). The cache's MAC and ownership checks keep other users'
// entries out; this keeps a damaged or foreign object from crashing the process in the linker or
// at the first call: an object for another machine (an aarch64 object in an x86-64 process), or
// one whose entry symbol is data, not code.
#pragma once

#include <string>
#include <string_view>

namespace stax::cpu {

// Empty when `object` may be linked here, else why not. It must be:
//   * a 64-bit little-endian ELF relocatable object (ET_REL, EV_CURRENT) for this process's
//     machine (e_machine), with the System V or GNU/Linux OS ABI;
//   * well formed as far as the check reads: the section header table and every section with
//     contents inside the bytes, a symbol table whose string table is inside them;
//   * defining `entry` as a global function (STT_FUNC) in an allocated, executable section,
//     its extent inside that section.
std::string stored_object_problem(std::string_view object, std::string_view entry);

}  // namespace stax::cpu
