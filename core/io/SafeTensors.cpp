#include "io/SafeTensors.h"

#include "Error.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kvsteer {

namespace {

// A header larger than this is not a model file but an attack or garbage (HF uses the same cap).
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

struct DtypeEntry {
    const char* name;
    c10::ScalarType type;
    size_t size;
};

const DtypeEntry kDtypes[] = {
    {"F64", c10::ScalarType::Double, 8}, {"F32", c10::ScalarType::Float, 4},
    {"F16", c10::ScalarType::Half, 2},   {"BF16", c10::ScalarType::BFloat16, 2},
    {"I64", c10::ScalarType::Long, 8},   {"I32", c10::ScalarType::Int, 4},
    {"I16", c10::ScalarType::Short, 2},  {"I8", c10::ScalarType::Char, 1},
    {"U8", c10::ScalarType::Byte, 1},    {"BOOL", c10::ScalarType::Bool, 1},
};

const DtypeEntry* findDtype(const std::string& name) {
    for (const auto& d : kDtypes)
        if (name == d.name) return &d;
    return nullptr;
}

std::string systemError() { return std::strerror(errno); }

} // namespace

c10::ScalarType safetensorsDtype(const std::string& name) {
    if (const auto* d = findDtype(name)) return d->type;
    throw Error("unknown safetensors dtype '" + name + "'");
}

size_t safetensorsDtypeSize(const std::string& name) {
    if (const auto* d = findDtype(name)) return d->size;
    throw Error("unknown safetensors dtype '" + name + "'");
}

std::string safetensorsDtypeName(c10::ScalarType type) {
    for (const auto& d : kDtypes)
        if (d.type == type) return d.name;
    throw Error(std::string("dtype ") + c10::toString(type) + " cannot be stored in safetensors");
}

int64_t TensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// ---------------------------------------------------------------------------------------------
// Reader

struct SafeTensorsFile::Mapping {
    void* base = MAP_FAILED;
    size_t size = 0;
    ~Mapping() {
        if (base != MAP_FAILED) munmap(base, size);
    }
    const uint8_t* bytes() const { return static_cast<const uint8_t*>(base); }
};

