#include "userspace/report/job/identity.h"

#include <algorithm>
#include <map>

#include "common/job_meta.h"
#include "common/printable.h"

namespace fabtrace::report {

namespace {

Tally tally(const std::map<std::string, size_t>& m) {
  Tally t(m.begin(), m.end());
  std::stable_sort(t.begin(), t.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return t;
}

}  // namespace

std::string version_label(const std::string& v) {
  return v.empty() ? "before 0.9.0" : printable(v);
}

JobIdentity job_identity(const Job& job) {
  std::map<std::string, size_t> jobs, commands, libfabrics, providers, versions;
  JobIdentity id;
  for (const Rank& r : job.ranks) {
    const JobMeta& m = r.report.job;
    if (const std::string j = job_text(m); !j.empty()) ++jobs[j];
    if (!m.command.empty()) ++commands[printable(m.command)];
    if (!m.libfabric.empty()) ++libfabrics[printable(m.libfabric)];
    if (!r.providers().empty()) ++providers[printable(r.providers())];
    ++versions[r.report.fabtrace_version];
    if (m.start_wall_ns && (!id.first_start_wall_ns || m.start_wall_ns < id.first_start_wall_ns))
      id.first_start_wall_ns = m.start_wall_ns;
  }
  id.jobs = tally(jobs);
  id.commands = tally(commands);
  id.libfabrics = tally(libfabrics);
  id.providers = tally(providers);
  id.versions = tally(versions);
  return id;
}

std::string tally_text(const Tally& t, size_t ranks, size_t max) {
  if (t.size() == 1 && t[0].second == ranks) return t[0].first;
  std::string s;
  for (size_t i = 0; i < t.size() && i < max; ++i)
    s += (i ? ", " : "") + t[i].first + " (" + std::to_string(t[i].second) +
         (t[i].second == 1 ? " rank)" : " ranks)");
  if (t.size() > max) s += ", and " + std::to_string(t.size() - max) + " more";
  return s;
}

std::string versions_note(const JobIdentity& id, size_t ranks) {
  if (id.versions.size() < 2) return "";
  Tally labelled;
  for (const auto& v : id.versions) labelled.emplace_back(version_label(v.first), v.second);
  return "the ranks were written by " + std::to_string(id.versions.size()) +
         " fabtrace versions: " + tally_text(labelled, ranks, 4);
}

}  // namespace fabtrace::report
