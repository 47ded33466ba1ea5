#include "studio/PythonSnippet.h"

#include "steer/PythonSnippet.h"

namespace kvsteer::ui {

namespace {

std::vector<float> values(const StrengthGrid& g) { return std::vector<float>(g.values.begin(), g.values.end()); }

// The plan's layers as the core names them: empty when every layer is edited.
std::vector<int> layersOf(const PlanSettings& p, int layers) {
    const int last = p.layerTo < 0 ? layers - 1 : p.layerTo;
    std::vector<int> out;
    if (p.layerFrom <= 0 && last >= layers - 1) return out;
    for (int l = std::max(0, p.layerFrom); l <= last; ++l) out.push_back(l);
    return out;
}

} // namespace

QString pythonSnippet(const SnippetInputs& in) {
    PythonSnippetInputs s;
    s.family = in.model.family.toStdString();
    s.modelName = in.model.name.toStdString();
    s.modelDirectory = in.model.directory.toStdString();
    s.numLayers = in.model.layers;
    s.promptTemplate = in.model.promptTemplate.toStdString();
    if (in.model.hasVision) s.imagePath = in.imagePath.toStdString();
    s.question = in.question.toStdString();
    s.vectorsPath = in.vectorsPath.toStdString();
    s.keySpace = in.keySpace.isEmpty() ? "post-rope" : in.keySpace.toStdString();
    const PlanSettings& p = in.plan;
    s.op = p.op;
    const QVector<double> ck = p.ckValues(), cv = p.cvValues();
    s.ck.assign(ck.begin(), ck.end());
    s.cv.assign(cv.begin(), cv.end());
    s.layers = layersOf(p, in.model.layers);
    s.heads = std::vector<int>(p.heads.begin(), p.heads.end());
    s.propagate = p.propagate;
    s.ablateTo = p.ablateTarget;
    s.rows = in.strength.rows;
    s.cols = in.strength.cols;
    s.strength = values(in.strength);
    s.maxNewTokens = in.maxNewTokens;
    return QString::fromStdString(pythonSnippet(s));
}

QString pythonMask(const StrengthGrid& g) { return QString::fromStdString(kvsteer::pythonMask(g.rows, g.cols, values(g))); }

} // namespace kvsteer::ui
