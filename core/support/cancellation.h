// CancellationToken: cooperative cancellation of a long operation (a compile), asked for from
// another thread. The owner calls cancel() from any thread; the operation polls the token at its
// checkpoints (between passes, before each kernel compile) and stops there by throwing
//   stax::Error(stage "cancelled", location: the checkpoint, "cancelled before <what>")
// so every resource is released by the ordinary unwinding. A checkpoint costs one atomic load.
// The Python package cancels a compile when Ctrl-C arrives (KeyboardInterrupt); nothing in core
// knows about signals.
#pragma once

#include <atomic>
#include <string>

namespace stax {

inline constexpr const char* kCancelledStage = "cancelled";

class CancellationToken {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  // For reuse by the next operation (the owner's business: not while one is running).
  void reset() { cancelled_.store(false, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }
  // Throws the "cancelled" stax::Error above when cancel() was called.
  void check(const std::string& where, const std::string& what) const;

 private:
  std::atomic<bool> cancelled_{false};
};

// The same on a token that may be null (no cancellation asked for).
inline void check_cancelled(const CancellationToken* token, const std::string& where,
                            const std::string& what) {
  if (token && token->cancelled()) token->check(where, what);
}

}  // namespace stax
