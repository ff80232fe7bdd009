"""The tests that start emulators on N boards at once (MCUDEPLOY_TEST_BOARDS=N, or pytest
--test-boards N): tests/conftest.py puts them in N pytest-xdist groups instead of one, and each
group runs one test after another on a worker of its own, so N emulators (and their builds) run at
once. N = 1, the default, is CI's one group ("boards").

Tests that share a module- or class-scoped fixture (a model tuned once, an emulator's results reused)
stay in one group, so that work is done once; a module may name in ``PER_GROUP_FIXTURES`` fixtures
that only record (a table of seconds), which each group may set up for itself. The units are dealt
to the groups heaviest first, each to the lightest group so far; the deal depends on the
collected tests alone, so every xdist worker makes the same one. Balance is by weight, a guess at
the emulator sessions a unit costs (tests that start none weigh nothing), not by measured time."""
from __future__ import annotations

import os

import pytest

GROUP = "boards"
SHARED_SCOPES = ("module", "class", "package")


def board_count(config) -> int:
    given = config.getoption("test_boards")
    raw = given if given is not None else os.environ.get("MCUDEPLOY_TEST_BOARDS", "1")
    try:
        count = int(raw)
    except ValueError:
        count = 0
    if count < 1:
        raise pytest.UsageError(f"MCUDEPLOY_TEST_BOARDS (or --test-boards) must be a whole number of boards, 1 or "
                             f"more, not {raw!r}")
    return count


def _shared(item) -> list:
    """The fixtures ``item`` shares with other tests of its module (set up once for all of them)."""
    own = set(getattr(item.module, "PER_GROUP_FIXTURES", ())) if getattr(item, "module", None) else set()
    info = getattr(item, "_fixtureinfo", None)
    names = []
    for name, defs in (info.name2fixturedefs.items() if info else ()):
        if defs and str(defs[-1].scope) in SHARED_SCOPES and name not in own:
            names.append((str(item.path), name))
    return names


def units(items: list) -> list[list[int]]:
    """The indices of ``items`` in units that must run in one group (sharing a fixture), in item order."""
    parent = list(range(len(items)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    first: dict = {}
    for k, item in enumerate(items):
        for key in _shared(item):
            if key in first:
                parent[root(k)] = root(first[key])
            else:
                first[key] = k
    grouped: dict[int, list[int]] = {}
    for k in range(len(items)):
        grouped.setdefault(root(k), []).append(k)
    return list(grouped.values())


def runs_emulators(item) -> bool:
    return bool(item.get_closest_marker("qemu")) or "need_qemu" in getattr(item, "fixturenames", ())


def weight(unit: list) -> int:
    """About how many emulator sessions ``unit`` costs: a test that starts emulators counts one, the
    tests of one function sharing a setup count one together; tests that start none weigh nothing."""
    return len({(str(item.path), getattr(item, "originalname", item.name)) if len(unit) > 1 else item.nodeid
                for item in unit if runs_emulators(item)})


def groups(items: list, count: int) -> list[str]:
    """The xdist group of each of ``items`` when they run on ``count`` boards."""
    if count == 1:
        return [GROUP] * len(items)
    load = [0] * count
    out = [GROUP] * len(items)
    weighed = [(weight([items[k] for k in unit]), unit) for unit in units(items)]
    for w, unit in sorted(weighed, key=lambda wu: (-wu[0], wu[1][0])):
        g = min(range(count), key=lambda k: (load[k], k))
        load[g] += w
        for k in unit:
            out[k] = f"{GROUP}-{g + 1}"
    return out
