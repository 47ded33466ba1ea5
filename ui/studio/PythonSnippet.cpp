#include "studio/PythonSnippet.h"

#include <QStringList>

namespace kvsteer::ui {

namespace {

QString py(const QString& s) {   // a Python string literal
    QString out = s;
    out.replace(QLatin1Char('\\'), QStringLiteral("\\\\")).replace(QLatin1Char('"'), QStringLiteral("\\\"")).replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return QLatin1Char('"') + out + QLatin1Char('"');
}

QString num(double v) { return QString::number(v, 'g', 8); }

// Why this plan cannot be a few faithful lines, or empty.
QString unsupported(const SnippetInputs& in) {
    if (in.model.family != QLatin1String("LLaVA-1.5"))
        return QStringLiteral("the %1 family's prompt and prefill differ from LLaVA's (see the README's model families); this snippet is "
                              "LLaVA-only").arg(in.model.family);
    if (in.plan.op != QLatin1String("add") && in.plan.op != QLatin1String("scale"))
        return QStringLiteral("the '%1' operator (norm, prerope, spotlight and ablate need more than a few lines: a norm rescale, "
                              "RoPE rotations, an attention-logit bias or the span mean) is not expressed here; use add or scale, "
                              "or kvsteer itself").arg(in.plan.op);
    if (in.plan.propagate) return QStringLiteral("propagate mode recomputes the prompt's text after the image against the edited cache; this snippet is edit-only");
    if (in.plan.op == QLatin1String("add") && in.keySpace == QLatin1String("pre-rope") && in.plan.ck != 0)
        return QStringLiteral("the file's key vectors are pre-RoPE: adding them to post-RoPE cached keys would be wrong");
    return {};
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
    const int last = p.layerTo < 0 ? in.model.layers - 1 : p.layerTo;
    const bool allLayers = p.layerFrom <= 0 && last >= in.model.layers - 1;
    QStringList heads;
    for (int h : p.heads) heads << QString::number(h);
    QString s;
    s += QStringLiteral("# kvsteer plan as Python (Hugging Face transformers, a DynamicCache edited in place; README, \"Steering\").\n");
    s += QStringLiteral("# %1 (%2) · operator %3, %4 · c_k %5 · c_v %6 · layers %7 · %8 painted cells of the %9×%10 grid\n")
             .arg(in.model.name, in.model.family, p.op, p.propagate ? QStringLiteral("propagate") : QStringLiteral("edit-only"), num(p.ck),
                  num(p.cv), allLayers ? QStringLiteral("all") : QStringLiteral("%1-%2").arg(p.layerFrom).arg(last))
             .arg(in.strength.paintedCells())
             .arg(in.strength.rows)
             .arg(in.strength.cols);
    const QString why = unsupported(in);
    if (!why.isEmpty()) return s + QStringLiteral("raise NotImplementedError(%1)\n").arg(py(QStringLiteral("kvsteer: ") + why));

    s += QStringLiteral("import torch\nfrom PIL import Image\nfrom safetensors import safe_open\n"
                        "from transformers import AutoProcessor, LlavaForConditionalGeneration, DynamicCache\n\n");
    s += QStringLiteral("model_id = %1\n").arg(py(in.model.directory));
    if (in.vectorsPath.isEmpty())
        s += QStringLiteral("vectors_path = \"steering.safetensors\"   # computed in the studio: File → Export Vectors… writes them; put that path here\n");
    else
        s += QStringLiteral("vectors_path = %1\n").arg(py(in.vectorsPath));
    s += QStringLiteral("image_path = %1   # the image the studio has open\n").arg(py(in.imageName));
    QString prompt = in.model.promptTemplate;
    prompt.replace(QStringLiteral("{question}"), in.question);
    s += QStringLiteral("prompt = %1\n").arg(py(prompt));
    s += QStringLiteral("ck, cv = %1, %2\n").arg(num(p.ck), num(p.cv));
    s += QStringLiteral("layers = %1\n").arg(allLayers ? QStringLiteral("None                                  # every layer")
                                                         : QStringLiteral("range(%1, %2)").arg(p.layerFrom).arg(last + 1));
    s += QStringLiteral("heads = %1\n").arg(heads.isEmpty() ? QStringLiteral("None                                   # every KV head")
                                                            : QStringLiteral("[%1]").arg(heads.join(QStringLiteral(", "))));
    s += pythonMask(in.strength);
    s += QStringLiteral(
        "\nprocessor = AutoProcessor.from_pretrained(model_id)\n"
        "model = LlavaForConditionalGeneration.from_pretrained(model_id, torch_dtype=torch.float32)\n"
        "with safe_open(vectors_path, \"pt\") as f:\n"
        "    dK = {int(n.split(\".\")[-1]): f.get_tensor(n) for n in f.keys() if n.startswith(\"steer.keys.\")}\n"
        "    dV = {int(n.split(\".\")[-1]): f.get_tensor(n) for n in f.keys() if n.startswith(\"steer.values.\")}\n\n"
        "def layer_kv(cache, l):   # transformers >= 4.56: cache.layers[l].keys; older: cache.key_cache[l]\n"
        "    if hasattr(cache, \"layers\"):\n"
        "        return cache.layers[l].keys, cache.layers[l].values\n"
        "    return cache.key_cache[l], cache.value_cache[l]\n\n"
        "inputs = processor(images=Image.open(image_path).convert(\"RGB\"), text=prompt, return_tensors=\"pt\")\n"
        "ids = inputs[\"input_ids\"]\n"
        "span = (ids[0] == model.config.image_token_index).nonzero().flatten()          # the visual positions\n"
        "cache = DynamicCache()\n"
        "with torch.no_grad():                                                           # prefill all but the last token\n"
        "    model(input_ids=ids[:, :-1], pixel_values=inputs[\"pixel_values\"], attention_mask=inputs[\"attention_mask\"][:, :-1],\n"
        "          past_key_values=cache, use_cache=True)\n"
        "s = mask.flatten()\n\n");
    if (p.op == QLatin1String("add"))
        s += QStringLiteral(
            "def edit(X, delta, c):   # X [B, H_kv, T, D] after RoPE; delta [H_kv, D] or per position [H_kv, N, D]: x += s c Δ\n"
            "    d = delta.to(X)\n"
            "    d = d[:, None, :] if d.dim() == 2 else d\n"
            "    for h in (heads if heads is not None else range(X.shape[1])):\n"
            "        X[:, h, span] += (s * c).to(X)[None, :, None] * d[h][None]\n\n"
            "for l in (layers if layers is not None else range(model.config.text_config.num_hidden_layers)):\n"
            "    K, V = layer_kv(cache, l)\n"
            "    if ck and l in dK: edit(K, dK[l], ck)\n"
            "    if cv and l in dV: edit(V, dV[l], cv)\n");
    else
        s += QStringLiteral(
            "def edit(X, c):          # scale: x *= 1 + s c\n"
            "    for h in (heads if heads is not None else range(X.shape[1])):\n"
            "        X[:, h, span] *= (1 + s * c).to(X)[None, :, None]\n\n"
            "for l in (layers if layers is not None else range(model.config.text_config.num_hidden_layers)):\n"
            "    K, V = layer_kv(cache, l)\n"
            "    if ck: edit(K, ck)\n"
            "    if cv: edit(V, cv)\n");
    s += QStringLiteral(
        "out = model.generate(input_ids=ids, attention_mask=inputs[\"attention_mask\"], past_key_values=cache,\n"
        "                     max_new_tokens=16, do_sample=False)                        # feeds only the last prompt token\n"
        "print(processor.decode(out[0, ids.shape[1]:], skip_special_tokens=True))\n");
    return s;
}

} // namespace kvsteer::ui
