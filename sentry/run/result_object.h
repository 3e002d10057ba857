// The result as a JSON value, for a writer that puts it inside another object
// (the audit log's line); ResultJson (result.h) is its text.
#ifndef SENTRY_RUN_RESULT_OBJECT_H_
#define SENTRY_RUN_RESULT_OBJECT_H_

#include <nlohmann/json.hpp>

#include "sentry/run/result.h"

namespace sentry {

nlohmann::ordered_json ResultObject(const RunResult& r);

}  // namespace sentry

#endif  // SENTRY_RUN_RESULT_OBJECT_H_
