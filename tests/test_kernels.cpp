// The CPU matmul kernels (core/kernels): the skinny and panel kernels against a float64 x · Wᵀ on
// the widened weights, for f32/f16/bf16 weights, on EVERY instruction set this CPU has (so the
// portable fallback and the AVX2 path are tested on an AVX-512 machine too); strided operands;
// the exact element conversions; argmax against at::argmax; attention's softmax and weighted sum
// against double sums; ISA selection; one thread against two.
#include "TestSupport.h"
#include "Runtime.h"
#include "ThreadPool.h"
#include "kernels/KernelTable.h"
#include "kernels/Kernels.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::kernels;

namespace {

using KernelFn = void (*)(const float*, int64_t, int64_t, const WeightView&, float*, int64_t);

const WeightType kTypes[] = {WeightType::F32, WeightType::F16, WeightType::BF16};
// K values with every tail length of the 8- and 16-wide paths, and long rows.
const int64_t kCols[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 100, 257, 4096};
const int64_t kRows[] = {1, 5, 17, 33, 100};

const char* typeName(WeightType t) { return t == WeightType::F32 ? "f32" : t == WeightType::F16 ? "f16" : "bf16"; }
at::ScalarType scalarType(WeightType t) {
    return t == WeightType::F32 ? at::kFloat : t == WeightType::F16 ? at::kHalf : at::kBFloat16;
}

// The ISAs this CPU can run, best first.
std::vector<Isa> supportedIsas() {
    std::vector<Isa> isas;
    for (Isa isa : {Isa::Avx512, Isa::Avx2, Isa::Portable})
        if (static_cast<int>(isa) >= static_cast<int>(bestIsa())) isas.push_back(isa);
    return isas;
}

// Puts the active ISA back when a test leaves (also on a failed QVERIFY's early return).
struct IsaRestorer {
    Isa saved = activeIsa();
    ~IsaRestorer() { forceIsa(saved); }
};

// The padding around each operand, to test the strides: x rows of cols + xPad floats; y rows of
// yOffset + rows + yPad floats with the result at column yOffset; W rows of cols + wPad elements.
struct Layout {
    int64_t xPad = 0, yOffset = 0, yPad = 0, wPad = 0;
};

constexpr float kSentinel = -777.25f;   // fills y's columns the kernel must not touch

// The worst error seen, in units of the tolerance's scale (reported at the end).
double worstLambda = 0.0;

// Runs `kernel` for y = x · Wᵀ (x [m, cols] f32, W [rows, cols] of `type`) on every supported ISA
// and compares with float64 on the same (widened) weights. Tolerance: the probabilistic bound for a
// float32 dot product of K terms in any summation order (Higham & Mary 2019),
//   |err| <= lambda * sqrt(K) * u * sum_k |x_k w_k|,   u = 2^-24,
// which with lambda = 8 fails by chance with probability < 2K exp(-lambda^2 / 2) ~ 1e-10 per
// element; a lost or doubled term, a wrong stride or a wrong tail breaks it by orders of magnitude.
// Returns "" when every ISA passes, else what went wrong.
std::string checkCase(KernelFn kernel, WeightType type, int64_t m, int64_t rows, int64_t cols, Layout l = {}) {
    const at::Tensor x = at::randn({m, cols + l.xPad});
    const at::Tensor w = at::randn({rows, cols + l.wPad}).to(scalarType(type));
    const at::Tensor xD = x.narrow(1, 0, cols).to(at::kDouble);
    const at::Tensor wD = w.narrow(1, 0, cols).to(at::kDouble);
    const at::Tensor want = xD.matmul(wD.t());
    const double scale = 1.0 / (16777216.0) * std::sqrt(static_cast<double>(cols));
    const at::Tensor tolerance = xD.abs().matmul(wD.abs().t()) * (8.0 * scale);
    const WeightView view{w.data_ptr(), type, rows, cols, cols + l.wPad};
    const int64_t yStride = l.yOffset + rows + l.yPad;

    IsaRestorer restore;
    for (Isa isa : supportedIsas()) {
        forceIsa(isa);
        at::Tensor y = at::full({m, yStride}, kSentinel);
        kernel(x.data_ptr<float>(), m, x.stride(0), view, y.data_ptr<float>() + l.yOffset, yStride);
        const at::Tensor got = y.narrow(1, l.yOffset, rows).to(at::kDouble);
        const at::Tensor err = (got - want).abs();
        std::ostringstream what;
        what << isaName(isa) << " " << typeName(type) << " m=" << m << " rows=" << rows << " cols=" << cols
             << " pads x/y/w=" << l.xPad << "/" << l.yPad << "/" << l.wPad << ": ";
        if (!err.le(tolerance).all().item<bool>())   // also false for NaN
            return what.str() + "max error " + std::to_string(err.max().item<double>()) + " over tolerance";
        const at::Tensor outside = at::cat({y.narrow(1, 0, l.yOffset), y.narrow(1, l.yOffset + rows, l.yPad)}, 1);
        if (!outside.eq(kSentinel).all().item<bool>()) return what.str() + "wrote outside its columns";
        const at::Tensor lambda = err / (xD.abs().matmul(wD.abs().t()) * scale);
        worstLambda = std::max(worstLambda, lambda.max().item<double>());
    }
    return "";
}

// Bitwise equality, except that any NaN equals any NaN (hardware conversions may quiet a NaN).
bool sameFloat(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;
}

} // namespace

