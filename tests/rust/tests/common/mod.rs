// Rust-side numbers for the checks: bf16 round-to-nearest-even, the e2m1 grid, and weights whose
// NVFP4 quantization is exact (each 16-block on the grid with a ±6, so its e4m3 scale is 1.0).
#![allow(dead_code)]

pub const GRID: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

pub fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return 0x7FFF;
    }
    let lsb = (b >> 16) & 1;
    ((b + 0x7FFF + lsb) >> 16) as u16
}

pub fn f32_of(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// A tiny deterministic generator (xorshift), so the crate needs no registry crates.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// [n, k] weights on the grid and their e2m1 codes (sign in bit 3).
pub fn grid_weights(n: usize, k: usize, seed: u64) -> (Vec<f32>, Vec<u8>) {
    let mut rng = Rng::new(seed);
    let mut w = vec![0f32; n * k];
    let mut codes = vec![0u8; n * k];
    for row in 0..n {
        for blk in 0..k / 16 {
            let peak = rng.below(16) as usize;
            for j in 0..16 {
                let idx = if j == peak { 7 } else { rng.below(8) as usize };
                let neg = idx != 0 && rng.below(2) == 1;
                let at = row * k + blk * 16 + j;
                w[at] = if neg { -GRID[idx] } else { GRID[idx] };
                codes[at] = idx as u8 | if neg { 8 } else { 0 };
            }
        }
    }
    (w, codes)
}

/// Small integers in [-3, 3]: every sum below is exact.
pub fn small_ints(count: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..count).map(|_| rng.below(7) as f32 - 3.0).collect()
}

/// bf16(sum_k a[row, k] · w[col, k] · scale_2), the product computed exactly in f64.
pub fn dot_bf16(a: &[f32], row: usize, w: &[f32], col: usize, k: usize, scale_2: f32) -> u16 {
    let mut sum = 0f64;
    for kk in 0..k {
        sum += a[row * k + kk] as f64 * w[col * k + kk] as f64;
    }
    bf16((sum * scale_2 as f64) as f32)
}
