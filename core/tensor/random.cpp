#include "core/tensor/random.h"

#include <cmath>
#include <numbers>

namespace stax {

double normal_from_words(const PhiloxCounter& w) {
  double u1 = 1.0 - uniform64_from_words(w[0], w[1]);  // (0, 1]: log(u1) is finite
  double u2 = uniform64_from_words(w[2], w[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace stax
