"""$BROWSER for headless sign-ins in the tests: fetches the authorization URL (its last
argument) and follows its redirects to exec-host's loopback listener, as a browser whose user
agrees.

    follow_redirect.py [--opened FILE] [--crowd N] URL

`--opened FILE` appends the URL to FILE first, so a test can tell what was opened.
`--crowd N` first opens N connections to the loopback listener (the URL's `redirect_uri`)
that send nothing, and keeps them open while it follows the redirect."""

import argparse
import socket
import urllib.parse
import urllib.request

arguments = argparse.ArgumentParser()
arguments.add_argument("--opened")
arguments.add_argument("--crowd", type=int, default=0)
arguments.add_argument("url")
args = arguments.parse_args()
if args.opened:
    with open(args.opened, "a") as opened:
        print(args.url, file=opened)
crowd = []
if args.crowd:
    query = urllib.parse.parse_qs(urllib.parse.urlparse(args.url).query)
    redirect = urllib.parse.urlparse(query["redirect_uri"][0])
    crowd = [socket.create_connection((redirect.hostname, redirect.port)) for _ in range(args.crowd)]
urllib.request.urlopen(args.url, timeout=30).read()
