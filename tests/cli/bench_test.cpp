// Tests of `metrale bench`'s host side: the routing (softmax-then-top-k, group order, skew), the
// floors against the figures PERF.md gives for its presets, the statistics, the shape file, and
// the CPU runner end to end down to its JSON. The GPU runner is exercised on the H200 only.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/bench_config.hpp"
#include "bench/bench_runners.hpp"
#include "bench/measure.hpp"
#include "bench/moe_layer.hpp"
#include "bench/random.hpp"
#include "bench/routing.hpp"
#include "core/error.hpp"

namespace metrale::bench {
namespace {

// The logits routing draws, recomputed here so the top-k choice can be checked by a full sort.
std::vector<double> logits(const Routing& r, int token, double skew, std::uint64_t seed) {
  const std::uint64_t logit_seed = derive_seed(seed, 0x726F757465ull);
  std::vector<double> l(r.experts);
  for (int e = 0; e < r.experts; ++e) {
    l[e] = normal_at(logit_seed, static_cast<std::uint64_t>(token) * r.experts + e) -
           skew * std::log1p(static_cast<double>(e));
  }
  return l;
}

TEST(BenchRouting, GroupsAreTheTopKOfEachToken) {
  const int tokens = 37, experts = 16, top_k = 4;
  const Routing r = route(tokens, experts, top_k, 0.0, 5);
  ASSERT_EQ(r.offsets.size(), static_cast<std::size_t>(experts + 1));
  EXPECT_EQ(r.offsets.front(), 0);
  EXPECT_EQ(r.offsets.back(), tokens * top_k);
  ASSERT_EQ(r.sorted_token_ids.size(), static_cast<std::size_t>(tokens * top_k));
  // Rebuild each token's expert set from the groups.
  std::vector<std::set<int>> chosen(tokens);
  int max_rows = 0;
  std::vector<int> active;
  for (int e = 0; e < experts; ++e) {
    ASSERT_LE(r.offsets[e], r.offsets[e + 1]);
    max_rows = std::max(max_rows, r.offsets[e + 1] - r.offsets[e]);
    if (r.offsets[e + 1] > r.offsets[e]) active.push_back(e);
    for (int i = r.offsets[e]; i < r.offsets[e + 1]; ++i) {
      const int t = r.sorted_token_ids[i];
      ASSERT_GE(t, 0);
      ASSERT_LT(t, tokens);
      if (i > r.offsets[e]) {
        EXPECT_LT(r.sorted_token_ids[i - 1], t) << "tokens ascend in a group";
      }
      EXPECT_TRUE(chosen[t].insert(e).second) << "token " << t << " twice on expert " << e;
    }
  }
  EXPECT_EQ(r.max_rows, max_rows);
  EXPECT_EQ(r.active_experts, active);
  for (int t = 0; t < tokens; ++t) {
    const std::vector<double> l = logits(r, t, 0.0, 5);
    std::vector<int> order(experts);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
    EXPECT_EQ(chosen[t], std::set<int>(order.begin(), order.begin() + top_k)) << "token " << t;
  }
}

TEST(BenchRouting, SeededAndDeterministic) {
  const Routing a = route(64, 32, 8, 0.0, 1), b = route(64, 32, 8, 0.0, 1);
  const Routing c = route(64, 32, 8, 0.0, 2);
  EXPECT_EQ(a.sorted_token_ids, b.sorted_token_ids);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_NE(a.offsets, c.offsets);
}

TEST(BenchRouting, SkewFavoursLowExperts) {
  const int tokens = 4096, experts = 64, top_k = 4;
  const Routing flat = route(tokens, experts, top_k, 0.0, 3);
  const Routing skewed = route(tokens, experts, top_k, 2.0, 3);
  const auto rows = [](const Routing& r, int e) { return r.offsets[e + 1] - r.offsets[e]; };
  // Uniform: every expert near tokens·top_k / experts = 256 rows.
  for (int e = 0; e < experts; ++e) {
    EXPECT_GT(rows(flat, e), 150) << e;
    EXPECT_LT(rows(flat, e), 380) << e;
  }
  EXPECT_GT(rows(skewed, 0), 3 * rows(skewed, experts - 1));
  EXPECT_EQ(skewed.offsets.back(), tokens * top_k);
}

// PERF.md's floors: 4.6 TB/s read, 700 TFLOP/s bf16 (gate_up: N = 2·inter in its table, here two
// projections of inter; activations and outputs add a little to its weight-only byte counts).
TEST(BenchFloor, MatchesPerfMdTable) {
  struct Case {
    const char* model;
    int tokens, active;
    double floor_us;
  };
  const Case cases[] = {{"Qwen3-30B-A3B", 1, 8, 3.1},       {"DeepSeek-V3", 1, 8, 28.7},
                        {"gpt-oss-120b", 1, 4, 8.1},        {"Mixtral-8x7B", 1, 2, 28.7},
                        {"DeepSeek-V3", 16384, 256, 10967}, {"Mixtral-8x7B", 16384, 8, 10967}};
  for (const Case& c : cases) {
    const ModelShape& m = find_preset(c.model);
    const int rows = c.tokens * m.top_k;
    const Work w = grouped_work(c.active, 2, m.inter, m.hidden, c.tokens, rows);
    const Floor f = floor_of(w, 4600, 700);
    EXPECT_NEAR(f.floor_us(), c.floor_us, 0.02 * c.floor_us) << c.model << " T=" << c.tokens;
  }
}

TEST(BenchFloor, WorkCountsEveryTerm) {
  const Work w = grouped_work(3, 1, 64, 32, 10, 20);
  EXPECT_DOUBLE_EQ(w.flops, 2.0 * 20 * 64 * 32);
  EXPECT_DOUBLE_EQ(w.bytes, 3 * 64 * 32 * 0.5625 + 2.0 * 10 * 32 + 2.0 * 20 * 64);
  const Floor f = floor_of(w, 1.0, 1e-6);  // 1 GB/s, 1 MFLOP/s
  EXPECT_DOUBLE_EQ(f.bytes_us, w.bytes / 1e3);
  EXPECT_DOUBLE_EQ(f.compute_us, w.flops);
  EXPECT_DOUBLE_EQ(f.floor_us(), std::max(f.bytes_us, f.compute_us));
}

TEST(BenchStats, MedianQuantilesAndSpread) {
  const Stats s = summarize({5, 1, 4, 2, 3}, 7, "events");
  EXPECT_DOUBLE_EQ(s.median_us, 3);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 5);
  EXPECT_DOUBLE_EQ(s.p10_us, 1.4);
  EXPECT_DOUBLE_EQ(s.p90_us, 4.6);
  EXPECT_NEAR(s.spread_pct(), 100.0 * 3.2 / 3, 1e-9);
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.iterations, 7);
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(BenchShapes, FileWithPresetsCustomShapesAndTokens) {
  const std::string path =
      write_temp("shapes.json",
                 R"({"models": ["mixtral", {"name": "tiny", "hidden": 64, "inter": 32, "experts": 4,
          "top_k": 2}], "tokens": [3, 5]})");
  std::vector<int> tokens;
  const std::vector<ModelShape> models = load_shape_file(path, &tokens);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].name, "Mixtral-8x7B");
  EXPECT_EQ(models[1].name, "tiny");
  EXPECT_EQ(models[1].experts, 4);
  EXPECT_EQ(tokens, (std::vector<int>{3, 5}));
}

