#include "common/json_writer.h"

#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace fabtrace {
namespace {

// Everything a JsonWriter writes, as a string.
std::string render(bool pretty, const std::function<void(JsonWriter&)>& f) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* m = open_memstream(&buf, &len);
  if (!m) return "<open_memstream failed>";
  {
    JsonWriter w(m, pretty);
    f(w);
  }
  std::fclose(m);
  std::string s(buf, len);
  std::free(buf);
  return s;
}

// ---- a small strict RFC 8259 parser to read the output back ----------------------

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool b = false;
  std::string text;  // string value, or the number exactly as written
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* get(const std::string& k) const {
    for (const auto& m : members)
      if (m.first == k) return &m.second;
    return nullptr;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  // The single value of the whole text; error() says why when it is not valid JSON.
  Json parse_document() {
    Json v;
    ws();
    if (!value(&v)) return v;
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }
  const std::string& error() const { return err_; }

 private:
  bool fail(const std::string& why) {
    if (err_.empty()) err_ = why + " at offset " + std::to_string(i_);
    return false;
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool lit(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return fail(std::string("expected ") + w);
    i_ += n;
    return true;
  }
  bool value(Json* v) {
    if (i_ >= s_.size()) return fail("unexpected end");
    const char c = s_[i_];
    if (c == '{') return object(v);
    if (c == '[') return array(v);
    if (c == '"') {
      v->type = Json::kString;
      return string(&v->text);
    }
    if (c == 't') {
      v->type = Json::kBool;
      v->b = true;
      return lit("true");
    }
    if (c == 'f') {
      v->type = Json::kBool;
      return lit("false");
    }
    if (c == 'n') return lit("null");
    return number(v);
  }
  bool digits() {
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start || fail("expected digit");
  }
  bool number(Json* v) {
    const size_t start = i_;
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digits()) return false;
    }
    v->type = Json::kNumber;
    v->text = s_.substr(start, i_ - start);
    return true;
  }
  static void put_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      *out += static_cast<char>(0xC0 | (cp >> 6));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      *out += static_cast<char>(0xE0 | (cp >> 12));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (cp >> 18));
      *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool hex4(uint32_t* cp) {
    if (i_ + 4 > s_.size()) return fail("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<uint32_t>(h - 'A' + 10);
      else
        return fail("bad hex digit");
    }
    *cp = v;
    return true;
  }
  bool string(std::string* out) {
    ++i_;  // opening quote
    out->clear();
    while (true) {
      if (i_ >= s_.size()) return fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("raw control character in string");
      if (c != '\\') {
        *out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) return fail("unterminated escape");
      const char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          *out += e;
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'n':
          *out += '\n';
          break;
        case 'r':
          *out += '\r';
          break;
        case 't':
          *out += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo = 0;
            if (!lit("\\u") || !hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF)
              return fail("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("lone low surrogate");
          }
          put_utf8(cp, out);
          break;
        }
        default:
          return fail("bad escape");
      }
    }
  }
  bool array(Json* v) {
    v->type = Json::kArray;
    ++i_;
    ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      Json item;
      ws();
      if (!value(&item)) return false;
      v->items.push_back(std::move(item));
      ws();
      if (i_ >= s_.size()) return fail("unterminated array");
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == ']') {
        ++i_;
        return true;
      }
      return fail("expected , or ]");
    }
  }
  bool object(Json* v) {
    v->type = Json::kObject;
    ++i_;
    ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') return fail("expected key");
      std::string k;
      if (!string(&k)) return false;
      ws();
      if (!lit(":")) return false;
      ws();
      Json item;
      if (!value(&item)) return false;
      v->members.emplace_back(std::move(k), std::move(item));
      ws();
      if (i_ >= s_.size()) return fail("unterminated object");
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == '}') {
        ++i_;
        return true;
      }
      return fail("expected , or }");
    }
  }

  const std::string s_;
  size_t i_ = 0;
  std::string err_;
};

// Parses text that must be valid JSON.
Json parse_ok(const std::string& text) {
  Parser p(text);
  Json v = p.parse_document();
  EXPECT_EQ(p.error(), "") << "in: " << text;
  return v;
}

