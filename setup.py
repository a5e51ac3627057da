"""The wheel installs one top-level package, ``pykbroker``.

The repository keeps its layers side by side (``wire/``, ``storage/``, ``replication/``, ``coordinator/``,
``chaos/`` beside ``pykbroker/``) and its code imports them by those names; an editable install (``make``'s
venv) exposes them as they are. A built wheel (``pip install .``, ``python -m build``) would then put five
common names into site-packages, where they collide with other distributions. So building the wheel moves
each layer inside the package (``pykbroker/wire``...) and rewrites the import statements that name it, as
pip's vendoring does. Everything else is configured in pyproject.toml.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

PACKAGE = "pykbroker"
LAYERS = ("wire", "storage", "replication", "coordinator", "chaos")


def namespaced_source(source: str, filename: str) -> str:
    """``source`` with every import of a layer (``from wire.x import y``, ``import wire.x as z``) naming it
    inside the package instead. An import that binds a layer's bare name (``import wire``) is refused:
    rewriting it would change what the name means."""
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            bare = [a.name for a in node.names if a.asname is None and a.name.split(".")[0] in LAYERS]
            if bare:
                raise SystemExit(f"{filename}:{node.lineno}: 'import {bare[0]}' binds a layer's bare name; "
                                 f"write 'from {bare[0]} import ...' or 'import {bare[0]} as ...'")
        else:
            continue
        for name in names:
            if name.split(".")[0] not in LAYERS:
                continue
            row, layer = node.lineno - 1, name.split(".")[0]
            head, tail = lines[row][: node.col_offset], lines[row][node.col_offset :]
            tail = re.sub(rf"(?<![\w.]){layer}(?=[.\s,]|$)", f"{PACKAGE}.{layer}", tail, count=1)
            lines[row] = head + tail
    return "".join(lines)


class BuildPyInsidePackage(build_py):
    """``build_py``, then each layer moved under ``pykbroker/`` and every module's imports of it rewritten."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install maps the source folders as they are
            return
        build_lib = Path(self.build_lib)
        for layer in LAYERS:
            built, inside = build_lib / layer, build_lib / PACKAGE / layer
            if built.is_dir():
                shutil.rmtree(inside, ignore_errors=True)
                built.rename(inside)
        for module in (build_lib / PACKAGE).rglob("*.py"):
            text = module.read_text(encoding="utf-8")
            rewritten = namespaced_source(text, str(module))
            if rewritten != text:
                module.write_text(rewritten, encoding="utf-8")


setup(cmdclass={"build_py": BuildPyInsidePackage})
