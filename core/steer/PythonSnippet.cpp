#include "steer/PythonSnippet.h"

#include "steer/PythonSnippetBlocks.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace kvsteer {

namespace {

namespace fs = std::filesystem;

// ---- what differs between families ---------------------------------------------------------
// Everything else in the script is one layout for all of them.

enum class PromptKind {
    StudioTemplate,   // kvsteer's template (Model::applyTemplate) around the question, given to the processor
    Question,         // the question alone: the processor lays out the family's prompt itself
    ChatTemplate,     // the tokenizer's chat template (text only: Qwen2, Llama-3)
    UserAssistant,    // "USER: {q} ASSISTANT:" (text only: Llama-2 style)
};

struct Family {
    const char* name;           // Model::familyName()
    const char* modelClass;     // the transformers class that loads the directory
    const char* transformers;   // the first transformers release with that class
    const char* imageToken;     // the config attribute holding the image token's id; nullptr: text only (the token strip)
    PromptKind prompt;
    bool prefixLm;              // the prompt attends to itself both ways (PaliGemma)
    bool mrope;                 // M-RoPE positions, passed explicitly (the Qwen VL families)
    bool anyres;                // the picture in views, the map on the crops' grid (LLaVA-NeXT)
    const char* about;          // the family's prompt and positions, for a comment
};

constexpr Family kFamilies[] = {
    {"LLaVA-1.5", "LlavaForConditionalGeneration", "4.45", "image_token_index", PromptKind::StudioTemplate, false, false, false,
     "causal prompt, positions 0, 1, 2, ...; the image's tokens where <image> is"},
    {"LLaVA-NeXT", "LlavaNextForConditionalGeneration", "4.45", "image_token_index", PromptKind::StudioTemplate, false, false, true,
     "causal prompt, positions 0, 1, 2, ...; the picture as a base view, then its crops (below)"},
    {"PaliGemma", "PaliGemmaForConditionalGeneration", "4.45", "image_token_index", PromptKind::Question, true, false, false,
     "prefix-LM prompt (it attends to itself both ways), image tokens first, positions 1, 2, 3, ..."},
    {"Qwen2-VL", "Qwen2VLForConditionalGeneration", "4.45", "image_token_id", PromptKind::StudioTemplate, false, true, false,
     "causal prompt, M-RoPE positions (given explicitly below)"},
    {"Qwen2.5-VL", "Qwen2_5_VLForConditionalGeneration", "4.49", "image_token_id", PromptKind::StudioTemplate, false, true, false,
     "causal prompt, M-RoPE positions (given explicitly below; an image's are Qwen2-VL's)"},
    {"Qwen3-VL", "Qwen3VLForConditionalGeneration", "4.57", "image_token_id", PromptKind::StudioTemplate, false, true, false,
     "causal prompt, M-RoPE positions (given explicitly below; an image's are Qwen2-VL's); the model adds its DeepStack "
     "features at the image positions itself"},
    {"Qwen2", "AutoModelForCausalLM", "4.45", nullptr, PromptKind::ChatTemplate, false, false, false,
     "text only, causal prompt; the plan steers the prompt's own tokens (the token strip)"},
    {"Llama-3", "AutoModelForCausalLM", "4.45", nullptr, PromptKind::ChatTemplate, false, false, false,
     "text only, causal prompt; the plan steers the prompt's own tokens (the token strip)"},
    {"Llama", "AutoModelForCausalLM", "4.45", nullptr, PromptKind::UserAssistant, false, false, false,
     "text only (Llama-2 style), causal prompt; the plan steers the prompt's own tokens (the token strip)"},
};

const Family* findFamily(const std::string& name) {
    for (const Family& f : kFamilies)
        if (name == f.name) return &f;
    return nullptr;
}

std::string py(const std::string& s) {   // a Python string literal
    std::string out = "\"";
    for (char c : s) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') out += "\\n";
        else out += c;
    }
    return out + "\"";
}

std::string num(double v) {
    std::ostringstream o;
    o.precision(8);
    o << v;
    return o.str();
}

std::string numbers(const std::vector<double>& v) {   // "4", or "[2, 4, 8]" for one per layer
    if (v.size() == 1) return num(v.front());
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
    return s + "]";
}

std::string ints(const std::vector<int>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
}

// "c_v 4", or "c_v 2, 4, 8 by layer".
std::string coefficientText(const char* name, const std::vector<double>& v) {
    std::string s = std::string(name) + " ";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
    return v.size() > 1 ? s + " by layer" : s;
}

