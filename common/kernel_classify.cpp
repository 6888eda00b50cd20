#include "common/kernel_classify.h"

#include <cstdlib>
#include <sstream>

namespace fabtrace {

namespace {
bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// "cxi" + digits + "_" : the device prefix of the driver's vector names.
bool cxi_prefix(const std::string& name, std::string* device, std::string* rest) {
  if (!starts_with(name, "cxi")) return false;
  size_t i = 3;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  if (i == 3 || i >= name.size() || name[i] != '_') return false;
  *device = name.substr(0, i);
  *rest = name.substr(i + 1);
  return true;
}
}  // namespace

IrqName classify_irq(const std::string& name) {
  IrqName n;
  std::string dev, rest;
  if (!cxi_prefix(name, &dev, &rest)) return n;
  n.device = dev;
  if (starts_with(rest, "comp")) {
    // K: decimal digits only (strtol would take " 3", "+3" and overflow to a
    // wrong index).
    const std::string k = rest.substr(4);
    long v = 0;
    bool digits = !k.empty() && k.size() <= 9;
    for (size_t i = 0; digits && i < k.size(); ++i) {
      digits = k[i] >= '0' && k[i] <= '9';
      v = v * 10 + (k[i] - '0');
    }
    if (digits) {
      n.cls = IrqClass::kCxiCompletion;
      n.index = static_cast<int>(v);
      return n;
    }
  }
  if (starts_with(rest, "err")) {
    n.cls = IrqClass::kCxiError;
  } else if (starts_with(rest, "odp")) {
    n.cls = IrqClass::kCxiOdp;
  } else if (starts_with(rest, "atu")) {
    n.cls = IrqClass::kCxiAtu;
  } else {
    n.cls = IrqClass::kCxiOther;
  }
  return n;
}

const char* irq_class_name(IrqClass c) {
  switch (c) {
    case IrqClass::kCxiCompletion:
      return "cxi-completion";
    case IrqClass::kCxiError:
      return "cxi-error";
    case IrqClass::kCxiOdp:
      return "cxi-page-request";
    case IrqClass::kCxiAtu:
      return "cxi-atu";
    case IrqClass::kCxiOther:
      return "cxi-other";
    default:
      return "other";
  }
}

const std::vector<CxiWorkFunction>& cxi_work_functions() {
  static const std::vector<CxiWorkFunction> known = {
      {"error_irq_worker", "error"},
      {"cass_pri_worker", "page-request"},
      {"pause_timeout_worker", "pause-timeout"},
      {"cass_link_worker", "link"},
      {"cxi_link_worker", "link"},
      {"cass_phy_worker", "link"},
      {"cass_uc_worker", "microcontroller"},
      {"cass_sbl_worker", "link"},
      {"cass_tc_worker", "traffic-class"},
  };
  return known;
}

std::string cxi_work_class(const std::string& f) {
  for (const CxiWorkFunction& k : cxi_work_functions())
    if (f == k.name) return k.cls;
  return "";
}

std::vector<KernelSymbol> cxi_work_symbols(const std::string& text) {
  std::vector<KernelSymbol> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // "ffffffffc0a01230 t error_irq_worker\t[cxi_ss1]"
    std::istringstream f(line);
    std::string addr, type, name, module;
    if (!(f >> addr >> type >> name >> module)) continue;
    if (module.size() < 5 || module.front() != '[' || module.back() != ']') continue;
    if (!starts_with(module, "[cxi")) continue;
    if (type != "t" && type != "T") continue;
    const std::string cls = cxi_work_class(name);
    if (cls.empty()) continue;
    char* end = nullptr;
    const unsigned long long a = std::strtoull(addr.c_str(), &end, 16);
    if (*end || a == 0) continue;
    out.push_back({a, name, cls});
  }
  return out;
}

}  // namespace fabtrace
