// Our own kernels (Backend::automatic): device pointers. The seeds' list, with metrale_ names.
use std::ffi::c_void;

extern_seed_block! {
    bf16_gemm: metrale_bf16_gemm_act_weight_t,
    nvfp4_gemm: metrale_nvfp4_gemm_bf16_act_weight_t,
    pack_nvfp4: metrale_pack_bf16_weight_to_nvfp4_t,
    grouped_gate_up: metrale_nvfp4_grouped_gate_up,
    grouped_gate_up_fused: metrale_nvfp4_grouped_gate_up_fused,
    grouped_down: metrale_nvfp4_grouped_down,
    pack_weight_sfb: metrale_pack_weight_sfb,
    transpose_kton: metrale_transpose_nvfp4_packed_kton,
}
