"""The import boundary between where code runs, read statically from the source (ast, nothing
is imported): the Lambda functions must reach nothing from the laptop side (sessionvault.local,
sessionvault.cli), which the SharedCodeLayer does not even carry, and the sessionvault modules
must not import each other in a cycle.

The Lambda walk starts at each functions/*/handler.py and follows every sessionvault import
transitively: module level, inside functions, under `if TYPE_CHECKING:` (stricter than what
runs), relative imports, `from package import submodule`, and importlib.import_module("...")
with a literal name. The cycle checks look twice: at what runs at import time (module-level
imports, class bodies and if/try/with blocks included), and at every import anywhere, inside
functions too (a cycle hidden in a function-level import is still a cycle in the design).

The ladder itself (docs/architecture.md: each floor imports only the floors below it) is held by
import-linter ([tool.importlinter] in pyproject.toml, `lint-imports` in make test); the last
self-test here shows it refusing an upward import made inside a function.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
PACKAGE = "sessionvault"
LAPTOP_SIDE = ("sessionvault.local", "sessionvault.cli")
HANDLERS = sorted((ROOT / "functions").glob("*/handler.py"))


# ---------------------------------------------------------------- reading imports


@dataclass(frozen=True)
class Tree:
    """A source root holding the package (shared/ here; a temporary one in the self-tests)."""

    root: Path
    package: str = PACKAGE

    def path_of(self, module: str) -> Path | None:
        base = self.root.joinpath(*module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def is_package(self, module: str) -> bool:
        path = self.path_of(module)
        return path is not None and path.name == "__init__.py"

    def modules(self) -> list[str]:
        found = []
        for path in sorted((self.root / self.package).rglob("*.py")):
            parts = path.relative_to(self.root).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        return found

    def ours(self, module: str) -> bool:
        return module == self.package or module.startswith(self.package + ".")


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: Iterable[ast.stmt], *, runtime_only: bool) -> Iterator[ast.AST]:
    """Every node to look at for imports. runtime_only: what runs when the module is imported
    (no function bodies, no `if TYPE_CHECKING:` branch); otherwise the whole tree."""
    for node in body:
        if not runtime_only:
            yield from ast.walk(node)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _statements(node.orelse, runtime_only=True)
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, field, None) or []:
                inner = child.body if isinstance(child, (ast.ExceptHandler, ast.match_case)) else [child]
                yield from _statements(inner, runtime_only=True)


def _absolute(tree: Tree, module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if tree.is_package(module) else module.rpartition(".")[0]
    base = package.split(".")
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(tree: Tree, source: Path, module: str, *, runtime_only: bool) -> set[str]:
    """The package's modules that `source` (the module `module`, or "" for a handler) imports.
    `from X import a` counts X, plus X.a when a is a submodule; when every name is a submodule,
    X itself is only their parent package, reached without an edge of its own."""
    found: set[str] = set()
    parsed = ast.parse(source.read_text(), filename=str(source))
    for node in _statements(parsed.body, runtime_only=runtime_only):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(tree, module, node)
            subs = {f"{base}.{a.name}" for a in node.names if tree.path_of(f"{base}.{a.name}")}
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(base)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return {m for m in found if tree.ours(m)}


def with_parents(module: str) -> list[str]:
    """Importing a.b.c runs a/__init__ and a/b/__init__ first."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def reached_from(tree: Tree, entry: Path) -> dict[str, str]:
    """Every package module reached from `entry`, each with the module that first imported it."""
    seen: dict[str, str] = {}
    todo = [(m, entry.name) for m in imports_of(tree, entry, "", runtime_only=False)]
    while todo:
        module, importer = todo.pop()
        for name in with_parents(module):
            if name in seen:
                continue
            seen[name] = importer
            path = tree.path_of(name)
            assert path is not None, f"{importer} imports {name}, which is not in {tree.root}"
            todo.extend((m, name) for m in imports_of(tree, path, name, runtime_only=False))
    return seen


