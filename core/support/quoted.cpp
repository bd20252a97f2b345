#include "core/support/quoted.h"

namespace stax {

std::string excerpt(std::string_view text, size_t max_chars) {
  const bool cut = text.size() > max_chars;
  std::string out;
  for (char c : cut ? text.substr(0, max_chars) : text)
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (cut) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string quote_excerpt(std::string_view text, size_t max_chars) {
  const bool cut = text.size() > max_chars;
  std::string out = "'" + excerpt(text.substr(0, cut ? max_chars : text.size()), max_chars) + "'";
  if (cut) out.insert(out.size() - 1, "...");
  if (cut) out += " (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace stax
