#include "types/StudyTypes.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>

namespace kvsteer::ui {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

double number(const QJsonValue& v) { return v.isDouble() ? v.toDouble() : kNaN; }

// {"value": v, "ci95": [lo, hi]}, nulls as NaN.
StudyValue valueOf(const QJsonValue& v) {
    const QJsonObject o = v.toObject();
    const QJsonArray ci = o.value(QStringLiteral("ci95")).toArray();
    return {number(o.value(QStringLiteral("value"))), number(ci.at(0)), number(ci.at(1))};
}

QVector<double> numbers(const QJsonValue& v) {
    QVector<double> out;
    for (const QJsonValue& x : v.toArray()) out << x.toDouble();
    return out;
}

QVector<int> integers(const QJsonValue& v) {
    QVector<int> out;
    for (const QJsonValue& x : v.toArray()) out << x.toInt();
    return out;
}

// Throws kvsteer::Error for an operator or ablate target the core does not know.
StudyPlanSettings settingsOf(const QJsonObject& s) {
    StudyPlanSettings p;
    p.index = s.value(QStringLiteral("index")).toInt();
    p.label = s.value(QStringLiteral("label")).toString();
    p.vectors = s.value(QStringLiteral("vectors")).toString();
    p.op = parseOperator(s.value(QStringLiteral("operator")).toString(QStringLiteral("add")).toStdString(), "settings.operator");
    p.ck = numbers(s.value(QStringLiteral("ck")));
    p.cv = numbers(s.value(QStringLiteral("cv")));
    p.layers = s.value(QStringLiteral("layers")).toString();
    p.layerList = integers(s.value(QStringLiteral("layer_list")));
    p.heads = integers(s.value(QStringLiteral("heads")));
    p.propagate = s.value(QStringLiteral("mode")).toString() == QLatin1String("propagate");
    p.ablateTo = parseAblateTarget(s.value(QStringLiteral("ablate_to")).toString(QStringLiteral("mean")).toStdString(), "settings.ablate_to");
    return p;
}

// The headline row of a set (or one of its categories) under a plan.
StudyCategoryRow rowOf(int plan, const QJsonObject& set, const QJsonObject& scores, const QString& category) {
    StudyCategoryRow r;
    r.plan = plan;
    r.dataset = set.value(QStringLiteral("dataset")).toString();
    r.role = set.value(QStringLiteral("role")).toString();
    r.metric = set.value(QStringLiteral("metric")).toString();
    r.category = category;
    r.items = scores.value(QStringLiteral("items")).toInt();
    r.headline = r.role == QLatin1String("target") ? QStringLiteral("success") : QStringLiteral("preservation");
    r.value = valueOf(scores.value(r.headline));
    return r;
}

} // namespace

bool StudySetup::gridGiven() const {
    for (const QString* axis : {&vectors, &operators, &ck, &cv, &layers})
        if (!axis->trimmed().isEmpty()) return true;
    return false;
}

bool StudySetup::operator==(const StudySetup& o) const {
    return suite == o.suite && outDir == o.outDir && vectors == o.vectors && operators == o.operators && ck == o.ck && cv == o.cv &&
           layers == o.layers && maxNewTokens == o.maxNewTokens;
}

PlanSettings StudyPlanSettings::planSettings() const {
    PlanSettings p;
    p.op = op;
    p.propagate = propagate;
    p.ablateTarget = ablateTo;
    p.ck = ck.isEmpty() ? 1.0 : ck.front();
    p.cv = cv.isEmpty() ? 1.0 : cv.front();
    if (!layerList.isEmpty()) {
        p.layerFrom = *std::min_element(layerList.begin(), layerList.end());
        p.layerTo = *std::max_element(layerList.begin(), layerList.end());
    }
    p.heads = heads;
    return p;
}

const StudyPlanResult* StudyResults::plan(int index) const {
    for (const StudyPlanResult& p : plans)
        if (p.settings.index == index) return &p;
    return nullptr;
}

bool studyResultsFromJson(const QJsonObject& summary, StudyResults* out, QString* error) {
    const QJsonArray results = summary.value(QStringLiteral("results")).toArray();
    if (results.isEmpty() || !summary.value(QStringLiteral("frontier")).isArray()) {
        *error = QObject::tr("it is not a study summary (no \"results\" or \"frontier\")");
        return false;
    }
    StudyResults r;
    for (const QJsonValue& d : summary.value(QStringLiteral("datasets")).toArray()) r.datasets << d.toObject().value(QStringLiteral("name")).toString();
    r.frontier = integers(summary.value(QStringLiteral("frontier")));
    r.suitePath = summary.value(QStringLiteral("suite")).toObject().value(QStringLiteral("path")).toString();
    r.clusters = summary.value(QStringLiteral("clusters")).toInt();
    r.itemsPerSecond = summary.value(QStringLiteral("timings")).toObject().value(QStringLiteral("items_per_s")).toDouble();
    for (const QJsonValue& v : results) {
        const QJsonObject p = v.toObject();
        StudyPlanResult plan;
        try {
            plan.settings = settingsOf(p.value(QStringLiteral("settings")).toObject());
        } catch (const Error& e) {
            *error = QObject::tr("results[%1]: %2").arg(r.plans.size()).arg(QString::fromStdString(e.what()));
            return false;
        }
        plan.settings.index = p.value(QStringLiteral("plan")).toInt(plan.settings.index);
        plan.settings.label = p.value(QStringLiteral("label")).toString(plan.settings.label);
        plan.targetSuccess = valueOf(p.value(QStringLiteral("target_success")));
        plan.preservation = valueOf(p.value(QStringLiteral("preservation")));
        plan.onFrontier = r.frontier.contains(plan.settings.index);
        r.plans << plan;
        for (const QJsonValue& s : p.value(QStringLiteral("datasets")).toArray()) {
            const QJsonObject set = s.toObject();
            r.rows << rowOf(plan.settings.index, set, set, QStringLiteral("(all)"));
            for (const QJsonValue& c : set.value(QStringLiteral("categories")).toArray())
                r.rows << rowOf(plan.settings.index, set, c.toObject(), c.toObject().value(QStringLiteral("category")).toString());
        }
    }
    *out = std::move(r);
    return true;
}

bool readStudyResults(const QString& outDir, StudyResults* out, QString* error) {
    QFile f(QDir(outDir).filePath(QStringLiteral("summary.json")));
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QObject::tr("%1 holds no summary.json (the study did not finish there)").arg(QDir::toNativeSeparators(outDir));
        return false;
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
    if (!doc.isObject()) {
        *error = QObject::tr("%1 cannot be read: %2").arg(QDir::toNativeSeparators(f.fileName()), pe.errorString());
        return false;
    }
    QString why;
    if (!studyResultsFromJson(doc.object(), out, &why)) {
        *error = QObject::tr("%1: %2").arg(QDir::toNativeSeparators(f.fileName()), why);
        return false;
    }
    return true;
}

void registerStudyTypes() {
    qRegisterMetaType<StudySetup>();
    qRegisterMetaType<StudyRequest>();
    qRegisterMetaType<StudyStarted>();
    qRegisterMetaType<StudyProgress>();
    qRegisterMetaType<StudyPlanSettings>();
    qRegisterMetaType<StudyFinished>();
}

} // namespace kvsteer::ui
