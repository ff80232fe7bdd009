"""Loop-axis analysis: the axis connection graph of a graph's operators and its components."""
from mcudeploy.analysis.axes import (AxisRef, Component, Edge, axis_graph, components, crossing, cuttable, halo,
                                     segments)

__all__ = ["AxisRef", "Component", "Edge", "axis_graph", "components", "crossing", "cuttable", "halo", "segments"]
