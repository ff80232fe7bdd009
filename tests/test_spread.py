"""How tests/conftest.py spreads the tests that start emulators over MCUDEPLOY_TEST_BOARDS groups
(tests/spread.py), on stand-ins for collected tests."""
from __future__ import annotations

import types
from pathlib import Path

import pytest

import spread


class Item:
    """What spread reads of a collected test: its module, fixtures (and their scopes) and marks."""

    def __init__(self, module: str, name: str, fixtures: dict, emulator: bool = True, per_group=()):
        self.path = Path(f"tests/device/{module}.py")
        self.module = types.SimpleNamespace(PER_GROUP_FIXTURES=per_group)
        self.originalname = name.split("[")[0]
        self.name = name
        self.nodeid = f"{self.path}::{name}"
        self.fixturenames = list(fixtures)
        defs = {f: [types.SimpleNamespace(scope=scope)] for f, scope in fixtures.items()}
        self._fixtureinfo = types.SimpleNamespace(name2fixturedefs=defs)
        self.emulator = emulator

    def get_closest_marker(self, name):
        return object() if name == "qemu" and self.emulator else None


def suite() -> list:
    tuned = [Item("test_tune", f"test_{k}", {"one_board": "module", "tmp_path": "function"}) for k in range(3)]
    alone = [Item("test_models", f"test_model[{k}]", {"seconds": "module"}, per_group=("seconds",))
             for k in range(6)]
    fakes = [Item("test_protocol", f"test_frame_{k}", {}, emulator=False) for k in range(4)]
    return tuned + alone + fakes


def test_one_board_keeps_every_emulator_test_in_one_group():
    assert set(spread.groups(suite(), 1)) == {"boards"}


@pytest.mark.parametrize("count", [2, 3])
def test_n_boards_spread_the_tests_and_keep_a_shared_setup_in_one_group(count):
    items = suite()
    groups = spread.groups(items, count)
    assert set(groups) == {f"boards-{k + 1}" for k in range(count)}
    assert len({g for item, g in zip(items, groups) if item.path.stem == "test_tune"}) == 1
    # the tuned module weighs one session per test function (3), each model test one (6), the fakes none
    load = dict.fromkeys(groups, 0)
    for unit in spread.units(items):
        load[groups[unit[0]]] += spread.weight([items[k] for k in unit])
    assert sum(load.values()) == 9 and max(load.values()) - min(load.values()) <= 1
    assert groups == spread.groups(suite(), count)  # the same deal on every worker


def test_a_bad_board_count_is_one_sentence(monkeypatch):
    monkeypatch.setenv("MCUDEPLOY_TEST_BOARDS", "two")
    config = types.SimpleNamespace(getoption=lambda name: None)
    with pytest.raises(pytest.UsageError, match="whole number of boards"):
        spread.board_count(config)
    assert spread.board_count(types.SimpleNamespace(getoption=lambda name: 3)) == 3