TEST(BenchShapes, RejectsWhatCannotRun) {
  const std::string missing =
      write_temp("missing.json", R"([{"hidden": 64, "inter": 32, "experts": 4}])");
  try {
    load_shape_file(missing, nullptr);
    FAIL() << "a shape without top_k was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_k"), std::string::npos) << e.what();
  }
  const std::string bad_k =
      write_temp("bad_k.json", R"([{"hidden": 72, "inter": 32, "experts": 4, "top_k": 2}])");
  EXPECT_THROW(load_shape_file(bad_k, nullptr), Error);
  const std::string too_many =
      write_temp("top_k.json", R"([{"hidden": 64, "inter": 32, "experts": 4, "top_k": 5}])");
  EXPECT_THROW(load_shape_file(too_many, nullptr), Error);
  EXPECT_THROW(find_preset("llama"), Error);
  // Whole numbers that fit an int: 2^32 + 16 once ran as hidden 16, tokens 1.9 as T = 1, and
  // ["8"] printed only the JSON library's message.
  const struct {
    const char* json;
    const char* says;
  } wrong[] = {
      {R"([{"hidden": 4294967312, "inter": 32, "experts": 4, "top_k": 2}])",
       "model 0: hidden = 4294967312, expected a whole number that fits an int"},
      {R"([{"hidden": 64.5, "inter": 32, "experts": 4, "top_k": 2}])", "hidden = 64.5"},
      {R"({"models": ["qwen3-30b-a3b"], "tokens": 1.9})",
       "tokens = 1.9, expected an array of token counts"},
      {R"({"models": ["qwen3-30b-a3b"], "tokens": ["8"]})", "tokens[0] = \"8\", expected"},
  };
  for (const auto& w : wrong) {
    std::vector<int> tokens;
    try {
      load_shape_file(write_temp("wrong.json", w.json), &tokens);
      ADD_FAILURE() << w.json << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(w.says), std::string::npos) << e.what();
    }
  }
}

