// Numbers in the text annotation formats (points.csv, VOC XML, YOLO labels):
// the whole field must be the number, and errors name where it was found.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dflow::models {

// A finite number; surrounding spaces are allowed. Throws kInvalidArgument
// "<where>: '<text>' is not a finite number".
double ParseFiniteNumber(std::string_view text, const std::string& where);
// A whole number (no fraction, no exponent); surrounding spaces are allowed.
int64_t ParseWholeNumber(std::string_view text, const std::string& where);
// The shortest decimal text that reads back as exactly `value` ("48", "0.1").
std::string FormatNumber(double value);

}  // namespace dflow::models
