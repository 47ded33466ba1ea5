#pragma once
// What every fuzz target shares: a scratch directory of its own (for loaders that take a path),
// the fixed files some targets load beside the fuzzed one, and the one rule every target asserts.
//
// The rule: a loader either succeeds or throws kvsteer::Error. Targets catch kvsteer::Error only
// (through expectError), so any other exception escapes LLVMFuzzerTestOneInput, std::terminate
// aborts, and libFuzzer saves the input as a crash; a sanitizer report, a timeout (-timeout=10)
// or more than 2 GB (-rss_limit_mb=2048) are findings the same way.
#include "Error.h"

#include <ATen/core/Tensor.h>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kvsteer::fuzz {

// A directory private to this process (under $TMPDIR or /tmp), removed at exit.
const std::string& scratchDir();
// scratchDir()/name, holding exactly these bytes (overwritten on every call).
std::string writeScratch(const std::string& name, const uint8_t* data, size_t size);
std::string writeScratch(const std::string& name, const std::string& bytes);

// The bundled demo model (always in the checkout) and the HF reference set beside it ("" when
// ../shared/reference is missing; targets that use it then fall back to the demo model).
std::string demoModelDir();
std::string referenceDir();

// Reads every byte a tensor view covers, so a view past its mapping faults inside the target.
uint64_t touchBytes(const at::Tensor& t);

// Runs `load`; a kvsteer::Error is the expected refusal and must say something. Anything else
// escapes to libFuzzer.
template <typename F>
void expectError(F&& load) {
    try {
        load();
    } catch (const kvsteer::Error& e) {
        if (e.what()[0] == '\0') __builtin_trap();   // an error must name the file and field
    }
}

} // namespace kvsteer::fuzz
