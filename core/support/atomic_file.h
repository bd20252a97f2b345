// Writing a file the way Stax writes every output (`--save`, dumps, `--dot`; docs/security.md,
// "Outputs"): the bytes go to a new temporary file in the target's directory, created with
// O_CREAT | O_EXCL | O_NOFOLLOW, and rename(2) puts it in place. So
//   * a symbolic link (or any other file) already at the path is replaced, never written
//     through: a planted `out0.npy -> ~/.bashrc` loses its link, ~/.bashrc is untouched;
//   * a reader sees the old file or the whole new one, never a part;
//   * a failure (disk full, no permission) leaves the old file as it was and no temporary.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace stax {

// Writes `bytes` to `path` as above; `mode` is the new file's mode before the umask. Throws
// stax::Error(stage, path, cause) on failure (the path is a directory, the directory does not
// exist or cannot be written, a write error).
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes,
                           const std::string& stage, mode_t mode = 0666);

// Writes all `size` bytes of `data` to the open descriptor `fd`, retrying short writes and
// EINTR; false on an error (errno set).
bool write_all(int fd, const char* data, size_t size);

}  // namespace stax
