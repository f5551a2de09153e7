#!/usr/bin/env python3
"""Finds import circles between the files, and between the top-level folders, of each crate of
the workspace.

Every path that starts at `crate::`, `super::`, `self::`, a child module or a name brought in by
`use` is resolved through `use` aliases and re-exports (globs included) to the file that defines
its last item; an edge joins the file holding the path to that file. A strongly connected group
of two or more files is a circle. The same is asked of the folders directly under `src/` (a file
there other than `lib.rs` and `main.rs` counts as a folder of its own), so the folders form
layers. Where the book's architecture chapter lists a crate's folders (two spaces in, under the
crate's `src/` line, bottom first), the folders must also keep that order: each uses only the
folders listed before it, and every folder is listed. Prints each circle, each folder out of
order and the paths behind its edges; exits 1 when there is one. With `--edges CRATE_DIR`, prints
the file graph instead; `--order=a,b,c` gives the order for the crates named instead of the
chapter's.

    scripts/layers.py                   # every crate of the workspace
    scripts/layers.py analyzer/src      # one crate
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ARCHITECTURE = os.path.join(ROOT, "docs", "src", "architecture.md")
CRATES = ["analyzer/src", "recorder/src", "recorder/trace/src", "bench/src"]
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
KEYWORDS = {"crate", "super", "self", "Self"}


def strip(src):
    """Source without comments, string and char literals (their bodies become spaces)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', src[i:i + 10]) and (i == 0 or not re.match(r"\w", src[i - 1])):
            m = re.match(r'r(#*)"', src[i:])
            end = '"' + m.group(1)
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", src[i:j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", src[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Module:
    def __init__(self, path, file):
        self.path = path  # list of segments from the crate root
        self.file = file
        self.children = {}  # name -> Module
        self.items = set()
        self.uses = {}  # alias -> (module, path segments)
        self.globs = []  # path segments
        self.code = ""  # this module's own text (inline children cut out)


def parse_use_tree(text):
    """`a::{b, c::d as e, f::*}` -> [(segments, alias)], alias '*' for a glob."""
    text = re.sub(r"\s*(::|[{},])\s*", r"\1", re.sub(r"\s+", " ", text.strip()))
    out = []

    def walk(prefix, s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur:
            parts.append(cur)
        for p in parts:
            if "{" in p:
                head, rest = p.split("{", 1)
                head = [x for x in head.split("::") if x]
                walk(prefix + head, rest[:-1])
            else:
                alias = None
                if " as " in p:
                    p, alias = p.split(" as ")
                segs = [x for x in p.split("::") if x]
                if segs and segs[-1] == "*":
                    out.append((prefix + segs[:-1], "*"))
                elif segs:
                    if segs[-1] == "self":
                        segs = segs[:-1]
                    out.append((prefix + segs, alias or (segs[-1] if segs else prefix[-1])))
                elif prefix:
                    out.append((prefix, alias or prefix[-1]))

    walk([], text)
    return out


def block_end(code, start):
    depth, i = 0, start
    while i < len(code):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(code)


def load(crate_dir, root_file):
    """The crate's modules by path; `#[macro_export]` macros, which live at the crate root, are
    kept as the root's children under their own names, so a path to one resolves to the module
    that defines it."""
    modules = {}
    exported = {}

    def build(path, file, code):
        m = Module(path, file)
        modules[tuple(path)] = m
        own = []
        pos = 0
        for mm in re.finditer(r"\bmod\s+(" + IDENT + r")\s*([;{])", code):
            if mm.start() < pos:
                continue
            name = mm.group(1)
            own.append(code[pos:mm.start()])
            if mm.group(2) == "{":
                end = block_end(code, mm.end() - 1)
                m.children[name] = build(path + [name], file, code[mm.end():end])
                pos = end + 1
            else:
                base = os.path.dirname(file)
                stem = os.path.splitext(os.path.basename(file))[0]
                folder = base if stem in ("mod", "lib", "main") else os.path.join(base, stem)
                for cand in (os.path.join(folder, name + ".rs"), os.path.join(folder, name, "mod.rs")):
                    if os.path.exists(cand):
                        m.children[name] = build(path + [name], cand, strip(open(cand).read()))
                        break
                pos = mm.end()
        own.append(code[pos:])
        m.code = "".join(own)
        for im in re.finditer(r"\b(?:fn|struct|enum|trait|type|const|static|union)\s+(" + IDENT + ")", m.code):
            m.items.add(im.group(1))
        for im in re.finditer(r"(#\[macro_export\]\s*)?macro_rules!\s*(" + IDENT + ")", m.code):
            m.items.add(im.group(2))
            if im.group(1):
                exported[im.group(2)] = m
        for um in re.finditer(r"\buse\s+([^;]+);", m.code):
            for segs, alias in parse_use_tree(um.group(1)):
                if alias == "*":
                    m.globs.append(segs)
                else:
                    m.uses[alias] = segs
        return m

    root = build([], root_file, strip(open(root_file).read()))
    for name, defining in exported.items():
        root.children.setdefault(name, defining)
    return root, modules


def resolver(modules):
    def start(mod, first):
        """The module a path's first segment names, and whether it was consumed."""
        if first == "crate":
            return modules[()], True
        if first == "super":
            return modules[tuple(mod.path[:-1])], True
        if first == "self":
            return mod, True
        return mod, False

    def resolve(mod, segs, seen=frozenset()):
        """The module that defines the item `segs` names, seen from `mod`; None when outside."""
        key = (tuple(mod.path), tuple(segs))
        if key in seen or not segs:
            return None
        seen = seen | {key}
        cur, consumed = start(mod, segs[0])
        rest = segs[1:] if consumed else segs
        while rest and rest[0] == "super":
            cur, rest = modules[tuple(cur.path[:-1])], rest[1:]
        if not rest:
            return cur
        head, tail = rest[0], rest[1:]
        if head in cur.children:
            nxt = cur.children[head]
            return resolve(nxt, ["self"] + tail, seen) if tail else nxt
        if head in cur.uses:
            target = cur.uses[head]
            if target and target[0] not in KEYWORDS and target[0] not in modules[()].children \
                    and target[0] not in cur.children:
                return None  # another crate
            return resolve(cur, target + tail, seen)
        if head in cur.items:
            return cur
        for g in cur.globs:
            if g and g[0] not in KEYWORDS and g[0] not in cur.children:
                continue
            r = resolve(cur, g + rest, seen)
            if r is not None:
                return r
        return cur if consumed else None

    return resolve


def edges_of(crate_dir):
    root_files = [f for f in ("lib.rs", "main.rs") if os.path.exists(os.path.join(crate_dir, f))]
    edges = {}
    files = set()
    for rf in root_files:
        root, modules = load(crate_dir, os.path.join(crate_dir, rf))
        resolve = resolver(modules)
        for mod in modules.values():
            files.add(mod.file)
            found = set()
            for segs in mod.uses.values():
                found.add(tuple(segs))
            for segs in mod.globs:
                found.add(tuple(segs) + ("*",))
            for pm in re.finditer(r"(?<![\w:])(" + IDENT + r"(?:\s*::\s*" + IDENT + r")+)", mod.code):
                segs = [s.strip() for s in pm.group(1).split("::")]
                first = segs[0]
                if first in KEYWORDS or first in mod.children or first in mod.uses:
                    found.add(tuple(segs))
                elif mod.globs and resolve(mod, [first]) is not None:
                    found.add(tuple(segs))  # a name a glob brought in
            for segs in found:
                segs = list(segs)
                if segs[-1] == "*":
                    segs = segs[:-1]
                    target = resolve(mod, segs) if segs else None
                else:
                    target = resolve(mod, segs)
                if target is None or target.file == mod.file:
                    continue
                edges.setdefault(mod.file, {}).setdefault(target.file, set()).add("::".join(segs))
    return files, edges


def circles(files, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for f in sorted(files):
        if f not in index:
            strong(f)
    return out


def declared_order(crate):
    """The folders of `crate` ("recorder/src") as the architecture chapter lists them, bottom
    first; None where it lists none."""
    try:
        text = open(ARCHITECTURE).read()
    except OSError:
        return None
    order, inside = [], False
    for block in text.split("```")[1::2]:
        for line in block.splitlines():
            if re.match(r"\S", line):
                inside = line.split()[0].rstrip("/") == crate.rstrip("/")
            elif inside and (m := re.match(r"  (\w+)/\s", line)):
                order.append(m.group(1))
    return order or None


def out_of_order(order, folders, folder_edges):
    """Lines naming each folder missing from `order` and each edge to a folder listed later."""
    lines = [f"folder {f}/ is not in the architecture chapter's list" for f in sorted(folders - set(order))]
    lines += [f"the architecture chapter lists {f}/, which is not there" for f in order if f not in folders]
    rank = {f: i for i, f in enumerate(order)}
    for a in sorted(folder_edges):
        for b in sorted(folder_edges[a]):
            if a in rank and b in rank and rank[b] > rank[a]:
                paths = ", ".join(sorted(folder_edges[a][b])[:3])
                lines.append(f"{a}/ uses {b}/, which is listed after it  ({paths})")
    return lines


def main(argv):
    show_edges = "--edges" in argv
    given = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--order=")), None)
    dirs = [a for a in argv if not a.startswith("--")] or CRATES
    bad = 0
    for d in dirs:
        crate_dir = os.path.normpath(os.path.join(ROOT, d)) if not os.path.isabs(d) else d
        files, edges = edges_of(crate_dir)
        rel = lambda f: os.path.relpath(f, crate_dir)
        if show_edges:
            for a in sorted(edges):
                for b in sorted(edges[a]):
                    print(f"{d}: {rel(a)} -> {rel(b)}  ({', '.join(sorted(edges[a][b])[:3])})")
            continue
        for group in circles(files, edges):
            bad += 1
            print(f"{d}: import circle between {len(group)} files:")
            members = set(group)
            for a in group:
                for b in sorted(edges.get(a, {})):
                    if b in members:
                        print(f"    {rel(a)} -> {rel(b)}  ({', '.join(sorted(edges[a][b])[:3])})")
        folder = lambda f: rel(f).split(os.sep)[0]
        roots = {"lib.rs", "main.rs"}
        folders = {folder(f) for f in files} - roots
        folder_edges = {}
        for a in edges:
            for b in edges[a]:
                fa, fb = folder(a), folder(b)
                if fa != fb and fa not in roots and fb not in roots:
                    folder_edges.setdefault(fa, {}).setdefault(fb, set()).add(f"{rel(a)} -> {rel(b)}")
        for group in circles(folders, folder_edges):
            bad += 1
            print(f"{d}: import circle between {len(group)} folders:")
            members = set(group)
            for a in group:
                for b in sorted(folder_edges.get(a, {})):
                    if b in members:
                        print(f"    {a} -> {b}  ({', '.join(sorted(folder_edges[a][b])[:3])})")
        order = given or declared_order(d)
        if order:
            folders_only = {f for f in folders if os.path.isdir(os.path.join(crate_dir, f))}
            for line in out_of_order(order, folders_only, folder_edges):
                bad += 1
                print(f"{d}: {line}")
        top = [e for e in os.listdir(crate_dir) if not e.startswith(".")]
        print(f"{d}: {len(top)} entries at top level")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
