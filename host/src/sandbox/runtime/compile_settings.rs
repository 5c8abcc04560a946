//! The engine settings that decide what the guest compiles to, and the digest that says
//! whether two engines compile alike.
//!
//! `build.rs` includes this file too: it compiles the built-in guest with these settings
//! when exec-host is built and records the digest of that engine, and the runtime's engine
//! starts from the same settings. The code compiled at build time is used only by an engine
//! whose digest is the recorded one. What only matters while code runs (stacks, the
//! instance pool, the profiler) is added by the runtime.

use sha2::{Digest, Sha256};

/// A wasmtime configuration holding every setting that shapes the compiled code.
pub fn compiler_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.wasm_component_model(true);
    // The budget: compiled code checks the epoch at function entries and loop headers.
    config.epoch_interruption(true);
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
    // Fixed, not read from WASMTIME_BACKTRACE_DETAILS: it changes what is compiled.
    config.wasm_backtrace_details(wasmtime::WasmBacktraceDetails::Disable);
    config
}

/// SHA-256 of everything about `engine` that decides the code it compiles: the settings,
/// the processor features it compiles for and wasmtime's version. Two engines with the same
/// digest compile the same component to code either can run.
pub fn engine_digest(engine: &wasmtime::Engine) -> [u8; 32] {
    let mut hasher = Sha256Hasher(Sha256::new());
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
    hasher.0.finalize().into()
}

/// A `Hasher` that feeds SHA-256, so the digest is the same in every process.
struct Sha256Hasher(Sha256);

impl std::hash::Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn finish(&self) -> u64 {
        0 // only `write` is used
    }
}
