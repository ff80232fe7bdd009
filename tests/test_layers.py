"""The layers run one way (mcudeploy/layers.py): every import of mcudeploy, computed from the source
with ast (no module is imported), goes down the floors, and no modules import each other in a
circle. An import inside a function counts as much as one at the top of a file."""
from __future__ import annotations

import ast
from pathlib import Path

from mcudeploy.layers import FLOORS, floor_of

PACKAGE = Path(__file__).resolve().parent.parent / "mcudeploy"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(known: dict[str, Path]) -> dict[str, set[tuple[str, int]]]:
    """Per module, the mcudeploy modules it imports (the module a name comes from, or the submodule
    the name is), with the line."""
    found: dict[str, set[tuple[str, int]]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out = found.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out.update((a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "mcudeploy")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != "mcudeploy":
                    continue
                for a in node.names:
                    sub = f"{source}.{a.name}"
                    out.add((sub if sub in known else source, node.lineno))
    return found


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(found) -> list[str]:
    wrong = []
    for module, targets in sorted(found.items()):
        for target, line in sorted(targets):
            here, there = room(module), room(target)
            if here != there and floor_of(there) <= floor_of(here):
                way = "sideways" if floor_of(there) == floor_of(here) else "upward"
                wrong.append(f"{module}:{line} imports {target} ({way}: {here} on floor {floor_of(here)}, "
                             f"{there} on floor {floor_of(there)})")
    return wrong


def cycles(found) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    graph = {m: sorted({t for t, _ in ts if t in found and t != m}) for m, ts in found.items()}
    index, low, on_stack, stack, groups, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        group.append(m)
                        if m == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return groups


def test_every_room_has_a_floor():
    rooms = {room(m) for m in modules()}
    listed = {r for floor in FLOORS for r in floor}
    assert sorted(rooms - listed) == [], "rooms of mcudeploy/ on no floor of mcudeploy/layers.py"
    assert sorted(listed - rooms) == [], "floors of mcudeploy/layers.py naming no room"


def test_imports_go_down():
    wrong = upward_imports(imports(modules()))
    assert wrong == [], "imports against the floors of mcudeploy/layers.py:\n" + "\n".join(wrong)


def test_no_import_cycles():
    found = cycles(imports(modules()))
    assert found == [], "groups of modules that import each other round (each group sorted by name):\n" + "\n".join(" -> ".join(g) for g in found)
