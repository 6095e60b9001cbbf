"""The float64 references must not share code with what they check."""

import ast
import pathlib

REFERENCE = pathlib.Path(__file__).parent / "reference"


def _imported_modules(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                yield node.module
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            if node.args and isinstance(node.args[0], ast.Constant):
                yield str(node.args[0].value)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant):
                yield str(node.args[0].value)


def test_reference_modules_exist():
    names = {p.stem for p in REFERENCE.glob("*.py")}
    assert {"math", "reduction", "shape", "indexing", "creation", "matmul", "nn"} <= names


def test_reference_imports_nothing_from_ipu_gpu():
    offenders = []
    for path in sorted(REFERENCE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for module in _imported_modules(tree):
            if module.split(".")[0] == "ipu_gpu":
                offenders.append(f"{path.name}: {module}")
            elif module.split(".")[0] not in ("numpy", "__future__", "math", "itertools",
                                               "functools", "typing"):
                offenders.append(f"{path.name}: {module} (only numpy and the stdlib)")
    assert not offenders, offenders
