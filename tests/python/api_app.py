"""A small HTTP API for the tests of HTTP APIs as tool sources, described by FastAPI itself
(its /openapi.json, OpenAPI 3.1): notes behind a bearer token, a report behind OAuth 2.1's
client credentials grant (its /token endpoint issues the tokens, each good for one request,
so the host must ask for a new one when the API refuses the old one), a profile behind OAuth
2.1's authorization code grant with PKCE (its /authorize endpoint agrees at once, as a person
who signs in would; its access tokens last PERSON_TOKEN_SECONDS, its refresh tokens are
rotated at each use, and an operation revokes every access token), and an echo of the
Authorization header that reached it.

    python api_app.py BEARER_TOKEN CLIENT_ID CLIENT_SECRET [PERSON_TOKEN_SECONDS]

The public client of the authorization code grant is `notes-cli`. Prints its port on the
first line of stdout, then serves on 127.0.0.1 until it is killed.
"""

import base64
import hashlib
import secrets
import socket
import sys
import time
import urllib.parse
from typing import Optional

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

BEARER, CLIENT_ID, CLIENT_SECRET = sys.argv[1:4]
PERSON_TOKEN_SECONDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3600
PERSON_CLIENT = "notes-cli"

app = FastAPI(title="Notes", version="1")
bearer = HTTPBearer()
issued: dict[str, int] = {}
tokens_issued = 0
# The authorization code grant: codes waiting for their exchange, access tokens with their
# serial number and end, refresh tokens, and the grants made.
codes: dict[str, dict] = {}
person_tokens: dict[str, tuple[int, float]] = {}
refresh_tokens: set[str] = set()
grants = {"authorization_code": 0, "refresh_token": 0}


class NewNote(BaseModel):
    title: str
    body: Optional[str] = None
    tags: list[str] = []


class Note(NewNote):
    id: int


notes: dict[int, Note] = {}


def with_bearer(credentials: HTTPAuthorizationCredentials = Depends(bearer)) -> None:
    if credentials.credentials != BEARER:
        raise HTTPException(401, "that token is not this API's")


def with_client_token(credentials: HTTPAuthorizationCredentials = Depends(bearer)) -> None:
    uses = issued.get(credentials.credentials)
    if uses is None or uses <= 0:
        raise HTTPException(401, "the token is unknown or used up")
    issued[credentials.credentials] = uses - 1


def with_person_token(credentials: HTTPAuthorizationCredentials = Depends(bearer)) -> int:
    serial, end = person_tokens.get(credentials.credentials, (0, 0.0))
    if time.time() >= end:
        raise HTTPException(401, "the token is unknown, revoked or expired")
    return serial


@app.get("/authorize", include_in_schema=False)
def authorize(
    response_type: str, client_id: str, redirect_uri: str, state: str, code_challenge: str, code_challenge_method: str
) -> RedirectResponse:
    if response_type != "code" or client_id != PERSON_CLIENT or code_challenge_method != "S256":
        raise HTTPException(400, "not this API's client, or no PKCE S256")
    if not redirect_uri.startswith("http://127.0.0.1:"):
        raise HTTPException(400, "the redirect is not to a loopback listener")
    code = secrets.token_urlsafe(16)
    codes[code] = {"challenge": code_challenge, "redirect_uri": redirect_uri}
    return RedirectResponse(f"{redirect_uri}?{urllib.parse.urlencode({'code': code, 'state': state})}", status_code=302)


def person_grant(kind: str) -> JSONResponse:
    grants[kind] += 1
    access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    person_tokens[access] = (len(person_tokens) + 1, time.time() + PERSON_TOKEN_SECONDS)
    refresh_tokens.add(refresh)
    answer = {"access_token": access, "token_type": "Bearer", "expires_in": PERSON_TOKEN_SECONDS, "refresh_token": refresh}
    return JSONResponse(answer)


def invalid_grant() -> JSONResponse:
    return JSONResponse({"error": "invalid_grant"}, status_code=400)


@app.post("/token", include_in_schema=False)
async def token(request: Request) -> JSONResponse:
    global tokens_issued
    form = urllib.parse.parse_qs((await request.body()).decode())
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    client = base64.b64decode(encoded).decode() if scheme.lower() == "basic" else ""
    grant = form.get("grant_type", [""])[0]
    if grant in ("authorization_code", "refresh_token"):
        # A public client names itself in the form (or with an empty secret).
        if form.get("client_id", [client.partition(":")[0]])[0] != PERSON_CLIENT:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if grant == "refresh_token":
            old = form.get("refresh_token", [""])[0]
            if old not in refresh_tokens:
                return invalid_grant()
            refresh_tokens.discard(old)
            return person_grant("refresh_token")
        waiting = codes.pop(form.get("code", [""])[0], None)
        verifier = form.get("code_verifier", [""])[0].encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
        if waiting is None or waiting["challenge"] != challenge or form.get("redirect_uri") != [waiting["redirect_uri"]]:
            return invalid_grant()
        return person_grant("authorization_code")
    if grant != "client_credentials" or client != f"{CLIENT_ID}:{CLIENT_SECRET}":
        return JSONResponse({"error": "invalid_client"}, status_code=401)
    value = secrets.token_urlsafe(24)
    issued[value] = 1
    tokens_issued += 1
    return JSONResponse({"access_token": value, "token_type": "Bearer", "expires_in": 3600})


@app.post("/notes", operation_id="createNote", summary="Create a note", status_code=201, dependencies=[Depends(with_bearer)])
def create_note(note: NewNote) -> Note:
    saved = Note(id=len(notes) + 1, **note.model_dump())
    notes[saved.id] = saved
    return saved


@app.get("/notes/{note_id}", operation_id="getNote", summary="Get a note", dependencies=[Depends(with_bearer)])
def get_note(note_id: int) -> Note:
    if note_id not in notes:
        raise HTTPException(404, f"no note {note_id}")
    return notes[note_id]


@app.get("/reports/usage", operation_id="usageReport", summary="Report the API's use", dependencies=[Depends(with_client_token)])
def usage() -> dict[str, int]:
    return {"notes": len(notes), "tokens_issued": tokens_issued}


@app.get("/me", operation_id="myProfile", summary="The signed-in person's profile")
def my_profile(serial: int = Depends(with_person_token)) -> dict:
    return {"user": "ada", "token_serial": serial, "grants": grants}


@app.post("/me/sign-out-everywhere", operation_id="revokeAccessTokens", summary="Revoke every access token")
def revoke(serial: int = Depends(with_person_token)) -> dict[str, int]:
    revoked = len(person_tokens)
    person_tokens.clear()
    return {"revoked": revoked}


@app.get("/whoami", operation_id="whoami", summary="Echo the credential that reached the API")
def whoami(request: Request) -> dict[str, str]:
    return {"authorization": request.headers.get("authorization", "")}


if __name__ == "__main__":
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    # Listening before the port is told: a request that comes before uvicorn runs waits.
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])
