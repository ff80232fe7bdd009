"""offload/access.py: what a kernel reads and writes of each tensor, and what a buffer kept in slow
memory costs by it."""
from mcudeploy.boards import load_board
from mcudeploy.offload.access import kernel_bytes, slow_access_ticks
from mcudeploy.offload.swap import regions_for_swap
from mcudeploy.compile import compile_model
from mcudeploy.plan import CompileOptions
from residual import SHAPE, residual_model

CHANNELS, H, W = SHAPE[1:]


def test_a_3x3_convolution_reads_its_input_once_per_tap_and_an_add_once():
    """residual_model: 3x3 convolutions with a pad of 1 over 8x12x12 float maps. Per output position
    and kernel tap one input element (the output channels are taken as reused), so 9 reads of each
    element; Relu and Add read each input once; each kernel writes its output once."""
    c = compile_model(residual_model(), "host", options=CompileOptions(schedule_method="model"))
    nbytes = CHANNELS * H * W * 4
    for node in c.order:
        reads, writes = kernel_bytes(c.graph, node)
        assert writes == {o: nbytes for o in node.outputs}
        want = 9 * nbytes if node.op == "Conv" else nbytes
        assert reads == {i: want for i in node.inputs if i and not c.graph[i].is_const}


def test_a_buffer_in_slow_memory_pays_for_every_kernel_access():
    """The skip a of residual_model kept in slow memory: written once by Relu, read nine times per
    element by the convolution b and once by the Add, each kernel one transfer's latency; the price
    of the same bytes copied once out and once back is much less."""
    c = compile_model(residual_model(), "host", options=CompileOptions(schedule_method="model"))
    _, slow = regions_for_swap(load_board("host"))
    nbytes = c.graph["a"].nbytes
    speed = slow.speed
    want = speed.copy_ticks(nbytes, out=True) + speed.copy_ticks(9 * nbytes, out=False) + speed.copy_ticks(
        nbytes, out=False)
    got = slow_access_ticks(c.graph, c.order, ["a"], speed)
    assert abs(got - want) < 1e-6
    assert got > speed.copy_ticks(nbytes, out=True) + speed.copy_ticks(nbytes, out=False)


def test_a_tensor_pinned_to_another_region_shares_no_buffer_in_place():
    """The Add of residual_model writes y over one of its inputs; with that input pinned to the slow
    region (what the swap planner does to a tensor it keeps there), y gets a buffer of its own, and
    the input keeps the slow region."""
    from mcudeploy.memory.lifetimes import lifetimes

    c = compile_model(residual_model(), "host", options=CompileOptions(schedule_method="model"))
    lives = lifetimes(c.graph, c.order, 4)
    add = next(n for n in c.order if n.op == "Add")
    src = next(i for i in add.inputs if lives.buffer_of[i] == lives.buffer_of[add.outputs[0]])
    _, slow = regions_for_swap(load_board("host"))
    pinned = c.graph.replace(tensors={**c.graph.tensors, src: c.graph[src].with_(region=slow.name)})
    apart = lifetimes(pinned, c.order, 4)
    assert apart.buffer_of[src] != apart.buffer_of[add.outputs[0]]
