#pragma once
// Safetensors files: a strict, mmap-backed reader and an atomic writer.
//
// Format: 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data.
// The reader validates everything before handing out a single byte, so a corrupt or
// truncated file becomes a kvsteer::Error naming the file and the field, never a crash.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kvsteer {

struct TensorInfo {
    std::string name;
    std::string dtype;            // "F32", "F16", "BF16", "I64", ...
    std::vector<int64_t> shape;
    uint64_t begin = 0;           // byte offsets relative to the start of the data section
    uint64_t end = 0;
    int64_t numel() const;
};

class SafeTensorsFile {
public:
    explicit SafeTensorsFile(const std::string& path);

    const std::string& path() const { return path_; }
    std::vector<std::string> names() const;   // in file order
    bool contains(const std::string& name) const;
    const TensorInfo& info(const std::string& name) const;
    // A zero-copy view of the mapped bytes (dtype as on disk). The view keeps the mapping alive.
    // Falls back to a copy only if the bytes are not aligned for the element type.
    at::Tensor tensor(const std::string& name) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    // Drops the tensor's pages from this process's memory once a converted copy (another dtype,
    // or a GPU's) replaced it: a 7B upload to CUDA then never holds the file's 13.5 GB on the host.
    // The mapping stays: a view read again faults its pages back in from the file.
    void releasePages(const std::string& name) const;

private:
    struct Mapping;
    std::string path_;
    std::shared_ptr<Mapping> mapping_;
    std::map<std::string, TensorInfo> tensors_;
    std::vector<std::string> order_;
    std::map<std::string, std::string> metadata_;
};

struct NamedTensor {
    std::string name;
    at::Tensor tensor;
};

// Writes all tensors (made contiguous, on CPU) into `path` atomically: a temporary file in the
// same directory is written, flushed and renamed over the target.
void writeSafeTensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// For files too large to hold in memory (random 7B checkpoints): declare every tensor first,
// then hand over their data one by one, in declaration order.
class SafeTensorsStreamWriter {
public:
    SafeTensorsStreamWriter(const std::string& path, const std::vector<TensorInfo>& layout,
                            const std::map<std::string, std::string>& metadata = {});
    ~SafeTensorsStreamWriter();
    void write(const at::Tensor& tensor);   // the next declared tensor; dtype and shape must match
    void finish();                          // flush, fsync, rename into place

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// "F32" <-> at::kFloat etc.; throws kvsteer::Error for unknown names.
c10::ScalarType safetensorsDtype(const std::string& name);
std::string safetensorsDtypeName(c10::ScalarType type);
size_t safetensorsDtypeSize(const std::string& name);

} // namespace kvsteer
