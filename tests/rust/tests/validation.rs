// Validation failures through the seeds' extern "C" block come back as a status plus a message
// (metrale_last_error), for every family: the checks run before any backend is chosen, so even
// the device families refuse bad arguments on a machine without a GPU. The seed's
// ensure_group_arrays cases are here at the C boundary.
mod common;

use metrale_abi_test::ffi::{self, cpu, cutlass, own};
use metrale_abi_test::{addr, outcome};
use std::ffi::c_void;
use std::ptr::{null, null_mut};

struct Arrays {
    a: Vec<u16>,
    packed: Vec<u8>,
    scale: Vec<u8>,
    ptrs: Vec<u64>,
    sptrs: Vec<u64>,
    s2: Vec<f32>,
    c: Vec<u16>,
    c2: Vec<u16>,
}

fn arrays() -> Arrays {
    let packed = vec![0x22u8; 8 * 16];
    let scale = vec![0x38u8; 512];
    Arrays {
        a: vec![0x3F80u16; 16 * 32],
        ptrs: vec![addr(packed.as_ptr()); 2],
        sptrs: vec![addr(scale.as_ptr()); 2],
        packed,
        scale,
        s2: vec![1.0f32; 2],
        c: vec![0u16; 16 * 8],
        c2: vec![0u16; 16 * 8],
    }
}

fn down_cpu(x: &mut Arrays, offsets: &[i32], experts: i32) -> (i32, String) {
    outcome(unsafe {
        cpu::metrale_cpu_nvfp4_grouped_down(
            x.a.as_ptr() as *const c_void,
            x.ptrs.as_ptr(),
            x.sptrs.as_ptr(),
            x.s2.as_ptr(),
            x.c.as_mut_ptr() as *mut c_void,
            offsets.as_ptr(),
            experts,
            8,
            32,
            null_mut(),
            0,
            null_mut(),
        )
    })
}

#[test]
fn seed_offset_cases_at_the_c_boundary() {
    let mut x = arrays();
    assert_eq!(down_cpu(&mut x, &[0, 4, 9], 2), (0, String::new()));
    let (status, msg) = down_cpu(&mut x, &[-1, 4, 9], 2);
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert!(msg.contains("expert_offsets[0] = -1 is negative"), "{}", msg);
    let (status, msg) = down_cpu(&mut x, &[0, 9, 4], 2);
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert!(msg.contains("expert_offsets[2] = 4 < expert_offsets[1] = 9"), "{}", msg);
    assert_eq!(down_cpu(&mut x, &[0, 4, 4], 2).0, ffi::STATUS_OK, "an empty expert");
    assert_eq!(down_cpu(&mut x, &[0], 0).0, ffi::STATUS_OK, "zero experts");
    let (status, msg) = down_cpu(&mut x, &[0], -2);
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert!(msg.starts_with("metrale_cpu_nvfp4_grouped_down: num_experts = -2"), "{}", msg);
}

#[test]
fn own_family_validates_before_any_device_work() {
    let mut x = arrays();
    let offsets = [0i32, 4, 9];
    let bad = [1.0f32, f32::NAN];
    let (status, msg) = outcome(unsafe {
        own::metrale_nvfp4_grouped_gate_up(
            x.a.as_ptr() as *const c_void,
            x.ptrs.as_ptr(),
            x.sptrs.as_ptr(),
            x.s2.as_ptr(),
            x.ptrs.as_ptr(),
            x.sptrs.as_ptr(),
            bad.as_ptr(),
            x.c.as_mut_ptr() as *mut c_void,
            x.c2.as_mut_ptr() as *mut c_void,
            offsets.as_ptr(),
            2,
            8,
            32,
            null_mut(),
            0,
            null_mut(),
        )
    });
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert_eq!(
        msg,
        "metrale_nvfp4_grouped_gate_up: up_scale2_vals[1] = nan is not finite and > 0"
    );
    let (status, msg) = outcome(unsafe {
        own::metrale_nvfp4_gemm_bf16_act_weight_t(
            x.a.as_ptr() as *const c_void,
            x.packed.as_ptr() as *const c_void,
            x.scale.as_ptr() as *const c_void,
            1.0,
            x.c.as_mut_ptr() as *mut c_void,
            1,
            8,
            3000,
            null_mut(),
            0,
            null_mut(),
        )
    });
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert_eq!(msg, "metrale_nvfp4_gemm_bf16_act_weight_t: K = 3000 is not a multiple of 16");
    let (status, msg) = outcome(unsafe {
        own::metrale_pack_weight_sfb(null(), x.c.as_mut_ptr() as *mut c_void, 8, 32, 1, null_mut())
    });
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert_eq!(msg, "metrale_pack_weight_sfb: scale_in is null, expected a valid pointer");
}

