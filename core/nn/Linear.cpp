#include "nn/Linear.h"

#include "Error.h"
#include "kernels/Kernels.h"
#include "io/Checkpoint.h"

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>

#include <algorithm>

namespace kvsteer {

namespace {

// The dtype a tensor is kept in: the format's, or its own when the format says "as stored".
c10::ScalarType keptDtype(const at::Tensor& stored, const WeightFormat& format) {
    return format.storage == c10::ScalarType::Undefined ? stored.scalar_type() : format.storage;
}

bool kernelsTake(const at::Tensor& x, const at::Tensor& w) {
    const c10::ScalarType t = w.scalar_type();
    return x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat && w.dim() == 2 && w.stride(1) == 1 &&
           (t == at::kFloat || t == at::kHalf || t == at::kBFloat16);
}

} // namespace

kernels::WeightView weightViewOf(const at::Tensor& w) {
    kernels::WeightView v;
    v.data = w.data_ptr();
    v.type = w.scalar_type() == at::kHalf ? kernels::WeightType::F16
             : w.scalar_type() == at::kBFloat16 ? kernels::WeightType::BF16
                                                : kernels::WeightType::F32;
    v.rows = w.size(0);
    v.cols = w.size(1);
    v.rowStride = w.stride(0);
    return v;
}

int64_t LinearWeight::outFeatures() const {
    int64_t n = 0;
    for (const at::Tensor& p : parts) n += p.size(0);
    return n;
}

at::Tensor loadWeight(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                      const WeightFormat& format) {
    at::Tensor t = ckpt.load(name, shape);
    const c10::ScalarType kept = keptDtype(t, format);
    if (t.scalar_type() == kept && format.device.is_cpu()) return t;   // mmap view, no copy
    at::Tensor out = at::empty(t.sizes(), at::TensorOptions().dtype(kept).device(format.device));
    out.copy_(t);   // ATen's copy_ converts on the whole thread pool (or uploads, then converts)
    ckpt.releasePages(name);   // the copy replaced the file's bytes
    return out;
}

LinearWeight loadLinear(const Checkpoint& ckpt, const std::string& name, const std::vector<int64_t>& shape,
                        const WeightFormat& format) {
    return LinearWeight{{loadWeight(ckpt, name, shape, format)}};
}

LinearWeight loadFusedLinear(const Checkpoint& ckpt, const std::vector<std::string>& names,
                             const std::vector<std::vector<int64_t>>& shapes, const WeightFormat& format) {
    std::vector<at::Tensor> stored;
    bool asStored = format.device.is_cpu();
    for (size_t i = 0; i < names.size(); ++i) {
        stored.push_back(ckpt.load(names[i], shapes[i]));
        asStored = asStored && stored.back().scalar_type() == keptDtype(stored.back(), format);
    }
    if (asStored) return LinearWeight{stored};   // views side by side: nothing copied

    // A conversion is needed anyway (another dtype, or a device): convert into one stacked buffer.
    int64_t rows = 0;
    for (const auto& s : shapes) rows += s.at(0);
    const c10::ScalarType kept = keptDtype(stored.front(), format);
    at::Tensor fused = at::empty({rows, shapes.at(0).at(1)}, at::TensorOptions().dtype(kept).device(format.device));
    int64_t row = 0;
    for (size_t i = 0; i < stored.size(); ++i) {
        fused.narrow(0, row, shapes[i][0]).copy_(stored[i]);
        ckpt.releasePages(names[i]);
        row += shapes[i][0];
    }
    return LinearWeight{{fused}};
}

at::Tensor applyLinear(const at::Tensor& x, const LinearWeight& weight, const at::Tensor& bias) {
    const int64_t in = x.size(-1), out = weight.outFeatures();
    bool ours = true;
    for (const at::Tensor& p : weight.parts) ours = ours && kernelsTake(x, p);
    if (!ours) {
        // ATen's path (CUDA, or a compute dtype other than float32): one stacked weight in x's dtype.
        at::Tensor w = weight.parts.size() == 1 ? weight.parts.front() : at::cat(weight.parts, 0);
        if (w.scalar_type() != x.scalar_type()) w = w.to(x.scalar_type());
        const at::Tensor b = !bias.defined() || bias.scalar_type() == x.scalar_type() ? bias : bias.to(x.scalar_type());
        return at::linear(x, w, b);
    }
    const at::Tensor flat = x.reshape({-1, in}).contiguous();   // [rows, in]
    const int64_t rows = flat.size(0);
    at::Tensor y = at::empty({rows, out}, flat.options());      // [rows, out]
    std::vector<kernels::WeightView> parts;   // part i fills the columns after parts 0..i-1
    for (const at::Tensor& p : weight.parts) parts.push_back(weightViewOf(p));
    kernels::matmulStacked(flat.data_ptr<float>(), rows, in, parts.data(), int(parts.size()), y.data_ptr<float>(), out);
    if (bias.defined()) y.add_(bias.scalar_type() == at::kFloat ? bias : bias.to(at::kFloat));
    auto shape = x.sizes().vec();
    shape.back() = out;
    return y.view(shape);
}

at::Tensor applyLinear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    return applyLinear(x, LinearWeight{{weight}}, bias);
}

uint64_t readWeights(const std::vector<const LinearWeight*>& weights) {
    std::vector<kernels::WeightView> parts;
    for (const LinearWeight* w : weights)
        for (const at::Tensor& p : w->parts) {
            if (!p.device().is_cpu() || !p.is_contiguous()) throw Error("readWeights: weights must be contiguous CPU tensors");
            parts.push_back(weightViewOf(p));
        }
    return kernels::readWeights(parts.data(), int(parts.size()));
}

c10::ScalarType parseDtype(const std::string& name) {
    if (name == "auto") return c10::ScalarType::Undefined;
    if (name == "f32" || name == "float32") return c10::ScalarType::Float;
    if (name == "f16" || name == "float16") return c10::ScalarType::Half;
    if (name == "bf16" || name == "bfloat16") return c10::ScalarType::BFloat16;
    throw Error("dtype '" + name + "' is not supported (expected auto, f32, f16 or bf16)");
}

std::string dtypeName(c10::ScalarType type) {
    switch (type) {
    case c10::ScalarType::Undefined: return "as stored";
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    default: return c10::toString(type);
    }
}

} // namespace kvsteer
