// The demo trainer's data and batches (see TrainingBatch.h).
#include "demo/TrainingBatch.h"

#include "Error.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <limits>

namespace kvsteer::demo::training {

namespace {

// The items of a description, "a red circle, a yellow circle and a green triangle" -> their
// [begin, end) character spans.
std::vector<std::pair<size_t, size_t>> describedItems(const std::string& text) {
    std::vector<std::pair<size_t, size_t>> spans;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t comma = text.find(", ", begin), andWord = text.find(" and ", begin);
        const size_t end = std::min({comma, andWord, text.size()});
        spans.push_back({begin, end});
        if (end == text.size()) break;
        begin = end + (end == comma ? 2 : 5);
    }
    return spans;
}

// Which item each answer token of a description spells: the item holding the token's first
// non-space character, found by decoding the answer one token further at a time.
std::vector<int> itemOfEachToken(const Tokenizer& tok, const std::vector<int64_t>& answer, const std::string& text) {
    const std::vector<std::pair<size_t, size_t>> items = describedItems(text);
    std::vector<int> out;
    size_t done = 0;
    for (size_t t = 0; t < answer.size(); ++t) {
        std::string prefix = tok.decode(std::vector<int64_t>(answer.begin(), answer.begin() + static_cast<std::ptrdiff_t>(t + 1)));
        if (!prefix.empty() && prefix[0] == ' ') prefix.erase(0, 1);
        if (prefix.size() < done || text.compare(0, prefix.size(), prefix) != 0)
            throw Error("demo trainer: the tokens of \"" + text + "\" do not decode to it piece by piece");
        size_t first = done;
        while (first < prefix.size() && prefix[first] == ' ') ++first;
        int item = -1;
        for (size_t k = 0; k < items.size(); ++k)
            if (first < prefix.size() && first >= items[k].first && first < items[k].second) item = static_cast<int>(k);
        out.push_back(item);
        done = prefix.size();
    }
    out.push_back(-1);   // EOS
    return out;
}

// The cells a question's answer lives in: its shape's (colour, shape, position, "yes" exists), all
// shapes' (count, describe), none for "no" exists (there is nothing to look at); for a
// description also each named item's cells (every shape of that colour and kind), so that each
// word of "a red circle and a blue square" is read from the shape it names.
Grounding groundingOf(const QA& qa, const Scene& scene, const std::vector<int>& owner) {
    auto cellsWhere = [&](const std::function<bool(int)>& shapeMatches) {
        std::vector<int64_t> out;
        for (size_t c = 0; c < owner.size(); ++c)
            if (owner[c] >= 0 && shapeMatches(owner[c])) out.push_back(static_cast<int64_t>(c));
        return out;
    };
    Grounding g;
    const bool wholeScene = qa.type == QuestionType::Count || qa.type == QuestionType::Describe;
    g.cells = cellsWhere([&](int k) { return wholeScene || k == qa.shapeIndex; });
    if (qa.type == QuestionType::Describe)
        for (const auto& [begin, end] : describedItems(qa.answer)) {
            const std::string item = qa.answer.substr(begin, end - begin);
            g.itemCells.push_back(cellsWhere([&](int k) {
                return item == itemText(scene.shapes[size_t(k)]);
            }));
        }
    return g;
}

// The decoder layer whose head 0 the grounding loss guides.
int groundingLayer(const ModelConfig& c) { return std::max(0, c.text.numLayers - 2); }

} // namespace

SegmentCache::SegmentCache(const Tokenizer& tok) : tok_(tok) {
    const std::vector<int64_t> ids = tok.encode(promptFor("How many shapes are there?"), true);
    auto it = std::find(ids.begin(), ids.end(), tok.imageTokenId());
    if (it == ids.end()) throw Error("demo trainer: the prompt has no <image> token");
    prefix_.assign(ids.begin(), it);   // BOS .. before <image>
}

