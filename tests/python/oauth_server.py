"""An MCP server behind OAuth, written with the official MCP Python SDK's server auth, for the
tests of exec-host as an OAuth client.

    oauth_server.py LOG TOKEN_SECONDS

The server is its own authorization server (the SDK's routes: metadata, dynamic registration,
authorize, token), approves every authorization request at once (the redirect carries the
code), binds its tokens to the MCP endpoint as their resource (RFC 8707), and issues access
tokens that expire after TOKEN_SECONDS with refresh tokens that rotate. Each grant and each
tool call is appended to LOG as one line: `authorization_code`, `refresh_token`,
`call <token suffix>`. The first line on stdout is the MCP endpoint's URL.
"""

import secrets
import socket
import sys
import time

import uvicorn

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

LOG, TOKEN_SECONDS = sys.argv[1], int(sys.argv[2])
SCOPE = "notes"


def note(line: str) -> None:
    with open(LOG, "a") as log:
        log.write(line + "\n")


class Provider:
    """Clients, codes and tokens, in memory."""

    def __init__(self, resource: str) -> None:
        self.resource = resource
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        if authorization_code.resource != self.resource:
            raise TokenError("invalid_target", f"tokens here are for {self.resource}")
        note("authorization_code")
        return self.issue(client.client_id, authorization_code.scopes)

    async def load_refresh_token(self, client, refresh_token: str):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        # Rotated: the old refresh token is spent.
        self.refresh.pop(refresh_token.token, None)
        note("refresh_token")
        return self.issue(client.client_id, scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + TOKEN_SECONDS
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=self.resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=self.resource)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=TOKEN_SECONDS, refresh_token=refresh, scope=" ".join(scopes)
        )


def main() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider = Provider(f"{base}/mcp")
    server = MCPServer(
        "notes",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]),
            required_scopes=[SCOPE],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def note_count() -> str:
        """Says which token the call came with (its last characters)."""
        token = get_access_token()
        suffix = token.token[-6:] if token else "none"
        note(f"call {suffix}")
        return f"called with ...{suffix}"

    print(f"{base}/mcp", flush=True)
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
