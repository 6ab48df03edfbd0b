// metrale._metrale: the nanobind extension under the Python package. Each function takes DLPack
// arrays (already allocated: the Python layer makes outputs in the caller's framework), checks
// their dtype, shape, contiguity and device (arrays.hpp), then calls the C++ API with the GIL
// released. The backend follows the arrays' device unless `backend` (a metrale::Backend value,
// -1 for "from the device") says otherwise; `stream` is a cudaStream_t as an integer.
#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "format/layouts.hpp"
#include "metrale/metrale.hpp"

namespace metrale::python {

namespace {

constexpr std::int64_t kAny = -1;

Exec exec_for(std::string_view who, const Place& place, int backend, std::uintptr_t stream) {
  Exec exec;
  exec.backend = backend < 0 ? backend_of(who, place) : static_cast<Backend>(backend);
  exec.stream = reinterpret_cast<void*>(stream);
  return exec;
}

// Runs `call` without the GIL (the library never touches Python objects) and raises on failure.
template <class Call>
void run_released(Call&& call) {
  Result result;
  {
    nb::gil_scoped_release release;
    result = call();
  }
  raise_if_failed(result);
}

std::int32_t dim(const Array& a, size_t i) { return static_cast<std::int32_t>(a.shape(i)); }

void quantize(const Array& w, const Array& packed, const Array& scale_kn, const Array& scale_2,
              int backend, std::uintptr_t stream) {
  constexpr std::string_view who = "metrale.quantize";
  Place place;
  PackNvfp4 args{};
  args.weight = static_cast<const bf16_bits*>(check_array(who, "w", w, Kind::bf16, {kAny, kAny}, place));
  args.n = dim(w, 0);
  args.k = dim(w, 1);
  args.packed = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(
      check_array(who, "packed", packed, Kind::u8, {args.n, args.k / 2}, place)));
  args.scale = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(
      check_array(who, "scale", scale_kn, Kind::e4m3, {args.k / 16, args.n}, place)));
  args.scale_2_out = const_cast<float*>(
      static_cast<const float*>(check_array(who, "scale_2", scale_2, Kind::f32, {1}, place)));
  const Exec exec = exec_for(who, place, backend, stream);
  run_released([&] { return pack_bf16_weight_to_nvfp4_t(args, exec); });
}

void swizzle_sfb(const Array& scale_in, const Array& scale_out, std::int32_t n, std::int32_t k,
                 bool src_n_major, int backend, std::uintptr_t stream) {
  constexpr std::string_view who = "metrale.swizzle_sfb";
  Place place;
  SwizzleScales args{};
  args.n = n;
  args.k = k;
  args.src_n_major = src_n_major;
  const std::int64_t rows = src_n_major ? k / 16 : n, cols = src_n_major ? n : k / 16;
  args.scale_in = static_cast<const std::uint8_t*>(
      check_array(who, "scale", scale_in, Kind::e4m3, {rows, cols}, place));
  const auto bytes = static_cast<std::int64_t>(n > 0 && k > 0 ? format::sfb_bytes(n, k) : 0);
  args.scale_out = const_cast<std::uint8_t*>(
      static_cast<const std::uint8_t*>(check_array(who, "out", scale_out, Kind::e4m3, {bytes}, place)));
  const Exec exec = exec_for(who, place, backend, stream);
  run_released([&] { return pack_weight_sfb(args, exec); });
}

void gemm(const Array& act, const Array& weight, const Array& out, int backend,
          std::uintptr_t stream) {
  constexpr std::string_view who = "metrale.gemm";
  Place place;
  DenseGemm args{};
  args.act = static_cast<const bf16_bits*>(check_array(who, "act", act, Kind::bf16, {kAny, kAny}, place));
  args.m = dim(act, 0);
  args.k = dim(act, 1);
  args.weight = static_cast<const bf16_bits*>(
      check_array(who, "weight", weight, Kind::bf16, {kAny, args.k}, place));
  args.n = dim(weight, 0);
  args.out = const_cast<bf16_bits*>(
      static_cast<const bf16_bits*>(check_array(who, "out", out, Kind::bf16, {args.m, args.n}, place)));
  const Exec exec = exec_for(who, place, backend, stream);
  run_released([&] { return bf16_gemm_act_weight_t(args, exec); });
}

void nvfp4_gemm(const Array& act, const Array& packed, const Array& scale, float scale_2,
                int scale_layout, const Array& out, int backend, std::uintptr_t stream) {
  constexpr std::string_view who = "metrale.nvfp4_gemm";
  Place place;
  Nvfp4Gemm args{};
  args.act = static_cast<const bf16_bits*>(check_array(who, "act", act, Kind::bf16, {kAny, kAny}, place));
  args.m = dim(act, 0);
  args.k = dim(act, 1);
  args.packed = static_cast<const std::uint8_t*>(
      check_array(who, "packed", packed, Kind::u8, {kAny, args.k / 2}, place));
  args.n = dim(packed, 0);
  args.scale_layout = static_cast<ScaleLayout>(scale_layout);
  if (args.scale_layout == ScaleLayout::sfb) {
    const auto bytes = static_cast<std::int64_t>(args.k > 0 ? format::sfb_bytes(args.n, args.k) : 0);
    args.scale = static_cast<const std::uint8_t*>(check_array(who, "scale", scale, Kind::e4m3, {bytes}, place));
  } else {
    args.scale = static_cast<const std::uint8_t*>(
        check_array(who, "scale", scale, Kind::e4m3, {args.k / 16, args.n}, place));
  }
  args.scale_2 = scale_2;
  args.out = const_cast<bf16_bits*>(
      static_cast<const bf16_bits*>(check_array(who, "out", out, Kind::bf16, {args.m, args.n}, place)));
  const Exec exec = exec_for(who, place, backend, stream);
  run_released([&] { return nvfp4_gemm_bf16_act_weight_t(args, exec); });
}

