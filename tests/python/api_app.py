"""A small HTTP API for the tests of HTTP APIs as tool sources, described by FastAPI itself
(its /openapi.json, OpenAPI 3.1): notes behind a bearer token, a report behind OAuth 2.1's
client credentials grant (its /token endpoint issues the tokens, each good for one request,
so the host must ask for a new one when the API refuses the old one), and an echo of the
Authorization header that reached it.

    python api_app.py BEARER_TOKEN CLIENT_ID CLIENT_SECRET

prints its port on the first line of stdout, then serves on 127.0.0.1 until it is killed.
"""

import base64
import secrets
import socket
import sys
import urllib.parse
from typing import Optional

import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel

BEARER, CLIENT_ID, CLIENT_SECRET = sys.argv[1:4]

app = FastAPI(title="Notes", version="1")
bearer = HTTPBearer()
issued: dict[str, int] = {}
tokens_issued = 0


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


@app.post("/token", include_in_schema=False)
async def token(request: Request) -> JSONResponse:
    global tokens_issued
    form = urllib.parse.parse_qs((await request.body()).decode())
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    client = base64.b64decode(encoded).decode() if scheme.lower() == "basic" else ""
    if form.get("grant_type") != ["client_credentials"] or client != f"{CLIENT_ID}:{CLIENT_SECRET}":
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
