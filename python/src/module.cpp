// metrale._metrale: the nanobind extension under the Python package. Each function takes DLPack
// arrays (already allocated: the Python layer makes outputs in the caller's framework), checks
// their dtype, shape, contiguity and device (arrays.hpp), then calls the C++ API with the GIL
// released. The backend follows the arrays' device unless `backend` (a metrale::Backend value,
// -1 for "from the device") says otherwise; `stream` is a cudaStream_t as an integer.
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.hpp"
#include "format/layouts.hpp"
#include "metrale/metrale.hpp"

namespace metrale::python {

namespace {

constexpr std::int64_t kAny = -1;

// The arrays of one call: each checked against its kind and shape, all on one device, which then
// selects the backend.
struct Call {
  std::string_view who;
  Place place{};
  std::deque<Array> outputs{};  // the imported outputs, alive until the call returns

  template <class T>
  const T* in(std::string_view name, const Array& a, Kind kind,
              std::initializer_list<std::int64_t> shape) {
    return static_cast<const T*>(check_array(who, name, a, kind, shape, place));
  }
  // Outputs arrive as Python objects: writable() refuses a read-only one before any check.
  template <class T>
  T* out(std::string_view name, nb::handle object, Kind kind,
         std::initializer_list<std::int64_t> shape) {
    const Array& a = outputs.emplace_back(writable(who, name, object));
    return const_cast<T*>(in<T>(name, a, kind, shape));
  }
  // Runs `call` without the GIL (the library never touches Python objects), raises on failure.
  template <class Op>
  void run(int backend, std::uintptr_t stream, Op&& op) {
    Exec exec;
    exec.backend = backend < 0 ? backend_of(who, place) : static_cast<Backend>(backend);
    exec.stream = reinterpret_cast<void*>(stream);
    Result result;
    {
      nb::gil_scoped_release release;
      result = op(exec);
    }
    raise_if_failed(result);
  }
};

std::int32_t dim(const Array& a, size_t i) {
  return static_cast<std::int32_t>(a.shape(i));
}

// Bytes of an SFB scale array for [N, K] (0 for an empty or invalid shape: the library refuses it).
std::int64_t sfb_length(std::int32_t n, std::int32_t k) {
  return n > 0 && k > 0 ? static_cast<std::int64_t>(format::sfb_bytes(n, k)) : 0;
}

void quantize(const Array& w, nb::handle packed, nb::handle scale_kn, nb::handle scale_2,
              int backend, std::uintptr_t stream) {
  Call c{"metrale.quantize"};
  PackNvfp4 args{};
  args.weight = c.in<bf16_bits>("w", w, Kind::bf16, {kAny, kAny});
  args.n = dim(w, 0);
  args.k = dim(w, 1);
  args.packed = c.out<std::uint8_t>("packed", packed, Kind::u8, {args.n, args.k / 2});
  args.scale = c.out<std::uint8_t>("scale", scale_kn, Kind::e4m3, {args.k / 16, args.n});
  args.scale_2_out = c.out<float>("scale_2", scale_2, Kind::f32, {1});
  c.run(backend, stream, [&](const Exec& exec) { return pack_bf16_weight_to_nvfp4_t(args, exec); });
}

void swizzle_sfb(const Array& scale_in, nb::handle scale_out, std::int32_t n, std::int32_t k,
                 bool src_n_major, int backend, std::uintptr_t stream) {
  Call c{"metrale.swizzle_sfb"};
  SwizzleScales args{};
  args.n = n;
  args.k = k;
  args.src_n_major = src_n_major;
  const std::int64_t rows = src_n_major ? k / 16 : n, cols = src_n_major ? n : k / 16;
  args.scale_in = c.in<std::uint8_t>("scale", scale_in, Kind::e4m3, {rows, cols});
  args.scale_out = c.out<std::uint8_t>("out", scale_out, Kind::e4m3, {sfb_length(n, k)});
  c.run(backend, stream, [&](const Exec& exec) { return pack_weight_sfb(args, exec); });
}

void gemm(const Array& act, const Array& weight, nb::handle out, int backend,
          std::uintptr_t stream) {
  Call c{"metrale.gemm"};
  DenseGemm args{};
  args.act = c.in<bf16_bits>("act", act, Kind::bf16, {kAny, kAny});
  args.m = dim(act, 0);
  args.k = dim(act, 1);
  args.weight = c.in<bf16_bits>("weight", weight, Kind::bf16, {kAny, args.k});
  args.n = dim(weight, 0);
  args.out = c.out<bf16_bits>("out", out, Kind::bf16, {args.m, args.n});
  c.run(backend, stream, [&](const Exec& exec) { return bf16_gemm_act_weight_t(args, exec); });
}

void nvfp4_gemm(const Array& act, const Array& packed, const Array& scale, float scale_2,
                int scale_layout, nb::handle out, int backend, std::uintptr_t stream) {
  Call c{"metrale.nvfp4_gemm"};
  Nvfp4Gemm args{};
  args.act = c.in<bf16_bits>("act", act, Kind::bf16, {kAny, kAny});
  args.m = dim(act, 0);
  args.k = dim(act, 1);
  args.packed = c.in<std::uint8_t>("packed", packed, Kind::u8, {kAny, args.k / 2});
  args.n = dim(packed, 0);
  args.scale_layout = static_cast<ScaleLayout>(scale_layout);
  args.scale = args.scale_layout == ScaleLayout::sfb
                   ? c.in<std::uint8_t>("scale", scale, Kind::e4m3, {sfb_length(args.n, args.k)})
                   : c.in<std::uint8_t>("scale", scale, Kind::e4m3, {args.k / 16, args.n});
  args.scale_2 = scale_2;
  args.out = c.out<bf16_bits>("out", out, Kind::bf16, {args.m, args.n});
  c.run(backend, stream,
        [&](const Exec& exec) { return nvfp4_gemm_bf16_act_weight_t(args, exec); });
}

// packed [N, K/2] bytes into (to_prepacked) or out of the prepacked layout; dst may be src.
void prepack(const Array& src, nb::handle dst, bool to_prepacked, int backend,
             std::uintptr_t stream) {
  Call c{to_prepacked ? "metrale.prepack" : "metrale.unprepack"};
  PrepackNvfp4 args{};
  args.src = c.in<std::uint8_t>("packed", src, Kind::u8, {kAny, kAny});
  args.n = dim(src, 0);
  args.k = 2 * dim(src, 1);
  args.dst = c.out<std::uint8_t>("out", dst, Kind::u8, {args.n, args.k / 2});
  args.dir = to_prepacked ? PrepackDir::to_prepacked : PrepackDir::to_packed;
  c.run(backend, stream, [&](const Exec& exec) { return prepack_nvfp4(args, exec); });
}

// One projection's per-expert tables: host arrays of num_experts entries each.
struct Tables {
  Tables(Array packed, Array scale, Array scale2)
      : packed_ptrs(std::move(packed)),
        scale_ptrs(std::move(scale)),
        scale2_vals(std::move(scale2)) {}
  Array packed_ptrs, scale_ptrs, scale2_vals;
};

ExpertWeights check_tables(std::string_view who, const Tables& t, std::int32_t experts) {
  Call host{who, kHost};  // the tables are host arrays on every backend
  ExpertWeights w{};
  w.packed_ptrs = host.in<std::uint64_t>("packed_ptrs", t.packed_ptrs, Kind::u64, {experts});
  w.scale_ptrs = host.in<std::uint64_t>("scale_ptrs", t.scale_ptrs, Kind::u64, {experts});
  w.scale2_vals = host.in<float>("scale_2", t.scale2_vals, Kind::f32, {experts});
  return w;
}

struct GroupedCall {
  std::string who;
  std::optional<Array> token_ids;
  std::vector<Tables> proj;
  std::vector<nb::object> out;
  int scale_layout, weight_layout;
  bool offsets_on_device;
  std::int32_t m_total, max_rows_per_expert, n;
};

void grouped(const GroupedCall& g, const Array& a, const Array& offsets, int backend,
             std::uintptr_t stream) {
  Call c{g.who};
  if (g.proj.empty() || g.proj.size() > 2 || g.proj.size() != g.out.size())
    raise(Status::invalid_argument, fmt::format("{}: {} projections with {} outputs; expected 1 "
                                                "or 2 of each",
                                                c.who, g.proj.size(), g.out.size()));
  GroupedNvfp4 args{};
  args.a = c.in<bf16_bits>("a", a, Kind::bf16, {kAny, kAny});
  args.a_rows = dim(a, 0);
  args.k = dim(a, 1);
  args.n = g.n;
  args.groups.num_experts = offsets.ndim() == 1 ? dim(offsets, 0) - 1 : -1;
  args.groups.m_total = g.m_total;
  args.groups.offsets_on_device = g.offsets_on_device;
  args.groups.max_rows_per_expert = g.max_rows_per_expert;
  // Host offsets live on the host whatever the device of the other arrays.
  Call host{g.who, kHost};
  args.groups.offsets = (g.offsets_on_device ? c : host)
                            .in<std::int32_t>("expert_offsets", offsets, Kind::i32, {kAny});
  if (g.token_ids)
    args.token_ids = c.in<std::int32_t>("sorted_token_ids", *g.token_ids, Kind::i32, {g.m_total});
  args.proj_count = static_cast<std::int32_t>(g.proj.size());
  for (size_t p = 0; p < g.proj.size(); ++p) {
    args.proj[p] = check_tables(g.who, g.proj[p], args.groups.num_experts);
    args.out[p] =
        c.out<bf16_bits>(p == 0 ? "out[0]" : "out[1]", g.out[p], Kind::bf16, {g.m_total, g.n});
  }
  args.scale_layout = static_cast<ScaleLayout>(g.scale_layout);
  args.weight_layout = static_cast<WeightLayout>(g.weight_layout);
  c.run(backend, stream, [&](const Exec& exec) { return nvfp4_grouped(args, exec); });
}

// One moe_forward as the Python layer (python/metrale/moe.py) fills it: the layer's tables and
// scalars, and the optional arrays (None when absent). The hidden states and out come as
// arguments; their device selects the backend.
struct MoeCall {
  std::vector<Tables> proj;                  // gate, up, down
  std::vector<std::optional<Array>> biases;  // gate, up, down: host uint64 [L] pointer tables
  std::optional<Array> router_logits, topk_ids, topk_weights, residual, correction_bias, expert_map;
  std::optional<nb::object> topk_ids_out, topk_weights_out;  // outputs: writable() checks them
  std::int32_t num_experts = 0, top_k = 0, n_group = 1, topk_group = 1;
  std::int32_t scale_layout = 1, weight_layout = 0, activation = 0, routing = 0, logits_dtype = 0;
  bool renormalize = false;
  float swiglu_alpha = 1.702f, swiglu_limit = 7.0f, routed_scaling_factor = 1.0f;
};

// The layer's per-expert tables and host arrays (expert map, bias tables), checked on the host.
void moe_tables(std::string_view who, const MoeCall& g, MoeLayer& layer) {
  if (g.proj.size() != 3 || g.biases.size() != 3)
    raise(Status::invalid_argument,
          fmt::format("{}: {} projections and {} bias tables, expected 3 of each (gate, up, down)",
                      who, g.proj.size(), g.biases.size()));
  const auto local = static_cast<std::int64_t>(g.proj[0].packed_ptrs.shape(0));
  layer.num_local_experts = static_cast<std::int32_t>(local);
  layer.gate = check_tables(who, g.proj[0], layer.num_local_experts);
  layer.up = check_tables(who, g.proj[1], layer.num_local_experts);
  layer.down = check_tables(who, g.proj[2], layer.num_local_experts);
  Call host{who, kHost};
  const std::uint64_t** bias[3] = {&layer.gate_bias_ptrs, &layer.up_bias_ptrs,
                                   &layer.down_bias_ptrs};
  const char* bias_names[3] = {"gate_bias", "up_bias", "down_bias"};
  for (int p = 0; p < 3; ++p) {
    if (g.biases[p])
      *bias[p] = host.in<std::uint64_t>(bias_names[p], *g.biases[p], Kind::u64, {local});
  }
  if (g.expert_map)
    layer.expert_map =
        host.in<std::int32_t>("expert_map", *g.expert_map, Kind::i32, {g.num_experts});
}

void moe(const MoeCall& g, const Array& hidden, nb::handle out, std::int32_t intermediate,
         int backend, std::uintptr_t stream) {
  Call c{"metrale.moe_forward"};
  MoeLayer layer;
  MoeTokens t;
  t.hidden = c.in<bf16_bits>("hidden", hidden, Kind::bf16, {kAny, kAny});
  t.num_tokens = dim(hidden, 0);
  const std::int64_t T = t.num_tokens, H = dim(hidden, 1), k = g.top_k, E = g.num_experts;
  layer.num_experts = g.num_experts;
  layer.hidden_size = static_cast<std::int32_t>(H);
  layer.intermediate_size = intermediate;
  layer.top_k = g.top_k;
  layer.scale_layout = static_cast<ScaleLayout>(g.scale_layout);
  layer.weight_layout = static_cast<WeightLayout>(g.weight_layout);
  moe_tables(c.who, g, layer);
  layer.activation = static_cast<MoeActivation>(g.activation);
  layer.swiglu_alpha = g.swiglu_alpha;
  layer.swiglu_limit = g.swiglu_limit;
  layer.routing = static_cast<MoeRouting>(g.routing);
  layer.renormalize = g.renormalize;
  layer.n_group = g.n_group;
  layer.topk_group = g.topk_group;
  layer.routed_scaling_factor = g.routed_scaling_factor;
  if (g.correction_bias)
    layer.correction_bias = c.in<float>("correction_bias", *g.correction_bias, Kind::f32, {E});
  t.logits_dtype = static_cast<DType>(g.logits_dtype);
  if (g.router_logits) {
    t.router_logits = c.in<void>("router_logits", *g.router_logits,
                                 t.logits_dtype == DType::bf16 ? Kind::bf16 : Kind::f32, {T, E});
  }
  if (g.topk_ids) t.topk_ids = c.in<std::int32_t>("topk_ids", *g.topk_ids, Kind::i32, {T, k});
  if (g.topk_weights)
    t.topk_weights = c.in<float>("topk_weights", *g.topk_weights, Kind::f32, {T, k});
  if (g.residual) t.residual = c.in<bf16_bits>("residual", *g.residual, Kind::bf16, {T, H});
  t.out = c.out<bf16_bits>("out", out, Kind::bf16, {T, H});
  if (g.topk_ids_out)
    t.topk_ids_out = c.out<std::int32_t>("topk_ids_out", *g.topk_ids_out, Kind::i32, {T, k});
  if (g.topk_weights_out)
    t.topk_weights_out = c.out<float>("topk_weights_out", *g.topk_weights_out, Kind::f32, {T, k});
  c.run(backend, stream, [&](const Exec& exec) { return moe_forward(layer, t, exec); });
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
  m.def("prepack", &prepack);
  nb::class_<Tables>(m, "Tables")
      .def(nb::init<Array, Array, Array>())
      .def_rw("packed_ptrs", &Tables::packed_ptrs)
      .def_rw("scale_ptrs", &Tables::scale_ptrs)
      .def_rw("scale2_vals", &Tables::scale2_vals);
  m.def("grouped",
        [](std::string who, const Array& a, std::optional<Array> token_ids,
           std::vector<Tables> proj, std::vector<nb::object> out, int scale_layout,
           int weight_layout, const Array& offsets, bool offsets_on_device, std::int32_t m_total,
           std::int32_t max_rows_per_expert, std::int32_t n, int backend, std::uintptr_t stream) {
          grouped({std::move(who), std::move(token_ids), std::move(proj), std::move(out),
                   scale_layout, weight_layout, offsets_on_device, m_total, max_rows_per_expert, n},
                  a, offsets, backend, stream);
        });
  nb::class_<MoeCall>(m, "MoeCall")
      .def(nb::init<>())
      .def_rw("proj", &MoeCall::proj)
      .def_rw("biases", &MoeCall::biases)
      .def_rw("router_logits", &MoeCall::router_logits)
      .def_rw("topk_ids", &MoeCall::topk_ids)
      .def_rw("topk_weights", &MoeCall::topk_weights)
      .def_rw("residual", &MoeCall::residual)
      .def_rw("topk_ids_out", &MoeCall::topk_ids_out)
      .def_rw("topk_weights_out", &MoeCall::topk_weights_out)
      .def_rw("correction_bias", &MoeCall::correction_bias)
      .def_rw("expert_map", &MoeCall::expert_map)
      .def_rw("num_experts", &MoeCall::num_experts)
      .def_rw("top_k", &MoeCall::top_k)
      .def_rw("n_group", &MoeCall::n_group)
      .def_rw("topk_group", &MoeCall::topk_group)
      .def_rw("scale_layout", &MoeCall::scale_layout)
      .def_rw("weight_layout", &MoeCall::weight_layout)
      .def_rw("activation", &MoeCall::activation)
      .def_rw("routing", &MoeCall::routing)
      .def_rw("logits_dtype", &MoeCall::logits_dtype)
      .def_rw("renormalize", &MoeCall::renormalize)
      .def_rw("swiglu_alpha", &MoeCall::swiglu_alpha)
      .def_rw("swiglu_limit", &MoeCall::swiglu_limit)
      .def_rw("routed_scaling_factor", &MoeCall::routed_scaling_factor);
  m.def("moe", &moe);
}

}  // namespace metrale::python
