//! An API a person signs in to: OAuth 2.1's authorization code grant with PKCE. The sign-in
//! is the MCP client's own ([`authorize`]: the loopback redirect, PKCE S256, `state`, the
//! bounded wait), at the endpoints the API's configuration names instead of discovered ones.
//! The tokens are kept in the same credentials file, under the API's name and bound to its
//! base URL, and refreshed at its token endpoint by rmcp's authorization manager shortly
//! before they expire, or at once when the API refuses one.

use std::sync::atomic::{AtomicU32, Ordering};

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata, OAuthClientConfig};

use crate::sources::oauth::{CredentialsFile, Holder, Login, MAX_STEP_UPS, OAuthClient, SignInError, SignInSetup, authorize};

/// Where an API's person signs in, and with which client.
#[derive(Clone, Debug)]
pub(crate) struct Endpoints {
    pub authorization_url: String,
    pub token_url: String,
    pub client: OAuthClient,
    pub scopes: Vec<String>,
}

/// The sign-in of one API, shared by its operations: one manager, so one request at a time
/// refreshes or sends a person, and the others wait for its token.
pub(crate) struct PersonSignIn {
    holder: Holder,
    /// The API's base URL: the resource its tokens are bound to.
    resource: String,
    endpoints: Endpoints,
    auth: SignInSetup,
    manager: tokio::sync::Mutex<Option<AuthorizationManager>>,
    /// Sign-ins this process sent a person to for the API's calls.
    sign_ins: AtomicU32,
}

impl PersonSignIn {
    pub fn new(api: &str, resource: &str, endpoints: Endpoints, auth: SignInSetup) -> Self {
        PersonSignIn {
            holder: Holder::Api(api.to_string()),
            resource: resource.to_string(),
            endpoints,
            auth,
            manager: tokio::sync::Mutex::new(None),
            sign_ins: AtomicU32::new(0),
        }
    }

    /// An access token for a request: the kept one (refreshed when it is about to expire),
    /// a refreshed one when `renew` (the API refused the last), or, when neither can be had
    /// and a person can be sent, one from a new sign-in (at most [`MAX_STEP_UPS`] per run).
    pub async fn token(&self, renew: bool) -> Result<String, SignInError> {
        let mut held = self.manager.lock().await;
        if held.is_none() {
            *held = Some(kept_manager(&self.holder, &self.resource, &self.endpoints, self.auth.credentials.as_ref()).await?);
        }
        let manager = held.as_ref().expect("a manager was just set");
        let refreshed = if renew { manager.refresh_token().await.map(drop) } else { Ok(()) };
        // The refreshed token is in the store, where the manager reads it.
        let got = match refreshed {
            Ok(()) => manager.get_access_token().await,
            Err(e) => Err(e),
        };
        let why = match got {
            Ok(token) => return Ok(token),
            Err(AuthError::AuthorizationRequired) if renew => "the API refused its token and there is no refresh token",
            Err(AuthError::AuthorizationRequired) => "no sign-in is kept, or it lapsed",
            Err(AuthError::TokenRefreshRejected(_)) => "the authorization server refused to refresh the token",
            Err(other) => {
                let source = Box::new(other);
                return Err(SignInError::KeptTokens { holder: self.holder.clone(), source });
            }
        };
        let Some(login) = &self.auth.login else {
            return Err(SignInError::NobodyToAsk { holder: self.holder.clone(), why: why.to_string() });
        };
        if self.sign_ins.fetch_add(1, Ordering::SeqCst) >= MAX_STEP_UPS {
            return Err(SignInError::TooManySignIns { holder: self.holder.clone(), why: why.to_string() });
        }
        let manager = sign_in(&self.holder, &self.resource, &self.endpoints, self.auth.credentials.as_ref(), login).await?;
        let token = manager
            .get_access_token()
            .await
            .map_err(|e| SignInError::Failed { url: self.endpoints.token_url.clone(), source: Box::new(e) })?;
        *held = Some(manager);
        Ok(token)
    }
}

/// Signs API `api` (whose requests go to `resource`) in with a person, as `exec-host mcp
/// login` does, and checks the tokens were written to `credentials`.
pub(crate) async fn log_in(
    api: &str,
    resource: &str,
    endpoints: &Endpoints,
    credentials: &CredentialsFile,
    login: &Login,
) -> Result<(), SignInError> {
    let holder = Holder::Api(api.to_string());
    sign_in(&holder, resource, endpoints, Some(credentials), login).await?;
    // A login is for later runs: tokens this process alone holds are no login.
    credentials.check_saved(&holder)?;
    Ok(())
}

/// A manager for the API's authorization server as its configuration names it, keeping its
/// tokens in `credentials` (in memory only without one).
async fn manager(
    holder: &Holder,
    resource: &str,
    endpoints: &Endpoints,
    credentials: Option<&CredentialsFile>,
) -> Result<AuthorizationManager, SignInError> {
    let failed = |source: AuthError| SignInError::OAuth { url: endpoints.token_url.clone(), source: Box::new(source) };
    // The endpoints are the configuration's, not a server's choice: one on a private network
    // is as good as the person who wrote it meant it to be.
    let mut manager = AuthorizationManager::new_allowing_private_addresses(resource).await.map_err(failed)?;
    let mut metadata = AuthorizationMetadata::default();
    metadata.authorization_endpoint = endpoints.authorization_url.clone();
    metadata.token_endpoint = endpoints.token_url.clone();
    metadata.code_challenge_methods_supported = Some(vec!["S256".into()]);
    metadata.response_types_supported = Some(vec!["code".into()]);
    manager.set_metadata(metadata);
    if let Some(credentials) = credentials {
        credentials.check_place()?;
        manager.set_credential_store(credentials.store_for(holder, resource));
    }
    Ok(manager)
}

/// The manager with the kept tokens, when there are some for this client (a token kept for
/// another client ID is not refreshed: rmcp refuses, and the next request asks for a
/// sign-in; its access token is still sent until it expires).
async fn kept_manager(
    holder: &Holder,
    resource: &str,
    endpoints: &Endpoints,
    credentials: Option<&CredentialsFile>,
) -> Result<AuthorizationManager, SignInError> {
    let mut manager = manager(holder, resource, endpoints, credentials).await?;
    let kept = |source: AuthError| SignInError::KeptTokens { holder: holder.clone(), source: Box::new(source) };
    if manager.initialize_from_store().await.map_err(kept)? {
        let id = endpoints.client.client_id.clone().unwrap_or_default();
        let mut config = OAuthClientConfig::new(id, endpoints.authorization_url.clone());
        if let Some(secret) = &endpoints.client.client_secret {
            config = config.with_client_secret(secret.clone());
        }
        manager.configure_client(config).map_err(kept)?;
    }
    Ok(manager)
}

/// Sends a person to the API's authorization server and keeps the tokens.
async fn sign_in(
    holder: &Holder,
    resource: &str,
    endpoints: &Endpoints,
    credentials: Option<&CredentialsFile>,
    login: &Login,
) -> Result<AuthorizationManager, SignInError> {
    let manager = manager(holder, resource, endpoints, credentials).await?;
    authorize(holder, &endpoints.authorization_url, manager, &endpoints.client, endpoints.scopes.clone(), None, login).await
}
