#!/usr/bin/env python3
"""Documentation/architecture.md is a checked map of the tree.

Every path it names in backquotes (a token with a slash, or a file name with a source or
documentation extension) must exist, written from the top of the tree; every component
folder (each folder of libtempo/, study/ and tools/, and the top-level ones that hold code)
must be named; the pieces a newcomer looks for must appear; and the path of one claim is
drawn one file per step. Exit 1 naming each miss.

usage: architecture_map.py REPO_ROOT
"""
import os
import re
import sys

EXTENSIONS = (".h", ".cc", ".c", ".py", ".md", ".sh", ".mk", ".txt", ".bt", ".json", ".map")
# Top-level folders that hold parts of the product, the study or how they are built.
TOP = ("libtempo", "study", "tools", "kmod", "ebpf", "tests", "scripts", "packaging", "debian",
       "mk", "Documentation", "examples", "data", "cmake")
REQUIRED = ("tempod", "claim surface", "runtime side", "cluster tier",
            "study", "kmod", "ebpf", "daemon mode", "tempo-risk")
CLAIM_PATH = "## The path of one claim"


def main(root):
    doc_path = os.path.join(root, "Documentation", "architecture.md")
    doc = open(doc_path, encoding="utf-8").read()
    misses = []
    named = set()
    for token in re.findall(r"`([^`\s]+)`", doc):
        if "/" not in token and not token.endswith(EXTENSIONS):
            continue
        if token.startswith(("/", "http", "<", "--")) or "*" in token or "@" in token:
            continue  # system paths, links, patterns, flags
        path = token.rstrip("/")
        named.add(path)
        if not os.path.exists(os.path.join(root, path)):
            misses.append(f"names `{token}`, which does not exist (paths are from the tree's top)")
    folders = [t for t in TOP if os.path.isdir(os.path.join(root, t))]
    for top in ("libtempo", "study", "tools"):
        for entry in sorted(os.listdir(os.path.join(root, top))):
            if os.path.isdir(os.path.join(root, top, entry)) and entry != "__pycache__":
                folders.append(f"{top}/{entry}")
    for folder in folders:
        if folder not in named:
            misses.append(f"does not name the folder `{folder}/`")
    lower = doc.lower()
    for term in REQUIRED:
        if term not in lower:
            misses.append(f"does not mention {term}")
    if CLAIM_PATH not in doc:
        misses.append(f"has no section '{CLAIM_PATH}'")
    else:
        section = doc.split(CLAIM_PATH, 1)[1].split("\n## ", 1)[0]
        rows = [r for r in section.splitlines() if r.startswith("|") and not r.startswith("|--")]
        steps = rows[1:]  # the header row first
        if len(steps) < 6:
            misses.append(f"draws the path of one claim in {len(steps)} steps (report to release)")
        for row in steps:
            files = [t for t in re.findall(r"`([^`\s]+)`", row) if t.endswith(EXTENSIONS)]
            if len(files) != 1:
                misses.append(f"claim path step names {len(files)} files, not one: {row.strip()}")
    for m in misses:
        print(f"Documentation/architecture.md {m}")
    print(f"architecture map: {len(named)} paths, {len(folders)} folders checked, "
          f"{len(misses)} misses")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
