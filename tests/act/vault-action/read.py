"""The vault stand-in: `secrets` lines resolved against the JSON file REHEARSAL_VAULT."""

from __future__ import annotations

import json
import os
import sys
import uuid


def main() -> int:
    if not os.environ["IN_ROLE"]:
        print("::error::role is empty (the repository variable is not set)")
        return 1
    with open(os.environ["REHEARSAL_VAULT"], encoding="utf-8") as fh:
        store = json.load(fh)
    values: dict[str, str] = {}
    for entry in os.environ["IN_SECRETS"].split(";"):
        entry = entry.strip()
        if not entry:
            continue
        spec, _, name = entry.partition("|")
        path, key = spec.split()
        try:
            values[name.strip()] = store[path][key]
        except KeyError:
            print(f"::error::no secret {key} at {path}")
            return 1
    target = "GITHUB_ENV" if os.environ["IN_EXPORT_ENV"] == "true" else "GITHUB_OUTPUT"
    with open(os.environ[target], "a", encoding="utf-8") as out:
        for name, value in values.items():
            delimiter = f"EOF{uuid.uuid4().hex}"
            out.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    print(f"read {len(values)} secrets: {', '.join(sorted(values))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
