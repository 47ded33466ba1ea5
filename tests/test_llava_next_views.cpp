// LLaVA-NeXT's one painted map over several views, on tiny-llava-next: a rectangle painted on the
// picture reaches exactly the cells whose pixels it covers in the base view and in the crops
// (hand tables for the 500 x 300 gradient, whose crop columns are unpadded, and the 240 x 401
// stripes, whose rows are), never a newline token; the mask forms that address the picture; and
// steering: a zero plan is bit-identical to none, a vector from two images changes the answer,
// two images of different layouts give a base-view mean or a clear refusal.
#include "TestSupport.h"
#include "Error.h"
#include "cache/SpanCells.h"
#include "generate/Session.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "steer/Recipes.h"
#include "steer/SideBySide.h"
#include "steer/SpanMask.h"
#include "steer/SteeringPlan.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include <set>

#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

namespace {

// The span tokens of cells rows r0..r1 x cols c0..c1 of a view starting at `offset` with `stride` tokens a row.
std::set<int64_t> block(int64_t offset, int stride, int r0, int r1, int c0, int c1) {
    std::set<int64_t> tokens;
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c) tokens.insert(offset + int64_t(r) * stride + c);
    return tokens;
}

std::set<int64_t> paintedTokens(const at::Tensor& perToken) {
    const at::Tensor idx = at::nonzero(perToken).reshape({-1});
    std::set<int64_t> out;
    for (int64_t i = 0; i < idx.numel(); ++i) out.insert(idx[i].item<int64_t>());
    return out;
}

std::set<int64_t> united(std::set<int64_t> a, const std::set<int64_t>& b) {
    a.insert(b.begin(), b.end());
    return a;
}

} // namespace

class TestLlavaNextViews : public QObject {
    Q_OBJECT

    std::shared_ptr<Model> model_;
    ImageU8 gradient_, stripes_, square_;

    VisualSpan spanOf(const ImageU8& image) { return buildPrompt(*model_, "Describe the image.", false, &image).span; }

private slots:
    void initTestCase() {
        model_ = loadModel(referenceDir() + "/tiny-llava-next");
        gradient_ = loadImage(referenceDir() + "/images/gradient_500x300.png");
        stripes_ = loadImage(referenceDir() + "/images/stripes_240x401.png");
        square_ = loadImage(referenceDir() + "/images/red_square_336x336.png");
    }

    void spansCarryTheViews() {
        const VisualSpan g = spanOf(gradient_);
        QCOMPARE(g.length, int64_t(1560));
        QCOMPARE(g.grid(), (PatchGrid{24, 40}));   // the crops' unpadded grid: what maps are painted on
        QCOMPARE(g.views.size(), size_t(2));
        QCOMPARE(g.views[0].name, std::string("base"));
        QCOMPARE(g.views[1].offset, int64_t(576));
        QCOMPARE(g.views[1].rowStride, 41);
        QCOMPARE(spanOf(stripes_).grid(), (PatchGrid{40, 24}));
        QCOMPARE(spanOf(square_).grid(), (PatchGrid{24, 24}));
        QCOMPARE(imageSpan(*model_, gradient_).grid(), g.grid());
        QCOMPARE(g.pictureWidth, 500);
        QCOMPARE(g.pictureHeight, 300);
    }

    void rectangleOnTheGradientReachesEachView() {
        // 500 x 300 -> fitted 560 x 336 in 672 x 336, 4 padding columns dropped each side: crop
        // cells are 12.5 x 12.5 picture pixels, base cells 20.83 x 12.5.
        const VisualSpan span = spanOf(gradient_);
        const at::Tensor map = loadSpanMask("px:100,60,200,150", span);
        // Crop cells under x 100..200, y 60..150: columns 8-15, rows 4-11 (y 50..150 once painted).
        QCOMPARE(paintedTokens(map.reshape({-1})), block(0, 40, 4, 11, 8, 15));
        // Base cells under x 100..200, y 50..150: columns 4-9 (83.3..208.3), rows 4-11.
        const std::set<int64_t> expected = united(block(0, 24, 4, 11, 4, 9), block(576, 41, 4, 11, 8, 15));
        QCOMPARE(paintedTokens(strengthPerToken(span, map)), expected);
        // The same cells named in the crops view.
        QVERIFY(at::equal(loadSpanMask("view:crops:4,8,11,15", span), map));
    }

