// JVP rules of the spectral ops and the complex-number ops around them (docs/complex.md): every
// one is linear (over the reals), so the tangent is the op applied to the input's tangent with the
// node's own arguments (zeros for an input without one).
#include "core/autodiff/jvp.h"
#include "core/ops/common/linear_jvp.h"
#include "core/ops/registration.h"

namespace stax {

void register_spectral_jvps(JvpTable& t) {
  for (const char* op : {"_fft_r2c.default", "_fft_c2r.default", "_fft_c2c.default",
                         "view_as_real.default", "view_as_complex.default", "real.default",
                         "imag.default", "complex.default", "conj_physical.default",
                         "_conj.default", "_conj_physical.default"})
    t.add(op, linear_jvp::linear());
}

}  // namespace stax
