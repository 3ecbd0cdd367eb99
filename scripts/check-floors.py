#!/usr/bin/env python3
"""Fails when any crate of the workspace has a cycle between its top-level modules.

A module may use the floors below it, never above (ARCHITECTURE.md). This reads
every `crate::NAME` path (including `use crate::{a, b::c}` groups) and every
`super::` path that climbs to the crate root, in every file under each member's
src/, as an edge from the file's top-level module to NAME. Strings, comments
and character literals are removed first; `super::` inside an inline `mod` is
resolved against that inline module. Binaries under src/bin/ are crate roots of
their own and are skipped, as are lib.rs and main.rs (the root sits above all).

Usage: scripts/check-floors.py [WORKSPACE_DIR]   (default: this checkout)
       scripts/check-floors.py --self-test        (proves the check can fail)
       scripts/check-floors.py --edges CRATE_DIR   (prints one crate's module graph)
Exit 0: no cycle; 1: a cycle (each printed with one place per edge); 2: usage.
"""

import os
import re
import sys
import tempfile

STRIP = re.compile(
    r'//[^\n]*'                      # line comments (doc comments too)
    r'|/\*.*?\*/'                    # block comments
    r'|r(#*)".*?"\1'                 # raw strings
    r'|b?"(?:\\.|[^"\\])*"'          # strings
    r"|b?'(?:\\.|\\u\{[0-9a-fA-F]+\}|[^'\\])'",  # char literals (not lifetimes)
    re.S,
)
TOKEN = re.compile(r'\bmod\s+([a-z_][a-z0-9_]*)\s*\{|\{|\}|\bcrate::|(?:\bsuper::)+')
IDENT = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)')


def blank(m):
    # Keep line numbers: replace with as many newlines as the match held.
    return '\n' * m.group(0).count('\n')


def group_heads(text, start):
    """The first identifier of each item in a `{a, b::c, d::{e}}` group at `start`."""
    depth, i, heads, expect = 0, start, [], True
    while i < len(text):
        c = text[i]
        if c == '{':
            depth += 1
            expect = depth == 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                break
        elif c == ',' and depth == 1:
            expect = True
        elif expect and depth == 1:
            m = IDENT.match(text, i)
            if m:
                heads.append(m.group(1))
                i = m.end()
                expect = False
                continue
        i += 1
    return heads


def targets_after(text, pos):
    """The module names a path continuing at `pos` starts with."""
    rest = text[pos:]
    stripped = rest.lstrip()
    if stripped.startswith('{'):
        return group_heads(text, pos + len(rest) - len(stripped))
    m = IDENT.match(rest)
    return [m.group(1)] if m else []


def file_module_path(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] == 'mod':
        parts = parts[:-1]
    return parts


def edges_of_file(path, rel):
    """(target, line) for every reference to a top-level module in one file."""
    text = STRIP.sub(blank, open(path, encoding='utf-8').read())
    base = file_module_path(rel)
    inline = []  # (name, brace depth at which it opened)
    depth = 0
    out = []
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        line = text.count('\n', 0, m.start()) + 1
        if m.group(1):
            depth += 1
            inline.append((m.group(1), depth))
        elif tok == '{':
            depth += 1
        elif tok == '}':
            if inline and inline[-1][1] == depth:
                inline.pop()
            depth -= 1
        elif tok == 'crate::':
            out.extend((t, line) for t in targets_after(text, m.end()))
        else:
            climbs = tok.count('super::')
            here = base + [name for name, _ in inline]
            if climbs == len(here):
                out.extend((t, line) for t in targets_after(text, m.end()))
            elif climbs < len(here) and climbs == len(here) - 1 and len(here) >= 1:
                pass  # a sibling inside the same top-level module
    return out


def module_graph(src):
    """{from: {to: 'file:line'}} between the top-level modules of one crate."""
    graph = {}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith('.rs'):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            top = rel.split(os.sep)[0]
            if top in ('lib.rs', 'main.rs', 'bin'):
                continue
            top = top[:-3] if top.endswith('.rs') else top
            for target, line in edges_of_file(path, rel):
                if target != top and target[:1].islower():
                    graph.setdefault(top, {}).setdefault(target, f'{rel}:{line}')
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def members(workspace):
    text = open(os.path.join(workspace, 'Cargo.toml'), encoding='utf-8').read()
    m = re.search(r'members\s*=\s*\[(.*?)\]', text, re.S)
    if not m:
        raise SystemExit(f'error: no [workspace] members in {workspace}/Cargo.toml')
    return re.findall(r'"([^"]+)"', m.group(1))


def declared_order(src):
    """The crate root's `mod` declarations in order, if the root says its
    modules are listed by floor; else None (only cycles are checked)."""
    for root in ('lib.rs', 'main.rs'):
        path = os.path.join(src, root)
        if os.path.isfile(path):
            text = open(path, encoding='utf-8').read()
            if 'listed by floor' in text:
                return re.findall(r'^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_0-9]+)\s*;', text, re.M)
    return None


