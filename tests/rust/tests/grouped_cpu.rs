// A small grouped NVFP4 GEMM through the seeds' signatures on the CPU family: quantize each
// expert with metrale_cpu_pack_bf16_weight_to_nvfp4_t, swizzle its scales with
// metrale_cpu_pack_weight_sfb, then run metrale_cpu_nvfp4_grouped_down and
// metrale_cpu_nvfp4_grouped_gate_up_fused, and check every output against a Rust-side product of
// the original weights (exact: grid weights, small-integer activations).
mod common;

use common::*;
use metrale_abi_test::ffi::{cpu, STATUS_OK};
use metrale_abi_test::{addr, last_error};
use std::ffi::c_void;
use std::ptr::null_mut;

const N: usize = 40;
const K: usize = 64;
const EXPERTS: usize = 3;

struct Expert {
    w: Vec<f32>,
    packed: Vec<u8>,
    sfb: Vec<u8>,
}

/// SFB bytes of one [N, K] weight: rows padded to 128, scale columns to 4.
fn sfb_bytes(n: usize, k: usize) -> usize {
    (n + 127) / 128 * 128 * ((k + 63) / 64) * 4
}

fn quantize(seed: u64) -> Expert {
    let (w, codes) = grid_weights(N, K, seed);
    let w_bf16: Vec<u16> = w.iter().map(|&x| bf16(x)).collect();
    let mut packed = vec![0u8; N * K / 2];
    let mut scale = vec![0u8; K / 16 * N];
    let status = unsafe {
        cpu::metrale_cpu_pack_bf16_weight_to_nvfp4_t(
            w_bf16.as_ptr() as *const c_void,
            packed.as_mut_ptr() as *mut c_void,
            scale.as_mut_ptr() as *mut c_void,
            N as i32,
            K as i32,
            null_mut(),
        )
    };
    assert_eq!(status, STATUS_OK, "{}", last_error());
    // The quantizer's output, checked against the codes the grid weights were built from.
    for i in 0..N * K / 2 {
        assert_eq!(packed[i], codes[2 * i] | (codes[2 * i + 1] << 4), "packed byte {}", i);
    }
    assert!(scale.iter().all(|&s| s == 0x38), "every block scale is 1.0 (e4m3 0x38)");
    let mut sfb = vec![0xEEu8; sfb_bytes(N, K)];
    let status = unsafe {
        cpu::metrale_cpu_pack_weight_sfb(
            scale.as_ptr() as *const c_void,
            sfb.as_mut_ptr() as *mut c_void,
            N as i32,
            K as i32,
            1,
            null_mut(),
        )
    };
    assert_eq!(status, STATUS_OK, "{}", last_error());
    // offset(n, b) for one 128-row tile: (n % 32)·16 + ((n / 32) % 4)·4 + b; the rest is zero.
    for n in 0..128 {
        for b in 0..4 {
            let at = (n % 32) * 16 + ((n / 32) % 4) * 4 + b;
            let want = if n < N && b < K / 16 { scale[b * N + n] } else { 0 };
            assert_eq!(sfb[at], want, "sfb (n {}, b {})", n, b);
        }
    }
    Expert { w, packed, sfb }
}

/// Expected [rows, N] output: group row i of expert e reads activation row rows[i].
fn expected(a: &[f32], rows: &[usize], offsets: &[i32], experts: &[Expert], s2: &[f32]) -> Vec<u16> {
    let mut out = vec![0u16; rows.len() * N];
    for e in 0..EXPERTS {
        for i in offsets[e] as usize..offsets[e + 1] as usize {
            for col in 0..N {
                out[i * N + col] = dot_bf16(a, rows[i], &experts[e].w, col, K, s2[e]);
            }
        }
    }
    out
}

#[test]
fn grouped_down_and_fused_gate_up_on_the_cpu() {
    let experts: Vec<Expert> = (0..EXPERTS as u64).map(|e| quantize(10 + e)).collect();
    let gate: Vec<Expert> = (0..EXPERTS as u64).map(|e| quantize(20 + e)).collect();
    let offsets = [0i32, 4, 4, 9]; // expert 1 owns no rows
    let rows = 9usize;
    let packed: Vec<u64> = experts.iter().map(|x| addr(x.packed.as_ptr())).collect();
    let sfb: Vec<u64> = experts.iter().map(|x| addr(x.sfb.as_ptr())).collect();
    let gate_packed: Vec<u64> = gate.iter().map(|x| addr(x.packed.as_ptr())).collect();
    let gate_sfb: Vec<u64> = gate.iter().map(|x| addr(x.sfb.as_ptr())).collect();
    let s2 = [1.0f32, 0.5, 0.25];
    let gate_s2 = [2.0f32, 1.0, 0.5];

    // down: a is [M_total, K] in expert order.
    let a = small_ints(rows * K, 7);
    let a_bf16: Vec<u16> = a.iter().map(|&x| bf16(x)).collect();
    let mut c = vec![0x7FC1u16; rows * N];
    let status = unsafe {
        cpu::metrale_cpu_nvfp4_grouped_down(
            a_bf16.as_ptr() as *const c_void,
            packed.as_ptr(),
            sfb.as_ptr(),
            s2.as_ptr(),
            c.as_mut_ptr() as *mut c_void,
            offsets.as_ptr(),
            EXPERTS as i32,
            N as i32,
            K as i32,
            null_mut(),
            0,
            null_mut(),
        )
    };
    assert_eq!(status, STATUS_OK, "{}", last_error());
    let identity: Vec<usize> = (0..rows).collect();
    assert_eq!(c, expected(&a, &identity, &offsets, &experts, &s2), "grouped_down");

    // gate_up_fused: 5 tokens, group row i reads token sorted_token_ids[i].
    let tokens = small_ints(5 * K, 8);
    let tokens_bf16: Vec<u16> = tokens.iter().map(|&x| bf16(x)).collect();
    let ids = [4i32, 0, 2, 2, 1, 3, 0, 4, 1];
    let mut c_gate = vec![0x7FC1u16; rows * N];
    let mut c_up = vec![0x7FC1u16; rows * N];
    let status = unsafe {
        cpu::metrale_cpu_nvfp4_grouped_gate_up_fused(
            tokens_bf16.as_ptr() as *const c_void,
            ids.as_ptr(),
            gate_packed.as_ptr(),
            gate_sfb.as_ptr(),
            gate_s2.as_ptr(),
            packed.as_ptr(),
            sfb.as_ptr(),
            s2.as_ptr(),
            c_gate.as_mut_ptr() as *mut c_void,
            c_up.as_mut_ptr() as *mut c_void,
            offsets.as_ptr(),
            EXPERTS as i32,
            N as i32,
            K as i32,
            null_mut(),
            0,
            null_mut(),
        )
    };
    assert_eq!(status, STATUS_OK, "{}", last_error());
    let gathered: Vec<usize> = ids.iter().map(|&i| i as usize).collect();
    assert_eq!(c_gate, expected(&tokens, &gathered, &offsets, &gate, &gate_s2), "fused gate");
    assert_eq!(c_up, expected(&tokens, &gathered, &offsets, &experts, &s2), "fused up");
}
