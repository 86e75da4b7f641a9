// Copyright 2026 The mjdiff Authors. Licensed under the Apache License, Version 2.0.
//
// The shared dense linear algebra (optim/linalg.c, <mjdiff/linalg.h>) against plain definitions.
//
//   gemm       every transpose combination, on both paths (and mjdiff_gemmPlain, loops alone) (loops below 16 in a dimension, BLIS
//              above), beta 0 (C's NaN ignored), 1 and 0.5, against the triple sum; within 1e-12
//   Cholesky   a random SPD matrix: L L' = A within 1e-12, L lower with a positive diagonal;
//              an indefinite matrix fails at the right pivot (1 + its index); tol: a matrix whose
//              pivot falls to about 1e-15 of its diagonal passes with tol 0, fails with tol 1e-14
//   solve      L Z = B and L L' X = B for several columns at once: within 1e-12, 1e-10

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

extern "C" {
#include <mjdiff/linalg.h>
}

namespace {

std::vector<double> randomMatrix(int r, int c, std::mt19937& g) {
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> a((size_t)r * c);
  for (double& x : a) x = u(g);
  return a;
}

// A = M M' + n I: symmetric positive definite
std::vector<double> randomSPD(int n, std::mt19937& g) {
  std::vector<double> m = randomMatrix(n, n, g), a((size_t)n * n, 0);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      for (int k = 0; k < n; k++) a[(size_t)i * n + j] += m[(size_t)i * n + k] * m[(size_t)j * n + k];
    }
    a[(size_t)i * n + i] += n;
  }
  return a;
}