// The CPU runner end to end on a tiny shape: every row runs, the JSON holds what docs/perf.md
// promises, and CPU rows carry no floor.
TEST(BenchCpuRunner, RunsEveryOpAndWritesJson) {
  BenchConfig cfg;
  cfg.models = {ModelShape{"tiny", 64, 32, 6, 2, {}}};
  cfg.tokens = {1, 5};
  cfg.ops = {Op::gate_up, Op::down, Op::dense, Op::pack, Op::pack_unit};
  cfg.impls = {Impl::metrale_cpu};
  cfg.budget_ms = 1;
  Report report;
  run_cpu_bench(cfg, report);
  ASSERT_EQ(report.rows.size(), 8u);  // 2 T × (gate_up, down, dense) + one pack + one pack_unit
  for (const Row& row : report.rows) {
    EXPECT_TRUE(row.ok) << op_name(row.op) << " T=" << row.tokens << ": " << row.error;
    EXPECT_EQ(row.impl, "metrale-cpu");
    EXPECT_GE(row.stats.samples, 3);
    EXPECT_GT(row.stats.median_us, 0);
  }
  const Row& gate_up = report.rows[0];
  EXPECT_EQ(gate_up.op, Op::gate_up);
  EXPECT_EQ(gate_up.rows, 2);
  EXPECT_EQ(gate_up.projections, 2);
  EXPECT_EQ(gate_up.n, 32);
  EXPECT_EQ(gate_up.k, 64);
  // Both pack forms at the first token count, on the same shape and byte count; the notes differ.
  const Row& pack = report.rows[3];
  const Row& pack_unit = report.rows[4];
  EXPECT_EQ(pack.op, Op::pack);
  EXPECT_EQ(pack_unit.op, Op::pack_unit);
  EXPECT_EQ(pack_unit.tokens, 1);
  EXPECT_EQ(pack_unit.n, pack.n);
  EXPECT_EQ(pack_unit.k, pack.k);
  EXPECT_DOUBLE_EQ(pack_unit.work.bytes, pack.work.bytes);
  EXPECT_NE(pack_unit.note, pack.note);

  const std::string path = ::testing::TempDir() + "bench.json";
  report.info.mode = "cpu";
  report.write_json(path, cfg);
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  EXPECT_EQ(doc["metadata"]["mode"], "cpu");
  ASSERT_EQ(doc["rows"].size(), 8u);
  EXPECT_EQ(doc["rows"][4]["op"], "pack_unit");
  const nlohmann::json& row = doc["rows"][0];
  for (const char* key :
       {"model", "op", "tokens", "rows", "impl", "status", "median_us", "p10_us", "p90_us",
        "spread_pct", "flops", "bytes", "floor_us", "pct_floor", "time_ratio"}) {
    EXPECT_TRUE(row.contains(key)) << key;
  }
  EXPECT_TRUE(row["floor_us"].is_null());
  EXPECT_TRUE(row["pct_floor"].is_null());
  EXPECT_EQ(row["status"], "ok");
  // The routing, so that another tool can rebuild the grouping: rows of each expert.
  ASSERT_TRUE(row.contains("expert_rows"));
  const std::vector<int> expert_rows = row["expert_rows"].get<std::vector<int>>();
  EXPECT_EQ(expert_rows.size(), 6u);
  EXPECT_EQ(std::accumulate(expert_rows.begin(), expert_rows.end(), 0), row["rows"].get<int>());
  EXPECT_EQ(expert_rows, report.rows[0].expert_rows);
  for (const nlohmann::json& r : doc["rows"]) {
    const bool grouped = r["op"] == "gate_up" || r["op"] == "down";
    EXPECT_EQ(r.contains("expert_rows"), grouped) << r["op"];
  }
}