// Why this plan cannot be a few faithful lines, or empty.
std::string unsupported(const PythonSnippetInputs& in, const Family* family) {
    if (!family) {
        std::string known;
        for (const Family& f : kFamilies) known += std::string(known.empty() ? "" : ", ") + f.name;
        return "the " + in.family + " family is not one this snippet knows (" + known + ")";
    }
    if (in.op == SteeringOperator::PreRope)
        return "the 'prerope' operator rotates each pre-RoPE key vector to its position (R(p)Δ) with the model's own rotary "
               "embedding (Llama-3's scaled frequencies, Qwen2-VL's M-RoPE sections); where that lives and how it is called "
               "differs by family and transformers version, so a few lines cannot do it faithfully: use add or norm with "
               "post-RoPE vectors, or kvsteer itself";
    if (in.op == SteeringOperator::Spotlight)
        return "the 'spotlight' operator edits no cache: it adds s·c_k to the attention logits of the painted positions, per "
               "layer and KV head, at every decoding step; transformers has no per-layer, per-head logit bias to pass to "
               "generate (it needs a patched attention forward): use kvsteer itself";
    if (operatorNeedsVectors(in.op) && in.keySpace == "pre-rope")
        return "the file's key vectors are pre-RoPE (made for 'prerope'): kvsteer refuses them for '" + operatorName(in.op) +
               "', and adding them to post-RoPE cached keys would be wrong";
    if (in.propagate && family->prefixLm)
        return "propagate mode on " + in.family + " recomputes the prompt's text bidirectionally against the edited image K/V (with "
               "the last token, whose K/V are dropped again); transformers makes a forward pass that resumes from a cache causal "
               "(its prefix-LM mask is only for a prefill from an empty cache), so a few lines cannot reproduce it: use "
               "edit-only, or kvsteer itself";
    if (family->imageToken && in.imagePath.empty())
        return "a text prompt on " + in.family + ", a vision model: kvsteer steers its tokens, but the snippet is written for "
               "its image (give --image, or use a text model)";
    if (in.rawPrompt && family->prompt != PromptKind::StudioTemplate)
        return "a raw prompt: the snippet lays out " + in.family + "'s prompt with the checkpoint's own processor or chat template, "
               "which takes the question, not the text around it; give the question without --raw-prompt";
    if (family->prompt == PromptKind::StudioTemplate && !in.rawPrompt && in.promptTemplate.find("{question}") == std::string::npos)
        return "no prompt template is known for this model";
    if (in.rows * in.cols != int(in.strength.size())) return "the painted map has " + std::to_string(in.strength.size()) + " values, not rows x cols";
    return {};
}

// The inputs: "prompt = ..." (or "question = ...") for the settings block, and the lines that make `inputs`.
struct PromptLines {
    std::string setting;
    std::string inputs;
};

PromptLines promptLines(const Family& f, const PythonSnippetInputs& in) {
    const std::string openImage = "image = Image.open(image_path).convert(\"RGB\")\n"
                                  "inputs = processor(images=image, text=prompt, return_tensors=\"pt\")\n";
    switch (f.prompt) {
    case PromptKind::StudioTemplate: {
        std::string prompt = in.promptTemplate;
        if (in.rawPrompt) prompt = in.question;
        else prompt.replace(prompt.find("{question}"), std::strlen("{question}"), in.question);
        return {"prompt = " + py(prompt) + "\n", openImage};
    }
    case PromptKind::Question:
        return {"prompt = " + py(in.question) + "   # the processor lays it out as kvsteer does: \"<image>\"×N, \"<bos>\", the prompt, \"\\n\"\n",
                openImage};
    case PromptKind::ChatTemplate:
        return {"question = " + py(in.question) + "\n",
                "inputs = tokenizer.apply_chat_template([{\"role\": \"user\", \"content\": question}], add_generation_prompt=True,\n"
                "                                       return_dict=True, return_tensors=\"pt\")   # the checkpoint's template and default system turn\n"};
    case PromptKind::UserAssistant:
        return {"prompt = " + py("USER: " + in.question + " ASSISTANT:") + "\n",
                "inputs = tokenizer(prompt, return_tensors=\"pt\")                               # BOS first\n"};
    }
    return {};
}

