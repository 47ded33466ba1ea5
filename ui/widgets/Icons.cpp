#include "Icons.h"

#include <QApplication>
#include <QIconEngine>
#include <QPainter>
#include <QPainterPath>
#include <QPalette>
#include <QPixmap>

#include <functional>

// The PNGs are compiled into the static kvsteer_ui_widgets library; a static library's resources
// must be registered explicitly, from outside any namespace.
static void initIconResources() { Q_INIT_RESOURCE(studio); }

namespace kvsteer::ui::icons {

namespace {

const QColor kAccent(0xF0, 0x7A, 0x1A);   // the painted-strength orange
const QColor kGo(0x2E, 0x9D, 0x5B);
const QColor kHalt(0xD0, 0x44, 0x3E);
const QColor kBlue(0x2F, 0x6F, 0xD0);

struct Pens {
    QColor ink;      // main strokes
    QColor accent;   // coloured detail
    bool disabled = false;
};

using Painter = std::function<void(QPainter&, const Pens&)>;

// Paints a 24×24 design scaled into any rectangle.
class VectorIconEngine : public QIconEngine {
public:
    explicit VectorIconEngine(Painter p, QColor accent) : paint_(std::move(p)), accent_(accent) {}
    void paint(QPainter* painter, const QRect& rect, QIcon::Mode mode, QIcon::State) override {
        const QPalette pal = QApplication::palette();
        Pens pens;
        pens.disabled = mode == QIcon::Disabled;
        pens.ink = pens.disabled ? pal.color(QPalette::Disabled, QPalette::WindowText) : QColor(0x3A, 0x40, 0x4A);
        if (mode == QIcon::Selected) pens.ink = pal.color(QPalette::HighlightedText);
        pens.accent = pens.disabled ? pens.ink.lighter(115) : accent_;
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        const qreal side = qMin(rect.width(), rect.height());
        painter->translate(rect.x() + (rect.width() - side) / 2.0, rect.y() + (rect.height() - side) / 2.0);
        painter->scale(side / 24.0, side / 24.0);
        paint_(*painter, pens);
        painter->restore();
    }
    QPixmap pixmap(const QSize& size, QIcon::Mode mode, QIcon::State state) override {
        return scaledPixmap(size, mode, state, 1.0);
    }
    QPixmap scaledPixmap(const QSize& size, QIcon::Mode mode, QIcon::State state, qreal scale) override {
        QPixmap pm(size * scale);
        pm.setDevicePixelRatio(scale);
        pm.fill(Qt::transparent);
        QPainter p(&pm);
        paint(&p, QRect(QPoint(0, 0), size), mode, state);
        return pm;
    }
    QIconEngine* clone() const override { return new VectorIconEngine(paint_, accent_); }

private:
    Painter paint_;
    QColor accent_;
};

QPen pen(const QColor& c, qreal w = 1.8) { return QPen(c, w, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin); }

QIcon make(Painter p, QColor accent = kAccent) { return QIcon(new VectorIconEngine(std::move(p), accent)); }

void drawPicture(QPainter& p, const Pens& s) {
    p.setPen(pen(s.ink));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(QRectF(3, 4.5, 18, 15), 2, 2);
    p.setPen(Qt::NoPen);
    p.setBrush(s.accent);
    p.drawEllipse(QPointF(8.5, 9.5), 1.8, 1.8);
    QPainterPath m;
    m.moveTo(4.5, 18);
    m.lineTo(10, 12);
    m.lineTo(13.5, 15.5);
    m.lineTo(16, 13);
    m.lineTo(19.5, 18);
    m.closeSubpath();
    p.setBrush(s.ink);
    p.drawPath(m);
}

void drawFolder(QPainter& p, const Pens& s) {
    QPainterPath f;
    f.moveTo(3, 7);
    f.lineTo(3, 19);
    f.lineTo(21, 19);
    f.lineTo(21, 8.5);
    f.lineTo(11.5, 8.5);
    f.lineTo(9.5, 6);
    f.lineTo(3.8, 6);
    f.closeSubpath();
    p.setPen(pen(s.ink));
    p.setBrush(Qt::NoBrush);
    p.drawPath(f);
}

void drawArrowDown(QPainter& p, const QColor& c, qreal x, qreal top, qreal bottom) {
    p.setPen(pen(c));
    p.drawLine(QPointF(x, top), QPointF(x, bottom));
    p.drawLine(QPointF(x - 3.5, bottom - 3.5), QPointF(x, bottom));
    p.drawLine(QPointF(x + 3.5, bottom - 3.5), QPointF(x, bottom));
}

void drawArrowUp(QPainter& p, const QColor& c, qreal x, qreal top, qreal bottom) {
    p.setPen(pen(c));
    p.drawLine(QPointF(x, top), QPointF(x, bottom));
    p.drawLine(QPointF(x - 3.5, top + 3.5), QPointF(x, top));
    p.drawLine(QPointF(x + 3.5, top + 3.5), QPointF(x, top));
}

void drawTray(QPainter& p, const Pens& s) {
    p.setPen(pen(s.ink));
    p.setBrush(Qt::NoBrush);
    QPainterPath t;
    t.moveTo(4, 14);
    t.lineTo(4, 20);
    t.lineTo(20, 20);
    t.lineTo(20, 14);
    p.drawPath(t);
}

void drawMiniGrid(QPainter& p, const Pens& s, QRectF r, int n) {
    p.setPen(pen(s.ink, 1.2));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r);
    for (int i = 1; i < n; ++i) {
        const qreal x = r.left() + r.width() * i / n, y = r.top() + r.height() * i / n;
        p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
        p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
    }
}

} // namespace

