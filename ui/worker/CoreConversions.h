#pragma once
// Conversions between the studio's Qt values and the core's: strength grids <-> tensors, images,
// readable token pieces, a decoded token with its top-5, the vector file's summary, and a failure
// as a sentence for a dialog. Worker-internal: like every file in ui/worker/, it includes the core
// (and ATen) before any Qt header, because Qt's `slots` keyword breaks ATen headers after it.
#include "Elapsed.h"   // msSince, for the workers' timings
#include "generate/Session.h"
#include "generate/TokenStream.h"
#include "io/Image.h"
#include "steer/PlanOptions.h"
#include "steer/SteeringVectors.h"
#include "text/Tokenizer.h"

#include <ATen/core/Tensor.h>

#include <exception>
#include <string>
#include <vector>

#include "types/StudioTypes.h"

#include <QImage>
#include <QString>
#include <QVector>

namespace kvsteer::ui {

inline QString qs(const std::string& s) { return QString::fromStdString(s); }
inline std::string ss(const QString& s) { return s.toStdString(); }

// Readable text for anything the core or libtorch can throw while doing `what`.
QString describeFailure(const QString& what, const std::exception_ptr& error);
at::Tensor gridTensor(const StrengthGrid& g);        // [rows, cols] float32
StrengthGrid gridFromTensor(const at::Tensor& t);
QVector<float> toVector(const at::Tensor& t);
QImage toQImage(const ImageU8& img);
// A token piece as a person reads it: "▁blue" → " blue", "<0x0A>" → "↵".
QString readablePiece(const kvsteer::Tokenizer& tok, int64_t id);
// The first n of a prompt's tokens as a person reads them: the token strip's chips.
QStringList stripPieces(const kvsteer::Tokenizer& tok, const std::vector<int64_t>& ids, int64_t n);
std::vector<int> layerRange(const PlanSettings& p, int layers);   // the panel's range, clamped to the model
kvsteer::PlanOptions planOptions(const PlanSettings& p, int layers);   // the panel's choices, as the CLI gives them
kvsteer::GenerationOptions generationOptions(const GenerationSettings& s);
StreamToken streamToken(const kvsteer::TokenEvent& ev, const kvsteer::Tokenizer& tok);   // with its top-5
VectorsInfo describeVectors(const kvsteer::SteeringVectors& v, const kvsteer::SteeringFileInfo& info);

} // namespace kvsteer::ui
