/* TFLite_Detection_PostProcess (mcud_detection.h; the arithmetic in mcudeploy/ops/detection.py). The boxes are
 * decoded in double and rounded once to float32, as TensorFlow Lite Micro does; the non-maximum suppression sorts
 * the kept anchors by decreasing score with a stable bottom-up merge sort (ties in anchor order), and the regular
 * NMS merges each class's selections into the detections so far (ties: the earlier first). No allocation: every
 * buffer is in the scratch. */
#include <math.h>

#include "mcud_detection.h"

/* std::max and std::min of TensorFlow Lite Micro's IoU: b where a < b (b < a), else a (NaN as it falls). */
static float det_max(float a, float b)
{
    return a < b ? b : a;
}

static float det_min(float a, float b)
{
    return b < a ? b : a;
}

/* Intersection over union of two corner boxes (ymin, xmin, ymax, xmax); 0 where either has no area. */
static float det_iou(const float *a, const float *b)
{
    const float area_a = (a[2] - a[0]) * (a[3] - a[1]);
    const float area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if (area_a <= 0.0f || area_b <= 0.0f) {
        return 0.0f;
    }
    const float h = det_max(det_min(a[2], b[2]) - det_max(a[0], b[0]), 0.0f);
    const float w = det_max(det_min(a[3], b[3]) - det_max(a[1], b[1]), 0.0f);
    const float inter = h * w;
    return inter / (area_a + area_b - inter);
}

/* idx[0..n) sorted by decreasing s[idx * stride], stable (equal scores keep their order), with tmp[n]. */
static void det_sort(int32_t *idx, int32_t *tmp, int32_t n, const float *s, int32_t stride)
{
    int32_t *src = idx, *dst = tmp;
    for (int32_t width = 1; width < n; width *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * width) {
            const int32_t mid = lo + width < n ? lo + width : n;
            const int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t l = lo, r = mid, o = lo;
            while (l < mid && r < hi) {
                /* the right one first only where its score is strictly higher */
                dst[o++] = s[src[r] * stride] > s[src[l] * stride] ? src[r++] : src[l++];
            }
            while (l < mid) {
                dst[o++] = src[l++];
            }
            while (r < hi) {
                dst[o++] = src[r++];
            }
        }
        int32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != idx) {
        for (int32_t i = 0; i < n; i++) {
            idx[i] = src[i];
        }
    }
}

/* Non-maximum suppression over the scores s[i * stride] of n anchors: the anchors selected (at most limit) into
 * selected, in the order selected; returns how many. kept, tmp: n ints; live: n bytes. */
static int32_t det_nms(const float *corners, const float *s, int32_t stride, int32_t n, int32_t limit,
                       const mcud_detection_params *p, int32_t *kept, int32_t *tmp, uint8_t *live, int32_t *selected)
{
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (s[i * stride] >= p->score_threshold) {
            kept[m++] = i;
        }
    }
    det_sort(kept, tmp, m, s, stride);
    const int32_t out = m < limit ? m : limit;
    for (int32_t i = 0; i < m; i++) {
        live[i] = 1;
    }
    int32_t count = 0;
    for (int32_t a = 0; a < m && count < out; a++) {
        if (!live[a]) {
            continue;
        }
        selected[count++] = kept[a];
        if (count == out) {
            break;
        }
        const float *box = corners + 4 * kept[a];
        for (int32_t b = a + 1; b < m; b++) {
            if (live[b] && det_iou(box, corners + 4 * kept[b]) > p->iou_threshold) {
                live[b] = 0;
            }
        }
    }
    return count;
}

