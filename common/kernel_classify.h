// Names the kernel log carries, turned into what they mean for a libfabric job:
// which IRQ vectors belong to a Cassini NIC (and which kind: completion, error,
// page-request, ATU), and which kernel functions are the cxi driver's work items.
// Shared by the collector (which resolves the work functions to filter on) and
// the report (which labels IRQs and driver work).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/kernel_log.h"

namespace fabtrace {

enum class IrqClass { kOther, kCxiCompletion, kCxiError, kCxiOdp, kCxiAtu, kCxiOther };

struct IrqName {
  IrqClass cls = IrqClass::kOther;
  std::string device;  // "cxi0" for the cxi classes
  int index = -1;      // K of cxiN_compK, else -1
};

// cxiN_compK -> completion vector K of cxiN; cxiN_err_* -> error; cxiN_odp_pri ->
// page request (ODP); cxiN_atu_cq -> ATU; other cxiN_* -> kCxiOther.
IrqName classify_irq(const std::string& name);
const char* irq_class_name(IrqClass c);  // "cxi-completion", ..., "other"

// The cxi driver's work functions that fabtrace names, each with its class
// ("error", "page-request", "pause-timeout", "link", "microcontroller",
// "traffic-class").
struct CxiWorkFunction {
  const char* name;
  const char* cls;
};
const std::vector<CxiWorkFunction>& cxi_work_functions();

// The class of a cxi driver work function (cxi_work_functions(); the exact
// name, "" when it is not one of them).
std::string cxi_work_class(const std::string& function);

// The cxi driver's work functions listed in a /proc/kallsyms text: text symbols
// of the cxi modules ([cxi_ss1], [cxi_core], ...) whose name cxi_work_class()
// knows. Lines with a zero address (kallsyms read without privilege) are left out.
std::vector<KernelSymbol> cxi_work_symbols(const std::string& kallsyms_text);

}  // namespace fabtrace
