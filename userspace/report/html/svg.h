// Small helpers for the inline SVG of the HTML report: escaping, a color ramp,
// number ticks, a line chart and a horizontal bar chart. Everything returns
// markup as a string; nothing refers to anything outside the document.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fabtrace::report::svg {

// Text for XML/HTML content and attribute values (& < > " ').
std::string escape(const std::string& s);

// A coordinate or length: at most 2 decimals, no trailing zeros.
std::string num(double v);

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
};
std::string hex(Rgb c);  // "#rrggbb"
// A perceptually ordered ramp (viridis-like), t in [0, 1] (clamped): dark blue -> yellow.
Rgb ramp(double t);
// Black or white, whichever reads better on `bg`.
Rgb text_on(Rgb bg);

// Maps [lo, hi] onto [0, 1] logarithmically (linearly when lo <= 0).
class Scale {
 public:
  Scale(double lo, double hi, bool log);
  double operator()(double v) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }

 private:
  double lo_, hi_;
  bool log_;
};

// About n "nice" tick values covering [lo, hi] (1, 2, 5 x 10^k steps).
std::vector<double> nice_ticks(double lo, double hi, int n);
// A short label for a tick or an axis value: 1.5k, 2M, 3.2G, 0.25.
std::string short_num(double v);

struct LineChart {
  std::string id;       // element id (may be empty)
  std::string title;    // drawn above the plot
  std::string y_label;  // e.g. "per s"
  double width = 360, height = 150;
  std::vector<double> x, y;   // x ascending; same length
  std::string x_label = "s";  // unit of x
};
std::string line_chart(const LineChart& c);

struct Bar {
  std::string label;       // left of the bar
  double value = 0;        // bar length
  std::string value_text;  // right of the bar
  std::string tooltip;     // <title>
  bool highlight = false;  // drawn in the accent color
};
// Horizontal bars, one per row, scaled to the largest value.
std::string bar_chart(const std::string& id, const std::vector<Bar>& bars, double width);

// A color legend: a gradient bar from scale.lo() to scale.hi() with a few labels.
// id names the gradient; it must be unique in the document.
std::string legend(const std::string& id, const Scale& scale, double width,
                   const std::string& unit_title, std::string (*label)(double));

}  // namespace fabtrace::report::svg
