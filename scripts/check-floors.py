#!/usr/bin/env python3
"""Fails when any crate of the workspace has a cycle between sibling modules, at any depth,
when a crate depends on one listed after it in the workspace's members (the crates'
floors: protocol < evidence < recipe < model < worker < report < coordinator < tests),
or when a Rust file has more than 500 lines; and when the modules of the
Python helper (python/stagebench/) import each other in a circle.

A module may use the floors below it, never above (ARCHITECTURE.md), and that holds
inside every module as at the crate root. This reads every `crate::`, `super::` and
`self::` path (with `{a, b::c}` groups expanded) in every file under each member's
src/ and resolves it to an absolute module path. A file in child X of module P that
names a path through child Y of P is an edge X -> Y among P's children; a module's
use of its own descendants, or of an ancestor's own items, is none. Each parent's
children must have no cycle. Strings, comments and character literals are removed
first; a path inside an inline `mod` is resolved against that inline module.
Binaries under src/bin/ are crate roots of their own and are skipped.

The Python helper's modules are read with `ast`: every `import` and
`from … import` of a module of the package, at any depth in a file (an
import inside a function is an edge too: it only delays the circle), is an
edge; `from PKG import NAME` is an edge to PKG.NAME where that is a module,
else to the package's `__init__`. A submodule's import does not count as
an import of `__init__` (Python runs it first, but the package re-exports
what lies below it, which is the point of the floors).

Usage: scripts/check-floors.py [WORKSPACE_DIR]   (default: this checkout)
       scripts/check-floors.py --self-test        (proves the check can fail)
       scripts/check-floors.py --edges CRATE_DIR   (prints one crate's module graph)
Exit 0: no cycle; 1: a cycle (each printed with one place per edge); 2: usage.
"""

import ast
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
TOKEN = re.compile(r'\bmod\s+([a-z_][a-z0-9_]*)\s*\{|\{|\}|\bcrate::|\bself::|(?:\bsuper::)+')


def blank(m):
    # Keep line numbers: replace with as many newlines as the match held.
    return '\n' * m.group(0).count('\n')


def group_item_starts(text, start):
    """Where each item of the `{a, b::c, d::{e}}` group opening at `start` begins."""
    depth, i, starts = 0, start, []
    while i < len(text):
        c = text[i]
        if c == '{':
            depth += 1
            if depth == 1:
                starts.append(i + 1)
        elif c == '}':
            depth -= 1
            if depth == 0:
                break
        elif c == ',' and depth == 1:
            starts.append(i + 1)
        i += 1
    return starts


SEGMENT = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)(\s*::)?')


def paths_after(text, pos, prefix=()):
    """Every path a path continuing at `pos` names, as tuples of segments, with
    `{…}` groups expanded (`a::{b, c::d}` is (a, b) and (a, c, d)); a trailing
    `self` is dropped."""
    segs = list(prefix)
    i = pos
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if text.startswith('{', i):
            out = []
            for item in group_item_starts(text, i):
                out.extend(paths_after(text, item, segs))
            return out or [tuple(segs)]
        m = SEGMENT.match(text, i)
        if not m:
            return [tuple(segs)]
        if m.group(1) != 'self':
            segs.append(m.group(1))
        i = m.end()
        if not m.group(2):
            return [tuple(segs)]


def file_module_path(rel):
    parts = rel[:-3].split(os.sep)
    if parts[-1] in ('mod', 'lib', 'main') and len(parts) == 1 or parts[-1] == 'mod':
        parts = parts[:-1]
    return tuple(parts)


def references_of_file(path, rel):
    """(module path of the place, absolute path it names, line) for every
    `crate::`, `super::` and `self::` path in one file, and every inline
    module it declares."""
    text = STRIP.sub(blank, open(path, encoding='utf-8').read())
    base = file_module_path(rel)
    inline = []  # (name, brace depth at which it opened)
    depth = 0
    refs, mods = [], []
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        line = text.count('\n', 0, m.start()) + 1
        here = base + tuple(name for name, _ in inline)
        if m.group(1):
            depth += 1
            inline.append((m.group(1), depth))
            mods.append(here + (m.group(1),))
        elif tok == '{':
            depth += 1
        elif tok == '}':
            if inline and inline[-1][1] == depth:
                inline.pop()
            depth -= 1
        elif tok == 'crate::':
            refs.extend((here, p, line) for p in paths_after(text, m.end()))
        elif tok == 'self::':
            refs.extend((here, here + p, line) for p in paths_after(text, m.end()))
        else:
            climbs = tok.count('super::')
            if climbs <= len(here):
                up = here[:len(here) - climbs]
                refs.extend((here, up + p, line) for p in paths_after(text, m.end()))
    return refs, mods


