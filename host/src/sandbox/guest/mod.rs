//! The guest boundary: bindings generated from `wit/`, the [`GuestHost`] trait that says
//! in plain Rust what the host must answer for each import, and the one function that
//! links exactly those imports.
//!
//! Values cross as JSON text. Everything the guest sends is untrusted: whoever implements
//! [`GuestHost`] parses it with bounds and never unwraps it. This module depends on nothing
//! else of the crate, so the runtime above it is the only thing that knows what a script's
//! calls mean.

use std::future::Future;

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::WasiView;

mod generated {
    wasmtime::component::bindgen!({
        world: "sandbox",
        path: "wit",
        imports: {
            // The one import that waits: everything else answers at once.
            "exec-host:sandbox/tools.wait-next": async | trappable,
            // A conversation's values may live in a store across the network.
            "exec-host:sandbox/state.load": async,
            "exec-host:sandbox/state.store": async,
        },
        exports: { default: async },
    });
}

pub(crate) use generated::exec_host::sandbox::console::Level;
pub(crate) use generated::exec_host::sandbox::tools::{Completion, Event, Started, ToolValue};
pub(crate) use generated::{Position, RunOptions, SandboxPre, ScriptError, Uncaught};

use generated::exec_host::sandbox::{console, state, tool_search, tools};

/// The WASI interfaces the guest is linked with. The guest's Rust standard library
/// imports these; none of them reaches a file, a socket or the host's environment (the
/// WASI context has no preopens, no variables, no arguments, and its stdout and stderr
/// are memory pipes). A test checks the built component imports nothing else.
pub const WASI_INTERFACES: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/wall-clock",
    "wasi:clocks/monotonic-clock",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
];

/// The interfaces of our own contract.
pub const SANDBOX_INTERFACES: &[&str] =
    &["exec-host:sandbox/tools", "exec-host:sandbox/tool-search", "exec-host:sandbox/console", "exec-host:sandbox/state"];

/// What a file given as a guest is, when it is not a component.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum NotAComponent {
    #[error(
        "it is a core WebAssembly module, not a component; a guest is a component of the exec-host:sandbox world (wasm-tools component new makes one from a module)"
    )]
    CoreModule,
    #[error("it is WebAssembly of a version or layer this host does not know ({:02x} {:02x} {:02x} {:02x})", .0[0], .0[1], .0[2], .0[3])]
    UnknownVersion([u8; 4]),
    #[error("it is not WebAssembly (it does not start with \\0asm)")]
    NotWasm,
}

/// A guest that imports what the sandbox does not provide (the first five of them).
#[derive(Debug, thiserror::Error)]
#[error(
    "it imports {}, which the sandbox does not provide: a guest may import only exec-host:sandbox's tools, tool-search, console and state and the WASI interfaces listed in the WIT's README ({})",
    .imports.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", "),
    WASI_INTERFACES.join(", ")
)]
pub(crate) struct ForeignImports {
    pub imports: Vec<String>,
}

/// Whether `bytes` can be a guest at all, judged from the binary's preamble before anything
/// compiles it: a component, not a core module or something else. `Err` says what it is.
pub(crate) fn check_is_component(bytes: &[u8]) -> Result<(), NotAComponent> {
    // Every WebAssembly binary starts with `\0asm` and a 4-byte version: a core module's is
    // 1 (`01 00 00 00`); a component's is `0d 00` (the component-model version) and layer 1.
    const MAGIC: &[u8] = b"\0asm";
    const COMPONENT: [u8; 4] = [0x0d, 0x00, 0x01, 0x00];
    const CORE_MODULE: [u8; 4] = [0x01, 0x00, 0x00, 0x00];
    match bytes.get(..8) {
        Some(head) if head.starts_with(MAGIC) && head[4..] == COMPONENT => Ok(()),
        Some(head) if head.starts_with(MAGIC) && head[4..] == CORE_MODULE => Err(NotAComponent::CoreModule),
        Some(head) if head.starts_with(MAGIC) => Err(NotAComponent::UnknownVersion([head[4], head[5], head[6], head[7]])),
        _ => Err(NotAComponent::NotWasm),
    }
}

/// Refuses a guest that imports anything outside [`WASI_INTERFACES`] and
/// [`SANDBOX_INTERFACES`] (a file system, sockets, HTTP, …): `imports` are the component's
/// import names, `package:name/interface@version`. Every guest passes this before it is
/// linked, the built-in one included, so the list above is the whole of what a script's
/// engine can reach.
pub(crate) fn check_imports<'a>(imports: impl IntoIterator<Item = &'a str>) -> Result<(), ForeignImports> {
    let refused: Vec<&str> = imports
        .into_iter()
        .filter(|import| {
            let interface = import.split('@').next().unwrap_or(import);
            !WASI_INTERFACES.contains(&interface) && !SANDBOX_INTERFACES.contains(&interface)
        })
        .collect();
    match refused.as_slice() {
        [] => Ok(()),
        _ => Err(ForeignImports { imports: refused.iter().take(5).map(|name| name.to_string()).collect() }),
    }
}

