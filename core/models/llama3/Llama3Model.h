#pragma once
// Llama-3 / Llama-3.1 text models (meta-llama/Llama-3.1-8B-Instruct, ...): a "llama" config
// whose directory has a tokenizer.json (byte-level BPE, 128k tokens) and no SentencePiece
// tokenizer.model. What differs from the Llama-2 style text model (llava/):
//   tokenizer  byte-level BPE from tokenizer.json, <|begin_of_text|> as BOS
//   template   the checkpoint's own chat template, recognised as the Llama-3 header layout
//              (Llama3ChatTemplate); an optional system message
//   RoPE       θ 500000 and, in 3.1, rope_scaling "llama3" (TransformerDecoder)
//   stopping   eos_token_id is a list (3.1: <|end_of_text|>, <|eom_id|>, <|eot_id|>): any ends
// The decoder is the shared TransformerDecoder: GQA, SwiGLU, tied or untied head. Text only:
// steering addresses the prompt's token strip.
#include "models/Model.h"
#include "models/llama3/Llama3ChatTemplate.h"

#include <memory>
#include <optional>

namespace kvsteer {

class Llama3Model : public Model {
public:
    static std::shared_ptr<Llama3Model> load(const std::string& directory, const LoadOptions& options = {});

    std::string familyName() const override { return "Llama-3"; }
    std::string applyTemplate(const std::string& question, bool withImage) const override;
    bool takesSystemMessage() const override { return true; }
    std::string describeTemplate() const override { return chatTemplate_.describe(); }
    PreprocessedImage preprocessImage(const ImageU8& image) const override;
    at::Tensor encodeImage(const at::Tensor& pixels) const override;

protected:
    std::string describeVision() const override { return ""; }

private:
    Llama3Model() = default;
    Llama3ChatTemplate chatTemplate_;
    std::optional<std::string> systemMessage_;
};

} // namespace kvsteer
