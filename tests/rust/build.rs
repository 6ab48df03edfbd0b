// Links the crate against libmetrale from METRALE_LIB_DIR (set by ctest to the build's lib/),
// with an rpath so the test binaries find it without LD_LIBRARY_PATH.
use std::env;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=METRALE_LIB_DIR");
    let dir = env::var("METRALE_LIB_DIR").unwrap_or_default();
    if dir.is_empty() {
        panic!("METRALE_LIB_DIR must name the directory that holds libmetrale.so (ctest sets it)");
    }
    println!("cargo:rustc-link-search=native={}", dir);
    println!("cargo:rustc-link-lib=dylib=metrale");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
}
