#pragma once
// SteeringVectors: per-layer directions in the KV cache, ΔK and ΔV, and their file format.
//
// A layer's entry is [H_kv, D] (one direction per KV head, the same at every visual position)
// or [H_kv, N, D] (one per visual position, N = grid_h * grid_w, row-major over the grid).
// Keys live in one of two spaces: post-RoPE (as cached; a delta means something different at
// each position) or pre-RoPE (position-free; rotated to each position when applied).
//
// File: safetensors with steer.keys.<layer>, steer.values.<layer> (float32), steer.mask
// [grid_h, grid_w] and __metadata__["kvsteer"] = JSON describing model, family (model_type),
// grid, key space, operator, coefficients, layers, head mask, recipe and its inputs, prompt
// template and kvsteer version. Files written before the family seam have no model_type and
// grid; they still load, checked by their config hash alone.
#include "cache/VisualSpan.h"
#include "steer/SteeringOperator.h"

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

namespace kvsteer {

class Model;

enum class KeySpace { PostRope, PreRope };
std::string keySpaceName(KeySpace space);           // "post-rope" | "pre-rope"
KeySpace parseKeySpace(const std::string& name);    // throws kvsteer::Error

struct SteeringVectors {
    std::vector<at::Tensor> keys;     // per model layer; undefined = no direction for that layer
    std::vector<at::Tensor> values;
    KeySpace keySpace = KeySpace::PostRope;
    at::Tensor mask;                  // [grid_h, grid_w] float32: the region the recipe used (may be undefined)
    // Made on a picture shown in views (LLaVA-NeXT): their names and grids ("base 24x24 + crops
    // 24x40") and the span's tokens, which per-position entries count (newlines included).
    std::string views;
    int64_t viewTokens = 0;

    int numLayers() const { return static_cast<int>(keys.size()); }
    bool perPosition() const;         // entries are [H_kv, N, D]
    bool hasLayer(int layer) const;
};

// Everything about a vector file besides the tensors. Fields left empty are simply not written.
struct SteeringFileInfo {
    std::string modelName;
    std::string configHash;
    std::string modelType;            // config.json's model_type; "" = not recorded (older files)
    std::string family;               // the family by name ("Llama-3", "LLaVA-1.5"): one model_type can be two; "" = not recorded
    PatchGrid grid;                   // the patch grid the vectors were made on; written with modelType
    std::optional<SteeringOperator> op;   // the operator the vectors were made for (a default for `steer`); unset = none named
    std::vector<double> ck, cv;       // suggested coefficients (one value or one per layer)
    std::vector<int> layers;          // suggested layers
    std::vector<std::vector<int>> headMask;   // per layer, KV heads (empty = all)
    std::string recipe;               // image-pair | region | text-pairs | imported ...
    std::string recipeInputsJson;     // JSON object text: the recipe's inputs (files, prompt, options)
    std::string promptTemplate;
    std::string version;              // kvsteer version that wrote it
};

// Names `model` in `info`: its name, config hash, family and patch grid (what loading checks).
void recordModel(SteeringFileInfo& info, const Model& model);

// Writes atomically. Tensors are stored as float32 on CPU.
void saveSteeringFile(const std::string& path, const SteeringVectors& vectors, const SteeringFileInfo& info);

// Reads and validates against `model`: the family and grid (when the file records them), the
// config hash, the layer count, H_kv, head_dim, the grid (per-position entries hold one vector
// per grid cell; steer.mask is the grid's shape), and every tensor's shape. Any mismatch is a
// kvsteer::Error naming the file and the field; a file made for another family or grid names
// both models.
SteeringVectors loadSteeringFile(const std::string& path, const Model& model, SteeringFileInfo* info = nullptr);

// What a vector file holds, for people (`kvsteer vectors info`): its metadata and the tensors'
// shapes, read without a model. Throws kvsteer::Error naming the file when it is not a vector file.
std::string describeSteeringFile(const std::string& path);

// A bare safetensors file of steer.keys.<layer> / steer.values.<layer> (and steer.mask), as
// numpy + safetensors write it (docs/FORMAT.md), checked against `model` tensor by tensor as
// loadSteeringFile checks a kvsteer file; its metadata is not read. `kvsteer vectors import`
// then writes it as a kvsteer file for that model. Throws kvsteer::Error naming the tensor.
SteeringVectors importRawSteering(const std::string& path, const Model& model, KeySpace keySpace);

} // namespace kvsteer