    void rectangleOnTheStripesReachesEachView() {
        // 240 x 401 -> fitted 336 x 562 in 336 x 672 (55 px above), 4 padding rows dropped each
        // end: crop row r covers picture rows (1 + 14 r) / 562 .. (15 + 14 r) / 562 of the height.
        const VisualSpan span = spanOf(stripes_);
        const at::Tensor map = loadSpanMask("px:60,100,120,200", span);
        // x 60..120 of 240: crop columns 6-11; y 100..200 of 401: crop rows 9-19.
        QCOMPARE(paintedTokens(map.reshape({-1})), block(0, 24, 9, 19, 6, 11));
        // Painted: x 0.25..0.5, y 127/562..281/562 of the picture -> base columns 6-11, rows 5-11.
        const std::set<int64_t> expected = united(block(0, 24, 5, 11, 6, 11), block(576, 25, 9, 19, 6, 11));
        QCOMPARE(paintedTokens(strengthPerToken(span, map)), expected);
    }

    void newlinesAreNeverPainted() {
        for (const ImageU8* image : {&gradient_, &stripes_}) {
            const VisualSpan span = spanOf(*image);
            const at::Tensor all = strengthPerToken(span, at::ones({span.gridHeight, span.gridWidth}));
            const SpanView& crops = span.views.back();
            QCOMPARE(all.sum().item<double>(), double(576 + crops.rows * crops.cols));
            for (int r = 0; r < crops.rows; ++r) QCOMPARE(all[crops.offset + int64_t(r) * crops.rowStride + crops.cols].item<float>(), 0.0f);
            // Every view's map reads back from the tokens.
            QCOMPARE(viewMap(span, all, 0).sizes().vec(), (std::vector<int64_t>{24, 24}));
            QCOMPARE(viewMap(span, all, 1).sum().item<double>(), double(crops.rows * crops.cols));
        }
    }

    void rectAddressesTheBaseGrid() {
        // rect: keeps LLaVA-1.5's meaning, the base view's 24 x 24 cells: on the gradient base
        // columns 4-9 are picture x 83.3..208.3, which crop columns 6-16 cover.
        const VisualSpan span = spanOf(gradient_);
        const at::Tensor map = loadSpanMask("rect:4,4,11,9", span);
        QCOMPARE(paintedTokens(map.reshape({-1})), block(0, 40, 4, 11, 6, 16));
        const std::set<int64_t> reached = paintedTokens(strengthPerToken(span, map));
        for (int64_t t : block(0, 24, 4, 11, 4, 9)) QVERIFY(reached.count(t));
        QVERIFY(at::equal(loadSpanMask("view:base:4,4,11,9", span), map));
    }

    void badPictureMasksAreRefusedClearly() {
        const VisualSpan span = spanOf(gradient_);
        QVERIFY(errorOf([&] { loadSpanMask("px:0,0,501,10", span); }).find("500x300") != std::string::npos);
        QVERIFY(errorOf([&] { loadSpanMask("view:tiles:0,0,1,1", span); }).find("base (24x24), crops (24x40)") != std::string::npos);
        QVERIFY(errorOf([&] { loadSpanMask("view:crops:0,0,24,1", span); }).find("24x40") != std::string::npos);
        QVERIFY(errorOf([&] { loadSpanMask("rect:0,0,24,0", span); }).find("base view") != std::string::npos);
        // A sliver whose crops unpad to no cells: refused by name, never a map on an empty grid.
        ImageU8 sliver(1, 1000);
        QVERIFY(errorOf([&] { spanOf(sliver); }).find("1x1000 picture keeps no crop cells once unpadded (72x0)") != std::string::npos);
        VisualSpan plain;
        plain.gridHeight = plain.gridWidth = 24;
        QVERIFY(errorOf([&] { loadSpanMask("px:0,0,10,10", plain); }).find("rect:") != std::string::npos);
    }

