#ifndef MCUD_DETECTION_H
#define MCUD_DETECTION_H
#include "mcud.h"

/* TFLite's custom operator TFLite_Detection_PostProcess as TensorFlow Lite Micro computes it (box decoding against
 * anchors, then fast or regular non-maximum suppression; mcudeploy/ops/detection.py gives the arithmetic, which its
 * numpy reference mirrors).
 *
 * Views, all float32: boxes [1, N, B >= 4] (y, x, h, w first), scores [1, N, C] (C = num_classes, or one more with
 * the background class first), anchors [N, 4] (y, x, h, w); out_boxes [1, D, 4] (ymin, xmin, ymax, xmax),
 * out_classes [1, D], out_scores [1, D], out_count [1]. Rows past the count are zeros. scratch: the bytes
 * mcudeploy/ops/detection.py's scratch_bytes gives, word aligned. */
typedef struct {
    int32_t num_classes;    /* K */
    int32_t max_detections; /* D */
    int32_t per_class;      /* regular NMS: the detections kept per class */
    int32_t regular;        /* 1: regular NMS, per class; 0: fast NMS, on each anchor's best class */
    float score_threshold, iou_threshold;
    float y_scale, x_scale, h_scale, w_scale;
} mcud_detection_params;

void mcud_detection_postprocess_f32(const mcud_view *boxes, const mcud_view *scores, const mcud_view *anchors,
                                    const mcud_view *out_boxes, const mcud_view *out_classes,
                                    const mcud_view *out_scores, const mcud_view *out_count,
                                    const mcud_detection_params *p, void *scratch);

#endif