def import_graph(tree: Tree, *, runtime_only: bool = True) -> dict[str, set[str]]:
    """Edges among the package's modules: import-time ones, or (runtime_only False) every one."""
    graph = {}
    for module in tree.modules():
        path = tree.path_of(module)
        assert path is not None
        targets = imports_of(tree, path, module, runtime_only=runtime_only)
        graph[module] = {t for t in targets if tree.path_of(t)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with a cycle (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def chain(seen: dict[str, str], module: str) -> str:
    path = [module]
    while path[-1] in seen:
        path.append(seen[path[-1]])
    return " <- ".join(path)


def laptop_side(module: str) -> bool:
    return any(module == side or module.startswith(side + ".") for side in LAPTOP_SIDE)


# ---------------------------------------------------------------- the project


def test_there_are_lambda_handlers_to_walk():
    assert {h.parent.name for h in HANDLERS} == {"mcp", "admin", "maintenance", "migrate"}


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_lambda_functions_import_nothing_from_the_laptop_side(handler):
    seen = reached_from(Tree(SHARED), handler)
    # The serving functions build a runtime; the migrate function only migrates and provisions.
    core = (
        "sessionvault.jobs.provision.resource" if handler.parent.name == "migrate" else "sessionvault.runtime"
    )
    assert core in seen, "the walk found none of the shared code"
    leaks = sorted(m for m in seen if laptop_side(m))
    assert not leaks, "the Lambda side reaches laptop-only code:\n" + "\n".join(chain(seen, m) for m in leaks)


def test_the_mcp_function_reaches_the_server_and_the_database_code():
    seen = reached_from(Tree(SHARED), ROOT / "functions" / "mcp" / "handler.py")
    assert {"sessionvault.server.app", "sessionvault.db.pool", "sessionvault.settings"} <= set(seen)


def test_the_migrate_function_reaches_the_migrations_and_the_roles_but_no_server():
    seen = reached_from(Tree(SHARED), ROOT / "functions" / "migrate" / "handler.py")
    assert {
        "sessionvault.jobs.provision.resource",
        "sessionvault.db.migrations",
        "sessionvault.db.roles",
    } <= set(seen)
    assert not any(m.startswith("sessionvault.server") for m in seen), "it serves nothing"


def test_sessionvault_modules_import_each_other_without_cycles():
    found = cycles(import_graph(Tree(SHARED)))
    assert not found, "module-level import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_cycle_hides_in_an_import_inside_a_function():
    found = cycles(import_graph(Tree(SHARED), runtime_only=False))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


# The data layer modules server code may read without the service layer: the identity plane's
# admission statement, the audit trail and the OAuth state, which hold no session content.
SERVER_READS_DIRECTLY = {"sessionvault.db.admission", "sessionvault.db.audit", "sessionvault.db.oauth"}


def test_the_server_reaches_tenant_data_only_through_the_service_layer():
    graph = import_graph(Tree(SHARED), runtime_only=False)
    direct = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith("sessionvault.server.")
        for target in targets
        if target.startswith("sessionvault.db.") and target not in SERVER_READS_DIRECTLY
    )
    assert not direct, "server code reading the tenant plane past the service layer:\n" + "\n".join(direct)


# ---------------------------------------------------------------- the checks can fail


def _write(root: Path, files: dict[str, str]) -> Tree:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Tree(root, "pkg")


def test_the_walk_follows_submodules_relative_imports_and_imports_inside_functions(tmp_path):
    tree = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/core/__init__.py": "",
            "pkg/core/a.py": "def f():\n    from . import b\n",
            "pkg/core/b.py": "import importlib\nimportlib.import_module('pkg.core.c')\n",
            "pkg/core/c.py": "from ..local import d\n",
            "pkg/local/__init__.py": "",
            "pkg/local/d.py": "",
            "handler.py": "from pkg.core import a\n",
        },
    )
    seen = reached_from(tree, tmp_path / "handler.py")
    assert {"pkg.core.a", "pkg.core.b", "pkg.core.c", "pkg.local", "pkg.local.d"} <= set(seen)
    assert chain(seen, "pkg.local.d") == "pkg.local.d <- pkg.core.c <- pkg.core.b <- pkg.core.a <- handler.py"