/// What the host answers for the guest's imports of our own contract.
pub(crate) trait GuestHost: WasiView + Send + 'static {
    /// `tools.call`: starts a call without blocking; `done` when it is answered (or
    /// refused) at once.
    fn call(&mut self, name: String, args_json: String) -> Started;

    /// `tools.cancel-call`: stops started call `id`, which still finishes (with the error of
    /// its cancellation unless it finished first); an unknown or finished id is ignored.
    fn cancel_call(&mut self, id: u32);

    /// `tools.start-timer`: starts a timer due in `delay_ms`; `Err` is the script's message
    /// when it may not have another one pending.
    fn start_timer(&mut self, delay_ms: u32) -> Result<u32, String>;

    /// `tools.cancel-timer`: forgets a pending timer; an unknown id is ignored.
    fn cancel_timer(&mut self, id: u32);

    /// `tools.wait-next`: waits for at least one started call to finish or one timer to
    /// fall due, and returns every call finished and every timer due by then; empty when
    /// no call is in flight and no timer is pending. An error traps the guest.
    fn wait_next(&mut self) -> impl Future<Output = wasmtime::Result<Vec<Event>>> + Send;

    /// `tool-search.search`: answers `tools.ToolSearch(args)` at once.
    fn search(&mut self, args_json: String) -> Result<String, String>;

    /// `tool-search.explain-not-a-function`: the message of the engine's `not a function`
    /// thrown at `line` and `column` of the script, naming what it called.
    fn explain_not_a_function(&mut self, line: u32, column: u32) -> Option<String>;

    /// `console.write`: one line of the script's console output, and how many units of
    /// it the guest already cut.
    fn console_write(&mut self, level: Level, message: String, cut_units: u64);

    /// `state.load`: the JSON text of the value the conversation keeps under `key`;
    /// `Err` is the message `load` throws.
    fn load(&mut self, key: String) -> impl Future<Output = Result<Option<String>, String>> + Send;

    /// `state.store`: keeps `value_json` under `key` (removes `key` for `None`); `Err` is
    /// the message `store` throws.
    fn store(&mut self, key: String, value_json: Option<String>) -> impl Future<Output = Result<(), String>> + Send;
}

/// Links exactly the interfaces above: no filesystem, no sockets.
pub(crate) fn add_to_linker<T: GuestHost>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, io, random};
    use wasmtime_wasi::random::WasiRandom;

    let l = linker;
    io::error::add_to_linker::<T, HasTable>(l, |s| s.ctx().table)?;
    io::poll::add_to_linker::<T, HasTable>(l, |s| s.ctx().table)?;
    io::streams::add_to_linker::<T, HasTable>(l, |s| s.ctx().table)?;
    clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?;
    random::random::add_to_linker::<T, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    random::insecure::add_to_linker::<T, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<T, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)?;
    cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)?;
    generated::Sandbox::add_to_linker::<T, Imports<'static, T>>(l, |s| Imports(s))?;
    Ok(())
}

/// The WASI I/O interfaces need only the resource table.
struct HasTable;

impl HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}

/// A [`GuestHost`] seen through the generated traits.
struct Imports<'a, T>(&'a mut T);

impl<T: GuestHost> HasData for Imports<'static, T> {
    type Data<'a> = Imports<'a, T>;
}

impl<T: GuestHost> tools::Host for Imports<'_, T> {
    fn call(&mut self, name: String, args_json: String) -> Started {
        self.0.call(name, args_json)
    }

    fn cancel_call(&mut self, id: u32) {
        self.0.cancel_call(id)
    }

    fn start_timer(&mut self, delay_ms: u32) -> Result<u32, String> {
        self.0.start_timer(delay_ms)
    }

    fn cancel_timer(&mut self, id: u32) {
        self.0.cancel_timer(id)
    }

    async fn wait_next(&mut self) -> wasmtime::Result<Vec<Event>> {
        self.0.wait_next().await
    }
}

impl<T: GuestHost> tool_search::Host for Imports<'_, T> {
    fn search(&mut self, args_json: String) -> Result<String, String> {
        self.0.search(args_json)
    }

    fn explain_not_a_function(&mut self, line: u32, column: u32) -> Option<String> {
        self.0.explain_not_a_function(line, column)
    }
}

impl<T: GuestHost> console::Host for Imports<'_, T> {
    fn write(&mut self, level: Level, message: String, cut_units: u64) {
        self.0.console_write(level, message, cut_units)
    }
}

impl<T: GuestHost> state::Host for Imports<'_, T> {
    async fn load(&mut self, key: String) -> Result<Option<String>, String> {
        self.0.load(key).await
    }

    async fn store(&mut self, key: String, value_json: Option<String>) -> Result<(), String> {
        self.0.store(key, value_json).await
    }
}
