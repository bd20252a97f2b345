#include "core/support/cancellation.h"

#include "core/support/error.h"

namespace stax {

void CancellationToken::check(const std::string& where, const std::string& what) const {
  if (cancelled()) throw Error(kCancelledStage, where, "cancelled before " + what);
}

}  // namespace stax
