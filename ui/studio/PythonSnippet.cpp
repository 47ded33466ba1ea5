#include "studio/PythonSnippet.h"

#include <QStringList>

#include <algorithm>
#include <cstring>

namespace kvsteer::ui {

namespace {

// ---- what differs between families ---------------------------------------------------------
// Everything else in the snippet is one layout for all of them.

enum class PromptKind {
    StudioTemplate,   // the studio's template (Model::applyTemplate) around the question, given to the processor
    Question,         // the question alone: the processor lays out the family's prompt itself
    ChatTemplate,     // the tokenizer's chat template (text only: Qwen2, Llama-3)
    UserAssistant,    // "USER: {q} ASSISTANT:" (text only: Llama-2 style)
};

struct Family {
    const char* name;         // ModelInfo::family, as Model::familyName() says it
    const char* modelClass;   // the transformers class that loads the directory
    const char* imageToken;   // the config attribute holding the image token's id; nullptr: text only (the token strip)
    PromptKind prompt;
    bool prefixLm;            // the prompt attends to itself both ways (PaliGemma)
    bool mrope;               // M-RoPE positions, passed explicitly (Qwen2-VL, Qwen2.5-VL)
    bool anyres = false;      // the picture in views, the map on the crops' grid (LLaVA-NeXT)
    const char* about;        // the family's prompt and positions, for a comment
    const char* transformers = "4.45";   // the first transformers release with the model's class
};

constexpr Family kFamilies[] = {
    {"LLaVA-1.5", "LlavaForConditionalGeneration", "image_token_index", PromptKind::StudioTemplate, false, false, false,
     "causal prompt, positions 0, 1, 2, ...; the image's tokens where <image> is"},
    {"LLaVA-NeXT", "LlavaNextForConditionalGeneration", "image_token_index", PromptKind::StudioTemplate, false, false, true,
     "causal prompt, positions 0, 1, 2, ...; the picture as a base view, then its crops (below)"},
    {"PaliGemma", "PaliGemmaForConditionalGeneration", "image_token_index", PromptKind::Question, true, false, false,
     "prefix-LM prompt (it attends to itself both ways), image tokens first, positions 1, 2, 3, ..."},
    {"Qwen2-VL", "Qwen2VLForConditionalGeneration", "image_token_id", PromptKind::StudioTemplate, false, true, false,
     "causal prompt, M-RoPE positions (given explicitly below)"},
    {"Qwen2.5-VL", "Qwen2_5_VLForConditionalGeneration", "image_token_id", PromptKind::StudioTemplate, false, true, false,
     "causal prompt, M-RoPE positions (given explicitly below; an image's are Qwen2-VL's)", "4.49"},
    {"Qwen3-VL", "Qwen3VLForConditionalGeneration", "image_token_id", PromptKind::StudioTemplate, false, true, false,
     "causal prompt, M-RoPE positions (given explicitly below; an image's are Qwen2-VL's); the model adds its DeepStack "
     "features at the image positions itself",
     "4.57"},
    {"Qwen2", "AutoModelForCausalLM", nullptr, PromptKind::ChatTemplate, false, false, false,
     "text only, causal prompt; the plan steers the prompt's own tokens (the token strip)"},
    {"Llama-3", "AutoModelForCausalLM", nullptr, PromptKind::ChatTemplate, false, false, false,
     "text only, causal prompt; the plan steers the prompt's own tokens (the token strip)"},
    {"Llama", "AutoModelForCausalLM", nullptr, PromptKind::UserAssistant, false, false, false,
     "text only (Llama-2 style), causal prompt; the plan steers the prompt's own tokens (the token strip)"},
};

const Family* findFamily(const QString& name) {
    for (const Family& f : kFamilies)
        if (name == QLatin1String(f.name)) return &f;
    return nullptr;
}

QString py(const QString& s) {   // a Python string literal
    QString out = s;
    out.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('"'), QStringLiteral("\\\"")).replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return QLatin1Char('"') + out + QLatin1Char('"');
}

QString num(double v) { return QString::number(v, 'g', 8); }
QString text(const char* s) { return QString::fromUtf8(s); }

bool is(const QString& op, const char* name) { return op == QLatin1String(name); }
// add and norm move the cache along the file's vectors; scale and ablate need none.
bool needsVectors(const QString& op) { return is(op, "add") || is(op, "norm"); }

// Why this plan cannot be a few faithful lines, or empty.
QString unsupported(const SnippetInputs& in, const Family* family) {
    const PlanSettings& p = in.plan;
    if (!in.model.valid()) return QStringLiteral("no model is loaded in the studio");
    if (!family) {
        QStringList known;
        for (const Family& f : kFamilies) known << QString::fromLatin1(f.name);
        return QStringLiteral("the %1 family is not one this snippet knows (%2)").arg(in.model.family, known.join(QStringLiteral(", ")));
    }
    if (is(p.op, "prerope"))
        return QStringLiteral("the 'prerope' operator rotates each pre-RoPE key vector to its position (R(p)Δ) with the model's own rotary "
                              "embedding (Llama-3's scaled frequencies, Qwen2-VL's M-RoPE sections); where that lives and how it is called "
                              "differs by family and transformers version, so a few lines cannot do it faithfully: use add or norm with "
                              "post-RoPE vectors, or kvsteer itself");
    if (is(p.op, "spotlight"))
        return QStringLiteral("the 'spotlight' operator edits no cache: it adds s·c_k to the attention logits of the painted positions, per "
                              "layer and KV head, at every decoding step; transformers has no per-layer, per-head logit bias to pass to "
                              "generate (it needs a patched attention forward): use kvsteer itself");
    if (!needsVectors(p.op) && !is(p.op, "scale") && !is(p.op, "ablate"))
        return QStringLiteral("the '%1' operator is not one this snippet knows (add, norm, scale, ablate)").arg(p.op);
    if (needsVectors(p.op) && in.keySpace == QLatin1String("pre-rope"))
        return QStringLiteral("the file's key vectors are pre-RoPE (made for 'prerope'): kvsteer refuses them for '%1', and adding them to "
                              "post-RoPE cached keys would be wrong").arg(p.op);
    if (p.propagate && family->prefixLm)
        return QStringLiteral("propagate mode on %1 recomputes the prompt's text bidirectionally against the edited image K/V (with the last "
                              "token, whose K/V are dropped again); transformers makes a forward pass that resumes from a cache causal "
                              "(its prefix-LM mask is only for a prefill from an empty cache), so a few lines cannot reproduce it: use "
                              "edit-only, or kvsteer itself").arg(in.model.family);
    if (family->prompt == PromptKind::StudioTemplate && !in.model.promptTemplate.contains(QStringLiteral("{question}")))
        return QStringLiteral("the studio holds no prompt template for this model");
    return {};
}

// The inputs: "prompt = ..." (or "question = ...") for the settings block, and the lines that make `inputs`.
struct PromptLines {
    QString setting;
    QString inputs;
};

PromptLines promptLines(const Family& f, const SnippetInputs& in) {
    const QString openImage = QStringLiteral("image = Image.open(image_path).convert(\"RGB\")\n"
                                             "inputs = processor(images=image, text=prompt, return_tensors=\"pt\")\n");
    switch (f.prompt) {
    case PromptKind::StudioTemplate: {
        QString prompt = in.model.promptTemplate;
        prompt.replace(QStringLiteral("{question}"), in.question);
        return {QStringLiteral("prompt = %1\n").arg(py(prompt)), openImage};
    }
    case PromptKind::Question:
        return {QStringLiteral("prompt = %1   # the processor lays it out as kvsteer does: \"<image>\"×N, \"<bos>\", the prompt, \"\\n\"\n")
                    .arg(py(in.question)),
                openImage};
    case PromptKind::ChatTemplate:
        return {QStringLiteral("question = %1\n").arg(py(in.question)),
                text("inputs = tokenizer.apply_chat_template([{\"role\": \"user\", \"content\": question}], add_generation_prompt=True,\n"
                     "                                       return_dict=True, return_tensors=\"pt\")   # the checkpoint's template and default system turn\n")};
    case PromptKind::UserAssistant:
        return {QStringLiteral("prompt = %1\n").arg(py(QStringLiteral("USER: %1 ASSISTANT:").arg(in.question))),
                text("inputs = tokenizer(prompt, return_tensors=\"pt\")                               # BOS first\n")};
    }
    return {};
}

// LLaVA-NeXT: the per-token strength of the painted map, the layout computed as the processor and
// the model make it (kvsteer's models/llava_next/AnyresGrid, cache/SpanCells).
constexpr char kAnyres[] = R"PY(# LLaVA-NeXT sees the picture twice: a base view (g × g cells), then its crops stitched as one grid, "unpadded", each
# row followed by an image_newline token. The map is painted on the crops' grid; a base cell takes the largest
# strength among the crop cells it overlaps on the picture; newline tokens take none. The layout, as the processor makes it:
W, H = image.size
view = model.config.vision_config.image_size
g, cell = view // model.config.vision_config.patch_size, model.config.vision_config.patch_size
def keeps(pin):                                       # select_best_resolution: most of the picture kept, then least waste
    sc = min(pin[1] / W, pin[0] / H)
    kept = min(int(W * sc) * int(H * sc), W * H)
    return kept, -(pin[0] * pin[1] - kept)
best_h, best_w = max(model.config.image_grid_pinpoints, key=keeps)
sw, sh = best_w / W, best_h / H                       # the picture fitted inside the pinpoint, then padded evenly
fit_w, fit_h = (best_w, min(math.ceil(H * sw), best_h)) if sw < sh else (min(math.ceil(W * sh), best_w), best_h)
pad_x, pad_y = (best_w - fit_w) // 2, (best_h - fit_h) // 2
gh, gw = best_h // view * g, best_w // view * g       # the crops' grid, then unpadded as the model does
off_r = (gh - H * gw // W) // 2 if W * gh > gw * H else 0
off_c = 0 if W * gh > gw * H else (gw - W * gh // H) // 2
rows, cols = gh - 2 * off_r, gw - 2 * off_c
assert tuple(mask.shape) == (rows, cols), "the painted map is not this picture's crop grid"
base = torch.zeros(g, g)
for r, c in mask.nonzero().tolist():                  # a painted crop cell, on the picture in its fractions
    y0, y1 = ((r + off_r) * cell - pad_y) / fit_h, ((r + off_r + 1) * cell - pad_y) / fit_h
    x0, x1 = ((c + off_c) * cell - pad_x) / fit_w, ((c + off_c + 1) * cell - pad_x) / fit_w
    i0, i1 = max(0, math.floor(y0 * g + 1e-9)), min(g, math.ceil(y1 * g - 1e-9))
    j0, j1 = max(0, math.floor(x0 * g + 1e-9)), min(g, math.ceil(x1 * g - 1e-9))
    base[i0:i1, j0:j1] = base[i0:i1, j0:j1].clamp(min=float(mask[r, c]))
s = torch.cat([base.flatten(), torch.cat([mask, torch.zeros(rows, 1)], 1).flatten()])   # one strength per image token
cells = torch.tensor(list(range(g * g)) + [g * g + r * (cols + 1) + c for r in range(rows) for c in range(cols)])   # no newline
)PY";

// M-RoPE (Qwen2-VL): one image's positions as the model numbers them, passed explicitly because
// transformers versions derive them (and the decoding offset) in different places.
constexpr char kMRope[] = R"PY(# M-RoPE positions, as Qwen2-VL numbers a prompt with one image (given explicitly: transformers versions derive them differently)
gh, gw = (inputs["image_grid_thw"][0, 1:] // model.config.vision_config.spatial_merge_size).tolist()   # the grid, rows × columns
rope_delta = max(gh, gw) - gh * gw                                              # the text after the image resumes at max + 1
k = torch.arange(gh * gw)
rope_pos = torch.arange(ids.shape[1]).repeat(3, 1)                              # text: one position on all three axes
rope_pos[:, span] = torch.stack([0 * k, k // gw, k % gw]) + int(span[0])        # image token k at (s, s + k // w, s + k % w)
rope_pos[:, int(span[-1]) + 1:] += rope_delta
rope_pos = rope_pos[:, None]                                                    # [3, batch, L]
)PY";

constexpr char kPrefixLmNote[] = R"PY(# PaliGemma's prompt is a prefix-LM: every prompt token attends to every other, the last one included, so prefilling
# all but the last token would not be PaliGemma (the others would never see the last one). As kvsteer does: prefill
# the whole prompt bidirectionally (transformers' PaliGemma does so for a prefill from an empty cache), then drop the
# last position; decoding that token again against the edited cache reproduces the full prefill's last position.
)PY";

// The edit of one head's painted positions x [B, n, D] (f = s(p)·c per position, d = the head's Δ),
// exactly as core/steer/SteeringPlan.cpp computes it.
QString editFunction(const PlanSettings& p, bool anyres) {
    QString s = text("sel = s != 0                                                                    # only painted positions are touched\n");
    if (needsVectors(p.op))
        s += text("def edit(X, c, vec):   # X [B, H_kv, T, D], keys after RoPE; vec [H_kv, D] or per position [H_kv, N, D]\n");
    else
        s += text("def edit(X, c):        # X [B, H_kv, T, D]\n");
    s += text("    f = (s[sel] * c).to(X)[:, None]                                             # s(p)·c, one per painted position\n"
              "    for h in (heads if heads is not None else range(X.shape[1])):\n"
              "        x = X[:, h, span[sel]]                                                  # [B, n, D]\n");
    if (needsVectors(p.op))
        s += text("        d = vec[h].to(X)                                                        # Δ: [D], or [N, D] per position\n"
                  "        d = d[sel] if d.dim() == 2 else d\n");
    if (is(p.op, "add"))
        s += text("        X[:, h, span[sel]] = x + f * d                                          # add: x += s·c·Δ\n");
    else if (is(p.op, "norm"))
        s += text("        y = x + f * d                                                           # norm: y = x + s·c·Δ, then x = y·‖x‖/‖y‖\n"
                  "        n = y.norm(dim=-1, keepdim=True)\n"
                  "        X[:, h, span[sel]] = torch.where(n > 0, y * (x.norm(dim=-1, keepdim=True) / n), x)\n");
    else if (is(p.op, "scale"))
        s += text("        X[:, h, span[sel]] = x * (1 + f)                                        # scale: x *= 1 + s·c\n");
    else if (p.ablateTarget == QLatin1String("zero"))
        s += text("        target = 0                                                              # ablate to zero\n"
                  "        X[:, h, span[sel]] = x + f * (target - x)                               # ablate: x += s·c·(target − x)\n");
    else
        s += (anyres ? text("        target = X[:, h, span[cells]].mean(1, keepdim=True)                     # the mean over the picture's cells, before the edit\n")
                     : text("        target = X[:, h, span].mean(1, keepdim=True)                            # the mean over the whole span, before the edit\n")) +
             text("        X[:, h, span[sel]] = x + f * (target - x)                               # ablate: x += s·c·(target − x)\n");
    s += text("\nfor l in layers:\n"
              "    K, V = layer_kv(cache, l)\n");
    if (needsVectors(p.op))
        s += text("    if ck and l in dK: edit(K, ck, dK[l])\n"
                  "    if cv and l in dV: edit(V, cv, dV[l])\n");
    else
        s += text("    if ck: edit(K, ck)\n"
                  "    if cv: edit(V, cv)\n");
    return s;
}

// Propagate (causal prompts): what follows the edit is computed again from the edited cache, as
// Session::recomputePrompt does: the text after the image, or on a token strip every token after the
// last edited one; the last prompt token stays for decoding.
QString propagate(const Family& f) {
    QString s = f.imageToken ? text("\nend = int(span[-1]) + 1                                                       # propagate: the prompt's text after the image\n")
                             : text("\nend = int(span[sel].max()) + 1 if sel.any() else 0                            # propagate: every token after the last edited one\n");
    s += text("if sel.any() and (ck or cv) and end < ids.shape[1] - 1:                         # is computed again from the edited cache\n"
              "    cache.crop(end)                                                             # (the last prompt token stays for decoding)\n"
              "    with torch.no_grad():\n");
    s += f.mrope ? text("        model(input_ids=ids[:, end:-1], position_ids=rope_pos[..., end:-1], past_key_values=cache, use_cache=True)\n")
                 : text("        model(input_ids=ids[:, end:-1], past_key_values=cache, use_cache=True)\n");
    return s;
}

// Decoding from the last prompt token against the edited cache: generate, or (M-RoPE) a greedy loop
// that gives every new token its position explicitly.
QString decode(const Family& f, const QString& io) {
    if (!f.mrope)
        return text("\nout = model.generate(input_ids=ids, attention_mask=inputs[\"attention_mask\"], past_key_values=cache,\n"
                    "                     max_new_tokens=16, do_sample=False)                        # feeds only the last prompt token\n") +
               QStringLiteral("print(%1.decode(out[0, ids.shape[1]:], skip_special_tokens=True))\n").arg(io);
    return text(R"PY(
eos = model.generation_config.eos_token_id
eos = eos if isinstance(eos, list) else [eos]
tok, answer = ids[:, -1:], []
with torch.no_grad():   # greedy decoding from the last prompt token, each at cache index + rope delta on all three axes
    for _ in range(16):
        at = torch.full((3, 1, 1), cache.get_seq_length() + rope_delta)
        tok = model(input_ids=tok, position_ids=at, past_key_values=cache, use_cache=True).logits[:, -1:].argmax(-1)
        if tok.item() in eos: break
        answer.append(tok.item())
)PY") + QStringLiteral("print(%1.decode(answer, skip_special_tokens=True))\n").arg(io);
}

} // namespace

QString pythonMask(const StrengthGrid& g) {
    int r0 = g.rows, r1 = -1, c0 = g.cols, c1 = -1, painted = 0;
    float value = 0;
    for (int r = 0; r < g.rows; ++r)
        for (int c = 0; c < g.cols; ++c)
            if (g.at(r, c) != 0) {
                r0 = std::min(r0, r);
                r1 = std::max(r1, r);
                c0 = std::min(c0, c);
                c1 = std::max(c1, c);
                value = g.at(r, c);
                ++painted;
            }
    QString out = QStringLiteral("mask = torch.zeros(%1, %2)                      # strength per grid cell (the painted map)\n").arg(g.rows).arg(g.cols);
    if (painted == 0) return out + QStringLiteral("# nothing is painted: the edit touches no position\n");
    bool uniform = painted == (r1 - r0 + 1) * (c1 - c0 + 1);
    for (int r = r0; uniform && r <= r1; ++r)
        for (int c = c0; uniform && c <= c1; ++c) uniform = g.at(r, c) == value;
    if (uniform) return out + QStringLiteral("mask[%1:%2, %3:%4] = %5\n").arg(r0).arg(r1 + 1).arg(c0).arg(c1 + 1).arg(num(value));
    QStringList cells;
    for (int r = 0; r < g.rows; ++r)
        for (int c = 0; c < g.cols; ++c)
            if (g.at(r, c) != 0) cells << QStringLiteral("(%1, %2, %3)").arg(r).arg(c).arg(num(g.at(r, c)));
    return out + QStringLiteral("for r, c, v in [%1]:\n    mask[r, c] = v\n").arg(cells.join(QStringLiteral(", ")));
}

QString pythonSnippet(const SnippetInputs& in) {
    const PlanSettings& p = in.plan;
    const Family* family = findFamily(in.model.family);
    const bool strip = family && !family->imageToken;
    const int last = p.layerTo < 0 ? in.model.layers - 1 : p.layerTo;
    const bool allLayers = p.layerFrom <= 0 && last >= in.model.layers - 1;
    QStringList heads;
    for (int h : p.heads) heads << QString::number(h);
    QString s;
    s += QStringLiteral("# kvsteer plan as Python (Hugging Face transformers >= %1, a DynamicCache edited in place; docs/steering.md).\n")
             .arg(QString::fromUtf8(family ? family->transformers : "4.45"));
    s += QStringLiteral("# %1 (%2) · operator %3, %4 · c_k %5 · c_v %6 · layers %7 · %8 painted cells of the %9×%10 %11\n")
             .arg(in.model.name, in.model.family, p.op, p.propagate ? QStringLiteral("propagate") : QStringLiteral("edit-only"), num(p.ck),
                  num(p.cv), allLayers ? QStringLiteral("all") : QStringLiteral("%1-%2").arg(p.layerFrom).arg(last))
             .arg(in.strength.paintedCells())
             .arg(in.strength.rows)
             .arg(in.strength.cols)
             .arg(strip ? QStringLiteral("token strip") : QStringLiteral("grid"));
    const QString why = unsupported(in, family);
    if (!why.isEmpty()) return s + QStringLiteral("raise NotImplementedError(%1)\n").arg(py(QStringLiteral("kvsteer: ") + why));
    const Family& f = *family;
    const bool vectors = needsVectors(p.op);
    const QString io = strip ? QStringLiteral("tokenizer") : QStringLiteral("processor");
    const PromptLines prompt = promptLines(f, in);

    s += QStringLiteral("# %1: %2\n").arg(in.model.family, QLatin1String(f.about));
    if (f.anyres) s += QStringLiteral("import math\n");
    s += QStringLiteral("import torch\n");
    if (!strip) s += QStringLiteral("from PIL import Image\n");
    if (vectors) s += QStringLiteral("from safetensors import safe_open\n");
    s += QStringLiteral("from transformers import %1, %2, DynamicCache\n\n")
             .arg(strip ? QStringLiteral("AutoTokenizer") : QStringLiteral("AutoProcessor"), QLatin1String(f.modelClass));

    s += QStringLiteral("model_id = %1\n").arg(py(in.model.directory));
    if (vectors && in.vectorsPath.isEmpty())
        s += QStringLiteral("vectors_path = \"steering.safetensors\"   # computed in the studio: File → Export Vectors… writes them; put that path here\n");
    else if (vectors)
        s += QStringLiteral("vectors_path = %1\n").arg(py(in.vectorsPath));
    if (!strip) s += QStringLiteral("image_path = %1   # the image the studio has open\n").arg(py(in.imageName));
    s += prompt.setting;
    s += QStringLiteral("ck, cv = %1, %2\n").arg(num(p.ck), num(p.cv));
    s += QStringLiteral("layers = %1\n").arg(allLayers ? QStringLiteral("range(%1)                             # every layer").arg(in.model.layers)
                                                         : QStringLiteral("range(%1, %2)").arg(p.layerFrom).arg(last + 1));
    s += QStringLiteral("heads = %1\n").arg(heads.isEmpty() ? QStringLiteral("None                                   # every KV head")
                                                            : QStringLiteral("[%1]").arg(heads.join(QStringLiteral(", "))));
    s += pythonMask(in.strength);

    s += QStringLiteral("\n%1 = %2.from_pretrained(model_id)\n").arg(io, strip ? QStringLiteral("AutoTokenizer") : QStringLiteral("AutoProcessor"));
    s += QStringLiteral("model = %1.from_pretrained(model_id, torch_dtype=torch.float32)\n").arg(QLatin1String(f.modelClass));
    if (vectors)
        s += text("with safe_open(vectors_path, \"pt\") as f:\n"
                  "    dK = {int(n.split(\".\")[-1]): f.get_tensor(n) for n in f.keys() if n.startswith(\"steer.keys.\")}\n"
                  "    dV = {int(n.split(\".\")[-1]): f.get_tensor(n) for n in f.keys() if n.startswith(\"steer.values.\")}\n");
    s += text("\ndef layer_kv(cache, l):   # transformers >= 4.56: cache.layers[l].keys; older: cache.key_cache[l]\n"
              "    if hasattr(cache, \"layers\"):\n"
              "        return cache.layers[l].keys, cache.layers[l].values\n"
              "    return cache.key_cache[l], cache.value_cache[l]\n\n");

    s += prompt.inputs;
    s += QStringLiteral("ids = inputs[\"input_ids\"]\n");
    if (strip)
        s += text("span = torch.arange(ids.shape[1] - 1)                                           # the token strip: every prompt token but the last\n");
    else
        s += QStringLiteral("span = (ids[0] == model.config.%1).nonzero().flatten()%2# the image's positions, row-major over the grid\n")
                 .arg(QLatin1String(f.imageToken), QString(std::max(1, 28 - int(std::strlen(f.imageToken))), QLatin1Char(' ')));
    if (f.anyres) s += text(kAnyres);
    else s += text("s = mask.flatten()                                                              # one strength per span position\n");
    s += text("assert s.numel() == span.numel(), \"the painted map does not fit this prompt (another grid or tokenization)\"\n");
    if (f.mrope) s += text(kMRope);

    s += QLatin1Char('\n');
    s += f.prefixLm ? text(kPrefixLmNote) : text("# A causal prompt: prefilling it whole and dropping the last position is prefilling all but the last token.\n");
    s += text("cache = DynamicCache()\n"
              "with torch.no_grad():   # prefill the whole prompt, then drop its last position: decoding feeds that token again\n");
    s += f.mrope ? text("    model(**inputs, position_ids=rope_pos, past_key_values=cache, use_cache=True)\n")
                 : text("    model(**inputs, past_key_values=cache, use_cache=True)\n");
    s += text("cache.crop(ids.shape[1] - 1)\n");

    s += QLatin1Char('\n') + editFunction(p, f.anyres);
    if (p.propagate) s += propagate(f);
    s += decode(f, io);
    return s;
}

} // namespace kvsteer::ui