TEST(JsonParser, SelfCheckRejectsInvalidText) {
  for (const char* bad : {"{", "[1,]", "{\"a\":}", "01", "1.", "\"\x01\"", "[1 2]", "tru",
                          "\"\\x\"", "{\"a\" 1}", "[],"}) {
    Parser p(bad);
    p.parse_document();
    EXPECT_NE(p.error(), "") << bad;
  }
}

// ---- layout -----------------------------------------------------------------------

void sample_document(JsonWriter& w) {
  w.begin_object();
  w.field("name", "fabtrace");
  w.field("count", uint64_t{3});
  w.key("list").begin_array();
  w.value(1).value(-2).value(2.5).value(true).value(false).null();
  w.begin_object().end_object();
  w.begin_array().end_array();
  w.end_array();
  w.key("nested").begin_object();
  w.key("empty_list").begin_array().end_array();
  w.key("inner").begin_array().value("x").end_array();
  w.end_object();
  w.end_object();
}

TEST(JsonWriter, CompactLayout) {
  EXPECT_EQ(render(false, sample_document),
            "{\"name\":\"fabtrace\",\"count\":3,\"list\":[1,-2,2.5,true,false,null,{},[]],"
            "\"nested\":{\"empty_list\":[],\"inner\":[\"x\"]}}");
}

TEST(JsonWriter, PrettyLayout) {
  EXPECT_EQ(render(true, sample_document),
            "{\n"
            "  \"name\": \"fabtrace\",\n"
            "  \"count\": 3,\n"
            "  \"list\": [\n"
            "    1,\n"
            "    -2,\n"
            "    2.5,\n"
            "    true,\n"
            "    false,\n"
            "    null,\n"
            "    {},\n"
            "    []\n"
            "  ],\n"
            "  \"nested\": {\n"
            "    \"empty_list\": [],\n"
            "    \"inner\": [\n"
            "      \"x\"\n"
            "    ]\n"
            "  }\n"
            "}\n");
}

TEST(JsonWriter, BothLayoutsParseToTheSameTree) {
  for (bool pretty : {false, true}) {
    const Json v = parse_ok(render(pretty, sample_document));
    ASSERT_EQ(v.type, Json::kObject);
    ASSERT_EQ(v.members.size(), 4u);
    EXPECT_EQ(v.get("name")->text, "fabtrace");
    EXPECT_EQ(v.get("count")->text, "3");
    const Json* list = v.get("list");
    ASSERT_EQ(list->items.size(), 8u);
    EXPECT_EQ(list->items[1].text, "-2");
    EXPECT_EQ(list->items[3].type, Json::kBool);
    EXPECT_TRUE(list->items[3].b);
    EXPECT_EQ(list->items[5].type, Json::kNull);
    EXPECT_EQ(list->items[6].type, Json::kObject);
    EXPECT_EQ(list->items[7].type, Json::kArray);
    EXPECT_EQ(v.get("nested")->get("inner")->items[0].text, "x");
  }
}

TEST(JsonWriter, TopLevelContainersAndScalars) {
  EXPECT_EQ(render(false, [](JsonWriter& w) { w.begin_array().end_array(); }), "[]");
  EXPECT_EQ(render(true, [](JsonWriter& w) { w.begin_object().end_object(); }), "{}\n");
  EXPECT_EQ(render(false, [](JsonWriter& w) { w.value("s"); }), "\"s\"");
  EXPECT_EQ(render(false, [](JsonWriter& w) { w.value(7); }), "7");
}

TEST(JsonWriter, DeepNesting) {
  const int depth = 200;
  for (bool pretty : {false, true}) {
    const std::string out = render(pretty, [&](JsonWriter& w) {
      for (int i = 0; i < depth; ++i) {
        w.begin_array();
        w.value(i);
        w.begin_object().key("k");
      }
      w.value("leaf");
      for (int i = 0; i < depth; ++i) {
        w.end_object();
        w.end_array();
      }
    });
    const Json v = parse_ok(out);
    const Json* cur = &v;
    for (int i = 0; i < depth; ++i) {
      ASSERT_EQ(cur->type, Json::kArray);
      ASSERT_EQ(cur->items.size(), 2u);
      ASSERT_EQ(cur->items[0].text, std::to_string(i));
      cur = cur->items[1].get("k");
      ASSERT_NE(cur, nullptr);
    }
    EXPECT_EQ(cur->text, "leaf");
  }
}