SafeTensorsFile::SafeTensorsFile(const std::string& path) : path_(path), mapping_(std::make_shared<Mapping>()) {
    const std::string where = "safetensors file " + path;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(where + ": cannot open (" + systemError() + ")");
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(where + ": not a regular file");
    }
    const uint64_t fileSize = static_cast<uint64_t>(st.st_size);
    if (fileSize < 8) {
        ::close(fd);
        throw Error(where + ": truncated (" + std::to_string(fileSize) + " bytes; expected at least the 8-byte header length)");
    }
    mapping_->size = fileSize;
    mapping_->base = mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);   // the mapping stays valid after close
    if (mapping_->base == MAP_FAILED) throw Error(where + ": mmap failed (" + systemError() + ")");

    uint64_t headerLen = 0;
    std::memcpy(&headerLen, mapping_->bytes(), 8);   // little-endian on every platform we build for
    // A safetensors header is "{" after its 8-byte length; a file that starts with text instead is
    // something else given by mistake (a JSONL of pairs, a config), and is named as such.
    const char* bytes = reinterpret_cast<const char*>(mapping_->bytes());
    const bool startsLikeText = std::all_of(bytes, bytes + 8, [](char c) { return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7f); });
    std::string opening;   // the first 8 bytes as they would be typed
    for (const char* c = bytes; c < bytes + 8; ++c) opening += *c == '\n' ? "\\n" : *c == '\r' ? "\\r" : *c == '\t' ? "\\t" : std::string(1, *c);
    if (headerLen > kMaxHeaderBytes || (startsLikeText && (fileSize <= 8 || bytes[8] != '{')))
        throw Error(where + ": not a safetensors file (" +
                    (startsLikeText ? "it starts with text: \"" + opening + "...\"" : "its header length " + std::to_string(headerLen) + " is past 100 MiB") +
                    "; a safetensors file starts with an 8-byte header length, then a JSON header)");
    if (8 + headerLen > fileSize)
        throw Error(where + ": truncated (header says " + std::to_string(headerLen) + " bytes of JSON, file has " +
                    std::to_string(fileSize - 8) + " after the length)");

    nlohmann::json header;
    try {
        header = nlohmann::json::parse(mapping_->bytes() + 8, mapping_->bytes() + 8 + headerLen);
    } catch (const std::exception& e) {
        throw Error(where + ": header is not valid JSON (" + e.what() + ")");
    }
    if (!header.is_object()) throw Error(where + ": header must be a JSON object");

    const uint64_t dataSize = fileSize - 8 - headerLen;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        if (name == "__metadata__") {
            if (!it->is_object()) throw Error(where + ": __metadata__ must be an object of strings");
            for (auto m = it->begin(); m != it->end(); ++m) {
                if (!m->is_string()) throw Error(where + ": __metadata__." + m.key() + " must be a string");
                metadata_[m.key()] = m->get<std::string>();
            }
            continue;
        }
        const std::string field = where + ": tensor '" + name + "'";
        const auto& e = *it;
        if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
            throw Error(field + ": expected an object with dtype, shape and data_offsets");
        if (!e["dtype"].is_string()) throw Error(field + ": dtype must be a string");
        TensorInfo info;
        info.name = name;
        info.dtype = e["dtype"].get<std::string>();
        const DtypeEntry* dt = findDtype(info.dtype);
        if (!dt) throw Error(field + ": unknown dtype '" + info.dtype + "' (expected F32, F16, BF16, F64, I64, I32, I16, I8, U8 or BOOL)");
        if (!e["shape"].is_array()) throw Error(field + ": shape must be an array");
        uint64_t numel = 1;
        for (const auto& d : e["shape"]) {
            if (!d.is_number_unsigned()) throw Error(field + ": shape entries must be non-negative integers");
            const uint64_t v = d.get<uint64_t>();
            if (v != 0 && numel > (uint64_t(1) << 62) / v) throw Error(field + ": shape is absurdly large");
            numel *= v;
            info.shape.push_back(static_cast<int64_t>(v));
        }
        const auto& off = e["data_offsets"];
        if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
            throw Error(field + ": data_offsets must be [begin, end] with non-negative integers");
        info.begin = off[0].get<uint64_t>();
        info.end = off[1].get<uint64_t>();
        if (info.begin > info.end || info.end > dataSize)
            throw Error(field + ": data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                        "] lie outside the " + std::to_string(dataSize) + "-byte data section (truncated file?)");
        if (info.end - info.begin != numel * dt->size)
            throw Error(field + ": byte length " + std::to_string(info.end - info.begin) + " does not match shape x dtype size = " +
                        std::to_string(numel * dt->size));
        tensors_[name] = info;
        order_.push_back(name);
    }

    // Offsets must not overlap: each byte of the data belongs to at most one tensor.
    std::vector<const TensorInfo*> byOffset;
    for (const auto& [n, i] : tensors_) byOffset.push_back(&i);
    std::sort(byOffset.begin(), byOffset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    for (size_t i = 1; i < byOffset.size(); ++i)
        if (byOffset[i]->begin < byOffset[i - 1]->end)
            throw Error(where + ": tensors '" + byOffset[i - 1]->name + "' and '" + byOffset[i]->name + "' overlap");
    std::sort(order_.begin(), order_.end(),
              [this](const std::string& a, const std::string& b) { return tensors_.at(a).begin < tensors_.at(b).begin; });
}

std::vector<std::string> SafeTensorsFile::names() const { return order_; }

bool SafeTensorsFile::contains(const std::string& name) const { return tensors_.count(name) != 0; }

const TensorInfo& SafeTensorsFile::info(const std::string& name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) throw Error("safetensors file " + path_ + ": no tensor named '" + name + "'");
    return it->second;
}

at::Tensor SafeTensorsFile::tensor(const std::string& name) const {
    const TensorInfo& i = info(name);
    const DtypeEntry* dt = findDtype(i.dtype);
    uint64_t headerLen = 0;
    std::memcpy(&headerLen, mapping_->bytes(), 8);
    const uint8_t* data = mapping_->bytes() + 8 + headerLen + i.begin;
    auto options = at::TensorOptions().dtype(dt->type);
    if (reinterpret_cast<uintptr_t>(data) % dt->size != 0) {
        // Misaligned for the element type: copy instead of handing out a misaligned view.
        at::Tensor copy = at::empty(i.shape, options);
        // An empty tensor's data_ptr() is null, and memcpy's must not be (UBSan), even for 0 bytes.
        if (i.end > i.begin) std::memcpy(copy.data_ptr(), data, i.end - i.begin);
        return copy;
    }
    auto keepAlive = mapping_;
    // from_blob wants a mutable pointer; the mapping is read-only (PROT_READ), so any in-place
    // write through this view faults rather than silently corrupting the file.
    return at::from_blob(const_cast<uint8_t*>(data), i.shape, [keepAlive](void*) {}, options);
}

