#include "nn/AttentionMatmul.h"

#include "Error.h"
#include "kernels/Kernels.h"

#include "ThreadPool.h"
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>

namespace kvsteer {

namespace {

bool kernelsTake(const at::Tensor& a, const at::Tensor& b) {
    return a.device().is_cpu() && b.device().is_cpu() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat;
}

// Below this many multiply-adds per matrix, the matrices are spread over the pool (each on one
// thread); above it each matrix spreads its own rows (kernels::matmul). Either way every output
// is computed whole by one thread, so the choice changes the speed only.
constexpr int64_t kMatrixParallelMacs = 1 << 20;

} // namespace

at::Tensor matmulTransposed(const at::Tensor& a, const at::Tensor& b) {
    if (!kernelsTake(a, b)) return at::matmul(a, b.transpose(-1, -2));
    if (a.dim() < 2 || a.dim() != b.dim() || a.size(-1) != b.size(-1) || a.sizes().slice(0, a.dim() - 2) != b.sizes().slice(0, b.dim() - 2))
        throw Error("attention matmul: shapes [..., M, K] and [..., N, K] with the same leading dims expected");
    const int64_t m = a.size(-2), n = b.size(-2), k = a.size(-1);
    const at::Tensor as = a.reshape({-1, m, k}).contiguous(), bs = b.reshape({-1, n, k}).contiguous();   // [L, M, K], [L, N, K]
    const int64_t count = as.size(0);
    std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end());
    shape.back() = n;
    at::Tensor out = at::empty(shape, a.options());   // [..., M, N]
    const float* ap = as.data_ptr<float>();
    const float* bp = bs.data_ptr<float>();
    float* op = out.data_ptr<float>();
    auto multiply = [&](int64_t first, int64_t end) {
        for (int64_t l = first; l < end; ++l) {
            kernels::WeightView w;   // b's matrix l as the "weight": y = x · wᵀ
            w.data = bp + l * n * k;
            w.type = kernels::WeightType::F32;
            w.rows = n;
            w.cols = k;
            w.rowStride = k;
            kernels::matmul(ap + l * m * k, m, k, w, op + l * m * n, n);
        }
    };
    if (m * n * k < kMatrixParallelMacs && count > 1)
        parallelFor(0, count, 1, multiply);   // kernels::matmul runs inline inside it
    else
        multiply(0, count);
    return out;
}

at::Tensor matmulPlain(const at::Tensor& a, const at::Tensor& b) {
    if (!kernelsTake(a, b)) return at::matmul(a, b);
    return matmulTransposed(a, b.transpose(-1, -2));   // contiguous() in there lays bᵀ's rows out
}

} // namespace kvsteer
