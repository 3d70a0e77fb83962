// Prunes a small random matrix to 2:8, multiplies through the plan API, checks the result.
#include <cmath>
#include <cstdio>

#include "sparsenm/sparsenm.hpp"

int main() {
  using namespace sparsenm;
  DenseMatrix w = random_matrix(DType::f32, 64, 100, 1);
  CondensedMatrix c = prune(w.view(), Pattern::parse("2:8"));
  DenseMatrix x = random_matrix(DType::f32, 3, 100, 2);
  DenseMatrix y(DType::f32, 3, 64);
  matmul(x.view(), c, y.mutable_view(), Backend::cpu);
  auto ref = reference_matmul_f64(x.view(), c);
  double err = relative_error(y.view(), ref);
  std::printf("consumer: sparsenm %s, 2:8 product rel. error %.2e\n", SPARSENM_VERSION_STRING, err);
  return err < 1e-5 ? 0 : 1;
}
