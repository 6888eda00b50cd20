// JsonTree (the report reader's SAX-built document) against nlohmann's DOM:
// the same values, kinds, member lookups (the last of repeated keys), dump()
// text, and the same errors where the DOM parser throws.
#include "userspace/report/job/json_tree.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "fixtures/synthetic_job.h"

namespace fabtrace::report {
namespace {

using nlohmann::json;

// Walks both documents together; every difference is a failure.
void expect_same(const JsonNode& n, const json& j, const std::string& where) {
  SCOPED_TRACE(where);
  ASSERT_STREQ(n.type_name(), j.type_name());
  EXPECT_EQ(n.is_null(), j.is_null());
  EXPECT_EQ(n.is_boolean(), j.is_boolean());
  EXPECT_EQ(n.is_number_integer(), j.is_number_integer());
  EXPECT_EQ(n.is_number_unsigned(), j.is_number_unsigned());
  EXPECT_EQ(n.is_number_float(), j.is_number_float());
  EXPECT_EQ(n.dump(), j.dump());
  if (j.is_number()) {
    EXPECT_EQ(n.get_i64(), j.get<int64_t>());
    EXPECT_EQ(n.get_double(), j.get<double>());
    if (!j.is_number_float()) {
      EXPECT_EQ(n.get_u64(), j.get<uint64_t>());
    }
  }
  if (j.is_boolean()) {
    EXPECT_EQ(n.get_bool(), j.get<bool>());
  }
  if (j.is_string()) {
    EXPECT_EQ(n.str(), j.get<std::string>());
  }
  if (j.is_array()) {
    ASSERT_EQ(n.size(), j.size());
    size_t i = 0;
    for (JsonNode c = n.first(); c.valid(); c = c.next(n), ++i)
      expect_same(c, j[i], where + "[" + std::to_string(i) + "]");
    EXPECT_EQ(i, j.size());
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      JsonNode c;
      ASSERT_TRUE(n.find(k, &c)) << k;
      expect_same(c, v, where + "." + k);
    }
    EXPECT_FALSE(n.contains("no such key"));
  }
}

void expect_same_text(const std::string& text) {
  SCOPED_TRACE(text.substr(0, 80));
  JsonTree t;
  JsonError e;
  json j;
  bool dom_ok = true;
  size_t byte = 0;
  int id = 0;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& x) {
    dom_ok = false, byte = x.byte, id = x.id;
  } catch (const json::exception& x) {
    dom_ok = false, id = x.id;
  }
  ASSERT_EQ(t.parse(text, &e), dom_ok) << e.what;
  if (dom_ok) {
    expect_same(t.root(), j, "$");
  } else {
    EXPECT_EQ(e.id, id) << e.what;
    if (e.syntax()) {
      EXPECT_EQ(e.byte, byte) << e.what;
    }
  }
}

TEST(JsonTree, AnswersAsNlohmannsDomOnAReport) {
  for (const ProcessReport& r : test::make_synthetic_job().reports)
    expect_same_text(test::report_json_text(r));
}

TEST(JsonTree, AnswersAsNlohmannsDomOnEdgeCases) {
  for (const char* text : {"null",
                           "true",
                           "[]",
                           "{}",
                           "\"x\\u00e9\\n\"",
                           "-0",
                           "0.0",
                           "1e20",
                           "-9223372036854775808",
                           "18446744073709551615",
                           "18446744073709551616",
                           "[1,[2,[3,{}]],\"a\",null,false,-1.5e-7]",
                           "{\"a\": 1, \"a\": \"second\"}",
                           "{\"a\":{\"b\":[{\"c\":1},{\"c\":2}]},\"d\":3}",
                           "1e400",
                           "[1, 2",
                           "{\"a\" 1}",
                           "[1] x",
                           "",
                           "\x7f"
                           "ELF",
                           "{\"k\":tru}"})
    expect_same_text(text);
}

// The texts the fast parser (json_tree.cpp) takes, and those it hands to
// nlohmann's, valid or not: the same tree or the same error either way.
TEST(JsonTree, FastPathAndItsEdgesAnswerAsNlohmann) {
  for (const char* text : {" [ 1 , { \"a\" : [ ] , \"b\":{} } ,\t\r\n\"\" ] ",
                           "{\"esc\":\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t end\"}",
                           "\"\\ud83d\\ude00\"",
                           "\"caf\xc3\xa9\"",
                           "\"bad \xff byte\"",
                           "\"tab\there\"",
                           "\"\x7f\"",
                           "-9223372036854775809",
                           "-9223372036854775807",
                           "18446744073709551614",
                           "123456789012345678901234567890",
                           "0e5",
                           "-0.0",
                           "1E+2",
                           "2.5e-7",
                           "1e-400",
                           "5e-324",
                           "-1e400",
                           "01",
                           "1.",
                           "-",
                           ".5",
                           "1e",
                           "[1,]",
                           "{\"a\":1,}",
                           "{,}",
                           "{\"a\"}",
                           "[\"unterminated",
                           "\xef\xbb\xbf{}",
                           "truex",
                           "nul",
                           "[true,false,null]",
                           "{\"a\":[1,2],\"a\":{\"b\":null}}",
                           "[] []",
                           "  "})
    expect_same_text(text);
  // Deep nesting within the bound, and beyond it (the builder's bound, both paths).
  expect_same_text(std::string(100, '[') + std::string(100, ']'));
  JsonTree t;
  JsonError e;
  EXPECT_FALSE(t.parse(std::string(65, '[') + std::string(65, ']'), &e, 64));
  EXPECT_TRUE(e.too_deep()) << e.what;
  EXPECT_TRUE(t.parse(std::string(64, '[') + std::string(64, ']'), &e, 64)) << e.what;
}

