// LM-head row kernels (row log-sum-exp, in-place softmax gradient) compiled for AVX2; the code
// is loss_rows_impl.h, shared with the scalar build in loss.cpp.
#include "kernels/loss_rows.h"
#include "kernels/loss_rows_impl.h"

namespace olmo::kernels::loss_detail {
RowKernels row_kernels_avx2() { return {loss_row_lse, loss_row_grad}; }
}  // namespace olmo::kernels::loss_detail
