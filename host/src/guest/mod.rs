//! The host side of the guest boundary: bindings generated from `wit/`, one file per WIT
//! interface, and the one function that links them.
//!
//! Values cross as JSON text. Everything the guest sends is untrusted: the host parses it
//! with bounds and never unwraps it.

mod console;
mod tool_search;
mod tools;

mod generated {
    wasmtime::component::bindgen!({
        world: "sandbox",
        path: "../wit",
        imports: {
            // The one import that waits: everything else answers at once.
            "exec-host:sandbox/tools.wait-next": async | trappable,
        },
        exports: { default: async },
    });
}

pub(crate) use generated::exec_host::sandbox::console::Level;
pub(crate) use generated::exec_host::sandbox::tools::Completion;
pub(crate) use generated::{RunOptions, SandboxPre, ScriptError};

use wasmtime::component::{HasData, HasSelf, Linker, ResourceTable};

use crate::runtime::ExecState;

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
    &["exec-host:sandbox/tools", "exec-host:sandbox/tool-search", "exec-host:sandbox/console"];

/// Links exactly the interfaces above: no filesystem, no sockets.
pub(crate) fn add_to_linker(linker: &mut Linker<ExecState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::WasiView;
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, io, random};
    use wasmtime_wasi::random::WasiRandom;

    let l = linker;
    io::error::add_to_linker::<ExecState, HasTable>(l, |s| &mut s.table)?;
    io::poll::add_to_linker::<ExecState, HasTable>(l, |s| &mut s.table)?;
    io::streams::add_to_linker::<ExecState, HasTable>(l, |s| &mut s.table)?;
    clocks::wall_clock::add_to_linker::<ExecState, WasiClocks>(l, ExecState::clocks)?;
    clocks::monotonic_clock::add_to_linker::<ExecState, WasiClocks>(l, ExecState::clocks)?;
    random::random::add_to_linker::<ExecState, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    random::insecure::add_to_linker::<ExecState, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    random::insecure_seed::add_to_linker::<ExecState, WasiRandom>(l, |s| s.ctx().ctx.random())?;
    cli::exit::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::environment::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::stdin::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::stdout::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::stderr::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::terminal_input::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::terminal_output::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::terminal_stdin::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::terminal_stdout::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    cli::terminal_stderr::add_to_linker::<ExecState, WasiCli>(l, ExecState::cli)?;
    generated::Sandbox::add_to_linker::<ExecState, HasSelf<ExecState>>(l, |s| s)?;
    Ok(())
}

/// The WASI I/O interfaces need only the resource table.
struct HasTable;

impl HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}
