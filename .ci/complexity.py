"""Hold product code to radon's complexity ranks: `radon cc -j` on standard input, offenders out.

Every function, method and class radon ranks D or worse (over 20) fails, anywhere in product
code; rank C (11 to 20) is allowed in server code for at most MAX_SERVER_C blocks, so a function
that must branch that much is the exception, and the list below names each one. Radon counts each
`and`/`or` and comprehension as a branch, as ruff's C901 (mccabe) does not, so it binds first.

    radon cc -j atlaso_site deposits beliefs diagnostics clients/python/src | python .ci/complexity.py
"""

from __future__ import annotations

import json
import sys

MAX_SERVER_C = 15
# The Python client, published alone: no block past C, and no budget of C blocks to share.
CLIENT_PREFIX = "clients/"


def main() -> int:
    """Print the blocks over the bounds and the server's C-ranked ones; 1 when a bound is broken."""
    report = json.load(sys.stdin)
    too_complex: list[str] = []
    server_c: list[str] = []
    for path, blocks in sorted(report.items()):
        if isinstance(blocks, dict):  # radon could not parse the file
            print(f"{path}: {blocks.get('error', 'not parsed')}")
            return 1
        for block in blocks:
            name = f"{block['classname']}.{block['name']}" if block.get("classname") else block["name"]
            line = f"{path}:{block['lineno']} {name} - {block['rank']} ({block['complexity']})"
            if block["rank"] not in "ABC":
                too_complex.append(line)
            elif block["rank"] == "C" and not path.startswith(CLIENT_PREFIX):
                server_c.append(line)
    failed = False
    if too_complex:
        failed = True
        print("Ranked D or worse by radon (over 20): split each into named steps.")
        print("\n".join(f"  {line}" for line in too_complex))
    if len(server_c) > MAX_SERVER_C:
        failed = True
        print(f"{len(server_c)} blocks ranked C in server code, past the {MAX_SERVER_C} allowed:")
        print("\n".join(f"  {line}" for line in server_c))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
