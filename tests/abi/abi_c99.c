/* The C ABI from C99: includes metrale.h and calls every exported function (the symbol test checks
 * that each exported name appears in this file). The CPU family computes tiny GEMMs and checks
 * the numbers exactly (inputs on the NVFP4 grid, small integers); the device families, on a
 * machine without a GPU or without the backend, must answer a non-OK status with a message. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "metrale/metrale.h"

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, " [last error: %s]\n", metrale_last_error());            \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

enum { N = 3, K = 32, KB = K / 16, M = 2, ROWS = 3, EXPERTS = 2, SFB_BYTES = 128 * 4 };

/* bf16 is the top half of an fp32; exact for every value used here. */
static uint16_t bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t bits(const void* p) {
  return (uint64_t)(uintptr_t)p;
}

/* Weights of expert e on the e2m1 grid, each 16-block holding a ±6 (so its e4m3 scale is 1.0,
 * byte 0x38, with scale_2 = 1), and their expected codes. */
static const float kGrid[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

static void make_weights(int e, float w[N * K], uint8_t codes[N * K]) {
  int n, k;
  for (n = 0; n < N; ++n) {
    for (k = 0; k < K; ++k) {
      int idx = (n * 5 + k * 3 + e) % 8;
      int neg = ((n + k + e) % 3) == 0 && idx != 0;
      if (k % 16 == 0) idx = 7;
      w[n * K + k] = neg ? -kGrid[idx] : kGrid[idx];
      codes[n * K + k] = (uint8_t)(idx | (neg ? 8 : 0));
    }
  }
}

static float act_value(int row, int k) {
  return (float)(((row * 7 + k * 5) % 7) - 3);
}

/* out[i, n] = sum_k act[row_i, k] · w[n, k] · scale_2, exact in double. */
static double dot(int row, const float* w, int n, float scale_2) {
  double sum = 0;
  int k;
  for (k = 0; k < K; ++k) sum += (double)act_value(row, k) * w[n * K + k];
  return sum * scale_2;
}

struct expert {
  float w[N * K];
  uint8_t codes[N * K];
  uint16_t w_bf16[N * K];
  uint8_t packed[N * K / 2];
  uint8_t scale[KB * N];
  uint8_t sfb[SFB_BYTES];
};

static struct expert experts[EXPERTS];
static uint16_t act[8 * K];

static void test_cpu_pack(void) {
  int e, i, n, b;
  for (e = 0; e < EXPERTS; ++e) {
    struct expert* x = &experts[e];
    make_weights(e, x->w, x->codes);
    for (i = 0; i < N * K; ++i) x->w_bf16[i] = bf16(x->w[i]);
    CHECK(metrale_cpu_pack_bf16_weight_to_nvfp4_t(x->w_bf16, x->packed, x->scale, N, K, NULL) ==
              METRALE_STATUS_OK,
          "pack expert %d", e);
    for (i = 0; i < N * K; i += 2) {
      const uint8_t want = (uint8_t)(x->codes[i] | (x->codes[i + 1] << 4));
      CHECK(x->packed[i / 2] == want, "packed[%d] = 0x%02x, expected 0x%02x", i / 2,
            x->packed[i / 2], want);
    }
    for (i = 0; i < KB * N; ++i) CHECK(x->scale[i] == 0x38, "scale[%d] = 0x%02x", i, x->scale[i]);
    memset(x->sfb, 0xAA, sizeof x->sfb);
    CHECK(metrale_cpu_pack_weight_sfb(x->scale, x->sfb, N, K, 1, NULL) == METRALE_STATUS_OK,
          "sfb expert %d", e);
    /* offset(n, b) = n·16 + b for n < 32, b < 4; everything else is zero padding. */
    for (i = 0; i < SFB_BYTES; ++i) {
      n = i / 16;
      b = i % 16;
      CHECK(x->sfb[i] == ((n < N && b < KB) ? x->scale[b * N + n] : 0), "sfb[%d] = 0x%02x", i,
            x->sfb[i]);
    }
  }
}

static void test_cpu_layouts(void) {
  uint8_t n_major[N * KB], sfb[SFB_BYTES], kn[K / 2 * N], back[N * K / 2];
  int n, b, j;
  for (n = 0; n < N; ++n)
    for (b = 0; b < KB; ++b) n_major[n * KB + b] = experts[0].scale[b * N + n];
  CHECK(metrale_cpu_pack_weight_sfb(n_major, sfb, N, K, 0, NULL) == METRALE_STATUS_OK,
        "sfb [N, K/16]");
  CHECK(memcmp(sfb, experts[0].sfb, SFB_BYTES) == 0, "both source layouts give the same SFB");
  CHECK(metrale_cpu_transpose_nvfp4_packed_kton(experts[1].packed, kn, N, K, NULL) ==
            METRALE_STATUS_OK,
        "kton");
  for (n = 0; n < N; ++n)
    for (j = 0; j < K / 2; ++j)
      CHECK(kn[j * N + n] == experts[1].packed[n * K / 2 + j], "kton byte (%d, %d)", n, j);
  CHECK(metrale_cpu_transpose_nvfp4_packed_ntok(kn, back, N, K, NULL) == METRALE_STATUS_OK, "ntok");
  CHECK(memcmp(back, experts[1].packed, sizeof back) == 0, "ntok inverts kton");
}

static void test_cpu_gemms(void) {
  uint16_t out[M * N], out4[M * N];
  int i, n;
  for (i = 0; i < 8 * K; ++i) act[i] = bf16(act_value(i / K, i % K));
  CHECK(metrale_cpu_bf16_gemm_act_weight_t(act, experts[0].w_bf16, out, M, N, K, NULL, 0, NULL) ==
            METRALE_STATUS_OK,
        "dense");
  CHECK(strcmp(metrale_last_error(), "") == 0, "a success clears the last error");
  CHECK(metrale_cpu_nvfp4_gemm_bf16_act_weight_t(act, experts[0].packed, experts[0].scale, 0.5f,
                                                 out4, M, N, K, NULL, 0, NULL) == METRALE_STATUS_OK,
        "nvfp4");
  for (i = 0; i < M; ++i) {
    for (n = 0; n < N; ++n) {
      CHECK(from_bf16(out[i * N + n]) == (float)dot(i, experts[0].w, n, 1.0f),
            "dense (%d, %d) = %g", i, n, from_bf16(out[i * N + n]));
      CHECK(from_bf16(out4[i * N + n]) == (float)dot(i, experts[0].w, n, 0.5f),
            "nvfp4 (%d, %d) = %g", i, n, from_bf16(out4[i * N + n]));
    }
  }
}

/* Expected grouped output: group row r of expert e reads token rows[r]. */
static void check_grouped(const char* what, const uint16_t* c, const int32_t* offsets,
                          const int32_t* rows, const float* scale2) {
  int e, r, n;
  for (e = 0; e < EXPERTS; ++e)
    for (r = offsets[e]; r < offsets[e + 1]; ++r)
      for (n = 0; n < N; ++n)
        CHECK(from_bf16(c[r * N + n]) == (float)dot(rows ? rows[r] : r, experts[e].w, n, scale2[e]),
              "%s row %d col %d = %g", what, r, n, from_bf16(c[r * N + n]));
}

static void test_cpu_grouped(void) {
  const int32_t offsets[EXPERTS + 1] = {0, 2, ROWS};
  const int32_t ids[ROWS] = {4, 0, 6};
  const float gate_s2[EXPERTS] = {1.0f, 0.5f}, up_s2[EXPERTS] = {2.0f, 0.25f};
  uint64_t packed[EXPERTS], scale[EXPERTS], sfb[EXPERTS];
  uint16_t gate[ROWS * N], up[ROWS * N], down[ROWS * N], ex[ROWS * N];
  int e;
  for (e = 0; e < EXPERTS; ++e) {
    packed[e] = bits(experts[e].packed);
    scale[e] = bits(experts[e].scale);
    sfb[e] = bits(experts[e].sfb);
  }
  CHECK(
      metrale_cpu_nvfp4_grouped_gate_up(act, packed, scale, gate_s2, packed, scale, up_s2, gate, up,
                                        offsets, EXPERTS, N, K, NULL, 0, NULL) == METRALE_STATUS_OK,
      "gate_up");
  check_grouped("gate_up gate", gate, offsets, NULL, gate_s2);
  check_grouped("gate_up up", up, offsets, NULL, up_s2);
  CHECK(metrale_cpu_nvfp4_grouped_gate_up_fused(act, ids, packed, sfb, gate_s2, packed, sfb, up_s2,
                                                gate, up, offsets, EXPERTS, N, K, NULL, 0,
                                                NULL) == METRALE_STATUS_OK,
        "gate_up_fused");
  check_grouped("fused gate", gate, offsets, ids, gate_s2);
  check_grouped("fused up", up, offsets, ids, up_s2);
  CHECK(metrale_cpu_nvfp4_grouped_down(act, packed, sfb, up_s2, down, offsets, EXPERTS, N, K, NULL,
                                       0, NULL) == METRALE_STATUS_OK,
        "down");
  check_grouped("down", down, offsets, NULL, up_s2);
  {
    const metrale_groups groups = {sizeof(metrale_groups), offsets, 0, EXPERTS, ROWS, 0};
    const metrale_expert_weights w = {packed, sfb, up_s2};
    void* outs[1];
    const metrale_exec cpu = {sizeof(metrale_exec), METRALE_BACKEND_CPU, NULL, 0, NULL, -1};
    size_t bytes = 1;
    outs[0] = ex;
    CHECK(metrale_nvfp4_grouped_ex(act, 8, ids, &w, outs, 1, METRALE_SCALE_SFB, &groups, N, K,
                                   &cpu) == METRALE_STATUS_OK,
          "grouped_ex");
    check_grouped("grouped_ex", ex, offsets, ids, up_s2);
    CHECK(metrale_nvfp4_grouped_workspace_size(METRALE_BACKEND_CPU, &groups, N, K, 1, &bytes) ==
                  METRALE_STATUS_OK &&
              bytes == 0,
          "grouped workspace size %u", (unsigned)bytes);
  }
  /* An expert with no rows (equal neighbours) is accepted: all rows on expert 0. */
  {
    const int32_t one_busy[EXPERTS + 1] = {0, ROWS, ROWS};
    CHECK(metrale_cpu_nvfp4_grouped_down(act, packed, sfb, up_s2, down, one_busy, EXPERTS, N, K,
                                         NULL, 0, NULL) == METRALE_STATUS_OK,
          "an empty expert");
    check_grouped("down, expert 1 empty", down, one_busy, NULL, up_s2);
  }
  /* The seed's rules at the C boundary: a decreasing offset is refused with a message. */
  {
    const int32_t bad[EXPERTS + 1] = {0, 3, 1};
    CHECK(metrale_cpu_nvfp4_grouped_down(act, packed, sfb, up_s2, down, bad, EXPERTS, N, K, NULL, 0,
                                         NULL) == METRALE_STATUS_INVALID_ARGUMENT,
          "decreasing");
    CHECK(strstr(metrale_last_error(), "expert_offsets[2] = 1 < expert_offsets[1] = 3") != NULL,
          "message names the offsets");
  }
}

/* The prepacked layout: prepack, then the grouped call with METRALE_WEIGHTS_PREPACKED gives the
 * packed weights' numbers; unprepack (in place) restores the bytes. */
static void test_cpu_prepacked(void) {
  const int32_t offsets[EXPERTS + 1] = {0, 2, ROWS};
  const float s2[EXPERTS] = {1.0f, 0.5f};
  const metrale_groups groups = {sizeof(metrale_groups), offsets, 0, EXPERTS, ROWS, 0};
  const metrale_exec cpu = {sizeof(metrale_exec), METRALE_BACKEND_CPU, NULL, 0, NULL, -1};
  static uint8_t prepacked[EXPERTS][N * K / 2];
  uint64_t packed_ptrs[EXPERTS], sfb[EXPERTS];
  uint16_t c[ROWS * N];
  void* outs[1];
  metrale_expert_weights w;
  int e;
  for (e = 0; e < EXPERTS; ++e) {
    CHECK(
        metrale_prepack_nvfp4_ex(experts[e].packed, prepacked[e], N, K, &cpu) == METRALE_STATUS_OK,
        "prepack expert %d", e);
    CHECK(memcmp(prepacked[e], experts[e].packed, N * K / 2) != 0, "prepacking moves bits");
    packed_ptrs[e] = bits(prepacked[e]);
    sfb[e] = bits(experts[e].sfb);
  }
  w.packed_ptrs = packed_ptrs;
  w.scale_ptrs = sfb;
  w.scale2_vals = s2;
  outs[0] = c;
  CHECK(metrale_nvfp4_grouped_ex(act, ROWS, NULL, &w, outs, 1,
                                 METRALE_SCALE_SFB | METRALE_WEIGHTS_PREPACKED, &groups, N, K,
                                 &cpu) == METRALE_STATUS_OK,
        "grouped_ex on prepacked weights");
  check_grouped("grouped_ex prepacked", c, offsets, NULL, s2);
  CHECK(metrale_nvfp4_grouped_ex(act, ROWS, NULL, &w, outs, 1, METRALE_SCALE_SFB | 0x200, &groups,
                                 N, K, &cpu) == METRALE_STATUS_INVALID_ARGUMENT,
        "an unknown scale_layout bit");
  CHECK(strstr(metrale_last_error(), "scale_layout = 513 (0x201)") != NULL,
        "the message names the value");
  for (e = 0; e < EXPERTS; ++e) {
    CHECK(metrale_unprepack_nvfp4_ex(prepacked[e], prepacked[e], N, K, &cpu) == METRALE_STATUS_OK,
          "unprepack in place");
    CHECK(memcmp(prepacked[e], experts[e].packed, N * K / 2) == 0, "unprepack inverts prepack");
  }
}

static void test_cpu_ex_and_info(void) {
  float scale_2 = 0.0f;
  uint8_t packed[N * K / 2], scale[KB * N];
  metrale_exec cpu = METRALE_EXEC_INIT;
  size_t bytes = 1, ws_size = 0;
  void* ws = NULL;
  cpu.backend = METRALE_BACKEND_CPU;
  CHECK(metrale_pack_bf16_weight_to_nvfp4_ex(experts[0].w_bf16, packed, scale, &scale_2, N, K,
                                             &cpu) == METRALE_STATUS_OK,
        "pack_ex");
  CHECK(scale_2 == 6.0f / 2688.0f, "scale_2 = amax / 2688, got %g", scale_2);
  CHECK(metrale_gemm_workspace_size(METRALE_BACKEND_CPU, M, N, K, &bytes) == METRALE_STATUS_OK &&
            bytes == 0,
        "gemm workspace size");
  CHECK(metrale_workspace_get(METRALE_BACKEND_CPU, &ws, &ws_size) == METRALE_STATUS_OK &&
            ws != NULL && ws_size > 0,
        "shared CPU workspace");
  CHECK(strlen(metrale_version()) > 0, "version");
  CHECK(metrale_abi_version() == METRALE_ABI_VERSION, "ABI version %d, header %d",
        (int)metrale_abi_version(), METRALE_ABI_VERSION);
  CHECK(strcmp(metrale_status_name(METRALE_STATUS_NOT_BUILT), "not_built") == 0, "status name");
  CHECK(metrale_backend_built(METRALE_BACKEND_CPU) == 1, "the CPU backend is always built");
}

/* A device-family call on host buffers: without the backend it must say not built; without a
 * GPU, a non-OK status with a message. (With a GPU, valid calls are skipped: host pointers.) */
static int gpu_present = 0;

static void expect_refusal(metrale_status s, metrale_backend backend, const char* name) {
  if (!metrale_backend_built(backend)) {
    CHECK(s == METRALE_STATUS_NOT_BUILT, "%s: status %s", name, metrale_status_name(s));
    CHECK(strstr(metrale_last_error(), backend == METRALE_BACKEND_CUTLASS
                                           ? "CUTLASS support was not built"
                                           : "was not built") != NULL,
          "%s: message", name);
  } else {
    CHECK(s != METRALE_STATUS_OK && strlen(metrale_last_error()) > 0, "%s: status %s", name,
          metrale_status_name(s));
  }
  CHECK(strncmp(metrale_last_error(), name, strlen(name)) == 0, "%s: message names the function",
        name);
}

/* The MoE layer on the CPU: 2 experts, H = I = 16, every weight 1.0 (codes 0x2, scale 1.0,
 * scale_2 = 1), hidden all 1.0, precomputed top-1 weight 0.5: gate = up = 16,
 * bf16(silu(16) * 16) = 256, down = 16 * 256 = 4096, out = 0.5 * 4096 = 2048 exactly. The
 * cuBLASLt reference backend (a GEMM) refuses the layer, or was not built. */
static void test_cpu_moe(void) {
  enum { H = 16, T = 2 };
  static uint8_t packed[H * H / 2], sfb[SFB_BYTES];
  uint16_t hidden[T * H], out[T * H];
  const uint64_t p[2] = {bits(packed), bits(packed)}, sc[2] = {bits(sfb), bits(sfb)};
  const float s2[2] = {1.0f, 1.0f}, weights[T] = {0.5f, 0.5f};
  const int32_t ids[T] = {1, 0};
  metrale_moe_layer layer = METRALE_MOE_LAYER_INIT;
  metrale_moe_tokens tokens = METRALE_MOE_TOKENS_INIT;
  metrale_exec exec = METRALE_EXEC_INIT;
  size_t bytes = 1;
  int i;
  tokens.num_tokens = T;
  memset(packed, 0x22, sizeof packed);
  memset(sfb, 0x38, sizeof sfb);
  for (i = 0; i < T * H; ++i) hidden[i] = bf16(1.0f);
  layer.num_experts = layer.num_local_experts = 2;
  layer.hidden_size = layer.intermediate_size = H;
  layer.top_k = 1;
  layer.gate.packed_ptrs = layer.up.packed_ptrs = layer.down.packed_ptrs = p;
  layer.gate.scale_ptrs = layer.up.scale_ptrs = layer.down.scale_ptrs = sc;
  layer.gate.scale2_vals = layer.up.scale2_vals = layer.down.scale2_vals = s2;
  layer.routing = METRALE_MOE_ROUTING_PRECOMPUTED;
  tokens.hidden = hidden, tokens.out = out;
  tokens.topk_ids = ids, tokens.topk_weights = weights;
  exec.backend = METRALE_BACKEND_CPU;
  CHECK(metrale_moe_forward(&layer, &tokens, &exec) == METRALE_STATUS_OK, "moe_forward (cpu)");
  for (i = 0; i < T * H; ++i) CHECK(from_bf16(out[i]) == 2048.0f, "moe out[%d] = %g", i,
                                    from_bf16(out[i]));
  CHECK(metrale_moe_workspace_size(METRALE_BACKEND_CPU, &layer, T, &bytes) == METRALE_STATUS_OK &&
            bytes == 0,
        "moe workspace size");
  exec.backend = METRALE_BACKEND_CUBLASLT;
  expect_refusal(metrale_moe_forward(&layer, &tokens, &exec), METRALE_BACKEND_CUBLASLT,
                 "metrale_moe_forward");
  if (metrale_backend_built(METRALE_BACKEND_CUBLASLT)) {
    CHECK(strstr(metrale_last_error(), "does not run the MoE layer") != NULL,
          "a reference GEMM backend refuses the layer");
  }
}

#define DEVICE_FAMILY_TEST(fn_prefix, backend, prefix_name)                                        \
  static void test_family_##fn_prefix(void) {                                                      \
    const int32_t offsets[EXPERTS + 1] = {0, 2, ROWS};                                             \
    const int32_t ids[ROWS] = {4, 0, 6};                                                           \
    const float s2[EXPERTS] = {1.0f, 1.0f};                                                        \
    uint64_t p[EXPERTS], sc[EXPERTS];                                                              \
    uint16_t c[ROWS * N], c2[ROWS * N];                                                            \
    uint8_t bytes[SFB_BYTES];                                                                      \
    p[0] = p[1] = bits(experts[0].packed);                                                         \
    sc[0] = sc[1] = bits(experts[0].sfb);                                                          \
    expect_refusal(                                                                                \
        fn_prefix##bf16_gemm_act_weight_t(act, experts[0].w_bf16, c, M, N, K, NULL, 0, NULL),      \
        backend, prefix_name "bf16_gemm_act_weight_t");                                            \
    expect_refusal(fn_prefix##nvfp4_gemm_bf16_act_weight_t(                                        \
                       act, experts[0].packed, experts[0].scale, 1.0f, c, M, N, K, NULL, 0, NULL), \
                   backend, prefix_name "nvfp4_gemm_bf16_act_weight_t");                           \
    expect_refusal(                                                                                \
        fn_prefix##pack_bf16_weight_to_nvfp4_t(experts[0].w_bf16, bytes, bytes, N, K, NULL),       \
        backend, prefix_name "pack_bf16_weight_to_nvfp4_t");                                       \
    expect_refusal(fn_prefix##nvfp4_grouped_gate_up(act, p, sc, s2, p, sc, s2, c, c2, offsets,     \
                                                    EXPERTS, N, K, NULL, 0, NULL),                 \
                   backend, prefix_name "nvfp4_grouped_gate_up");                                  \
    expect_refusal(fn_prefix##nvfp4_grouped_gate_up_fused(act, ids, p, sc, s2, p, sc, s2, c, c2,   \
                                                          offsets, EXPERTS, N, K, NULL, 0, NULL),  \
                   backend, prefix_name "nvfp4_grouped_gate_up_fused");                            \
    expect_refusal(                                                                                \
        fn_prefix##nvfp4_grouped_down(act, p, sc, s2, c, offsets, EXPERTS, N, K, NULL, 0, NULL),   \
        backend, prefix_name "nvfp4_grouped_down");                                                \
    expect_refusal(fn_prefix##pack_weight_sfb(experts[0].scale, bytes, N, K, 1, NULL), backend,    \
                   prefix_name "pack_weight_sfb");                                                 \
    expect_refusal(fn_prefix##transpose_nvfp4_packed_kton(experts[0].packed, bytes, N, K, NULL),   \
                   backend, prefix_name "transpose_nvfp4_packed_kton");                            \
    expect_refusal(fn_prefix##transpose_nvfp4_packed_ntok(experts[0].packed, bytes, N, K, NULL),   \
                   backend, prefix_name "transpose_nvfp4_packed_ntok");                            \
  }

