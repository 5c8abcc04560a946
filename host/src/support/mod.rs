//! Leaves every layer uses: reading a bounded text file without following what a hostile
//! workspace may put in its place (`text_file`), locks that outlive a panic (`lock`), and
//! the user's base folders (`dirs`).

pub mod dirs;
pub mod lock;
pub mod text_file;
