// Validation of a plugin file before dlopen: the dynamic loader maps the segments a file's
// program headers describe and faults (SIGBUS) when one lies past the end of a truncated file,
// so the headers are checked against the file's real size first.
#pragma once

#include <filesystem>
#include <string>

namespace stax {

// Empty when `path` is a complete 64-bit little-endian ELF shared object for this machine whose
// program and section header tables and every segment lie inside the file; otherwise why not
// (e.g. "segment 2 ends at byte 40960, past the end of the file (20480 bytes)").
std::string elf_shared_object_problem(const std::filesystem::path& path);

}  // namespace stax
