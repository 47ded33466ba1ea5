#pragma once
// A studio session file (.kvsession) read as a steering spec, for `kvsteer eval --session`: the
// plan, the painted map and the embedded vector file, nothing else (the image, prompt and
// answers are the studio's). The studio writes these files (ui/studio/SessionFile, Qt's JSON);
// this reads the same fields with nlohmann-json, so the CLI needs no Qt. test_studio_eval writes
// a session with the studio and evaluates it here.
#include "steer/PlanOptions.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace kvsteer {

struct StudioSession {
    std::string path;
    std::string modelDirectory, modelName, modelConfigHash;   // the model it was made with
    PlanOptions plan;            // operator, c_k, c_v, the layer range, heads, propagate, ablate target
    at::Tensor strength;         // the painted map [rows, cols] float32, on the grid it was painted on
    std::string vectorsBytes;    // the embedded vector file (safetensors); empty: none
};

// Reads `path`. Layers: the panel's range layer_from .. layer_to, where -1 is the model's last
// layer (`numLayers`). Throws kvsteer::Error naming the file and the field for a file that is not
// a session, a version newer than this program reads, a malformed map or undecodable vectors.
StudioSession readStudioSession(const std::string& path, int numLayers);

// The session's model directory as a fallback for `--model`, without loading it (empty: none).
std::string studioSessionModelDirectory(const std::string& path);

} // namespace kvsteer
