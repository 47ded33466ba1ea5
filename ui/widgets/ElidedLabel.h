#pragma once
// ElidedLabel: one line of plain text that ends in "…" when its room is too narrow, the whole
// text in its tool tip (above the field's description, when it has one). For read-outs that may be long (a caption, a status) in panes that must
// not widen the window: they give up their tail, not their neighbours' room.
#include <QLabel>

namespace kvsteer::ui {

class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);
    void setFullText(const QString& text);
    QString fullText() const { return full_; }
    void setDescription(const QString& text);   // the tooltip: this, after the whole text while cut
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void elide();

    QString full_;
    QString description_;
};

} // namespace kvsteer::ui
