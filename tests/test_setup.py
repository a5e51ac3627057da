"""setup.py: the built wheel installs one top-level package, and a broker runs from it in a fresh venv
with the repository nowhere on its path: over the test venv's copies of its declared runtime dependencies in
``make test``, with them installed from the package index in ``make test-setup-slow`` (PYKBROKER_SETUP_SLOW=1)."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.clients import round_trip

REPO = Path(__file__).resolve().parent.parent
slow = pytest.mark.skipif(os.environ.get("PYKBROKER_SETUP_SLOW") != "1",
                          reason="pip installs the dependencies from the index: make test-setup-slow (PYKBROKER_SETUP_SLOW=1)")


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


def runtime_closure() -> list[importlib.metadata.Distribution]:
    """The installed distributions pykbroker's runtime requirements (extras of requirements too, none of its own)
    come to, transitively: what a ``pip install`` of the wheel would resolve, as this venv holds them."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [("pykbroker", frozenset())]
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if (key, extras) in done:
            continue
        done.add((key, extras))
        dist = importlib.metadata.distribution(name)
        if key != "pykbroker":
            found[key] = dist
        for req in map(Requirement, dist.requires or []):
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append((req.name, frozenset(req.extras)))
    return list(found.values())


def without_pythonpath() -> dict[str, str]:
    """The environment for the fresh venv's processes: a PYTHONPATH of the test run's would put the repository on
    their path."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def install_wheel(wheel: Path, env_dir: Path) -> Path:
    """A fresh venv with the wheel installed; its dependencies are this venv's copies of the runtime closure only
    (linked into a folder its site-packages names in a .pth: the test venv's other packages and the repository
    are not importable), so what the broker imports at run time must be declared. Its purelib folder."""
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = env_dir / "runtime-deps"
    deps.mkdir()
    for dist in runtime_closure():
        for top in {f.parts[0] for f in dist.files or () if f.parts[0] != ".."}:
            if not (deps / top).exists():
                (deps / top).symlink_to(Path(str(dist.locate_file(top))))
    (site / "runtime-deps.pth").write_text(f"{deps}\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], env=without_pythonpath(), check=True, timeout=300)
    checked = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "check"], env=without_pythonpath(),
                             capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return site


def run_installed_broker(env_dir: Path, site: Path, cwd: Path) -> None:
    """The wheel's ``pykbroker`` script starts a broker that a client writes to and reads from, with no layer of
    the repository importable under its bare name (nor through a PYTHONPATH of the test run's)."""
    env = without_pythonpath()
    assert not [p for p in ("wire", "storage", "replication", "coordinator", "chaos") if (site / p).exists()]
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c", "import importlib.util as u, pykbroker; "
                            "print(pykbroker.__file__, u.find_spec('wire'), u.find_spec('pytest'))"],
                           cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert where == [str(site / "pykbroker" / "__init__.py"), "None", "None"], where  # nor the test venv's packages
    proc = subprocess.Popen([str(env_dir / "bin" / "pykbroker"), "--ephemeral"], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("pykbroker ready bootstrap.servers="), line
        assert round_trip(line.strip().split("=", 1)[1], "from-the-wheel", b"hello").value() == b"hello"
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.timeout(300)
def test_a_broker_runs_from_the_wheel_installed_over_its_declared_dependencies(wheel, tmp_path):
    """make test's cheap form of the next test: no download, the runtime closure linked from this venv."""
    env_dir = tmp_path / "venv"
    run_installed_broker(env_dir, install_wheel(wheel, env_dir), tmp_path)


@slow
@pytest.mark.timeout(900)
def test_a_broker_runs_from_the_installed_wheel_in_a_fresh_venv(wheel, tmp_path):
    """pip resolves the wheel's dependencies from the package index into a new venv (half a minute)."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=900)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    run_installed_broker(env_dir, site, tmp_path)
