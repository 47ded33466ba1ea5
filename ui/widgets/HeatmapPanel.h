#pragma once
// HeatmapPanel: per-layer statistics over the patch grid, drawn with QCustomPlot colour maps —
// small multiples of every layer for the chosen metric, and the selected layer large with a
// colour scale. Head selector (mean over KV heads or one head), stream selector (steered or
// unsteered), hover read-out (layer / row / col / value), click a cell to point at that patch
// on the image, save as PNG. Attention maps refresh at every decoding step.
#include "types/StudioTypes.h"

#include <QPointer>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPAxisRect;
class QCPItemRect;
class QCPLayoutGrid;
class QCPTextElement;
class QLabel;
class QMouseEvent;
class QTimer;

namespace kvsteer::ui {

class ElidedLabel;

class HeatmapPanel : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapPanel(QWidget* parent = nullptr);

    // The model's layers, KV heads and patch grid (any rows × cols; the grid shapes the plots
    // until data arrives, which then brings its own).
    void setModel(int layers, int kvHeads, int gridRows = 0, int gridCols = 0);
    int gridRows() const { return data_.valid() ? data_.rows : gridRows_; }
    int gridCols() const { return data_.valid() ? data_.cols : gridCols_; }
    int columns() const { return columns_; }   // of small multiples, as laid out now
    HeatmapSettings settings() const;
    void setSettings(const HeatmapSettings& s);
    // A picture in views (LLaVA-NeXT): their names ("base 24×24", ...), the canvas's last; the
    // View box shows only with two or more.
    void setViews(const QStringList& views);
    int selectedLayer() const { return selected_; }
    const HeatmapData& data() const { return data_; }
    int updateCount() const { return updates_; }
    bool savePng(const QString& path);
    void clear();
    QCustomPlot* detailPlot() const { return detail_; }
    QCustomPlot* multiplesPlot() const { return multiples_; }
    QString hoverText() const;

public Q_SLOTS:
    void setData(const kvsteer::ui::HeatmapData& data);
    void setSelectedLayer(int layer);
    void markCell(int row, int col);   // -1, -1 clears

Q_SIGNALS:
    void settingsChanged(const kvsteer::ui::HeatmapSettings& settings);
    void cellClicked(int row, int col);
    void layerSelected(int layer);
    void updated();
    void saveRequested();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildDetail();   // HeatmapPanelDetail.cpp, with the other detail_ functions
    void rebuildMultiples(int layers);
    void packRows();
    QFont titleFont() const;
    int multiplesTitleHeight() const;
    void styleFrames();
    void applyData();
    void fitDetailAxes();
    void refreshDetail();
    void updateCaption();
    void onMultiplesMove(QMouseEvent* event);
    void onMultiplesClick(QMouseEvent* event);
    void onDetailMove(QMouseEvent* event);
    void onDetailClick(QMouseEvent* event);
    bool cellAt(QCPAxisRect* rect, const QPointF& pos, int* row, int* col) const;
    void showHover(int layer, int row, int col, const QPoint& globalPos);

    QComboBox* metric_ = nullptr;
    QComboBox* head_ = nullptr;
    QComboBox* stream_ = nullptr;
    QComboBox* view_ = nullptr;
    QWidget* viewGroup_ = nullptr;
    QCheckBox* perLayerRange_ = nullptr;
    ElidedLabel* caption_ = nullptr;
    ElidedLabel* hover_ = nullptr;
    QCustomPlot* multiples_ = nullptr;
    QCustomPlot* detail_ = nullptr;
    QCPColorMap* detailMap_ = nullptr;
    QCPColorScale* scale_ = nullptr;
    QCPLayoutGrid* body_ = nullptr;
    QCPTextElement* detailTitle_ = nullptr;
    QCPItemRect* marker_ = nullptr;
    QVector<QCPAxisRect*> rects_;
    QVector<QCPColorMap*> maps_;
    QVector<QCPTextElement*> titles_;
    QVector<QCPItemRect*> frames_;
    QTimer* redraw_ = nullptr;

    HeatmapData data_;
    bool pending_ = false;
    int layers_ = 0;
    int columns_ = 0;
    // "Range per layer", remembered per metric: on for attention (one hot spot would darken the
    // other layers), off for the cache statistics (their layers compare on one scale).
    QVector<bool> perLayer_ = {false, false, false, false, false, true};
    int kvHeads_ = 0;
    int gridRows_ = 24, gridCols_ = 24;   // a placeholder until a model is loaded
    int selected_ = 0;
    int updates_ = 0;
    int markRow_ = -1, markCol_ = -1;
    bool blockSignals_ = false;
};

} // namespace kvsteer::ui
