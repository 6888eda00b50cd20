// IRQ names and cxi driver work functions (common/kernel_classify.*).
#include "common/kernel_classify.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace fabtrace {
namespace {

struct IrqCase {
  const char* name;
  IrqClass cls;
  const char* device;
  int index;
};

TEST(KernelClassify, IrqNames) {
  const std::vector<IrqCase> cases = {
      {"cxi0_comp3", IrqClass::kCxiCompletion, "cxi0", 3},
      {"cxi0_comp0", IrqClass::kCxiCompletion, "cxi0", 0},
      {"cxi3_comp127", IrqClass::kCxiCompletion, "cxi3", 127},
      {"cxi12_err_pct", IrqClass::kCxiError, "cxi12", -1},
      {"cxi0_err", IrqClass::kCxiError, "cxi0", -1},
      {"cxi0_odp_pri", IrqClass::kCxiOdp, "cxi0", -1},
      {"cxi1_atu_cq", IrqClass::kCxiAtu, "cxi1", -1},
      {"cxi0_foo", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_", IrqClass::kCxiOther, "cxi0", -1},
      // "comp" without a plain decimal vector number is not a completion vector.
      {"cxi0_comp", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_compX", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_comp3x", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_comp-1", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_comp+3", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_comp 3", IrqClass::kCxiOther, "cxi0", -1},
      {"cxi0_comp99999999999", IrqClass::kCxiOther, "cxi0", -1},
      // Not the driver's: no device number, no '_', other drivers.
      {"cxi_0", IrqClass::kOther, "", -1},
      {"cxi", IrqClass::kOther, "", -1},
      {"cxi0", IrqClass::kOther, "", -1},
      {"cxiA_comp1", IrqClass::kOther, "", -1},
      {"xcxi0_comp1", IrqClass::kOther, "", -1},
      {"eth0-rx-0", IrqClass::kOther, "", -1},
      {"virtio0-input.0", IrqClass::kOther, "", -1},
      {"", IrqClass::kOther, "", -1},
  };
  for (const IrqCase& c : cases) {
    const IrqName n = classify_irq(c.name);
    EXPECT_EQ(n.cls, c.cls) << '"' << c.name << '"';
    EXPECT_EQ(n.device, c.device) << '"' << c.name << '"';
    EXPECT_EQ(n.index, c.index) << '"' << c.name << '"';
  }
}

TEST(KernelClassify, IrqClassNames) {
  EXPECT_STREQ(irq_class_name(IrqClass::kCxiCompletion), "cxi-completion");
  EXPECT_STREQ(irq_class_name(IrqClass::kCxiError), "cxi-error");
  EXPECT_STREQ(irq_class_name(IrqClass::kCxiOdp), "cxi-page-request");
  EXPECT_STREQ(irq_class_name(IrqClass::kCxiAtu), "cxi-atu");
  EXPECT_STREQ(irq_class_name(IrqClass::kCxiOther), "cxi-other");
  EXPECT_STREQ(irq_class_name(IrqClass::kOther), "other");
  EXPECT_STREQ(irq_class_name(classify_irq("cxi2_comp7").cls), "cxi-completion");
}

// Each function of the list is found by its exact name, under its own class;
// the list names each function once and uses the six classes the docs name
// (docs/record.md, the `cxi` programs); near names are not the driver's.
TEST(KernelClassify, WorkFunctionClasses) {
  const std::set<std::string> documented = {"error", "page-request",    "pause-timeout",
                                            "link",  "microcontroller", "traffic-class"};
  std::set<std::string> names, classes;
  for (const CxiWorkFunction& k : cxi_work_functions()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name << " listed twice";
    classes.insert(k.cls);
    EXPECT_EQ(cxi_work_class(k.name), k.cls) << k.name;
    // A suffix the compiler adds (a cold part) or a changed case is another function.
    EXPECT_EQ(cxi_work_class(std::string(k.name) + ".cold"), "") << k.name;
    std::string upper = k.name;
    upper[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(upper[0])));
    EXPECT_EQ(cxi_work_class(upper), "") << upper;
    EXPECT_EQ(cxi_work_class(std::string(k.name).substr(0, std::strlen(k.name) - 1)), "") << k.name;
  }
  EXPECT_EQ(classes, documented);
  for (const char* f : {"", "vmstat_update", "flush_to_ldisc", "cass_pri_worker "})
    EXPECT_EQ(cxi_work_class(f), "") << '"' << f << '"';
}

TEST(KernelClassify, WorkSymbolsFromKallsyms) {
  const std::string text =
      // Kernel (non-module) lines, even with a known name: not the driver's.
      "ffffffff81000000 T _stext\n"
      "ffffffff81234560 t error_irq_worker\n"
      // The driver's work functions in its modules.
      "ffffffffc0a01230 t error_irq_worker\t[cxi_ss1]\n"
      "ffffffffc0a04560 t cass_pri_worker\t[cxi_ss1]\n"
      "ffffffffc0b00010 T cxi_link_worker\t[cxi_core]\n"
      // Other symbols of the driver, other symbol types, other modules.
      "ffffffffc0a05000 t cass_irq_handler\t[cxi_ss1]\n"
      "ffffffffc0a06000 d cass_uc_worker\t[cxi_ss1]\n"
      "ffffffffc0c00000 t pause_timeout_worker\t[mlx5_core]\n"
      "ffffffffc0c00000 t cass_tc_worker\t[cxi\n"
      "ffffffffc0c00000 t cass_tc_worker\tcxi_ss1]\n"
      // Read without privilege: zero addresses.
      "0000000000000000 t cass_phy_worker\t[cxi_ss1]\n"
      // Malformed lines.
      "\n"
      "garbage\n"
      "ffffffffc0a0zzzz t cass_sbl_worker\t[cxi_ss1]\n"
      "ffffffffc0a07000 t\n"
      // Last line without a newline.
      "ffffffffc0a08000 t cass_tc_worker [cxi_ss1]";
  const std::vector<KernelSymbol> want = {
      {0xffffffffc0a01230ULL, "error_irq_worker", "error"},
      {0xffffffffc0a04560ULL, "cass_pri_worker", "page-request"},
      {0xffffffffc0b00010ULL, "cxi_link_worker", "link"},
      {0xffffffffc0a08000ULL, "cass_tc_worker", "traffic-class"},
  };
  const std::vector<KernelSymbol> syms = cxi_work_symbols(text);
  ASSERT_EQ(syms.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(syms[i].addr, want[i].addr) << i;
    EXPECT_EQ(syms[i].name, want[i].name) << i;
    EXPECT_EQ(syms[i].cls, want[i].cls) << i;
  }

  EXPECT_TRUE(cxi_work_symbols("").empty());
  // A whole unprivileged read: nothing.
  EXPECT_TRUE(cxi_work_symbols("0000000000000000 t error_irq_worker\t[cxi_ss1]\n"
                               "0000000000000000 t cass_pri_worker\t[cxi_ss1]\n")
                  .empty());
}

}  // namespace
}  // namespace fabtrace