void mcud_detection_postprocess_f32(const mcud_view *boxes, const mcud_view *scores, const mcud_view *anchors,
                                    const mcud_view *out_boxes, const mcud_view *out_classes,
                                    const mcud_view *out_scores, const mcud_view *out_count,
                                    const mcud_detection_params *p, void *scratch)
{
    const int32_t n = scores->shape[1], columns = scores->shape[2], k = p->num_classes, d = p->max_detections;
    const int32_t offset = columns - k;
    const int32_t limit = (p->regular ? p->per_class : d) < n ? (p->regular ? p->per_class : d) : n;
    const float *bd = (const float *)boxes->data, *sd = (const float *)scores->data;
    const float *ad = (const float *)anchors->data;
    const int32_t s1 = scores->stride[1], s2 = scores->stride[2];
    float *ob = (float *)out_boxes->data, *oc = (float *)out_classes->data, *os = (float *)out_scores->data;

    float *corners = (float *)scratch;
    int32_t *kept = (int32_t *)(corners + 4 * n);
    int32_t *tmp = kept + n;
    int32_t *selected = tmp + n;
    int32_t *rest = selected + limit;
    /* fast: best scores and classes (2n words); regular: detections so far and the merge, (anchor, score) pairs */
    uint8_t *live = (uint8_t *)(rest + (p->regular ? 4 * d : 2 * n));

    for (int32_t r = 0; r < d; r++) {
        for (int32_t c = 0; c < 4; c++) {
            ob[r * out_boxes->stride[1] + c * out_boxes->stride[2]] = 0.0f;
        }
        oc[r * out_classes->stride[1]] = 0.0f;
        os[r * out_scores->stride[1]] = 0.0f;
    }
    ((float *)out_count->data)[0] = 0.0f;

    int32_t valid = 1;
    for (int32_t i = 0; i < n; i++) {
        const float *e = bd + i * boxes->stride[1];
        const float *an = ad + i * anchors->stride[0];
        const int32_t bs = boxes->stride[2], as = anchors->stride[1];
        const double ay = (double)an[0], ax = (double)an[as], ah = (double)an[2 * as], aw = (double)an[3 * as];
        const float yc = (float)((double)e[0] / (double)p->y_scale * ah + ay);
        const float xc = (float)((double)e[bs] / (double)p->x_scale * aw + ax);
        const float hh = (float)(0.5 * exp((double)e[2 * bs] / (double)p->h_scale) * ah);
        const float hw = (float)(0.5 * exp((double)e[3 * bs] / (double)p->w_scale) * aw);
        float *c = corners + 4 * i;
        c[0] = yc - hh;
        c[1] = xc - hw;
        c[2] = yc + hh;
        c[3] = xc + hw;
        if (c[0] >= c[2] || c[1] >= c[3]) {
            valid = 0; /* TensorFlow Lite Micro fails the call: no detection here */
        }
    }
    if (!valid) {
        return;
    }

    int32_t found = 0;
    if (!p->regular) {
        float *top = (float *)rest;
        int32_t *best = rest + n;
        for (int32_t i = 0; i < n; i++) {
            const float *row = sd + i * s1 + offset * s2;
            float v = row[0];
            int32_t b = 0;
            for (int32_t c = 1; c < k; c++) {
                if (row[c * s2] > v) {
                    v = row[c * s2];
                    b = c;
                }
            }
            top[i] = v;
            best[i] = b;
        }
        found = det_nms(corners, top, 1, n, d, p, kept, tmp, live, selected);
        for (int32_t r = 0; r < found; r++) {
            const int32_t i = selected[r];
            for (int32_t c = 0; c < 4; c++) {
                ob[r * out_boxes->stride[1] + c * out_boxes->stride[2]] = corners[4 * i + c];
            }
            oc[r * out_classes->stride[1]] = (float)best[i];
            os[r * out_scores->stride[1]] = top[i];
        }
    } else {
        /* the detections so far (anchor x K + class, score) and their merge with a class's selections */
        int32_t *det_code = rest, *mrg_code = rest + 2 * d;
        float *det_score = (float *)(rest + d), *mrg_score = (float *)(rest + 3 * d);
        for (int32_t c = 0; c < k; c++) {
            const float *col = sd + (c + offset) * s2;
            const int32_t picked = det_nms(corners, col, s1, n, p->per_class, p, kept, tmp, live, selected);
            int32_t a = 0, b = 0, m = 0;
            for (; m < d && (a < found || b < picked); m++) {
                /* a selection of this class goes first only where its score is strictly higher */
                if (b < picked && (a >= found || col[selected[b] * s1] > det_score[a])) {
                    mrg_code[m] = selected[b] * k + c;
                    mrg_score[m] = col[selected[b] * s1];
                    b++;
                } else {
                    mrg_code[m] = det_code[a];
                    mrg_score[m] = det_score[a];
                    a++;
                }
            }
            for (int32_t i = 0; i < m; i++) {
                det_code[i] = mrg_code[i];
                det_score[i] = mrg_score[i];
            }
            found = m;
        }
        for (int32_t r = 0; r < found; r++) {
            const int32_t i = det_code[r] / k, cls = det_code[r] % k;
            for (int32_t c = 0; c < 4; c++) {
                ob[r * out_boxes->stride[1] + c * out_boxes->stride[2]] = corners[4 * i + c];
            }
            oc[r * out_classes->stride[1]] = (float)cls;
            os[r * out_scores->stride[1]] = det_score[r];
        }
    }
    ((float *)out_count->data)[0] = (float)found;
}
