// The CUTLASS reference arm: the seeds' block exactly, atlas_cutlass_ renamed metrale_cutlass_,
// plus the seeds' cfg(test) hooks: the five fixed-tile bf16 GEMMs and the cuBLASLt algorithm index.
use std::ffi::c_void;

extern_seed_block! {
    bf16_gemm: metrale_cutlass_bf16_gemm_act_weight_t,
    nvfp4_gemm: metrale_cutlass_nvfp4_gemm_bf16_act_weight_t,
    pack_nvfp4: metrale_cutlass_pack_bf16_weight_to_nvfp4_t,
    grouped_gate_up: metrale_cutlass_nvfp4_grouped_gate_up,
    grouped_gate_up_fused: metrale_cutlass_nvfp4_grouped_gate_up_fused,
    grouped_down: metrale_cutlass_nvfp4_grouped_down,
    pack_weight_sfb: metrale_cutlass_pack_weight_sfb,
    transpose_kton: metrale_cutlass_transpose_nvfp4_packed_kton,
}

extern_bf16_gemm!(
    metrale_cutlass_bf16_gemm_act_weight_t_128x256,
    metrale_cutlass_bf16_gemm_act_weight_t_256x128,
    metrale_cutlass_bf16_gemm_act_weight_t_64x128,
    metrale_cutlass_bf16_gemm_act_weight_t_128x64,
    metrale_cutlass_bf16_gemm_act_weight_t_64x64,
);

extern "C" {
    pub fn metrale_cublaslt_bf16_gemm_act_weight_t_algo(
        act: *const c_void,
        weight: *const c_void,
        out: *mut c_void,
        m: i32,
        n: i32,
        k: i32,
        workspace: *mut c_void,
        workspace_size: usize,
        stream: *mut c_void,
        algo_index: i32,
        returned_count: *mut i32,
    ) -> i32;
}
