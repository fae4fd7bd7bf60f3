"""Models and optimizers declared in paper packages, and classes nobody registered.

A paper package (``claims/<key>/``) may declare its own model or optimizer in any module that
is not a test file (``claims/<key>/models.py`` by convention) and register a small instance
with :func:`theorycheck.models.register_model` / :func:`theorycheck.optim.register_optimizer`.
:func:`import_paper_modules` imports those modules, so that the conformance suites and
``benchmarks/bench.py`` see what the papers registered without an edit under ``theorycheck/``;
:func:`unregistered_classes` names every model or optimizer class that no registered factory
produces, wherever it is defined.
"""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

from theorycheck.errors import DeclarationError

__all__ = ["import_paper_modules", "paper_packages", "unregistered_classes", "classes_in_test_files"]


def paper_packages(root: str | Path) -> list[Path]:
    """The paper packages under ``root``: its subfolders with an ``__init__.py``, sorted."""
    root = Path(root)
    if not root.is_dir():
        raise DeclarationError(f"claims root {root} is not a folder")
    if not (root / "__init__.py").exists():
        raise DeclarationError(f"claims root {root} is not a package (no __init__.py)")
    return sorted(p for p in root.iterdir() if (p / "__init__.py").exists())


def import_paper_modules(root: str | Path, *, tests: bool = False) -> list[str]:
    """Import every module of every paper package under ``root`` (``root``'s parent goes on
    ``sys.path``; the package is named after ``root``, e.g. ``claims.vdt24.models``) and return
    their names.  Test files (``test_*.py``, ``conftest.py``) are imported only with
    ``tests=True``."""
    root = Path(root).resolve()
    packages = paper_packages(root)
    if str(root.parent) not in sys.path:
        sys.path.insert(0, str(root.parent))
    names = []
    for package in packages:
        for path in sorted(package.glob("*.py")):
            is_test = path.name.startswith("test_") or path.name == "conftest.py"
            if is_test and not tests:
                continue
            parts = (root.name, package.name) + (() if path.stem == "__init__" else (path.stem,))
            names.append(".".join(parts))
            importlib.import_module(names[-1])
    return names


def _subclasses(base: type) -> list[type]:
    found, todo = [], list(base.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


def _registered_types() -> set[type]:
    """The classes the registered factories produce: each model factory at K = 1, seed 0, and
    each optimizer factory on the first registered model that accepts it."""
    from theorycheck.models import MODELS
    from theorycheck.optim import OPTIMIZERS

    instances = [MODELS[name](1, 0) for name in sorted(MODELS)]
    types = {type(inst.model) for inst in instances}
    for name in sorted(OPTIMIZERS):
        for inst in instances:
            try:
                types.add(type(OPTIMIZERS[name](inst.model)))
                break
            except DeclarationError:
                continue
    return types


def _ours(cls: type, roots: tuple[str, ...]) -> bool:
    return cls.__module__.split(".")[0] in roots


def unregistered_classes(roots: tuple[str, ...] = ("theorycheck", "claims")) -> list[str]:
    """Every subclass of :class:`~theorycheck.models.Model` or :class:`~theorycheck.optim.Step`
    defined in a module under ``roots`` (top-level package names) that no registered factory
    produces, as ``module.Class``.  A class meant only as a base of others declares
    ``conformance_base = True`` in its own body."""
    from theorycheck.models import Model
    from theorycheck.optim import Step

    registered = _registered_types()
    missing = []
    for base in (Model, Step):
        for cls in _subclasses(base):
            if _ours(cls, roots) and cls not in registered and not vars(cls).get("conformance_base"):
                missing.append(f"{cls.__module__}.{cls.__qualname__}")
    return sorted(missing)


def classes_in_test_files(roots: tuple[str, ...] = ("theorycheck", "claims")) -> list[str]:
    """Model and optimizer classes defined in a test file (``test_*.py``) under ``roots``:
    they belong in the paper's ``models.py``."""
    from theorycheck.models import Model
    from theorycheck.optim import Step

    return sorted(f"{cls.__module__}.{cls.__qualname__}" for base in (Model, Step)
                  for cls in _subclasses(base)
                  if _ours(cls, roots) and cls.__module__.rsplit(".", 1)[-1].startswith("test_"))
