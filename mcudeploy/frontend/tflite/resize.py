"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (align_corners, half_pixel_centers)."""
from __future__ import annotations

from mcudeploy.frontend.tflite.importer import handles


def _resize(imp, op, ins, outs, mode: str, opts_name: str):
    o = imp.options(op, opts_name)
    align, half = (bool(o.AlignCorners()), bool(o.HalfPixelCenters())) if o is not None else (False, False)
    x = ins[0]
    if align and half:
        imp.fail("has both align_corners and half_pixel_centers, which TFLite Micro refuses", True)
    if imp.dtype(x) not in ("float32", "int8") and not (imp.dtype(x) == "int16" and mode == "nearest"):
        takes = "float32, int8 and int16" if mode == "nearest" else "float32 and int8"
        imp.fail(f"of {imp.dtype(x)} is not supported (TFLite Micro's resize takes {takes})")
    size = imp.shape(outs[0])[1:3]
    if align:
        coord = "align_corners"
    elif half:
        coord = "tf_half_pixel_for_nn" if mode == "nearest" else "half_pixel"
    else:
        coord = "asymmetric"
    nearest = "round_prefer_ceil" if align else "floor"
    n, h, w, c = imp.shape(x)
    attrs = {"mode": mode, "antialias": 0, "coordinate_transformation_mode": coord, "nearest_mode": nearest,
             "scales": None, "sizes": (n, c) + tuple(size), "axes": None, "keep_aspect_ratio_policy": "stretch"}
    imp.emit("Resize", (imp.value(x, "nchw"),), outs[0], attrs, "nchw")


@handles("RESIZE_NEAREST_NEIGHBOR")
def resize_nearest_neighbor(imp, op, ins, outs):
    _resize(imp, op, ins, outs, "nearest", "ResizeNearestNeighborOptions")


@handles("RESIZE_BILINEAR")
def resize_bilinear(imp, op, ins, outs):
    _resize(imp, op, ins, outs, "linear", "ResizeBilinearOptions")
