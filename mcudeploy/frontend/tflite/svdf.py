"""SVDF: the IR SVDF (mcudeploy/ops/svdf.py), as TensorFlow Lite Micro's kernels/svdf.cc takes it.

Its activation state (input 4) is a variable tensor, which TensorFlow Lite Micro sets at reset (to the zero point of
an int8 state, else to zero) and which the operator shifts and writes on every call; as an LSTM's state
(sequence.py), it becomes a state of the model (Graph.states) whose next value is the SVDF's second output, so that
a sequence of calls carries it over, and NAME_reset() gives it back its initial value.

TensorFlow Lite Micro's Prepare reads the bias unconditionally (its TODO #1751): a file without one makes it crash
rather than refuse, so mcudeploy refuses such a file, with no oracle to say what it computes.
"""
from __future__ import annotations

import numpy as np

from mcudeploy.frontend.tflite.importer import handles
from mcudeploy.ir import Graph, Node, Tensor
from mcudeploy.ops import registry
from mcudeploy.ops.svdf import int_params

INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE = range(5)
ACTIVATION_NAMES = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}  # the schema's


@handles("SVDF")
def svdf(imp, op, ins, outs):
    if len(ins) != 5 or len(outs) != 1:
        imp.fail(f"has {len(ins)} inputs and {len(outs)} outputs, where TensorFlow Lite Micro's SVDF takes 5 "
                 f"(input, feature weights, time weights, bias, state) and gives 1", True)
    if ins[STATE] < 0:
        imp.fail("has no activation state (input 4), which TensorFlow Lite Micro's SVDF requires", True)
    if ins[BIAS] < 0:
        imp.fail("has no bias, which TensorFlow Lite Micro cannot run (its SVDF reads the bias unconditionally and "
                 "crashes without one); give it a bias of zeros")
    o = imp.options(op, "SVDFOptions", required=True)
    rank, code = int(o.Rank()), int(o.FusedActivationFunction())
    x = ins[INPUT]
    x_shape, wf_shape, wt_shape = imp.shape(x), imp.shape(ins[WEIGHTS_FEATURE]), imp.shape(ins[WEIGHTS_TIME])
    if len(x_shape) != 2:
        imp.fail(f"has a {len(x_shape)}-D input {list(x_shape)}, where an SVDF takes [batch, features]", True)
    if len(wf_shape) != 2 or len(wt_shape) != 2:
        imp.fail(f"has feature weights {list(wf_shape)} and time weights {list(wt_shape)}, where an SVDF takes "
                 f"two 2-D ones, [filters, features] and [filters, memory]", True)
    filters = wf_shape[0]
    if rank < 1 or filters % rank:
        imp.fail(f"has rank {rank}, which does not divide its {filters} filters", True)
    for k, what in ((WEIGHTS_FEATURE, "feature weights"), (WEIGHTS_TIME, "time weights"), (BIAS, "bias")):
        if not imp.is_const(ins[k]):
            imp.fail(f"has {what} that are not constant, which is not supported")
    if code not in ACTIVATION_NAMES:
        imp.fail(f"has fused activation {code}, which is none of TFLite's ({', '.join(ACTIVATION_NAMES.values())})",
                 True)
    batch, memory = x_shape[0], wt_shape[1]
    t = imp.tensor(ins[STATE])
    if not t.IsVariable():
        imp.fail(f"has a state {imp.tname(ins[STATE])} that is not a variable tensor (TensorFlow Lite Micro requires "
                 f"one)", True)
    if tuple(imp.shape(ins[STATE])) != (batch, memory * filters):
        imp.fail(f"has a state of shape {list(imp.shape(ins[STATE]))}, not [{batch}, {memory * filters}] (batch, "
                 f"memory x filters)", True)
    dtype = imp.dtype(ins[STATE])
    q = imp.quant(ins[STATE], 2)
    fill = q.zero_point[0] if q is not None and dtype == "int8" else 0
    state = f"{imp.tname(ins[STATE])}/state"
    imp.tensors[state] = Tensor(state, (batch, memory * filters), dtype, "state", q,
                                np.full((batch, memory * filters), fill, np.dtype(dtype)))
    nxt = f"{state}/next"
    imp.tensors[nxt] = Tensor(nxt, (batch, memory * filters), dtype, quant=q)
    inputs = (imp.value(x, "plain"), imp.const(ins[WEIGHTS_FEATURE]), imp.const(ins[WEIGHTS_TIME]),
              imp.const(ins[BIAS]), state)
    y = imp.tname(outs[0])
    imp.tensors[y] = Tensor(y, imp.shape(outs[0]), imp.dtype(outs[0]), quant=imp.quant(outs[0], 2))
    node = Node(f"{y}/svdf", "SVDF", inputs, (y, nxt), {"rank": rank, "activation": ACTIVATION_NAMES[code]})
    scope = Graph("scope", imp.tensors, (), (), (), arithmetic="tflite")
    decl = registry.get("SVDF")
    inferred = decl.infer(scope, node)
    if inferred[0] != (tuple(imp.shape(outs[0])), imp.dtype(outs[0])):
        imp.fail(f"makes {imp.dtype(outs[0])}{list(imp.shape(outs[0]))} where mcudeploy's SVDF gives "
                 f"{inferred[0][1]}{list(inferred[0][0])}", True)
    if imp.dtype(x) != "float32":
        int_params(scope, node)  # UnsupportedError where TensorFlow Lite Micro's Prepare refuses the quantization
    imp.kept.append((state, nxt))
    imp.nodes.append(node)
    imp.names[outs[0]] = y
