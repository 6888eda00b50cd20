#include "userspace/report/html/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fabtrace::report::svg {

std::string escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        // Control characters other than tab/newline are not allowed in XML.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
          o += ' ';
        else
          o += c;
    }
  }
  return o;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

Rgb ramp(double t) {
  // Viridis, sampled at 9 stops.
  static const Rgb stops[] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                              {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                              {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
  constexpr int n = sizeof(stops) / sizeof(stops[0]);
  if (!(t == t)) t = 0;
  t = std::clamp(t, 0.0, 1.0) * (n - 1);
  const int i = std::min(n - 2, static_cast<int>(t));
  const double f = t - i;
  const auto mix = [f](uint8_t a, uint8_t b) {
    return static_cast<uint8_t>(std::lround(a + (b - a) * f));
  };
  return {mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g),
          mix(stops[i].b, stops[i + 1].b)};
}

Rgb text_on(Rgb bg) {
  const double lum = 0.299 * bg.r + 0.587 * bg.g + 0.114 * bg.b;
  return lum > 140 ? Rgb{0, 0, 0} : Rgb{255, 255, 255};
}

Scale::Scale(double lo, double hi, bool log) : lo_(lo), hi_(hi), log_(log && lo > 0) {}

double Scale::operator()(double v) const {
  if (!(hi_ > lo_)) return 0.5;
  if (log_) {
    if (v <= 0) return 0;
    return (std::log(v) - std::log(lo_)) / (std::log(hi_) - std::log(lo_));
  }
  return (v - lo_) / (hi_ - lo_);
}

std::vector<double> nice_ticks(double lo, double hi, int n) {
  std::vector<double> t;
  if (!std::isfinite(lo) || !std::isfinite(hi) || n < 1) return t;
  if (hi <= lo) {
    t.push_back(lo);
    return t;
  }
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (raw <= step) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return t;
}

std::string short_num(double v) {
  const double a = std::fabs(v);
  char buf[32];
  const struct {
    double div;
    const char* suffix;
  } units[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& u : units) {
    if (a >= u.div) {
      std::snprintf(buf, sizeof(buf), "%.3g%s", v / u.div, u.suffix);
      return buf;
    }
  }
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

std::string line_chart(const LineChart& c) {
  const double ml = 48, mr = 10, mt = 20, mb = 28;
  const double pw = std::max(10.0, c.width - ml - mr), ph = std::max(10.0, c.height - mt - mb);
  std::string s = "<svg class=\"chart line-chart\"";
  if (!c.id.empty()) s += " id=\"" + escape(c.id) + "\"";
  s += " width=\"" + num(c.width) + "\" height=\"" + num(c.height) + "\" viewBox=\"0 0 " +
       num(c.width) + " " + num(c.height) + "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  s += "<title>" + escape(c.title) + "</title>";
  s += "<text class=\"chart-title\" x=\"" + num(ml) + "\" y=\"13\">" + escape(c.title) + "</text>";
  const size_t n = std::min(c.x.size(), c.y.size());
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (n > 0) {
    x0 = *std::min_element(c.x.begin(), c.x.begin() + static_cast<long>(n));
    x1 = *std::max_element(c.x.begin(), c.x.begin() + static_cast<long>(n));
    y1 = *std::max_element(c.y.begin(), c.y.begin() + static_cast<long>(n));
    y0 = std::min(0.0, *std::min_element(c.y.begin(), c.y.begin() + static_cast<long>(n)));
  }
  if (!(x1 > x0)) x1 = x0 + 1;
  if (y1 > 0) y1 *= 1.08;  // headroom: a flat series stays off the frame
  if (!(y1 > y0)) y1 = y0 + 1;
  const auto px = [&](double x) { return ml + (x - x0) / (x1 - x0) * pw; };
  const auto py = [&](double y) { return mt + ph - (y - y0) / (y1 - y0) * ph; };
  s += "<rect class=\"plot-bg\" x=\"" + num(ml) + "\" y=\"" + num(mt) + "\" width=\"" + num(pw) +
       "\" height=\"" + num(ph) + "\"/>";
  for (double t : nice_ticks(y0, y1, 3)) {
    s += "<line class=\"grid\" x1=\"" + num(ml) + "\" x2=\"" + num(ml + pw) + "\" y1=\"" +
         num(py(t)) + "\" y2=\"" + num(py(t)) + "\"/>";
    s += "<text class=\"tick\" text-anchor=\"end\" x=\"" + num(ml - 4) + "\" y=\"" +
         num(py(t) + 3) + "\">" + escape(short_num(t)) + "</text>";
  }
  for (double t : nice_ticks(x0, x1, 4))
    s += "<text class=\"tick\" text-anchor=\"middle\" x=\"" + num(px(t)) + "\" y=\"" +
         num(mt + ph + 12) + "\">" + escape(short_num(t)) + "</text>";
  s += "<text class=\"tick\" text-anchor=\"end\" x=\"" + num(ml + pw) + "\" y=\"" +
       num(mt + ph + 24) + "\">" + escape(c.x_label) + "</text>";
  s += "<text class=\"tick\" x=\"2\" y=\"" + num(mt - 6) + "\">" + escape(c.y_label) + "</text>";
  if (n > 0) {
    std::string pts;
    for (size_t i = 0; i < n; ++i) {
      if (i) pts += ' ';
      pts += num(px(c.x[i])) + "," + num(py(c.y[i]));
    }
    if (n == 1) {
      s += "<circle class=\"series-dot\" cx=\"" + num(px(c.x[0])) + "\" cy=\"" + num(py(c.y[0])) +
           "\" r=\"2\"/>";
    } else {
      s += "<polyline class=\"series\" points=\"" + pts + "\"/>";
    }
  }
  s += "</svg>";
  return s;
}

std::string bar_chart(const std::string& id, const std::vector<Bar>& bars, double width) {
  // The value column as wide as its longest text ("0.009 GB/s (peak 0.021 GB/s)"),
  // at most 7 px a character of the chart's font: a fixed 110 px cut it.
  size_t longest = 0;
  for (const Bar& b : bars) longest = std::max(longest, b.value_text.size());
  const double row = 20, label_w = std::min(360.0, width * 0.45),
               value_w = std::max(110.0, 7.0 * static_cast<double>(longest) + 12);
  const double bar_w = std::max(40.0, width - label_w - value_w - 10);
  const double height = row * static_cast<double>(bars.size()) + 8;
  double mx = 0;
  for (const Bar& b : bars) mx = std::max(mx, b.value);
  std::string s = "<svg class=\"chart bar-chart\"";
  if (!id.empty()) s += " id=\"" + escape(id) + "\"";
  s += " width=\"" + num(width) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) +
       " " + num(height) + "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = 4 + row * static_cast<double>(i);
    const double w = mx > 0 ? std::max(0.0, b.value) / mx * bar_w : 0;
    s += "<g class=\"bar-row\">";
    if (!b.tooltip.empty()) s += "<title>" + escape(b.tooltip) + "</title>";
    s += "<text class=\"bar-label\" text-anchor=\"end\" x=\"" + num(label_w - 6) + "\" y=\"" +
         num(y + 13) + "\">" + escape(b.label) + "</text>";
    s += "<rect class=\"bar" + std::string(b.highlight ? " bar-hi" : "") + "\" x=\"" +
         num(label_w) + "\" y=\"" + num(y + 2) + "\" width=\"" + num(std::max(w, 1.0)) +
         "\" height=\"" + num(row - 6) + "\"/>";
    s += "<text class=\"bar-value\" x=\"" + num(label_w + w + 6) + "\" y=\"" + num(y + 13) + "\">" +
         escape(b.value_text) + "</text>";
    s += "</g>";
  }
  s += "</svg>";
  return s;
}