// --json is rewritten after each group with metadata.complete false, so that a run stopped from
// outside keeps every row it measured; the last write says complete.
TEST(BenchCpuRunner, JsonHoldsEachFinishedGroupWhileTheRunGoesOn) {
  BenchConfig cfg;
  cfg.models = {ModelShape{"tiny", 64, 32, 6, 2, {}}};
  cfg.tokens = {1, 5};
  cfg.ops = {Op::gate_up, Op::down};
  cfg.impls = {Impl::metrale_cpu};
  cfg.budget_ms = 1;
  const std::string path = ::testing::TempDir() + "bench_partial.json";
  std::remove(path.c_str());
  Report report;
  report.info.mode = "cpu";
  std::vector<std::size_t> rows_on_disk;
  report.after_group = [&] {
    report.write_json(path, cfg, false);
    std::ifstream file(path);
    const nlohmann::json doc = nlohmann::json::parse(file);
    EXPECT_EQ(doc["metadata"]["complete"], false);
    rows_on_disk.push_back(doc["rows"].size());
  };
  run_cpu_bench(cfg, report);
  EXPECT_EQ(rows_on_disk, (std::vector<std::size_t>{1, 2, 3, 4}));  // (gate_up, down) x 2 T
  report.write_json(path, cfg);
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  EXPECT_EQ(doc["metadata"]["complete"], true);
  EXPECT_EQ(doc["rows"].size(), 4u);
  EXPECT_FALSE(std::ifstream(path + ".part").good());  // replaced whole, nothing left beside it
}

