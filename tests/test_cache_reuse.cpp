// Cache reuse must not change results (the classic complaint about resuming generate() from a
// cache): prefill L-1 + last token == full prefill; greedy with cache == greedy recomputing
// everything each step; resuming with only the new ids == resuming with the full sequence.
#include "TestSupport.h"
#include "Error.h"
#include "cache/KVCache.h"
#include "models/ModelRegistry.h"
#include "models/Prompt.h"
#include "generate/Session.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/equal.h>

#include <QtTest>

using namespace kvsteer;
using namespace kvsteer::test;

class TestCacheReuse : public QObject {
    Q_OBJECT

    std::shared_ptr<Model> model_;
    Prompt prompt_;

    // Logits of the last id and the cache, from one forward pass over all ids (no reuse).
    at::Tensor fullForward(const std::vector<int64_t>& ids, KVCache* cacheOut = nullptr) {
        const TextConfig& t = model_->config().text;
        KVCache cache(t.numLayers, 1, t.numKvHeads, t.headDim, static_cast<int64_t>(ids.size()), at::kFloat);
        at::Tensor features = prompt_.hasImage ? model_->encodePromptImage(prompt_).tokens : at::Tensor();
        at::Tensor hidden = model_->decoder().forward(model_->embedPrompt(ids, features), cache);
        if (cacheOut) *cacheOut = cache;
        return model_->decoder().logits(hidden.select(1, hidden.size(1) - 1)).squeeze(0);
    }

private slots:
    void initTestCase() {
        model_ = loadModel(referenceModelDir());
        const ImageU8 image = loadImage(referenceDir() + "/images/gradient_500x300.png");
        prompt_ = buildPrompt(*model_, "Describe the colors of this picture.", false, &image);
    }

    void prefillMinusOneThenLastEqualsFullPrefill() {
        Session session(model_);
        session.prefill(prompt_, 8);
        KVCache reused = session.snapshot().clone();
        at::Tensor a = session.feed(reused, {session.lastPromptToken()});
        KVCache full;
        at::Tensor b = fullForward(prompt_.ids, &full);
        QVERIFY(maxAbsDiff(a, b) <= 1e-4);
        QCOMPARE(a.argmax().item<int64_t>(), b.argmax().item<int64_t>());
        QCOMPARE(reused.size(), full.size());
        for (int l = 0; l < full.numLayers(); ++l) {
            QVERIFY(maxAbsDiff(reused.keys(l), full.keys(l)) <= 1e-4);
            QVERIFY(maxAbsDiff(reused.values(l), full.values(l)) <= 1e-4);
        }
    }

    void greedyWithAndWithoutCacheAgree() {
        Session session(model_);
        session.prefill(prompt_, 20);
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        const Generation cached = session.generate(gen);
        QCOMPARE(static_cast<int>(cached.ids.size()), 20);

        std::vector<int64_t> ids = prompt_.ids, uncached;
        for (int i = 0; i < 20; ++i) {
            const int64_t next = fullForward(ids).argmax().item<int64_t>();
            uncached.push_back(next);
            ids.push_back(next);
        }
        QCOMPARE(cached.ids, uncached);
    }

    void resumeWithNewOrFullIdsIsTheSame() {
        Session session(model_);
        session.prefill(prompt_, 16);
        const std::vector<int64_t> more = {session.lastPromptToken(), 450, 1967, 338};
        KVCache a = session.snapshot().clone(), b = session.snapshot().clone();
        at::Tensor onlyNew = session.feed(a, more);
        std::vector<int64_t> full(prompt_.ids.begin(), prompt_.ids.end() - 1);
        full.insert(full.end(), more.begin(), more.end());
        at::Tensor withPrefix = session.feed(b, full);
        QVERIFY(at::equal(onlyNew, withPrefix));
        QCOMPARE(a.size(), b.size());
        QCOMPARE(a.size(), static_cast<int64_t>(prompt_.ids.size() + 3));
        QCOMPARE(a.tokens(), b.tokens());
        // Feeding what the cache already holds is an error, not a silent no-op.
        QVERIFY_THROWS_EXCEPTION(Error, session.feed(b, full));
    }

