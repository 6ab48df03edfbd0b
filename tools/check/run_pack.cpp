// Check cases of the packing operations, all compared byte for byte with the CPU oracle:
//   pack       bf16 [N, K] -> packed [N, K/2] + scales [K/16, N] (+ scale_2): grid values (exact
//              mode) or the quantizer stress tensor (realistic mode: zero, large, small and
//              subnormal blocks, exact ties, signed zeros, no NaN or Inf (refused); magnitudes
//              up to 1e±30 in the seeds' scale_2 = 1 form, where they cannot take over the
//              tensor's amax)
//   sfb        random e4m3 scale bytes -> SFB, the whole padded output (padding must be zero)
//   transpose  random bytes, [N, K/2] -> [K/2, N] or back
// Outputs are poisoned with 0xFF bytes and framed by guard bands.
#include <cstring>

#include <fmt/format.h>

#include "check/inputs.hpp"
#include "check/runners.hpp"
#include "check/weights.hpp"
#include "format/layouts.hpp"

#ifdef METRALE_HAS_CUDA
#include "check/buffers.hpp"
#endif

namespace metrale::check::detail {
namespace {

// The operation's input bytes and the oracle's output bytes (one or more named outputs).
struct PackProblem {
  std::vector<std::uint8_t> input;  // bf16 weight bytes, scale bytes or packed bytes
  std::vector<std::vector<std::uint8_t>> want;
  std::vector<std::string> names;
};

std::vector<std::uint8_t> as_bytes(const std::vector<bf16_bits>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(bf16_bits));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Runs the operation on `backend` over `in` -> outs (host or device pointers alike).
Result call(const Case& c, Backend backend, void* stream, const std::uint8_t* in,
            const std::vector<std::uint8_t*>& outs) {
  const Exec exec{backend, nullptr, 0, stream};
  switch (c.op) {
    case Op::pack: {
      PackNvfp4 args{reinterpret_cast<const bf16_bits*>(in),
                     outs[0],
                     outs[1],
                     c.pack_scale_2 ? reinterpret_cast<float*>(outs[2]) : nullptr,
                     c.n,
                     c.k};
      return pack_bf16_weight_to_nvfp4_t(args, exec);
    }
    case Op::sfb:
      return pack_weight_sfb(SwizzleScales{in, outs[0], c.n, c.k, c.sfb_src_n_major}, exec);
    default:
      return transpose_nvfp4_packed(TransposePacked{in, outs[0], c.n, c.k, c.transpose_dir}, exec);
  }
}

PackProblem make_problem(const Case& c) {
  const std::size_t N = static_cast<std::size_t>(c.n), K = static_cast<std::size_t>(c.k);
  PackProblem p;
  switch (c.op) {
    case Op::pack: {
      const std::uint64_t s = derive_seed(c.seed, 121);
      p.input = as_bytes(c.mode == Mode::exact ? grid_weight_bf16(c.n, c.k, s)
                                               : pack_stress_bf16(c.n, c.k, s, !c.pack_scale_2));
      p.want = {std::vector<std::uint8_t>(N * K / 2), std::vector<std::uint8_t>(N * K / 16)};
      p.names = {"packed_t", "scale_t"};
      if (c.pack_scale_2) {
        p.want.emplace_back(sizeof(float));
        p.names.emplace_back("scale_2_out");
      }
      break;
    }
    case Op::sfb:
      p.input = random_scale_bytes(N * K / 16, derive_seed(c.seed, 122));
      p.want = {std::vector<std::uint8_t>(format::sfb_bytes(N, K))};
      p.names = {"scale_out"};
      break;
    default:
      p.input = random_bytes(N * K / 2, derive_seed(c.seed, 123));
      p.want = {std::vector<std::uint8_t>(N * K / 2)};
      p.names = {c.transpose_dir == TransposeDir::k_to_n ? "dst_packed" : "dst_packed_t"};
      break;
  }
  std::vector<std::uint8_t*> outs;
  for (auto& w : p.want) outs.push_back(w.data());
  require_ok(call(c, Backend::cpu, nullptr, p.input.data(), outs),
             fmt::format("CPU oracle {}", op_name(c.op)));
  return p;
}

#ifdef METRALE_HAS_CUDA
void run_on_device(const Case& c, const PackProblem& p, Report& report) {
  DeviceBuffer in = upload_new(p.input, "input");
  std::vector<DeviceBuffer> outs;
  std::vector<std::uint8_t*> ptrs;
  std::vector<const DeviceBuffer*> all = {&in};
  for (std::size_t i = 0; i < p.want.size(); ++i) outs.emplace_back(p.want[i].size(), p.names[i]);
  for (auto& o : outs) {
    ptrs.push_back(o.as<std::uint8_t>());
    all.push_back(&o);
  }
  auto run_once = [&](std::vector<std::vector<std::uint8_t>>& got, std::uint8_t poison) {
    for (auto& o : outs) o.poison_bytes(poison);
    if (refused(c, call(c, c.backend, nullptr, in.as<std::uint8_t>(), ptrs), report)) return false;
    device_synchronize(fmt::format("{} on {}", op_name(c.op), backend_name(c.backend)));
    got.clear();
    for (auto& o : outs) got.push_back(o.download<std::uint8_t>());
    return true;
  };
  std::vector<std::vector<std::uint8_t>> got, second;
  const Stopwatch watch;
  if (!run_once(got, kPoisonByte)) return;
  report.backend_ms = watch.ms();
  std::string again;
  std::int64_t unwritten = 0;
  if (c.check_determinism) {
    // The second run on the other poison: a byte the operation never writes keeps 0xFF in the
    // first run and 0x00 in the second, so it shows even where 0xFF is the expected byte.
    constexpr std::uint8_t kSecondPoison = static_cast<std::uint8_t>(~kPoisonByte);
    if (!run_once(second, kSecondPoison)) return;
    for (std::size_t i = 0; i < got.size(); ++i) {
      for (std::size_t j = 0; j < got[i].size(); ++j)
        unwritten += got[i][j] == kPoisonByte && second[i][j] == kSecondPoison;
      const Comparison cmp = compare_bytes(second[i], got[i], p.names[i]);
      if (cmp.mismatches > 0 && again.empty())
        again = "second run differs from the first: " + cmp.first_detail;
    }
  }
  std::string guards = check_all_guards(all);
  if (guards.empty() && in.download<std::uint8_t>() != p.input) guards = "the input was modified";
  Comparison cmp;
  for (std::size_t i = 0; i < got.size(); ++i)
    cmp.merge(compare_bytes(got[i], p.want[i], p.names[i]));
  conclude(c, report, cmp, unwritten, guards, again);
}
#endif

}  // namespace

Report run_pack_case(const Case& c) {
  if (c.n < 1 || c.k < 1 || c.k % 16 != 0)
    throw HarnessError(
        fmt::format("shape {}x{}: expected N >= 1 and K a positive multiple of 16", c.n, c.k));
  const Stopwatch watch;
  const PackProblem p = make_problem(c);
  const double oracle_ms = watch.ms();
  const std::string missing = device_missing(c);
  if (!missing.empty()) return skipped_after_oracle(c, missing, oracle_ms);
  Report report;
  report.oracle_ms = oracle_ms;
  report.rows_compared = report.rows_total = c.n;
#ifdef METRALE_HAS_CUDA
  run_on_device(c, p, report);
#endif
  return report;
}

}  // namespace metrale::check::detail
