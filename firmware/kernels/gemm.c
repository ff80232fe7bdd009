/* Matrix products on views. Every operand is read through its strides, so transposition is
 * only a swap of two strides and a piece of a split operator reads a slice in place. */
#include "mcud_gemm.h"

typedef struct {
    int32_t m, n, k;
    int32_t a_m, a_k, b_k, b_n, y_m, y_n; /* element strides of the matrix dimensions */
    int32_t batch_dims;                   /* leading dimensions of y that are batch */
    int32_t batches;
} mcud_gemm_shape;

static void gemm_shape(const mcud_view *a, const mcud_view *b, const mcud_view *y, int32_t trans_a,
                       int32_t trans_b, mcud_gemm_shape *s)
{
    int32_t na = a->ndim, nb = b->ndim;
    if (na == 1) {
        s->m = 1;
        s->k = a->shape[0];
        s->a_m = 0;
        s->a_k = a->stride[0];
    } else if (trans_a) {
        s->m = a->shape[na - 1];
        s->k = a->shape[na - 2];
        s->a_m = a->stride[na - 1];
        s->a_k = a->stride[na - 2];
    } else {
        s->m = a->shape[na - 2];
        s->k = a->shape[na - 1];
        s->a_m = a->stride[na - 2];
        s->a_k = a->stride[na - 1];
    }
    if (nb == 1) {
        s->n = 1;
        s->b_k = b->stride[0];
        s->b_n = 0;
    } else if (trans_b) {
        s->n = b->shape[nb - 2];
        s->b_k = b->stride[nb - 1];
        s->b_n = b->stride[nb - 2];
    } else {
        s->n = b->shape[nb - 1];
        s->b_k = b->stride[nb - 2];
        s->b_n = b->stride[nb - 1];
    }
    s->batch_dims = y->ndim - (na >= 2) - (nb >= 2);
    s->y_m = na >= 2 ? y->stride[s->batch_dims] : 0;
    s->y_n = nb >= 2 ? y->stride[y->ndim - 1] : 0;
    s->batches = 1;
    for (int32_t d = 0; d < s->batch_dims; d++) {
        s->batches *= y->shape[d];
    }
}

/* Offset of batch `flat` (row-major over y's batch dimensions) in a view whose batch
 * dimensions (all but its last `mat` ones) broadcast against y's. */
static int32_t batch_offset(const mcud_view *v, int32_t mat, const mcud_view *y, int32_t batch_dims, int32_t flat)
{
    int32_t own = v->ndim - mat;
    int32_t off = 0;
    for (int32_t d = batch_dims - 1; d >= 0 && flat > 0; d--) {
        int32_t i = flat % y->shape[d];
        int32_t vd = d - (batch_dims - own);
        flat /= y->shape[d];
        if (vd >= 0 && v->shape[vd] != 1) {
            off += i * v->stride[vd];
        }
    }
    return off;
}

static int32_t mat_dims(const mcud_view *v)
{
    return v->ndim >= 2 ? 2 : v->ndim;
}

void mcud_gemm_f32(const mcud_view *a, const mcud_view *b, const mcud_view *c, const mcud_view *y,
                   const mcud_gemm_f32_params *p)
{
    mcud_gemm_shape s;
    gemm_shape(a, b, y, p->trans_a, p->trans_b, &s);
    int32_t c_m = 0, c_n = 0;
    const float *cd = NULL;
    if (c != NULL) {
        cd = (const float *)c->data;
        if (c->ndim == 2) {
            c_m = c->shape[0] != 1 ? c->stride[0] : 0;
            c_n = c->shape[1] != 1 ? c->stride[1] : 0;
        } else if (c->ndim == 1) {
            c_n = c->shape[0] != 1 ? c->stride[0] : 0;
        }
    }
    for (int32_t t = 0; t < s.batches; t++) {
        const float *ad = (const float *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        const float *bd = (const float *)b->data + batch_offset(b, mat_dims(b), y, s.batch_dims, t);
        float *yd = (float *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        for (int32_t m = 0; m < s.m; m++) {
            for (int32_t n = 0; n < s.n; n++) {
                const float *pa = ad + m * s.a_m;
                const float *pb = bd + n * s.b_n;
                float acc = 0.0f;
                for (int32_t k = 0; k < s.k; k++) {
                    acc += *pa * *pb;
                    pa += s.a_k;
                    pb += s.b_k;
                }
                float v = p->alpha * acc;
                if (cd != NULL) {
                    v += p->beta * cd[m * c_m + n * c_n];
                }
                yd[m * s.y_m + n * s.y_n] = mcud_clampf(v, p->act_min, p->act_max);
            }
        }
    }
}

void mcud_gemm_s8(const mcud_view *a, const mcud_view *b, const mcud_view *y, const mcud_gemm_s8_params *p)
{
    mcud_gemm_shape s;
    gemm_shape(a, b, y, p->trans_a, p->trans_b, &s);
    for (int32_t t = 0; t < s.batches; t++) {
        const int8_t *ad = (const int8_t *)a->data + batch_offset(a, mat_dims(a), y, s.batch_dims, t);
        const int8_t *bd = (const int8_t *)b->data + batch_offset(b, mat_dims(b), y, s.batch_dims, t);
        int8_t *yd = (int8_t *)y->data + batch_offset(y, y->ndim - s.batch_dims, y, s.batch_dims, t);
        for (int32_t m = 0; m < s.m; m++) {
            for (int32_t n = 0; n < s.n; n++) {
                const int8_t *pa = ad + m * s.a_m;
                const int8_t *pb = bd + n * s.b_n;
                int32_t acc = p->bias[n];
                if (s.a_k == 1 && s.b_k == 1) {
                    for (int32_t k = 0; k < s.k; k++) {
                        acc += (int32_t)pa[k] * (int32_t)pb[k];
                    }
                } else {
                    for (int32_t k = 0; k < s.k; k++) {
                        acc += (int32_t)*pa * (int32_t)*pb;
                        pa += s.a_k;
                        pb += s.b_k;
                    }
                }
                int32_t c = p->channels == 1 ? 0 : n;
                int32_t v = mcud_requant(acc, p->mult[c], p->shift[c]) + p->y_zero;
                yd[m * s.y_m + n * s.y_n] = (int8_t)mcud_clamp(v, p->act_min, p->act_max);
            }
        }
    }
}
