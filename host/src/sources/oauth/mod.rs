//! OAuth sign-ins, shared by the MCP servers and the HTTP APIs that ask for them: who the
//! client is and the part a person takes (`sign_in`: [`OAuthClient`], [`Login`], the loopback
//! redirect and its bounded wait, the one rule for URLs a server chose), and where the tokens
//! are kept between runs (`credentials`). What is particular to MCP (discovery, step-up) is in
//! `mcp::oauth`; to APIs (the endpoints their configuration names), in
//! `openapi::authorization`.

mod credentials;
mod sign_in;

pub use credentials::{CredentialsError, CredentialsFile, Holder, MAX_CREDENTIALS_FILE_BYTES, SignIn};
pub use sign_in::{DEFAULT_LOGIN_WAIT, Login, MAX_STEP_UPS, OAuthClient, SignInError};
pub(crate) use sign_in::{RefusedUrl, SignInSetup, authorize, check_metadata, server_url};