// mjdiff_gemmPlain on every small shape (its 4 x 4 blocks and the rows and columns past them, k
// below and above 4), every transpose, alpha and beta, against the triple sum; nothing written
// past C (review of the blocked version: two shapes had reached the blocks)
TEST(Linalg, GemmPlainEverySmallShape) {
  std::mt19937 g(11);
  int cases = 0;
  for (int m = 1; m <= 9; m++) {
    for (int n = 1; n <= 9; n++) {
      for (int k = 1; k <= 9; k++) {
        std::vector<double> a = randomMatrix(m, k, g), b = randomMatrix(k, n, g);
        std::vector<double> c0 = randomMatrix(m, n, g);
        for (int ta = 0; ta < 2; ta++) {
          for (int tb = 0; tb < 2; tb++) {
            std::vector<double> as = a, bs = b;
            if (ta) {
              for (int i = 0; i < m; i++) {
                for (int l = 0; l < k; l++) as[(size_t)l * m + i] = a[(size_t)i * k + l];
              }
            }
            if (tb) {
              for (int l = 0; l < k; l++) {
                for (int j = 0; j < n; j++) bs[(size_t)j * k + l] = b[(size_t)l * n + j];
              }
            }
            for (double alpha : {2.0, -1.0}) {
              for (double beta : {0.0, 1.0, -3.0}) {
                std::vector<double> c = c0;
                c.push_back(12345.0);  // sentinel past C
                mjdiff_gemmPlain(ta, tb, m, n, k, alpha, as.data(), bs.data(), beta, c.data());
                ASSERT_EQ(c.back(), 12345.0);
                for (int i = 0; i < m; i++) {
                  for (int j = 0; j < n; j++) {
                    double want = beta * c0[(size_t)i * n + j];
                    for (int l = 0; l < k; l++) {
                      want += alpha * a[(size_t)i * k + l] * b[(size_t)l * n + j];
                    }
                    ASSERT_NEAR(c[(size_t)i * n + j], want, 1e-12 * (1 + std::fabs(want)))
                        << m << "x" << n << "x" << k << " ta " << ta << " tb " << tb;
                  }
                }
                cases++;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 9 * 9 * 9 * 4 * 6);
}

TEST(Linalg, GemmMatchesTheTripleSum) {
  std::mt19937 g(7);
  struct Size {
    int m, n, k;
  } sizes[] = {{3, 4, 5}, {1, 1, 1}, {20, 18, 17}, {54, 75, 54}, {16, 16, 2}};
  for (const Size& s : sizes) {
    for (int ta = 0; ta < 2; ta++) {
      for (int tb = 0; tb < 2; tb++) {
        for (double beta : {0.0, 1.0, 0.5}) {
          SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k << " ta " << ta
                                          << " tb " << tb << " beta " << beta);
          std::vector<double> a = randomMatrix(s.m, s.k, g), b = randomMatrix(s.k, s.n, g);
          std::vector<double> c = randomMatrix(s.m, s.n, g), c0 = c;
          if (beta == 0) c[0] = NAN;  // ignored
          // stored transposed where asked: A as k x m, B as n x k
          std::vector<double> as = a, bs = b;
          if (ta) {
            for (int i = 0; i < s.m; i++) {
              for (int l = 0; l < s.k; l++) as[(size_t)l * s.m + i] = a[(size_t)i * s.k + l];
            }
          }
          if (tb) {
            for (int l = 0; l < s.k; l++) {
              for (int j = 0; j < s.n; j++) bs[(size_t)j * s.k + l] = b[(size_t)l * s.n + j];
            }
          }
          std::vector<double> cp = c;
          mjdiff_gemm(ta, tb, s.m, s.n, s.k, 2.0, as.data(), bs.data(), beta, c.data());
          mjdiff_gemmPlain(ta, tb, s.m, s.n, s.k, 2.0, as.data(), bs.data(), beta, cp.data());
          for (size_t e = 0; e < c.size(); e++) ASSERT_NEAR(cp[e], c[e], 1e-12 * (1 + std::fabs(c[e])));
          for (int i = 0; i < s.m; i++) {
            for (int j = 0; j < s.n; j++) {
              double want = beta * c0[(size_t)i * s.n + j];
              for (int l = 0; l < s.k; l++) {
                want += 2.0 * a[(size_t)i * s.k + l] * b[(size_t)l * s.n + j];
              }
              ASSERT_NEAR(c[(size_t)i * s.n + j], want, 1e-12 * (1 + std::fabs(want)))
                  << i << ", " << j;
            }
          }
        }
      }
    }
  }
}

TEST(Linalg, CholeskyFactorsAndSolves) {
  std::mt19937 g(3);
  for (int n : {1, 5, 30}) {
    SCOPED_TRACE(n);
    std::vector<double> a = randomSPD(n, g), l = a;
    ASSERT_EQ(mjdiff_cholesky(l.data(), n, 0), 0);
    for (int i = 0; i < n; i++) {
      EXPECT_GT(l[(size_t)i * n + i], 0);
      for (int j = i + 1; j < n; j++) EXPECT_EQ(l[(size_t)i * n + j], 0) << i << ", " << j;
      for (int j = 0; j <= i; j++) {
        double s = 0;
        for (int k = 0; k <= j; k++) s += l[(size_t)i * n + k] * l[(size_t)j * n + k];
        EXPECT_NEAR(s, a[(size_t)i * n + j], 1e-12 * n) << i << ", " << j;
      }
    }
    const int ncol = 3;
    std::vector<double> b = randomMatrix(n, ncol, g), x = b, z = b;
    mjdiff_lowerSolve(l.data(), n, z.data(), ncol);
    for (int i = 0; i < n; i++) {
      for (int c = 0; c < ncol; c++) {
        double s = 0;
        for (int k = 0; k <= i; k++) s += l[(size_t)i * n + k] * z[(size_t)k * ncol + c];
        EXPECT_NEAR(s, b[(size_t)i * ncol + c], 1e-12) << "L Z = B at " << i << ", " << c;
      }
    }
    mjdiff_cholSolve(l.data(), n, x.data(), ncol);
    for (int i = 0; i < n; i++) {
      for (int c = 0; c < ncol; c++) {
        double s = 0;
        for (int k = 0; k < n; k++) s += a[(size_t)i * n + k] * x[(size_t)k * ncol + c];
        EXPECT_NEAR(s, b[(size_t)i * ncol + c], 1e-10) << i << ", " << c;
      }
    }
  }
}

TEST(Linalg, CholeskyNamesTheFailingPivot) {
  // [4 2 0; 2 1 0; 0 0 1]: the second pivot 1 - 2^2 / 4 = 0 is not positive
  double a[9] = {4, 2, 0, 2, 1, 0, 0, 0, 1};
  EXPECT_EQ(mjdiff_cholesky(a, 3, 0), 2);
  // indefinite in the third pivot
  double b[9] = {1, 0, 0, 0, 1, 0, 0, 0, -1};
  EXPECT_EQ(mjdiff_cholesky(b, 3, 0), 3);
  // not finite
  double c[4] = {NAN, 0, 0, 1};
  EXPECT_EQ(mjdiff_cholesky(c, 2, 0), 1);
  // the second pivot about 1e-15 of its diagonal: positive (tol 0 passes), below tol 1e-14
  double d[4] = {1, 1, 1, 1 + 1e-15};
  double d2[4] = {1, 1, 1, 1 + 1e-15};
  EXPECT_EQ(mjdiff_cholesky(d, 2, 0), 0);
  EXPECT_EQ(mjdiff_cholesky(d2, 2, 1e-14), 2);
}

}  // namespace
