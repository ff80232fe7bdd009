"""Systems are data: boards/systems/*.json, checked against boards/system.schema.json; a wrong field is
named in one sentence, and stages are placed so that consecutive ones are neighbours."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcudeploy.errors import MCUDeployError
from mcudeploy.resources import boards_dir
from mcudeploy.schema import problems
from mcudeploy.stages.system import SCHEMA, all_systems, load_system, snake, system_names, systems_dir


def test_every_shipped_system_meets_the_schema_and_loads():
    schema = json.loads((boards_dir() / SCHEMA).read_text())
    for name in system_names():
        assert problems(json.loads((systems_dir() / f"{name}.json").read_text()), schema) == [], name
    systems = {s.name: s for s in all_systems()}
    assert {"qemu-m4x2", "qemu-m4x4", "qemu-an521"} <= set(systems)
    assert [u.chip for u in systems["qemu-m4x4"].units] == [0, 1, 2, 3]
    assert systems["qemu-m4x2"].link.kind == "spi" and systems["qemu-m4x2"].link.bits_per_s == 10e6
    an521 = systems["qemu-an521"]
    assert an521.chips == 1 and len(an521.units) == 2 and an521.link_after(0) is an521.core_link
    h747 = systems["stm32h747i-disco"]
    assert [u.board.core for u in h747.units] == ["cortex-m7", "cortex-m4"]
    assert any(s.chips > 1 and all(u.board.kind == "hardware" for u in s.units) for s in systems.values())


def test_snake_order_keeps_consecutive_chips_neighbours():
    for dims in [(2, 2), (3, 4), (1, 5)]:
        order = snake(dims)
        assert sorted(order) == list(range(dims[0] * dims[1]))
        for a, b in zip(order, order[1:]):
            (ra, ca), (rb, cb) = divmod(a, dims[1]), divmod(b, dims[1])
            assert abs(ra - rb) + abs(ca - cb) == 1
    assert [u.chip for u in load_system("qemu-m4-mesh2x2").units] == [0, 1, 3, 2]


def edited(tmp_path: Path, change) -> Path:
    data = json.loads((systems_dir() / "qemu-m4x2.json").read_text())
    data["name"] = "edited"
    change(data)
    (tmp_path / "edited.json").write_text(json.dumps(data))
    return tmp_path


@pytest.mark.parametrize("change, sentence", [
    (lambda d: d.pop("link"), "a system of 2 chips needs 'link' between them"),
    (lambda d: d["link"].update(bits_per_s=0), "field 'link.bits_per_s' is 0, not above 0"),
    (lambda d: d["link"].update(kind="can"), "field 'link.kind' should be one of spi, uart, shared-memory"),
    (lambda d: d["chips"][1].update(board="nope"), "chip 1 names the board 'nope', which is not a known board"),
    (lambda d: d["chips"][0].update(cores=["a", "b"]), "chip 0 has 2 cores and needs 'core_link'"),
    (lambda d: d.update(topology={"kind": "mesh", "dims": [3, 3]}), "a mesh needs 'topology.dims' of two numbers"),
    (lambda d: d.update(topology={"kind": "ring"}), "field 'topology.kind' should be one of chain, mesh"),
    (lambda d: d.update(kind="board"), "field 'kind' should be 'system'"),
])
def test_a_wrong_field_is_named_in_one_sentence(tmp_path, change, sentence):
    with pytest.raises(MCUDeployError) as err:
        load_system("edited", edited(tmp_path, change))
    assert sentence in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_system_lists_the_known_ones():
    with pytest.raises(MCUDeployError, match="unknown system 'qemu-m4x9'; known systems: .*qemu-m4x2"):
        load_system("qemu-m4x9")


def test_cores_share_a_board_evenly_unless_it_is_already_one_cores_share():
    """stm32h747i-disco: each core its own board (nothing shared); qemu-an521: both cores compile for
    qemu-an521-core, which is already half the chip (per_core), so the partitioner does not halve it again."""
    from mcudeploy.memory.regions import areas
    from mcudeploy.stages.assign import FIRMWARE_FLASH_BYTES, capacity

    an521 = load_system("qemu-an521")
    for unit in an521.units:
        assert unit.sharing == 1
        cap = capacity(unit)
        assert cap.sram_bytes == sum(a.capacity for a in areas(unit.board))
        assert cap.flash_bytes == unit.board.flash_bytes - FIRMWARE_FLASH_BYTES
    assert {u.sharing for u in load_system("stm32h747i-disco").units} == {1}
