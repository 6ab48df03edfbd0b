// Issue 11, item 9: the versioned structs of the C ABI. struct_size is checked (0, the size of a
// zeroed struct, and a size from a newer header are refused with a message naming the field);
// a caller built against the layout without `device` keeps working on the current device; a
// device index below -1 is refused.
#include <cstddef>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "api_test_util.hpp"
#include "metrale/metrale.h"
#include "seed_arrays.hpp"

namespace metrale {
namespace {

std::string last_error() {
  return metrale_last_error();
}

struct PackCall {
  std::vector<std::uint16_t> w = std::vector<std::uint16_t>(8 * 32, 0x3F80);
  std::vector<std::uint8_t> packed = std::vector<std::uint8_t>(8 * 16);
  std::vector<std::uint8_t> scale = std::vector<std::uint8_t>(2 * 8);
  float scale_2 = 0.0f;
  metrale_status operator()(const metrale_exec* exec) {
    return metrale_pack_bf16_weight_to_nvfp4_ex(w.data(), packed.data(), scale.data(), &scale_2, 8,
                                                32, exec);
  }
};

TEST(AbiVersion, MacrosAgreeWithTheLibrary) {
  EXPECT_EQ(metrale_abi_version(), METRALE_ABI_VERSION);
  const std::string version = std::to_string(METRALE_VERSION_MAJOR) + "." +
                              std::to_string(METRALE_VERSION_MINOR) + "." +
                              std::to_string(METRALE_VERSION_PATCH);
  EXPECT_EQ(std::string(metrale_version()), version);
}

TEST(AbiVersion, ExecStructSizeIsChecked) {
  PackCall pack;
  metrale_exec exec = METRALE_EXEC_INIT;
  exec.backend = METRALE_BACKEND_CPU;
  EXPECT_EQ(pack(&exec), METRALE_STATUS_OK) << last_error();
  // A caller built before `device` existed: its struct ends there, and it still runs.
  exec.struct_size = offsetof(metrale_exec, device);
  exec.device = 12345;  // beyond the caller's struct: must not be read
  EXPECT_EQ(pack(&exec), METRALE_STATUS_OK) << last_error();
  exec.struct_size = 0;
  EXPECT_EQ(pack(&exec), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_pack_bf16_weight_to_nvfp4_ex: exec->struct_size = 0, expected "
            "sizeof(metrale_exec) = " +
                std::to_string(sizeof(metrale_exec)) +
                " (set it with METRALE_EXEC_INIT; a struct from an older metrale.h has at least " +
                std::to_string(offsetof(metrale_exec, device)) + " bytes)");
  exec.struct_size = sizeof(metrale_exec) + 8;
  EXPECT_EQ(pack(&exec), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("exec->struct_size = " + std::to_string(sizeof(metrale_exec) + 8) +
                              " is larger than this library's metrale_exec"),
            std::string::npos)
      << last_error();
  EXPECT_NE(last_error().find("built against a newer metrale.h"), std::string::npos);
  // Between the two layouts: the struct would end inside `device`, whose bytes past it are not
  // the caller's (41 once read device 0 as -256).
  exec.struct_size = offsetof(metrale_exec, device) + 1;
  exec.device = 0;
  EXPECT_EQ(pack(&exec), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("exec->struct_size = " +
                              std::to_string(offsetof(metrale_exec, device) + 1) +
                              " ends inside exec->device"),
            std::string::npos)
      << last_error();
}

TEST(AbiVersion, DeviceIndexBelowMinusOneIsRefused) {
  PackCall pack;
  metrale_exec exec = METRALE_EXEC_INIT;
  exec.device = -2;
  EXPECT_EQ(pack(&exec), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(),
            "metrale_pack_bf16_weight_to_nvfp4_ex: exec->device = -2, expected a CUDA device "
            "index >= 0 or -1 (METRALE_DEVICE_CURRENT)");
  // The CPU backend runs on the host: a device index is not its concern.
  exec.backend = METRALE_BACKEND_CPU;
  exec.device = 3;
  EXPECT_EQ(pack(&exec), METRALE_STATUS_OK) << last_error();
}

TEST(AbiVersion, GroupsStructSizeIsChecked) {
  test::SeedArrays s;
  const std::vector<std::int32_t> offsets = {0, 4, 9};
  metrale_groups groups = METRALE_GROUPS_INIT;
  groups.offsets = offsets.data();
  groups.num_experts = 2;
  groups.m_total = 16;
  const metrale_expert_weights proj{s.packed_ptrs.data(), s.scale_ptrs.data(), s.s2.data()};
  void* out[1] = {s.c.data()};
  metrale_exec cpu = METRALE_EXEC_INIT;
  cpu.backend = METRALE_BACKEND_CPU;
  auto call = [&] {
    return metrale_nvfp4_grouped_ex(s.a.data(), 16, nullptr, &proj, out, 1, METRALE_SCALE_SFB,
                                    &groups, 8, 32, &cpu);
  };
  EXPECT_EQ(call(), METRALE_STATUS_OK) << last_error();
  groups.struct_size = sizeof(metrale_groups) - 4;
  EXPECT_EQ(call(), METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("metrale_nvfp4_grouped_ex: groups->struct_size = " +
                                   std::to_string(sizeof(metrale_groups) - 4) +
                                   ", expected sizeof(metrale_groups)",
                               0),
            0u)
      << last_error();
  size_t bytes = 0;
  EXPECT_EQ(metrale_nvfp4_grouped_workspace_size(METRALE_BACKEND_CPU, &groups, 8, 32, 1, &bytes),
            METRALE_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace metrale
