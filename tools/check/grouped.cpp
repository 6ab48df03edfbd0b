// The data of a grouped check (grouped.hpp): inputs, the weight pool, the CPU oracle on a row
// sample, and the device copies.
#include "check/grouped.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "check/compare.hpp"
#include "check/inputs.hpp"

namespace metrale::check {
namespace {

std::int32_t pool_size(const Case& c, std::int32_t proj_count) {
  const std::int64_t per_expert = static_cast<std::int64_t>(c.n) * c.k * proj_count;
  const std::int64_t fit = std::max<std::int64_t>(1, kPoolElementBudget / per_expert);
  return static_cast<std::int32_t>(std::min<std::int64_t>(c.routing.experts, fit));
}

ExpertPointers host_pointers(const GroupedHost& h,
                             const std::array<std::vector<PackedWeight>, 2>& pool) {
  ExpertPointers ptrs;
  for (int p = 0; p < h.proj_count; ++p) {
    for (std::int32_t member : h.pool_of_expert) {
      const PackedWeight& w = pool[p][static_cast<std::size_t>(member)];
      ptrs.packed[p].push_back(address(w.packed.data()));
      ptrs.scale[p].push_back(address(w.scales(h.layout)));
    }
  }
  return ptrs;
}

}  // namespace

GroupedHost make_grouped_host(const Case& c) {
  if (c.n < 1 || c.k < 1 || c.k % 16 != 0)
    throw HarnessError(
        fmt::format("shape {}x{}: expected N >= 1 and K a positive multiple of 16", c.n, c.k));
  GroupedHost h;
  h.op = c.op;
  h.mode = c.mode;
  h.n = c.n;
  h.k = c.k;
  h.proj_count = c.op == Op::grouped_down ? 1 : 2;
  h.layout = c.op == Op::grouped_gate_up ? ScaleLayout::k16_by_n : ScaleLayout::sfb;
  h.gather = c.op == Op::grouped_gate_up_fused;
  h.routing = make_routing(c.routing, c.seed);
  h.a_rows = h.gather ? h.routing.tokens : h.routing.m_total;
  h.a = make_activations(c.mode, static_cast<std::size_t>(h.a_rows) * c.k, c.seed);
  const std::int32_t members = pool_size(c, h.proj_count);
  const bool sfb = h.layout == ScaleLayout::sfb;
  for (int p = 0; p < h.proj_count; ++p) {
    for (std::int32_t m = 0; m < members; ++m) {
      PackedWeight w = make_nvfp4_weight(c.mode, c.n, c.k, derive_seed(c.seed, 131 + p, m), sfb);
      h.pool[p].push_back(c.prepacked ? prepacked_weight(w) : std::move(w));
    }
  }
  for (std::int32_t e = 0; e < c.routing.experts; ++e) {
    const std::int32_t member = e % members;
    h.pool_of_expert.push_back(member);
    for (int p = 0; p < h.proj_count; ++p) {
      const float s =
          c.mode == Mode::exact
              ? exact_scale_2(e)
              : h.pool[p][member].scale_2 * (1.0f + static_cast<float>((37 * e) % 2048) / 1024);
      h.scale2[p].push_back(s);
    }
  }
  return h;
}

void reroute(GroupedHost& h, const RoutingPlan& routing) {
  if (routing.tokens != h.routing.tokens || routing.experts != h.routing.experts ||
      routing.top_k != h.routing.top_k)
    throw HarnessError("reroute: the new routing must keep tokens, experts and top_k");
  h.routing = routing;
}

GroupedNvfp4 grouped_args(const GroupedHost& h, const ExpertPointers& ptrs, const bf16_bits* a,
                          std::int32_t a_rows, const std::int32_t* token_ids,
                          const ExpertGroups& groups, std::array<bf16_bits*, 2> out) {
  GroupedNvfp4 args{};
  args.a = a;
  args.a_rows = a_rows;
  args.token_ids = token_ids;
  for (int p = 0; p < h.proj_count; ++p) {
    args.proj[p] = ExpertWeights{ptrs.packed[p].data(), ptrs.scale[p].data(), h.scale2[p].data()};
    args.out[p] = out[p];
  }
  args.proj_count = h.proj_count;
  args.scale_layout = h.layout;
  args.groups = groups;
  args.weight_layout = h.pool[0].front().weight_layout;  // every member's
  args.n = h.n;
  args.k = h.k;
  return args;
}

std::array<std::vector<bf16_bits>, 2> grouped_oracle(const GroupedHost& h,
                                                     const std::vector<std::int64_t>& rows,
                                                     bool absolute) {
  const std::size_t K = static_cast<std::size_t>(h.k), N = static_cast<std::size_t>(h.n);
  const std::int32_t R = static_cast<std::int32_t>(rows.size());
  // The sample's own grouping: rows ascend, so their experts do too.
  std::vector<std::int32_t> offsets(static_cast<std::size_t>(h.routing.experts) + 1, 0);
  for (std::int64_t row : rows) ++offsets[h.routing.expert_of_row[row] + 1];
  for (std::int32_t e = 0; e < h.routing.experts; ++e) offsets[e + 1] += offsets[e];
  std::vector<bf16_bits> a;
  std::vector<std::int32_t> token_ids;
  if (h.gather) {
    a = h.a;
    for (std::int64_t row : rows) token_ids.push_back(h.routing.sorted_token_ids[row]);
  } else {
    a.resize(rows.size() * K);
    for (std::size_t r = 0; r < rows.size(); ++r)
      std::copy_n(h.a.begin() + rows[r] * h.k, K, a.begin() + r * K);
  }
  std::array<std::vector<PackedWeight>, 2> abs_pool;
  if (absolute) {
    a = abs_bf16(a);
    for (int p = 0; p < h.proj_count; ++p)
      for (const PackedWeight& w : h.pool[p]) abs_pool[p].push_back(abs_weight(w));
  }
  const ExpertPointers ptrs = host_pointers(h, absolute ? abs_pool : h.pool);
  std::array<std::vector<bf16_bits>, 2> out;
  for (int p = 0; p < h.proj_count; ++p) out[p].assign(rows.size() * N, 0);
  const ExpertGroups groups{offsets.data(), false, h.routing.experts, R, 0};
  const GroupedNvfp4 args =
      grouped_args(h, ptrs, a.data(), h.gather ? h.a_rows : R,
                   h.gather ? token_ids.data() : nullptr, groups, {out[0].data(), out[1].data()});
  require_ok(nvfp4_grouped(args, kCpuOracle), fmt::format("CPU oracle {}", op_name(h.op)));
  return out;
}

#ifdef METRALE_HAS_CUDA

std::vector<const DeviceBuffer*> GroupedDevice::all() const {
  std::vector<const DeviceBuffer*> list = {&a, &token_ids, &offsets, &out[0], &out[1]};
  for (int p = 0; p < 2; ++p) {
    for (const auto& b : packed[p]) list.push_back(&b);
    for (const auto& b : scale[p]) list.push_back(&b);
  }
  return list;
}

GroupedDevice upload_grouped(const GroupedHost& h) {
  GroupedDevice d;
  d.a = upload_new(h.a, "a");
  d.token_ids = upload_new(h.routing.sorted_token_ids, "sorted_token_ids");
  d.offsets = upload_new(h.routing.offsets, "expert_offsets");
  for (int p = 0; p < h.proj_count; ++p) {
    for (std::size_t m = 0; m < h.pool[p].size(); ++m) {
      const PackedWeight& w = h.pool[p][m];
      d.packed[p].push_back(upload_new(w.packed, fmt::format("packed[{}][{}]", p, m)));
      d.scale[p].push_back(upload_new(h.layout == ScaleLayout::sfb ? w.sfb : w.scale,
                                      fmt::format("scale[{}][{}]", p, m)));
    }
    for (std::int32_t member : h.pool_of_expert) {
      d.ptrs.packed[p].push_back(address(d.packed[p][member].data()));
      d.ptrs.scale[p].push_back(address(d.scale[p][member].data()));
    }
    const std::size_t bytes = static_cast<std::size_t>(h.routing.m_total) * h.n * sizeof(bf16_bits);
    d.out[p] = DeviceBuffer(bytes, h.proj_count == 1 ? "c" : (p == 0 ? "c_gate" : "c_up"));
    d.out[p].poison_bf16(kPoisonBf16);
  }
  return d;
}

void upload_routing(const GroupedHost& h, GroupedDevice& d) {
  d.token_ids.upload(h.routing.sorted_token_ids);
  d.offsets.upload(h.routing.offsets);
}

GroupedNvfp4 device_args(const GroupedHost& h, GroupedDevice& d, bool offsets_on_device,
                         std::int32_t max_rows) {
  const ExpertGroups groups{
      offsets_on_device ? d.offsets.as<std::int32_t>() : h.routing.offsets.data(),
      offsets_on_device, h.routing.experts, h.routing.m_total, max_rows};
  return grouped_args(h, d.ptrs, d.a.as<bf16_bits>(), h.a_rows,
                      h.gather ? d.token_ids.as<std::int32_t>() : nullptr, groups,
                      {d.out[0].as<bf16_bits>(), d.out[1].as<bf16_bits>()});
}

#endif

}  // namespace metrale::check
