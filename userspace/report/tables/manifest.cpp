#include "userspace/report/tables/manifest.h"

#include "common/json_writer.h"
#include "common/safe_output.h"
#include "common/version.h"
#include "userspace/report/job/identity.h"

namespace fabtrace::report {

namespace {

void tally_field(JsonWriter& j, const char* key, const Tally& t) {
  j.key(key).begin_array();
  for (const auto& v : t) {
    j.begin_array();
    j.value(v.first).value(static_cast<uint64_t>(v.second));
    j.end_array();
  }
  j.end_array();
}

}  // namespace

bool write_manifest(const Job& job, const std::string& dir, const std::string& out_dir,
                    const std::vector<std::string>& outputs, std::string* error) {
  ReplacingFile f;
  if (!f.open(out_dir + "/manifest.json", error)) return false;
  std::FILE* out = f.stream();
  if (!out) {
    *error = "manifest.json: cannot write";
    return false;
  }
  const JobIdentity id = job_identity(job);
  Tally versions;
  for (const auto& v : id.versions) versions.emplace_back(version_label(v.first), v.second);
  JsonWriter j(out);
  j.begin_object();
  j.field("format", kManifestFormat).field("version", kManifestVersion);
  j.field("fabtrace_version", version());
  j.field("dir", dir);
  j.field("ranks", static_cast<uint64_t>(job.ranks.size()));
  j.key("job").begin_object();
  tally_field(j, "launchers", id.jobs);
  tally_field(j, "commands", id.commands);
  tally_field(j, "libfabric", id.libfabrics);
  tally_field(j, "providers", id.providers);
  tally_field(j, "rank_versions", versions);
  j.field("first_start_wall_ns", id.first_start_wall_ns);
  j.end_object();
  j.key("outputs").begin_array();
  for (const std::string& o : outputs) j.value(o.substr(o.find_last_of('/') + 1));
  j.end_array();
  j.end_object();
  std::fputc('\n', out);
  return f.commit(error);
}

}  // namespace fabtrace::report
