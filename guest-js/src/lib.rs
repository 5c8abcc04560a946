//! The guest engine of exec-host: QuickJS (through rquickjs) in a WebAssembly component
//! that runs one Exec script per instance.
//!
//! The host instantiates a fresh component for every script, from a snapshot taken after
//! `init` (pre-initialisation), so no state outlives a script. See `wit/sandbox.wit` for the
//! contract and `engine/` for how a script runs.

// The bindings generated from the WIT mirror its signatures, one of which takes ten
// parameters once flattened.
#![allow(clippy::too_many_arguments)]

extern crate alloc;

mod builtins;
mod encode;
mod engine;
mod json_number;
mod web;

wit_bindgen::generate!({
    world: "sandbox",
    path: "../wit",
});

struct Component;

impl Guest for Component {
    fn init() {
        engine::init();
    }

    fn run(script: String, tool_names: Vec<String>, options: RunOptions) -> Result<Option<String>, ScriptError> {
        engine::run(&script, tool_names, &options)
    }
}

export!(Component);