def sibling_graphs(src):
    """{parent: {from: {to: 'file:line'}}}: for every module (the crate root
    is ()), the uses between its child modules. A file in child X's subtree
    naming a path through child Y is an edge X -> Y; a use of the parent's own
    items, or of a module's own descendants, is none."""
    modules, refs = set(), []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if not (dirpath == src and d == 'bin'))
        for name in sorted(filenames):
            if not name.endswith('.rs'):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, src)
            module = file_module_path(rel)
            modules.add(module)
            r, m = references_of_file(path, rel)
            modules.update(m)
            refs.extend((here, target, f'{rel}:{line}') for here, target, line in r)
    graphs = {}
    for here, target, where in refs:
        k = 0
        while k < len(here) and k < len(target) and here[k] == target[k]:
            k += 1
        if k == len(here) or k == len(target):
            continue  # its own descendant, or an ancestor's items
        parent = here[:k]
        if parent + (target[k],) not in modules:
            continue  # an item of the parent, not a module
        graphs.setdefault(parent, {}).setdefault(here[k], {}).setdefault(target[k], where)
    return graphs


def module_graph(src):
    """{from: {to: 'file:line'}} between the top-level modules of one crate."""
    return sibling_graphs(src).get((), {})


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


# No Rust file of a crate (src/, tests/, examples/, benches/) may be longer.
MAX_LINES = 500


def long_files(workspace, limit=MAX_LINES):
    """(path, lines) of every .rs file under a member longer than `limit`."""
    found = []
    for member in members(workspace):
        for here, dirs, files in os.walk(os.path.join(workspace, member)):
            dirs[:] = sorted(d for d in dirs if d not in ('target', '.git'))
            for name in sorted(files):
                if name.endswith('.rs'):
                    path = os.path.join(here, name)
                    with open(path, encoding='utf-8') as f:
                        n = sum(1 for _ in f)
                    if n > limit:
                        found.append((os.path.relpath(path, workspace), n))
    return found


def member_dependencies(workspace):
    """Each member's dependencies on other members ([dependencies] and
    [build-dependencies]; dev-dependencies may reach up, as tests do), by
    the workspace's dependency key (`protocol = { workspace = true }`) or
    by a path."""
    names = {}
    root = open(os.path.join(workspace, 'Cargo.toml'), encoding='utf-8').read()
    for key, path in re.findall(r'^([a-z_-]+)\s*=\s*\{[^}]*\bpath\s*=\s*"([^"]+)"', root, re.M):
        names[key] = path
    deps = {}
    for member in members(workspace):
        manifest = os.path.join(workspace, member, 'Cargo.toml')
        if not os.path.isfile(manifest):
            continue
        text = open(manifest, encoding='utf-8').read()
        used = set()
        for section, body in re.findall(r'^\[([a-z-]+)\]\s*\n(.*?)(?=^\[|\Z)', text, re.M | re.S):
            if section not in ('dependencies', 'build-dependencies'):
                continue
            for key, rest in re.findall(r'^([a-z_-]+)(\.workspace\s*=\s*true|\s*=.*)$', body, re.M):
                if key in names and ('workspace' in rest):
                    used.add(os.path.normpath(names[key]))
                m = re.search(r'path\s*=\s*"([^"]+)"', rest)
                if m:
                    used.add(os.path.normpath(os.path.join(member, m.group(1))))
        deps[member] = sorted(d for d in used if d in members(workspace) and d != member)
    return deps


def crate_floors(workspace):
    """Each (crate, dependency) where a crate depends on a member listed
    after it in the workspace's `members`: the crates' floors."""
    order = {m: i for i, m in enumerate(members(workspace))}
    return [(m, d) for m, ds in member_dependencies(workspace).items()
            for d in ds if order[d] > order[m]]


