#include "calibrate/least_squares.h"

#include <Eigen/Core>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include <cmath>

#include "models/error.h"

namespace orrery {

namespace {

double to_natural(double x, const FitParameter& p) { return p.lower + (p.upper - p.lower) / (1.0 + std::exp(-x)); }

double to_internal(double v, const FitParameter& p) {
  const double u = (v - p.lower) / (p.upper - p.lower);
  return std::log(u / (1.0 - u));
}

struct Functor {
  using Scalar = double;
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  const std::vector<FitParameter>* params;
  int residual_count;
  const ResidualFunction* residuals;
  int* evaluations;

  int inputs() const { return static_cast<int>(params->size()); }
  int values() const { return residual_count; }

  std::vector<double> natural(const Eigen::VectorXd& x) const {
    std::vector<double> v(params->size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = to_natural(x[static_cast<Eigen::Index>(i)], (*params)[i]);
    return v;
  }

  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& f) const {
    ++*evaluations;
    const std::vector<double> r = (*residuals)(natural(x));
    for (int i = 0; i < residual_count; ++i) f[i] = r[static_cast<std::size_t>(i)];
    return 0;
  }
};

}  // namespace

FitResult fit_least_squares(const std::vector<FitParameter>& parameters, int residual_count,
                            const ResidualFunction& residuals, int max_evaluations) {
  require(residual_count > 0, "fit", "0 residuals", "needs at least one record to fit");
  Eigen::VectorXd x(static_cast<Eigen::Index>(parameters.size()));
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const FitParameter& p = parameters[i];
    require(p.value > p.lower && p.value < p.upper, "fit." + p.name, std::to_string(p.value),
            "must start strictly inside its bounds");
    x[static_cast<Eigen::Index>(i)] = to_internal(p.value, p);
  }
  FitResult result;
  Functor f{&parameters, residual_count, &residuals, &result.evaluations};
  Eigen::VectorXd start(residual_count);
  f(x, start);
  result.initial_cost = start.squaredNorm();
  Eigen::NumericalDiff<Functor> numeric(f, 1e-4);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Functor>> lm(numeric);
  lm.parameters.maxfev = max_evaluations;
  lm.parameters.xtol = 1e-6;
  lm.parameters.ftol = 1e-8;
  lm.minimize(x);
  Eigen::VectorXd end(residual_count);
  f(x, end);
  result.final_cost = end.squaredNorm();
  result.values = f.natural(x);
  return result;
}

}  // namespace orrery
