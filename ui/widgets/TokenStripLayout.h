#pragma once
// TokenStripLayout: a text prompt's tokens laid out like text, one chip per token, wrapped into
// lines — what the PatchCanvas shows instead of an image when the prompt has none. Strip cell
// i is chip i (the plan's 1 × N map over the tokens the cache holds). The layout also maps the
// pointer to continuous cell coordinates, so the canvas's brush, eraser and rectangle work on
// tokens exactly as they do on patches (a drag across lines covers the tokens between).
#include "types/StrengthGrid.h"

#include <QColor>
#include <QFont>
#include <QRectF>
#include <QStringList>
#include <QVector>

class QPainter;

namespace kvsteer::ui {

class TokenStripLayout {
public:
    void setTokens(const QStringList& pieces) { pieces_ = pieces; }
    const QStringList& tokens() const { return pieces_; }
    int count() const { return int(pieces_.size()); }
    bool isEmpty() const { return pieces_.isEmpty(); }

    // Lays the chips out inside `area` with `font` (call on every resize and new tokens).
    void layOut(const QRectF& area, const QFont& font);
    QRectF chip(int i) const { return chips_.value(i); }
    QRectF bounds() const;                      // the chips' bounding box
    // The pointer as cell coordinates (x = token index + the fraction across its chip, y = 0.5);
    // between chips, the nearest chip in reading order.
    QPointF toCells(const QPointF& pos) const;

    // Chips with their text, the painted strength as the canvas's overlay colour, the
    // highlighted token (-1: none) outlined.
    void paint(QPainter& p, const StrengthGrid& strength, int highlight, const QColor& paintColour) const;

    // The paint of a strip over `oldPieces` carried onto `newPieces` after the prompt changed:
    // tokens the two share at the start and at the end keep their strength (so a painted last
    // token stays on the last token while the question is edited), new tokens in between are 0.
    static StrengthGrid carryStrength(const QStringList& oldPieces, const StrengthGrid& old, const QStringList& newPieces);

    // How a token reads on a chip: whitespace made visible (a leading space as "·", a newline as "↵").
    static QString display(const QString& piece);

private:
    QStringList pieces_;
    QVector<QRectF> chips_;
    QFont font_;
};

} // namespace kvsteer::ui