DEVICE_FAMILY_TEST(metrale_, METRALE_BACKEND_CUDA, "metrale_")
DEVICE_FAMILY_TEST(metrale_cutlass_, METRALE_BACKEND_CUTLASS, "metrale_cutlass_")

static void test_device_hooks(void) {
  uint16_t c[M * N];
  int32_t count = -1;
  float scale_2 = 0.0f;
  uint8_t bytes[SFB_BYTES];
  const metrale_exec cuda = {sizeof(metrale_exec), METRALE_BACKEND_CUDA, NULL, 0, NULL, -1};
#define HOOK(name)                                                                                 \
  expect_refusal(name(act, experts[0].w_bf16, c, M, N, K, NULL, 0, NULL), METRALE_BACKEND_CUTLASS, \
                 #name)
  HOOK(metrale_cutlass_bf16_gemm_act_weight_t_128x256);
  HOOK(metrale_cutlass_bf16_gemm_act_weight_t_256x128);
  HOOK(metrale_cutlass_bf16_gemm_act_weight_t_64x128);
  HOOK(metrale_cutlass_bf16_gemm_act_weight_t_128x64);
  HOOK(metrale_cutlass_bf16_gemm_act_weight_t_64x64);
#undef HOOK
  expect_refusal(metrale_cublaslt_bf16_gemm_act_weight_t_algo(act, experts[0].w_bf16, c, M, N, K,
                                                              NULL, 0, NULL, 0, &count),
                 METRALE_BACKEND_CUBLASLT, "metrale_cublaslt_bf16_gemm_act_weight_t_algo");
  expect_refusal(
      metrale_pack_bf16_weight_to_nvfp4_ex(experts[0].w_bf16, bytes, bytes, &scale_2, N, K, &cuda),
      METRALE_BACKEND_CUDA, "metrale_pack_bf16_weight_to_nvfp4_ex");
  expect_refusal(metrale_prepack_nvfp4_ex(experts[0].packed, bytes, N, K, &cuda),
                 METRALE_BACKEND_CUDA, "metrale_prepack_nvfp4_ex");
  expect_refusal(metrale_unprepack_nvfp4_ex(bytes, bytes, N, K, NULL), METRALE_BACKEND_CUDA,
                 "metrale_unprepack_nvfp4_ex");
}

int main(void) {
  void* ws = NULL;
  size_t ws_size = 0;
  test_cpu_pack();
  test_cpu_layouts();
  test_cpu_gemms();
  test_cpu_grouped();
  test_cpu_prepacked();
  test_cpu_ex_and_info();
  test_cpu_moe();
  /* With a GPU, valid device calls on host buffers are skipped; a backend that was not built
   * answers before touching anything, so its family runs everywhere. */
  gpu_present = metrale_workspace_get(METRALE_BACKEND_CUDA, &ws, &ws_size) == METRALE_STATUS_OK;
  if (!gpu_present || !metrale_backend_built(METRALE_BACKEND_CUDA)) test_family_metrale_();
  if (!gpu_present || !metrale_backend_built(METRALE_BACKEND_CUTLASS)) {
    test_family_metrale_cutlass_();
  }
  if (!gpu_present) {
    test_device_hooks();
  } else {
    printf("a CUDA device is present: device-family calls on host buffers skipped\n");
  }
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("abi_c99: all checks passed (metrale %s)\n", metrale_version());
  return 0;
}
