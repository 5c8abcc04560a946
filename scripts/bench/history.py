"""One line of `docs/bench-history.jsonl` from the Python benches, in the format of the Rust
bench's `--record`: the commit measured, whether the tree was dirty, the date, the cores,
whether the run was quick, the medians in µs by line and the extra figures as `line.key`."""

import datetime
import json
import os
import subprocess
import sys


def record(path: str, median_us: dict, also: dict, quick: bool) -> None:
    """Appends the line to `path`."""

    def git(*argv: str) -> str:
        out = subprocess.run(["git", *argv], capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""

    line = {
        "commit": git("rev-parse", "--short=12", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "cores": os.cpu_count(),
        "quick": quick,
        "median_us": median_us,
        "also": also,
    }
    with open(path, "a") as file:
        file.write(json.dumps(line, separators=(",", ":")) + "\n")
    print(f"recorded in {path}", file=sys.stderr)
