"""app/'s folders import downward only: files, then render, then view, then serve
(docs/DEVELOPING.md). Rendering knows nothing of view state or callbacks."""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
ORDER = ["files", "render", "view", "serve"]


def _imported_folders(path: Path) -> set[str]:
    """The app folders a module imports from, relative or absolute."""
    folder = path.parent.name
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 1:
                targets = [folder]
            elif node.level == 2:  # from ..render.figure import x, or from ..view import state
                targets = [module.split(".")[0]] if module else [a.name for a in node.names]
            elif module.startswith("graphscope.app."):
                targets = [module.split(".")[2]]
            else:
                continue
        elif isinstance(node, ast.Import):
            targets = [
                a.name.split(".")[2] for a in node.names if a.name.startswith("graphscope.app.")
            ]
        else:
            continue
        found.update(t for t in targets if t in ORDER)
    return found


def test_each_folder_imports_only_the_folders_below_it() -> None:
    modules = [p for folder in ORDER for p in (APP / folder).glob("*.py")]
    assert len(modules) > 20  # every module of the app lives in one of the folders
    assert sorted(p.name for p in APP.glob("*.py")) == ["__init__.py", "wsgi.py"]
    upward = {
        f"{p.parent.name}/{p.name} imports {target}/"
        for p in modules
        for target in _imported_folders(p)
        if ORDER.index(target) > ORDER.index(p.parent.name)
    }
    assert not upward, sorted(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "render" / "x.py"
    module.parent.mkdir()
    module.write_text("from ..view.state import ViewState\nfrom ..files import sources\n")
    assert _imported_folders(module) == {"view", "files"}
