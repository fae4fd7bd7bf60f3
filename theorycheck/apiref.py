"""The API reference's pages, generated from the docstrings (Sphinx autodoc + napoleon).

Public means listed in a module's ``__all__``.  :func:`write_pages` writes one reST page per
module that has an ``__all__``: the module docstring, then each name the module *defines*
(``autofunction`` / ``autoclass`` / ``autodata``) followed by "Used by": the claims (ids) and
paper modules of ``claims/`` that import it, found by an import scan (:func:`claim_uses`);
names a package only re-exports are listed with a link to where they are documented.
``docs/api/conf.py`` calls it at build time (``sphinx-build -W docs/api DIR``);
:func:`undocumented` lists public names without a docstring, and the test of the reference
fails on any.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path
from types import ModuleType

from .files import atomic_write, make_folder

__all__ = ["public_modules", "home_of", "claim_uses", "undocumented", "write_pages", "escape_bars"]

#: literals and roles, left as they are by :func:`escape_bars`
_LITERAL = re.compile(r"(``.*?``|:\w+:`[^`]*`)")


def escape_bars(line: str) -> str:
    """Plain-text mathematics in a docstring line made safe for reST: ``|x|`` and ``||W||`` are
    norms, not substitution references (bars inside literals and roles are kept)."""
    parts = _LITERAL.split(line)
    return "".join(p if k % 2 else p.replace("|", "\\|") for k, p in enumerate(parts))


def public_modules(package: str = "theorycheck") -> list[ModuleType]:
    """Every module of ``package`` (itself included) that declares ``__all__``, by name."""
    root = importlib.import_module(package)
    found = [root] + [importlib.import_module(m.name)
                      for m in pkgutil.walk_packages(root.__path__, package + ".")]
    return sorted((m for m in found if hasattr(m, "__all__")), key=lambda m: m.__name__)


def home_of(modules: list[ModuleType]) -> dict[tuple[str, str], str]:
    """(module, name) -> the module whose page documents it: the defining module when that
    lists the name in ``__all__``, else the first (shortest-named) module exporting it."""
    listed = {(m.__name__, n) for m in modules for n in m.__all__}
    homes = {}
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            origin = getattr(obj, "__module__", None) if (inspect.isclass(obj) or inspect.isfunction(obj)) else None
            exporters = sorted((m.__name__ for m in modules if name in m.__all__
                                and getattr(m, name) is obj), key=len)
            if origin is None:      # a constant: the deepest module listing it defines it
                homes[(module.__name__, name)] = exporters[-1]
            elif origin == module.__name__ or (origin, name) not in listed:
                homes[(module.__name__, name)] = origin if (origin, name) in listed else exporters[0]
            else:
                homes[(module.__name__, name)] = origin
    return homes


def _claim_ids(path: Path, root: Path) -> list[str]:
    """The ids of the claims a test file declares (the module is imported: ids are often built
    from the paper's key at run time)."""
    from theorycheck.claim import registry

    if not path.name.startswith("test_"):
        return []
    if str(root.parent) not in sys.path:
        sys.path.insert(0, str(root.parent))
    dotted = ".".join(path.relative_to(root.parent).with_suffix("").parts)
    importlib.import_module(dotted)
    return sorted(spec.id for spec in registry.values() if spec.module == dotted)


def claim_uses(claims_root: str | Path) -> dict[int, list[str]]:
    """id(object) -> who under ``claims_root`` imports it from ``theorycheck``: the claim ids of
    a test file, or the module path of a paper's other modules (``claims/jta24/setup.py``)."""
    root = Path(claims_root).resolve()
    uses: dict[int, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        users = _claim_ids(path, root) or [str(path.relative_to(root.parent))]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("theorycheck"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    obj = getattr(module, alias.name, None)
                    if obj is not None and not inspect.ismodule(obj):
                        uses.setdefault(id(obj), [])
                        uses[id(obj)] += [u for u in users if u not in uses[id(obj)]]
    return uses


def undocumented(modules: list[ModuleType]) -> list[str]:
    """Public functions and classes, documented on their home page, with no docstring of
    their own (an inherited one does not count)."""
    homes = home_of(modules)
    missing = []
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if homes.get((module.__name__, name)) != module.__name__:
                continue
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not (obj.__doc__ or "").strip():
                missing.append(f"{module.__name__}.{name}")
    return missing


def _attribute_docs(module: ModuleType) -> dict[str, list[str]]:
    """name -> the ``#:`` comment lines above a module-level assignment (Sphinx's analyzer)."""
    from sphinx.pycode import ModuleAnalyzer

    try:
        docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
    except Exception:  # no source (a compiled module): no comments to show
        return {}
    return {name: [line for line in lines if line] for (scope, name), lines in docs.items() if scope == ""}


def _directive(obj) -> str:
    if inspect.isclass(obj):
        return "autoclass"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "autofunction"
    return "autodata"


def _page(module: ModuleType, homes: dict, uses: dict[int, list[str]]) -> str:
    title = f"``{module.__name__}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {module.__name__}", "   :no-members:", ""]
    elsewhere = []
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            continue
        home = homes[(module.__name__, name)]
        if home != module.__name__:
            elsewhere.append(f"* :py:obj:`{name} <{home}.{name}>` (documented in :doc:`{home}`)")
            continue
        if _directive(obj) == "autodata":   # a constant: its ``#:`` comment, not its type's docstring
            comment = "\n   ".join(escape_bars(x) for x in _attribute_docs(module).get(name, []))
            lines += [f".. py:data:: {module.__name__}.{name}", "", f"   {comment}", ""]
            continue
        lines += [f".. {_directive(obj)}:: {module.__name__}.{name}"]
        if inspect.isclass(obj):
            lines += ["   :members:", "   :no-inherited-members:"]
        users = uses.get(id(obj), [])
        lines += ["", f"   *Used by:* {', '.join(f'``{u}``' for u in users) if users else 'no claim yet'}", ""]
    if elsewhere:
        lines += ["Also exported here", "------------------", ""] + elsewhere + [""]
    return "\n".join(lines)


def write_pages(out_dir: str | Path, claims_root: str | Path | None = None) -> list[Path]:
    """Write ``<module>.rst`` for every public module and ``modules.rst`` (their toctree) into
    ``out_dir``; ``claims_root`` (default: none) is scanned for the "Used by" lines."""
    out = make_folder(out_dir)
    modules = public_modules()
    homes = home_of(modules)
    uses = claim_uses(claims_root) if claims_root else {}
    written = []
    for module in modules:
        path = out / f"{module.__name__}.rst"
        atomic_write(path, _page(module, homes, uses))
        written.append(path)
    toc = ["Modules", "=======", "", ".. toctree::", "   :maxdepth: 1", ""]
    toc += [f"   {m.__name__}" for m in modules]
    atomic_write(out / "modules.rst", "\n".join(toc) + "\n")
    return written
