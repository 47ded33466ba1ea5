#include "Error.h"

#include <ATen/ops/from_blob.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/topk.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstring>
#include <new>

#include "worker/CoreConversions.h"

namespace kvsteer::ui {

// Readable text for anything the core or libtorch can throw while doing `what`.
namespace {

// A core error's remedy, as the studio control to use.
QString remedyText(kvsteer::Remedy r) {
    switch (r) {
    case kvsteer::Remedy::RawPrompt: return QStringLiteral("Remove the image tag from the prompt: the template places the image itself.");
    case kvsteer::Remedy::KeepStoredDtype:
        return QStringLiteral("Choose Weights “as stored in the checkpoint” in Edit → Preferences to keep its own 16-bit dtypes.");
    case kvsteer::Remedy::FewerNewTokens: return QStringLiteral("Lower “Max tokens” to shrink the KV cache.");
    case kvsteer::Remedy::SkipBadItems: return QStringLiteral("Tick “Skip bad items” to evaluate the rest.");
    case kvsteer::Remedy::SmallerImageBudget:
        return QStringLiteral("Start the studio with --max-pixels 1003520 to cap an image at about a megapixel: 1280 tokens on Qwen2-VL and "
                              "Qwen2.5-VL, 980 on Qwen3-VL (larger images are scaled down).");
    case kvsteer::Remedy::MatchingKeySpace:
        return QStringLiteral("Compute or import vectors in the key space this operator needs (Steering panel).");
    }
    return QString();
}

} // namespace

QString describeFailure(const QString& what, const std::exception_ptr& error) {
    const QString oom = QStringLiteral(
        "Out of memory while %1.\n\nClose other programs, load the model with a 16-bit dtype "
        "(Edit → Preferences), or lower “Max tokens”.")
                            .arg(what);
    try {
        std::rethrow_exception(error);
    } catch (const kvsteer::Error& e) {
        QString text = qs(e.what());
        for (kvsteer::Remedy r : e.remedies()) text += QStringLiteral("\n\n") + remedyText(r);
        return text;
    } catch (const std::bad_alloc&) {
        return oom;
    } catch (const c10::Error& e) {
        const QString msg = qs(e.what_without_backtrace());
        if (msg.contains(QLatin1String("out of memory"), Qt::CaseInsensitive) ||
            msg.contains(QLatin1String("can't allocate memory"), Qt::CaseInsensitive))
            return oom;
        return QStringLiteral("libtorch failed while %1:\n%2").arg(what, msg.section(QLatin1Char('\n'), 0, 2));
    } catch (const std::exception& e) {
        return QStringLiteral("Failed while %1:\n%2").arg(what, qs(e.what()));
    } catch (...) {
        return QStringLiteral("Unknown failure while %1.").arg(what);
    }
}

at::Tensor gridTensor(const StrengthGrid& g) {
    return at::from_blob(const_cast<float*>(g.values.constData()), {g.rows, g.cols}, at::TensorOptions().dtype(at::kFloat))
        .clone();
}

StrengthGrid gridFromTensor(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU).to(at::kFloat).contiguous();
    StrengthGrid g(int(c.size(0)), int(c.size(1)));
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + g.size(), g.values.begin());
    return g;
}

QVector<float> toVector(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU).to(at::kFloat).contiguous();
    QVector<float> v(int(c.numel()));
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + c.numel(), v.begin());
    return v;
}

QImage toQImage(const ImageU8& img) {
    QImage out(img.width, img.height, QImage::Format_RGB888);
    for (int y = 0; y < img.height; ++y)
        std::memcpy(out.scanLine(y), img.rgb.data() + size_t(y) * img.width * 3, size_t(img.width) * 3);
    return out;
}

// A token piece as a person reads it: "▁blue" → " blue", "<0x0A>" → "↵".
QString readablePiece(const Tokenizer& tok, int64_t id) {
    // A model's vocabulary can be larger than its tokenizer's (Qwen pads it): such an id has no text.
    if (id < 0 || id >= tok.vocabSize()) return QStringLiteral("⟨%1⟩").arg(id);
    QString p = qs(tok.piece(id));
    if (p.size() == 6 && p.startsWith(QLatin1String("<0x")) && p.endsWith(QLatin1Char('>'))) {
        bool ok = false;
        const int byte = p.mid(3, 2).toInt(&ok, 16);
        if (ok && byte == 0x0A) return QStringLiteral("↵");
        if (ok && byte >= 0x20 && byte < 0x7F) return QString(QChar(byte));
        return p;
    }
    p.replace(QChar(0x2581), QLatin1Char(' '));
    return p;
}

