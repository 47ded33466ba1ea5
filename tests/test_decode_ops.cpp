// The decoder's per-token ops in plain loops (core/nn: rmsNorm, rotateHalf, decodeAttention)
// against the ATen formulas they replace on CPU: RoPE bit for bit, the norm and the attention to
// float32 rounding; the attention with grouped heads, a batch, every bias shape, the softmax it
// returns; a batch row equal to the row alone, and one thread equal to two.
#include "TestSupport.h"
#include "Runtime.h"
#include "nn/DecodeAttention.h"
#include "nn/RmsNorm.h"
#include "nn/RotateHalf.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/softmax.h>

#include <cmath>

#include <QtTest>

using namespace kvsteer;

namespace {

double maxRelative(const at::Tensor& got, const at::Tensor& want) {
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item<double>();
}

// transformers' attention for one query position, the G query heads of a KV head side by side:
// q [B, H, 1, hd]; k, v [B, Hkv, S, hd]; bias [Bb, Hkv or 1, G or 1, 1, S'] or undefined.
std::pair<at::Tensor, at::Tensor> atenAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                const at::Tensor& bias, double scale) {
    const int64_t b = q.size(0), h = q.size(1), hd = q.size(3), hkv = k.size(1), g = h / hkv;
    at::Tensor scores = at::matmul(q.reshape({b, hkv, g, hd}), k.transpose(-1, -2)) * scale;   // [B, Hkv, G, S]
    if (bias.defined()) scores.narrow(-1, 0, bias.size(-1)).add_(bias.squeeze(3));
    const at::Tensor probs = at::softmax(scores, -1);
    return {at::matmul(probs, v).reshape({b, h, hd}), probs};
}

} // namespace

class TestDecodeOps : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() { setThreads(2); }

    void rmsNormMatchesTheFormula() {
        at::manual_seed(1);
        for (int64_t d : {1, 7, 64, 2048}) {
            const at::Tensor x = at::randn({3, 5, d}) * 4, w = at::randn({d});
            const at::Tensor want = w * (x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-5));
            QVERIFY2(maxRelative(rmsNorm(x, w, 1e-5), want) < 1e-6, qPrintable(QString("d=%1").arg(d)));
            // A strided input (a column block) gives the same as its contiguous copy.
            const at::Tensor wide = at::randn({4, 2 * d});
            QVERIFY(at::equal(rmsNorm(wide.narrow(1, d, d), w, 1e-6), rmsNorm(wide.narrow(1, d, d).contiguous(), w, 1e-6)));
        }
    }

    void rotateHalfIsTheAtenFormulaBitForBit() {
        at::manual_seed(2);
        const int64_t hd = 16, t = 5;
        const at::Tensor angles = at::randn({t, hd / 2}) * 3;
        const at::Tensor emb = at::cat({angles, angles}, -1), cos = emb.cos(), sin = emb.sin();
        // q as the decoder makes it: [B, T, H, hd] transposed to [B, H, T, hd] (not contiguous).
        const at::Tensor q = at::randn({2, t, 3, hd}).transpose(1, 2);
        const int64_t half = hd / 2;
        const at::Tensor want = q * cos + at::cat({-q.narrow(-1, half, half), q.narrow(-1, 0, half)}, -1) * sin;
        const at::Tensor got = rotateHalf(q, cos, sin);
        QVERIFY(got.is_contiguous());
        QVERIFY(at::equal(got, want));
        // Tables that broadcast otherwise ([1, hd] for every position) go through ATen, same result.
        const at::Tensor c1 = cos.narrow(0, 0, 1), s1 = sin.narrow(0, 0, 1);
        QVERIFY(at::equal(rotateHalf(q, c1, s1),
                          q * c1 + at::cat({-q.narrow(-1, half, half), q.narrow(-1, 0, half)}, -1) * s1));
        // Rotating by -theta undoes it (to rounding).
        QVERIFY(maxRelative(rotateHalf(got, cos, -sin), q) < 1e-5);
    }

    void decodeAttentionMatchesAten() {
        at::manual_seed(3);
        struct Shape { int64_t b, h, hkv, hd, s; };
        for (Shape sh : {Shape{1, 4, 4, 8, 1}, Shape{2, 8, 2, 16, 37}, Shape{3, 32, 4, 64, 600}, Shape{1, 6, 1, 12, 9}}) {
            const int64_t g = sh.h / sh.hkv;
            const at::Tensor q = at::randn({sh.b, sh.h, 1, sh.hd});
            // Keys and values as the cache holds them: the first S rows of a longer buffer.
            const at::Tensor k = at::randn({sh.b, sh.hkv, sh.s + 5, sh.hd}).narrow(2, 0, sh.s);
            const at::Tensor v = at::randn({sh.b, sh.hkv, sh.s + 5, sh.hd}).narrow(2, 0, sh.s);
            const double scale = 1.0 / std::sqrt(double(sh.hd));
            const int64_t sBias = std::max<int64_t>(1, sh.s / 2);
            for (const at::Tensor& bias : {at::Tensor(), at::randn({1, 1, 1, 1, sBias}), at::randn({sh.b, sh.hkv, g, 1, sBias}),
                                           at::randn({sh.b, 1, g, 1, sh.s})}) {
                QVERIFY(decodeAttentionTakes(q, k, v, bias));
                at::Tensor probs;
                const at::Tensor out = decodeAttention(q, k, v, bias, scale, &probs);
                auto [wantOut, wantProbs] = atenAttention(q, k, v, bias, scale);
                const QString what = QString("b %1 h %2 hkv %3 hd %4 s %5, bias %6")
                                         .arg(sh.b).arg(sh.h).arg(sh.hkv).arg(sh.hd).arg(sh.s).arg(bias.defined() ? bias.dim() : 0);
                QVERIFY2(maxRelative(out, wantOut) < 1e-5, qPrintable(what));
                QVERIFY2(maxRelative(probs, wantProbs) < 1e-5, qPrintable(what));
                QCOMPARE(probs.sizes(), wantProbs.sizes());
            }
        }
    }

    void decodeAttentionRowsAreIndependent() {
        // Row 1 of a batch gives the bits it gives alone, on one thread or two: the pair and the
        // atlas rely on a row not depending on its batch.
        at::manual_seed(4);
        const at::Tensor q = at::randn({2, 32, 1, 64}), k = at::randn({2, 4, 600, 64}), v = at::randn({2, 4, 600, 64});
        const at::Tensor batched = decodeAttention(q, k, v, {}, 0.125, nullptr);
        setThreads(1);
        const at::Tensor alone = decodeAttention(q.narrow(0, 1, 1), k.narrow(0, 1, 1), v.narrow(0, 1, 1), {}, 0.125, nullptr);
        setThreads(2);
        QVERIFY(at::equal(batched.narrow(0, 1, 1), alone));
    }

    void otherInputsAreLeftToAten() {
        const at::Tensor q = at::randn({1, 4, 2, 8}), k = at::randn({1, 4, 3, 8});
        QVERIFY(!decodeAttentionTakes(q, k, k, {}));                                  // two query positions
        QVERIFY(!decodeAttentionTakes(q.narrow(2, 0, 1).to(at::kDouble), k, k, {}));  // not float32
        QVERIFY(!decodeAttentionTakes(q.narrow(2, 0, 1), k.transpose(2, 3), k, {}));  // key rows not contiguous
    }
};

QTEST_GUILESS_MAIN(TestDecodeOps)
#include "test_decode_ops.moc"
