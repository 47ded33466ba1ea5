#include "MemoryBudget.h"

#include "Error.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <sstream>

namespace kvsteer {

namespace {

// "Key:   123 kB" from a /proc file, in bytes; -1 when absent.
int64_t procField(const char* path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, key.size() + 1, key + ":") == 0) {
            std::istringstream fields(line.substr(key.size() + 1));
            int64_t kib = -1;
            fields >> kib;
            return kib < 0 ? -1 : kib * 1024;
        }
    return -1;
}

int64_t parseBudget(const std::string& text) {
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    std::string suffix = text.substr(used);
    for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();   // "2GB" = "2G"
    const double scale = suffix.empty() ? 1 : suffix == "K" ? 1e3 : suffix == "M" ? 1e6 : suffix == "G" ? 1e9 : suffix == "T" ? 1e12 : -1;
    if (used == 0 || scale < 0 || !(value >= 0))
        throw Error("environment variable KVSTEER_MEMORY_BUDGET='" + text + "': expected a size such as 8G, 512M or 1000000");
    return static_cast<int64_t>(value * scale);
}

// Free and total bytes of a CUDA device, through the CUDA runtime if the process has it loaded
// (libtorch's CUDA build does); false when it is not there to ask (a CPU-only build then simply
// has no budget to check against).
bool cudaMemoryInfo(int index, int64_t* freeBytes, int64_t* totalBytes) {
    using SetDeviceFn = int (*)(int);
    using MemGetInfoFn = int (*)(size_t*, size_t*);
    auto setDevice = reinterpret_cast<SetDeviceFn>(dlsym(RTLD_DEFAULT, "cudaSetDevice"));
    auto memGetInfo = reinterpret_cast<MemGetInfoFn>(dlsym(RTLD_DEFAULT, "cudaMemGetInfo"));
    if (!setDevice || !memGetInfo) return false;
    size_t f = 0, t = 0;
    if (setDevice(index < 0 ? 0 : index) != 0 || memGetInfo(&f, &t) != 0) return false;
    *freeBytes = static_cast<int64_t>(f);
    *totalBytes = static_cast<int64_t>(t);
    return true;
}

int64_t cudaFreeBytes(int index) {
    int64_t freeBytes = 0, totalBytes = 0;
    return cudaMemoryInfo(index, &freeBytes, &totalBytes) ? freeBytes : -1;
}

} // namespace

MemoryBudget memoryBudget(const c10::Device& device) {
    if (const char* env = std::getenv("KVSTEER_MEMORY_BUDGET"); env && *env) return {parseBudget(env), "KVSTEER_MEMORY_BUDGET"};
    if (device.is_cuda()) return {cudaFreeBytes(device.index()), "free CUDA memory"};
    return {procField("/proc/meminfo", "MemAvailable"), "MemAvailable"};
}

int64_t deviceMemoryInUse(const c10::Device& device) {
    int64_t freeBytes = 0, totalBytes = 0;
    if (!device.is_cuda() || !cudaMemoryInfo(device.index(), &freeBytes, &totalBytes)) return -1;
    return totalBytes - freeBytes;
}

std::string formatBytes(int64_t bytes) {
    char text[32];
    if (bytes >= 1000000000) std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
    else if (bytes >= 10000000) std::snprintf(text, sizeof text, "%.0f MB", bytes / 1e6);
    else if (bytes >= 1000000) std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
    else std::snprintf(text, sizeof text, "%.0f kB", bytes / 1e3);
    return text;
}

void requireMemory(const MemoryNeed& need, const MemoryBudget& budget, const std::string& what, const std::string& advice,
                   const std::vector<Remedy>& remedies) {
    if (budget.bytes < 0 || need.total() <= budget.bytes) return;
    throw Error(what + " needs about " + formatBytes(need.total()) + " of memory (weights " + formatBytes(need.weights) +
                ", KV cache " + formatBytes(need.kvCache) + " for " + std::to_string(need.contextTokens) + " tokens, activations " +
                formatBytes(need.activations) + ") but " + formatBytes(budget.bytes) + " is available (" + budget.source + "); " +
                advice,
                remedies);
}

int64_t peakResidentBytes() { return std::max<int64_t>(0, procField("/proc/self/status", "VmHWM")); }

} // namespace kvsteer
