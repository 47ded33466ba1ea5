#include "widgets/RunSummary.h"

#include <algorithm>

namespace kvsteer::ui {

RunSummary::RunSummary(QWidget* parent) : QLabel(parent) {
    setObjectName(QStringLiteral("runInfo"));
    setTextFormat(Qt::RichText);
    setWordWrap(true);
    setStyleSheet(QStringLiteral("QLabel#runInfo { background: palette(base); border: 1px solid palette(mid);"
                                 " border-radius: 6px; padding: 6px 10px; }"));
}

void RunSummary::show(const RunSummaryInput& in) {
    const PlanSettings& p = in.plan;
    const StrengthGrid& g = in.mask;
    const bool haveModel = in.modelLayers > 0;
    const int last = std::max(0, in.modelLayers - 1);
    const int to = p.layerTo < 0 ? last : p.layerTo;
    QString heads = p.heads.isEmpty() ? tr("all KV heads") : tr("KV heads %1").arg([&] {
        QStringList l;
        for (int h : p.heads) l << QString::number(h);
        return l.join(QLatin1Char(','));
    }());
    const QString grey = QStringLiteral("color:#6b737d");
    QString html = QStringLiteral("<table cellspacing='0' cellpadding='1'>");
    auto row = [&](const QString& k, const QString& v) {
        html += QStringLiteral("<tr><td style='%1; padding-right:10px'>%2</td><td>%3</td></tr>").arg(grey, k, v);
    };
    // What runs: one coefficient, or one per layer ("2, 4, 8 by layer").
    auto coefficient = [&](const QVector<double>& values) {
        QStringList l;
        for (double c : values) l << QString::number(c, 'g', 4);
        return values.size() > 1 ? tr("%1 by layer").arg(l.join(QStringLiteral(", "))) : l.join(QString());
    };
    row(tr("Plan"), tr("<b>%1</b> · c<sub>k</sub> %2 · c<sub>v</sub> %3 · %4 · %5 · %6")
                        .arg(operatorText(p.op))
                        .arg(coefficient(p.ckValues()))
                        .arg(coefficient(p.cvValues()))
                        .arg(p.propagate ? tr("propagate") : tr("edit only"))
                        .arg(!haveModel ? tr("layers —") : p.layerFrom == to ? tr("layer %1").arg(to) : tr("layers %1–%2").arg(p.layerFrom).arg(to))
                        .arg(heads));
    const QString cells = g.rows == 1 ? tr("tokens") : tr("patches");   // a text prompt's strip, or an image grid
    QString mask = tr("%1 of %2 %3 painted · max strength %4").arg(g.paintedCells()).arg(g.size()).arg(cells).arg(g.maximum(), 0, 'f', 2);
    if (!in.maskNote.isEmpty()) mask += QStringLiteral(" · <span style='color:#b05a00'>%1</span>").arg(in.maskNote.toHtmlEscaped());
    row(tr("Mask"), mask);
    row(tr("Vectors"), in.vectors.valid() ? QStringLiteral("%1 · %2").arg(in.vectors.recipe.toHtmlEscaped(), in.vectors.origin.toHtmlEscaped())
                                          : QStringLiteral("<span style='%1'>%2</span>").arg(grey, tr("none yet")));
    if (in.lastPrefill.runId != 0) {
        QString run = tr("prefill %1 tokens in %2 ms (kept) · edit %3 ms")
                          .arg(in.lastPrefill.promptTokens)
                          .arg(in.lastPrefill.prefillMs, 0, 'f', 0)
                          .arg(in.lastStarted.editMs, 0, 'f', 1);
        if (in.lastFinished.runId == in.lastStarted.runId && in.lastFinished.decodeMs > 0)
            run += tr(" · decode %1 tok/s").arg(1000.0 * in.lastFinished.steps / in.lastFinished.decodeMs, 0, 'f', 0);
        row(tr("Last run"), run);
    }
    html += QStringLiteral("</table>");
    setText(html);
}

} // namespace kvsteer::ui
