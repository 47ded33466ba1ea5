// The studio's atlas, first run and Python hand-off, driven offscreen on the bundled demo model:
// a first run (no session, no image) opens the demo scene and Run yields red vs blue; the atlas
// fills a 4 × 3 grid (c_v 8, 16, 32, 64 × all / middle / 2-3), c_v 16 on all layers reads "blue"
// and is marked different, every cell at c_v >= 32 is degenerate; clicking a cell sets the
// Steering panel; a stroke marks the atlas out of date; Stop stops it (while queued and mid-run);
// File → Open Demo Scene brings the scene back; Copy as Python names the vector file, c_v 16 and
// the mask.
//
// torch (through the core) before any Qt header.
#include "TestSupport.h"

#include "studio/AtlasController.h"
#include "studio/MainWindow.h"
#include "studio/PythonHandOff.h"
#include "studio/PythonSnippet.h"
#include "studio/StudioActions.h"
#include "widgets/AtlasPanel.h"
#include "widgets/AtlasView.h"
#include "widgets/PatchCanvas.h"
#include "widgets/PromptPanel.h"
#include "widgets/SteeringPanel.h"
#include "worker/Worker.h"

#include "StudioTestSupport.h"

#include <QAction>
#include <QMap>
#include <QClipboard>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>


using namespace kvsteer;
using namespace kvsteer::ui;
using namespace kvsteer::test;

namespace {

// A plan for the Python hand-off on a model of `family` (no model needs loading: the snippet only
// reads the studio's model info): c_k 2, c_v 4 on every layer of 4, the grid's last cell painted
// (on a text prompt's strip, the default "last" token).
SnippetInputs snippetCase(const char* family, const char* promptTemplate, bool vision) {
    SnippetInputs in;
    in.model.family = QString::fromUtf8(family);
    in.model.name = QStringLiteral("tiny");
    in.model.directory = QStringLiteral("/models/tiny");
    in.model.layers = 4;
    in.model.hasVision = vision;
    in.model.promptTemplate = QString::fromUtf8(promptTemplate);
    in.vectorsPath = QStringLiteral("/tmp/v.safetensors");
    in.keySpace = QStringLiteral("post-rope");
    in.imageName = QStringLiteral("red.png");
    in.question = QStringLiteral("What color is the circle?");
    in.strength = vision ? StrengthGrid(16, 16) : StrengthGrid(1, 12);
    in.strength.values.back() = 1.0f;
    in.plan.ck = 2;
    in.plan.cv = 4;
    return in;
}

} // namespace

class TestStudioAtlas : public QObject {
    Q_OBJECT
    QTemporaryDir tmp_;
    std::unique_ptr<MainWindow> w_;

    // Clicks Run Atlas and waits for that atlas to finish.
    bool runAtlas(AtlasFinished* out) {
        QSignalSpy done(w_->atlas(), &AtlasController::finished);
        QPushButton* run = w_->atlasPanel()->runButton();
        if (!run->isEnabled()) return false;
        QTest::mouseClick(run, Qt::LeftButton);
        const quint64 id = w_->atlas()->activeId();
        for (int i = 0; i < 10; ++i) {
            if (done.isEmpty() && !done.wait(kRunTimeoutMs)) return false;
            while (!done.isEmpty()) {
                const AtlasFinished f = done.takeFirst().at(0).value<AtlasFinished>();
                if (f.atlasId != id) continue;
                *out = f;
                return true;
            }
        }
        return false;
    }

    void setGrid() {
        w_->atlasPanel()->setStrengths({8, 16, 32, 64});
        w_->atlasPanel()->setLayerRanges({QStringLiteral("all"), QStringLiteral("middle"), QStringLiteral("2-3")});
        w_->atlasPanel()->setMaxNewTokens(8);
    }

private Q_SLOTS:
    void initTestCase() {
        QStandardPaths::setTestModeEnabled(true);
        QVERIFY(tmp_.isValid());
        // A first run: the demo model, no image, no session, nothing to recover.
        StudioOptions o = studioOptions(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR), tmp_.filePath(QStringLiteral("recovery.kvsession")));
        o.demoScene = true;
        w_ = std::make_unique<MainWindow>(o);
        QSignalSpy vectorsReady(w_.get(), &MainWindow::vectorsChanged);
        QSignalSpy shown(w_.get(), &MainWindow::imageShown);
        w_->resize(1500, 950);
        w_->show();
        QVERIFY(QTest::qWaitForWindowExposed(w_.get()));
        QTRY_VERIFY_WITH_TIMEOUT(!shown.isEmpty(), kLoadTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(!vectorsReady.isEmpty(), kLoadTimeoutMs);
        QTRY_VERIFY_WITH_TIMEOUT(w_->canvas()->strength().paintedCells() == 100, kLoadTimeoutMs);
        w_->promptPanel()->setLive(false);
        QCOMPARE(w_->errorCount(), 0);
    }

