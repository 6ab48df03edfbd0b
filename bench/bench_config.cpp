// Presets, names and the shape file of `metrale bench` (bench_config.hpp).
#include "bench/bench_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "check/check.hpp"
#include "core/config.hpp"
#include "core/error.hpp"

namespace metrale::bench {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

struct NamedImpl {
  Impl impl;
  const char* label;  // printed beside every number
  const char* flag;   // spelled in --impls
};

constexpr NamedImpl kImpls[] = {
    {Impl::metrale, "metrale", "metrale"},
    {Impl::cublaslt, "cuBLASLt", "cublaslt"},
    {Impl::cublas_grouped, "cuBLAS-grouped", "cublas-grouped"},
    {Impl::dequant_cublaslt, "dequant+cuBLASLt", "dequant-cublaslt"},
    {Impl::cutlass, "CUTLASS", "cutlass"},
    {Impl::bf16_grouped, "bf16-grouped (CUTLASS)", "bf16-grouped"},
    {Impl::metrale_cpu, "metrale-cpu", "metrale-cpu"},
};

// The --impls names this build accepts (bf16-grouped only with CUTLASS compiled in).
bool registered(Impl impl) {
  return impl != Impl::bf16_grouped || kBf16GroupedBuilt;
}

}  // namespace

const char* layout_label(WeightLayout layout) {
  if (layout != WeightLayout::prepacked) return "";
  return core::prepacked_layout() == core::PrepackedLayout::fragments
             ? " (prepacked, fragment order)"
             : " (prepacked, halves)";
}

const std::vector<ModelShape>& model_presets() {
  // The shapes are defined once, in tools/check (the tests and `metrale check` use them too).
  static const std::vector<ModelShape> presets = [] {
    std::vector<ModelShape> shapes;
    for (const check::ModelPreset& p : check::model_presets())
      shapes.push_back({p.display, p.hidden, p.inter, p.experts, p.top_k, p.moe});
    return shapes;
  }();
  return presets;
}

const ModelShape& find_preset(const std::string& name) {
  const std::string key = lower(name);
  const std::pair<const char*, int> aliases[] = {
      {"qwen3", 0},       {"qwen3-30b-a3b", 0},  {"deepseek", 1}, {"deepseek-v3", 1},
      {"deepseek-r1", 1}, {"deepseek-v3/r1", 1}, {"gpt-oss", 2},  {"gpt-oss-120b", 2},
      {"mixtral", 3},     {"mixtral-8x7b", 3},   {"qwen3-next", 4}, {"qwen3-next-80b-a3b", 4}};
  for (const auto& [alias, index] : aliases) {
    if (key == alias) return model_presets()[index];
  }
  fail(Status::invalid_argument,
       "bench: --model {} is not a preset (qwen3-30b-a3b, deepseek-v3, gpt-oss-120b, "
       "mixtral-8x7b, qwen3-next-80b-a3b, or all)",
       name);
}

const char* op_name(Op op) {
  switch (op) {
    case Op::gate_up: return "gate_up";
    case Op::down: return "down";
    case Op::dense: return "dense";
    case Op::pack: return "pack";
    case Op::pack_unit: return "pack_unit";
    case Op::moe: return "moe";
  }
  return "?";
}

Op parse_op(const std::string& name) {
  const std::string key = lower(name);
  for (Op op : {Op::gate_up, Op::down, Op::dense, Op::pack, Op::pack_unit, Op::moe}) {
    if (key == op_name(op)) return op;
  }
  fail(Status::invalid_argument,
       "bench: --ops {} is not one of gate_up, down, dense, pack, pack_unit, moe", name);
}

std::vector<Op> default_ops() {
  return {Op::gate_up, Op::down, Op::moe};
}

const char* impl_label(Impl impl) {
  for (const NamedImpl& n : kImpls) {
    if (n.impl == impl) return n.label;
  }
  return "?";
}

