// How a value from the user's input appears in a message (docs/security.md, "Smaller items").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stax {

// `text` in single quotes, control characters shown as '?', and cut to its first `max_chars`
// characters with its length when longer ("'aaaa...' (52428800 bytes)"), so a huge value (a
// 50 MB YAML scalar) never becomes a huge message.
std::string quote_excerpt(std::string_view text, size_t max_chars = 64);
// The same without the quotes (a number, a path in a list).
std::string excerpt(std::string_view text, size_t max_chars = 64);

}  // namespace stax
