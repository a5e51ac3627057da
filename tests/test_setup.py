"""setup.py: the built wheel installs one top-level package, and a broker runs from it in a fresh venv
with the repository nowhere on its path."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.clients import round_trip

REPO = Path(__file__).resolve().parent.parent


def load_setup_module():
    """setup.py's functions, without running its ``setup()`` call."""
    source = (REPO / "setup.py").read_text()
    tree = ast.parse(source)
    tree.body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call))]
    module = type(sys)("pykbroker_setup")
    exec(compile(tree, "setup.py", "exec"), module.__dict__)
    return module


def test_imports_of_a_layer_are_rewritten_inside_the_package_and_nothing_else_is():
    setup = load_setup_module()
    source = ("from wire.messages import (\n    A,\n)\nimport os, storage.log as log\n\n\ndef f():\n"
              "    from coordinator import group\n    return 'from wire import x'\n"
              "from pykbroker.wire import y\nfrom .wire import z\nimport wirefree.x as w\n")
    assert setup.namespaced_source(source, "m.py") == (
        "from pykbroker.wire.messages import (\n    A,\n)\nimport os, pykbroker.storage.log as log\n\n\ndef f():\n"
        "    from pykbroker.coordinator import group\n    return 'from wire import x'\n"
        "from pykbroker.wire import y\nfrom .wire import z\nimport wirefree.x as w\n")
    assert setup.namespaced_source(setup.namespaced_source(source, "m.py"), "m.py") == setup.namespaced_source(
        source, "m.py")


def test_an_import_binding_a_layers_bare_name_is_refused():
    with pytest.raises(SystemExit, match="binds a layer's bare name"):
        load_setup_module().namespaced_source("import wire.messages\n", "m.py")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of what it is made of (an in-tree build would leave build/ behind)."""
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(REPO / name, source / name)
    for package in ("pykbroker", "wire", "storage", "replication", "coordinator", "chaos"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(source)],
                   check=True, timeout=600)
    return next(out.glob("pykbroker-*.whl"))


def test_the_wheel_holds_one_top_level_package(wheel):
    with zipfile.ZipFile(wheel) as z:
        tops = {name.split("/")[0] for name in z.namelist()}
        codec = z.read("pykbroker/wire/_records.py").decode()
    assert {t for t in tops if not t.endswith(".dist-info")} == {"pykbroker"}
    assert "from pykbroker.wire." in codec and "\nfrom wire." not in codec


@pytest.mark.timeout(900)
def test_a_broker_runs_from_the_installed_wheel_in_a_fresh_venv(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=900)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    assert not [p for p in ("wire", "storage", "replication", "coordinator", "chaos") if (site / p).exists()]
    proc = subprocess.Popen([str(env_dir / "bin" / "pykbroker"), "--ephemeral"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("pykbroker ready bootstrap.servers="), line
        assert round_trip(line.strip().split("=", 1)[1], "from-the-wheel", b"hello").value() == b"hello"
    finally:
        proc.terminate()
        proc.wait(30)
