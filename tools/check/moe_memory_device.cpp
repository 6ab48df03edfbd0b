// The device memory of a MoE layer check (moe_memory.hpp): every input uploaded into guarded
// device buffers (the weight pool once per member, the expert tables pointing into it), guarded
// outputs. Compiled to nothing without CUDA.
#ifdef METRALE_HAS_CUDA

#include <fmt/format.h>

#include "check/buffers.hpp"
#include "check/compare.hpp"
#include "check/moe_memory.hpp"

namespace metrale::check {
namespace {

const char* const kProjection[3] = {"gate", "up", "down"};

class DeviceMoeMemory final : public MoeMemory {
 public:
  explicit DeviceMoeMemory(const MoeHost& h) : h_(h) {
    x_ = upload_new(h.x, "hidden");
    if (h.from_logits()) logits_ = upload_new(h.logits, "router_logits");
    ids_in_ = upload_new(h.ids, "topk_ids");
    weights_in_ = upload_new(h.weights, "topk_weights");
    correction_ = upload_new(h.correction_bias, "correction_bias");
    upload_weights();
    layer_ = moe_layer(h, tables_, correction_.as<float>());
    const std::size_t slots = static_cast<std::size_t>(h.tokens) * h.top_k;
    out_ = DeviceBuffer(h.x.size() * sizeof(bf16_bits), "out");
    ids_ = DeviceBuffer(slots * sizeof(std::int32_t), "topk_ids_out");
    weights_ = DeviceBuffer(slots * sizeof(float), "topk_weights_out");
  }

  Result run(const Exec& exec) override {
    MoeTokenData d{.count = h_.tokens,
                   .x = x_.as<bf16_bits>(),
                   .out = out_.as<bf16_bits>(),
                   .ids_out = ids_.as<std::int32_t>(),
                   .weights_out = weights_.as<float>()};
    set_routing_inputs(h_, d, logits_.as<float>(), ids_in_.as<std::int32_t>(),
                       weights_in_.as<float>());
    return moe_forward(layer_, moe_tokens(d), exec);
  }

  void synchronize(const std::string& what) override { device_synchronize(what); }

  void poison() override {
    out_.poison_bf16(kPoisonBf16);
    ids_.poison_bytes(0xFF);  // -1
    weights_.poison_bytes(0xFF);
  }

  MoeOutputs outputs() const override {
    return {out_.download<bf16_bits>(), ids_.download<std::int32_t>(), weights_.download<float>()};
  }

  std::string damage() const override {
    std::vector<const DeviceBuffer*> all = {&x_,          &logits_, &ids_in_, &weights_in_,
                                            &correction_, &out_,    &ids_,    &weights_};
    for (int p = 0; p < 3; ++p) {
      all.push_back(&bias_[p]);
      for (const auto& b : packed_[p]) all.push_back(&b);
      for (const auto& b : scale_[p]) all.push_back(&b);
    }
    std::string broken = check_all_guards(all);
    if (broken.empty() && x_.download<bf16_bits>() != h_.x) broken = "hidden was modified";
    if (broken.empty() && h_.from_logits() && logits_.download<float>() != h_.logits)
      broken = "router_logits was modified";
    return broken;
  }

 private:
  // The pool members, each once, and the per-expert tables of device addresses into them.
  void upload_weights() {
    for (int p = 0; p < 3; ++p) {
      for (std::size_t m = 0; m < h_.pool[p].size(); ++m) {
        const PackedWeight& w = h_.pool[p][m];
        packed_[p].push_back(upload_new(w.packed, fmt::format("{}.packed[{}]", kProjection[p], m)));
        scale_[p].push_back(upload_new(w.sfb, fmt::format("{}.scale[{}]", kProjection[p], m)));
      }
      bias_[p] = upload_new(h_.bias[p], fmt::format("{}_bias", kProjection[p]));
      for (std::int32_t e = 0; e < h_.experts; ++e) {
        const std::size_t m = static_cast<std::size_t>(h_.pool_of_expert[e]);
        tables_.packed[p].push_back(address(packed_[p][m].data()));
        tables_.scale[p].push_back(address(scale_[p][m].data()));
        if (!h_.bias[p].empty())
          tables_.bias[p].push_back(
              address(bias_[p].as<bf16_bits>() + static_cast<std::size_t>(e) * h_.n_of(p)));
      }
    }
  }

  const MoeHost& h_;
  DeviceBuffer x_, logits_, ids_in_, weights_in_, correction_;
  std::array<std::vector<DeviceBuffer>, 3> packed_, scale_;
  std::array<DeviceBuffer, 3> bias_;
  MoeTables tables_;
  MoeLayer layer_;
  DeviceBuffer out_, ids_, weights_;
};

}  // namespace

std::unique_ptr<MoeMemory> device_memory(const MoeHost& h) {
  return std::make_unique<DeviceMoeMemory>(h);
}

}  // namespace metrale::check

#endif  // METRALE_HAS_CUDA
