#include "kernels/ComputeReport.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

namespace kvsteer::kernels {

namespace {

using TextFn = char* (*)();

// An OpenBLAS function of the loaded library, if there is one (libtorch loads it; nothing links it).
std::string openblasText(const char* symbol) {
    const auto fn = reinterpret_cast<TextFn>(dlsym(RTLD_DEFAULT, symbol));
    const char* text = fn ? fn() : nullptr;
    return text ? text : "";
}

// "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." -> "OpenBLAS 0.3.21".
std::string nameAndVersion(const std::string& config) {
    const size_t first = config.find(' ');
    if (first == std::string::npos) return config;
    const size_t second = config.find(' ', first + 1);
    return config.substr(0, second);
}

const char* levelName(Isa isa) { return isa == Isa::Avx512 ? "AVX-512" : isa == Isa::Avx2 ? "AVX2" : "no AVX2"; }

} // namespace

Isa openblasCoreLevel(const std::string& core) {
    for (const char* name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
        if (core == name) return Isa::Avx512;
    for (const char* name : {"Haswell", "Zen", "Excavator"})
        if (core == name) return Isa::Avx2;
    return Isa::Portable;
}

ComputeReport computeReport() {
    ComputeReport r;
    r.cpu = bestIsa();
    r.active = activeIsa();
    const std::string config = openblasText("openblas_get_config");
    if (config.empty()) return r;
    r.blas = nameAndVersion(config);
    r.blasCore = openblasText("openblas_get_corename");
    if (const char* v = std::getenv("OPENBLAS_CORETYPE")) r.coreTypeVariable = v;
    r.blasCoreOlderThanCpu = !r.blasCore.empty() && r.cpu != Isa::Portable && openblasCoreLevel(r.blasCore) == Isa::Portable;
    return r;
}

std::string kernelsLine(const ComputeReport& r) {
    std::string line = std::string("kernels: kvsteer's, ") + isaName(r.active);
    if (r.active != r.cpu) line += std::string(" (the CPU has ") + isaName(r.cpu) + "; KVSTEER_ISA chose less)";
    return line + "; the model's matmuls, attention and activations run here, in a fixed summation order";
}

std::string blasLine(const ComputeReport& r) {
    if (r.blas.empty()) return "BLAS: no OpenBLAS loaded (kvsteer's model math calls none)";
    std::string line = "BLAS: " + r.blas + ", core " + (r.blasCore.empty() ? "unknown" : r.blasCore);
    if (!r.coreTypeVariable.empty()) line += " (OPENBLAS_CORETYPE=" + r.coreTypeVariable + " set)";
    return line + "; used only by ATen's own matmuls (the demo trainer, PCA), never by the model";
}

std::string blasWarning(const ComputeReport& r) {
    if (!r.blasCoreOlderThanCpu) return "";
    const std::string remedy = r.cpu == Isa::Avx512 ? "SkylakeX" : "Haswell";
    if (!r.coreTypeVariable.empty())
        return "note: OPENBLAS_CORETYPE=" + r.coreTypeVariable + " runs OpenBLAS's " + levelName(openblasCoreLevel(r.blasCore)) +
               " kernels on a CPU with " + levelName(r.cpu) + " (your setting, kept; unset it or set " + remedy + " for speed)";
    return "warning: " + r.blas + " does not know this CPU and fell back to its generic core " + r.blasCore + " (" +
           levelName(openblasCoreLevel(r.blasCore)) + ") on a CPU with " + levelName(r.cpu) +
           ": the demo trainer and PCA run 4-5x slower (model runs are not affected); start kvsteer with OPENBLAS_CORETYPE=" + remedy;
}

} // namespace kvsteer::kernels
