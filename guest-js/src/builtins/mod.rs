//! The ECMAScript built-ins the engine, as built for the sandbox, leaves out, written in
//! the script's realm: `Atomics` (QuickJS compiles it only where threads exist) and
//! ECMA-402's `Intl` (QuickJS has none), with a native half on ICU4X.
//!
//! Each file is a closure the engine runs once, after the web globals; like those, every
//! function it installs belongs to the sandbox realm, and it captures the built-ins it uses
//! first, so a script that patches them changes only its own behaviour.

pub mod intl;

/// `Atomics`, for one agent that cannot suspend.
pub const ATOMICS: &str = include_str!("atomics.js");
