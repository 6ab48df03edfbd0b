// The shared workspace: allocated lazily (nothing until the first call), once, by whichever of
// many racing threads comes first; sized by METRALE_WORKSPACE_MB; and the workspace a call runs
// with: the caller's (too small: workspace_too_small naming both sizes) or the shared one.
#include "core/workspace.hpp"

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "api/select.hpp"
#include "api_test_util.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "metrale/metrale.h"

namespace metrale {
namespace {

using test::ScopedEnv;

std::atomic<int> g_allocations{0};

// Slow on purpose, like cudaMalloc: racing threads all arrive while the first one allocates.
void* counting_allocate(std::size_t bytes) {
  ++g_allocations;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return core::allocate_host(bytes);
}

std::size_t four_kib() {
  return 4096;
}

TEST(Workspace, LazyBufferAllocatesOnFirstUseOnly) {
  g_allocations = 0;
  core::LazyBuffer buffer(counting_allocate, core::release_host);
  EXPECT_FALSE(buffer.allocated());
  EXPECT_EQ(g_allocations, 0) << "constructing must not allocate";
  const core::Buffer first = buffer.get(four_kib);
  EXPECT_TRUE(buffer.allocated());
  EXPECT_NE(first.ptr, nullptr);
  EXPECT_EQ(first.size, 4096u);
  const core::Buffer second = buffer.get(four_kib);
  EXPECT_EQ(second.ptr, first.ptr);
  EXPECT_EQ(g_allocations, 1);
}

TEST(Workspace, LazyBufferIsThreadSafe) {
  for (int trial = 0; trial < 20; ++trial) {
    g_allocations = 0;
    core::LazyBuffer buffer(counting_allocate, core::release_host);
    constexpr int kThreads = 16;
    std::vector<void*> seen(kThreads);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        while (!go) std::this_thread::yield();
        seen[t] = buffer.get(four_kib).ptr;
      });
    }
    go = true;
    for (auto& th : threads) th.join();
    EXPECT_EQ(g_allocations, 1) << "trial " << trial;
    EXPECT_EQ(buffer.allocation_count(), 1);
    EXPECT_EQ(std::set<void*>(seen.begin(), seen.end()).size(), 1u) << "trial " << trial;
  }
}

void* failing_allocate(std::size_t) {
  fail(Status::cuda_error, "allocation refused");
}

TEST(Workspace, FailedAllocationCanBeRetried) {
  core::LazyBuffer buffer(failing_allocate, core::release_host);
  EXPECT_THROW(buffer.get(four_kib), Error);
  EXPECT_FALSE(buffer.allocated());
  EXPECT_THROW(buffer.get(four_kib), Error);
  EXPECT_EQ(buffer.allocation_count(), 0);
}

TEST(Workspace, SizeFromEnvironment) {
  {
    ScopedEnv env("METRALE_WORKSPACE_MB", std::nullopt);
    EXPECT_EQ(core::workspace_bytes(), std::size_t{512} << 20);
  }
  {
    ScopedEnv env("METRALE_WORKSPACE_MB", "64");
    EXPECT_EQ(core::workspace_bytes(), std::size_t{64} << 20);
  }
  for (const char* bad : {"abc", "-5", "12MB", "99999999999"}) {
    ScopedEnv env("METRALE_WORKSPACE_MB", bad);
    try {
      core::workspace_bytes();
      ADD_FAILURE() << "accepted METRALE_WORKSPACE_MB=" << bad;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("METRALE_WORKSPACE_MB = '") + bad +
                    "', expected a whole number of megabytes in [0, 1048576]");
    }
  }
}

// The process-wide CPU workspace: one pointer, whichever thread asks, through both APIs.
TEST(Workspace, SharedCpuWorkspaceIsOneBuffer) {
  constexpr int kThreads = 8;
  std::vector<void*> ptrs(kThreads);
  std::vector<size_t> sizes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      EXPECT_EQ(metrale_workspace_get(METRALE_BACKEND_CPU, &ptrs[t], &sizes[t]), METRALE_STATUS_OK);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(core::shared_workspace_allocated(Backend::cpu));
  void* cpp_ptr = nullptr;
  std::size_t cpp_size = 0;
  EXPECT_TRUE(test::succeeds(shared_workspace(Backend::cpu, &cpp_ptr, &cpp_size)));
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(ptrs[t], cpp_ptr);
    EXPECT_EQ(sizes[t], cpp_size);
  }
  EXPECT_NE(cpp_ptr, nullptr);
  EXPECT_EQ(metrale_workspace_get(METRALE_BACKEND_CPU, nullptr, &cpp_size),
            METRALE_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(metrale_last_error()),
            "metrale_workspace_get: workspace is null, expected a valid pointer");
}

TEST(Workspace, CallerWorkspace) {
  alignas(16) static unsigned char scratch[256];
  const Exec small{Backend::cuda, scratch, 128, nullptr};
  try {
    api::select_workspace("nvfp4_grouped_down", small, 4096);
    ADD_FAILURE() << "a 128-byte workspace accepted for 4096 bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::workspace_too_small);
    EXPECT_STREQ(e.what(), "nvfp4_grouped_down: workspace_size = 128 bytes < 4096 bytes needed");
  }
  const core::Buffer ws = api::select_workspace("t", Exec{Backend::cuda, scratch, 256}, 256);
  EXPECT_EQ(ws.ptr, scratch);
  EXPECT_EQ(ws.size, 256u);
  try {
    api::select_workspace("t", Exec{Backend::cuda, nullptr, 64}, 0);
    ADD_FAILURE() << "null workspace with a size accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_STREQ(e.what(),
                 "t: workspace is null with workspace_size = 64, expected a buffer of "
                 "that size (or size 0 for the shared workspace)");
  }
  try {
    api::select_workspace("t", Exec{Backend::cuda, scratch + 8, 64}, 0);
    ADD_FAILURE() << "misaligned workspace accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not 16-byte aligned"), std::string::npos);
  }
  // A call that needs no scratch never allocates the shared workspace.
  const core::Buffer none = api::select_workspace("t", Exec{Backend::cuda}, 0);
  EXPECT_EQ(none.ptr, nullptr);
  EXPECT_EQ(none.size, 0u);
}

TEST(Workspace, DeviceWorkspaceNeedsCuda) {
  if (backend_built(Backend::cuda)) GTEST_SKIP() << "needs a CPU-only build (no device buffer)";
  try {
    api::select_workspace("t", Exec{Backend::cuda}, 1);
    ADD_FAILURE() << "a device workspace without the CUDA backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::not_built);
  }
}

}  // namespace
}  // namespace metrale