// A report's text with random edits (bytes from JSON's alphabet and a few
// others put in, taken out or changed): each, valid or not, gives the tree or
// the error nlohmann gives, whichever of the two parsers took it.
TEST(JsonTree, EditedReportsAnswerAsNlohmann) {
  const std::string base = test::report_json_text(test::make_synthetic_job().reports[0]);
  const std::string alphabet = "{}[],:\"\\ \n0123456789-+.eEtrufalsn\x01\x80\xc3\xa9u/";
  std::mt19937 rng(16);
  size_t valid = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % text.size();
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          text.insert(text.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 1:
          text.erase(at, 1);
          break;
        default:
          text[at] = c;
      }
    }
    valid += json::accept(text);
    expect_same_text(text);
    if (HasFailure()) break;
  }
  EXPECT_GT(valid, 100u);  // the fast path saw valid texts, not only errors
}

TEST(JsonTree, RepeatedKeysKeepTheLast) {
  JsonTree t;
  JsonError e;
  ASSERT_TRUE(t.parse("{\"a\": 1, \"b\": 2, \"a\": 3}", &e)) << e.what;
  JsonNode a;
  ASSERT_TRUE(t.root().find("a", &a));
  EXPECT_EQ(a.get_u64(), 3u);
  EXPECT_EQ(t.root().size(), 3u);
}

// Where rapidjson's reader (json_tree.cpp) and nlohmann's could part: a lone
// low surrogate escape (rapidjson 1.1 writes it as UTF-8, nlohmann refuses
// it), a NUL byte (rapidjson's end of text), raw UTF-8 that is not
// (surrogates, overlong, above U+10FFFF) beside valid UTF-8 in a text that is
// not ASCII, integers at 32 and 64 bits, negative zeros, doubles that need
// full precision, and the magnitudes rapidjson 1.1 reads wrong (99e307 as
// -3.1e-308): the same tree or the same error.
TEST(JsonTree, RapidJsonEdgesAnswerAsNlohmann) {
  for (const char* text : {"\"\\udc00\"",
                           "[\"a\\udfff\"]",
                           "{\"\\udc00\":1}",
                           "\"\\ud800\"",
                           "\"\\ud800\\u0041\"",
                           "\"\\ud7ff\\ue000\\u0000\"",
                           "[\"caf\xc3\xa9\",\"\xed\xa0\x80\"]",
                           "[\"caf\xc3\xa9\",\"\xf4\x90\x80\x80\"]",
                           "[\"caf\xc3\xa9\",\"\xc0\xaf\"]",
                           "{\"caf\xc3\xa9\":\"\xf0\x9f\x98\x80\",\"\xed\x9f\xbf\":\"\\udc00\"}",
                           "-0",
                           "-0e0",
                           "-2147483648",
                           "-2147483649",
                           "4294967295",
                           "4294967296",
                           "9223372036854775808",
                           "-18446744073709551616",
                           "0.1",
                           "2.2250738585072011e-308",
                           "1.7976931348623157e308",
                           "1.7976931348623159e308",
                           "0.30000000000000004441",
                           "9007199254740993",
                           "9007199254740993.0",
                           "99e307",
                           "{\"a\":[1,9.1e309]}",
                           "0.0000001e-320",
                           "[0.5, 0.0000001e-320]",
                           "-0.000000000000000000000000000000000000001e-290",
                           "1e-99999999999",
                           "0e99999999999"})
    expect_same_text(text);
  expect_same_text(std::string("1\0x", 3));
  expect_same_text(std::string("[\"a\"]\0", 6));
  expect_same_text(std::string("\"a\0b\"", 5));
  // Doubles as fabtrace writes them (shortest, 17 digits) and long digit
  // strings, each read to the bit as nlohmann's strtod reads it.
  std::mt19937_64 rng(16);
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double d;
    memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", d);
    expect_same_text(buf);
    expect_same_text(json(d).dump());
    std::string digits = std::to_string(rng() % 10 + 1) + "." + std::to_string(rng()) +
                         std::to_string(rng()) + "e" + std::to_string(int(rng() % 700) - 350);
    expect_same_text(digits);
  }
}

}  // namespace
}  // namespace fabtrace::report
