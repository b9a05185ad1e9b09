//===- Utf8Test.cpp - utf8SequenceLength and isValidUtf8 ------------------===//
#include "ls2c/Support/Utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace {

using ls2c::isValidUtf8;
using ls2c::utf8SequenceLength;

std::string_view sv(const char *s) { return std::string_view(s); }

TEST(Utf8Test, ValidSequencesOfEachLength) {
  EXPECT_EQ(utf8SequenceLength(sv("A")), 1u);
  EXPECT_EQ(utf8SequenceLength(std::string_view("\0", 1)), 1u); // U+0000
  EXPECT_EQ(utf8SequenceLength(sv("\x7F")), 1u);
  EXPECT_EQ(utf8SequenceLength(sv("\xC2\x80")), 2u);         // U+0080
  EXPECT_EQ(utf8SequenceLength(sv("\xDF\xBF")), 2u);         // U+07FF
  EXPECT_EQ(utf8SequenceLength(sv("\xE0\xA0\x80")), 3u);     // U+0800
  EXPECT_EQ(utf8SequenceLength(sv("\xED\x9F\xBF")), 3u);     // U+D7FF
  EXPECT_EQ(utf8SequenceLength(sv("\xEE\x80\x80")), 3u);     // U+E000
  EXPECT_EQ(utf8SequenceLength(sv("\xEF\xBF\xBF")), 3u);     // U+FFFF
  EXPECT_EQ(utf8SequenceLength(sv("\xF0\x90\x80\x80")), 4u); // U+10000
  EXPECT_EQ(utf8SequenceLength(sv("\xF4\x8F\xBF\xBF")), 4u); // U+10FFFF
}

TEST(Utf8Test, OnlyTheFirstSequenceIsMeasured) {
  EXPECT_EQ(utf8SequenceLength(sv("\xC3\xA9\xFF")), 2u);
  EXPECT_EQ(utf8SequenceLength(sv("ab")), 1u);
}

TEST(Utf8Test, EmptyAndStrayBytes) {
  EXPECT_EQ(utf8SequenceLength(std::string_view()), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\x80")), 0u); // lone continuation
  EXPECT_EQ(utf8SequenceLength(sv("\xBF")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xF5\x80\x80\x80")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xFF")), 0u);
}

TEST(Utf8Test, OverlongFormsAreRejected) {
  EXPECT_EQ(utf8SequenceLength(sv("\xC0\x80")), 0u); // overlong U+0000
  EXPECT_EQ(utf8SequenceLength(sv("\xC1\xBF")), 0u); // overlong U+007F
  EXPECT_EQ(utf8SequenceLength(sv("\xE0\x80\x80")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xE0\x9F\xBF")), 0u); // overlong U+07FF
  EXPECT_EQ(utf8SequenceLength(sv("\xF0\x80\x80\x80")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xF0\x8F\xBF\xBF")), 0u); // overlong U+FFFF
}

TEST(Utf8Test, SurrogatesAndBeyondU10FFFFAreRejected) {
  EXPECT_EQ(utf8SequenceLength(sv("\xED\xA0\x80")), 0u);     // U+D800
  EXPECT_EQ(utf8SequenceLength(sv("\xED\xBF\xBF")), 0u);     // U+DFFF
  EXPECT_EQ(utf8SequenceLength(sv("\xF4\x90\x80\x80")), 0u); // U+110000
}

// \x41 is 'A': a byte that cannot continue a sequence.
TEST(Utf8Test, TruncatedAndBadContinuations) {
  EXPECT_EQ(utf8SequenceLength(sv("\xC3")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xE2\x82")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xF0\x9F\x98")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xC3\x41")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xE2\x82\x41")), 0u);
  EXPECT_EQ(utf8SequenceLength(sv("\xF0\x9F\x98\xC0")), 0u);
}

TEST(Utf8Test, WholeStrings) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("plain ASCII"));
  EXPECT_TRUE(isValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_TRUE(isValidUtf8(std::string("a\0b", 3)));
  EXPECT_FALSE(isValidUtf8("caf\xC3"));          // truncated at the end
  EXPECT_FALSE(isValidUtf8("a\xC0\x80z"));       // overlong in the middle
  EXPECT_FALSE(isValidUtf8("x\xED\xA0\x80"));    // surrogate
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80")); // above U+10FFFF
  EXPECT_FALSE(isValidUtf8("ok\x80"));           // stray continuation
}

} // namespace