const Segment& SegmentCache::get(const QA& qa) {
    const std::string key = qa.question + '\x01' + qa.answer;
    auto found = cache_.find(key);
    if (found != cache_.end()) return found->second;
    const std::string prompt = promptFor(qa.question);
    const std::vector<int64_t> compact = tok_.encode(prompt, true);
    const std::vector<int64_t> full = tok_.encode(prompt + " " + qa.answer, true);
    if (full.size() <= compact.size() || !std::equal(compact.begin(), compact.end(), full.begin()))
        throw Error("demo trainer: the prompt's tokens are not a prefix of prompt + answer for \"" + qa.question + "\"");
    auto img = std::find(compact.begin(), compact.end(), tok_.imageTokenId());
    if (img == compact.end() || !std::equal(prefix_.begin(), prefix_.end(), compact.begin()) ||
        static_cast<size_t>(img - compact.begin()) != prefix_.size())
        throw Error("demo trainer: prompt prefix differs for \"" + qa.question + "\"");
    Segment s;
    s.type = qa.type;
    s.tokens.assign(img + 1, compact.end());
    s.answerStart = static_cast<int>(s.tokens.size());
    s.tokens.insert(s.tokens.end(), full.begin() + static_cast<std::ptrdiff_t>(compact.size()), full.end());
    s.tokens.push_back(tok_.eosId());
    if (qa.type == QuestionType::Describe)
        s.answerItem = itemOfEachToken(tok_, std::vector<int64_t>(s.tokens.begin() + s.answerStart, s.tokens.end() - 1), qa.answer);
    return cache_.emplace(key, std::move(s)).first->second;
}

std::vector<QA> trainingQuestions(const Scene& scene, Rng& rng) {
    std::vector<QA> out;
    for (const QA& qa : allQuestions(scene))
        if (qa.type != QuestionType::Exists) out.push_back(qa);
    QA yes, no;
    for (int tries = 0; tries < 16; ++tries) {
        QA qa;
        sampleQuestion(scene, QuestionType::Exists, rng, qa);
        if (qa.answer == "yes" && yes.question.empty()) yes = qa;
        if (qa.answer == "no" && no.question.empty()) no = qa;
        if (!yes.question.empty() && !no.question.empty()) break;
    }
    if (!yes.question.empty()) out.push_back(yes);
    if (!no.question.empty()) out.push_back(no);
    return out;
}

Example makeExample(const Scene& scene, const std::vector<QA>& questions, SegmentCache& segments, const ClipPreprocessConfig& pre) {
    Example e;
    e.pixels = clipPreprocess(render(scene), pre).pixels;
    const std::vector<int> owner = cellOwners(scene);
    for (const QA& qa : questions) {
        e.segments.push_back(&segments.get(qa));
        e.grounding.push_back(groundingOf(qa, scene, owner));
    }
    return e;
}

