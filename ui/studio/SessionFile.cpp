#include "SessionFile.h"

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace kvsteer::ui {

namespace {

const char* sourceName(VectorSource s) {
    switch (s) {
    case VectorSource::SecondImage: return "second-image";
    case VectorSource::PaintedRegion: return "painted-region";
    case VectorSource::TextPairs: return "text-pairs";
    case VectorSource::File: return "file";
    }
    return "second-image";
}

VectorSource parseSource(const QString& s) {
    if (s == QLatin1String("painted-region")) return VectorSource::PaintedRegion;
    if (s == QLatin1String("text-pairs")) return VectorSource::TextPairs;
    if (s == QLatin1String("file")) return VectorSource::File;
    return VectorSource::SecondImage;
}

QString b64(const QByteArray& bytes) { return QString::fromLatin1(bytes.toBase64()); }

QJsonArray tokensJson(const QVector<StreamToken>& tokens) {
    QJsonArray out;
    for (const StreamToken& t : tokens) {
        QJsonArray top;
        for (const Alternative& a : t.top) top.append(QJsonArray{double(a.id), a.text, double(a.probability)});
        out.append(QJsonObject{{QStringLiteral("id"), double(t.id)},
                               {QStringLiteral("text"), t.text},
                               {QStringLiteral("eos"), t.eos},
                               {QStringLiteral("top"), top}});
    }
    return out;
}

QVector<StreamToken> tokensFromJson(const QJsonArray& a) {
    QVector<StreamToken> out;
    for (const QJsonValue& v : a) {
        const QJsonObject o = v.toObject();
        StreamToken t;
        t.id = qint64(o.value(QStringLiteral("id")).toDouble(-1));
        t.text = o.value(QStringLiteral("text")).toString();
        t.eos = o.value(QStringLiteral("eos")).toBool();
        for (const QJsonValue& alt : o.value(QStringLiteral("top")).toArray()) {
            const QJsonArray x = alt.toArray();
            if (x.size() != 3) continue;
            t.top.push_back({qint64(x[0].toDouble()), x[1].toString(), float(x[2].toDouble())});
        }
        if (t.id >= 0) out.push_back(t);
    }
    return out;
}

} // namespace

QByteArray SessionFile::toJson(const SessionDocument& s) {
    QJsonObject root;
    root[QStringLiteral("format")] = QStringLiteral("kvsteer-session");
    root[QStringLiteral("version")] = kVersion;
    root[QStringLiteral("kvsteer")] = QStringLiteral(KVSTEER_STUDIO_VERSION);
    root[QStringLiteral("saved")] = QDateTime::currentDateTimeUtc().toString(Qt::ISODate);
    root[QStringLiteral("model")] = QJsonObject{{QStringLiteral("directory"), s.modelDirectory},
                                                {QStringLiteral("name"), s.modelName},
                                                {QStringLiteral("config_hash"), s.modelConfigHash}};
    if (!s.imageBytes.isEmpty())
        root[QStringLiteral("image")] = QJsonObject{{QStringLiteral("name"), s.imageName}, {QStringLiteral("data"), b64(s.imageBytes)}};
    root[QStringLiteral("prompt")] = s.prompt;
    root[QStringLiteral("generation")] = QJsonObject{{QStringLiteral("max_new_tokens"), s.generation.maxNewTokens},
                                                     {QStringLiteral("sample"), s.generation.sample},
                                                     {QStringLiteral("temperature"), s.generation.temperature},
                                                     {QStringLiteral("top_p"), s.generation.topP},
                                                     {QStringLiteral("top_k"), s.generation.topK},
                                                     {QStringLiteral("seed"), QString::number(s.generation.seed)},
                                                     {QStringLiteral("stop_at_eos"), s.generation.stopAtEos}};
    QJsonArray values;
    for (float v : s.strength.values) values.append(double(v));
    root[QStringLiteral("strength")] = QJsonObject{
        {QStringLiteral("rows"), s.strength.rows}, {QStringLiteral("cols"), s.strength.cols}, {QStringLiteral("values"), values}};
    QJsonArray heads;
    for (int h : s.plan.heads) heads.append(h);
    root[QStringLiteral("plan")] = QJsonObject{{QStringLiteral("operator"), operatorText(s.plan.op)},
                                               {QStringLiteral("mode"), s.plan.propagate ? QStringLiteral("propagate") : QStringLiteral("edit-only")},
                                               {QStringLiteral("ablate_to"), ablateTargetText(s.plan.ablateTarget)},
                                               {QStringLiteral("ck"), s.plan.ck},
                                               {QStringLiteral("cv"), s.plan.cv},
                                               {QStringLiteral("layer_from"), s.plan.layerFrom},
                                               {QStringLiteral("layer_to"), s.plan.layerTo},
                                               {QStringLiteral("heads"), heads}};
    // Per-layer coefficients (they run instead of ck / cv), written only when set.
    QJsonObject plan = root[QStringLiteral("plan")].toObject();
    for (const auto& [key, list] : {std::pair{QStringLiteral("ck_by_layer"), &s.plan.ckByLayer}, {QStringLiteral("cv_by_layer"), &s.plan.cvByLayer}}) {
        if (list->isEmpty()) continue;
        QJsonArray values;
        for (double c : *list) values.append(c);
        plan[key] = values;
    }
    root[QStringLiteral("plan")] = plan;
    QJsonArray pairs;
    for (const TextPairItem& p : s.textPairs)
        pairs.append(QJsonObject{{QStringLiteral("positive"), p.positive}, {QStringLiteral("negative"), p.negative}});
    QJsonObject recipe{{QStringLiteral("source"), QString::fromLatin1(sourceName(s.source))},
                       {QStringLiteral("target_image"), s.targetImagePath},
                       {QStringLiteral("pairs"), pairs},
                       {QStringLiteral("pre_rope"), s.preRope},
                       {QStringLiteral("per_position"), s.perPosition},
                       {QStringLiteral("pca"), s.pca}};
    if (!s.targetImageBytes.isEmpty()) recipe[QStringLiteral("target_image_data")] = b64(s.targetImageBytes);
    root[QStringLiteral("recipe")] = recipe;
    if (!s.vectorsBlob.isEmpty())
        root[QStringLiteral("vectors")] = QJsonObject{{QStringLiteral("origin"), s.vectorsOrigin},
                                                      {QStringLiteral("safetensors"), b64(s.vectorsBlob)}};
    root[QStringLiteral("outputs")] = QJsonObject{{QStringLiteral("unsteered"), tokensJson(s.unsteered)},
                                                  {QStringLiteral("steered"), tokensJson(s.steered)}};
    root[QStringLiteral("view")] = QJsonObject{{QStringLiteral("heatmap_metric"), int(s.heatmap.metric)},
                                               {QStringLiteral("heatmap_head"), s.heatmap.head},
                                               {QStringLiteral("heatmap_steered"), s.heatmap.steeredRow},
                                               {QStringLiteral("heatmap_layer"), s.heatmapLayer},
                                               {QStringLiteral("live"), s.live}};
    if (!s.study.isEmpty())
        root[QStringLiteral("study")] = QJsonObject{{QStringLiteral("suite"), s.study.suite},
                                                    {QStringLiteral("out"), s.study.outDir},
                                                    {QStringLiteral("vectors"), s.study.vectors},
                                                    {QStringLiteral("operators"), s.study.operators},
                                                    {QStringLiteral("ck"), s.study.ck},
                                                    {QStringLiteral("cv"), s.study.cv},
                                                    {QStringLiteral("layers"), s.study.layers},
                                                    {QStringLiteral("max_new_tokens"), s.study.maxNewTokens}};
    if (!s.savedAs.isEmpty()) root[QStringLiteral("saved_as")] = s.savedAs;
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

bool SessionFile::fromJson(const QByteArray& json, SessionDocument* out, QString* error) {
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &pe);
    if (doc.isNull() || !doc.isObject()) {
        *error = QObject::tr("it is not a kvsteer session (JSON error at byte %1: %2)").arg(pe.offset).arg(pe.errorString());
        return false;
    }
    const QJsonObject root = doc.object();
    if (root.value(QStringLiteral("format")).toString() != QLatin1String("kvsteer-session")) {
        *error = QObject::tr("it is not a kvsteer session (no \"format\": \"kvsteer-session\")");
        return false;
    }
    const int version = root.value(QStringLiteral("version")).toInt();
    if (version < 1 || version > kVersion) {
        *error = QObject::tr("it was written by a newer kvsteer (session version %1; this studio reads up to %2)").arg(version).arg(kVersion);
        return false;
    }
    SessionDocument s;
    const QJsonObject model = root.value(QStringLiteral("model")).toObject();
    s.modelDirectory = model.value(QStringLiteral("directory")).toString();
    s.modelName = model.value(QStringLiteral("name")).toString();
    s.modelConfigHash = model.value(QStringLiteral("config_hash")).toString();

    const QJsonObject image = root.value(QStringLiteral("image")).toObject();
    s.imageName = image.value(QStringLiteral("name")).toString();
    s.imageBytes = QByteArray::fromBase64(image.value(QStringLiteral("data")).toString().toLatin1());
    if (!image.isEmpty() && s.imageBytes.isEmpty()) {
        *error = QObject::tr("its image data is missing or not base64");
        return false;
    }
    s.prompt = root.value(QStringLiteral("prompt")).toString();

    const QJsonObject g = root.value(QStringLiteral("generation")).toObject();
    s.generation.maxNewTokens = std::clamp(g.value(QStringLiteral("max_new_tokens")).toInt(32), 1, 2048);
    s.generation.sample = g.value(QStringLiteral("sample")).toBool();
    s.generation.temperature = g.value(QStringLiteral("temperature")).toDouble(0.7);
    s.generation.topP = g.value(QStringLiteral("top_p")).toDouble(0.9);
    s.generation.topK = g.value(QStringLiteral("top_k")).toInt(0);
    s.generation.seed = g.value(QStringLiteral("seed")).toString().toULongLong();
    s.generation.stopAtEos = g.value(QStringLiteral("stop_at_eos")).toBool(true);

    const QJsonObject st = root.value(QStringLiteral("strength")).toObject();
    // The map keeps the grid it was painted on; a model of another grid resamples it when the
    // session is applied (DocumentController::apply).
    const int rows = st.value(QStringLiteral("rows")).toInt(0), cols = st.value(QStringLiteral("cols")).toInt(0);
    const QJsonArray values = st.value(QStringLiteral("values")).toArray();
    if (rows <= 0 || cols <= 0 || rows > 1024 || cols > 1024 || values.size() != rows * cols) {
        *error = QObject::tr("its strength map is malformed (%1×%2 with %3 values)").arg(rows).arg(cols).arg(values.size());
        return false;
    }
    s.strength = StrengthGrid(rows, cols);
    for (int i = 0; i < values.size(); ++i) s.strength.values[i] = float(values[i].toDouble());

    const QJsonObject plan = root.value(QStringLiteral("plan")).toObject();
    try {
        s.plan.op = parseOperator(plan.value(QStringLiteral("operator")).toString(QStringLiteral("add")).toStdString(), "plan.operator");
        s.plan.ablateTarget = parseAblateTarget(plan.value(QStringLiteral("ablate_to")).toString(QStringLiteral("mean")).toStdString(), "plan.ablate_to");
    } catch (const Error& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    s.plan.propagate = plan.value(QStringLiteral("mode")).toString() == QLatin1String("propagate");
    s.plan.ck = plan.value(QStringLiteral("ck")).toDouble(1.0);
    s.plan.cv = plan.value(QStringLiteral("cv")).toDouble(1.0);
    for (const QJsonValue& c : plan.value(QStringLiteral("ck_by_layer")).toArray()) s.plan.ckByLayer.push_back(c.toDouble());
    for (const QJsonValue& c : plan.value(QStringLiteral("cv_by_layer")).toArray()) s.plan.cvByLayer.push_back(c.toDouble());
    s.plan.layerFrom = plan.value(QStringLiteral("layer_from")).toInt(0);
    s.plan.layerTo = plan.value(QStringLiteral("layer_to")).toInt(-1);
    for (const QJsonValue& h : plan.value(QStringLiteral("heads")).toArray()) s.plan.heads.push_back(h.toInt());

    const QJsonObject recipe = root.value(QStringLiteral("recipe")).toObject();
    s.source = parseSource(recipe.value(QStringLiteral("source")).toString());
    s.targetImagePath = recipe.value(QStringLiteral("target_image")).toString();
    s.targetImageBytes = QByteArray::fromBase64(recipe.value(QStringLiteral("target_image_data")).toString().toLatin1());
    for (const QJsonValue& p : recipe.value(QStringLiteral("pairs")).toArray())
        s.textPairs.push_back({p.toObject().value(QStringLiteral("positive")).toString(), p.toObject().value(QStringLiteral("negative")).toString()});
    s.preRope = recipe.value(QStringLiteral("pre_rope")).toBool();
    s.perPosition = recipe.value(QStringLiteral("per_position")).toBool();
    s.pca = recipe.value(QStringLiteral("pca")).toBool();

    const QJsonObject vectors = root.value(QStringLiteral("vectors")).toObject();
    s.vectorsOrigin = vectors.value(QStringLiteral("origin")).toString();
    s.vectorsBlob = QByteArray::fromBase64(vectors.value(QStringLiteral("safetensors")).toString().toLatin1());

    const QJsonObject outputs = root.value(QStringLiteral("outputs")).toObject();
    s.unsteered = tokensFromJson(outputs.value(QStringLiteral("unsteered")).toArray());
    s.steered = tokensFromJson(outputs.value(QStringLiteral("steered")).toArray());

    const QJsonObject view = root.value(QStringLiteral("view")).toObject();
    s.heatmap.metric = Metric(std::clamp(view.value(QStringLiteral("heatmap_metric")).toInt(int(Metric::Attention)), 0, kMetricCount - 1));
    s.heatmap.head = view.value(QStringLiteral("heatmap_head")).toInt(-1);
    s.heatmap.steeredRow = view.value(QStringLiteral("heatmap_steered")).toBool(true);
    s.heatmapLayer = view.value(QStringLiteral("heatmap_layer")).toInt(0);
    s.live = view.value(QStringLiteral("live")).toBool(true);

    s.savedAs = root.value(QStringLiteral("saved_as")).toString();

    const QJsonObject study = root.value(QStringLiteral("study")).toObject();
    s.study.suite = study.value(QStringLiteral("suite")).toString();
    s.study.outDir = study.value(QStringLiteral("out")).toString();
    s.study.vectors = study.value(QStringLiteral("vectors")).toString();
    s.study.operators = study.value(QStringLiteral("operators")).toString();
    s.study.ck = study.value(QStringLiteral("ck")).toString();
    s.study.cv = study.value(QStringLiteral("cv")).toString();
    s.study.layers = study.value(QStringLiteral("layers")).toString();
    s.study.maxNewTokens = std::clamp(study.value(QStringLiteral("max_new_tokens")).toInt(32), 1, 256);
    *out = std::move(s);
    return true;
}

bool SessionFile::save(const QString& path, const SessionDocument& s, QString* error) {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        *error = QObject::tr("cannot write %1: %2").arg(path, f.errorString());
        return false;
    }
    const QByteArray json = toJson(s);
    if (f.write(json) != json.size() || !f.commit()) {
        *error = QObject::tr("cannot write %1: %2").arg(path, f.errorString());
        f.cancelWriting();
        return false;
    }
    return true;
}

bool SessionFile::load(const QString& path, SessionDocument* out, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QObject::tr("cannot open %1: %2").arg(path, f.errorString());
        return false;
    }
    QString why;
    if (!fromJson(f.readAll(), out, &why)) {
        *error = QObject::tr("%1 cannot be opened: %2").arg(QFileInfo(path).fileName(), why);
        return false;
    }
    return true;
}

} // namespace kvsteer::ui
