// The numbers a bench row carries: timing statistics over samples, the work a call does, and the
// floor of PERF.md (the larger of the bytes floor and the compute floor, from ceilings measured
// in the same run). Host only.
#pragma once

#include <string>
#include <vector>

namespace metrale::bench {

// Per-call times (µs) over samples; each sample averages `iterations` back-to-back calls.
struct Stats {
  double median_us = 0, min_us = 0, p10_us = 0, p90_us = 0, max_us = 0;
  int samples = 0;
  int iterations = 0;  // calls per sample
  std::string timing;  // "graph" (CUDA-graph replay), "events" (CUDA events), "host" (CPU)
  // (p90 - p10) / median, in percent: the noise the row reports.
  double spread_pct() const { return median_us > 0 ? 100.0 * (p90_us - p10_us) / median_us : 0; }
};

Stats summarize(std::vector<double> per_call_us, int iterations, std::string timing);

// The nodes one call puts on its stream: kernel launches, memsets, anything else (-1: not
// counted). Issue 9 counts the MoE layer's kernels and memsets as its launches.
struct CallNodes {
  int kernels = -1, memsets = -1, others = -1;
  bool counted() const { return kernels >= 0; }
  int launches() const { return kernels + memsets; }
};

// Minimal traffic and arithmetic of one call.
struct Work {
  double flops = 0;  // 2·rows·N·K (all projections)
  double bytes = 0;  // weights of the active experts at 0.5625 B/param (bf16 for dense) +
                     // activations read + outputs written
};

// Operations run one after the other (the MoE layer: gate_up, then down): their work adds up.
Work operator+(const Work& a, const Work& b);

// A grouped NVFP4 GEMM: `active` experts with weights, `projections` of [n, k] each, `a_rows` rows
// of activations read once (tokens for gate_up, rows for down), `rows` output rows per projection.
Work grouped_work(int active, int projections, int n, int k, int a_rows, int rows);

struct Ceilings {
  bool measured = false;
  double read_gbps = 0;    // streaming read over >= 1 GiB
  double copy_gbps = 0;    // read + write, bytes moved both ways over time
  double bf16_tflops = 0;  // cuBLASLt bf16 8192^3
  Stats read, copy, bf16;
};

struct Floor {
  double bytes_us = 0, compute_us = 0;
  // A chain of operations (chain_of): the sum of the steps' floors, each the larger of its own
  // two, which is more than the larger of the summed bytes and compute floors. 0: one operation.
  double chain_us = 0;
  double floor_us() const {
    if (chain_us > 0) return chain_us;
    return bytes_us > compute_us ? bytes_us : compute_us;
  }
};

// `bandwidth_gbps` is the read ceiling for GEMMs and the copy ceiling for pack.
Floor floor_of(const Work& work, double bandwidth_gbps, double tflops);
// The floor of `a` then `b`: bytes and compute floors summed, and the floor the sum of theirs.
Floor chain_of(const Floor& a, const Floor& b);

}  // namespace metrale::bench
