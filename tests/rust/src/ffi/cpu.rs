// The CPU reference backend: the same parameter lists on host pointers.
use std::ffi::c_void;

extern "C" {
    pub fn metrale_cpu_bf16_gemm_act_weight_t(
        act: *const c_void,
        weight: *const c_void,
        out: *mut c_void,
        m: i32,
        n: i32,
        k: i32,
        workspace: *mut c_void,
        workspace_size: usize,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_nvfp4_gemm_bf16_act_weight_t(
        act: *const c_void,
        weight_packed_t: *const c_void,
        weight_scale_t: *const c_void,
        weight_scale_2: f32,
        out: *mut c_void,
        m: i32,
        n: i32,
        k: i32,
        workspace: *mut c_void,
        workspace_size: usize,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_pack_bf16_weight_to_nvfp4_t(
        weight_bf16: *const c_void,
        packed_t: *mut c_void,
        scale_t: *mut c_void,
        n: i32,
        k: i32,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_nvfp4_grouped_gate_up(
        a_bf16: *const c_void,
        gate_packed_ptrs: *const u64,
        gate_scale_ptrs: *const u64,
        gate_scale2_vals: *const f32,
        up_packed_ptrs: *const u64,
        up_scale_ptrs: *const u64,
        up_scale2_vals: *const f32,
        c_gate_bf16: *mut c_void,
        c_up_bf16: *mut c_void,
        expert_offsets_host: *const i32,
        num_experts: i32,
        n: i32,
        k: i32,
        workspace: *mut c_void,
        workspace_size: usize,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_nvfp4_grouped_gate_up_fused(
        a_bf16: *const c_void,
        sorted_token_ids: *const i32,
        gate_packed_ptrs: *const u64,
        gate_sfb_ptrs: *const u64,
        gate_scale2_vals: *const f32,
        up_packed_ptrs: *const u64,
        up_sfb_ptrs: *const u64,
        up_scale2_vals: *const f32,
        c_gate_bf16: *mut c_void,
        c_up_bf16: *mut c_void,
        expert_offsets_host: *const i32,
        num_experts: i32,
        n: i32,
        k: i32,
        workspace: *mut c_void,
        workspace_size: usize,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_nvfp4_grouped_down(
        a_bf16: *const c_void,
        packed_ptrs: *const u64,
        sfb_ptrs: *const u64,
        scale2_vals: *const f32,
        c_bf16: *mut c_void,
        expert_offsets_host: *const i32,
        num_experts: i32,
        n: i32,
        k: i32,
        workspace: *mut c_void,
        workspace_size: usize,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_pack_weight_sfb(
        scale_in: *const c_void,
        scale_out: *mut c_void,
        n: i32,
        k: i32,
        src_n_major: i32,
        stream: *mut c_void,
    ) -> i32;
    pub fn metrale_cpu_transpose_nvfp4_packed_kton(
        src_packed_t: *const c_void,
        dst_packed: *mut c_void,
        n: i32,
        k: i32,
        stream: *mut c_void,
    ) -> i32;
}
