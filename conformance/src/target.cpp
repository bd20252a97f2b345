#include "target.h"

#include <limits>

#include "core/interpreter/interpreter.h"
#include "core/support/error.h"
#include "stax/conformance/compare.h"

namespace stax::conformance {

Target::Target(const SuiteOptions& options) : options_(options) {
  config_ = Config::load(options.config);
  if (config_.devices.empty())
    throw Error("config", options.config.string(), "the config names no device to test");
  // Without --device: the config's default_device (configs/cuda*.yaml route graphs to cuda), else
  // its first device.
  device_ = !options.device.empty()           ? options.device
            : !config_.default_device.empty() ? config_.default_device
                                              : config_.devices.begin()->first;
  if (!config_.device(device_))
    throw Error("config", options.config.string(), "the config has no device '" + device_ + "'");
  // Only the tested device: the suite must not load plugins of other devices.
  DeviceConfig tested = *config_.device(device_);
  config_.devices.clear();
  config_.devices[device_] = std::move(tested);
  if (config_.default_device != device_) config_.default_device.clear();  // names a removed device
}

Compiler& Target::compiler() {
  if (!compiler_) compiler_ = std::make_unique<Compiler>(config_);
  return *compiler_;
}

std::unique_ptr<Compiler> Target::compiler_with(const std::function<void(DeviceConfig&)>& edit,
                                                CompileOptions options) const {
  Config c = config_;
  edit(c.devices[device_]);
  return std::make_unique<Compiler>(c, options);
}

Node* Target::input(Graph& g, const std::string& name, Shape sizes, DType dtype) const {
  return g.placeholder(name, TensorMeta::contiguous(std::move(sizes), dtype, device_));
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> Target::run_both(
    const Graph& g, const std::vector<Tensor>& in) {
  std::vector<Tensor> got = compiler().compile(g).run(in);
  return {got, interpret(g, in)};
}

void Target::expect_bitwise(const Graph& g, const std::vector<Tensor>& in) {
  auto [got, want] = run_both(g, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << "output " << i;
  if (!unfused_) {
    CompileOptions o;
    o.fuse = false;
    unfused_ = std::make_unique<Compiler>(config_, o);
  }
  std::vector<Tensor> other = unfused_->compile(g).run(in);
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(bitwise_equal(other[i], want[i])) << "fusion off, output " << i;
}

std::vector<Tensor> special_inputs(const Graph& g, uint64_t seed) {
  std::vector<Tensor> in = random_inputs(g, seed);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             0.0, -0.0, 0.5, -2.5, 1e4, -1e-6, 3.0};
  for (Tensor& t : in) {
    if (!is_floating(t.dtype())) continue;
    for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 10); ++i) t.set_double(i, specials[i]);
  }
  return in;
}

}  // namespace stax::conformance
