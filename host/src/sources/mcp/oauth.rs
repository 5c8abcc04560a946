//! OAuth for HTTP MCP servers, as the MCP authorization specification describes it, through
//! rmcp's `auth` feature: protected resource metadata (RFC 9728), authorization server
//! metadata (RFC 8414, OpenID discovery), client identity by pre-registration, a client ID
//! metadata document or dynamic registration (RFC 7591), then the sign-in a person takes
//! ([`authorize`], shared with HTTP APIs), refresh, and step-up for a scope a call needs.
//! Tokens are kept in the [`CredentialsFile`].

use std::sync::Arc;

use rmcp::transport::auth::{AuthorizationManager, OAuthClientConfig, WWWAuthenticateParams};

use crate::sources::oauth::{
    CredentialsFile, Holder, Login, MAX_STEP_UPS, OAuthClient, RefusedUrl, SignIn, SignInError, authorize, check_metadata,
    server_url,
};

/// Checks the protected resource metadata URL a server's challenge points at, before it is
/// fetched.
pub(crate) fn check_challenge(challenge: &str, url: &str) -> Result<(), RefusedUrl> {
    let Ok(base) = reqwest::Url::parse(url) else { return Ok(()) };
    match WWWAuthenticateParams::parse(challenge, &base).resource_metadata_url {
        Some(metadata) => server_url("the protected resource metadata", metadata.as_str()).map(drop),
        None => Ok(()),
    }
}

/// The authorization manager of `server` at `url`: with its kept tokens when there are
/// some, else none yet (its requests then go out without a token, and the server's answer
/// says whether one is needed).
pub(crate) async fn manager_for(
    server: &str,
    url: &str,
    client: &OAuthClient,
    credentials: &CredentialsFile,
) -> Result<AuthorizationManager, SignInError> {
    let oauth = |source: Box<dyn std::error::Error + Send + Sync>| SignInError::OAuth { url: url.to_string(), source };
    let holder = Holder::Server(server.to_string());
    let kept = |source: Box<dyn std::error::Error + Send + Sync>| SignInError::KeptTokens { holder: holder.clone(), source };
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| oauth(e.into()))?;
    manager.set_credential_store(credentials.store_for(&holder, url));
    match credentials.sign_in(&holder, url) {
        Ok(SignIn::SignedIn) => {}
        Ok(_) => return Ok(manager),
        // A server that asks for no token does not depend on the file; one that does is
        // told to sign in, and the sign-in says what is wrong with the file.
        Err(why) => {
            tracing::warn!("server `{server}`: no kept token is used: {why}");
            return Ok(manager);
        }
    }
    // The endpoints the kept tokens will be refreshed at pass the rule before any is used.
    let resolved = manager.resolve_metadata().await.map_err(|e| kept(e.into()))?;
    check_metadata(&resolved.metadata).map_err(|e| oauth(e.into()))?;
    manager.set_metadata(resolved.metadata);
    match manager.initialize_from_store().await {
        Ok(true) => {}
        Ok(false) => return Ok(manager),
        Err(e) => return Err(kept(e.into())),
    }
    // A confidential client refreshes with its secret, which the kept tokens do not hold.
    if let (Some(id), Some(secret)) = (&client.client_id, &client.client_secret) {
        let config = OAuthClientConfig::new(id.clone(), url.to_string()).with_client_secret(secret.clone());
        manager.configure_client(config).map_err(|e| oauth(e.into()))?;
    }
    Ok(manager)
}

/// A connected server's OAuth, for the calls it refuses with a challenge (a token that
/// lapsed past refreshing, or a scope the call needs): a new sign-in when a person can be
/// sent to one, at most [`MAX_STEP_UPS`] times per connection.
pub(crate) struct StepUp {
    pub server: String,
    pub url: String,
    pub client: OAuthClient,
    pub credentials: CredentialsFile,
    pub login: Option<Login>,
    pub manager: Arc<tokio::sync::Mutex<AuthorizationManager>>,
    pub used: std::sync::atomic::AtomicU32,
}

