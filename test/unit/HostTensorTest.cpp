//===- HostTensorTest.cpp - host tensors of the reference backend ---------===//
#include "ls2c/Reference/HostTensor.h"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace ls2c::reference;

TEST(HostTensor, ZerosHoldTheRightStorage) {
  HostTensor f = HostTensor::zeros(ElementType::BF16, {2, 3});
  EXPECT_EQ(f.numElements(), 6);
  EXPECT_EQ(f.floats.size(), 6u);
  EXPECT_TRUE(f.ints.empty());
  HostTensor i = HostTensor::zeros(ElementType::I1, {4});
  EXPECT_EQ(i.ints.size(), 4u);
  EXPECT_TRUE(i.floats.empty());
  HostTensor empty = HostTensor::zeros(ElementType::F32, {3, 0, 5});
  EXPECT_EQ(empty.numElements(), 0);
  EXPECT_EQ(empty.rank(), 3);
}

TEST(HostTensor, ScalarsAreRankZeroWithOneElement) {
  HostTensor s = HostTensor::scalarInt(ElementType::I64, -7);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numElements(), 1);
  EXPECT_EQ(s.ints.at(0), -7);
  EXPECT_EQ(s.describe(), "i64[]");
  HostTensor f = HostTensor::scalarFloat(ElementType::F16, 0.5);
  EXPECT_EQ(f.floats.at(0), 0.5);
  EXPECT_EQ(f.describe(), "f16[]");
}

TEST(HostTensor, DescribeNamesTypeAndShape) {
  EXPECT_EQ(HostTensor::zeros(ElementType::F32, {4, 64}).describe(),
            "f32[4, 64]");
  EXPECT_EQ(HostTensor::zeros(ElementType::I32, {7}).describe(), "i32[7]");
}

TEST(HostTensor, RejectsBadShapesAndCounts) {
  EXPECT_THROW(HostTensor::zeros(ElementType::F32, {2, -1}),
               std::invalid_argument);
  EXPECT_THROW(HostTensor::fromFloats(ElementType::F32, {2, 2}, {1, 2, 3}),
               std::invalid_argument);
  EXPECT_THROW(HostTensor::fromInts(ElementType::I32, {3}, {1, 2}),
               std::invalid_argument);
  EXPECT_THROW(HostTensor::fromFloats(ElementType::I32, {1}, {1.0}),
               std::invalid_argument);
  EXPECT_THROW(HostTensor::fromInts(ElementType::F16, {1}, {1}),
               std::invalid_argument);
  EXPECT_THROW(HostTensor::zeros(ElementType::F32,
                                 {int64_t{1} << 40, int64_t{1} << 40}),
               std::invalid_argument);
}

TEST(HostTensor, TypeNames) {
  EXPECT_STREQ(toString(ElementType::F32), "f32");
  EXPECT_STREQ(toString(ElementType::F16), "f16");
  EXPECT_STREQ(toString(ElementType::BF16), "bf16");
  EXPECT_STREQ(toString(ElementType::I32), "i32");
  EXPECT_STREQ(toString(ElementType::I64), "i64");
  EXPECT_STREQ(toString(ElementType::I1), "i1");
  EXPECT_TRUE(isFloat(ElementType::BF16));
  EXPECT_FALSE(isFloat(ElementType::I1));
}
