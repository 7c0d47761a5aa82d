"""Rewrite a package's __init__.py that only re-exports names into a lazy one (PEP 562).

    python lazy_init.py <site dir> <package> [<package> ...]

Run by this folder's Makefile on the built dependencies layer. `import mcp.server.x` runs
mcp/__init__.py first, and mcp's imports the whole client side (mcp.client, its transports,
httpx) only to re-export names from it: a Lambda cold start that serves MCP pays for a client
it never uses. The rewritten __init__ exports the same names (the same `__all__`, the same
objects) but imports each from its module on first access, through a module `__getattr__`.

Refuses (exit 1, the build fails) unless the original __init__ is only a docstring, imports
of names (`from <module> import <name> [as <alias>]`, relative or absolute), comments and an
`__all__` list of literals, and every module it names exists in the layer: a newer version
that does more at import is never rewritten blindly.
"""

from __future__ import annotations

import ast
import pprint
import sys
from pathlib import Path

MARKER = "# made lazy at build time by infrastructure/layers/dependencies/lazy_init.py"

TEMPLATE = """{doc}{marker}: the original
# re-exported these names eagerly; each is now imported from its module on first access.
import importlib as _importlib

__all__ = {all}

# name -> (module, attribute; None: the module itself)
_LAZY = {lazy}


def __getattr__(name):
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}") from None
    value = _importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
"""


class NotLazy(Exception):
    pass


def _module_exists(site: Path, module: str) -> bool:
    path = site.joinpath(*module.split("."))
    return (path / "__init__.py").is_file() or path.with_suffix(".py").is_file()


def lazy_source(site: Path, package: str) -> tuple[str, int]:
    """The lazy __init__ for site/package, and how many names it exports."""
    init = site.joinpath(*package.split("."), "__init__.py")
    source = init.read_text()
    if MARKER in source:
        raise NotLazy(f"{init} was rewritten already")
    tree = ast.parse(source)
    doc = ast.get_docstring(tree, clean=False)
    lazy: dict[str, tuple[str, str | None]] = {}
    exported: list[str] | None = None
    for index, node in enumerate(tree.body):
        if index == 0 and doc is not None:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level > 1:
                raise NotLazy(f"{init}:{node.lineno}: an import from a parent package")
            base = package if node.level == 1 else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            for alias in node.names:
                if alias.name == "*":
                    raise NotLazy(f"{init}:{node.lineno}: a star import")
                name = alias.asname or alias.name
                if node.level == 1 and not node.module:  # from . import sub: a submodule
                    target: tuple[str, str | None] = (f"{package}.{alias.name}", None)
                else:
                    target = (module, alias.name)
                if not _module_exists(site, target[0]):
                    raise NotLazy(f"{init}:{node.lineno}: {target[0]} is not in the layer")
                lazy[name] = target
        elif (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__all__"]
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            exported = [ast.literal_eval(element) for element in node.value.elts]
        else:
            raise NotLazy(f"{init}:{node.lineno}: not an import or __all__ ({type(node).__name__})")
    if exported is None:
        raise NotLazy(f"{init}: no __all__")
    missing = [name for name in exported if name not in lazy]
    if missing:
        raise NotLazy(f"{init}: __all__ names what it does not import: {', '.join(missing)}")
    text = TEMPLATE.format(
        doc=f"{ast.unparse(tree.body[0])}\n" if doc is not None else "",
        marker=MARKER,
        all=pprint.pformat(exported, width=100, compact=True),
        lazy=pprint.pformat(lazy, width=100, sort_dicts=False),
    )
    return text, len(lazy)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    site = Path(argv[0])
    for package in argv[1:]:
        try:
            text, count = lazy_source(site, package)
        except NotLazy as exc:
            print(f"lazy_init: {exc}", file=sys.stderr)
            return 1
        site.joinpath(*package.split("."), "__init__.py").write_text(text)
        print(f"lazy_init: {package}.__init__ now imports its {count} names on first use")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
