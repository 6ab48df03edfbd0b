// libFuzzer harness: the grouped entry points of the C ABI on the CPU backend — the seed-shaped
// gate_up, gate_up_fused and down, metrale_nvfp4_grouped_ex with a fuzzed metrale_groups, and the
// MoE layer (metrale_moe_forward, metrale_moe_workspace_size: fuzz_moe.hpp) — with any offsets,
// token ids, per-expert pointers (present, null) and scale_2 values (NaN, 0, negative). Buffers
// are exact: a and the outputs hold the rows the call states, each expert's weight N·K/2 bytes and
// its scales (either layout) exactly. The seed forms cannot carry a's row count (metrale.h:
// UNCHECKED SIZES), so for them ids are kept to rows a has, or to values the library must refuse
// (negative, INT32_MAX); _ex with a_rows > 0 gets any id.
#include <algorithm>
#include <climits>

#include "fuzz_moe.hpp"
#include "fuzz_support.hpp"

namespace {

using metrale::fuzz::Buffer;
using metrale::fuzz::check_contract;
using metrale::fuzz::draw_dim;
using metrale::fuzz::draw_experts;
using metrale::fuzz::Experts;
using metrale::fuzz::small;

constexpr std::int32_t kMaxRows = 24, kMaxN = 24, kMaxK = 64, kMaxExperts = 5;

std::vector<std::int32_t> draw_offsets(FuzzedDataProvider& in, std::int32_t experts) {
  std::vector<std::int32_t> offsets(experts + 1);
  std::int32_t at = in.ConsumeIntegralInRange<std::int32_t>(0, 2);
  for (auto& o : offsets) {
    // Mostly a valid, non-decreasing sequence; sometimes any value.
    o = in.ConsumeIntegralInRange<int>(0, 9) == 0 ? in.ConsumeIntegral<std::int32_t>() : at;
    at += in.ConsumeIntegralInRange<std::int32_t>(0, 6);
  }
  return offsets;
}

// Ids for rows [0, m_total): any int32 when the call checks them against a_rows, else one of
// the rows a has or a value the library refuses.
std::vector<std::int32_t> draw_ids(FuzzedDataProvider& in, std::size_t m_total, std::int32_t rows,
                                   bool checked) {
  std::vector<std::int32_t> ids(m_total);
  for (auto& id : ids) {
    const std::int32_t raw = in.ConsumeIntegral<std::int32_t>();
    if (checked || raw < 0 || raw == INT32_MAX) {
      id = raw;
    } else {
      id = rows > 0 ? raw % rows : -1;
    }
  }
  return ids;
}

void seed_call(FuzzedDataProvider& in, std::int32_t experts, std::int32_t n, std::int32_t k) {
  const std::vector<std::int32_t> offsets = draw_offsets(in, std::max(experts, 0));
  const std::int32_t m_total = offsets.back();
  const bool fits = small(m_total, kMaxRows) && small(n, kMaxN) && small(k, kMaxK);
  const std::size_t M = fits ? m_total : 0, N = fits ? n : 0, K = fits ? k : 0;
  const int op = in.ConsumeIntegralInRange<int>(0, 2);
  // Without ids the fused call reads group row i from row i: then a holds M_total rows.
  const bool gather = op == 1 && in.ConsumeIntegralInRange<int>(0, 5) != 0;
  const std::int32_t a_rows = gather ? in.ConsumeIntegralInRange<std::int32_t>(1, kMaxRows) : M;
  Buffer a(in, a_rows * K * 2, fits), c0(in, M * N * 2, fits), c1(in, M * N * 2, fits);
  const std::vector<std::int32_t> ids = draw_ids(in, M, a_rows, false);
  Experts gate = draw_experts(in, std::max(experts, 0), N, K, op != 0);
  Experts up = draw_experts(in, std::max(experts, 0), N, K, op != 0);
  const int32_t* ids_ptr = gather ? ids.data() : nullptr;
  switch (op) {
    case 0:
      check_contract("metrale_cpu_nvfp4_grouped_gate_up",
                     metrale_cpu_nvfp4_grouped_gate_up(
                         a.data(), gate.packed.data(), gate.scale.data(), gate.scale2.data(),
                         up.packed.data(), up.scale.data(), up.scale2.data(), c0.data(), c1.data(),
                         offsets.data(), experts, n, k, nullptr, 0, nullptr));
      break;
    case 1:
      check_contract("metrale_cpu_nvfp4_grouped_gate_up_fused",
                     metrale_cpu_nvfp4_grouped_gate_up_fused(
                         a.data(), fits ? ids_ptr : nullptr, gate.packed.data(), gate.scale.data(),
                         gate.scale2.data(), up.packed.data(), up.scale.data(), up.scale2.data(),
                         c0.data(), c1.data(), offsets.data(), experts, n, k, nullptr, 0,
                         nullptr));
      break;
    default:
      check_contract("metrale_cpu_nvfp4_grouped_down",
                     metrale_cpu_nvfp4_grouped_down(a.data(), gate.packed.data(),
                                                    gate.scale.data(), gate.scale2.data(),
                                                    c0.data(), offsets.data(), experts, n, k,
                                                    nullptr, 0, nullptr));
  }
}

void ex_call(FuzzedDataProvider& in, std::int32_t experts, std::int32_t n, std::int32_t k) {
  const std::vector<std::int32_t> offsets = draw_offsets(in, std::max(experts, 0));
  metrale_groups groups = METRALE_GROUPS_INIT;
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) groups.struct_size = in.ConsumeIntegral<std::uint8_t>();
  groups.offsets = offsets.data();
  groups.offsets_on_device = in.ConsumeIntegralInRange<int>(0, 15) == 0;
  groups.num_experts = experts;
  groups.m_total = draw_dim(in, kMaxRows, 1);
  groups.max_rows_per_expert = draw_dim(in, kMaxRows, 1);
  const bool fits = small(groups.m_total, kMaxRows) && small(n, kMaxN) && small(k, kMaxK);
  const std::size_t M = fits ? groups.m_total : 0, N = fits ? n : 0, K = fits ? k : 0;
  const std::int32_t a_rows = draw_dim(in, kMaxRows, 1);
  const std::size_t A = fits && small(a_rows, kMaxRows) ? a_rows : 0;
  Buffer a(in, A * K * 2, fits && small(a_rows, kMaxRows)), c0(in, M * N * 2, fits),
      c1(in, M * N * 2, fits);
  // a_rows = 0 is "unknown": then ids must be rows a really has (as for the seed form).
  const std::vector<std::int32_t> ids = draw_ids(in, M, static_cast<std::int32_t>(A), a_rows > 0);
  const bool sfb = in.ConsumeBool();
  const std::int32_t proj_count = in.ConsumeIntegralInRange<std::int32_t>(0, 3);
  Experts w0 = draw_experts(in, small(experts, kMaxExperts) ? experts : 0, N, K, sfb);
  Experts w1 = draw_experts(in, small(experts, kMaxExperts) ? experts : 0, N, K, sfb);
  const metrale_expert_weights proj[2] = {{w0.packed.data(), w0.scale.data(), w0.scale2.data()},
                                          {w1.packed.data(), w1.scale.data(), w1.scale2.data()}};
  void* out[2] = {c0.data(), c1.data()};
  metrale_exec exec = METRALE_EXEC_INIT;
  exec.backend = METRALE_BACKEND_CPU;
  const bool gather = fits && in.ConsumeBool();
  // The scales were sized for the layout drawn: a wrong layout value is one the library refuses.
  const metrale_scale_layout bad_layouts[] = {METRALE_SCALE_K16_BY_N, -1, 2, INT32_MIN};
  const metrale_scale_layout layout =
      sfb ? METRALE_SCALE_SFB : bad_layouts[in.ConsumeIntegralInRange<int>(0, 3)];
  check_contract("metrale_nvfp4_grouped_ex",
                 metrale_nvfp4_grouped_ex(a.data(), a_rows, gather ? ids.data() : nullptr, proj,
                                          out, proj_count, layout, &groups, n, k, &exec));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  std::int32_t experts = draw_dim(in, kMaxExperts, 1);
  const std::int32_t n = draw_dim(in, kMaxN, 1), k = draw_dim(in, kMaxK, in.ConsumeBool() ? 16 : 1);
  // Per-expert arrays are as long as num_experts says (their lengths do not cross the ABI): a
  // huge count is passed only where the library refuses it before reading them (< 0).
  if (!small(experts, kMaxExperts) && experts >= 0) experts = kMaxExperts;
  // The byte's low bit chose seed or _ex before the MoE layer was added: kept, so the corpus's
  // grouped inputs still decode as they did; a quarter of the inputs go to the layer.
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 1:
    case 3: seed_call(in, experts, n, k); break;
    case 0: ex_call(in, experts, n, k); break;
    default: metrale::fuzz::moe_call(in, experts, n, k);
  }
  return 0;
}
