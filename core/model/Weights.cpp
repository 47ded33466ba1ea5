#include "model/Weights.h"

#include "Error.h"
#include "Runtime.h"
#include "model/Checkpoint.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mv.h>
#include <ATen/ops/stack.h>

#include <algorithm>
#include <exception>
#include <thread>

namespace kvsteer {

namespace {

constexpr int64_t kGemvRows = 4;

// dst.copy_(src) (same shape; a dtype conversion, e.g. a float16 checkpoint read as float32). On
// CPU a large one is split by rows over the matmul threads: ATen's own pool is kept at one thread
// (see Runtime.h), and widening a 7B float16 checkpoint is 13 GB read and 26 GB written.
void convertInto(const at::Tensor& dst, const at::Tensor& src) {
    const int threads = currentThreads();
    const int64_t rows = dst.dim() > 0 ? dst.size(0) : 1;
    if (!dst.device().is_cpu() || threads <= 1 || dst.numel() < (int64_t(1) << 20) || rows < threads) {
        dst.copy_(src);
        return;
    }
    const int64_t per = (rows + threads - 1) / threads;
    std::vector<std::thread> workers;
    std::vector<std::exception_ptr> failures(static_cast<size_t>(threads));
    for (int i = 0; i < threads && i * per < rows; ++i)
        workers.emplace_back([&, i] {
            try {
                const int64_t first = i * per, n = std::min(per, rows - first);
                dst.narrow(0, first, n).copy_(src.narrow(0, first, n));
            } catch (...) {
                failures[static_cast<size_t>(i)] = std::current_exception();
            }
        });
    for (std::thread& w : workers) w.join();
    for (const std::exception_ptr& f : failures)
        if (f) std::rethrow_exception(f);
}

} // namespace

at::Tensor loadWeight(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                      const WeightFormat& format) {
    at::Tensor t = ckpt.load(name, shape);
    if (t.scalar_type() == format.storage && format.device.is_cpu()) return t;   // mmap view, no copy
    if (!format.device.is_cpu()) return t.to(format.device, format.storage).contiguous();
    at::Tensor out = at::empty(t.sizes(), at::TensorOptions().dtype(format.storage));
    convertInto(out, t);
    return out;
}

at::Tensor loadFusedWeight(const Checkpoint& ckpt, const std::vector<std::string>& names,
                           const std::vector<std::vector<int64_t>>& shapes, const WeightFormat& format) {
    int64_t rows = 0;
    for (const auto& s : shapes) rows += s.at(0);
    at::Tensor fused = at::empty({rows, shapes.at(0).at(1)}, at::TensorOptions().dtype(format.storage).device(format.device));
    int64_t row = 0;
    for (size_t i = 0; i < names.size(); ++i) {
        convertInto(fused.narrow(0, row, shapes[i][0]), ckpt.load(names[i], shapes[i]));
        row += shapes[i][0];
    }
    return fused;
}

at::Tensor applyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    const at::Tensor w = weight.scalar_type() == x.scalar_type() ? weight : weight.to(x.scalar_type());
    const at::Tensor b = !bias.defined() || bias.scalar_type() == x.scalar_type() ? bias : bias.to(x.scalar_type());
    const int64_t in = x.size(-1), rows = x.numel() / std::max<int64_t>(in, 1);
    // Decoding multiplies one or two rows by a big matrix: memory-bound. OpenBLAS 0.3.21 runs
    // such a GEMM ~5x slower than GEMV, so on CPU few rows go through matrix-vector products.
    if (rows > kGemvRows || !x.device().is_cpu()) return at::linear(x, w, b);
    const at::Tensor flat = x.reshape({rows, in});
    std::vector<at::Tensor> outs;
    for (int64_t r = 0; r < rows; ++r) outs.push_back(at::mv(w, flat[r]));
    at::Tensor y = rows == 1 ? outs[0].unsqueeze(0) : at::stack(outs);
    if (b.defined()) y.add_(b);
    auto shape = x.sizes().vec();
    shape.back() = w.size(0);
    return y.view(shape);
}

c10::ScalarType parseDtype(const std::string& name) {
    if (name == "f32" || name == "float32") return c10::ScalarType::Float;
    if (name == "f16" || name == "float16") return c10::ScalarType::Half;
    if (name == "bf16" || name == "bfloat16") return c10::ScalarType::BFloat16;
    throw Error("dtype '" + name + "' is not supported (expected f32, f16 or bf16)");
}

} // namespace kvsteer
