"""No import cycles between modules of the packages import-linter checks (issue 15).

import-linter's ``acyclic_siblings`` contract (``acyclic`` in pyproject.toml) finds
cycles between the sibling parts of each package, but not a cycle that runs through a
package's own ``__init__`` (``pkg/__init__`` imports ``pkg.a``, which imports ``pkg``),
nor one that crosses root packages. This finds every import that lies on a cycle, in
the graph of ``[tool.importlinter] root_packages`` that grimp (import-linter's graph
library) builds as import-linter does: imports inside functions and under
``if TYPE_CHECKING:`` count.

    python tools/import_cycles.py

Prints each cycle as a closed path with its import lines, and exits 1 if there is one.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import Path

import grimp

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def root_packages() -> list[str]:
    with PYPROJECT.open("rb") as f:
        config = tomllib.load(f)["tool"]["importlinter"]
    return list(config.get("root_packages") or [config["root_package"]])


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """A closed path for each cycle: for every import ``a -> b``, the shortest chain
    from ``b`` back to ``a``, if there is one; one path per set of modules."""
    found: dict[frozenset[str], list[str]] = {}
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain:
                found.setdefault(frozenset(chain), [module, *chain])
    return list(found.values())


def describe(graph: grimp.ImportGraph, path: Sequence[str]) -> Iterable[str]:
    for importer, imported in pairwise(path):
        lines = sorted(d["line_number"]
                       for d in graph.get_import_details(importer=importer, imported=imported))
        yield f"    {importer} -> {imported} (l.{', l.'.join(map(str, lines))})"


def main() -> int:
    roots = root_packages()
    graph = grimp.build_graph(*roots, cache_dir=None, exclude_type_checking_imports=False)
    found = cycles(graph)
    for path in found:
        print(f"cycle: {' -> '.join(path)}")
        print("\n".join(describe(graph, path)))
    where = f"the {len(graph.modules)} modules of {', '.join(roots)}"
    if found:
        print(f"{len(found)} import cycle(s) among {where}")
        return 1
    print(f"no import cycles among {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
