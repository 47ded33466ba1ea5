#pragma once
// Memory is checked before it is spent. A model that cannot fit must be refused with a message
// that says what is needed, what is available and which option helps — never left to grow until
// the kernel's OOM killer ends the process without a word (or takes the studio with it).
//
// The budget is what the system could give this process now: /proc/meminfo's MemAvailable on CPU
// (it counts reclaimable page cache, so a checkpoint already cached counts as available), the
// device's free memory on CUDA. KVSTEER_MEMORY_BUDGET (bytes, or with a K/M/G suffix) overrides
// it, so the refusal can be tested on any machine and a user can keep headroom for other work.
#include "Error.h"

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kvsteer {

// What a loaded model will hold at its peak, estimated from the config and the checkpoint's
// headers before a byte of weights is touched.
struct MemoryNeed {
    int64_t weights = 0;       // weight bytes in their storage dtype (mmap'd or converted)
    int64_t kvCache = 0;       // the KV caches of the context: snapshot, steered copy, side-by-side pair
    int64_t activations = 0;   // the largest transient buffers of a prefill, plus the runtime's own
    int64_t contextTokens = 0; // the context the KV estimate is for
    int64_t total() const { return weights + kvCache + activations; }
};

struct MemoryBudget {
    int64_t bytes = 0;     // < 0: unknown (then nothing is refused)
    std::string source;    // "MemAvailable", "KVSTEER_MEMORY_BUDGET", "free CUDA memory"
};

MemoryBudget memoryBudget(const c10::Device& device);

// Throws kvsteer::Error when `need` does not fit `budget`. `what` names the thing being loaded,
// `advice` says which option would help.
void requireMemory(const MemoryNeed& need, const MemoryBudget& budget, const std::string& what, const std::string& advice,
                   const std::vector<Remedy>& remedies = {});

std::string formatBytes(int64_t bytes);   // "13.5 GB"

// Bytes of a CUDA device in use (its total less its free memory: this process's caching
// allocator and CUDA context, and whatever else runs there); -1 for a CPU or an unknown device.
int64_t deviceMemoryInUse(const c10::Device& device);

// The peak resident set size of this process (VmHWM), bytes; 0 if unknown.
int64_t peakResidentBytes();

} // namespace kvsteer
