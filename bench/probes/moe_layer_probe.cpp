// MoE layer probe: moe_forward on the CUDA backend (plain and as a captured graph) against the two
// grouped calls it is measured against (gate_up with host offsets and token ids, down with host
// offsets), on the routing the layer chose (its topk_ids_out), same weights, same stream; then
// the same grouped calls on device offsets (what the layer runs) and the host-offset pair as a
// graph. Random NVFP4 weights, SFB scales, scale_2 = 1; DeepSeek-V3's routing for "dsv3", softmax
// top-k elsewhere. Until `metrale bench --ops moe` records the layer, this is its measurement.
// Build and run on the GPU machine after scripts/gpu_iterate.sh (build/release):
//   g++ -O2 -std=c++20 bench/probes/moe_layer_probe.cpp -Iinclude -Isrc -I/usr/local/cuda/include \
//     build/release/src/libmetrale_internal.a -L/usr/local/cuda/lib64 -lfmt -lcublasLt -lcublas \
//     -lcudart -lpthread -o /tmp/moe_probe
//   /tmp/moe_probe qwen3 128 8 2048 768 1 8 64 512 4096      # name E k H I T...
// PROBE_ONCE=1 adds one profiled layer and pair per T (ncu --profile-from-start off). Add
// --clock-control none --cache-control none --metrics gpu__time_duration.sum for each kernel's
// time at the GPU's own clocks with warm caches (docs/perf.md, 2026-12-02: the T = 1 breakdown);
// ncu's defaults (base clocks, flushed caches) made Qwen3's T = 1 kernels 1.3-1.4x longer.
#include <cuda_runtime.h>
#include <cuda_profiler_api.h>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <algorithm>
#include "metrale/metrale.hpp"
#include "format/layouts.hpp"
using namespace metrale;
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)
struct Proj { std::vector<uint64_t> p, s; std::vector<float> s2; };
Proj make(int E, int n, int k, std::mt19937& rng) {
  Proj r; size_t pb = (size_t)n * k / 2, sb = format::sfb_bytes(n, k);
  uint8_t* d; CK(cudaMalloc(&d, E * (pb + sb)));
  std::vector<uint8_t> h(E * (pb + sb));
  for (size_t e = 0; e < (size_t)E; ++e) {
    for (size_t i = 0; i < pb; ++i) h[e * pb + i] = rng() & 0xFF;
    for (size_t i = 0; i < sb; ++i) h[E * pb + e * sb + i] = 0x30 + rng() % 16;
  }
  CK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice));
  for (int e = 0; e < E; ++e) { r.p.push_back((uint64_t)(d + e * pb)); r.s.push_back((uint64_t)(d + E * pb + e * sb)); r.s2.push_back(1.0f); }
  return r;
}
template <class F> float time_us(F f, cudaStream_t st) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  int n = 20; cudaEventRecord(a, st); for (int i = 0; i < n; ++i) f(); cudaEventRecord(b, st);
  CK(cudaEventSynchronize(b)); float ms; cudaEventElapsedTime(&ms, a, b); return ms * 1000 / n;
}
int main(int argc, char** argv) {
  const char* name = argv[1]; int E = atoi(argv[2]), k = atoi(argv[3]), H = atoi(argv[4]), I = atoi(argv[5]);
  bool dsv3 = std::string(name) == "dsv3";
  std::mt19937 rng(1);
  Proj g = make(E, I, H, rng), u = make(E, I, H, rng), dn = make(E, H, I, rng);
  cudaStream_t st; CK(cudaStreamCreate(&st));
  for (int ai = 6; ai < argc; ++ai) {
    int T = atoi(argv[ai]);
    std::vector<uint16_t> hid((size_t)T * H); for (auto& x : hid) x = 0x3F80 ^ (rng() & 0x80FF);
    std::vector<float> lg((size_t)T * E); std::normal_distribution<float> nd(0, 2); for (auto& x : lg) x = nd(rng);
    std::vector<float> bias(E); for (auto& x : bias) x = 0.01f * (rng() % 5);
    void *dh, *dl, *dout, *dids, *dw, *dbias; size_t S = (size_t)T * k;
    CK(cudaMalloc(&dh, hid.size() * 2)); CK(cudaMalloc(&dl, lg.size() * 4)); CK(cudaMalloc(&dout, (size_t)T * H * 2));
    CK(cudaMalloc(&dids, S * 4)); CK(cudaMalloc(&dw, S * 4)); CK(cudaMalloc(&dbias, E * 4));
    CK(cudaMemcpy(dh, hid.data(), hid.size() * 2, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dl, lg.data(), lg.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbias, bias.data(), E * 4, cudaMemcpyHostToDevice));
    MoeLayer L; L.num_experts = L.num_local_experts = E; L.hidden_size = H; L.intermediate_size = I; L.top_k = k;
    L.gate = {g.p.data(), g.s.data(), g.s2.data()}; L.up = {u.p.data(), u.s.data(), u.s2.data()}; L.down = {dn.p.data(), dn.s.data(), dn.s2.data()};
    if (dsv3) { L.routing = MoeRouting::sigmoid_grouped_topk; L.n_group = 8; L.topk_group = 4; L.routed_scaling_factor = 2.5f; L.correction_bias = (float*)dbias; }
    MoeTokens tk; tk.num_tokens = T; tk.hidden = (bf16_bits*)dh; tk.router_logits = dl; tk.out = (bf16_bits*)dout; tk.topk_ids_out = (int32_t*)dids; tk.topk_weights_out = (float*)dw;
    size_t ws = 0; moe_workspace_size(Backend::cuda, L, T, &ws); void* dws; CK(cudaMalloc(&dws, ws));
    Exec ex{Backend::cuda, dws, ws, st};
    Result r = moe_forward(L, tk, ex); if (!r.ok()) { printf("moe: %s\n", r.message.c_str()); return 1; }
    CK(cudaStreamSynchronize(st));
    float t_layer = time_us([&] { moe_forward(L, tk, ex); }, st);
    // graph
    cudaGraph_t gr; cudaGraphExec_t gi;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal)); moe_forward(L, tk, ex); CK(cudaStreamEndCapture(st, &gr)); CK(cudaGraphInstantiate(&gi, gr, 0));
    float t_graph = time_us([&] { cudaGraphLaunch(gi, st); }, st);
    std::vector<int32_t> ids(S); CK(cudaMemcpy(ids.data(), dids, S * 4, cudaMemcpyDeviceToHost));
    std::vector<int32_t> off(E + 1, 0), tok; for (auto id : ids) off[id + 1]++; for (int e = 0; e < E; ++e) off[e + 1] += off[e];
    std::vector<int32_t> cur(off.begin(), off.end() - 1); tok.resize(S);
    for (size_t s = 0; s < S; ++s) tok[cur[ids[s]]++] = s / k;
    void *dtok, *dgate, *dup, *dact, *ddown; CK(cudaMalloc(&dtok, S * 4)); CK(cudaMemcpy(dtok, tok.data(), S * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dgate, S * I * 2)); CK(cudaMalloc(&dup, S * I * 2)); CK(cudaMalloc(&dact, S * I * 2)); CK(cudaMalloc(&ddown, S * H * 2));
    CK(cudaMemset(dact, 0, S * I * 2));
    GroupedNvfp4 gu{}; gu.a = (bf16_bits*)dh; gu.a_rows = T; gu.token_ids = (int32_t*)dtok; gu.proj[0] = L.gate; gu.proj[1] = L.up;
    gu.out[0] = (bf16_bits*)dgate; gu.out[1] = (bf16_bits*)dup; gu.proj_count = 2; gu.scale_layout = ScaleLayout::sfb;
    gu.groups = {off.data(), false, E, (int)S, 0}; gu.n = I; gu.k = H;
    GroupedNvfp4 dd{}; dd.a = (bf16_bits*)dact; dd.a_rows = S; dd.proj[0] = L.down; dd.out[0] = (bf16_bits*)ddown; dd.proj_count = 1;
    dd.scale_layout = ScaleLayout::sfb; dd.groups = {off.data(), false, E, (int)S, 0}; dd.n = H; dd.k = I;
    Exec ex2{Backend::cuda, dws, ws, st};
    r = nvfp4_grouped(gu, ex2); if (!r.ok()) { printf("gu: %s\n", r.message.c_str()); return 1; }
    float t_gu = time_us([&] { nvfp4_grouped(gu, ex2); }, st);
    float t_dn = time_us([&] { nvfp4_grouped(dd, ex2); }, st);
    // the same grouped calls on device offsets (what the layer runs)
    void* doff; CK(cudaMalloc(&doff, (E + 1) * 4)); CK(cudaMemcpy(doff, off.data(), (E + 1) * 4, cudaMemcpyHostToDevice));
    GroupedNvfp4 gud = gu, ddd = dd; gud.groups = {(int32_t*)doff, true, E, (int)S, T}; ddd.groups = gud.groups;
    float t_gud = time_us([&] { nvfp4_grouped(gud, ex2); }, st);
    float t_ddd = time_us([&] { nvfp4_grouped(ddd, ex2); }, st);
    cudaGraph_t g2; cudaGraphExec_t g2i;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal)); nvfp4_grouped(gu, ex2); nvfp4_grouped(dd, ex2); CK(cudaStreamEndCapture(st, &g2)); CK(cudaGraphInstantiate(&g2i, g2, 0));
    float t_pair_graph = time_us([&] { cudaGraphLaunch(g2i, st); }, st);
    printf("   device offsets: gate_up %.1f + down %.1f = %.1f; host-offset pair as a graph %.1f\n", t_gud, t_ddd, t_gud + t_ddd, t_pair_graph);
    if (getenv("PROBE_ONCE")) { cudaDeviceSynchronize(); cudaProfilerStart(); moe_forward(L, tk, ex); nvfp4_grouped(gu, ex2); nvfp4_grouped(dd, ex2); cudaDeviceSynchronize(); cudaProfilerStop(); }
    printf("%s T=%d: layer %.1f us (graph %.1f), gate_up %.1f + down %.1f = %.1f; ratio %.3f (graph %.3f)\n", name, T, t_layer, t_graph, t_gu, t_dn, t_gu + t_dn, t_layer / (t_gu + t_dn), t_graph / (t_gu + t_dn));
    cudaFree(dh); cudaFree(dl); cudaFree(dout); cudaFree(dids); cudaFree(dw); cudaFree(dws); cudaFree(dtok); cudaFree(dgate); cudaFree(dup); cudaFree(dact); cudaFree(ddown); cudaFree(dbias);
    cudaGraphExecDestroy(gi); cudaGraphDestroy(gr);
  }
}
