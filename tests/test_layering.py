"""The layers (ARCHITECTURE.md, Layout) hold: no package imports one it must not know about.

    utils, api  <  storage  <  apiserver  <  testing  <  cmd
           api  <  client  <  controller, scheduler, kubelet  <  cmd

Components talk to each other only through the API server, so the client package (which every
component imports) must not bring the server or its storage along, and no component imports
another. Two checks per package: every import statement in its source (function-local and
TYPE_CHECKING ones included, so a breach cannot hide in a function), and what importing each of
its modules in a fresh interpreter actually loads.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"

# package -> the kubeplane packages it must not import.
FORBIDDEN: dict[str, set[str]] = {
    "utils": {"api", "storage", "apiserver", "client", "controller", "scheduler", "kubelet", "testing", "cmd"},
    "api": {"storage", "apiserver", "client", "controller", "scheduler", "kubelet", "testing", "cmd"},
    "quota": {"storage", "apiserver", "client", "controller", "scheduler", "kubelet", "testing", "cmd"},
    "storage": {"apiserver", "client", "controller", "scheduler", "kubelet", "testing", "cmd"},
    "client": {"apiserver", "storage", "controller", "scheduler", "kubelet", "testing", "cmd"},
    "apiserver": {"controller", "scheduler", "kubelet", "testing", "cmd"},
    "controller": {"apiserver", "storage", "scheduler", "kubelet", "testing", "cmd"},
    "scheduler": {"apiserver", "storage", "controller", "kubelet", "testing", "cmd"},
    "kubelet": {"apiserver", "storage", "controller", "scheduler", "testing", "cmd"},
    "testing": {"controller", "scheduler", "kubelet", "cmd"},
    "dns": {"apiserver", "storage", "controller", "scheduler", "kubelet", "testing", "cmd"},
}

# (importing module, imported module) pairs tolerated for now. Each is a breach to remove, not
# a rule: the kubelet's serving certificate comes from the API server's certs helper, which is
# moving down a layer in a parallel change (lead: delete this entry once it has).
EXCEPTIONS: set[tuple[str, str]] = set()

# Modules above every layer, as cmd is: kubeplane.testing's ControlPlane runs the whole of
# `kubeplane up` in a test's process (the rest of kubeplane.testing stays below cmd).
TOP: set[str] = {"kubeplane.testing.controlplane"}


def modules(package: str) -> list[tuple[str, pathlib.Path]]:
    root = SRC / "kubeplane" / package
    out = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if ".".join(parts) in TOP:
            continue
        out.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return out


def imported(module: str, path: pathlib.Path) -> set[str]:
    """Every kubeplane module an import statement in path names (relative imports resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return {n for n in names if n.startswith("kubeplane.")}


def breach(name: str, forbidden: set[str]) -> bool:
    parts = name.split(".")
    return len(parts) > 1 and parts[1] in forbidden


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_import_statement_crosses_a_layer(package: str) -> None:
    found = []
    for module, path in modules(package):
        for name in sorted(imported(module, path)):
            if breach(name, FORBIDDEN[package]) and not any(
                    module == m and (name == t or name.startswith(t + ".") or t.startswith(name + "."))
                    for m, t in EXCEPTIONS):
                found.append(f"{module} imports {name}")
    assert not found, "\n".join(found)


_LOAD_ALL = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print("\\n".join(sorted(m for m in sys.modules if m.startswith("kubeplane."))))
"""


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_a_package_loads_no_forbidden_layer(package: str) -> None:
    names = [m for m, _ in modules(package)]
    proc = subprocess.run([sys.executable, "-c", _LOAD_ALL, *names], capture_output=True, text=True, check=False,
                          cwd=SRC.parent)
    assert proc.returncode == 0, proc.stderr
    loaded = [m for m in proc.stdout.split() if breach(m, FORBIDDEN[package])]
    assert not loaded, f"importing kubeplane.{package} loads {loaded}"


def test_the_checks_see_a_breach(tmp_path: pathlib.Path) -> None:
    """The AST walk resolves relative, function-local and TYPE_CHECKING imports."""
    path = tmp_path / "mod.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ...apiserver import server\n"
                    "def f():\n    from kubeplane.storage.memory import MemoryStorage\n")
    names = imported("kubeplane.client.tools.mod", path)
    assert {"kubeplane.apiserver.server", "kubeplane.storage.memory.MemoryStorage"} <= names
    assert all(breach(n, FORBIDDEN["client"]) for n in names)
