// CPU tests of the kernel-variant sets the training launchers accept (src/cuda/train/variants.hpp):
// every kept number passes, every number dropped in session 9 and unknown numbers throw
// InvalidArgument naming the argument ("variant"), the value and the valid set.
#include <gtest/gtest.h>

#include <string>

#include "cuda/train/variants.hpp"
#include "sparsenm/error.hpp"

namespace sparsenm::test {
namespace {

using train::detail::check_mask24_variant;
using train::detail::check_mvue24_variant;

template <class F>
void expect_refused(F check, int v, const std::string& set) {
  try {
    check(v);
    ADD_FAILURE() << "variant " << v << " was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "variant");
    const std::string what = e.what();
    EXPECT_NE(what.find("got " + std::to_string(v) + ")"), std::string::npos) << what;
    EXPECT_NE(what.find(set), std::string::npos) << what;
  }
}

TEST(TrainVariants, MaskKeptNumbersPassOthersThrow) {
  for (int v : {0, 1, 2, 3, 4, 8, 9}) EXPECT_NO_THROW(check_mask24_variant(v)) << v;
  const std::string set = "Mask24Args::variant must be one of {0, 1, 2, 3, 4, 8, 9}";
  for (int v : {5, 6, 7, 10}) expect_refused(check_mask24_variant, v, set);  // dropped in session 9
  for (int v : {-4, -1, 11, 12, 1000}) expect_refused(check_mask24_variant, v, set);  // never existed
}

TEST(TrainVariants, MvueKeptNumbersPassOthersThrow) {
  for (int v : {0, 1, 3, 6, 7, 10, 18, 23, 24}) EXPECT_NO_THROW(check_mvue24_variant(v)) << v;
  const std::string set = "Mvue24Args::variant must be one of {0, 1, 3, 6, 7, 10, 18, 23, 24}";
  for (int v : {2, 4, 5, 8, 9, 11, 12, 13, 14, 15, 16, 17, 19, 20, 21, 22})  // dropped in session 9
    expect_refused(check_mvue24_variant, v, set);
  for (int v : {-1, 25, 99}) expect_refused(check_mvue24_variant, v, set);  // never existed
}

TEST(TrainVariants, EveryNumberBelowThirtyIsEitherKeptOrRefused) {
  int kept_mask = 0, kept_mvue = 0;
  for (int v = -2; v < 30; ++v) {
    try {
      check_mask24_variant(v);
      ++kept_mask;
    } catch (const InvalidArgument&) {
    }
    try {
      check_mvue24_variant(v);
      ++kept_mvue;
    } catch (const InvalidArgument&) {
    }
  }
  EXPECT_EQ(kept_mask, 7);
  EXPECT_EQ(kept_mvue, 9);
}

}  // namespace
}  // namespace sparsenm::test