def check(workspace):
    """Prints each cycle (and, where the root lists its floors, each edge
    pointing down the list) with one place per edge; returns how many crates fail."""
    bad = 0
    for m, d in crate_floors(workspace):
        bad += 1
        print(f'{m} depends on {d}, a crate listed after it in Cargo.toml\'s members (the crates\' floors)')
    for path, n in long_files(workspace):
        bad += 1
        print(f'{path} has {n} lines: no Rust file may have more than {MAX_LINES} (split it by what each part owns)')
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
        graphs = sibling_graphs(src)
        for parent in sorted(graphs):
            sub = graphs[parent]
            inside = f' inside {"::".join(parent)}' if parent else ''
            for comp in cycles(sub):
                bad += 1
                print(f'{member}: the modules {", ".join(comp)}{inside} form a cycle:')
                for a in comp:
                    for b, where in sorted(sub.get(a, {}).items()):
                        if b in comp:
                            print(f'  {a} -> {b}  ({member}/src/{where})')
    return bad


PYTHON_PACKAGE = os.path.join('python', 'stagebench')


def python_graph(package_dir):
    """Module -> {imported module: 'file:line'} among the `.py` files of a
    package directory (top level only), by name without the package
    (`__init__`, `_spans`, …)."""
    package = os.path.basename(os.path.normpath(package_dir))
    mods = {f[:-3] for f in os.listdir(package_dir) if f.endswith('.py')}
    # A compiled module (`_fast.c`) imports nothing of the package.
    compiled = {f[:-2] for f in os.listdir(package_dir) if f.endswith('.c')}
    graph = {m: {} for m in mods}
    for m in sorted(mods):
        rel = f'{package}/{m}.py'
        with open(os.path.join(package_dir, m + '.py')) as f:
            tree = ast.parse(f.read(), rel)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split('.')
                    if parts[0] == package:
                        targets.append(parts[1] if len(parts) > 1 else '__init__')
            elif isinstance(node, ast.ImportFrom):
                parts = (node.module or '').split('.') if node.module else []
                if node.level == 0 and (not parts or parts[0] != package):
                    continue
                inside = parts[1:] if node.level == 0 else parts
                if inside:
                    targets.append(inside[0])
                else:
                    targets += [a.name if a.name in mods | compiled else '__init__' for a in node.names]
            for t in targets:
                if t in mods and t != m:
                    graph[m].setdefault(t, f'{rel}:{node.lineno}')
    return graph