QStringList stripPieces(const Tokenizer& tok, const std::vector<int64_t>& ids, int64_t n) {
    QStringList pieces;
    for (int64_t i = 0; i < n && i < int64_t(ids.size()); ++i) {
        // The token's own text where it is whole UTF-8; a byte of a longer character as its piece.
        const QString text = qs(tok.decode({ids[size_t(i)]}, false));
        pieces << (text.isEmpty() || text.contains(QChar::ReplacementCharacter) ? readablePiece(tok, ids[size_t(i)]) : text);
    }
    return pieces;
}

std::vector<int> layerRange(const PlanSettings& p, int layers) {
    const int from = std::clamp(p.layerFrom, 0, layers - 1);
    const int to = p.layerTo < 0 ? layers - 1 : std::clamp(p.layerTo, 0, layers - 1);
    std::vector<int> r;
    for (int l = from; l <= to; ++l) r.push_back(l);
    return r;
}

PlanOptions planOptions(const PlanSettings& p, int layers) {
    PlanOptions o;
    o.op = p.op;
    const QVector<double> ck = p.ckValues(), cv = p.cvValues();   // one value, or one per layer
    o.ck.assign(ck.begin(), ck.end());
    o.cv.assign(cv.begin(), cv.end());
    o.layers = layerRange(p, layers);
    o.heads.assign(p.heads.begin(), p.heads.end());
    o.propagate = p.propagate;
    o.ablateTo = p.ablateTarget;
    return o;
}

GenerationOptions generationOptions(const GenerationSettings& s) {
    GenerationOptions g;
    g.maxNewTokens = s.maxNewTokens;
    g.stopAtEos = s.stopAtEos;
    if (s.sample) {
        g.sampling.temperature = s.temperature;
        g.sampling.topP = s.topP;
        g.sampling.topK = s.topK;
    }
    g.sampling.seed = s.seed;
    return g;
}


StreamToken streamToken(const TokenEvent& ev, const Tokenizer& tok) {
    StreamToken t;
    t.id = ev.id;
    if (ev.id < 0) return t;
    t.text = qs(ev.text);
    t.eos = ev.eos;
    if (ev.logits && ev.logits->defined()) {
        const at::Tensor probs = at::softmax(ev.logits->to(at::kCPU).to(at::kFloat), -1);
        const auto top = at::topk(probs, std::min<int64_t>(5, probs.size(0)));
        const at::Tensor values = std::get<0>(top).contiguous(), ids = std::get<1>(top).contiguous();
        for (int64_t i = 0; i < ids.numel(); ++i) {
            Alternative a;
            a.id = ids.data_ptr<int64_t>()[i];
            a.probability = values.data_ptr<float>()[i];
            a.text = readablePiece(tok, a.id);
            t.top.push_back(a);
        }
    }
    return t;
}


VectorsInfo describeVectors(const SteeringVectors& v, const SteeringFileInfo& info) {
    VectorsInfo out;
    out.recipe = qs(info.recipe);
    out.keySpace = qs(keySpaceName(v.keySpace));
    out.perPosition = v.perPosition();
    for (int l = 0; l < v.numLayers(); ++l) out.layersWithVectors += v.hasLayer(l) ? 1 : 0;
    out.modelName = qs(info.modelName);
    out.suggestedOperator = info.op;
    for (double c : info.ck) out.suggestedCk.push_back(c);
    for (double c : info.cv) out.suggestedCv.push_back(c);
    for (int l : info.layers) out.suggestedLayers.push_back(l);
    if (v.mask.defined() && v.mask.dim() == 2) {
        out.mask = gridFromTensor(v.mask);
        out.hasMask = true;
    }
    return out;
}

} // namespace kvsteer::ui
