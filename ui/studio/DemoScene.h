#pragma once
// DemoScene: the bundled demo as one scene — the demo model, red_circle.png, the question "What
// color is the circle?", the shipped red→blue vectors (their suggestions: add, c_v 16, every
// layer) and the circle painted — so one press of Run shows "red" beside "blue". The studio opens
// it on a first run (no session to recover, no image chosen) and File → Open Demo Scene brings it
// back any time.
#include <QString>

namespace kvsteer::ui {

class ImageController;
class ModelController;
class PromptPanel;
class SteeringPanel;
class SteeringController;

struct DemoScenePaths {
    QString model, image, vectors;
    QString question = QStringLiteral("What color is the circle?");
    QString mask = QStringLiteral("rect:6,9,15,18");   // the circle's cells on the 24×24 grid (README)
};
DemoScenePaths demoScenePaths();
bool demoSceneInstalled();

// Loads the demo model unless it is the one loaded, then the image, the question, the mask and the
// vectors (each request queues behind the model on the worker, so the order holds).
// The plan is set to the demo's (add, edit-only, c_k 0, c_v 16, every layer and head) as well: a
// file's suggestions leave what it does not name (its "every layer") as the panel had it.
void openDemoScene(ModelController* models, ImageController* images, SteeringController* steering, PromptPanel* prompt,
                   SteeringPanel* panel);

} // namespace kvsteer::ui
