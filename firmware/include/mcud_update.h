/* DynamicUpdateSlice (mcudeploy/ops/update.py): y = x with u written at positions p, each clamped to
 * [0, x->shape[d] - u->shape[d]]; y may be x's own view (in place: only u is written). */
#ifndef MCUD_UPDATE_H
#define MCUD_UPDATE_H
#include "mcud.h"

#define MCUD_DECLARE_UPDATE(SUFFIX)                                                                     \
    void mcud_dynamic_update_slice_##SUFFIX##_s32(const mcud_view *x, const mcud_view *u, const mcud_view *p, \
                                                  const mcud_view *y);                                   \
    void mcud_dynamic_update_slice_##SUFFIX##_s64(const mcud_view *x, const mcud_view *u, const mcud_view *p, \
                                                  const mcud_view *y);

MCUD_DECLARE_UPDATE(s8)
MCUD_DECLARE_UPDATE(u8)
MCUD_DECLARE_UPDATE(s16)
MCUD_DECLARE_UPDATE(s32)
MCUD_DECLARE_UPDATE(s64)
MCUD_DECLARE_UPDATE(f32)

#endif
