#include "widgets/FlowLayout.h"

#include <QWidget>

#include <algorithm>

namespace kvsteer::ui {

FlowLayout::FlowLayout(QWidget* parent, int hSpacing, int vSpacing) : QLayout(parent), hSpacing_(hSpacing), vSpacing_(vSpacing) {
    setContentsMargins(0, 0, 0, 0);
}

FlowLayout::~FlowLayout() {
    while (QLayoutItem* item = takeAt(0)) delete item;
}

void FlowLayout::addItem(QLayoutItem* item) { items_.append(item); }

QLayoutItem* FlowLayout::takeAt(int index) { return index >= 0 && index < items_.size() ? items_.takeAt(index) : nullptr; }

QSize FlowLayout::minimumSize() const {
    QSize size;
    for (const QLayoutItem* item : items_)
        if (!item->isEmpty()) size = size.expandedTo(item->sizeHint());   // items are not squeezed below their hint
    const QMargins m = contentsMargins();
    return size + QSize(m.left() + m.right(), m.top() + m.bottom());
}

QSize FlowLayout::sizeHint() const {
    int width = 0, height = 0, shown = 0;
    for (const QLayoutItem* item : items_) {
        if (item->isEmpty()) continue;
        width += item->sizeHint().width() + (shown++ > 0 ? hSpacing_ : 0);
        height = std::max(height, item->sizeHint().height());
    }
    const QMargins m = contentsMargins();
    return {width + m.left() + m.right(), height + m.top() + m.bottom()};
}

void FlowLayout::setGeometry(const QRect& rect) {
    QLayout::setGeometry(rect);
    arrange(rect, true);
}

int FlowLayout::arrange(const QRect& rect, bool place) const {
    const QRect area = rect.marginsRemoved(contentsMargins());
    int x = area.x(), y = area.y(), lineHeight = 0;
    QList<QLayoutItem*> line;   // the items of the current line, centred vertically on it when placed
    auto finishLine = [&] {
        if (place)
            for (QLayoutItem* item : line) {
                const QSize s = item->sizeHint();
                const QRect g = item->geometry();
                item->setGeometry(QRect(QPoint(g.x(), y + (lineHeight - s.height()) / 2), s));
            }
        line.clear();
    };
    for (QLayoutItem* item : items_) {
        if (item->isEmpty()) continue;
        const QSize s = item->sizeHint();
        if (!line.isEmpty() && x + s.width() > area.right() + 1) {   // wrap
            finishLine();
            y += lineHeight + vSpacing_;
            x = area.x();
            lineHeight = 0;
        }
        if (place) item->setGeometry(QRect(QPoint(x, y), s));
        line.append(item);
        x += s.width() + hSpacing_;
        lineHeight = std::max(lineHeight, s.height());
    }
    finishLine();
    const QMargins m = contentsMargins();
    return y + lineHeight - rect.y() + m.bottom();
}

} // namespace kvsteer::ui
