#include "studio/DemoScene.h"

#include "studio/ImageController.h"
#include "studio/ModelController.h"
#include "studio/SteeringController.h"
#include "widgets/PromptPanel.h"
#include "widgets/PlanForm.h"
#include "widgets/SteeringPanel.h"

#include <QDir>
#include <QFileInfo>

namespace kvsteer::ui {

DemoScenePaths demoScenePaths() {
    DemoScenePaths p;
    p.model = QStringLiteral(KVSTEER_STUDIO_DEMO_MODEL_DIR);
    p.image = QStringLiteral(KVSTEER_STUDIO_DEMO_IMAGES_DIR) + QStringLiteral("/red_circle.png");
    p.vectors = QStringLiteral(KVSTEER_STUDIO_DEMO_VECTORS);
    return p;
}

bool demoSceneInstalled() {
    const DemoScenePaths p = demoScenePaths();
    return QFileInfo::exists(p.model + QStringLiteral("/config.json")) && QFileInfo::exists(p.image) && QFileInfo::exists(p.vectors);
}

void openDemoScene(ModelController* models, ImageController* images, SteeringController* steering, PromptPanel* prompt,
                   SteeringPanel* panel) {
    const DemoScenePaths p = demoScenePaths();
    const bool loaded = QDir(models->info().directory).canonicalPath() == QDir(p.model).canonicalPath();
    if (!loaded && QDir(models->loadingDirectory()).canonicalPath() != QDir(p.model).canonicalPath()) models->open(p.model);
    images->openFile(p.image);
    prompt->setPrompt(p.question);
    steering->importMaskFrom(p.mask);
    steering->importFrom(p.vectors);
    PlanSettings plan;   // add, edit-only, every layer and head
    plan.ck = 0;
    plan.cv = 16;
    panel->planForm()->forgetRestored();   // the demo scene's plan, whole
    panel->setPlanSettings(plan);
}

} // namespace kvsteer::ui
