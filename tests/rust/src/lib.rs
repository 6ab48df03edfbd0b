// The seeds' extern "C" block against libmetrale, one module per family, plus what the C ABI adds
// to read a failure back (metrale_last_error) and to ask which backends were built. The seeds'
// cfg(test) hooks (fixed CUTLASS tiles, cuBLASLt algorithm index) are in `cutlass`; the seeds'
// cuMemAlloc_v2 is the CUDA driver's, not metrale's, and is not declared here.
#![allow(clippy::too_many_arguments)]

pub mod ffi {
    // Before the family modules: macro_rules are visible only below their definition.
    #[macro_use]
    mod seed_block;
    pub mod cpu;
    pub mod cutlass;
    pub mod own;

    use std::os::raw::c_char;

    pub const STATUS_OK: i32 = 0;
    pub const STATUS_INVALID_ARGUMENT: i32 = 1;
    pub const STATUS_NOT_BUILT: i32 = 3;
    pub const BACKEND_CUDA: i32 = 2;
    pub const BACKEND_CUTLASS: i32 = 3;

    extern "C" {
        pub fn metrale_last_error() -> *const c_char;
        pub fn metrale_backend_built(backend: i32) -> i32;
    }
}

/// This thread's last error message ("" after a success).
pub fn last_error() -> String {
    unsafe {
        let p = ffi::metrale_last_error();
        assert!(!p.is_null(), "metrale_last_error returned NULL");
        std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A status and the message that came with it.
pub fn outcome(status: i32) -> (i32, String) {
    (status, last_error())
}

/// The bit pattern of a host pointer, as the seeds pass per-expert pointers.
pub fn addr<T>(p: *const T) -> u64 {
    p as usize as u64
}