void SafeTensorsFile::releasePages(const std::string& name) const {
    const TensorInfo& i = info(name);
    uint64_t headerLen = 0;
    std::memcpy(&headerLen, mapping_->bytes(), 8);
    // Only whole pages inside the tensor's bytes: the pages it shares with its neighbours stay.
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(mapping_->bytes() + 8 + headerLen + i.begin);
    const uintptr_t end = begin + (i.end - i.begin);
    const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
    // Advice only: a kernel that ignores it leaves the pages resident, nothing else changes.
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// ---------------------------------------------------------------------------------------------
// Writer

namespace {

std::string buildHeader(const std::vector<TensorInfo>& layout, const std::map<std::string, std::string>& metadata) {
    // nlohmann's ordered_json keeps the declaration order, which makes files diffable.
    nlohmann::ordered_json header;
    if (!metadata.empty()) header["__metadata__"] = metadata;
    for (const auto& t : layout)
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {t.begin, t.end}}};
    std::string text = header.dump();
    // Pad with spaces so the data section starts 8-byte aligned (zero-copy mmap views).
    while ((8 + text.size()) % 8 != 0) text.push_back(' ');
    return text;
}

std::vector<TensorInfo> layoutFor(const std::vector<NamedTensor>& tensors) {
    std::vector<TensorInfo> layout;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        TensorInfo i;
        i.name = t.name;
        i.dtype = safetensorsDtypeName(t.tensor.scalar_type());
        i.shape = t.tensor.sizes().vec();
        i.begin = offset;
        i.end = offset + static_cast<uint64_t>(t.tensor.numel()) * t.tensor.element_size();
        offset = i.end;
        layout.push_back(i);
    }
    return layout;
}

} // namespace

struct SafeTensorsStreamWriter::Impl {
    std::string path, tmpPath;
    std::vector<TensorInfo> layout;
    size_t next = 0;
    FILE* file = nullptr;
    bool finished = false;
};

SafeTensorsStreamWriter::SafeTensorsStreamWriter(const std::string& path, const std::vector<TensorInfo>& layout,
                                                 const std::map<std::string, std::string>& metadata)
    : impl_(std::make_unique<Impl>()) {
    impl_->path = path;
    impl_->tmpPath = path + ".tmp-" + std::to_string(::getpid());
    impl_->layout = layout;
    impl_->file = std::fopen(impl_->tmpPath.c_str(), "wb");
    if (!impl_->file) throw Error("cannot write " + impl_->tmpPath + " (" + systemError() + ")");
    const std::string header = buildHeader(layout, metadata);
    const uint64_t len = header.size();
    if (std::fwrite(&len, 8, 1, impl_->file) != 1 || std::fwrite(header.data(), 1, header.size(), impl_->file) != header.size())
        throw Error("write failed: " + impl_->tmpPath + " (" + systemError() + ")");
}

SafeTensorsStreamWriter::~SafeTensorsStreamWriter() {
    if (impl_ && impl_->file) std::fclose(impl_->file);
    if (impl_ && !impl_->finished) std::remove(impl_->tmpPath.c_str());
}

void SafeTensorsStreamWriter::write(const at::Tensor& tensor) {
    if (impl_->next >= impl_->layout.size()) throw Error("SafeTensorsStreamWriter: more tensors than declared for " + impl_->path);
    const TensorInfo& i = impl_->layout[impl_->next++];
    at::Tensor t = tensor.to(c10::Device(c10::kCPU)).contiguous();
    if (safetensorsDtypeName(t.scalar_type()) != i.dtype || t.sizes().vec() != i.shape)
        throw Error("SafeTensorsStreamWriter: tensor '" + i.name + "' does not match its declared dtype/shape");
    const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
    // An empty tensor's data_ptr() is null, and fwrite's buffer must not be (UBSan), even for 0 bytes.
    if (bytes > 0 && std::fwrite(t.data_ptr(), 1, bytes, impl_->file) != bytes)
        throw Error("write failed: " + impl_->tmpPath + " (" + systemError() + ")");
}

void SafeTensorsStreamWriter::finish() {
    if (impl_->next != impl_->layout.size())
        throw Error("SafeTensorsStreamWriter: " + std::to_string(impl_->layout.size() - impl_->next) + " declared tensors never written to " + impl_->path);
    if (std::fflush(impl_->file) != 0 || ::fsync(fileno(impl_->file)) != 0)
        throw Error("write failed: " + impl_->tmpPath + " (" + systemError() + ")");
    std::fclose(impl_->file);
    impl_->file = nullptr;
    if (std::rename(impl_->tmpPath.c_str(), impl_->path.c_str()) != 0)
        throw Error("cannot move " + impl_->tmpPath + " to " + impl_->path + " (" + systemError() + ")");
    impl_->finished = true;
}

void writeSafeTensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    SafeTensorsStreamWriter writer(path, layoutFor(tensors), metadata);
    for (const auto& t : tensors) writer.write(t.tensor);
    writer.finish();
}

} // namespace kvsteer
