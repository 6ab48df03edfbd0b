// Issue 11, item 5, on the GPU: the CUDA quantizer refuses NaN and ±Inf weights with
// invalid_argument and the CPU backend's message, naming the lowest flat index, whichever tile
// the device meets first (its quantize pass runs the tensor from the end). Through every entry
// point that reaches it: the seed-shaped C call (automatic backend), the _ex C call and the C++
// API, each in both forms. What a refusal may write (docs/api.md): with scale_2 computed,
// nothing (outputs keep their poison); in the seeds' form (scale_2 = 1) packed_t and scale_t
// within their sizes. The guard bands around every buffer hold in both. On both quantize kernels
// (METRALE_CUDA_QUANTIZER: proven, lean).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda_test_support.hpp"
#include "metrale/metrale.h"

#ifdef METRALE_HAS_CUDA
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "check/buffers.hpp"
#include "check/scoped_kernel.hpp"
#endif

namespace metrale::cuda_test {
namespace {

#ifdef METRALE_HAS_CUDA

constexpr bf16_bits kOne = 0x3F80;
constexpr bf16_bits kNan = 0x7FC0;
constexpr bf16_bits kPlusInf = 0x7F80;
constexpr bf16_bits kMinusInf = 0xFF80;

enum class Entry { seed_c, ex_c, cpp };
enum class Form { seed, recipe };  // scale_2 = 1, or computed into scale_2_out

const char* who(Entry entry) {
  switch (entry) {
    case Entry::seed_c: return "metrale_pack_bf16_weight_to_nvfp4_t";
    case Entry::ex_c: return "metrale_pack_bf16_weight_to_nvfp4_ex";
    default: return "pack_bf16_weight_to_nvfp4_t";
  }
}

// One quantizer call's device buffers, outputs poisoned, every buffer between guard bands.
struct PackBuffers {
  int n, k;
  check::DeviceBuffer weight, packed, scale, scale_2;
  PackBuffers(int n_, int k_, const std::vector<bf16_bits>& w)
      : n(n_),
        k(k_),
        weight(std::size_t(n_) * k_ * 2, "weight_bf16"),
        packed(std::size_t(n_) * k_ / 2, "packed_t"),
        scale(std::size_t(n_) * k_ / 16, "scale_t"),
        scale_2(sizeof(float), "scale_2_out") {
    weight.upload(w);
    packed.poison_bytes(0x22);
    scale.poison_bytes(0x38);
    scale_2.poison_bytes(0xAB);
  }

  // Status and message of one call through `entry`.
  std::pair<Status, std::string> call(Entry entry, Form form) {
    float* s2 = form == Form::recipe ? scale_2.as<float>() : nullptr;
    if (entry == Entry::cpp) {
      const Result r =
          pack_bf16_weight_to_nvfp4_t(PackNvfp4{weight.as<bf16_bits>(), packed.as<std::uint8_t>(),
                                                scale.as<std::uint8_t>(), s2, n, k},
                                      kCuda);
      return {r.status, r.message};
    }
    metrale_status status = METRALE_STATUS_OK;
    if (entry == Entry::seed_c) {
      status = metrale_pack_bf16_weight_to_nvfp4_t(weight.data(), packed.data(), scale.data(), n, k,
                                                   nullptr);
    } else {
      metrale_exec exec = METRALE_EXEC_INIT;
      exec.backend = METRALE_BACKEND_CUDA;
      status = metrale_pack_bf16_weight_to_nvfp4_ex(weight.data(), packed.data(), scale.data(), s2,
                                                    n, k, &exec);
    }
    return {static_cast<Status>(status), status == METRALE_STATUS_OK ? "" : metrale_last_error()};
  }