std::string legend(const std::string& id, const Scale& scale, double width,
                   const std::string& unit_title, std::string (*label)(double)) {
  const std::string gid = escape(id);
  const double h = 34, bw = width - 20;
  std::string s = "<svg class=\"legend\" width=\"" + num(width) + "\" height=\"" + num(h) +
                  "\" viewBox=\"0 0 " + num(width) + " " + num(h) +
                  "\" xmlns=\"http://www.w3.org/2000/svg\"><defs><linearGradient id=\"" + gid +
                  "\">";
  for (int i = 0; i <= 8; ++i)
    s += "<stop offset=\"" + num(i / 8.0) + "\" stop-color=\"" + hex(ramp(i / 8.0)) + "\"/>";
  s += "</linearGradient></defs>";
  s +=
      "<rect x=\"10\" y=\"4\" width=\"" + num(bw) + "\" height=\"10\" fill=\"url(#" + gid + ")\"/>";
  s += "<text class=\"tick\" x=\"10\" y=\"28\">" + escape(label(scale.lo())) + "</text>";
  s += "<text class=\"tick\" text-anchor=\"middle\" x=\"" + num(10 + bw / 2) + "\" y=\"28\">" +
       escape(unit_title) + "</text>";
  s += "<text class=\"tick\" text-anchor=\"end\" x=\"" + num(10 + bw) + "\" y=\"28\">" +
       escape(label(scale.hi())) + "</text>";
  s += "</svg>";
  return s;
}

}  // namespace fabtrace::report::svg