// The settings block: every value the studio or the command line chose, in one place.
std::string settings(const Family& f, const PythonSnippetInputs& in, const PromptLines& prompt) {
    const bool strip = !f.imageToken;
    std::string s = "model_id = " + py(in.modelDirectory) + "\n";
    if (operatorNeedsVectors(in.op) && in.vectorsPath.empty())
        s += "vectors_path = \"steering.safetensors\"   # computed in the studio: File → Export Vectors… writes them; put that path here\n";
    else if (operatorNeedsVectors(in.op))
        s += "vectors_path = " + py(in.vectorsPath) + "\n";
    if (!strip && fs::path(in.imagePath).is_absolute()) s += "image_path = " + py(in.imagePath) + "\n";
    else if (!strip) s += "image_path = " + py(in.imagePath) + "   # not a file (pasted or dropped): save the image and put its path here\n";
    s += prompt.setting;
    s += "ck, cv = " + numbers(in.ck) + ", " + numbers(in.cv) + (in.ck.size() > 1 || in.cv.size() > 1 ? "   # a list: one per layer\n" : "\n");
    s += "layers = " + (in.layers.empty() ? "range(" + std::to_string(in.numLayers) + ")                             # every layer"
                                          : "[" + ints(in.layers) + "]") + "\n";
    s += "heads = " + (in.heads.empty() ? std::string("None                                   # every KV head") : "[" + ints(in.heads) + "]") + "\n";
    s += "max_new_tokens = " + std::to_string(in.maxNewTokens) + "\n";
    return s + pythonMask(in.rows, in.cols, in.strength);
}

} // namespace

std::string pythonMask(int rows, int cols, const std::vector<float>& g) {
    int r0 = rows, r1 = -1, c0 = cols, c1 = -1, painted = 0;
    float value = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            if (g[size_t(r * cols + c)] != 0) {
                r0 = std::min(r0, r), r1 = std::max(r1, r), c0 = std::min(c0, c), c1 = std::max(c1, c);
                value = g[size_t(r * cols + c)];
                ++painted;
            }
    std::string out = "mask = torch.zeros(" + std::to_string(rows) + ", " + std::to_string(cols) + ")                      # strength per grid cell (the painted map)\n";
    if (painted == 0) return out + "# nothing is painted: the edit touches no position\n";
    bool uniform = painted == (r1 - r0 + 1) * (c1 - c0 + 1);
    for (int r = r0; uniform && r <= r1; ++r)
        for (int c = c0; uniform && c <= c1; ++c) uniform = g[size_t(r * cols + c)] == value;
    if (uniform)
        return out + "mask[" + std::to_string(r0) + ":" + std::to_string(r1 + 1) + ", " + std::to_string(c0) + ":" + std::to_string(c1 + 1) +
               "] = " + num(value) + "\n";
    std::string cells;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            if (g[size_t(r * cols + c)] != 0)
                cells += (cells.empty() ? "(" : ", (") + std::to_string(r) + ", " + std::to_string(c) + ", " + num(g[size_t(r * cols + c)]) + ")";
    return out + "for r, c, v in [" + cells + "]:\n    mask[r, c] = v\n";
}

std::string pythonRequirements(const std::string& familyName, const std::string& directory, bool vectors, bool image) {
    const Family* f = findFamily(familyName);
    std::string s = "pip install torch 'transformers>=" + std::string(f ? f->transformers : "4.45") + "'";
    if (vectors) s += " safetensors";
    if (image) s += " pillow";
    // Without the Rust `tokenizers` package transformers can only build a tokenizer from slow files:
    // vocab.json + merges.txt (byte-level BPE) or tokenizer.model (SentencePiece, with `sentencepiece`).
    const fs::path dir(directory);
    const bool fast = fs::exists(dir / "tokenizer.json"), bpe = fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt");
    const bool spm = fs::exists(dir / "tokenizer.model");
    if (fast && !bpe && !spm) s += " tokenizers";
    if (spm && !fast) s += " sentencepiece protobuf";
    return s;
}

