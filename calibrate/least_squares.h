#pragma once
// Bounded nonlinear least squares for the global fits of cost-model parameters: Eigen's Levenberg-Marquardt
// (unsupported/Eigen/NonLinearOptimization, MINPACK's lmdif) with a numerical Jacobian. Each parameter stays in
// [lower, upper] through a logistic change of variables.

#include <functional>
#include <string>
#include <vector>

namespace orrery {

struct FitParameter {
  std::string name;
  double value = 0;  // starting value; must lie strictly inside (lower, upper)
  double lower = 0;
  double upper = 1;
};

struct FitResult {
  std::vector<double> values;  // fitted, in the order given
  double initial_cost = 0;     // sum of squared residuals at the start
  double final_cost = 0;
  int evaluations = 0;         // residual evaluations
};

/// residuals(values) returns `residual_count` residuals for parameter values in their natural units.
using ResidualFunction = std::function<std::vector<double>(const std::vector<double>&)>;

/// Errors: Error::invalid when a start value lies outside its bounds or no residual is given.
FitResult fit_least_squares(const std::vector<FitParameter>& parameters, int residual_count,
                            const ResidualFunction& residuals, int max_evaluations = 400);

}  // namespace orrery