    void truncateThenRefeedReproduces() {
        Session session(model_);
        session.prefill(prompt_, 16);
        KVCache cache = session.snapshot().clone();
        at::Tensor first = session.feed(cache, {session.lastPromptToken(), 450, 1967});
        cache.truncate(session.snapshot().size());
        QCOMPARE(cache.size(), session.snapshot().size());
        at::Tensor again = session.feed(cache, {session.lastPromptToken(), 450, 1967});
        QVERIFY(at::equal(first, again));
    }

    void growingPastCapacityKeepsContents() {
        Session session(model_);
        session.prefill(prompt_, 1);   // capacity = L + 1: decoding 10 tokens must grow the buffers
        const int64_t capacity = session.snapshot().capacity();
        GenerationOptions gen;
        gen.maxNewTokens = 10;
        gen.stopAtEos = false;
        const Generation grown = session.generate(gen);
        Session roomy(model_);
        roomy.prefill(prompt_, 64);
        QCOMPARE(grown.ids, roomy.generate(gen).ids);
        QVERIFY(capacity < static_cast<int64_t>(prompt_.ids.size()) + 10);
    }

    void cloneIsIndependent() {
        Session session(model_);
        session.prefill(prompt_, 4);
        KVCache copy = session.snapshot().clone();
        copy.keys(0).fill_(0);
        QVERIFY(!at::equal(copy.keys(0), session.snapshot().keys(0)));
        QVERIFY(at::equal(copy.values(0), session.snapshot().values(0)));
    }

    void cancelStopsBetweenSteps() {
        Session session(model_);
        session.prefill(prompt_, 20);
        std::atomic<bool> cancel{false};
        GenerationOptions gen;
        gen.maxNewTokens = 20;
        gen.stopAtEos = false;
        const Generation g = session.generate(gen, [&](const TokenEvent& ev) {
            if (ev.step == 2) cancel = true;
        }, &cancel);
        QVERIFY(g.cancelled);
        QCOMPARE(static_cast<int>(g.ids.size()), 3);
    }

    void prefillStopsWhenAsked() {
        // Asked after the image encoding and before each decoder layer (3 here): true at the
        // third question stops the prefill before layer 1, and nothing half-written is kept.
        Session session(model_);
        int asked = 0;
        QVERIFY(!session.prefill(prompt_, 8, [&] { return ++asked == 3; }));
        QCOMPARE(asked, 3);
        QVERIFY(!session.prefilled());
        QVERIFY_THROWS_EXCEPTION(kvsteer::Error, session.generate(GenerationOptions{}));
        // The same session prefills again when not stopped, exactly as a fresh one does.
        QVERIFY(session.prefill(prompt_, 8, [] { return false; }));
        Session fresh(model_);
        QVERIFY(fresh.prefill(prompt_, 8));
        QCOMPARE(session.snapshot().size(), fresh.snapshot().size());
        for (int l = 0; l < session.snapshot().numLayers(); ++l) {
            QVERIFY(at::equal(session.snapshot().keys(l), fresh.snapshot().keys(l)));
            QVERIFY(at::equal(session.snapshot().values(l), fresh.snapshot().values(l)));
        }
        // A prefilled session whose next prefill stops keeps nothing of the previous prompt.
        QVERIFY(!session.prefill(prompt_, 8, [] { return true; }));
        QVERIFY(!session.prefilled());
        QCOMPARE(session.snapshot().size(), int64_t(0));
    }

    void seededSamplingIsReproducible() {
        Session session(model_);
        session.prefill(prompt_, 12);
        GenerationOptions gen;
        gen.maxNewTokens = 12;
        gen.stopAtEos = false;
        gen.sampling.temperature = 1.0;
        gen.sampling.topP = 0.9;
        gen.sampling.topK = 50;
        gen.sampling.seed = 7;
        const Generation a = session.generate(gen), b = session.generate(gen);
        QCOMPARE(a.ids, b.ids);
        gen.sampling.seed = 8;
        QVERIFY(session.generate(gen).ids != a.ids);
    }
};

QTEST_GUILESS_MAIN(TestCacheReuse)
#include "test_cache_reuse.moc"
