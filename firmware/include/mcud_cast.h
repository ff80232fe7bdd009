/* Cast: each element converted as C converts it (mcudeploy/ops/cast.py): integers narrowed to their low
 * bits, floats truncated toward zero and saturated to int32 first, integers to the nearest float. */
#ifndef MCUD_CAST_H
#define MCUD_CAST_H
#include "mcud.h"

#define MCUD_DECLARE_CAST(IN) \
    void mcud_cast_##IN##_s8(const mcud_view *x, const mcud_view *y);  \
    void mcud_cast_##IN##_s16(const mcud_view *x, const mcud_view *y); \
    void mcud_cast_##IN##_s32(const mcud_view *x, const mcud_view *y); \
    void mcud_cast_##IN##_f32(const mcud_view *x, const mcud_view *y);

MCUD_DECLARE_CAST(s8)
MCUD_DECLARE_CAST(u8)
MCUD_DECLARE_CAST(s16)
MCUD_DECLARE_CAST(s32)
MCUD_DECLARE_CAST(u32)
MCUD_DECLARE_CAST(f32)

/* to uint32 from the integers (a float's out-of-range values would differ between C libraries and cores) */
void mcud_cast_s8_u32(const mcud_view *x, const mcud_view *y);
void mcud_cast_u8_u32(const mcud_view *x, const mcud_view *y);
void mcud_cast_s16_u32(const mcud_view *x, const mcud_view *y);
void mcud_cast_s32_u32(const mcud_view *x, const mcud_view *y);
void mcud_cast_u32_u32(const mcud_view *x, const mcud_view *y);

#endif
