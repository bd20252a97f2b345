// Whether a file or directory may be trusted before Stax reads code or data from it
// (docs/security.md): the checks OpenSSH's StrictModes and pip's cache make. A file another local
// user owns, or can write, is not trusted: that user could have put anything in it.
//
//   owner   the effective uid; root too where `allow_root` (system-wide installs: a plugin in
//           /usr/lib). Root is outside the threat model.
//   mode    not writable by group or others; a directory writable by them only with the sticky
//           bit where `allow_sticky` (/tmp: others can add names but not replace ours).
//   kind    a regular file or a directory, as asked for (a FIFO, socket or device is refused:
//           opening one could block or read endlessly).
#pragma once

#include <sys/stat.h>

#include <string>

namespace stax {

enum class TrustKind { RegularFile, Directory };

struct TrustRules {
  bool allow_root = false;    // root may own it
  bool allow_sticky = false;  // a group/other-writable directory with the sticky bit is fine
};

// Empty when `st` (from fstat / lstat of the object) may be trusted, else why not, e.g.
// "is owned by uid 65534, not by you (uid 1000)" or "is writable by group or others (mode 0777)".
std::string trust_problem(const struct stat& st, TrustKind kind, TrustRules rules = {});

// "mode 0755"
std::string mode_text(mode_t mode);

}  // namespace stax
