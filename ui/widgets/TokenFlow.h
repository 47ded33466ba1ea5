#pragma once
// TokenFlow: one generated answer as a flow of tokens, wrapped to the width. Tokens marked as
// different from the other stream get a coloured background; hovering a token shows the five
// most likely tokens of the distribution it was chosen from.
#include "types/StudioTypes.h"

#include <QColor>
#include <QWidget>

namespace kvsteer::ui {

class TokenFlow : public QWidget {
    Q_OBJECT
public:
    explicit TokenFlow(QWidget* parent = nullptr);

    void clear();
    void append(const StreamToken& token, bool differs);
    void setTokens(const QVector<StreamToken>& tokens, const QVector<bool>& differs);
    int count() const { return tokens_.size(); }
    const QVector<StreamToken>& tokens() const { return tokens_; }
    bool differs(int index) const { return differs_.value(index); }
    QString text() const;
    int differingCount() const;

    void setAccent(const QColor& c);
    void setPlaceholder(const QString& text);
    void setStale(bool stale);   // greys the text: it no longer matches the settings
    bool isStale() const { return stale_; }
    // Tooltip text for token `index` (what hovering shows).
    QString tooltipFor(int index) const;
    int tokenAt(const QPointF& pos) const;   // -1 if none
    QRectF tokenRect(int index) const;

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override { return {120, 60}; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    bool event(QEvent* event) override;

private:
    struct Piece {            // one drawn run of a token (a token with a newline has several)
        int token = 0;
        QString text;
        QRectF rect;
    };
    QVector<Piece> layout(int width, qreal* height) const;
    void relayout();

    QVector<StreamToken> tokens_;
    QVector<bool> differs_;
    QVector<Piece> pieces_;
    QColor accent_{0xF0, 0x7A, 0x1A};
    QString placeholder_;
    bool stale_ = false;
    int hovered_ = -1;
    int laidOutWidth_ = -1;
    qreal contentHeight_ = 0;
};

} // namespace kvsteer::ui
