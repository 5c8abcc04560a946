//! Leaves every layer uses: reading a bounded text file without following what a hostile
//! workspace may put in its place (`text_file`), locks that outlive a panic (`lock`), the
//! user's base folders (`dirs`), whether a place is this user's own and kept out of the
//! workspace (`private`), bytes as hex (`hex`), text cut to a bound (`text`), and an error
//! with its causes as one sentence (`report`).

pub mod dirs;
pub mod hex;
pub mod lock;
pub mod private;
pub mod report;
pub mod text;
pub mod text_file;
pub mod vocabulary;
