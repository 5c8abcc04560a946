"""An MCP endpoint behind an authorization server that misbehaves, for the tests of exec-host
as an OAuth client. Standard library only.

    hostile_auth_server.py MODE

The endpoint (`/mcp`) answers every request 401 with a challenge that points at its
protected resource metadata; the metadata points at this same server as the authorization
server. MODE says what goes wrong:

  redirect   the authorization server's metadata redirects to another origin
  huge       that metadata is 8 MiB of JSON
  endless    that metadata never ends (a chunked body sent for as long as it is read)
  malformed  that metadata is not JSON
  issuer     that metadata names another issuer
  error      the token endpoint answers an OAuth error
  rejected   the token endpoint issues a token the endpoint then refuses
  authorize=URL           the metadata's authorization endpoint is URL
  token=URL               the metadata's token endpoint is URL
  resource-metadata=URL   the challenge points at URL for the protected resource metadata

The first line on stdout is the endpoint's URL. Another server on another port (the target
of `redirect`) logs what reaches it: a line `other <path>` on stderr.
"""

import json
import socket
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
# A mode `name=URL` puts URL where the server names `name`.
NAMED, _, NAMED_URL = MODE.partition("=")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


PORT, OTHER = free_port(), free_port()
BASE, OTHER_BASE = f"http://127.0.0.1:{PORT}", f"http://127.0.0.1:{OTHER}"


class Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def send_json(self, status: int, body, headers=()) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class Other(Quiet):
    def do_GET(self) -> None:
        print(f"other {self.path}", file=sys.stderr, flush=True)
        self.send_json(200, {"issuer": OTHER_BASE})


class Hostile(Quiet):
    def challenge(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        metadata = f"{BASE}/.well-known/oauth-protected-resource/mcp"
        if NAMED == "resource-metadata":
            metadata = NAMED_URL
        self.send_json(401, {"error": "unauthorized"}, [("WWW-Authenticate", f'Bearer resource_metadata="{metadata}"')])

    def do_POST(self) -> None:
        path = urllib.parse.urlparse(self.path).path
        if path == "/mcp":
            return self.challenge()
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if path == "/register":
            return self.send_json(201, {"client_id": "hostile-client", "redirect_uris": [], "token_endpoint_auth_method": "none"})
        if path == "/token" and MODE == "error":
            return self.send_json(400, {"error": "invalid_grant", "error_description": "the code was made up"})
        if path == "/token":
            return self.send_json(200, {"access_token": "tok-for-elsewhere-123456", "token_type": "Bearer", "expires_in": 3600})
        self.send_json(404, {})

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        if url.path == "/mcp":
            return self.challenge()
        if url.path.startswith("/.well-known/oauth-protected-resource"):
            return self.send_json(200, {"resource": f"{BASE}/mcp", "authorization_servers": [BASE]})
        if url.path.startswith("/.well-known/"):
            return self.authorization_server_metadata()
        if url.path == "/authorize":
            query = urllib.parse.parse_qs(url.query)
            target = query["redirect_uri"][0] + "?" + urllib.parse.urlencode({"code": "c0de", "state": query["state"][0]})
            self.send_response(302)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_json(404, {})

    def authorization_server_metadata(self) -> None:
        metadata = {
            "issuer": BASE,
            "authorization_endpoint": f"{BASE}/authorize",
            "token_endpoint": f"{BASE}/token",
            "registration_endpoint": f"{BASE}/register",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        }
        if NAMED == "authorize":
            metadata["authorization_endpoint"] = NAMED_URL
        if NAMED == "token":
            metadata["token_endpoint"] = NAMED_URL
        if MODE == "redirect":
            self.send_response(302)
            self.send_header("Location", f"{OTHER_BASE}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif MODE == "huge":
            metadata["padding"] = "x" * (8 << 20)
            self.send_json(200, metadata)
        elif MODE == "endless":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b'{"padding": "' + b"x" * 65536
            try:
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    chunk = b"x" * 65536
            except OSError:
                pass
        elif MODE == "malformed":
            data = b"<html>not json"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif MODE == "issuer":
            metadata["issuer"] = "https://impostor.example"
            self.send_json(200, metadata)
        else:
            self.send_json(200, metadata)


def main() -> None:
    other = ThreadingHTTPServer(("127.0.0.1", OTHER), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Hostile)
    print(f"{BASE}/mcp", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