    void firstRunOpensTheDemoScene() {
        QCOMPARE(w_->promptPanel()->prompt(), QStringLiteral("What color is the circle?"));
        QVERIFY(w_->promptPanel()->examples().contains(QStringLiteral("What shape is red?")));   // the demo's own questions
        QVERIFY(w_->imageReady());
        QCOMPARE(w_->vectors().recipe, QStringLiteral("image-pair"));
        const PlanSettings p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.op, QStringLiteral("add"));
        QCOMPARE(p.cv, 16.0);   // the shipped file's suggestion
        QCOMPARE(p.ck, 0.0);
        const StrengthGrid& s = w_->canvas()->strength();
        QCOMPARE(s.at(6, 9), 1.0f);    // rect:6,9,15,18, the circle
        QCOMPARE(s.at(15, 18), 1.0f);
        QCOMPARE(s.at(5, 9), 0.0f);
        RunFinished f;
        QVERIFY(runAndWait(w_.get(), 8, &f));
        QCOMPARE(f.unsteeredText, QStringLiteral("red"));
        QCOMPARE(f.steeredText, QStringLiteral("blue"));
    }

    void atlasFillsTheGridWithOutcomes() {
        setGrid();
        AtlasFinished f;
        QVERIFY(runAtlas(&f));
        QVERIFY(!f.cancelled);
        QCOMPARE(f.cells, 12);
        AtlasView* view = w_->atlasPanel()->view();
        QCOMPARE(view->rows(), 3);
        QCOMPARE(view->columns(), 4);
        QCOMPARE(view->finishedCells(), 12);
        QCOMPARE(view->info().unsteeredText, QStringLiteral("red"));
        QVERIFY(view->info().setsValues);
        QVERIFY(!view->info().setsKeys);
        const AtlasCellResult& flip = view->cell(1);   // row "all", c_v 16
        QCOMPARE(flip.layers, QStringLiteral("all"));
        QCOMPARE(flip.cv, 16.0);
        QCOMPARE(flip.text, QStringLiteral("blue"));
        QCOMPARE(flip.outcome, AtlasOutcome::Different);
        QCOMPARE(view->cell(0).outcome, AtlasOutcome::Same);   // c_v 8: still "red" on this image
        for (int i = 0; i < 12; ++i)
            if (view->cell(i).cv >= 32) QVERIFY2(view->cell(i).outcome == AtlasOutcome::Degenerate, qPrintable(view->cell(i).text));
        QCOMPARE(view->cell(2).text, QStringLiteral("blue blue blue no"));
        const QString tip = view->toolTipFor(2);
        QVERIFY2(tip.contains(QStringLiteral("blue blue blue no")) && tip.contains(QStringLiteral("a word repeated")), qPrintable(tip));
        QCOMPARE(view->cellRect(1).isEmpty(), false);
        QVERIFY(!view->stale());
        // The panel's plan (c_v 16, every layer) is the selected cell.
        QCOMPARE(view->cell(1).layerIds.size(), 0);
    }

    void clickingACellSetsTheSteeringPanel() {
        AtlasView* view = w_->atlasPanel()->view();
        const AtlasCellResult middle16 = view->cell(1 * 4 + 1);   // row "middle" (layers 1-2), c_v 16
        QCOMPARE(middle16.layerIds, QVector<int>({1, 2}));
        QSignalSpy changed(w_->steeringPanel(), &SteeringPanel::planChanged);
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, view->cellRect(middle16.index).center());
        QVERIFY(!changed.isEmpty());
        PlanSettings p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.cv, 16.0);
        QCOMPARE(p.layerFrom, 1);
        QCOMPARE(p.layerTo, 2);
        QVERIFY(!view->stale());   // the atlas's own axes moved, nothing it was made from
        const AtlasCellResult late64 = view->cell(2 * 4 + 3);   // "2-3", c_v 64
        QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, view->cellRect(late64.index).center());
        p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.cv, 64.0);
        QCOMPARE(p.layerFrom, 2);
        QVERIFY(p.layerTo == 3 || p.layerTo == -1);   // -1: to the last layer, 3
        // A setting the atlas does not sweep (the operator) makes it out of date.
        PlanSettings scale = p;
        scale.op = QStringLiteral("scale");
        w_->steeringPanel()->setPlanSettings(scale);
        QVERIFY(view->stale());
        w_->steeringPanel()->setPlanSettings(p);
    }

    void aStrokeInvalidatesTheAtlas() {
        AtlasFinished f;
        QVERIFY(runAtlas(&f));
        AtlasView* view = w_->atlasPanel()->view();
        QVERIFY(!view->stale());
        PatchCanvas* canvas = w_->canvas();
        canvas->setTool(PatchCanvas::Tool::Brush);
        canvas->setBrushSize(1);
        stroke(canvas, {{2, 2}, {3, 2}});
        QVERIFY(view->stale());
        QVERIFY(w_->atlasPanel()->status().contains(QStringLiteral("Out of date")));
        QCOMPARE(view->finishedCells(), 12);   // still shown, dimmed
        w_->undoStack()->undo();
    }

    void stopStopsTheAtlas() {
        // While queued: the worker is busy decoding a long run; Stop cancels the atlas before it starts.
        GenerationSettings g = w_->promptPanel()->generation();
        g.maxNewTokens = 64;
        g.stopAtEos = false;
        w_->promptPanel()->setGeneration(g);
        QSignalSpy done(w_->atlas(), &AtlasController::finished);
        QSignalSpy runDone(w_.get(), &MainWindow::runDone);
        w_->run();
        QTest::mouseClick(w_->atlasPanel()->runButton(), Qt::LeftButton);
        QVERIFY(w_->atlas()->running());
        QTest::mouseClick(w_->atlasPanel()->stopButton(), Qt::LeftButton);
        QVERIFY(!w_->atlas()->running());
        QVERIFY(w_->atlasPanel()->runButton()->isEnabled());
        QVERIFY(done.wait(kRunTimeoutMs));
        QVERIFY(done.last().at(0).value<AtlasFinished>().cancelled);
        QCOMPARE(done.last().at(0).value<AtlasFinished>().cells, 0);
        QTRY_VERIFY_WITH_TIMEOUT(!runDone.isEmpty(), kRunTimeoutMs);
        g.stopAtEos = true;
        w_->promptPanel()->setGeneration(g);

        // Mid-run: cancelled (thread-safely, from the worker's thread) as the first cell arrives, the
        // atlas ends at its next step with the first batch's finished cells only.
        w_->atlasPanel()->setStrengths({8, 16, 32, 64, 128, 256});
        w_->atlasPanel()->setLayerRanges({QStringLiteral("all"), QStringLiteral("early"), QStringLiteral("middle"), QStringLiteral("late")});
        Worker* worker = w_->worker();
        const auto cancelOnFirst = connect(
            worker, &Worker::atlasCell, worker, [worker](const AtlasCellResult& cell) { worker->cancelAtlasesBefore(cell.atlasId + 1); },
            Qt::DirectConnection);
        AtlasFinished f;
        QVERIFY(runAtlas(&f));
        disconnect(cancelOnFirst);
        QVERIFY(f.cancelled);
        QVERIFY2(f.cells >= 1 && f.cells < 24, qPrintable(QString::number(f.cells)));
        QVERIFY(w_->atlasPanel()->runButton()->isEnabled());
        setGrid();
    }

    void copyAsPythonNamesTheVectorsStrengthAndMask() {
        QSignalSpy ready(w_.get(), &MainWindow::vectorsChanged);
        w_->actions()->openDemoScene->trigger();   // File → Open Demo Scene: mask, question and the file's suggestions back
        QVERIFY(ready.wait(kLoadTimeoutMs));
        QCOMPARE(w_->canvas()->strength().paintedCells(), 100);
        QCOMPARE(w_->steeringPanel()->planSettings().layerFrom, 0);
        QCOMPARE(w_->promptPanel()->prompt(), QStringLiteral("What color is the circle?"));
        const PlanSettings p = w_->steeringPanel()->planSettings();
        QCOMPARE(p.cv, 16.0);
        QCOMPARE(p.layerTo, -1);
        w_->actions()->copyPython->trigger();
        const QString py = QApplication::clipboard()->text();
        QVERIFY2(py.contains(QStringLiteral(KVSTEER_STUDIO_DEMO_VECTORS)), qPrintable(py));
        QVERIFY2(py.contains(QStringLiteral("ck, cv = 0, 16")), qPrintable(py));
        QVERIFY2(py.contains(QStringLiteral("mask[6:16, 9:19] = 1")), qPrintable(py));
        QVERIFY(py.contains(QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR)));
        QVERIFY(py.contains(QStringLiteral("USER: <image>\\nWhat color is the circle? ASSISTANT:")));
        QVERIFY(!py.contains(QStringLiteral("NotImplementedError")));
        // An operator a few lines cannot express is said so, not emitted wrong.
        SnippetInputs in;
        in.model = w_->modelInfo();
        in.plan = p;
        in.plan.op = QStringLiteral("prerope");
        in.strength = w_->canvas()->strength();
        const QString refused = pythonSnippet(in);
        QVERIFY(refused.contains(QStringLiteral("raise NotImplementedError")));
        QVERIFY(refused.contains(QStringLiteral("'prerope' operator")));
        QVERIFY(!refused.contains(QStringLiteral("generate(")));
        StrengthGrid ragged = in.strength;
        ragged.values[0] = 0.5f;
        QVERIFY(pythonMask(ragged).contains(QStringLiteral("(0, 0, 0.5)")));
    }

    // Every family the studio loads × every operator: the snippet loads the family's transformers
    // class, finds the steered positions the family's way and writes the operator's math as the core
    // computes it, or it raises NotImplementedError with the reason — never a silently wrong edit.
    void copyAsPythonCoversEveryFamilyAndOperator() {
        struct Family {
            const char* name;
            const char* modelClass;
            const char* span;   // how the snippet finds the positions the plan steers
            const char* promptTemplate;
            bool vision;
        };
        const Family families[] = {
            {"LLaVA-1.5", "LlavaForConditionalGeneration", "span = (ids[0] == model.config.image_token_index).nonzero()",
             "USER: <image>\n{question} ASSISTANT:", true},
            {"LLaVA-NeXT", "LlavaNextForConditionalGeneration", "span = (ids[0] == model.config.image_token_index).nonzero()",
             "USER: <image>\n{question} ASSISTANT:", true},
            {"PaliGemma", "PaliGemmaForConditionalGeneration", "span = (ids[0] == model.config.image_token_index).nonzero()",
             "<image><bos>{question}\n", true},
            {"Qwen2-VL", "Qwen2VLForConditionalGeneration", "span = (ids[0] == model.config.image_token_id).nonzero()",
             "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
             "{question}<|im_end|>\n<|im_start|>assistant\n",
             true},
            {"Qwen2.5-VL", "Qwen2_5_VLForConditionalGeneration", "span = (ids[0] == model.config.image_token_id).nonzero()",
             "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
             "{question}<|im_end|>\n<|im_start|>assistant\n",
             true},
            {"Qwen3-VL", "Qwen3VLForConditionalGeneration", "span = (ids[0] == model.config.image_token_id).nonzero()",
             "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>{question}<|im_end|>\n<|im_start|>assistant\n", true},
            {"Qwen2", "AutoModelForCausalLM", "span = torch.arange(ids.shape[1] - 1)", "", false},
            {"Llama-3", "AutoModelForCausalLM", "span = torch.arange(ids.shape[1] - 1)", "", false},
            {"Llama", "AutoModelForCausalLM", "span = torch.arange(ids.shape[1] - 1)", "", false},
        };
        // core/steer/SteeringPlan.cpp's edits, as Python on the painted positions x (f = s(p)·c, d = Δ).
        const QMap<QString, QStringList> math = {
            {QStringLiteral("add"), {QStringLiteral("X[:, h, span[sel]] = x + f * d")}},
            {QStringLiteral("norm"),
             {QStringLiteral("y = x + f * d"), QStringLiteral("X[:, h, span[sel]] = torch.where(n > 0, y * (x.norm(dim=-1, keepdim=True) / n), x)")}},
            {QStringLiteral("scale"), {QStringLiteral("X[:, h, span[sel]] = x * (1 + f)")}},
            {QStringLiteral("ablate"),
             {QStringLiteral("target = X[:, h, span].mean(1, keepdim=True)"), QStringLiteral("X[:, h, span[sel]] = x + f * (target - x)")}},
        };
        const QStringList ops = {QStringLiteral("add"),   QStringLiteral("norm"),      QStringLiteral("scale"),
                                 QStringLiteral("ablate"), QStringLiteral("prerope"), QStringLiteral("spotlight")};
        for (const Family& family : families) {
            SnippetInputs in = snippetCase(family.name, family.promptTemplate, family.vision);
            for (const QString& op : ops) {
                in.plan.op = op;
                const QString py = pythonSnippet(in);
                const QByteArray what = (QString::fromUtf8(family.name) + QStringLiteral(" / ") + op + QStringLiteral(":\n") + py).toUtf8();
                if (!math.contains(op)) {   // prerope, spotlight: refused with the reason
                    QVERIFY2(py.contains(QStringLiteral("raise NotImplementedError(\"kvsteer: the '%1' operator").arg(op)), what.constData());
                    QVERIFY2(!py.contains(QStringLiteral("from_pretrained")) && !py.contains(QStringLiteral("generate(")), what.constData());
                    continue;
                }
                QVERIFY2(!py.contains(QStringLiteral("NotImplementedError")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("model = %1.from_pretrained(model_id").arg(QString::fromUtf8(family.modelClass))), what.constData());
                QVERIFY2(py.contains(QString::fromUtf8(family.span)), what.constData());
                const bool anyres = QLatin1String(family.name) == QLatin1String("LLaVA-NeXT");   // its ablate mean skips the newline tokens
                for (QString line : math[op]) QVERIFY2(py.contains(anyres ? line.replace(QStringLiteral("span]"), QStringLiteral("span[cells]]")) : line), what.constData());
                const bool vectors = op == QLatin1String("add") || op == QLatin1String("norm");   // scale and ablate read no file
                QCOMPARE(py.contains(QStringLiteral("with safe_open(vectors_path")), vectors);
                QCOMPARE(py.contains(QStringLiteral("if cv and l in dV: edit(V, cv, dV[l])")), vectors);
                QVERIFY2(py.contains(QStringLiteral("ck, cv = 2, 4")) && py.contains(QStringLiteral("layers = range(4)")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("assert s.numel() == span.numel()")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("cache.crop(ids.shape[1] - 1)")), what.constData());   // decoding feeds the last token
            }
            in.plan.op = QStringLiteral("add");
            const QString py = pythonSnippet(in);
            const QByteArray what = py.toUtf8();
            QCOMPARE(py.contains(QStringLiteral("from PIL import Image")), family.vision);
            QCOMPARE(py.contains(QStringLiteral("AutoTokenizer.from_pretrained(model_id)")), !family.vision);
            QCOMPARE(py.contains(QStringLiteral("AutoProcessor.from_pretrained(model_id)")), family.vision);
            if (!family.vision) {   // the prompt's own tokens: a 1 × N strip, the last one painted
                QVERIFY2(py.contains(QStringLiteral("mask = torch.zeros(1, 12)")) && py.contains(QStringLiteral("mask[0:1, 11:12] = 1")), what.constData());
                QVERIFY2(!py.contains(QStringLiteral("image_token")), what.constData());
            }
            const QString name = QString::fromUtf8(family.name);
            // The first transformers release that has the family's class.
            const char* release = name == QLatin1String("Qwen3-VL") ? "4.57" : name == QLatin1String("Qwen2.5-VL") ? "4.49" : "4.45";
            QVERIFY2(py.contains(QStringLiteral("(Hugging Face transformers >= %1,").arg(QString::fromUtf8(release))), what.constData());
            if (name == QLatin1String("LLaVA-NeXT")) {
                // The map on the crops' grid, spread onto the base view and the newline tokens as the
                // processor lays the picture out (models/llava_next/AnyresGrid, cache/SpanCells).
                QVERIFY2(py.contains(QStringLiteral("best_h, best_w = max(model.config.image_grid_pinpoints, key=keeps)")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("s = torch.cat([base.flatten(), torch.cat([mask, torch.zeros(rows, 1)], 1).flatten()])")),
                         what.constData());
                QVERIFY2(py.contains(QStringLiteral("import math")) && py.contains(QStringLiteral("model.generate(")), what.constData());
            } else if (name == QLatin1String("LLaVA-1.5")) {
                QVERIFY2(py.contains(QStringLiteral("prompt = \"USER: <image>\\nWhat color is the circle? ASSISTANT:\"")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("model.generate(")) && !py.contains(QStringLiteral("rope_pos")), what.constData());
            } else if (name == QLatin1String("PaliGemma")) {
                // The question alone (the processor lays out "<image>"×N + "<bos>" + q + "\n"); the whole
                // prefix is prefilled bidirectionally and its last position dropped, as kvsteer does.
                QVERIFY2(py.contains(QStringLiteral("prompt = \"What color is the circle?\"")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("prefix-LM")) && py.contains(QStringLiteral("model(**inputs, past_key_values=cache")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("model.generate(")), what.constData());
            } else if (name == QLatin1String("Qwen2-VL") || name == QLatin1String("Qwen2.5-VL") || name == QLatin1String("Qwen3-VL")) {
                // M-RoPE: the prompt's positions and every decoded one are given explicitly.
                QVERIFY2(!py.contains(QStringLiteral("image_token_index")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("<|vision_start|><|image_pad|><|vision_end|>What color is the circle?")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("spatial_merge_size")) && py.contains(QStringLiteral("rope_delta = max(gh, gw) - gh * gw")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("model(**inputs, position_ids=rope_pos, past_key_values=cache")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("torch.full((3, 1, 1), cache.get_seq_length() + rope_delta)")), what.constData());
                QVERIFY2(!py.contains(QStringLiteral("model.generate(")), what.constData());
            } else if (name == QLatin1String("Llama")) {
                QVERIFY2(py.contains(QStringLiteral("prompt = \"USER: What color is the circle? ASSISTANT:\"")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("inputs = tokenizer(prompt, return_tensors=\"pt\")")), what.constData());
            } else {   // Qwen2, Llama-3: the checkpoint's chat template
                QVERIFY2(py.contains(QStringLiteral("question = \"What color is the circle?\"")), what.constData());
                QVERIFY2(py.contains(QStringLiteral("tokenizer.apply_chat_template([{\"role\": \"user\", \"content\": question}]")), what.constData());
            }

            // Propagate: recomputed from the edited cache on a causal prompt; PaliGemma's bidirectional
            // recompute is refused.
            in.plan.propagate = true;
            const QString propagated = pythonSnippet(in);
            const QByteArray whatPropagated = propagated.toUtf8();
            if (name == QLatin1String("PaliGemma")) {
                QVERIFY2(propagated.contains(QStringLiteral("raise NotImplementedError(\"kvsteer: propagate mode on PaliGemma")), whatPropagated.constData());
                QVERIFY2(!propagated.contains(QStringLiteral("generate(")), whatPropagated.constData());
            } else {
                QVERIFY2(!propagated.contains(QStringLiteral("NotImplementedError")), whatPropagated.constData());
                QVERIFY2(propagated.contains(QStringLiteral("cache.crop(end)")), whatPropagated.constData());
                QVERIFY2(propagated.contains(family.vision ? QStringLiteral("end = int(span[-1]) + 1") : QStringLiteral("end = int(span[sel].max()) + 1")),
                         whatPropagated.constData());
                QVERIFY2(propagated.contains(name == QLatin1String("Qwen2-VL") || name == QLatin1String("Qwen2.5-VL") || name == QLatin1String("Qwen3-VL")
                                                 ? QStringLiteral("model(input_ids=ids[:, end:-1], position_ids=rope_pos[..., end:-1], past_key_values=cache")
                                                 : QStringLiteral("model(input_ids=ids[:, end:-1], past_key_values=cache")),
                         whatPropagated.constData());
            }
            in.plan.propagate = false;

            // Ablate to zero; pre-RoPE key vectors are refused for add and norm (kvsteer refuses them too),
            // not for scale, which reads no vectors.
            in.plan.op = QStringLiteral("ablate");
            in.plan.ablateTarget = QStringLiteral("zero");
            QVERIFY(pythonSnippet(in).contains(QStringLiteral("target = 0")));
            in.keySpace = QStringLiteral("pre-rope");
            for (const char* op : {"add", "norm"}) {
                in.plan.op = QString::fromUtf8(op);
                QVERIFY(pythonSnippet(in).contains(QStringLiteral("raise NotImplementedError(\"kvsteer: the file's key vectors are pre-RoPE")));
            }
            in.plan.op = QStringLiteral("scale");
            QVERIFY(!pythonSnippet(in).contains(QStringLiteral("NotImplementedError")));
        }
        // A family the snippet does not know is named, not guessed.
        const QString other = pythonSnippet(snippetCase("Gemma3", "<image>{question}", true));
        QVERIFY2(other.contains(QStringLiteral("raise NotImplementedError(\"kvsteer: the Gemma3 family is not one this snippet knows")), qPrintable(other));
        QVERIFY(!other.contains(QStringLiteral("from_pretrained")));
    }

    void cleanupTestCase() {
        closeMessageBoxes();
        w_.reset();
    }
};

QTEST_MAIN(TestStudioAtlas)
#include "test_studio_atlas.moc"