#[test]
fn cutlass_family_validates_then_says_not_built() {
    let mut x = arrays();
    let offsets = [0i32, 4, 90];
    let ids = [0i32; 16];
    let (status, msg) = outcome(unsafe {
        cutlass::metrale_cutlass_nvfp4_grouped_gate_up_fused(
            x.a.as_ptr() as *const c_void,
            ids.as_ptr(),
            x.ptrs.as_ptr(),
            x.sptrs.as_ptr(),
            x.s2.as_ptr(),
            x.ptrs.as_ptr(),
            x.sptrs.as_ptr(),
            x.s2.as_ptr(),
            x.c.as_mut_ptr() as *mut c_void,
            x.c2.as_mut_ptr() as *mut c_void,
            offsets.as_ptr(),
            2,
            8,
            40,
            null_mut(),
            0,
            null_mut(),
        )
    });
    assert_eq!(status, ffi::STATUS_INVALID_ARGUMENT);
    assert_eq!(msg, "metrale_cutlass_nvfp4_grouped_gate_up_fused: K = 40 is not a multiple of 16");
    if unsafe { ffi::metrale_backend_built(ffi::BACKEND_CUTLASS) } != 0 {
        return; // a CUTLASS build: the valid call would need device memory
    }
    let (status, msg) = outcome(unsafe {
        cutlass::metrale_cutlass_nvfp4_grouped_down(
            x.a.as_ptr() as *const c_void,
            x.ptrs.as_ptr(),
            x.sptrs.as_ptr(),
            x.s2.as_ptr(),
            x.c.as_mut_ptr() as *mut c_void,
            [0i32, 4, 9].as_ptr(),
            2,
            8,
            32,
            null_mut(),
            0,
            null_mut(),
        )
    });
    assert_eq!(status, ffi::STATUS_NOT_BUILT);
    assert_eq!(
        msg,
        "metrale_cutlass_nvfp4_grouped_down: CUTLASS support was not built; set CUTLASS_HOME or \
         pip install nvidia-cutlass and rebuild"
    );
    let mut count = -1i32;
    let (status, _) = outcome(unsafe {
        cutlass::metrale_cublaslt_bf16_gemm_act_weight_t_algo(
            x.a.as_ptr() as *const c_void,
            x.a.as_ptr() as *const c_void,
            x.c.as_mut_ptr() as *mut c_void,
            2,
            2,
            16,
            null_mut(),
            0,
            null_mut(),
            0,
            &mut count,
        )
    });
    if unsafe { ffi::metrale_backend_built(ffi::BACKEND_CUDA) } == 0 {
        assert_eq!(status, ffi::STATUS_NOT_BUILT);
    }
}

#[test]
fn success_clears_the_message() {
    let mut x = arrays();
    assert_eq!(down_cpu(&mut x, &[0, 9, 4], 2).0, ffi::STATUS_INVALID_ARGUMENT);
    assert_eq!(down_cpu(&mut x, &[0, 4, 9], 2), (ffi::STATUS_OK, String::new()));
}