Batch makeBatch(const std::vector<Example>& examples, const std::vector<int64_t>& prefixBeforeImage, int imageTokens,
                const Net& net) {
    Batch bt;
    const int64_t b = static_cast<int64_t>(examples.size());
    bt.imageStart = static_cast<int64_t>(prefixBeforeImage.size());
    bt.prefixLen = bt.imageStart + imageTokens;
    const int64_t P = bt.prefixLen;
    int64_t S = 1;
    for (const Example& e : examples) {
        int64_t n = 0;
        for (const Segment* s : e.segments) n += static_cast<int64_t>(s->tokens.size()) - 1;
        S = std::max(S, n);
    }
    bt.segLen = S;
    const int64_t T = P + S;
    std::vector<int64_t> ids(static_cast<size_t>(b * T), 0), positions(static_cast<size_t>(b * T), 0);
    std::vector<float> segMask(static_cast<size_t>(b * S * T), -std::numeric_limits<float>::infinity());
    std::vector<int64_t> rows, targets, groundedRows;
    std::vector<float> groundingMask;
    std::vector<float> pixels;
    pixels.reserve(static_cast<size_t>(b) * 3 * kImageSize * kImageSize);
    for (int64_t i = 0; i < b; ++i) {
        const Example& e = examples[static_cast<size_t>(i)];
        pixels.insert(pixels.end(), e.pixels.begin(), e.pixels.end());
        for (int64_t j = 0; j < T; ++j) positions[size_t(i * T + j)] = j < P ? j : P;   // padding: any valid position
        for (size_t j = 0; j < prefixBeforeImage.size(); ++j) ids[size_t(i * T) + j] = prefixBeforeImage[j];
        bt.tokens += P;
        int64_t at = 0;   // offset inside the segment area
        std::vector<int64_t> segOf(static_cast<size_t>(S), -1);
        for (size_t si = 0; si < e.segments.size(); ++si) {
            const Segment& seg = *e.segments[si];
            const int64_t n = static_cast<int64_t>(seg.tokens.size()) - 1;   // inputs: all but the last token
            for (int64_t j = 0; j < n; ++j) {
                const int64_t col = P + at + j;
                ids[size_t(i * T + col)] = seg.tokens[size_t(j)];
                positions[size_t(i * T + col)] = P + j;
                segOf[size_t(at + j)] = static_cast<int64_t>(si);
                if (j + 1 >= seg.answerStart) {   // predicts an answer token or EOS
                    const Grounding& g = e.grounding[si];
                    const int item = seg.answerItem.empty() ? -1 : seg.answerItem[size_t(j + 1 - seg.answerStart)];
                    const std::vector<int64_t>& cells = item >= 0 ? g.itemCells.at(size_t(item)) : g.cells;
                    if (!cells.empty()) {
                        groundedRows.push_back(i * S + at + j);
                        groundingMask.resize(groundingMask.size() + size_t(imageTokens), 0.0f);
                        for (int64_t cell : cells) groundingMask[groundingMask.size() - size_t(imageTokens) + size_t(cell)] = 1.0f;
                    }
                    rows.push_back(i * S + at + j);
                    targets.push_back(seg.tokens[size_t(j + 1)]);
                    bt.rowOwner.push_back({static_cast<int>(i), static_cast<int>(si)});
                    bt.rowType.push_back(seg.type);
                }
            }
            at += n;
            bt.tokens += n;
        }
        for (int64_t q = 0; q < S; ++q) {
            float* row = &segMask[size_t((i * S + q) * T)];
            for (int64_t kk = 0; kk < P; ++kk) row[kk] = 0.0f;
            if (segOf[size_t(q)] < 0) continue;   // padding sees the prefix only
            for (int64_t kk = q; kk >= 0 && segOf[size_t(kk)] == segOf[size_t(q)]; --kk) row[P + kk] = 0.0f;
        }
    }
    const auto longOpts = at::TensorOptions().dtype(at::kLong);
    bt.pixels = at::from_blob(pixels.data(), {b, 3, kImageSize, kImageSize}, at::kFloat).clone();
    bt.ids = at::from_blob(ids.data(), {b, T}, longOpts).clone();
    Tensor pos = at::from_blob(positions.data(), {b * T}, longOpts).clone();
    const int64_t hd = net.ropeCos.size(1);
    bt.cos = net.ropeCos.index_select(0, pos).view({b, 1, T, hd});
    bt.sin = net.ropeSin.index_select(0, pos).view({b, 1, T, hd});
    bt.prefixMask = at::full({P, P}, -std::numeric_limits<double>::infinity(), at::kFloat).triu(1);
    bt.segmentMask = at::from_blob(segMask.data(), {b, 1, 1, S, T}, at::kFloat).clone();
    bt.lossRows = at::from_blob(rows.data(), {static_cast<int64_t>(rows.size())}, longOpts).clone();
    bt.targets = at::from_blob(targets.data(), {static_cast<int64_t>(targets.size())}, longOpts).clone();
    const int64_t g = static_cast<int64_t>(groundedRows.size());
    bt.groundedRows = at::from_blob(groundedRows.data(), {g}, longOpts).clone();
    bt.groundingMask = at::from_blob(groundingMask.data(), {g, imageTokens}, at::kFloat).clone();
    return bt;
}

Tensor forwardLogits(const Net& net, const Batch& bt, Tensor* groundingMass) {
    const ModelConfig& c = net.c;
    const Parameters& p = net.p;
    Tensor features = net.encodeImages(bt.pixels);   // [B, 576, D]
    Tensor embeds = at::embedding(p(kT + "embed_tokens.weight"), bt.ids);
    const int64_t T = embeds.size(1), n = features.size(1);
    Tensor x = at::cat({embeds.narrow(1, 0, bt.imageStart), features,
                        embeds.narrow(1, bt.imageStart + n, T - bt.imageStart - n)},
                       1);
    Tensor probs;
    for (int i = 0; i < c.text.numLayers; ++i) {
        const bool guided = groundingMass && i == groundingLayer(c);
        x = net.llamaLayer(x, i, bt.prefixLen, bt.cos, bt.sin, bt.prefixMask, bt.segmentMask, i + 1 == c.text.numLayers,
                           guided ? &probs : nullptr);
    }
    if (groundingMass) {
        // Head 0's probabilities over the image tokens, on the loss rows that have grounding cells.
        const int64_t b = probs.size(0), s = probs.size(2);
        Tensor onImage = probs.select(1, 0).narrow(2, bt.imageStart, n).reshape({b * s, n});
        Tensor grounded = onImage.index_select(0, bt.groundedRows);
        *groundingMass = (grounded * bt.groundingMask).sum(1);
    }
    Tensor rows = x.reshape({-1, x.size(2)}).index_select(0, bt.lossRows);
    return at::linear(net.rmsNorm(rows, p(kT + "norm.weight")), p("language_model.lm_head.weight"));
}

} // namespace kvsteer::demo::training
