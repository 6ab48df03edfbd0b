// Device timing of the bench: CUDA events around many back-to-back calls after warm-up, replayed
// from a CUDA graph when a call is short (launch overhead would otherwise be measured), median and
// spread over samples. Weight rotation: call i uses weight copy i % rotation, and a sample always
// covers whole rotations, so every replay streams every copy (cold L2, PERF.md).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "bench/measure.hpp"

namespace metrale::bench {

struct TimingPolicy {
  double budget_ms = 150;   // measured time (samples), after warm-up
  double warmup_ms = 20;    // at least this much work before measuring (clocks, caches, plans)
  int rotation = 1;         // weight copies the calls cycle through
  bool allow_graph = true;  // try CUDA-graph replay when a call is short
};

// Enqueues call number `i` on the stream (weight copy i % rotation). Throws metrale::Error.
using Enqueue = std::function<void(int i)>;

// What one call enqueues (measure.hpp's CallNodes), read from a CUDA graph captured of call 0 and
// never run; all -1 when the call cannot be captured or the graph read. Never throws: a count
// that fails leaves the row's timing alone.
CallNodes count_nodes(const Enqueue& call, cudaStream_t stream);

// Times `call` on `stream`. The first call runs alone and is synchronised, so a failure surfaces
// before any measurement. `note` (optional) receives why a graph was not used when it was tried.
Stats time_device(const Enqueue& call, cudaStream_t stream, const TimingPolicy& policy,
                  std::string* note = nullptr);

}  // namespace metrale::bench