TEST(JsonWriter, MisuseStillGivesValidJson) {
  // A key with no value becomes null; extra end_* calls are ignored.
  const std::string out = render(false, [](JsonWriter& w) {
    w.begin_object().key("a").key("b").value(1).key("c").end_object().end_object().end_array();
  });
  EXPECT_EQ(out, "{\"a\":null,\"b\":1,\"c\":null}");
  parse_ok(out);
}

TEST(JsonWriter, NullFileIsHarmless) {
  // Writes nowhere: not to the standard streams either, in either mode.
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  for (const bool pretty : {true, false}) {
    JsonWriter w(nullptr, pretty);
    w.begin_object().field("a", 1).key("b").begin_array().value(0.5).null().end_array();
    w.field("c", std::string("x\"y")).end_object();
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  // The same calls on a file write the whole document.
  EXPECT_EQ(render(false,
                   [](JsonWriter& w) {
                     w.begin_object().field("a", 1).key("b").begin_array().value(0.5).null();
                     w.end_array().field("c", std::string("x\"y")).end_object();
                   }),
            "{\"a\":1,\"b\":[0.5,null],\"c\":\"x\\\"y\"}");
}

// ---- scalars ------------------------------------------------------------------------

TEST(JsonWriter, Integers) {
  const std::string out = render(false, [](JsonWriter& w) {
    w.begin_array();
    w.value(uint64_t{0}).value(std::numeric_limits<uint64_t>::max());
    w.value(std::numeric_limits<int64_t>::min()).value(std::numeric_limits<int64_t>::max());
    w.value(-1).value(42u).value(int64_t{-7});
    w.end_array();
  });
  EXPECT_EQ(out, "[0,18446744073709551615,-9223372036854775808,9223372036854775807,-1,42,-7]");
  parse_ok(out);
}

TEST(JsonWriter, StringsAndNullPointer) {
  const std::string out = render(false, [](JsonWriter& w) {
    const char* none = nullptr;
    w.begin_array().value(std::string("a")).value("b").value(none).value("").end_array();
  });
  EXPECT_EQ(out, "[\"a\",\"b\",null,\"\"]");
}

std::string one_double(double d) {
  return render(false, [d](JsonWriter& w) { w.value(d); });
}

TEST(JsonWriter, DoublesPrintNicely) {
  EXPECT_EQ(one_double(0.0), "0");
  EXPECT_EQ(one_double(3.0), "3");
  EXPECT_EQ(one_double(-42.0), "-42");
  EXPECT_EQ(one_double(1234567.0), "1234567");
  EXPECT_EQ(one_double(0.1), "0.1");
  EXPECT_EQ(one_double(2.5), "2.5");
  EXPECT_EQ(one_double(-0.001), "-0.001");
  EXPECT_EQ(one_double(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(one_double(1e20), "1e+20");
  EXPECT_EQ(one_double(9007199254740993.0), "9007199254740992");
  for (double d : {1e300, 5e-324, 1.7976931348623157e308, 123.456e-10}) parse_ok(one_double(d));
}

TEST(JsonWriter, NonFiniteDoublesAreNull) {
  EXPECT_EQ(one_double(std::numeric_limits<double>::quiet_NaN()), "null");
  EXPECT_EQ(one_double(std::numeric_limits<double>::infinity()), "null");
  EXPECT_EQ(one_double(-std::numeric_limits<double>::infinity()), "null");
  const std::string out = render(false, [](JsonWriter& w) {
    w.begin_object().field("a", std::nan("")).field("b", 1.5).end_object();
  });
  EXPECT_EQ(out, "{\"a\":null,\"b\":1.5}");
}

TEST(JsonWriter, DoublesRoundTripExactly) {
  std::mt19937_64 rng(77);
  std::vector<double> vals;
  for (int i = 0; i < 20000; ++i) {
    double d;
    const uint64_t bits = rng();
    std::memcpy(&d, &bits, sizeof d);  // every finite bit pattern, subnormals included
    if (std::isfinite(d)) vals.push_back(d);
  }
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  for (int i = 0; i < 5000; ++i) vals.push_back(u(rng));
  for (int i = -20; i <= 20; ++i) vals.push_back(std::pow(10.0, i));

  const std::string out = render(false, [&](JsonWriter& w) {
    w.begin_array();
    for (double d : vals) w.value(d);
    w.end_array();
  });
  const Json v = parse_ok(out);
  ASSERT_EQ(v.items.size(), vals.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    ASSERT_EQ(v.items[i].type, Json::kNumber);
    const double back = std::strtod(v.items[i].text.c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&back, &vals[i], sizeof back), 0) << v.items[i].text << " vs " << vals[i];
    ASSERT_LE(v.items[i].text.size(), 24u) << v.items[i].text;
  }
}

TEST(JsonWriter, DoublesIgnoreTheLocale) {
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = old ? old : "C";
  const char* set = nullptr;
  for (const char* loc : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"})
    if ((set = std::setlocale(LC_NUMERIC, loc))) break;
  if (!set) GTEST_SKIP() << "no locale with a decimal comma installed";
  const std::string out = one_double(2.5);
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_EQ(out, "2.5");
}

// ---- escaping -------------------------------------------------------------------------

TEST(JsonEscape, SpecialCharacters) {
  EXPECT_EQ(JsonWriter::escape(""), "");
  EXPECT_EQ(JsonWriter::escape("plain text / 123"), "plain text / 123");
  EXPECT_EQ(JsonWriter::escape("a\"b"), "a\\\"b");
  EXPECT_EQ(JsonWriter::escape("a\\b"), "a\\\\b");
  EXPECT_EQ(JsonWriter::escape("\n\t\r\b\f"), "\\n\\t\\r\\b\\f");
  EXPECT_EQ(JsonWriter::escape(std::string("\0", 1)), "\\u0000");
  EXPECT_EQ(JsonWriter::escape("\x01\x1f"), "\\u0001\\u001f");
  EXPECT_EQ(JsonWriter::escape("\x1b[0m"), "\\u001b[0m");
  EXPECT_EQ(JsonWriter::escape("\x7f"), "\x7f");
}

TEST(JsonEscape, EveryControlCharacterIsEscaped) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string e = JsonWriter::escape(std::string(1, static_cast<char>(c)));
    ASSERT_EQ(e[0], '\\') << c;
    for (char x : e) ASSERT_GE(static_cast<unsigned char>(x), 0x20u) << c;
  }
}

TEST(JsonEscape, Utf8PassesThroughAndMalformedBytesAreReplaced) {
  const std::string ok = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf";
  EXPECT_EQ(JsonWriter::escape(ok), ok);
  EXPECT_EQ(JsonWriter::escape("a\xff"
                               "b"),
            "a\\ufffdb");
  EXPECT_EQ(JsonWriter::escape("\x80"), "\\ufffd");                        // stray continuation
  EXPECT_EQ(JsonWriter::escape("\xc3"), "\\ufffd");                        // truncated
  EXPECT_EQ(JsonWriter::escape("\xc0\xaf"), "\\ufffd\\ufffd");             // overlong '/'
  EXPECT_EQ(JsonWriter::escape("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");  // surrogate
  EXPECT_EQ(JsonWriter::escape("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd");  // > U+10FFFF
}

TEST(JsonEscape, RandomStringsRoundTripThroughAParser) {
  std::mt19937 rng(4711);
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) {
      switch (rng() % 4) {
        case 0:
          s += static_cast<char>(rng() % 0x20);  // control
          break;
        case 1:
          s += "\"\\/"[rng() % 3];
          break;
        case 2:
          s += "\xc3\xa9";  // é
          break;
        default:
          s += static_cast<char>(0x20 + rng() % 0x5f);  // printable ASCII
      }
    }
    const std::string out =
        render(false, [&](JsonWriter& w) { w.begin_object().field(s, s).end_object(); });
    const Json v = parse_ok(out);
    ASSERT_EQ(v.members.size(), 1u);
    ASSERT_EQ(v.members[0].first, s);
    ASSERT_EQ(v.members[0].second.text, s);
  }
}

}  // namespace
}  // namespace fabtrace