def test_the_cycle_check_sees_module_level_cycles_only(tmp_path):
    tree = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "try:\n    import pkg.c\nexcept ImportError:\n    pass\n",
            "pkg/c.py": "from pkg.a import thing\n",
            # Not cycles: an import inside a function, one only for type checkers.
            "pkg/d.py": "import pkg.e\n",
            "pkg/e.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    import pkg.d\n"
                "def f():\n    import pkg.d\n"
            ),
        },
    )
    assert cycles(import_graph(tree)) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_the_cycle_check_sees_an_import_inside_a_function(tmp_path):
    tree = _write(
        tmp_path,
        {
            "sessionvault/__init__.py": "",
            "sessionvault/core/__init__.py": "",
            "sessionvault/core/rules.py": "def f():\n    from sessionvault.db import sql\n",
            "sessionvault/db/__init__.py": "",
            "sessionvault/db/sql.py": "from sessionvault.core import rules\n",
        },
    )
    tree = Tree(tmp_path, "sessionvault")
    assert cycles(import_graph(tree, runtime_only=False)) == [
        ["sessionvault.core.rules", "sessionvault.db.sql"]
    ]
    assert cycles(import_graph(tree)) == []  # import time alone does not see it


def test_lint_imports_sees_an_import_up_the_ladder_inside_a_function(tmp_path):
    """The ladder is import-linter's ([tool.importlinter] in pyproject.toml, run by make test):
    shown here to refuse what it must, on a package of two floors."""
    _write(
        tmp_path,
        {
            "ladderprobe/__init__.py": "",
            "ladderprobe/core/__init__.py": "",
            "ladderprobe/core/rules.py": "def f():\n    from ladderprobe.db import sql\n",
            "ladderprobe/db/__init__.py": "",
            "ladderprobe/db/sql.py": "from ladderprobe.core import rules\n",
        },
    )
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "ladderprobe"\n'
        '[[tool.importlinter.contracts]]\nname = "floors"\ntype = "layers"\n'
        'layers = ["ladderprobe.db", "ladderprobe.core"]\n'
    )
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [str(lint), "--config", str(config), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "BROKEN" in done.stdout, done.stdout + done.stderr
    assert "ladderprobe.core.rules -> ladderprobe.db.sql" in done.stdout


# ---------------------------------------------------------------- the map on the wall


def test_the_architecture_doc_names_every_folder_of_the_package():
    text = (ROOT / "docs" / "architecture.md").read_text()
    folders = sorted(
        str(path.relative_to(SHARED / PACKAGE))
        for path in (SHARED / PACKAGE).rglob("*")
        if path.is_dir() and path.name != "__pycache__"
    )
    missing = [folder for folder in folders if f"`{folder}/`" not in text and f"{folder}/" not in text]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def rooms(text: str) -> dict[str, list[str]]:
    """The room table's rows by their room (`server/web/`, `core/`, `settings.py`)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if match := re.match(r"\| `([^`]+)` \|", line):
            found.setdefault(match.group(1), []).append(line)
    return found


def unnamed_modules(text: str, package: Path) -> list[str]:
    """Every module of `package` the map does not name: by its path anywhere, or by its name
    in the row of its folder."""
    table = rooms(text)
    missing = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        folder = "" if str(relative.parent) == "." else f"{relative.parent}/"
        if path.name == "__init__.py" or str(relative) in text:
            continue
        named = re.compile(rf"(?<![\w/]){re.escape(path.stem)}(?!\w)")
        if not any(named.search(row) for row in table.get(folder, [])):
            missing.append(str(relative))
    return missing


def test_the_architecture_doc_names_every_module_of_the_package():
    """Issue 33 item 6: the map drifted (27 modules named nowhere, the whole workspaces
    feature among them); a module it does not name fails here."""
    assert unnamed_modules((ROOT / "docs" / "architecture.md").read_text(), SHARED / PACKAGE) == []


def test_the_module_check_sees_a_module_the_map_does_not_name(tmp_path):
    package = tmp_path / "pkg"
    (package / "db").mkdir(parents=True)
    for name in ("db/pool.py", "db/orphan.py", "settings.py"):
        (package / name).write_text("")
    text = "| `db/` | every SQL string: pool (connections) |\n| `settings.py` | settings |\n"
    assert unnamed_modules(text, package) == ["db/orphan.py"]


def test_contributing_exists_and_its_commands_name_real_paths():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for path in ("tests/unit", "tests/integration", "tests/infra/test_import_boundary.py",
                 "shared/sessionvault/db/sql/", "local/setup/registry.py", "local/hook/capture/clients.py",
                 "local/data/importers/__init__.py", "tests/conftest.py"):  # fmt: skip
        assert path in text, path
        assert (ROOT / path).exists() or (SHARED / PACKAGE / path).exists(), path
