/* Inference BatchNormalization on views: a flat loop for dense views, otherwise an odometer
 * over the strides whose dimension-1 index selects the channel. */
#include "mcud_batchnorm.h"

void mcud_batchnorm_f32(const mcud_view *x, const mcud_view *y, const mcud_batchnorm_params *p)
{
    const float *xd = (const float *)x->data;
    float *yd = (float *)y->data;
    int32_t n = mcud_numel(y);
    if (mcud_is_contiguous(x) && mcud_is_contiguous(y)) {
        int32_t channels = y->shape[1];
        int32_t inner = n / (y->shape[0] * channels);
        int32_t i = 0;
        for (int32_t b = 0; b < y->shape[0]; b++) {
            for (int32_t c = 0; c < channels; c++) {
                float a = p->a[c], off = p->b[c];
                for (int32_t k = 0; k < inner; k++, i++) {
                    yd[i] = mcud_clampf(xd[i] * a + off, p->act_min, p->act_max);
                }
            }
        }
        return;
    }
    int32_t idx[MCUD_MAX_DIMS] = {0};
    int32_t xo = 0, yo = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t c = idx[1];
        yd[yo] = mcud_clampf(xd[xo] * p->a[c] + p->b[c], p->act_min, p->act_max);
        for (int32_t d = y->ndim - 1; d >= 0; d--) {
            xo += x->stride[d];
            yo += y->stride[d];
            if (++idx[d] < y->shape[d]) {
                break;
            }
            xo -= x->stride[d] * y->shape[d];
            yo -= y->stride[d] * y->shape[d];
            idx[d] = 0;
        }
    }
}
