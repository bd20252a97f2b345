// The user's directories, found the same way with or without a login environment
// (docs/security.md, "HOME unset"):
//   home   $HOME when it is set to an absolute path, else the passwd database's entry of the
//          real uid (getpwuid_r), so `~` never becomes a literal directory named "~";
//   cache  $XDG_CACHE_HOME when it is set to an absolute path (the XDG Base Directory spec
//          ignores relative ones), else <home>/.cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace stax {

// The home directory, or nothing when HOME is unset (or relative) and the passwd database has no
// entry (or an empty directory) for this uid.
std::optional<std::filesystem::path> home_directory();

// The user's cache directory ($XDG_CACHE_HOME, else <home>/.cache), or nothing without a home.
std::optional<std::filesystem::path> user_cache_directory();

// `~` and `~/...` with the home directory; any other path unchanged. Throws stax::Error(stage,
// location, ...) when the path starts with `~` and there is no home directory.
std::filesystem::path expand_home(const std::string& path, const std::string& stage,
                                  const std::string& location);

}  // namespace stax