QIcon get(Id id) {
    switch (id) {
    case Id::OpenImage:
        return make(drawPicture);
    case Id::OpenModel:
        return make([](QPainter& p, const Pens& s) {
            drawFolder(p, s);
            // a small network inside the folder
            p.setPen(pen(s.accent, 1.4));
            p.drawLine(QPointF(8.5, 12.5), QPointF(12, 15.5));
            p.drawLine(QPointF(15.5, 12.5), QPointF(12, 15.5));
            p.setPen(Qt::NoPen);
            p.setBrush(s.accent);
            for (QPointF c : {QPointF(8.5, 12.5), QPointF(15.5, 12.5), QPointF(12, 15.5)}) p.drawEllipse(c, 1.7, 1.7);
        }, kBlue);
    case Id::OpenSession:
        return make([](QPainter& p, const Pens& s) {
            drawFolder(p, s);
            drawArrowUp(p, s.accent, 12, 10.5, 17);
        }, kBlue);
    case Id::SaveSession:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(pen(s.ink));
            p.setBrush(Qt::NoBrush);
            QPainterPath b;
            b.moveTo(4, 4);
            b.lineTo(16.5, 4);
            b.lineTo(20, 7.5);
            b.lineTo(20, 20);
            b.lineTo(4, 20);
            b.closeSubpath();
            p.drawPath(b);
            p.drawRect(QRectF(8, 4, 7, 5));
            p.setBrush(s.accent);
            p.setPen(Qt::NoPen);
            p.drawRoundedRect(QRectF(7, 12.5, 10, 5), 1, 1);
        }, kBlue);
    case Id::Paste:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(pen(s.ink));
            p.setBrush(Qt::NoBrush);
            p.drawRoundedRect(QRectF(5, 5, 14, 16), 2, 2);
            p.setBrush(s.accent);
            p.drawRoundedRect(QRectF(9, 3, 6, 4), 1, 1);
        });
    case Id::Run:
        return make([](QPainter& p, const Pens& s) {
            QPainterPath t;
            t.moveTo(7, 4.5);
            t.lineTo(19.5, 12);
            t.lineTo(7, 19.5);
            t.closeSubpath();
            p.setPen(pen(s.accent, 1.6));
            p.setBrush(s.accent);
            p.drawPath(t);
        }, kGo);
    case Id::Stop:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(Qt::NoPen);
            p.setBrush(s.accent);
            p.drawRoundedRect(QRectF(5.5, 5.5, 13, 13), 2.2, 2.2);
        }, kHalt);
    case Id::Brush:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(pen(s.ink));
            p.drawLine(QPointF(20, 4), QPointF(11, 13));
            QPainterPath tip;
            tip.moveTo(10.5, 12.2);
            tip.cubicTo(7, 11.5, 5, 14, 5, 16.5);
            tip.cubicTo(5, 18.5, 4, 19.5, 3, 20);
            tip.cubicTo(7.5, 20.5, 12.5, 19, 11.8, 13.5);
            tip.closeSubpath();
            p.setPen(pen(s.accent, 1.2));
            p.setBrush(s.accent);
            p.drawPath(tip);
        });
    case Id::Eraser:
        return make([](QPainter& p, const Pens& s) {
            p.save();
            p.translate(12, 12);
            p.rotate(-45);
            p.setPen(pen(s.ink));
            p.setBrush(Qt::NoBrush);
            p.drawRoundedRect(QRectF(-8, -4, 16, 8), 1.5, 1.5);
            p.setBrush(s.accent);
            p.drawRoundedRect(QRectF(-8, -4, 6, 8), 1.5, 1.5);
            p.restore();
            p.setPen(pen(s.ink, 1.4));
            p.drawLine(QPointF(10, 20.5), QPointF(20, 20.5));
        }, QColor(0xE8, 0x8A, 0xA8));
    case Id::Rectangle:
        return make([](QPainter& p, const Pens& s) {
            QColor fill = s.accent;
            fill.setAlphaF(0.35);
            p.setBrush(fill);
            QPen dash = pen(s.ink, 1.6);
            dash.setDashPattern({2.0, 1.6});
            p.setPen(dash);
            p.drawRect(QRectF(4, 5, 16, 14));
        });
    case Id::Fill:
        return make([](QPainter& p, const Pens& s) {
            QColor fill = s.accent;
            fill.setAlphaF(0.8);
            p.setPen(Qt::NoPen);
            p.setBrush(fill);
            p.drawRect(QRectF(4, 4, 16, 16));
            drawMiniGrid(p, s, QRectF(4, 4, 16, 16), 3);
        });
    case Id::Clear:
        return make([](QPainter& p, const Pens& s) {
            drawMiniGrid(p, s, QRectF(4, 4, 16, 16), 3);
            p.setPen(pen(s.accent, 2.0));
            p.drawLine(QPointF(15, 15), QPointF(21, 21));
            p.drawLine(QPointF(21, 15), QPointF(15, 21));
        }, kHalt);
    case Id::Invert:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(Qt::NoPen);
            p.setBrush(s.accent);
            QPainterPath half;
            half.moveTo(4, 4);
            half.lineTo(20, 4);
            half.lineTo(4, 20);
            half.closeSubpath();
            p.drawPath(half);
            drawMiniGrid(p, s, QRectF(4, 4, 16, 16), 1);
        });
    case Id::Grid:
        return make([](QPainter& p, const Pens& s) { drawMiniGrid(p, s, QRectF(3.5, 3.5, 17, 17), 4); });
    case Id::Undo:
    case Id::Redo: {
        const bool redo = id == Id::Redo;
        return make([redo](QPainter& p, const Pens& s) {
            if (redo) {
                p.translate(24, 0);
                p.scale(-1, 1);
            }
            p.setPen(pen(s.ink));
            p.setBrush(Qt::NoBrush);
            QPainterPath a;
            a.moveTo(6, 10);
            a.lineTo(15, 10);
            a.cubicTo(18.5, 10, 20, 12.5, 20, 14.5);
            a.cubicTo(20, 16.5, 18.5, 19, 15, 19);
            a.lineTo(10, 19);
            p.drawPath(a);
            p.drawLine(QPointF(6, 10), QPointF(9.5, 6.5));
            p.drawLine(QPointF(6, 10), QPointF(9.5, 13.5));
        });
    }
    case Id::ExportVectors:
        return make([](QPainter& p, const Pens& s) {
            drawTray(p, s);
            drawArrowUp(p, s.accent, 12, 3.5, 15);
        }, kBlue);
    case Id::ImportVectors:
        return make([](QPainter& p, const Pens& s) {
            drawTray(p, s);
            drawArrowDown(p, s.accent, 12, 3.5, 15.5);
        }, kBlue);
    case Id::ExportMask:
        return make([](QPainter& p, const Pens& s) {
            QColor fill = s.accent;
            fill.setAlphaF(0.8);
            p.setPen(Qt::NoPen);
            p.setBrush(fill);
            p.drawRect(QRectF(8, 8, 6, 6));
            drawMiniGrid(p, s, QRectF(4, 4, 14, 14), 3);
            drawArrowDown(p, s.ink, 19, 12, 21);
        });
    case Id::SavePlot:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(Qt::NoPen);
            const QColor cols[] = {QColor(0x44, 0x01, 0x54), QColor(0x31, 0x68, 0x8E), QColor(0x35, 0xB7, 0x79), QColor(0xFD, 0xE7, 0x25)};
            for (int r = 0; r < 3; ++r)
                for (int c = 0; c < 3; ++c) {
                    QColor col = cols[(r + c) % 4];
                    if (s.disabled) col = s.ink;
                    p.setBrush(col);
                    p.drawRect(QRectF(4 + c * 4.5, 4 + r * 4.5, 4.2, 4.2));
                }
            drawArrowDown(p, s.ink, 19.5, 11, 21);
        });
    case Id::Compute:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(pen(s.ink));
            p.drawLine(QPointF(4, 19), QPointF(20, 19));
            p.setPen(pen(s.accent, 2.2));
            p.drawLine(QPointF(6, 16), QPointF(17, 7));
            p.drawLine(QPointF(17, 7), QPointF(12.5, 7.5));
            p.drawLine(QPointF(17, 7), QPointF(16.5, 11.5));
        }, kBlue);
    case Id::About:
        return make([](QPainter& p, const Pens& s) {
            p.setPen(pen(s.ink));
            p.setBrush(Qt::NoBrush);
            p.drawEllipse(QPointF(12, 12), 8.5, 8.5);
            p.setPen(pen(s.accent, 2.2));
            p.drawLine(QPointF(12, 11), QPointF(12, 16.5));
            p.drawPoint(QPointF(12, 7.5));
        }, kBlue);
    }
    return {};
}

QIcon application() {
    static const bool registered = (initIconResources(), true);
    (void)registered;
    QIcon icon;
    for (int size : {16, 32, 64, 128, 256}) icon.addFile(QStringLiteral(":/icons/kvsteer-%1.png").arg(size), QSize(size, size));
    return icon;
}

} // namespace kvsteer::ui::icons
