#pragma once
// Recipes that compute SteeringVectors from the model's own cache:
//   image pairs  prefill A and B with the same prompt; Δ = mean over visual positions of A − B
//                (over a pair's mask cells when it has one), averaged over the pairs (or per
//                position, keeping the grid layout); one pair is the image-pair recipe
//   region       one image; Δ = mean over the painted region − mean over the rest
//   text pairs   (cache steering) mean over N pairs of K/V(positive) − K/V(negative) at the
//                last prompt token
//   --pca        instead of the mean: the first principal direction of the individual
//                differences (per position over all pairs for images, per pair for text), sign
//                aligned with the mean and scaled to the mean's length along it
// Keys are taken as cached (post-RoPE) or rotated back to position-free (pre-RoPE) space.
#include "io/Image.h"
#include "steer/SteeringVectors.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kvsteer {

class Model;

struct ExtractOptions {
    KeySpace keySpace = KeySpace::PostRope;
    bool perPosition = false;
    bool pca = false;
    // The image recipes' question is the whole prompt (no family template; it must contain
    // "<image>" once), as --raw-prompt means everywhere. Text pairs are always used as is.
    bool rawPrompt = false;
};

// One pair of images asked the same question; `mask` (a MASK form, see steer/Mask.h; empty: the
// whole grid) picks the cells whose difference counts. `where` names the pair in errors.
struct ImagePair {
    ImageU8 a, b;
    std::string prompt;
    std::string mask;
    std::string where;
};
// Reads JSONL: {"image_a": PATH, "image_b": PATH, "prompt"?: TEXT, "mask"?: MASK} per line, paths
// relative to the file's folder; `defaultPrompt` serves lines without a prompt.
std::vector<ImagePair> loadImagePairs(const std::string& path, const std::string& defaultPrompt);
SteeringVectors extractImagePairs(std::shared_ptr<const Model> model, const std::vector<ImagePair>& pairs, const ExtractOptions& options);
SteeringVectors extractImagePair(std::shared_ptr<const Model> model, const std::string& question, const ImageU8& imageA,
                                 const ImageU8& imageB, const ExtractOptions& options);

SteeringVectors extractRegion(std::shared_ptr<const Model> model, const std::string& question, const ImageU8& image,
                              const at::Tensor& mask, const ExtractOptions& options);

struct TextPair {
    std::string positive, negative;
};
// Pairs are full prompts (tokenized with BOS, no template). Reads JSONL: {"positive": ..., "negative": ...} per line.
std::vector<TextPair> loadTextPairs(const std::string& path);
SteeringVectors extractTextPairs(std::shared_ptr<const Model> model, const std::vector<TextPair>& pairs,
                                 const ExtractOptions& options);

} // namespace kvsteer