std::string pythonSnippet(const PythonSnippetInputs& in) {
    const Family* family = findFamily(in.family);
    const bool strip = family && !family->imageToken;
    std::string s = "# kvsteer plan as Python (Hugging Face transformers >= " + std::string(family ? family->transformers : "4.45") +
                    ", a DynamicCache edited in place; docs/steering.md).\n";
    s += "# " + in.modelName + " (" + in.family + ") · operator " + operatorName(in.op) + ", " + (in.propagate ? "propagate" : "edit-only") + " · " +
         coefficientText("c_k", in.ck) + " · " + coefficientText("c_v", in.cv) + " · layers " +
         (in.layers.empty() ? std::string("all") : ints(in.layers)) + " · " +
         std::to_string(std::count_if(in.strength.begin(), in.strength.end(), [](float v) { return v != 0; })) + " painted cells of the " +
         std::to_string(in.rows) + "×" + std::to_string(in.cols) + (strip ? " token strip" : " grid") + " · " + std::to_string(in.maxNewTokens) +
         " new tokens, greedy\n";
    const std::string why = unsupported(in, family);
    if (!why.empty()) return s + "raise NotImplementedError(" + py("kvsteer: " + why) + ")\n";
    const Family& f = *family;
    const bool vectors = operatorNeedsVectors(in.op);
    const std::string io = strip ? "tokenizer" : "processor";
    const PromptLines prompt = promptLines(f, in);

    s += "# Needs: " + pythonRequirements(in.family, in.modelDirectory, vectors, !strip) + "\n";
    s += "# Prints the unsteered and the steered answer, each as a JSON line with its ids and text.\n";
    s += "# " + in.family + ": " + f.about + "\n";
    s += std::string("import copy\nimport json\n") + (f.anyres ? "import math\n" : "") + "import torch\n";
    if (!strip) s += "from PIL import Image\n";
    if (vectors) s += "from safetensors import safe_open\n";
    s += "from transformers import " + std::string(strip ? "AutoTokenizer" : "AutoProcessor") + ", " + f.modelClass + ", DynamicCache\n\n";
    s += settings(f, in, prompt);

    s += "\n" + io + " = " + (strip ? "AutoTokenizer" : "AutoProcessor") + ".from_pretrained(model_id)\n";
    s += "model = " + std::string(f.modelClass) + ".from_pretrained(model_id, torch_dtype=torch.float32)\n";
    if (vectors)
        s += "with safe_open(vectors_path, \"pt\") as f:\n"
             "    dK = {int(n.split(\".\")[-1]): f.get_tensor(n) for n in f.keys() if n.startswith(\"steer.keys.\")}\n"
             "    dV = {int(n.split(\".\")[-1]): f.get_tensor(n) for n in f.keys() if n.startswith(\"steer.values.\")}\n";
    s += "\ndef layer_kv(cache, l):   # transformers >= 4.56: cache.layers[l].keys; older: cache.key_cache[l]\n"
         "    if hasattr(cache, \"layers\"):\n"
         "        return cache.layers[l].keys, cache.layers[l].values\n"
         "    return cache.key_cache[l], cache.value_cache[l]\n\n";

    s += prompt.inputs + "ids = inputs[\"input_ids\"]\n";
    if (strip) s += "span = torch.arange(ids.shape[1] - 1)                                           # the token strip: every prompt token but the last\n";
    else
        s += "span = (ids[0] == model.config." + std::string(f.imageToken) + ").nonzero().flatten()" +
             std::string(size_t(std::max(1, 28 - int(std::strlen(f.imageToken)))), ' ') + "# the image's positions, row-major over the grid\n";
    s += f.anyres ? snippet::kAnyresLayout : "s = mask.flatten()                                                              # one strength per span position\n";
    s += "assert s.numel() == span.numel(), \"the painted map does not fit this prompt (another grid or tokenization)\"\n";
    if (f.mrope) s += snippet::kMropePositions;

    s += "\n";
    s += f.prefixLm ? snippet::kPrefixLmNote : "# A causal prompt: prefilling it whole and dropping the last position is prefilling all but the last token.\n";
    s += "cache = DynamicCache()\n"
         "with torch.no_grad():   # prefill the whole prompt, then drop its last position: decoding feeds that token again\n";
    s += f.mrope ? "    model(**inputs, position_ids=rope_pos, past_key_values=cache, use_cache=True)\n"
                 : "    model(**inputs, past_key_values=cache, use_cache=True)\n";
    s += "cache.crop(ids.shape[1] - 1)\n"
         "pristine = copy.deepcopy(cache)                                                 # the unsteered answer starts from the same snapshot\n\n";
    s += snippet::editFunction(in.op, in.ablateTo, f.anyres);
    if (in.propagate) s += snippet::propagate(!strip, f.mrope);
    return s + snippet::decodeBoth(f.mrope, io);
}

} // namespace kvsteer