    void zeroPlanIsBitIdentical() {
        Session session(model_);
        session.prefill(buildPrompt(*model_, "Describe the image.", false, &gradient_), 12);
        const VisualSpan& span = session.snapshot().visualSpan;
        SteeringPlan plan;
        plan.op = SteeringOperator::Ablate;
        plan.strength = at::zeros({span.gridHeight, span.gridWidth});
        const SteeredCache steered = applyPlan(session, plan);
        for (int l = 0; l < 3; ++l) {
            QVERIFY(at::equal(steered.cache.keys(l), session.snapshot().keys(l)));
            QVERIFY(at::equal(steered.cache.values(l), session.snapshot().values(l)));
        }
        GenerationOptions gen;
        gen.maxNewTokens = 12;
        gen.stopAtEos = false;
        const GenerationPair pair = decodeSideBySide(session, steered, gen);
        QCOMPARE(pair.steered.ids, pair.unsteered.ids);
    }

    void imagePairVectorChangesTheAnswer() {
        ImageU8 inverted = gradient_;
        for (uint8_t& v : inverted.rgb) v = uint8_t(255 - v);
        const SteeringVectors v = extractImagePair(model_, "Describe the image.", inverted, gradient_, ExtractOptions{});
        Session session(model_);
        session.prefill(buildPrompt(*model_, "Describe the image.", false, &gradient_), 12);
        const VisualSpan& span = session.snapshot().visualSpan;
        SteeringPlan plan;
        plan.vectors = v;
        plan.strength = loadSpanMask("px:0,0,500,300", span);
        plan.ck = {0.0};
        plan.cv = {8.0};
        GenerationOptions gen;
        gen.maxNewTokens = 12;
        gen.stopAtEos = false;
        const GenerationPair steered = decodeSideBySide(session, applyPlan(session, plan), gen);
        QVERIFY(steered.steered.ids != steered.unsteered.ids);
        // Only cells moved: the newline tokens' cache is untouched.
        const SteeredCache edited = applyPlan(session, plan);
        const SpanView& crops = span.views.back();
        const int64_t newline = span.start + crops.offset + crops.cols;
        QVERIFY(at::equal(edited.cache.values(1).narrow(2, newline, 1), session.snapshot().values(1).narrow(2, newline, 1)));
        QVERIFY(!at::equal(edited.cache.values(1).narrow(2, newline - 1, 1), session.snapshot().values(1).narrow(2, newline - 1, 1)));
    }

    void imagesOfDifferentLayoutsAlignOnTheBaseView() {
        // The gradient (1 x 2 crops, 24 x 40) against the stripes (2 x 1 crops, 40 x 24): a mean
        // vector over the base view both share; per-position vectors are refused with both layouts named.
        const SteeringVectors mean = extractImagePair(model_, "Describe the image.", gradient_, stripes_, ExtractOptions{});
        QCOMPARE(mean.keys[0].dim(), int64_t(2));
        ExtractOptions perPosition;
        perPosition.perPosition = true;
        const std::string refusal = errorOf([&] { extractImagePair(model_, "Describe the image.", gradient_, stripes_, perPosition); });
        QVERIFY2(refusal.find("base 24x24 + crops 24x40") != std::string::npos && refusal.find("crops 40x24") != std::string::npos,
                 refusal.c_str());
    }
};

QTEST_GUILESS_MAIN(TestLlavaNextViews)
#include "test_llava_next_views.moc"
