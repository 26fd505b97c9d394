// What the job service accepts from a client, checked before anything is
// stored or started: JSON bodies of bounded size and depth, names of
// [A-Za-z0-9_.-] (1..64), numbers in range, an app and model it knows, and
// dataset paths that resolve inside the data root. Errors are
// kInvalidArgument naming the field (the API answers 400 with the message).
#pragma once

#include <string>

#include "apps/jobs/store.h"

namespace dflow::jobs {

Json ParseBody(const std::string& body);
Dataset DatasetFromRequest(const Json& body, const std::string& data_root);
JobSpec JobSpecFromRequest(const Json& body);
Node NodeFromRequest(const Json& body);
int64_t ParseOffset(const std::string& text);
// The apps and their models: [{"app", "models": [...]}...].
Json ModelsJson();
// A whole file (the page's scripts, a snapshot); kNotFound when missing.
std::string ReadStatic(const std::string& path);

}  // namespace dflow::jobs
