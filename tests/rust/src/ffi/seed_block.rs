// The seeds' extern "C" parameter lists, written once. Every family (own kernels, CPU, CUTLASS)
// exports the same eight entry points under its own prefix; macro_rules cannot paste a prefix onto
// an identifier, so each family's module names its functions in full when it invokes the macro,
// and the names stay greppable at the call sites.

/// Declares `extern "C"` functions with the seeds' dense bf16 GEMM parameter list, one per name:
/// the family's plain entry point and the CUTLASS arm's fixed-tile test hooks share it.
macro_rules! extern_bf16_gemm {
    ($($name:ident),+ $(,)?) => {
        extern "C" {
            $(
                pub fn $name(
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
            )+
        }
    };
}

/// Declares one family's eight seed entry points under the names given (keyed by operation, so an
/// argument in the wrong slot is a compile error rather than a wrong link).
macro_rules! extern_seed_block {
    (
        bf16_gemm: $bf16_gemm:ident,
        nvfp4_gemm: $nvfp4_gemm:ident,
        pack_nvfp4: $pack_nvfp4:ident,
        grouped_gate_up: $grouped_gate_up:ident,
        grouped_gate_up_fused: $grouped_gate_up_fused:ident,
        grouped_down: $grouped_down:ident,
        pack_weight_sfb: $pack_weight_sfb:ident,
        transpose_kton: $transpose_kton:ident $(,)?
    ) => {
        extern_bf16_gemm!($bf16_gemm);

        extern "C" {
            pub fn $nvfp4_gemm(
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
            pub fn $pack_nvfp4(
                weight_bf16: *const c_void,
                packed_t: *mut c_void,
                scale_t: *mut c_void,
                n: i32,
                k: i32,
                stream: *mut c_void,
            ) -> i32;
            pub fn $grouped_gate_up(
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
            pub fn $grouped_gate_up_fused(
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
            pub fn $grouped_down(
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
            pub fn $pack_weight_sfb(
                scale_in: *const c_void,
                scale_out: *mut c_void,
                n: i32,
                k: i32,
                src_n_major: i32,
                stream: *mut c_void,
            ) -> i32;
            pub fn $transpose_kton(
                src_packed_t: *const c_void,
                dst_packed: *mut c_void,
                n: i32,
                k: i32,
                stream: *mut c_void,
            ) -> i32;
        }
    };
}
