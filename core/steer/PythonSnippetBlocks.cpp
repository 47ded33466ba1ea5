#include "steer/PythonSnippetBlocks.h"

namespace kvsteer::snippet {

const char* const kAnyresLayout = R"PY(# LLaVA-NeXT sees the picture twice: a base view (g × g cells), then its crops stitched as one grid, "unpadded", each
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

const char* const kMropePositions = R"PY(# M-RoPE positions, as the Qwen VL families number a prompt with one image (given explicitly: transformers versions derive them differently)
gh, gw = (inputs["image_grid_thw"][0, 1:] // model.config.vision_config.spatial_merge_size).tolist()   # the grid, rows × columns
rope_delta = max(gh, gw) - gh * gw                                              # the text after the image resumes at max + 1
k = torch.arange(gh * gw)
rope_pos = torch.arange(ids.shape[1]).repeat(3, 1)                              # text: one position on all three axes
rope_pos[:, span] = torch.stack([0 * k, k // gw, k % gw]) + int(span[0])        # image token k at (s, s + k // w, s + k % w)
rope_pos[:, int(span[-1]) + 1:] += rope_delta
rope_pos = rope_pos[:, None]                                                    # [3, batch, L]
)PY";

const char* const kPrefixLmNote = R"PY(# PaliGemma's prompt is a prefix-LM: every prompt token attends to every other, the last one included, so prefilling
# all but the last token would not be PaliGemma (the others would never see the last one). As kvsteer does: prefill
# the whole prompt bidirectionally (transformers' PaliGemma does so for a prefill from an empty cache), then drop the
# last position; decoding that token again against the edited cache reproduces the full prefill's last position.
)PY";

namespace {

// One head's edit of its painted positions x [B, n, D] (f = s(p)·c per position, d = the head's Δ).
std::string editLine(SteeringOperator op, AblateTarget ablateTo, bool anyres) {
    if (op == SteeringOperator::Add) return "        X[:, h, span[sel]] = x + f * d                                          # add: x += s·c·Δ\n";
    if (op == SteeringOperator::NormPreserving)
        return "        y = x + f * d                                                           # norm: y = x + s·c·Δ, then x = y·‖x‖/‖y‖\n"
               "        n = y.norm(dim=-1, keepdim=True)\n"
               "        X[:, h, span[sel]] = torch.where(n > 0, y * (x.norm(dim=-1, keepdim=True) / n), x)\n";
    if (op == SteeringOperator::Scale) return "        X[:, h, span[sel]] = x * (1 + f)                                        # scale: x *= 1 + s·c\n";
    const std::string target =
        ablateTo == AblateTarget::Zero ? "        target = 0                                                              # ablate to zero\n"
        : anyres ? "        target = X[:, h, span[cells]].mean(1, keepdim=True)                     # the mean over the picture's cells, before the edit\n"
                 : "        target = X[:, h, span].mean(1, keepdim=True)                            # the mean over the whole span, before the edit\n";
    return target + "        X[:, h, span[sel]] = x + f * (target - x)                               # ablate: x += s·c·(target − x)\n";
}

} // namespace

std::string editFunction(SteeringOperator op, AblateTarget ablateTo, bool anyres) {
    const bool vectors = operatorNeedsVectors(op);
    std::string s = "sel = s != 0                                                                    # only painted positions are touched\n"
                    "def coef(c, l):                                                                 # one coefficient, or one per layer\n"
                    "    return c[l] if isinstance(c, list) else c\n\n";
    s += vectors ? "def edit(X, c, vec):   # X [B, H_kv, T, D], keys after RoPE; vec [H_kv, D] or per position [H_kv, N, D]\n"
                 : "def edit(X, c, vec=None):   # X [B, H_kv, T, D]\n";
    s += "    f = (s[sel] * c).to(X)[:, None]                                             # s(p)·c, one per painted position\n"
         "    for h in (heads if heads is not None else range(X.shape[1])):\n"
         "        x = X[:, h, span[sel]]                                                  # [B, n, D]\n";
    if (vectors)
        s += "        d = vec[h].to(X)                                                        # Δ: [D], or [N, D] per position\n"
             "        d = d[sel] if d.dim() == 2 else d\n";
    s += editLine(op, ablateTo, anyres);
    s += "\nedited = False                                                                  # propagate recomputes only after a real edit\n"
         "for l in layers:\n"
         "    K, V = layer_kv(cache, l)\n";
    s += vectors ? "    for X, c, vec in ((K, coef(ck, l), dK.get(l)), (V, coef(cv, l), dV.get(l))):\n"
                   "        if c and vec is not None and sel.any():\n"
                 : "    for X, c, vec in ((K, coef(ck, l), None), (V, coef(cv, l), None)):\n"
                   "        if c and sel.any():\n";
    s += "            edit(X, c, vec)\n"
         "            edited = True\n";
    return s;
}

std::string propagate(bool image, bool mrope) {
    std::string s = image ? "\nend = int(span[-1]) + 1                                                       # propagate: the prompt's text after the image\n"
                          : "\nend = int(span[sel].max()) + 1 if sel.any() else 0                            # propagate: every token after the last edited one\n";
    s += "if edited and end < ids.shape[1] - 1:                                          # is computed again from the edited cache\n"
         "    cache.crop(end)                                                             # (the last prompt token stays for decoding)\n"
         "    with torch.no_grad():\n";
    s += mrope ? "        model(input_ids=ids[:, end:-1], position_ids=rope_pos[..., end:-1], past_key_values=cache, use_cache=True)\n"
               : "        model(input_ids=ids[:, end:-1], past_key_values=cache, use_cache=True)\n";
    return s;
}

std::string decodeBoth(bool mrope, const std::string& io) {
    std::string s;
    if (!mrope)
        s = "\ndef answer(cache):   # greedy from the last prompt token against `cache` (generate feeds only that token)\n"
            "    out = model.generate(input_ids=ids, attention_mask=inputs[\"attention_mask\"], past_key_values=cache,\n"
            "                         max_new_tokens=max_new_tokens, do_sample=False)\n"
            "    return out[0, ids.shape[1]:].tolist()\n";
    else
        s = R"PY(
eos = model.generation_config.eos_token_id
eos = eos if isinstance(eos, list) else [eos]
def answer(cache):   # greedy from the last prompt token, each new token at cache index + rope delta on all three axes
    tok, got = ids[:, -1:], []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            at = torch.full((3, 1, 1), cache.get_seq_length() + rope_delta)
            tok = model(input_ids=tok, position_ids=at, past_key_values=cache, use_cache=True).logits[:, -1:].argmax(-1)
            got.append(tok.item())
            if tok.item() in eos: break
    return got
)PY";
    s += "\n# Both answers, as `kvsteer steer --json` gives them (its \"unsteered\" and \"steered\" ids and text), one line each.\n"
         "for name, kv in ((\"unsteered\", pristine), (\"steered\", cache)):\n"
         "    got = answer(kv)\n"
         "    print(json.dumps({name: {\"ids\": got, \"text\": " + io + ".decode(got, skip_special_tokens=True)}}, ensure_ascii=False))\n";
    return s;
}

} // namespace kvsteer::snippet
