#include "io/NumberList.h"

#include "Error.h"

#include <cmath>
#include <sstream>

namespace kvsteer {

namespace {

std::vector<std::string> items(const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
    if (!text.empty() && text.back() == ',') out.push_back("");
    return out;
}

} // namespace

std::vector<double> parseNumberList(const std::string& text, const std::string& what) {
    std::vector<double> v;
    for (const std::string& item : items(text)) {
        size_t used = 0;
        double x = 0;
        try {
            x = std::stod(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used == 0 || used != item.size() || !std::isfinite(x)) throw Error(what + ": '" + item + "' is not a number");
        v.push_back(x);
    }
    if (v.empty()) throw Error(what + ": expected one or more comma-separated numbers");
    return v;
}

std::vector<int> parseIndexList(const std::string& text, const std::string& what) {
    std::vector<int> v;
    for (const std::string& item : items(text)) {
        const bool digits = !item.empty() && item.size() <= 9 && item.find_first_not_of("0123456789") == std::string::npos;
        if (!digits) throw Error(what + ": '" + item + "' is not a non-negative integer");
        v.push_back(std::stoi(item));
    }
    if (v.empty()) throw Error(what + ": expected one or more comma-separated integers");
    return v;
}

} // namespace kvsteer
