#pragma once
// PatchCanvas: the image exactly as the model sees it (its processor's resize and crop), the
// visual-token grid over it — any rows × cols, from LLaVA's 24×24 to PaliGemma's 64×64 — and the
// painted steering strength as a translucent overlay.
//
// The strength map is the plan's map: cell (r, c) of strength() is what the Worker puts in
// SteeringPlan::strength for visual token r * cols + c. Brush (with tablet pressure), eraser and
// rectangle tools, fill / clear / invert; every edit is one QUndoCommand on the shared stack.
// Right-dragging erases with any tool. Images can be dropped on the canvas. Brush sizes are in
// cells. Grid lines are thinned when cells get small on screen (gridLineStep()).
//
// A prompt without an image is painted as its token strip instead (setTokenStrip): one chip per
// token the cache holds, a 1 × N map, the same tools; "last token" is one click (paintLastToken).
#include "types/StrengthGrid.h"
#include "widgets/TokenStripLayout.h"

#include <QImage>
#include <QPointer>
#include <QWidget>

class QUndoStack;

namespace kvsteer::ui {

class PatchCanvas : public QWidget {
    Q_OBJECT
public:
    enum class Tool { Brush, Eraser, Rectangle };
    Q_ENUM(Tool)

    explicit PatchCanvas(QUndoStack* undoStack, QWidget* parent = nullptr);

    // ---- image ----
    void setImage(const QImage& crop, const QString& name);
    void clearImage();
    bool hasImage() const { return !image_.isNull(); }
    const QImage& image() const { return image_; }
    QString imageName() const { return imageName_; }

    // ---- token strip (a text prompt: no image) ----
    // Shows the tokens as a 1 × N strip; the paint follows the tokens the old and new strips
    // share (TokenStripLayout::carryStrength). An empty list leaves strip mode.
    void setTokenStrip(const QStringList& pieces);
    bool isTokenStrip() const { return !strip_.isEmpty(); }
    const QStringList& tokenPieces() const { return strip_.tokens(); }
    bool canPaint() const { return hasImage() || isTokenStrip(); }

    // ---- grid and map ----
    // A different size carries the painted map over (resampleStrength: area-weighted, see
    // StrengthGridResample.h) and clears the undo history, whose maps have the old size. Emits
    // gridSizeChanged, and mapResampled when there was paint to carry.
    void setGridSize(int rows, int cols);
    int gridRows() const { return strength_.rows; }
    int gridCols() const { return strength_.cols; }
    const StrengthGrid& strength() const { return strength_; }
    // Replaces the map as one undoable edit named `undoText`.
    void setStrength(const StrengthGrid& grid, const QString& undoText);
    // Sets the map without touching the undo stack (used by the undo commands themselves).
    void applyStrength(const StrengthGrid& grid);

    // ---- tools ----
    Tool tool() const { return tool_; }
    double brushSize() const { return brushSize_; }          // diameter in cells
    double maxBrushSize() const;                             // 16 cells, or half the grid's longer side
    double brushStrength() const { return brushStrength_; }  // 0..1
    bool gridVisible() const { return gridVisible_; }

    // ---- geometry (widget coordinates) ----
    QRectF imageRect() const;
    QPointF cellCenter(int row, int col) const;
    QSizeF cellSize() const;                 // one cell on screen, in pixels
    // Which grid lines are drawn (when the grid is shown): every line while a cell is at least
    // kMinLinePitch px on screen, else every 2nd / 4th / 8th / 16th so lines stay that far apart,
    // 0 (none) when even that is too dense. The image's outline is always drawn.
    int gridLineStep() const;
    static constexpr double kMinLinePitch = 8.0;
    QSize sizeHint() const override { return {420, 420}; }
    QSize minimumSizeHint() const override { return {200, 200}; }

public Q_SLOTS:
    void setTool(kvsteer::ui::PatchCanvas::Tool tool);
    void setBrushSize(double cells);
    void setBrushStrength(double strength);
    void setGridVisible(bool visible);
    void fillAll();
    void clearAll();
    void invert();
    void highlightCell(int row, int col);   // -1, -1 clears the highlight
    QPoint highlightedCell() const { return {highlightCol_, highlightRow_}; }   // (col, row); (-1, -1): none
    void paintLastToken();                  // the strip's last token at the brush strength, the rest 0 (one undo step)

Q_SIGNALS:
    void strengthChanged(const kvsteer::ui::StrengthGrid& grid);   // every change, live during strokes
    void editFinished();                                            // a stroke / rectangle / command ended
    void hoverCell(int row, int col, float value);                  // -1, -1 when the pointer leaves
    void imageFileDropped(const QString& path);
    void imageDropped(const QImage& image);
    void toolChanged(kvsteer::ui::PatchCanvas::Tool tool);
    void brushSizeChanged(double cells);
    void brushStrengthChanged(double strength);
    void gridVisibleChanged(bool visible);
    void gridSizeChanged(int rows, int cols);
    // setGridSize carried a painted map of fromRows × fromCols over onto the new grid.
    void mapResampled(int fromRows, int fromCols, int toRows, int toCols);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void tabletEvent(QTabletEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dragLeaveEvent(QDragLeaveEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    QPointF toCells(const QPointF& widgetPos) const;   // continuous (x = col, y = row) in cell units
    void beginEdit(const QPointF& pos, bool erase, double pressure);
    void continueEdit(const QPointF& pos, double pressure);
    void endEdit();
    void dab(const QPointF& from, const QPointF& to, double pressure);
    void recomputeFromCoverage();
    QRect rubberCells() const;                          // inclusive cell rectangle of a rectangle drag
    void pushEdit(const StrengthGrid& before, const QString& text);
    // Drawing (PatchCanvasPainting.cpp); r is where the image is drawn.
    QRectF cellRectIn(const QRectF& r, int row, int col) const;
    void paintEmptyState(QPainter& p);
    void paintStrength(QPainter& p, const QRectF& r);
    void paintGridLines(QPainter& p, const QRectF& r);
    void paintStrengthOutline(QPainter& p, const QRectF& r);
    void paintRubberBand(QPainter& p, const QRectF& r);
    void paintHighlight(QPainter& p, const QRectF& r);
    void paintBrushOutline(QPainter& p, const QRectF& r);
    void updateHeightCap();

    QPointer<QUndoStack> undo_;
    QImage image_;
    QString imageName_;
    TokenStripLayout strip_;
    StrengthGrid strength_;

    Tool tool_ = Tool::Brush;
    double brushSize_ = 3.0;
    double brushStrength_ = 1.0;
    bool gridVisible_ = true;

    // The edit in progress.
    bool editing_ = false;
    bool erasing_ = false;
    bool rectMode_ = false;
    StrengthGrid before_;
    QVector<float> coverage_;
    QPointF lastCellPos_, rectStart_, rectEnd_;

    QPointF hoverPos_{-1, -1};
    int highlightRow_ = -1, highlightCol_ = -1;
    bool dragHover_ = false;
};

} // namespace kvsteer::ui
