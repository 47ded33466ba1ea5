#pragma once
// AtlasView: the steering atlas as a picture — one cell per setting (rows: layer ranges, columns:
// strengths), coloured by outcome (same as unsteered / a different answer / degenerate) with the
// answer's first words written in it. Cells fill in as they arrive; hovering shows the whole
// answer and its degeneration signals; a click emits the cell (to adopt its setting). When the
// inputs change the atlas is marked out of date: dimmed, with a line saying so.
#include "types/AtlasTypes.h"

#include <QWidget>

namespace kvsteer::ui {

class AtlasView : public QWidget {
    Q_OBJECT
public:
    explicit AtlasView(QWidget* parent = nullptr);

    void start(const AtlasStarted& info);    // a new grid, every cell pending
    void setCell(const AtlasCellResult& cell);
    void clear();
    void setStale(bool stale);
    void setSelected(int index);             // the cell that is the panel's current setting (-1: none)

    bool stale() const { return stale_; }
    int rows() const { return info_.layerLabels.size(); }
    int columns() const { return info_.strengths.size(); }
    const AtlasStarted& info() const { return info_; }
    const AtlasCellResult& cell(int index) const;   // invalid while pending
    int finishedCells() const;
    QRect cellRect(int index) const;         // widget coordinates (tests click it)
    QString toolTipFor(int index) const;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

Q_SIGNALS:
    void cellClicked(const kvsteer::ui::AtlasCellResult& cell);

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;

private:
    int indexAt(const QPoint& p) const;
    QRect gridRect() const;

    AtlasStarted info_;
    QVector<AtlasCellResult> cells_;
    bool stale_ = false;
    int selected_ = -1;
    int hovered_ = -1;
};

} // namespace kvsteer::ui
