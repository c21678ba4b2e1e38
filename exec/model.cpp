// The executed model: StageMlp per stage with activation slots, synthetic data, reference.
#include "exec/model.hpp"

#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/index.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>

namespace ppsim::exec {

namespace {

/// splitmix64, for data that is the same on every rank and every machine.
class Stream {
public:
  explicit Stream(std::uint64_t seed) : state_(seed) {}
  float uniform() {  // in [-1, 1)
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0);
  }

private:
  std::uint64_t state_;
};

std::vector<float> random_matrix(std::uint64_t seed, const ModelShape& s) {
  Stream rng(seed);
  std::vector<float> v(ix(s.tokens) * ix(s.dim));
  for (auto& x : v) x = rng.uniform();
  return v;
}

std::uint64_t data_seed(std::uint64_t seed, int mb) {
  const std::uint64_t golden = 0x9e3779b97f4a7c15;
  return seed * golden + std::uint64_t{2} * static_cast<std::uint64_t>(mb);
}

calibrate::MlpShape mlp_shape(const ModelShape& s) {
  return calibrate::MlpShape{s.dim, s.tokens, s.blocks, calibrate::DType::f32};
}

} // namespace

std::uint64_t stage_seed(std::uint64_t seed, int stage) {
  const std::uint64_t prime = 0x100000001b3;
  return seed * prime + static_cast<std::uint64_t>(stage) + std::uint64_t{1};
}

struct StageModel::Impl {
  ModelShape shape;
  calibrate::StageMlp mlp;
  std::vector<int> free;       // free slots
  std::map<int, int> slot_of;  // micro-batch -> slot

  Impl(const ModelShape& s, std::uint64_t seed, bool seed_bug, int slots)
      : shape(s), mlp(mlp_shape(s), seed, seed_bug, slots) {
    reset();
  }
  void reset() {
    slot_of.clear();
    free.clear();
    for (int k = mlp.slots() - 1; k >= 0; --k) free.push_back(k);
  }
  int at(int mb, std::string_view what) const {
    const auto it = slot_of.find(mb);
    if (it == slot_of.end())
      throw ScheduleError(fmt::format("{} of micro-batch {}: its F has not run on this stage",
                                      what, mb));
    return it->second;
  }
  void release(int mb) {
    free.push_back(slot_of.at(mb));
    slot_of.erase(mb);
  }
};

StageModel::StageModel(const ModelShape& shape, std::uint64_t seed, int slots, bool seed_bug)
    : impl_(std::make_unique<Impl>(shape, seed, seed_bug, std::max(1, slots))) {}

StageModel::~StageModel() = default;
StageModel::StageModel(StageModel&&) noexcept = default;
StageModel& StageModel::operator=(StageModel&&) noexcept = default;

void StageModel::forward(int mb, std::span<const float> x) {
  auto& m = *impl_;
  if (m.slot_of.count(mb) != 0)
    throw ScheduleError(fmt::format("F of micro-batch {} runs twice on one stage", mb));
  if (m.free.empty())
    throw ScheduleError(fmt::format("F of micro-batch {}: all {} activation slots are in use",
                                    mb, m.mlp.slots()));
  const int slot = m.free.back();
  m.free.pop_back();
  m.slot_of[mb] = slot;
  m.mlp.set_input(x, slot);
  m.mlp.forward(slot);
}

std::vector<float> StageModel::output(int mb) const {
  return impl_->mlp.output(impl_->at(mb, "output"));
}

void StageModel::backward_input(int mb, std::span<const float> g) {
  const int slot = impl_->at(mb, "B");
  impl_->mlp.set_output_grad(g, slot);
  impl_->mlp.backward_input(slot);
}

void StageModel::backward_weight(int mb) {
  impl_->mlp.backward_weight(impl_->at(mb, "W"));
  impl_->release(mb);
}

std::vector<float> StageModel::backward_fused(int mb, std::span<const float> g) {
  const int slot = impl_->at(mb, "BW");
  impl_->mlp.set_output_grad(g, slot);
  impl_->mlp.backward_fused(slot);
  std::vector<float> dx = impl_->mlp.input_grad(slot);
  impl_->release(mb);
  return dx;
}

std::vector<float> StageModel::input_grad(int mb) const {
  return impl_->mlp.input_grad(impl_->at(mb, "input gradient"));
}

void StageModel::zero_weight_grads() {
  impl_->mlp.zero_weight_grads();
  impl_->reset();
}

std::vector<float> StageModel::weight_grads() const {
  std::vector<float> all;
  for (int which = 0; which < 2; ++which)
    for (int b = 0; b < impl_->shape.blocks; ++b) {
      const auto g = which == 0 ? impl_->mlp.weight1_grad(b) : impl_->mlp.weight2_grad(b);
      all.insert(all.end(), g.begin(), g.end());
    }
  return all;
}

std::vector<float> microbatch_input(std::uint64_t seed, int mb, const ModelShape& s) {
  return random_matrix(data_seed(seed, mb), s);
}

std::vector<float> microbatch_label(std::uint64_t seed, int mb, const ModelShape& s) {
  return random_matrix(data_seed(seed, mb) + std::uint64_t{1}, s);
}

std::vector<float> mse_grad(std::span<const float> output, std::span<const float> label) {
  std::vector<float> g(output.size());
  const float scale = 2.0f / static_cast<float>(std::max<std::size_t>(1, output.size()));
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = scale * (output[i] - label[i]);
  return g;
}

std::vector<std::vector<float>> reference_gradients(const Schedule& schedule,
                                                    const ModelShape& shape, std::uint64_t seed) {
  std::vector<StageModel> stages;
  for (int s = 0; s < schedule.stages(); ++s) stages.emplace_back(shape, stage_seed(seed, s), 1);
  for (int mb = 0; mb < schedule.microbatches; ++mb) {
    const auto& route = schedule.routes[ix(schedule.microbatch_route[ix(mb)])];
    std::vector<float> x = microbatch_input(seed, mb, shape);
    for (int s : route) {
      stages[ix(s)].forward(mb, x);
      x = stages[ix(s)].output(mb);
    }
    std::vector<float> g = mse_grad(x, microbatch_label(seed, mb, shape));
    for (auto it = route.rbegin(); it != route.rend(); ++it) {
      g = stages[ix(*it)].backward_fused(mb, g);
    }
  }
  std::vector<std::vector<float>> grads;
  for (const auto& st : stages) grads.push_back(st.weight_grads());
  return grads;
}

double relative_difference(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  if (scale == 0) return diff == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return diff / scale;
}

} // namespace ppsim::exec
