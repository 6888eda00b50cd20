// Writing a ProcessReport: the human text (the seed's layout, with p50/p99 and
// the extra columns) and the JSON for tools.
#pragma once

#include <cstdio>

#include "common/report_model.h"

namespace fabtrace {

void write_report_text(std::FILE* out, const ProcessReport& r);
void write_report_json(std::FILE* out, const ProcessReport& r);

}  // namespace fabtrace
