"""Count import cycles between ragproof's modules; exit 1 if there is any.

The import-linter contracts forbid cycles between siblings and imports against
the layers; this counts every cycle between any two modules (the strongly
connected components of the module import graph, imports under
``if TYPE_CHECKING:`` left out as the contracts leave them out), so
``scripts/test`` fails on one the contracts' shape could miss.
"""

from __future__ import annotations

import sys

import grimp

PACKAGES = ("ragproof", "ragproof_core", "ragproof_assets", "ragproof_serve", "ragproof_cli")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The groups of modules that import each other in a ring (Tarjan's algorithm)."""
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        # Iterative depth-first search: (module, its imports not yet visited).
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def main() -> int:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    found = cycles(graph)
    for group in found:
        print("import cycle: " + " <-> ".join(group), file=sys.stderr)
    print(f"import cycles between ragproof's {len(graph.modules)} modules: {len(found)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
