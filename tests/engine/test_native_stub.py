"""``native/_native.pyi`` describes the extension as built: the same names, and for every
function and method the same parameters in the same order."""

import ast
import re
from pathlib import Path

from orrery import _native

STUB = Path(__file__).resolve().parents[2] / "native" / "_native.pyi"


def stub_definitions():
    tree = ast.parse(STUB.read_text())
    names, signatures = set(), {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
            signatures[node.name] = [a.arg for a in node.args.args]
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "evaluate":
                    signatures[f"{node.name}.evaluate"] = [a.arg for a in item.args.args]
        elif isinstance(node, ast.AnnAssign) and node.target.id.isupper() and node.value is None:
            names.add(node.target.id)
    return names, signatures


def native_parameters(function, name):
    """Parameter names from pybind11's signature line (the first overload's, if overloaded)."""
    lines = function.__doc__.splitlines()
    line = next(line for line in lines if re.match(rf"(1\. )?{name}\((?!\*args)", line))
    return re.findall(r"(\w+):", line.split("(", 1)[1].rsplit(")", 1)[0])


def test_the_stub_names_what_the_extension_exports():
    exported = {name for name in dir(_native) if not name.startswith("_")}
    names, _ = stub_definitions()
    assert names == exported


def test_the_stub_gives_each_function_its_parameters():
    _, signatures = stub_definitions()
    for qualified, parameters in signatures.items():
        owner, _, name = qualified.rpartition(".")
        function = getattr(getattr(_native, owner), name) if owner else getattr(_native, name)
        assert native_parameters(function, name) == parameters, qualified
