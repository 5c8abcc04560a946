//! The engine settings that decide what the guest compiles to, and nothing else.
//!
//! `build.rs` includes this file too: it compiles the built-in guest with these settings
//! when exec-host is built, and the runtime's engine starts from the same ones, so code
//! compiled at build time is code the runtime's engine accepts. What only matters while
//! code runs (stacks, the instance pool, the profiler) is added by the runtime.

/// A wasmtime configuration holding every setting that shapes the compiled code.
pub fn compiler_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    // The budget: compiled code checks the epoch at function entries and loop headers.
    config.epoch_interruption(true);
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
    config
}