  // What a refusal may have written: nothing with scale_2 computed; never outside the buffers.
  void expect_written_as_promised(Form form) const {
    if (form == Form::recipe) {
      for (std::uint8_t byte : packed.download<std::uint8_t>()) ASSERT_EQ(byte, 0x22) << "packed_t";
      for (std::uint8_t byte : scale.download<std::uint8_t>()) ASSERT_EQ(byte, 0x38) << "scale_t";
    }
    for (std::uint8_t byte : scale_2.download<std::uint8_t>()) ASSERT_EQ(byte, 0xAB) << "scale_2";
    EXPECT_EQ(check::check_all_guards({&weight, &packed, &scale, &scale_2}), "");
  }
};

std::string value_name(bf16_bits bits) {
  if ((bits & 0x7FFF) > kPlusInf) return "nan";
  return bits & 0x8000 ? "-inf" : "inf";
}

// Every entry point and form refuses `w` naming index `bad`.
void expect_refused_at(int n, int k, const std::vector<bf16_bits>& w, std::size_t bad) {
  const std::string want = fmt::format(
      ": weight_bf16[{}] = {} (row {}, column {}) is not finite, expected finite weights (NVFP4 "
      "has no NaN or Inf)",
      bad, value_name(w[bad]), bad / k, bad % k);
  for (const char* quantizer : kQuantizers) {
    const check::ScopedCudaQuantizer chosen(quantizer);
    for (Entry entry : {Entry::seed_c, Entry::ex_c, Entry::cpp}) {
      for (Form form : {Form::seed, Form::recipe}) {
        if (entry == Entry::seed_c && form == Form::recipe) continue;  // the seed form: no scale_2
        SCOPED_TRACE(fmt::format("{} [{} x {}], scale_2 {}, {} quantizer", who(entry), n, k,
                                 form == Form::recipe ? "computed" : "= 1", quantizer));
        PackBuffers b(n, k, w);
        const auto [status, message] = b.call(entry, form);
        EXPECT_EQ(status, Status::invalid_argument) << message;
        EXPECT_EQ(message, who(entry) + want);
        b.expect_written_as_promised(form);
      }
    }
  }
}

// Shapes: one tile's columns and less (K = 48), a K tail past a 256-element tile (K = 272), and
// enough tiles for several CTAs and the reverse tile order to matter.
struct Shape {
  int n, k;
};
constexpr Shape kShapes[] = {{5, 48}, {3, 272}, {70, 528}};

TEST(NonFiniteWeight, OneNanAtFirstMiddleLastAndKTail) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const Shape s : kShapes) {
    const std::size_t count = std::size_t(s.n) * s.k;
    const std::size_t k_tail = std::size_t(s.n / 2) * s.k + s.k - 1;  // the last column of a row
    for (std::size_t bad : {std::size_t{0}, count / 2 + 3, count - 1, k_tail}) {
      std::vector<bf16_bits> w(count, kOne);
      w[bad] = kNan;
      expect_refused_at(s.n, s.k, w, bad);
    }
  }
}

TEST(NonFiniteWeight, PlusAndMinusInfinity) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const Shape s : kShapes) {
    const std::size_t count = std::size_t(s.n) * s.k;
    for (bf16_bits inf : {kPlusInf, kMinusInf}) {
      std::vector<bf16_bits> w(count, kOne);
      w[count / 3] = inf;
      expect_refused_at(s.n, s.k, w, count / 3);
    }
  }
}

TEST(NonFiniteWeight, AllNanNamesIndexZero) {
  METRALE_SKIP_WITHOUT_GPU();
  for (const Shape s : kShapes)
    expect_refused_at(s.n, s.k, std::vector<bf16_bits>(std::size_t(s.n) * s.k, kNan), 0);
}

// The lowest index wins over one the device meets earlier: the quantize pass starts at the last
// tile, and the scan's threads each see a different stride of the tensor.
TEST(NonFiniteWeight, LowestIndexWins) {
  METRALE_SKIP_WITHOUT_GPU();
  const Shape s{70, 528};
  const std::size_t count = std::size_t(s.n) * s.k;
  std::vector<bf16_bits> w(count, kOne);
  w[count - 1] = kNan;
  w[count - 600] = kMinusInf;
  w[777] = kPlusInf;
  w[778] = kNan;
  expect_refused_at(s.n, s.k, w, 777);
}

// A finite weight with the largest finite magnitude next to the non-finite pattern is accepted.
TEST(NonFiniteWeight, LargestFiniteIsAccepted) {
  METRALE_SKIP_WITHOUT_GPU();
  std::vector<bf16_bits> w(std::size_t(8) * 64, kOne);
  w[17] = 0x7F7F;  // the largest finite bf16
  w[18] = 0xFF7F;
  PackBuffers b(8, 64, w);
  for (const char* quantizer : kQuantizers) {
    const check::ScopedCudaQuantizer chosen(quantizer);
    for (Form form : {Form::seed, Form::recipe}) {
      const auto [status, message] = b.call(Entry::cpp, form);
      EXPECT_EQ(status, Status::ok) << message << " (" << quantizer << " quantizer)";
    }
  }
}

// The check waits for the stream, which a graph capture cannot hold: refused before anything is
// enqueued, and the capture itself is left valid.
TEST(NonFiniteWeight, GraphCaptureIsRefused) {
  METRALE_SKIP_WITHOUT_GPU();
  PackBuffers b(8, 64, std::vector<bf16_bits>(std::size_t(8) * 64, kOne));
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Result r = pack_bf16_weight_to_nvfp4_t(
      PackNvfp4{b.weight.as<bf16_bits>(), b.packed.as<std::uint8_t>(), b.scale.as<std::uint8_t>(),
                b.scale_2.as<float>(), 8, 64},
      Exec{Backend::cuda, nullptr, 0, stream});
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  EXPECT_EQ(r.status, Status::unsupported) << r.message;
  EXPECT_NE(r.message.find("pack_bf16_weight_to_nvfp4_t: cannot be captured in a CUDA graph"),
            std::string::npos)
      << r.message;
  b.expect_written_as_promised(Form::recipe);
}

#else

TEST(NonFiniteWeight, NeedsTheCudaBackend) {
  GTEST_SKIP() << "the CUDA backend was not built";
}

#endif

}  // namespace
}  // namespace metrale::cuda_test
