#pragma once
// The steering operators and their names: one list for the core, the CLI and the studio. Header
// only, with no ATen and no Qt, so the studio's plain-Qt panels can read it too (through
// kvsteer_core_words). What each operator does is in SteeringPlan.h.
#include "Error.h"

#include <array>
#include <string>
#include <utility>

namespace kvsteer {

enum class SteeringOperator { Add, NormPreserving, PreRope, Scale, Spotlight, Ablate };

// In the order people are offered them.
inline constexpr std::array<std::pair<SteeringOperator, const char*>, 6> kSteeringOperators = {{
    {SteeringOperator::Add, "add"},
    {SteeringOperator::NormPreserving, "norm"},
    {SteeringOperator::PreRope, "prerope"},
    {SteeringOperator::Scale, "scale"},
    {SteeringOperator::Spotlight, "spotlight"},
    {SteeringOperator::Ablate, "ablate"},
}};

inline std::string operatorName(SteeringOperator op) {
    for (const auto& [o, name] : kSteeringOperators)
        if (o == op) return name;
    return "?";
}

// Throws kvsteer::Error naming the known operators.
inline SteeringOperator parseOperator(const std::string& name) {
    for (const auto& [o, n] : kSteeringOperators)
        if (name == n) return o;
    std::string known;
    for (const auto& [o, n] : kSteeringOperators) known += (known.empty() ? "" : ", ") + std::string(n);
    throw Error("operator '" + name + "' is not known (expected one of " + known + ")");
}

// add, norm and prerope move the cache along steering vectors; the others need none.
inline bool operatorNeedsVectors(SteeringOperator op) {
    return op == SteeringOperator::Add || op == SteeringOperator::NormPreserving || op == SteeringOperator::PreRope;
}

} // namespace kvsteer
