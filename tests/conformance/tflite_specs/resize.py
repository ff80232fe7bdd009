"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: Keras' UpSampling2D (nearest, bilinear) and tf.image.resize with
half-pixel centers, align_corners and neither."""
from conformance.tflite_specs import In, Spec

X = In((1, 5, 6, 3))


def _v1(fn_name, size=(9, 11), **kw):
    return lambda tf: (lambda x: getattr(tf.compat.v1.image, fn_name)(x, size, **kw))


SPECS = [
    Spec("RESIZE_NEAREST_NEIGHBOR", "upsampling2d", lambda tf: tf.keras.layers.UpSampling2D(2), (X,), static_batch=True),
    Spec("RESIZE_NEAREST_NEIGHBOR", "half-pixel", lambda tf: (lambda x: tf.image.resize(x, (9, 11), "nearest")), (X,)),
    Spec("RESIZE_NEAREST_NEIGHBOR", "align-corners", _v1("resize_nearest_neighbor", align_corners=True), (X,)),
    Spec("RESIZE_NEAREST_NEIGHBOR", "asymmetric", _v1("resize_nearest_neighbor"), (X,)),
    Spec("RESIZE_NEAREST_NEIGHBOR", "downscale", lambda tf: (lambda x: tf.image.resize(x, (3, 4), "nearest")), (X,)),
    Spec("RESIZE_NEAREST_NEIGHBOR", "align-corners-odd", _v1("resize_nearest_neighbor", (7, 17), align_corners=True),
         (X,)),
    Spec("RESIZE_BILINEAR", "upsampling2d", lambda tf: tf.keras.layers.UpSampling2D(2, interpolation="bilinear"), (X,)),
    Spec("RESIZE_BILINEAR", "half-pixel", lambda tf: (lambda x: tf.image.resize(x, (9, 11), "bilinear")), (X,)),
    Spec("RESIZE_BILINEAR", "align-corners", _v1("resize_bilinear", align_corners=True), (X,)),
    Spec("RESIZE_BILINEAR", "asymmetric", _v1("resize_bilinear"), (X,)),
    Spec("RESIZE_BILINEAR", "downscale", lambda tf: (lambda x: tf.image.resize(x, (3, 4), "bilinear")), (X,)),
    Spec("RESIZE_BILINEAR", "half-pixel-x3", lambda tf: (lambda x: tf.image.resize(x, (15, 19), "bilinear")), (X,)),
    Spec("RESIZE_BILINEAR", "align-corners-downscale", _v1("resize_bilinear", (2, 4), align_corners=True), (X,)),
]
