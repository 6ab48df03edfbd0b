// Event- and graph-based device timing (timing.hpp).
//
// 1. One call, synchronised: errors surface here, lazy initialisation (plans, handles) is paid.
// 2. Warm-up: calls for `warmup_ms`, timed together; their mean is the pilot estimate.
// 3. Iterations per sample: about kTargetSampleUs of work (CUDA events resolve ~0.5 µs), rounded
//    up to whole rotations; samples: the budget over the sample time, within [3, 40].
// 4. Short calls (pilot < kGraphBelowUs): capture one sample's calls into a CUDA graph and time
//    each replay. If capture fails (a library call that cannot be captured), fall back to 5.
// 5. Otherwise: events around each sample's calls, enqueued back to back, one sync at the end.
#include "bench/cuda/timing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "cuda/cuda_check.hpp"

namespace metrale::bench {
namespace {

constexpr double kTargetSampleUs = 2000;
constexpr double kGraphBelowUs = 5000;
constexpr int kMinSamples = 3;
constexpr int kMaxSamples = 40;
constexpr int kMaxWarmupCalls = 20000;

// Event pairs for all samples, created up front so recording them costs no allocation.
class EventPairs {
 public:
  explicit EventPairs(int n) : start_(n, nullptr), stop_(n, nullptr) {
    for (int i = 0; i < n; ++i) {
      METRALE_CUDA_CHECK(cudaEventCreate(&start_[i]));
      METRALE_CUDA_CHECK(cudaEventCreate(&stop_[i]));
    }
  }
  EventPairs(const EventPairs&) = delete;
  EventPairs& operator=(const EventPairs&) = delete;
  ~EventPairs() {
    for (cudaEvent_t e : start_)
      if (e) cudaEventDestroy(e);
    for (cudaEvent_t e : stop_)
      if (e) cudaEventDestroy(e);
  }
  cudaEvent_t start(int i) const { return start_[i]; }
  cudaEvent_t stop(int i) const { return stop_[i]; }
  float elapsed_ms(int i) const {
    float ms = 0;
    METRALE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_[i], stop_[i]));
    return ms;
  }

 private:
  std::vector<cudaEvent_t> start_, stop_;
};

struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

// Records calls [0, iterations) into g.graph, and instantiates it into g.exec when `instantiate`;
// false (with the reason) when capture is not possible.
bool capture(const Enqueue& call, cudaStream_t stream, int iterations, Graph& g, std::string* why,
             bool instantiate = true) {
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  if (err != cudaSuccess) {
    *why = fmt::format("cudaStreamBeginCapture: {}", cudaGetErrorName(err));
    cudaGetLastError();
    return false;
  }
  std::string failure;
  try {
    for (int i = 0; i < iterations; ++i) call(i);
  } catch (const Error& e) {
    failure = e.what();
  }
  err = cudaStreamEndCapture(stream, &g.graph);  // always end it, even after a failure
  if (failure.empty() && err != cudaSuccess) {
    failure = fmt::format("cudaStreamEndCapture: {}", cudaGetErrorName(err));
  }
  if (failure.empty() && instantiate) {
    err = cudaGraphInstantiate(&g.exec, g.graph, 0);
    if (err != cudaSuccess)
      failure = fmt::format("cudaGraphInstantiate: {}", cudaGetErrorName(err));
  }
  if (!failure.empty()) {
    cudaGetLastError();  // capture errors are not sticky; leave no error behind
    *why = "graph capture failed (" + failure + "), timed with events";
    return false;
  }
  return true;
}

double warm_up(const Enqueue& call, cudaStream_t stream, const TimingPolicy& p, int* counter) {
  EventPairs ev(1);
  // One call alone, timed, gives the size of the warm-up.
  METRALE_CUDA_CHECK(cudaEventRecord(ev.start(0), stream));
  call((*counter)++);
  METRALE_CUDA_CHECK(cudaEventRecord(ev.stop(0), stream));
  METRALE_CUDA_CHECK(cudaEventSynchronize(ev.stop(0)));
  const double single_us = std::max(1e3 * ev.elapsed_ms(0), 0.5);
  const int calls = static_cast<int>(
      std::clamp(p.warmup_ms * 1e3 / single_us, 1.0, static_cast<double>(kMaxWarmupCalls)));
  METRALE_CUDA_CHECK(cudaEventRecord(ev.start(0), stream));
  for (int i = 0; i < calls; ++i) call((*counter)++);
  METRALE_CUDA_CHECK(cudaEventRecord(ev.stop(0), stream));
  METRALE_CUDA_CHECK(cudaEventSynchronize(ev.stop(0)));
  return std::max(1e3 * ev.elapsed_ms(0) / calls, 0.5);
}

}  // namespace

CallNodes count_nodes(const Enqueue& call, cudaStream_t stream) {
  Graph g;
  std::string why;
  if (!capture(call, stream, 1, g, &why, false)) return {};
  std::size_t count = 0;
  if (cudaGraphGetNodes(g.graph, nullptr, &count) != cudaSuccess) return {};
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0 && cudaGraphGetNodes(g.graph, nodes.data(), &count) != cudaSuccess) return {};
  CallNodes c{0, 0, 0};
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    if (cudaGraphNodeGetType(node, &type) != cudaSuccess) return {};
    if (type == cudaGraphNodeTypeKernel) {
      ++c.kernels;
    } else if (type == cudaGraphNodeTypeMemset) {
      ++c.memsets;
    } else {
      ++c.others;
    }
  }
  return c;
}

Stats time_device(const Enqueue& call, cudaStream_t stream, const TimingPolicy& p,
                  std::string* note) {
  int counter = 0;
  call(counter++);
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double pilot_us = warm_up(call, stream, p, &counter);

  const int rotation = std::max(p.rotation, 1);
  int iterations = static_cast<int>(std::clamp(std::round(kTargetSampleUs / pilot_us), 1.0, 1e5));
  iterations = (iterations + rotation - 1) / rotation * rotation;
  const int samples = static_cast<int>(std::clamp(p.budget_ms * 1e3 / (iterations * pilot_us),
                                                  static_cast<double>(kMinSamples),
                                                  static_cast<double>(kMaxSamples)));
  EventPairs ev(samples);
  std::vector<double> per_call(samples);

  std::string why;
  Graph graph;
  if (p.allow_graph && pilot_us < kGraphBelowUs && capture(call, stream, iterations, graph, &why)) {
    METRALE_CUDA_CHECK(cudaGraphUpload(graph.exec, stream));
    METRALE_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));  // warm replay
    for (int s = 0; s < samples; ++s) {
      METRALE_CUDA_CHECK(cudaEventRecord(ev.start(s), stream));
      METRALE_CUDA_CHECK(cudaGraphLaunch(graph.exec, stream));
      METRALE_CUDA_CHECK(cudaEventRecord(ev.stop(s), stream));
    }
    METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int s = 0; s < samples; ++s) per_call[s] = 1e3 * ev.elapsed_ms(s) / iterations;
    return summarize(std::move(per_call), iterations, "graph");
  }
  if (note && !why.empty()) *note = why;
  for (int s = 0; s < samples; ++s) {
    METRALE_CUDA_CHECK(cudaEventRecord(ev.start(s), stream));
    for (int i = 0; i < iterations; ++i) call(counter++);
    METRALE_CUDA_CHECK(cudaEventRecord(ev.stop(s), stream));
  }
  METRALE_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int s = 0; s < samples; ++s) per_call[s] = 1e3 * ev.elapsed_ms(s) / iterations;
  return summarize(std::move(per_call), iterations, "events");
}

}  // namespace metrale::bench
