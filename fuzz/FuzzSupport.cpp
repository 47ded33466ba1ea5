#include "FuzzSupport.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace kvsteer::fuzz {

namespace fs = std::filesystem;

const std::string& scratchDir() {
    static const std::string dir = [] {
        const char* tmp = std::getenv("TMPDIR");
        fs::path d = fs::path(tmp && *tmp ? tmp : "/tmp") / ("kvsteer-fuzz-" + std::to_string(::getpid()));
        fs::create_directories(d);
        // libFuzzer ends with exit(); the directory goes with the process.
        static const std::string keep = d.string();
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(keep, ec);
        });
        return d.string();
    }();
    return dir;
}

std::string writeScratch(const std::string& name, const uint8_t* data, size_t size) {
    const std::string path = (fs::path(scratchDir()) / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) __builtin_trap();   // the harness itself failed, not the loader
    return path;
}

std::string writeScratch(const std::string& name, const std::string& bytes) {
    return writeScratch(name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string demoModelDir() { return KVSTEER_SOURCE_DIR "/resources/demo-model"; }

std::string referenceDir() {
    const fs::path d = fs::path(KVSTEER_SOURCE_DIR) / ".." / "shared" / "reference";
    return fs::is_directory(d) ? fs::canonical(d).string() : std::string();
}

uint64_t touchBytes(const at::Tensor& t) {
    if (!t.defined() || t.numel() == 0) return 0;
    const at::Tensor c = t.is_contiguous() ? t : t.contiguous();
    const auto* p = static_cast<const volatile uint8_t*>(c.data_ptr());
    const size_t n = static_cast<size_t>(c.numel()) * c.element_size();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += p[i];
    return sum;
}

} // namespace kvsteer::fuzz