class TestKernels : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        // KVSTEER_ISA is read once, on first use: set it before any kernel runs, then check it
        // took effect (capped to what the CPU has). The tests below force each ISA themselves.
        qputenv("KVSTEER_ISA", "avx2");
        QCOMPARE(activeIsa(), static_cast<int>(bestIsa()) > static_cast<int>(Isa::Avx2) ? bestIsa() : Isa::Avx2);
        forceIsa(bestIsa());
        // As in the application: ATen's pool does the threading, OpenBLAS runs single-threaded
        // inside it (Runtime.h).
        setThreads(2);
        qInfo("best ISA: %s", isaName(bestIsa()));
    }

    void cleanupTestCase() { qInfo("worst error: %.2f x sqrt(K) u sum|x w| (tolerance 8)", worstLambda); }

    void halfToFloatIsExactForEveryValue() {
        for (uint32_t bits = 0; bits < 65536; ++bits) {
            const float want = static_cast<float>(c10::Half(static_cast<uint16_t>(bits), c10::Half::from_bits()));
            const float got = halfToFloat(static_cast<uint16_t>(bits));
            QVERIFY2(sameFloat(got, want), qPrintable(QString("half 0x%1").arg(bits, 4, 16, QChar('0'))));
        }
    }

    void bfloat16ToFloatIsExactForEveryValue() {
        for (uint32_t bits = 0; bits < 65536; ++bits) {
            const float want = static_cast<float>(c10::BFloat16(static_cast<uint16_t>(bits), c10::BFloat16::from_bits()));
            const float got = bfloat16ToFloat(static_cast<uint16_t>(bits));
            QVERIFY2(sameFloat(got, want), qPrintable(QString("bfloat16 0x%1").arg(bits, 4, 16, QChar('0'))));
        }
    }

    void widenRowMatchesScalarOnEveryIsa() {
        // Random bit patterns (every class of value: subnormals, inf, NaN), every tail length.
        at::manual_seed(1);
        const at::Tensor bits = at::randint(0, 65536, {300}, at::kInt);
        std::vector<uint16_t> halves(300);
        for (int i = 0; i < 300; ++i) halves[i] = static_cast<uint16_t>(bits[i].item<int>());
        const at::Tensor floats = at::randn({300});
        IsaRestorer restore;
        for (Isa isa : supportedIsas()) {
            forceIsa(isa);
            for (int64_t n : {0, 1, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100, 257}) {
                std::vector<float> got(n + 1, kSentinel);
                widenRow(halves.data(), WeightType::F16, n, got.data());
                for (int64_t i = 0; i < n; ++i) QVERIFY2(sameFloat(got[i], halfToFloat(halves[i])), isaName(isa));
                widenRow(halves.data(), WeightType::BF16, n, got.data());
                for (int64_t i = 0; i < n; ++i) QVERIFY2(sameFloat(got[i], bfloat16ToFloat(halves[i])), isaName(isa));
                widenRow(floats.data_ptr<float>(), WeightType::F32, n, got.data());
                for (int64_t i = 0; i < n; ++i) QVERIFY(sameFloat(got[i], floats.data_ptr<float>()[i]));
                QCOMPARE(got[n], kSentinel);   // nothing written past n
            }
        }
    }

    void argmaxEqualsAtenOnEveryIsa() {
        // at::argmax is the rule: the first maximum, a NaN the largest. Ties (values drawn from a
        // few integers), -0 against +0, infinities, NaNs of either sign, every block and tail length.
        at::manual_seed(3);
        std::vector<std::vector<float>> cases = {{-0.0f, 0.0f}, {0.0f, -0.0f}, {-1, -2, -0.5f}, {1, NAN, 5, NAN}, {INFINITY, 1, INFINITY},
                                                 {-INFINITY, -INFINITY}, {1, -NAN}, {1e-45f, -1e-45f, 0}, {-3e38f, -INFINITY}};
        for (int64_t n : {1, 7, 255, 256, 257, 511, 513, 32064}) {
            const at::Tensor few = at::randint(-3, 4, {n}).to(at::kFloat), wide = at::randn({n});
            cases.emplace_back(few.data_ptr<float>(), few.data_ptr<float>() + n);
            cases.emplace_back(wide.data_ptr<float>(), wide.data_ptr<float>() + n);
            cases.push_back(cases.back());
            cases.back()[size_t(n) / 2] = NAN;   // a NaN anywhere wins over every number
        }
        IsaRestorer restore;
        for (Isa isa : supportedIsas()) {
            forceIsa(isa);
            for (const std::vector<float>& c : cases) {
                const at::Tensor t = at::from_blob(const_cast<float*>(c.data()), {int64_t(c.size())}, at::kFloat);
                QVERIFY2(argmax(c.data(), int64_t(c.size())) == at::argmax(t).item<int64_t>(),
                         qPrintable(QString("%1, %2 values").arg(isaName(isa)).arg(c.size())));
            }
        }
    }

    void softmaxMatchesDoubleOnEveryIsa() {
        // Against exp and the sum in double: every probability within 2e-6 of its own size (the
        // polynomial exp is about an ulp off, the float sum a few) besides the rounding of the
        // float x - max; where e^(x - max) is below
        // float's normals, 0 or a subnormal; a masked (-inf) score exactly 0; a NaN score spoils
        // the whole row rather than giving a wrong distribution quietly.
        at::manual_seed(4);
        IsaRestorer restore;
        for (Isa isa : supportedIsas()) {
            forceIsa(isa);
            for (int64_t n : {1, 5, 8, 15, 16, 17, 33, 600, 4097}) {
                const at::Tensor scores = at::randn({n}) * 30;
                std::vector<float> p(scores.data_ptr<float>(), scores.data_ptr<float>() + n);
                if (n > 2) p[1] = -INFINITY;
                const std::vector<float> x = p;
                softmax(p.data(), n);
                const double max = *std::max_element(x.begin(), x.end());
                double sum = 0;
                for (float v : x) sum += std::exp(double(v) - max);
                for (int64_t s = 0; s < n; ++s) {
                    const double expected = std::exp(double(x[size_t(s)]) - max) / sum;
                    const QString where = QString("%1, n %2, s %3: %4 against %5").arg(isaName(isa)).arg(n).arg(s).arg(p[size_t(s)]).arg(expected);
                    if (x[size_t(s)] == -INFINITY) QVERIFY2(p[size_t(s)] == 0.0f, qPrintable(where));
                    else if (expected < 1.2e-38) QVERIFY2(p[size_t(s)] >= 0.0f && p[size_t(s)] < 1.2e-38f, qPrintable(where));
                    else   // and x - max rounded to float: its half ulp, relative, grows with |x - max|
                        QVERIFY2(std::abs(p[size_t(s)] - expected) <= (2e-6 + 6e-8 * (max - x[size_t(s)])) * expected, qPrintable(where));
                }
            }
            std::vector<float> same(37, 2.5f);
            softmax(same.data(), 37);
            for (float v : same) QVERIFY(std::abs(v - 1.0f / 37) <= 1e-7f);
            std::vector<float> withNan = {1.0f, NAN, 2.0f};
            softmax(withNan.data(), 3);
            for (float v : withNan) QVERIFY2(std::isnan(v), isaName(isa));
        }
    }

    void weightedSumMatchesDoubleOnEveryIsa() {
        // out = p · v over rows vStride apart, for head widths with every tail of the 8- and
        // 16-wide paths and more than one pass of accumulators; each output within 1e-6 of
        // sum |p v| of the double sum.
        at::manual_seed(5);
        IsaRestorer restore;
        for (Isa isa : supportedIsas()) {
            forceIsa(isa);
            for (int64_t hd : {1, 8, 15, 16, 17, 64, 80, 128, 129, 200})
                for (int64_t n : {1, 7, 600}) {
                    const int64_t stride = hd + 3;
                    const at::Tensor p = at::rand({n}), v = at::randn({n, stride});
                    std::vector<float> out(size_t(hd) + 1, 42.0f);   // one past the end stays untouched
                    weightedSum(p.data_ptr<float>(), v.data_ptr<float>(), stride, n, hd, out.data());
                    for (int64_t i = 0; i < hd; ++i) {
                        double expected = 0, magnitude = 0;
                        for (int64_t s = 0; s < n; ++s) {
                            const double term = double(p[s].item<float>()) * v[s][i].item<float>();
                            expected += term;
                            magnitude += std::abs(term);
                        }
                        QVERIFY2(std::abs(out[size_t(i)] - expected) <= 1e-6 * magnitude + 1e-30,
                                 qPrintable(QString("%1, hd %2, n %3, i %4").arg(isaName(isa)).arg(hd).arg(n).arg(i)));
                    }
                    QCOMPARE(out[size_t(hd)], 42.0f);
                }
        }
    }

    void readWeightsGivesTheSameChecksumOnEveryIsa() {
        // The bench's read roofline: every byte of every row read, whatever the ISA, the row
        // length (tails of the 64-byte step and of a word), the stride or the thread split.
        at::manual_seed(6);
        struct Case {
            WeightType type;
            int64_t rows, cols, stride;
        };
        const std::vector<Case> cases = {{WeightType::F16, 3, 37, 37},      {WeightType::BF16, 5, 32, 40},
                                         {WeightType::F32, 7, 17, 17},      {WeightType::F32, 2, 1, 3},
                                         {WeightType::F16, 700, 1001, 1001}, {WeightType::F32, 300, 1030, 1100}};
        std::vector<at::Tensor> storage;
        std::vector<WeightView> parts;
        uint64_t expected = 0;
        for (const Case& c : cases) {
            const int64_t elementBytes = c.type == WeightType::F32 ? 4 : 2;
            storage.push_back(at::randint(0, 256, {c.rows * c.stride * elementBytes}, at::kByte));
            const uint8_t* bytes = storage.back().data_ptr<uint8_t>();
            for (int64_t r = 0; r < c.rows; ++r)   // the xor of the row's words, the last one zero-padded
                for (int64_t b = 0; b < c.cols * elementBytes; ++b)
                    expected ^= uint64_t(bytes[r * c.stride * elementBytes + b]) << (8 * (b % 8));
            parts.push_back({bytes, c.type, c.rows, c.cols, c.stride});
        }
        QVERIFY(expected != 0);
        IsaRestorer restore;
        for (Isa isa : supportedIsas()) {
            forceIsa(isa);
            QVERIFY2(readWeights(parts.data(), int(parts.size())) == expected, isaName(isa));
            QVERIFY2(readWeights(parts.data(), 1) != readWeights(parts.data() + 1, 1), isaName(isa));
        }
    }

    void skinnyMatchesReference() {
        at::manual_seed(2);
        for (WeightType type : kTypes)
            for (int64_t m = 1; m <= kSkinnyMaxRows; ++m)
                for (int64_t cols : kCols)
                    for (int64_t rows : kRows) {
                        const std::string err = checkCase(&skinnyMatmul, type, m, rows, cols);
                        QVERIFY2(err.empty(), err.c_str());
                    }
        // Many rows: several threads' chunks and a ragged last one.
        for (WeightType type : kTypes)
            for (int64_t m : {1, 3, 8})
                for (int64_t cols : {33, 257}) {
                    const std::string err = checkCase(&skinnyMatmul, type, m, 4099, cols);
                    QVERIFY2(err.empty(), err.c_str());
                }
        // More than kSkinnyMaxRows rows: the skinny kernel in blocks (the panel kernel's fallback
        // without sgemm).
        for (int64_t m : {9, 17}) {
            const std::string err = checkCase(&skinnyMatmul, WeightType::BF16, m, 33, 65);
            QVERIFY2(err.empty(), err.c_str());
        }
    }

    void panelMatchesReference() {
        at::manual_seed(3);
        for (WeightType type : kTypes) {
            for (int64_t m : {1, 9, 17, 64})
                for (int64_t cols : kCols)
                    for (int64_t rows : kRows) {
                        const std::string err = checkCase(&panelMatmul, type, m, rows, cols);
                        QVERIFY2(err.empty(), err.c_str());
                    }
            // A prompt-sized x; 300 rows of 4096 make several 2 MB panels and a ragged last one.
            for (int64_t cols : {17, 257, 4096})
                for (int64_t rows : {33, 300}) {
                    const std::string err = checkCase(&panelMatmul, type, 600, rows, cols);
                    QVERIFY2(err.empty(), err.c_str());
                }
        }
    }

    void matmulPicksByRowCount() {
        at::manual_seed(4);
        for (int64_t m : {1, 8, 9, 40}) {
            const std::string err = checkCase(&matmul, WeightType::F16, m, 70, 100);
            QVERIFY2(err.empty(), err.c_str());
        }
    }

    void stridedOperands() {
        // x rows longer than cols, y a column block [3, 3 + rows) of a wider output (the columns
        // around it must stay untouched), W rows longer than cols: each kernel, each dtype.
        at::manual_seed(5);
        const Layout layout{5, 3, 7, 3};
        for (WeightType type : kTypes)
            for (KernelFn kernel : {&skinnyMatmul, &panelMatmul, &matmul})
                for (int64_t m : {1, 3, 8, 9, 70})
                    for (int64_t cols : {17, 100}) {
                        const std::string err = checkCase(kernel, type, m, 33, cols, layout);
                        QVERIFY2(err.empty(), err.c_str());
                    }
    }

    void emptyShapes() {
        // cols == 0: an empty sum, zeros; rows == 0 or m == 0: nothing written.
        std::vector<uint16_t> w(4, 0);
        float y[6] = {1, 1, 1, 1, 1, 1};
        const float x[2] = {1, 1};
        matmul(x, 2, 0, WeightView{w.data(), WeightType::F16, 3, 0, 0}, y, 3);
        for (float v : y) QCOMPARE(v, 0.0f);
        y[0] = 5;
        matmul(x, 2, 1, WeightView{w.data(), WeightType::F16, 0, 1, 1}, y, 3);
        matmul(x, 0, 1, WeightView{w.data(), WeightType::F16, 3, 1, 1}, y, 3);
        QCOMPARE(y[0], 5.0f);
    }

    void isaSelection() {
        IsaRestorer restore;
        for (Isa isa : {Isa::Avx512, Isa::Avx2, Isa::Portable}) {
            forceIsa(isa);   // capped to what the CPU has
            const Isa want = static_cast<int>(isa) < static_cast<int>(bestIsa()) ? bestIsa() : isa;
            QCOMPARE(activeIsa(), want);
            Isa parsed = Isa::Portable;
            QVERIFY(detail::parseIsaName(isaName(isa), &parsed));   // the names round-trip
            QCOMPARE(parsed, isa);
        }
        forceIsa(Isa::Portable);
        QCOMPARE(activeIsa(), Isa::Portable);   // every CPU has the portable kernels
        Isa parsed = Isa::Portable;
        QVERIFY(detail::parseIsaName("AVX2", &parsed));
        QCOMPARE(parsed, Isa::Avx2);
        for (const char* bad : {"", "avx", "avx5120", "sse4", " avx2", "portable\n"})
            QVERIFY2(!detail::parseIsaName(bad, &parsed), bad);
        QVERIFY(!detail::parseIsaName(nullptr, &parsed));
    }

    void stackedEqualsPartByPart() {
        // A fused projection in one pass (skinny rows handed out as blocks to whichever thread is
        // free) gives each part's columns exactly the bits a matmul of that part alone gives, on
        // every ISA, on one thread and two; an empty part in the middle changes nothing.
        IsaRestorer restore;
        at::manual_seed(7);
        const at::Tensor x = at::randn({12, 300});
        const std::vector<int64_t> partRows = {700, 0, 33, 2000};
        std::vector<at::Tensor> parts;
        std::vector<WeightView> views;
        for (int64_t rows : partRows) {
            parts.push_back(at::randn({rows, 300}).to(at::kHalf));
            views.push_back(WeightView{parts.back().data_ptr(), WeightType::F16, rows, 300, 300});
        }
        const int64_t total = 2733;
        for (Isa isa : supportedIsas())
            for (int threads : {1, 2})
                for (int64_t m : {1, 2, 8, 12}) {
                    forceIsa(isa);
                    setThreads(threads);
                    at::Tensor stacked = at::full({m, total}, 7.0f), alone = at::full({m, total}, 7.0f);
                    matmulStacked(x.data_ptr<float>(), m, 300, views.data(), int(views.size()), stacked.data_ptr<float>(), total);
                    int64_t column = 0;
                    for (const WeightView& v : views) {
                        matmul(x.data_ptr<float>(), m, 300, v, alone.data_ptr<float>() + column, total);
                        column += v.rows;
                    }
                    QVERIFY2(at::equal(stacked, alone), qPrintable(QString("%1, %2 threads, m=%3").arg(isaName(isa)).arg(threads).arg(m)));
                }
        setThreads(2);
    }

    void twoThreadsMatchOne() {
        // Each output element is computed whole by one thread, with the same code whatever the
        // split, so the bits are the same on 1, 2 or 3 threads: skinny (m 1, 2), panel (m 64).
        at::manual_seed(6);
        const at::Tensor x = at::randn({64, 1024});
        const at::Tensor w = at::randn({1000, 1024}).to(at::kHalf);
        const WeightView view{w.data_ptr(), WeightType::F16, 1000, 1024, 1024};
        for (int64_t m : {1, 2, 64}) {
            setThreads(1);
            at::Tensor one = at::empty({m, 1000});
            matmul(x.data_ptr<float>(), m, 1024, view, one.data_ptr<float>(), 1000);
            for (int threads : {2, 3}) {
                setThreads(threads);
                QCOMPARE(poolThreads(), threads);
                at::Tensor many = at::empty({m, 1000});
                matmul(x.data_ptr<float>(), m, 1024, view, many.data_ptr<float>(), 1000);
                QVERIFY2(at::equal(one, many), qPrintable(QString("m=%1, %2 threads").arg(m).arg(threads)));
            }
        }
        setThreads(2);
    }
};

QTEST_GUILESS_MAIN(TestKernels)
#include "test_kernels.moc"
