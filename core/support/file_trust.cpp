#include "core/support/file_trust.h"

#include <unistd.h>

#include <cstdio>

namespace stax {

std::string mode_text(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "mode %04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string trust_problem(const struct stat& st, TrustKind kind, TrustRules rules) {
  const bool want_dir = kind == TrustKind::Directory;
  if (want_dir && !S_ISDIR(st.st_mode)) return "is not a directory";
  if (!want_dir && !S_ISREG(st.st_mode))
    return S_ISDIR(st.st_mode)    ? "is a directory, not a regular file"
           : S_ISLNK(st.st_mode)  ? "is a symbolic link, not a regular file"
           : S_ISFIFO(st.st_mode) ? "is a FIFO, not a regular file"
                                  : "is not a regular file";
  const uid_t me = ::geteuid();
  if (st.st_uid != me && !(rules.allow_root && st.st_uid == 0))
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
           std::to_string(me) + ")" + (rules.allow_root ? " or root" : "");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
      !(want_dir && rules.allow_sticky && (st.st_mode & S_ISVTX) != 0))
    return "is writable by group or others (" + mode_text(st.st_mode) + ")";
  return "";
}

}  // namespace stax