impl StepUp {
    /// Signs in again for `challenge`; the connection's requests carry the new token after.
    pub(crate) async fn sign_in_again(&self, challenge: &str) -> Result<(), SignInError> {
        let server = &self.server;
        let holder = || Holder::Server(server.clone());
        let Some(login) = &self.login else {
            return Err(SignInError::NobodyToAsk { holder: holder(), why: challenge_error(challenge, &self.url) });
        };
        if self.used.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= MAX_STEP_UPS {
            return Err(SignInError::TooManySignIns { holder: holder(), why: challenge_error(challenge, &self.url) });
        }
        let manager = sign_in(server, &self.url, &self.client, &self.credentials, login, Some(challenge)).await?;
        *self.manager.lock().await = manager;
        Ok(())
    }
}

/// The `error` (and the scope asked for) of a challenge, for a sentence.
fn challenge_error(challenge: &str, url: &str) -> String {
    let params = reqwest::Url::parse(url).map(|base| WWWAuthenticateParams::parse(challenge, &base)).unwrap_or_default();
    match (params.error, params.scope) {
        (Some(error), Some(scope)) => format!("{error}, scope {scope}"),
        (Some(error), None) => error,
        (None, Some(scope)) => format!("scope {scope}"),
        (None, None) => "no token, or one it no longer accepts".into(),
    }
}

/// Signs `server` in: discovers where, sends a person there ([`authorize`]) and keeps the
/// tokens. `challenge` is the server's `WWW-Authenticate` header when it sent one (its scope
/// is asked for, with the scopes granted before on a step-up).
pub(crate) async fn sign_in(
    server: &str,
    url: &str,
    client: &OAuthClient,
    credentials: &CredentialsFile,
    login: &Login,
    challenge: Option<&str>,
) -> Result<AuthorizationManager, SignInError> {
    // With the causes: "metadata discovery failed" says little without its reason.
    let fail = |source: Box<dyn std::error::Error + Send + Sync>| SignInError::Failed { url: url.to_string(), source };
    // Nobody is sent anywhere for tokens that could not be kept.
    credentials.check_place()?;
    if let Some(challenge) = challenge {
        check_challenge(challenge, url).map_err(|e| fail(e.into()))?;
    }
    let holder = Holder::Server(server.to_string());
    let mut manager = AuthorizationManager::new(url).await.map_err(|e| fail(e.into()))?;
    manager.set_credential_store(credentials.store_for(&holder, url));
    let metadata = manager.resolve_metadata_from_challenge(challenge).await.map_err(|e| fail(e.into()))?;
    check_metadata(&metadata.metadata).map_err(|e| fail(e.into()))?;
    manager.set_metadata(metadata.metadata);
    // A step-up asks for what was granted before and what the server now wants.
    let mut scopes = Vec::new();
    let wanted = challenge.and_then(|challenge| {
        reqwest::Url::parse(url).ok().and_then(|base| WWWAuthenticateParams::parse(challenge, &base).scope)
    });
    if let Some(wanted) = wanted {
        scopes = credentials.granted_scopes(&holder, url);
        for scope in wanted.split_whitespace() {
            if !scopes.iter().any(|kept| kept == scope) {
                scopes.push(scope.to_string());
            }
        }
    }
    authorize(&holder, url, manager, client, scopes, challenge, login).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_points_only_at_metadata_a_sign_in_may_fetch() {
        let challenge = r#"Bearer resource_metadata="http://attacker.example/.well-known/oauth-protected-resource""#;
        assert!(check_challenge(challenge, "http://127.0.0.1:9/mcp").is_err());
        assert!(check_challenge(r#"Bearer resource_metadata="/.well-known/x""#, "http://127.0.0.1:9/mcp").is_ok());
    }
}
