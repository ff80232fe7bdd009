"""plan.json read back as a typed record (plan/typed.py through plan/codec.py): every field the writers
write is a field of the record, and a field missing or of the wrong kind is one sentence naming the
file and the field."""
import dataclasses
import json
import typing

import pytest
from residual import residual_model

from mcudeploy.cli import main
from mcudeploy.compile import compile_model
from mcudeploy.plan import BoardPlan, CompileOptions, PlanError, SystemPlan, plan_dict, read_plan
from mcudeploy.plan.typed import decode_fields


def _unread(cls, value, where: str = "") -> list[str]:
    """The keys of ``value`` (plan.json's object, or one in it) that ``cls`` has no field for, recursively."""
    hints = typing.get_type_hints(cls)
    by_key = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls) if not f.metadata}
    by_key |= {f.metadata["key"]: f for f in dataclasses.fields(cls) if "key" in f.metadata}
    out = [f"{where}{k}" for k in value if k not in by_key]
    for key, f in by_key.items():
        kinds = [a for a in typing.get_args(hints[f.name]) or (hints[f.name],) if a is not type(None)]
        inner = [k for a in kinds for k in (typing.get_args(a) or (a,)) if dataclasses.is_dataclass(k)]
        if key in value and inner and value[key] is not None:
            entries = value[key] if isinstance(value[key], list) else [value[key]]
            out += [u for e in entries if isinstance(e, dict) for u in _unread(inner[0], e, f"{where}{key}.")]
    return out


def _written(plan: dict, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1))
    return read_plan(path).plan


@pytest.fixture(scope="module")
def plans():
    """Plans of every kind compile writes for one board: plain, with a fast-memory budget's swaps (plain copies
    on qemu-m4, DMA on qemu-an505), and as tune writes them (a split, its latency, its search)."""
    plain = compile_model(residual_model(), "host")
    tuned = plan_dict(plain, scheme=[{"node": "conv", "op": "Conv", "axis": "h", "pieces": 2}],
                      latency={"ticks": 10, "baseline_ticks": 9, "source": "measured on qemu-m4"},
                      split={"arena_bytes_unsplit": 2, "arena_bytes": 1, "saved_bytes": 1})
    tuned["tune"] = {"budget": {"candidates": 8}, "stopped_by": "budget"}
    return [plan_dict(plain), tuned] + [plan_dict(compile_model(residual_model(), b,
                                                                options=CompileOptions(fast_memory="60%")))
                                        for b in ("qemu-m4", "qemu-an505")]


def test_every_field_written_is_typed(plans, tmp_path):
    for plan in plans:
        read = _written(plan, tmp_path)
        assert isinstance(read, BoardPlan) and _unread(BoardPlan, plan) == []
        assert read.arena_bytes == plan["arena_bytes"] and [s.node for s in read.order] == [
            e["node"] for e in plan["order"]]
        assert read.has("offload") == ("offload" in plan) and (read.offload is not None) == ("offload" in plan)


def test_a_system_plan_is_typed_with_its_stages_plans(tmp_path, capsys):
    model = tmp_path / "residual.onnx"
    model.write_bytes(residual_model().SerializeToString())
    assert main(["compile", str(model), "-b", "host-x4", "-o", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    read = read_plan(tmp_path / "out" / "plan.json")
    written = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert read.kind == "system" and isinstance(read.plan, SystemPlan) and _unread(SystemPlan, written) == []
    assert [s.plan.board for s in read.plan.stages] == [s["board"] for s in written["stages"]]
    assert read.plan.links[0].src == written["links"][0]["from"]


@pytest.mark.parametrize("edit, says", [
    (lambda p: p.pop("board"), 'it has no "board" field'),
    (lambda p: p.update(arena_bytes="big"), '"arena_bytes" is not a whole number'),
    (lambda p: p.update(arena_bytes=True), '"arena_bytes" is not a whole number'),
    (lambda p: p["buffers"][1].pop("size"), 'buffers[1] has no "size" field'),
    (lambda p: p["order"][0].update(inputs="x"), '"order[0].inputs" is not a list'),
    (lambda p: p["buffers"][0].update(parts=[[0, 1, 2]]), '"buffers[0].parts[0]" is not a list of 4'),
    (lambda p: p.update(regions=[{"name": 3}]), '"regions[0].name" is not a string'),
    (lambda p: p["schedule"].update(time_s="long"), '"schedule.time_s" is not a number'),
    (lambda p: p.update(c={"sections": [{"region": ""}]}), 'c.sections[0] has no "section" field'),
])
def test_a_bad_field_is_one_sentence_naming_the_file_and_the_field(plans, tmp_path, edit, says):
    plan = json.loads(json.dumps(plans[0]))
    edit(plan)
    with pytest.raises(PlanError) as err:
        _written(plan, tmp_path)
    assert str(err.value).startswith(str(tmp_path / "plan.json")) and says in str(err.value)
    assert "\n" not in str(err.value)


def test_optional_fields_left_out_read_as_none_or_empty(plans):
    plan = json.loads(json.dumps(plans[0]))
    for key in ("regions", "tensors", "schedule", "latency", "c", "sharing"):
        plan.pop(key)
    read = decode_fields(BoardPlan, plan, "the plan")
    assert read.regions == () and read.tensors == () and read.schedule is None and read.latency is None
    assert read.c is None and read.sharing is None and not read.has("sharing") and read.arena_sections == {}
