#pragma once
// What a person sees cut off: the checks of test_studio_layout, over every visible widget of a
// window. A widget is in trouble when
//   - it sticks out of an ancestor's visible area (a scroll area's viewport counts as visible in a
//     direction it can scroll: there the person scrolls to it);
//   - its text does not fit its room: a label, a button's text, a check box's, a group box's title,
//     a combo box's current item. A label built to elide (property "elides", with the whole text
//     in its tool tip) is exempt;
//   - it is a tool bar whose extension button ("»") shows: actions hidden behind it;
//   - it is a table showing less than three rows, or a plot smaller than 200×150 (no room for its
//     axes and labels).
// Each problem is one line naming the widget by its path of object names, class names and texts.
#include <QAbstractItemView>
#include <QAbstractScrollArea>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollBar>
#include <QStyle>
#include <QStyleOptionComboBox>
#include <QTextDocument>
#include <QToolBar>
#include <QToolButton>
#include <QWidget>

namespace kvsteer::test {

inline QString widgetName(const QWidget* w) {
    QString text;
    if (auto* l = qobject_cast<const QLabel*>(w)) text = l->text();
    else if (auto* b = qobject_cast<const QAbstractButton*>(w)) text = b->text();
    else if (auto* g = qobject_cast<const QGroupBox*>(w)) text = g->title();
    else if (auto* c = qobject_cast<const QComboBox*>(w)) text = c->currentText();
    if (Qt::mightBeRichText(text)) {
        QTextDocument d;
        d.setHtml(text);
        text = d.toPlainText();
    }
    text = text.simplified().left(40);
    QString path;
    for (const QWidget* a = w->parentWidget(); a && !a->isWindow(); a = a->parentWidget())
        if (!a->objectName().isEmpty() && !a->objectName().startsWith(QLatin1String("qt_"))) {
            path = a->objectName();
            break;
        }
    return QStringLiteral("%1%2 '%3'").arg(path.isEmpty() ? QString() : path + QStringLiteral(" › "), QString::fromLatin1(w->metaObject()->className()), text);
}

// The width a widget's text needs and the width it has, in its own pixels; need 0 = nothing to check.
struct TextRoom {
    int need = 0, have = 0;
};

inline int advance(const QWidget* w, QString text) {
    text.remove(QLatin1Char('&'));
    return w->fontMetrics().horizontalAdvance(text);
}

inline TextRoom textRoom(const QWidget* w) {
    QStyle* s = w->style();
    if (auto* l = qobject_cast<const QLabel*>(w)) {
        if (l->text().isEmpty() || l->property("elides").toBool()) return {};
        if (l->wordWrap()) return {l->heightForWidth(l->width()), l->height() + 1};   // heights
        const QMargins m = l->contentsMargins();
        const int need = Qt::mightBeRichText(l->text()) && l->textFormat() != Qt::PlainText ? l->sizeHint().width() - m.left() - m.right()
                                                                                           : advance(l, l->text());
        return {need, l->contentsRect().width() + 1};
    }
    if (auto* c = qobject_cast<const QCheckBox*>(w)) {
        if (c->text().isEmpty()) return {};
        QStyleOptionButton o;
        o.initFrom(c);
        const int indicator = s->pixelMetric(QStyle::PM_IndicatorWidth, &o, c) + s->pixelMetric(QStyle::PM_CheckBoxLabelSpacing, &o, c);
        return {indicator + advance(c, c->text()), c->width() + 1};
    }
    if (auto* r = qobject_cast<const QRadioButton*>(w)) {
        if (r->text().isEmpty()) return {};
        QStyleOptionButton o;
        o.initFrom(r);
        const int indicator = s->pixelMetric(QStyle::PM_ExclusiveIndicatorWidth, &o, r) + s->pixelMetric(QStyle::PM_RadioButtonLabelSpacing, &o, r);
        return {indicator + advance(r, r->text()), r->width() + 1};
    }
    if (auto* t = qobject_cast<const QToolButton*>(w)) {
        if (t->text().isEmpty() || t->toolButtonStyle() == Qt::ToolButtonIconOnly || t->objectName() == QLatin1String("qt_toolbar_ext_button")) return {};
        const bool icon = !t->icon().isNull() && t->toolButtonStyle() == Qt::ToolButtonTextBesideIcon;
        return {advance(t, t->text()) + (icon ? t->iconSize().width() + 4 : 0) + 4, t->width()};
    }
    if (auto* b = qobject_cast<const QPushButton*>(w)) {
        if (b->text().isEmpty()) return {};
        const bool icon = !b->icon().isNull();
        return {advance(b, b->text()) + (icon ? b->iconSize().width() + 4 : 0) + 8, b->width()};
    }
    if (auto* g = qobject_cast<const QGroupBox*>(w)) {
        if (g->title().isEmpty()) return {};
        return {advance(g, g->title()) + (g->isCheckable() ? 20 : 0) + 16, g->width()};
    }
    if (auto* c = qobject_cast<const QComboBox*>(w)) {
        if (c->currentText().isEmpty() || c->isEditable()) return {};
        QStyleOptionComboBox o;
        o.initFrom(c);
        o.editable = false;
        const QRect field = s->subControlRect(QStyle::CC_ComboBox, &o, QStyle::SC_ComboBoxEditField, c);
        const bool icon = !c->itemIcon(c->currentIndex()).isNull();
        return {advance(c, c->currentText()) + (icon ? c->iconSize().width() + 4 : 0), field.width() + 2};
    }
    return {};
}

inline bool checked(const QWidget* w) {
    return qobject_cast<const QLabel*>(w) || qobject_cast<const QAbstractButton*>(w) || qobject_cast<const QGroupBox*>(w) ||
           qobject_cast<const QComboBox*>(w);
}

// Where `w` sticks out of an ancestor's visible area (in a direction that ancestor cannot scroll).
inline QString clipping(const QWidget* w) {
    for (const QWidget* child = w; child->parentWidget() && !child->isWindow(); child = child->parentWidget()) {
        const QWidget* a = child->parentWidget();
        const QRect r(w->mapTo(a, QPoint(0, 0)), w->size());
        bool scrollsH = false, scrollsV = false;
        if (auto* area = qobject_cast<const QAbstractScrollArea*>(a->parentWidget()); area && area->viewport() == a) {
            scrollsH = area->horizontalScrollBar()->maximum() > 0 && area->horizontalScrollBarPolicy() != Qt::ScrollBarAlwaysOff;
            scrollsV = area->verticalScrollBar()->maximum() > 0 && area->verticalScrollBarPolicy() != Qt::ScrollBarAlwaysOff;
            if (!scrollsH && !scrollsV && qobject_cast<const QAbstractScrollArea*>(area) && !area->inherits("QScrollArea")) return {};   // an item view's own editors
        }
        const QRect room = a->rect();
        const bool outH = r.left() < room.left() - 1 || r.right() > room.right() + 1;
        const bool outV = r.top() < room.top() - 1 || r.bottom() > room.bottom() + 1;
        if ((outH && !scrollsH) || (outV && !scrollsV))
            return QStringLiteral("sticks out of %1 (%2,%3 %4×%5 in %6×%7)")
                .arg(QString::fromLatin1(a->metaObject()->className()))
                .arg(r.x())
                .arg(r.y())
                .arg(r.width())
                .arg(r.height())
                .arg(room.width())
                .arg(room.height());
        if (scrollsH || scrollsV) return {};   // inside a scrolled area: reachable by scrolling
    }
    return {};
}

// A dock behind another in a tab group is moved out of the window rather than hidden.
inline bool inBackgroundDock(const QWidget* w, const QWidget* window) {
    for (const QWidget* a = w; a && a != window; a = a->parentWidget())
        if (qobject_cast<const QDockWidget*>(a) && !window->rect().intersects(QRect(a->mapTo(window, QPoint(0, 0)), a->size()))) return true;
    return false;
}

inline QStringList layoutProblems(QWidget* window) {
    QStringList out;
    for (QWidget* w : window->findChildren<QWidget*>()) {
        if (!w->isVisible() || w->width() <= 0 || w->window() != window || inBackgroundDock(w, window)) continue;
        if (auto* bar = qobject_cast<QToolBar*>(w)) {
            for (QToolButton* ext : bar->findChildren<QToolButton*>(QStringLiteral("qt_toolbar_ext_button"), Qt::FindDirectChildrenOnly))
                if (ext->isVisible()) out << QStringLiteral("%1: actions hidden behind »").arg(widgetName(bar));
            continue;
        }
        if (auto* view = qobject_cast<QAbstractItemView*>(w); view && !qobject_cast<QHeaderView*>(w)) {   // a table that shows a row or two is no table
            const int rowHeight = view->fontMetrics().height() + 6;
            if (view->viewport()->height() < 3 * rowHeight)
                out << QStringLiteral("%1: shows %2 px of rows (3 rows need %3)").arg(widgetName(view)).arg(view->viewport()->height()).arg(3 * rowHeight);
            continue;
        }
        if (w->inherits("QCustomPlot") && (w->height() < 150 || w->width() < 200)) {   // axes and labels need room
            out << QStringLiteral("%1: a plot of %2×%3 px").arg(widgetName(w)).arg(w->width()).arg(w->height());
            continue;
        }
        if (!checked(w)) continue;
        if (const QString c = clipping(w); !c.isEmpty()) out << QStringLiteral("%1 %2").arg(widgetName(w), c);
        const TextRoom t = textRoom(w);
        if (t.need > t.have) out << QStringLiteral("%1: its text needs %2 px, has %3").arg(widgetName(w)).arg(t.need).arg(t.have);
    }
    return out;
}

} // namespace kvsteer::test
