// The host memory of a MoE layer check (moe_memory.hpp): the case's own host vectors as inputs (a
// copy of the token inputs, to see whether the run changed them) and guarded host outputs.
#include "check/compare.hpp"
#include "check/guard.hpp"
#include "check/moe_memory.hpp"

namespace metrale::check {
namespace {

class HostMoeMemory final : public MoeMemory {
 public:
  explicit HostMoeMemory(const MoeHost& h)
      : h_(h),
        x_(h.x),
        logits_(h.logits),
        tables_(host_tables(h)),
        layer_(moe_layer(h, tables_, h.correction_bias.data())),
        out_(h.x.size() * sizeof(bf16_bits), "out"),
        ids_(static_cast<std::size_t>(h.tokens) * h.top_k * sizeof(std::int32_t), "topk_ids_out"),
        weights_(static_cast<std::size_t>(h.tokens) * h.top_k * sizeof(float), "topk_weights_out") {
  }

  Result run(const Exec& exec) override {
    MoeTokenData d{.count = h_.tokens,
                   .x = x_.data(),
                   .out = out_.as<bf16_bits>(),
                   .ids_out = ids_.as<std::int32_t>(),
                   .weights_out = weights_.as<float>()};
    set_routing_inputs(h_, d, logits_.data(), h_.ids.data(), h_.weights.data());
    return moe_forward(layer_, moe_tokens(d), exec);
  }

  void synchronize(const std::string&) override {}

  void poison() override {
    out_.fill(kPoisonBf16);
    ids_.fill(kPoisonId);
    weights_.poison_bytes(0xFF);
  }

  MoeOutputs outputs() const override {
    return {out_.values<bf16_bits>(), ids_.values<std::int32_t>(), weights_.values<float>()};
  }

  std::string damage() const override {
    for (const HostBuffer* b : {&out_, &ids_, &weights_}) {
      std::string broken = b->check_guards();
      if (!broken.empty()) return broken;
    }
    if (x_ != h_.x) return "hidden was modified";
    if (logits_ != h_.logits) return "router_logits was modified";
    return {};
  }

 private:
  const MoeHost& h_;
  std::vector<bf16_bits> x_;
  std::vector<float> logits_;
  MoeTables tables_;
  MoeLayer layer_;
  HostBuffer out_, ids_, weights_;
};

}  // namespace

std::unique_ptr<MoeMemory> host_memory(const MoeHost& h) {
  return std::make_unique<HostMoeMemory>(h);
}

}  // namespace metrale::check
