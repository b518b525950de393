"""The lazy package faces: what mypy sees (the ``TYPE_CHECKING`` imports) and what loads at run time name the same
attributes in the same submodules, and each one resolves."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

FACES = ("intentloop.model", "intentloop.store", "intentloop.service", "intentloop.recovery")


def _checked_names(package: str) -> dict[str, str]:
    source = Path(importlib.import_module(package).__file__ or "").read_text(encoding="utf-8")
    [block] = [n for n in ast.parse(source).body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    names = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            assert alias.asname == alias.name, f"{package}: {alias.name} must be re-exported as itself"
            names[alias.name] = node.module.rpartition(".")[2]
    return names


@pytest.mark.parametrize("package", FACES)
def test_what_mypy_checks_is_what_loads(package: str) -> None:
    face = importlib.import_module(package)
    checked = _checked_names(package)
    assert checked  # positive control: the block was found and read
    assert sorted(checked) == face.__all__
    for name, submodule in checked.items():
        value = getattr(face, name)
        assert value is getattr(importlib.import_module(f"{package}.{submodule}"), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    import intentloop.store as store

    assert store.ProjectStore.__name__ == "ProjectStore"  # control
    with pytest.raises(AttributeError, match="no attribute 'ProjectStor'"):
        _ = store.ProjectStor  # type: ignore[attr-defined]


def test_a_misspelt_import_from_a_face_fails_mypy(tmp_path: Path) -> None:
    good = tmp_path / "good.py"
    good.write_text("from intentloop.store import ProjectStore\n\nprint(ProjectStore)\n")
    bad = tmp_path / "bad.py"
    bad.write_text("from intentloop.store import ProjectStor\n\nprint(ProjectStor)\n")
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent"]
    assert subprocess.run([*mypy, str(good)], capture_output=True, timeout=300).returncode == 0
    done = subprocess.run([*mypy, str(bad)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and 'has no attribute "ProjectStor"' in done.stdout


@pytest.mark.parametrize("package", FACES)
def test_no_face_name_is_also_a_submodule_name(package: str) -> None:
    """Importing a submodule binds its name on the package, so a face name equal to a submodule's name would be the
    module once that submodule is loaded (``recovery.salvage`` the function, in a module of that name)."""
    import pkgutil

    face = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(face.__path__)}
    assert submodules  # control: the package's modules were found
    assert not set(face.__all__) & submodules


@pytest.mark.parametrize(("first", "expected"), [("from intentloop.store import ProjectStore", "False"), ("", "True")])
def test_a_face_loads_msgspec_without_typing_extensions(first: str, expected: str) -> None:
    """The first name a face loads imports msgspec alone (as the hook and the server do); control: a plain import of
    msgspec does pull ``typing_extensions`` in here, so the check can see it."""
    probe = f"import sys\n{first}\nimport msgspec\nprint('typing_extensions' in sys.modules)\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == expected
