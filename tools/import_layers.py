"""The import graph of the broker's packages: import cycles and imports that point up the layers.

    python -m tools.import_layers            # prints cycles and upward imports
    python -m tools.import_layers --classes  # and the biggest classes (lines, methods)

Layers, bottom to top (docs/architecture.md): wire < storage < replication.metadata (the cluster metadata) <
the rest of replication < coordinator < pykbroker. An import from a module into a higher layer is upward.
Every import statement counts, also the ones inside functions and under TYPE_CHECKING: a lazy import is still
a dependency. ``tests/test_layers.py`` keeps the result at zero upward imports.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("wire", "storage", "replication", "coordinator", "pykbroker")
# (module prefix, rank): the longest matching prefix decides a module's layer.
LAYERS: tuple[tuple[str, int], ...] = (
    ("wire", 0),
    ("storage", 1),
    ("replication.metadata", 2),
    ("replication", 3),
    ("coordinator", 4),
    ("pykbroker", 5),
)
ROOT = Path(__file__).resolve().parent.parent


def layer(module: str) -> int:
    """The rank of ``module``'s layer (see LAYERS)."""
    best, rank = -1, -1
    for prefix, r in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
            best, rank = len(prefix), r
    return rank


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of PACKAGES (generated wire/messages left out: they import nothing above wire)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[:2] == ["wire", "messages"]:
                continue
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imports(module: str, path: Path, known: set[str]) -> Iterator[str]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # ``from pkg import mod`` imports the module; ``from pkg import name`` imports pkg's __init__.
            names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix for a in node.names]
        else:
            continue
        for name in names:
            # The longest known module the name starts with (``from a.b import C`` imports a.b).
            parts = name.split(".")
            for i in range(len(parts), 0, -1):
                candidate = ".".join(parts[:i])
                if candidate in known:
                    if candidate != module:
                        yield candidate
                    break


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of PACKAGES it imports."""
    mods = modules(root)
    known = set(mods)
    return {m: set(_imports(m, p, known)) for m, p in mods.items()}


def upward_imports(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    return sorted((a, b) for a, deps in g.items() for b in deps if layer(b) > layer(a))


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(out)


def biggest_classes(root: Path = ROOT, count: int = 8) -> list[tuple[int, int, str]]:
    """The ``count`` longest classes of PACKAGES: (lines, methods, "path:Class"), longest last."""
    found = []
    for path in modules(root).values():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                found.append((node.end_lineno - node.lineno + 1, methods,
                              f"{path.relative_to(root)}:{node.name}"))
    return sorted(found)[-count:]


def main() -> None:
    g = graph()
    ups = upward_imports(g)
    cyc = cycles(g)
    print(f"{len(g)} modules, {sum(len(d) for d in g.values())} imports")
    print(f"{len(ups)} upward imports")
    for a, b in ups:
        print(f"  {a} -> {b}")
    print(f"{len(cyc)} import cycles (strongly connected groups of modules)")
    for c in cyc:
        print(f"  {len(c)}: {' '.join(c)}")
    zk = sorted(m for m, deps in g.items() if "replication.metadata.zk.client" in deps
                and not m.startswith("replication.metadata."))
    print(f"ZooKeeper client imported outside the metadata layer by: {', '.join(zk) or 'nothing'}")
    if "--classes" in sys.argv:
        print("biggest classes (lines, methods):")
        for lines, methods, name in biggest_classes():
            print(f"  {lines:5d} {methods:3d}  {name}")


if __name__ == "__main__":
    main()