Impl parse_impl(const std::string& name) {
  const std::string key = lower(name);
  std::string known;
  for (const NamedImpl& n : kImpls) {
    if (key != n.flag && key != lower(n.label)) continue;
    if (!registered(n.impl)) {
      fail(Status::not_built,
           "bench: --impls {}: the {} arm exists only in a CUTLASS build (configure with "
           "-DMETRALE_CUTLASS=ON and CUTLASS headers: CUTLASS_HOME or pip install nvidia-cutlass)",
           name, n.label);
    }
    return n.impl;
  }
  for (const NamedImpl& n : kImpls) {
    if (registered(n.impl)) known += known.empty() ? n.flag : std::string(", ") + n.flag;
  }
  fail(Status::invalid_argument, "bench: --impls {} is not one of {}", name, known);
}

std::vector<Impl> default_impls() {
  std::vector<Impl> impls = {Impl::metrale, Impl::cublaslt, Impl::cublas_grouped,
                             Impl::dequant_cublaslt, Impl::cutlass};
  if (kBf16GroupedBuilt) impls.push_back(Impl::bf16_grouped);
  return impls;
}

void validate_model(const ModelShape& m) {
  METRALE_REQUIRE(m.hidden > 0 && m.hidden % 16 == 0,
                  "bench: model {}: hidden = {} must be a positive multiple of 16", m.name,
                  m.hidden);
  METRALE_REQUIRE(m.inter > 0 && m.inter % 16 == 0,
                  "bench: model {}: inter = {} must be a positive multiple of 16", m.name, m.inter);
  METRALE_REQUIRE(m.experts > 0, "bench: model {}: experts = {} must be positive", m.name,
                  m.experts);
  METRALE_REQUIRE(m.top_k > 0 && m.top_k <= m.experts,
                  "bench: model {}: top_k = {} must be in [1, experts = {}]", m.name, m.top_k,
                  m.experts);
}

namespace {

// A whole number that fits an int (not 1.9, not "8", not 2^32 + 16, which would wrap to 16).
int json_int(const nlohmann::json& value, const std::string& path, const std::string& what) {
  constexpr int kMin = std::numeric_limits<int>::min(), kMax = std::numeric_limits<int>::max();
  const bool fits = value.is_number_unsigned()
                        ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(kMax)
                        : value.is_number_integer() && value.get<std::int64_t>() >= kMin &&
                              value.get<std::int64_t>() <= kMax;
  METRALE_REQUIRE(fits, "bench: --shapes {}: {} = {}, expected a whole number that fits an int",
                  path, what, value.dump());
  return static_cast<int>(value.get<std::int64_t>());
}

}  // namespace

std::vector<ModelShape> load_shape_file(const std::string& path, std::vector<int>* tokens) {
  std::ifstream file(path);
  if (!file) fail(Status::invalid_argument, "bench: cannot open --shapes {}", path);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(file);
  } catch (const nlohmann::json::exception& e) {
    fail(Status::invalid_argument, "bench: --shapes {} is not valid JSON: {}", path, e.what());
  }
  const nlohmann::json& list = doc.is_object() && doc.contains("models") ? doc["models"] : doc;
  METRALE_REQUIRE(list.is_array(), "bench: --shapes {}: expected an array of models", path);
  if (doc.is_object() && doc.contains("tokens") && tokens) {
    const nlohmann::json& list_of_tokens = doc["tokens"];
    METRALE_REQUIRE(list_of_tokens.is_array(),
                    "bench: --shapes {}: tokens = {}, expected an array of token counts", path,
                    list_of_tokens.dump());
    for (std::size_t i = 0; i < list_of_tokens.size(); ++i)
      tokens->push_back(json_int(list_of_tokens[i], path, fmt::format("tokens[{}]", i)));
  }
  std::vector<ModelShape> models;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& item = list[i];
    ModelShape m;
    try {
      if (item.is_string()) {
        m = find_preset(item.get<std::string>());
      } else {
        m.name = item.value("name", "custom-" + std::to_string(i));
        const auto field = [&](const char* key) {
          return json_int(item.at(key), path, fmt::format("model {}: {}", i, key));
        };
        m.hidden = field("hidden");
        m.inter = field("inter");
        m.experts = field("experts");
        m.top_k = field("top_k");
      }
    } catch (const nlohmann::json::exception& e) {
      fail(Status::invalid_argument,
           "bench: --shapes {}: model {} needs integer hidden, inter, experts, top_k: {}", path, i,
           e.what());
    }
    validate_model(m);
    models.push_back(m);
  }
  return models;
}

}  // namespace metrale::bench
