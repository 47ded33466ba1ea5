#pragma once
// What does the arithmetic in this process, for people (bench, `kvsteer inspect`, the studio's
// About box): kvsteer's own kernels and the instruction set they dispatched to, and the BLAS the
// process loaded with the core it chose.
//
// Why the BLAS still matters a little: kvsteer's model math calls no BLAS (its own kernels own the
// summation order, docs/internals.md "Determinism"), but the process loads one through libtorch,
// and ATen may hand it work kvsteer does not route (the demo trainer's matmuls, a recipe's PCA).
// OpenBLAS picks its core once, when it is loaded, from the CPU it recognises; a build older than
// the CPU (Debian 12's 0.3.21 on a new Xeon) falls back to generic SSE3 kernels ("Prescott") and
// runs 4-5x slower. That is said in one line with the remedy; a user's own OPENBLAS_CORETYPE is
// reported as theirs and never second-guessed.
#include "kernels/Kernels.h"

#include <string>

namespace kvsteer::kernels {

struct ComputeReport {
    Isa cpu = Isa::Portable;          // the best the CPU supports
    Isa active = Isa::Portable;       // what kvsteer's kernels use
    std::string blas;                 // "OpenBLAS 0.3.21", or "" when no OpenBLAS is loaded
    std::string blasCore;             // its core ("Cooperlake", "Haswell", "Prescott"), or ""
    std::string coreTypeVariable;     // OPENBLAS_CORETYPE as set, or ""
    bool blasCoreOlderThanCpu = false;   // the core has no AVX2 kernels, the CPU has AVX2 or more
};

ComputeReport computeReport();

// "kernels: kvsteer's, AVX-512 (the CPU: AVX-512)" and "BLAS: OpenBLAS 0.3.21, core Cooperlake"
// (the two lines `inspect` prints), and the warning line with its remedy ("" when there is none).
std::string kernelsLine(const ComputeReport& r);
std::string blasLine(const ComputeReport& r);
std::string blasWarning(const ComputeReport& r);

// The ISA level of an OpenBLAS core name: Avx512 (SkylakeX, Cooperlake, SapphireRapids), Avx2
// (Haswell, Zen, Excavator), Portable for everything older (Prescott, Core2, Nehalem, Sandybridge...).
Isa openblasCoreLevel(const std::string& core);

} // namespace kvsteer::kernels