// The MoE layer's row on the CPU, for each kind of recipe: the layer runs, its routing is the
// oracle's, the grouped calls run on it, and the JSON says all of it.
TEST(BenchCpuRunner, MoeRowTimesTheLayerAndItsGroupedCallsOnItsRouting) {
  BenchConfig cfg;
  ModelShape plain{"tiny", 64, 32, 6, 2, {}};
  ModelShape grouped{"tiny-deepseek", 64, 32, 16, 4, check::kDeepSeekV3Recipe};
  ModelShape clamped{"tiny-gpt-oss", 64, 48, 8, 2, check::kGptOssRecipe};
  cfg.models = {plain, grouped, clamped};
  cfg.tokens = {1, 5};
  cfg.ops = {Op::moe};
  cfg.impls = {Impl::metrale_cpu};
  cfg.budget_ms = 1;
  Report report;
  run_cpu_bench(cfg, report);
  ASSERT_EQ(report.rows.size(), 6u);
  for (const Row& row : report.rows) {
    SCOPED_TRACE(row.model + " T=" + std::to_string(row.tokens));
    EXPECT_EQ(row.op, Op::moe);
    EXPECT_TRUE(row.ok) << row.error;
    EXPECT_EQ(row.impl, "metrale-cpu");
    EXPECT_EQ(row.moe.routing_source, kLayerRouting);
    EXPECT_EQ(row.moe.slots_differing, 0);  // the layer's routing is the oracle's
    EXPECT_EQ(row.moe.nan_outputs, 0);
    EXPECT_TRUE(row.moe.gate_up.ok) << row.moe.gate_up.error;
    EXPECT_TRUE(row.moe.down.ok) << row.moe.down.error;
    EXPECT_GT(row.layer_over_grouped(), 0);
    EXPECT_EQ(row.rows, row.tokens * row.top_k);
    EXPECT_EQ(std::accumulate(row.expert_rows.begin(), row.expert_rows.end(), 0), row.rows);
    EXPECT_DOUBLE_EQ(row.work.flops, row.moe.gate_up.work.flops + row.moe.down.work.flops);
  }
  EXPECT_NE(report.rows[2].moe.recipe.find("sigmoid_grouped_topk (8 groups, 4 kept"),
            std::string::npos)
      << report.rows[2].moe.recipe;
  EXPECT_NE(report.rows[4].moe.recipe.find("swiglu_clamped"), std::string::npos);

  const std::string path = ::testing::TempDir() + "bench_moe.json";
  report.info.mode = "cpu";
  report.write_json(path, cfg);
  std::ifstream file(path);
  const nlohmann::json doc = nlohmann::json::parse(file);
  const nlohmann::json& row = doc["rows"][1];
  EXPECT_EQ(row["op"], "moe");
  EXPECT_EQ(row["projections"], 3);
  ASSERT_TRUE(row.contains("expert_rows"));
  ASSERT_TRUE(row.contains("moe"));
  const nlohmann::json& moe = row["moe"];
  for (const char* key :
       {"recipe", "routing_source", "routing_slots_differing_from_cpu_oracle", "out_nan_count",
        "gate_up", "down", "grouped_sum_us", "layer_over_grouped", "target", "meets_target"}) {
    EXPECT_TRUE(moe.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(moe["target"].get<double>(), 1.15);  // T = 5
  EXPECT_NEAR(moe["layer_over_grouped"].get<double>(),
              row["median_us"].get<double>() / moe["grouped_sum_us"].get<double>(), 1e-9);
  for (const char* part : {"gate_up", "down"}) {
    EXPECT_EQ(moe[part]["impl"], "metrale-cpu") << part;
    EXPECT_EQ(moe[part]["status"], "ok") << part;
    EXPECT_TRUE(moe[part].contains("median_us")) << part;
    EXPECT_TRUE(moe[part]["floor_us"].is_null()) << part;  // no ceilings on the CPU
  }
  EXPECT_TRUE(row["floor_us"].is_null());
}

// Op moe routes the logits the grouped ops route: with softmax top-k the layer picks the same
// experts for each token as route() does, so op moe's grouped calls time the same grouping.
TEST(BenchRouting, TheLayersSoftmaxTopKPicksWhatRoutePicks) {
  for (double skew : {0.0, 1.5}) {
    const ModelShape m{"routed", 32, 32, 24, 4, {}};
    const std::vector<float> logits = router_logits(33, m.experts, skew, 7);
    const std::vector<std::int32_t> ids = oracle_routing(m, logits, {}, 33);
    const Routing from_layer = routing_from_ids(33, m.experts, m.top_k, ids);
    const Routing routed = route(33, m.experts, m.top_k, skew, 7);
    EXPECT_EQ(from_layer.offsets, routed.offsets) << skew;
    EXPECT_EQ(from_layer.sorted_token_ids, routed.sorted_token_ids) << skew;
  }
}

TEST(BenchFloor, AChainAddsItsStepsFloors) {
  const Floor memory_bound{10, 2}, compute_bound{1, 7};
  const Floor chain = chain_of(memory_bound, compute_bound);
  EXPECT_DOUBLE_EQ(chain.bytes_us, 11);
  EXPECT_DOUBLE_EQ(chain.compute_us, 9);
  EXPECT_DOUBLE_EQ(chain.floor_us(), 17);  // 10 + 7, not max(11, 9)
  const Work sum = Work{1, 2} + Work{3, 4};
  EXPECT_DOUBLE_EQ(sum.flops, 4);
  EXPECT_DOUBLE_EQ(sum.bytes, 6);
}

TEST(BenchOps, MoeIsAnOpAndInTheDefaults) {
  EXPECT_EQ(parse_op("moe"), Op::moe);
  EXPECT_EQ(parse_op("MoE"), Op::moe);
  EXPECT_STREQ(op_name(Op::moe), "moe");
  const std::vector<Op> defaults = default_ops();
  EXPECT_NE(std::find(defaults.begin(), defaults.end(), Op::moe), defaults.end());
  try {
    parse_op("moes");
    FAIL() << "an unknown op was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("gate_up, down, dense, pack, pack_unit, moe"),
              std::string::npos)
        << e.what();
  }
  EXPECT_DOUBLE_EQ(moe_target(63), 1.15);
  EXPECT_DOUBLE_EQ(moe_target(64), 1.10);
}

// pack_unit, the seeds' form of pack: an op of its own, token-independent like pack, never a
// default.
TEST(BenchOps, PackUnitIsAnOpOutsideTheDefaults) {
  EXPECT_EQ(parse_op("pack_unit"), Op::pack_unit);
  EXPECT_EQ(parse_op("Pack_Unit"), Op::pack_unit);
  EXPECT_STREQ(op_name(Op::pack_unit), "pack_unit");
  EXPECT_EQ(parse_op("pack"), Op::pack);
  EXPECT_TRUE(is_pack(Op::pack));
  EXPECT_TRUE(is_pack(Op::pack_unit));
  EXPECT_FALSE(is_pack(Op::dense));
  const std::vector<Op> defaults = default_ops();
  EXPECT_EQ(std::find(defaults.begin(), defaults.end(), Op::pack_unit), defaults.end());
}

TEST(BenchRouting, RowsPerExpertAreTheGroupSizes) {
  const Routing r = route(9, 5, 2, 0.0, 3);
  const std::vector<int> rows = r.rows_per_expert();
  ASSERT_EQ(rows.size(), 5u);
  for (int e = 0; e < 5; ++e) EXPECT_EQ(rows[e], r.offsets[e + 1] - r.offsets[e]) << e;
}

// The bf16-grouped (CUTLASS) arm is registered only in a CUTLASS build: there it is in the
// default set and --impls takes its name; elsewhere --impls refuses it, saying why.
TEST(BenchImpls, Bf16GroupedExistsOnlyInACutlassBuild) {
  const std::vector<Impl> defaults = default_impls();
  const bool by_default =
      std::find(defaults.begin(), defaults.end(), Impl::bf16_grouped) != defaults.end();
  EXPECT_EQ(by_default, kBf16GroupedBuilt);
  EXPECT_STREQ(impl_label(Impl::bf16_grouped), "bf16-grouped (CUTLASS)");
  std::string unknown;
  try {
    parse_impl("nonesuch");
  } catch (const Error& e) {
    unknown = e.what();
  }
  EXPECT_EQ(unknown.find("bf16-grouped") != std::string::npos, kBf16GroupedBuilt) << unknown;
  if (kBf16GroupedBuilt) {
    EXPECT_EQ(parse_impl("bf16-grouped"), Impl::bf16_grouped);
    EXPECT_EQ(parse_impl("BF16-grouped (CUTLASS)"), Impl::bf16_grouped);
    return;
  }
  try {
    parse_impl("bf16-grouped");
    FAIL() << "bf16-grouped was accepted by a build without CUTLASS";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::not_built) << e.what();
    EXPECT_NE(std::string(e.what()).find("only in a CUTLASS build"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace metrale::bench
