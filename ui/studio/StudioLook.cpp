#include "studio/StudioLook.h"

#include <QApplication>
#include <QFont>
#include <QPalette>
#include <QStyleFactory>

namespace kvsteer::ui {

void applyStudioLook(QApplication& app) {
    app.setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QPalette p;
    const QColor window(0xF3, 0xF4, 0xF6), base(0xFF, 0xFF, 0xFF), text(0x1F, 0x23, 0x28), mid(0xD5, 0xD9, 0xDE);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(0xF7, 0xF8, 0xFA));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(0xFA, 0xFB, 0xFC));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::Mid, mid);
    p.setColor(QPalette::Midlight, QColor(0xE6, 0xE9, 0xED));
    p.setColor(QPalette::Dark, QColor(0xA9, 0xB0, 0xB8));
    p.setColor(QPalette::Light, Qt::white);
    p.setColor(QPalette::Highlight, QColor(0x2F, 0x6F, 0xD0));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, QColor(0xFF, 0xFF, 0xFF));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(0x8A, 0x92, 0x9C));
    p.setColor(QPalette::Link, QColor(0x2F, 0x6F, 0xD0));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0xA0, 0xA6, 0xAD));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0xA0, 0xA6, 0xAD));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0xA0, 0xA6, 0xAD));
    app.setPalette(p);
    QFont f = app.font();
    if (f.pointSizeF() < 9.5) f.setPointSizeF(9.5);
    app.setFont(f);
    app.setStyleSheet(QStringLiteral(
        "QGroupBox { font-weight: 600; border: 1px solid #D5D9DE; border-radius: 6px; margin-top: 10px; padding-top: 6px;"
        " background: #FAFBFC; }"
        "QGroupBox::title { subcontrol-origin: margin; left: 10px; padding: 0 4px; color: #3A404A; }"
        "QPushButton#runButton { background: #2E9D5B; color: white; border: 1px solid #23854B; border-radius: 4px;"
        " padding: 5px 14px; font-weight: 600; }"
        "QPushButton#runButton:hover { background: #33AC64; }"
        "QPushButton#runButton:disabled { background: #A8D5BA; border-color: #A8D5BA; }"
        "QToolTip { border: 1px solid #C9CED4; padding: 4px; }"
        "QDockWidget::title { padding: 6px 8px; background: #E9ECEF; font-weight: 600; }"
        "QStatusBar QLabel { color: #4A515B; }"
        "QStatusBar::item { border: none; }"));
}

} // namespace kvsteer::ui
