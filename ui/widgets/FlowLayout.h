#pragma once
// FlowLayout: items left to right, wrapping onto a new line when the next one does not fit — the
// way words wrap in a paragraph. A row of controls (a tool bar's groups, a panel's buttons) keeps
// every control whole on a narrow screen instead of clipping it or hiding it behind "»", and takes
// one line where there is room. It answers heightForWidth, so the layout above gives it the
// lines it needs.
#include <QLayout>
#include <QList>

namespace kvsteer::ui {

class FlowLayout : public QLayout {
public:
    explicit FlowLayout(QWidget* parent = nullptr, int hSpacing = 6, int vSpacing = 4);
    ~FlowLayout() override;

    void addItem(QLayoutItem* item) override;
    int count() const override { return int(items_.size()); }
    QLayoutItem* itemAt(int index) const override { return items_.value(index); }
    QLayoutItem* takeAt(int index) override;
    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override { return arrange(QRect(0, 0, width, 0), false); }
    QSize minimumSize() const override;   // the widest item: each may need a line of its own
    QSize sizeHint() const override;      // everything on one line
    void setGeometry(const QRect& rect) override;

private:
    int arrange(const QRect& rect, bool place) const;   // the height used; places the items when asked

    QList<QLayoutItem*> items_;
    int hSpacing_, vSpacing_;
};

} // namespace kvsteer::ui