// One projection's per-expert tables: host arrays of num_experts entries each.
struct Tables {
  Tables(Array packed, Array scale, Array scale2)
      : packed_ptrs(std::move(packed)), scale_ptrs(std::move(scale)), scale2_vals(std::move(scale2)) {}
  Array packed_ptrs, scale_ptrs, scale2_vals;
};

ExpertWeights check_tables(std::string_view who, const Tables& t, std::int32_t experts) {
  Place host{1, 0};  // the tables are host arrays on every backend
  ExpertWeights w{};
  w.packed_ptrs = static_cast<const std::uint64_t*>(
      check_array(who, "packed_ptrs", t.packed_ptrs, Kind::u64, {experts}, host));
  w.scale_ptrs = static_cast<const std::uint64_t*>(
      check_array(who, "scale_ptrs", t.scale_ptrs, Kind::u64, {experts}, host));
  w.scale2_vals = static_cast<const float*>(
      check_array(who, "scale_2", t.scale2_vals, Kind::f32, {experts}, host));
  return w;
}

struct GroupedCall {
  std::string who;
  std::optional<Array> token_ids;
  std::vector<Tables> proj;
  std::vector<Array> out;
  int scale_layout;
  bool offsets_on_device;
  std::int32_t m_total, max_rows_per_expert, n;
};

void grouped(const GroupedCall& c, const Array& a, const Array& offsets, int backend,
             std::uintptr_t stream) {
  const std::string_view who = c.who;
  if (c.proj.empty() || c.proj.size() > 2 || c.proj.size() != c.out.size())
    raise(Status::invalid_argument, fmt::format("{}: {} projections with {} outputs; expected 1 "
                                                "or 2 of each", who, c.proj.size(), c.out.size()));
  Place place;
  GroupedNvfp4 args{};
  args.a = static_cast<const bf16_bits*>(check_array(who, "a", a, Kind::bf16, {kAny, kAny}, place));
  args.a_rows = dim(a, 0);
  args.k = dim(a, 1);
  args.n = c.n;
  args.groups.num_experts = offsets.ndim() == 1 ? dim(offsets, 0) - 1 : -1;
  args.groups.m_total = c.m_total;
  args.groups.offsets_on_device = c.offsets_on_device;
  args.groups.max_rows_per_expert = c.max_rows_per_expert;
  Place host{1, 0};
  args.groups.offsets = static_cast<const std::int32_t*>(check_array(
      who, "expert_offsets", offsets, Kind::i32, {kAny}, c.offsets_on_device ? place : host));
  if (c.token_ids)
    args.token_ids = static_cast<const std::int32_t*>(
        check_array(who, "sorted_token_ids", *c.token_ids, Kind::i32, {c.m_total}, place));
  args.proj_count = static_cast<std::int32_t>(c.proj.size());
  for (size_t p = 0; p < c.proj.size(); ++p) {
    args.proj[p] = check_tables(who, c.proj[p], args.groups.num_experts);
    args.out[p] = const_cast<bf16_bits*>(static_cast<const bf16_bits*>(
        check_array(who, p == 0 ? "out[0]" : "out[1]", c.out[p], Kind::bf16, {c.m_total, c.n}, place)));
  }
  args.scale_layout = static_cast<ScaleLayout>(c.scale_layout);
  const Exec exec = exec_for(who, place, backend, stream);
  run_released([&] { return nvfp4_grouped(args, exec); });
}

}  // namespace

NB_MODULE(_metrale, m) {
  m.doc() = "metrale's C++ API for the Python package (use the metrale module, not this one)";
  m.def("set_error_types", &set_error_types);
  m.def("version", [] { return std::string(version()); });
  m.def("backend_built", [](int backend) { return backend_built(static_cast<Backend>(backend)); });
  m.def("sfb_bytes", [](std::int64_t n, std::int64_t k) { return format::sfb_bytes(n, k); });
  m.def("quantize", &quantize);
  m.def("swizzle_sfb", &swizzle_sfb);
  m.def("gemm", &gemm);
  m.def("nvfp4_gemm", &nvfp4_gemm);
  nb::class_<Tables>(m, "Tables")
      .def(nb::init<Array, Array, Array>())
      .def_rw("packed_ptrs", &Tables::packed_ptrs)
      .def_rw("scale_ptrs", &Tables::scale_ptrs)
      .def_rw("scale2_vals", &Tables::scale2_vals);
  m.def("grouped",
        [](std::string who, const Array& a, std::optional<Array> token_ids, std::vector<Tables> proj,
           std::vector<Array> out, int scale_layout, const Array& offsets, bool offsets_on_device,
           std::int32_t m_total, std::int32_t max_rows_per_expert, std::int32_t n, int backend,
           std::uintptr_t stream) {
          grouped({std::move(who), std::move(token_ids), std::move(proj), std::move(out),
                   scale_layout, offsets_on_device, m_total, max_rows_per_expert, n},
                  a, offsets, backend, stream);
        });
}

}  // namespace metrale::python
