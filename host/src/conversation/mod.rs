//! The conversation: what the model and the client read. The provider-neutral messages
//! (`message`) and their rendering for three model APIs (`provider`), the names-only
//! announcement told at the conversation's tail (`announcement`), a result's projections for the
//! model, the history and a client (`render`), and the store that keeps the whole text of a
//! compacted result (`results`). It uses the catalogue and the sandbox's outcomes below it,
//! never the session above.

pub mod announcement;
pub mod message;
pub mod provider;
pub mod render;
pub mod reply;
pub mod results;