def check(workspace):
    """Prints each cycle (and, where the root lists its floors, each edge
    pointing down the list) with one place per edge; returns how many crates fail."""
    bad = 0
    for member in members(workspace):
        src = os.path.join(workspace, member, 'src')
        if not os.path.isdir(src):
            continue
        graph = module_graph(src)
        order = declared_order(src)
        if order:
            rank = {m: i for i, m in enumerate(order)}
            upward = [(a, b, w) for a in sorted(graph) for b, w in sorted(graph[a].items())
                      if a in rank and b in rank and rank[b] > rank[a]]
            if upward:
                bad += 1
                print(f'{member}: modules use a floor listed after their own in the crate root:')
                for a, b, w in upward:
                    print(f'  {a} -> {b}  ({member}/src/{w})')
        for comp in cycles(graph):
            bad += 1
            print(f'{member}: the modules {", ".join(comp)} form a cycle:')
            for a in comp:
                for b, where in sorted(graph.get(a, {}).items()):
                    if b in comp:
                        print(f'  {a} -> {b}  ({member}/src/{where})')
    return bad


def self_test():
    """Each case is a tiny crate; the check must find exactly the cycles named."""
    cases = {
        'plain path': ({'a.rs': 'fn f() { crate::b::g() }', 'b.rs': 'fn g() { crate::a::f() }'}, 1),
        'use group': ({'a.rs': 'use crate::{c, b::{x, y}};', 'b.rs': 'use crate::a::f;', 'c.rs': ''}, 1),
        'super from mod.rs': ({'a/mod.rs': 'mod inner;', 'a/inner.rs': 'use super::super::b::g;',
                               'b.rs': 'use super::a::f;'}, 1),
        'downward only': ({'a.rs': 'use crate::b::g;', 'b.rs': 'use crate::c::h;', 'c.rs': ''}, 0),
        'comments and strings do not count': (
            {'a.rs': '// crate::b\nconst S: &str = "crate::b::g";\nuse crate::b::g;',
             'b.rs': '/* crate::a */ fn g() {}'}, 0),
        'inline test module super': ({'a/mod.rs': 'mod tests { use super::helper; }',
                                      'helper.rs': 'use crate::a::x;'}, 0),
    }
    failures = 0
    for name, (files, want) in cases.items():
        with tempfile.TemporaryDirectory() as ws:
            with open(os.path.join(ws, 'Cargo.toml'), 'w') as f:
                f.write('[workspace]\nmembers = ["k"]\n')
            for rel, text in files.items():
                path = os.path.join(ws, 'k', 'src', rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    f.write(text)
            got = len(cycles(module_graph(os.path.join(ws, 'k', 'src'))))
            if got != want:
                print(f'self-test {name}: found {got} cycle(s), expected {want}')
                failures += 1
    # A root that lists its floors: an edge pointing down the list fails
    # even without a cycle; the same crate listed upward passes.
    for listing, want in (('mod b;\nmod a;\n', 1), ('mod a;\nmod b;\n', 0)):
        with tempfile.TemporaryDirectory() as ws:
            with open(os.path.join(ws, 'Cargo.toml'), 'w') as f:
                f.write('[workspace]\nmembers = ["k"]\n')
            os.makedirs(os.path.join(ws, 'k', 'src'))
            for rel, text in {'lib.rs': '//! Modules are listed by floor.\n' + listing,
                              'a.rs': '', 'b.rs': 'use crate::a::x;'}.items():
                with open(os.path.join(ws, 'k', 'src', rel), 'w') as f:
                    f.write(text)
            import contextlib, io
            with contextlib.redirect_stdout(io.StringIO()):
                got = check(ws)
            if got != want:
                print(f'self-test floor order {listing!r}: {got} failing crate(s), expected {want}')
                failures += 1
    total = len(cases) + 2
    print(f'{total - failures} passed, {failures} failed')
    return failures


def main(argv):
    if argv[1:] == ['--self-test']:
        return 1 if self_test() else 0
    if len(argv) == 3 and argv[1] == '--edges':
        graph = module_graph(os.path.join(argv[2], 'src'))
        for a in sorted(graph):
            print(f'{a} -> {", ".join(sorted(graph[a]))}')
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith('-')):
        print(__doc__.strip().splitlines()[0])
        print('usage: check-floors.py [WORKSPACE_DIR] | --self-test')
        return 2
    workspace = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    bad = check(workspace)
    if bad:
        print(f'{bad} crate(s) with a cycle or a module above its floor; see ARCHITECTURE.md for the floors')
        return 1
    print(f'no cycle between the top-level modules of {len(members(workspace))} crates')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
