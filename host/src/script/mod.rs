//! A script's text as the host reads it, never run here: bounded parsing on a thread sized
//! for it (`parse`), TypeScript's types erased and positions mapped back (`typescript`), and
//! the name of what a failed call called (`callee`). It depends on nothing else of the
//! crate.

pub mod callee;
pub mod parse;
pub mod typescript;
