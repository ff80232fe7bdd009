/* mcud_stream.h: a box of a streamed input, read run by run through the application's callback. */
#include "mcud_stream.h"

void mcud_read_input(const mcud_view *y, const mcud_read_input_params *p)
{
    const int32_t nd = y->ndim;
    const int32_t *starts = p->starts + (MCUD_MAX_DIMS - nd);
    const int32_t *whole = p->shape + (MCUD_MAX_DIMS - nd);
    int32_t strides[MCUD_MAX_DIMS];
    int32_t acc = 1;
    for (int32_t d = nd - 1; d >= 0; d--) {
        strides[d] = acc;
        acc *= whole[d];
    }
    /* one run: the innermost dimensions y holds densely, up to the first the box takes part of */
    int32_t run = 1, inner = nd;
    while (inner > 0) {
        const int32_t d = inner - 1;
        if (y->shape[d] != 1 && y->stride[d] != run) {
            break;
        }
        run *= y->shape[d];
        inner = d;
        if (y->shape[d] != whole[d]) {
            break;
        }
    }
    int32_t idx[MCUD_MAX_DIMS] = {0};
    for (;;) {
        int32_t src = 0, dst = 0;
        for (int32_t d = 0; d < nd; d++) {
            src += (starts[d] + idx[d]) * strides[d];
            dst += idx[d] * y->stride[d];
        }
        p->read(p->input, src, run, (uint8_t *)y->data + (size_t)dst * (size_t)p->itemsize);
        int32_t d = inner - 1;
        while (d >= 0 && ++idx[d] == y->shape[d]) {
            idx[d] = 0;
            d--;
        }
        if (d < 0) {
            return;
        }
    }
}
