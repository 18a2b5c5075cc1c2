#!/usr/bin/env python3
"""The harness's layers, drawn from the code's own imports.

The harness (harness/src) is layered, lowest first:

    root    lib.rs, error.rs, settings/: the errors and the settings
    values  what a case is: elements, layouts, byte images
    device  the device adapter API, routes, staging, the host
    run     running a case: the rig, the Spy, the outcome, the watchdog
    judge   judging it: the rules, the oracle, the judgement
    draw    drawing cases: strategies, capability honesty, fuzz decoding

A file may import from its own layer and from those below it. This script
reads every `crate::` path outside comments and test modules (a `tests.rs`
is one), resolves it to the file that defines the item (through the crate
root's re-exports, which hide where an item lives), and prints each import
that runs up from a lower layer to a higher one, the edges between layers,
and any circle among them. It exits 1 when an import runs up or a circle
exists.

Usage: scripts/layers.py [harness/src]
"""

import collections
import os
import re
import sys

ORDER = ["root", "values", "device", "run", "judge", "draw"]


def rust_files(root):
    for folder, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                yield os.path.relpath(os.path.join(folder, name), root)


def layer(rel):
    first = rel.split("/")[0]
    return first if first in ORDER else "root"


def code_of(path):
    """The file's code: without its test module and its comments (a test
    module in a file of its own, `tests.rs`, is all test)."""
    if os.path.basename(path) == "tests.rs":
        return ""
    with open(path, encoding="utf-8") as file:
        source = file.read()
    tests = source.find("#[cfg(test)]\nmod tests")
    if tests >= 0:
        source = source[:tests]
    return re.sub(r"//[^\n]*", "", source)


def definitions(root, files):
    """Item name -> the file that defines it; module path -> its file."""
    items, modules = {}, {}
    pattern = re.compile(
        r"^\s*pub(?:\([^)]*\))?\s+(?:unsafe\s+)?"
        r"(?:struct|enum|fn|trait|const|type|static)\s+(\w+)",
        re.M,
    )
    for rel in files:
        parts = rel[:-3].split("/")
        if parts[-1] == "mod":
            parts = parts[:-1]
        modules["::".join(parts)] = rel
        if rel == "lib.rs":
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as file:
            source = file.read()
        for name in pattern.findall(source) + re.findall(r"macro_rules!\s+(\w+)", source):
            items.setdefault(name, rel)
    return items, modules


def imports_of(code, items, modules):
    """The files a file's `crate::` paths name."""
    targets = set()
    for prefix, last in re.findall(r"crate::((?:\w+::)*)(\{[^;]*?\}|\w+)", code, re.S):
        path = [part for part in prefix.split("::") if part]
        names = re.findall(r"\w+", last) if last.startswith("{") else [last]
        if path and path[0] not in modules:
            # `crate::Item::Variant`: the item's file.
            if path[0] in items:
                targets.add(items[path[0]])
            continue
        base = "::".join(path)
        for name in names:
            nested = f"{base}::{name}" if base else name
            if nested in modules:
                targets.add(modules[nested])
            elif name in items:
                targets.add(items[name])
            elif base in modules:
                targets.add(modules[base])
    return targets


def circles(edges):
    """Each circle among the layers once, from its lowest layer."""
    found = []

    def walk(node, path):
        for next_node in sorted(edges[node], key=ORDER.index):
            if next_node in path:
                loop = path[path.index(next_node):]
                low = loop.index(min(loop, key=ORDER.index))
                loop = loop[low:] + loop[:low]
                if loop + [loop[0]] not in found:
                    found.append(loop + [loop[0]])
            else:
                walk(next_node, path + [next_node])

    for start in ORDER:
        walk(start, [start])
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "harness/src"
    files = sorted(rust_files(root))
    items, modules = definitions(root, files)
    upward = collections.defaultdict(set)
    edges = collections.defaultdict(set)
    for rel in files:
        if rel == "lib.rs":
            continue
        for target in imports_of(code_of(os.path.join(root, rel)), items, modules):
            here, there = layer(rel), layer(target)
            if target == rel or here == there:
                continue
            edges[here].add(there)
            if ORDER.index(there) > ORDER.index(here):
                upward[rel].add(target)
    count = sum(len(targets) for targets in upward.values())
    print(f"imports that run up a layer: {count}")
    for rel in sorted(upward):
        print(f"  {rel} -> {' '.join(sorted(upward[rel]))}")
    print("layers and what each imports:")
    for name in ORDER:
        below = " ".join(sorted(edges[name], key=ORDER.index)) or "-"
        print(f"  {name:7}{below}")
    found = circles(edges)
    print("circles: " + ("; ".join(" -> ".join(c) for c in found) if found else "none"))
    return 1 if count or found else 0


if __name__ == "__main__":
    sys.exit(main())