def check_python(workspace):
    """Prints each import circle of the Python helper's modules with one
    place per edge; returns how many there are."""
    package_dir = os.path.join(workspace, PYTHON_PACKAGE)
    if not os.path.isdir(package_dir):
        return 0
    graph = python_graph(package_dir)
    found = cycles(graph)
    for comp in found:
        print(f'{PYTHON_PACKAGE}: the modules {", ".join(comp)} import each other in a circle:')
        for a in comp:
            for b, where in sorted(graph[a].items()):
                if b in comp:
                    print(f'  {a} -> {b}  ({where})')
    return len(found)


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
    # Cycles below the root: the number found over every parent's children.
    failures = 0
    nested = {
        'siblings by super': ({'c/mod.rs': 'mod plot; mod summary;', 'c/plot.rs': 'use super::summary::f;',
                               'c/summary.rs': 'use super::plot::g;'}, 1),
        'siblings by crate path and group': (
            {'c/mod.rs': '', 'c/plot.rs': 'use crate::c::{summary::f, other};',
             'c/summary.rs': 'fn g() { crate::c::plot::h() }', 'c/other.rs': ''}, 1),
        'two deep, by self from the parent': (
            {'c/mod.rs': '', 'c/d/mod.rs': 'use self::x::f;', 'c/d/x.rs': 'use super::y::g;',
             'c/d/y.rs': 'use crate::c::d::x::f;'}, 1),
        'the parent\'s own items are no edge': (
            {'c/mod.rs': 'pub fn shared() {}', 'c/plot.rs': 'use super::shared;', 'c/summary.rs': 'use super::plot::g; use super::shared;'}, 0),
        'a child using its own child': ({'c/mod.rs': '', 'c/plot/mod.rs': 'use self::axis::f;', 'c/plot/axis.rs': 'use super::super::summary::g;',
                                         'c/summary.rs': ''}, 0),
    }
    for name, (files, want) in nested.items():
        with tempfile.TemporaryDirectory() as ws:
            for rel, text in files.items():
                path = os.path.join(ws, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, 'w') as f:
                    f.write(text)
            got = sum(len(cycles(g)) for g in sibling_graphs(ws).values())
            if got != want:
                print(f'self-test {name}: found {got} cycle(s) below the root, expected {want}')
                failures += 1
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
    # A crate that depends on one listed after it fails; a long file fails.
    for order, long, want in ((('k', 'j'), 0, 1), (('j', 'k'), 0, 0), (('j', 'k'), MAX_LINES + 1, 1)):
        with tempfile.TemporaryDirectory() as ws:
            with open(os.path.join(ws, 'Cargo.toml'), 'w') as f:
                f.write(f'[workspace]\nmembers = ["{order[0]}", "{order[1]}"]\n'
                        '[workspace.dependencies]\nj = { package = "x-j", path = "j" }\n')
            for crate, manifest in (('j', ''), ('k', '[dependencies]\nj.workspace = true\n')):
                os.makedirs(os.path.join(ws, crate, 'src'))
                with open(os.path.join(ws, crate, 'Cargo.toml'), 'w') as f:
                    f.write(f'[package]\nname = "x-{crate}"\n{manifest}')
                with open(os.path.join(ws, crate, 'src', 'lib.rs'), 'w') as f:
                    f.write('\n' * (long if crate == 'j' else 1))
            import contextlib, io
            with contextlib.redirect_stdout(io.StringIO()):
                got = check(ws)
            if got != want:
                print(f'self-test crate floors {order}, {long} lines: {got} failure(s), expected {want}')
                failures += 1
    # The Python helper: a circle through a function's own import counts,
    # a package re-exporting what lies below it does not.
    py_cases = {
        'a circle, one side inside a function': (
            {'__init__.py': 'from pkg.a import f\n', 'a.py': 'def f():\n    from pkg import b\n',
             'b.py': 'from pkg.a import f\n'}, 1),
        'relative imports in a circle': ({'a.py': 'from . import b\n', 'b.py': 'from .a import x\n'}, 1),
        'through the package': ({'__init__.py': 'from pkg.a import f\n', 'a.py': 'import pkg\n'}, 1),
        'one way, the package on top': (
            {'__init__.py': 'from pkg.b import g\nfrom pkg import a\n', 'a.py': 'from pkg import b\n',
             'b.py': 'import os\nfrom pkg import _fast\n', '_fast.c': ''}, 0),
    }
    for name, (files, want) in py_cases.items():
        with tempfile.TemporaryDirectory() as ws:
            pkg = os.path.join(ws, 'pkg')
            os.makedirs(pkg)
            for rel, text in files.items():
                with open(os.path.join(pkg, rel), 'w') as f:
                    f.write(text)
            got = len(cycles(python_graph(pkg)))
            if got != want:
                print(f'self-test python {name}: found {got} circle(s), expected {want}')
                failures += 1
    total = len(cases) + len(nested) + 5 + len(py_cases)
    print(f'{total - failures} passed, {failures} failed')
    return failures


def main(argv):
    if argv[1:] == ['--self-test']:
        return 1 if self_test() else 0
    if len(argv) == 3 and argv[1] == '--edges':
        for parent, graph in sorted(sibling_graphs(os.path.join(argv[2], 'src')).items()):
            print(f'in {"::".join(parent) or "the crate root"}:')
            for a in sorted(graph):
                print(f'  {a} -> {", ".join(sorted(graph[a]))}')
        return 0
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith('-')):
        print(__doc__.strip().splitlines()[0])
        print('usage: check-floors.py [WORKSPACE_DIR] | --self-test')
        return 2
    workspace = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    bad = check(workspace) + check_python(workspace)
    if bad:
        print(f'{bad} crate(s) with a cycle or a module above its floor; see ARCHITECTURE.md for the floors')
        return 1
    print(f'no cycle between sibling modules, at any depth, in {len(members(workspace))} crates; '
          f'each crate depends only on crates listed before it ({" < ".join(members(workspace))}); '
          f'no Rust file over {MAX_LINES} lines; no import circle among the modules of {PYTHON_PACKAGE}/')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
