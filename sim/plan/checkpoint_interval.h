#pragma once
// The checkpoint interval that minimises the expected time lost to failures (issue 23's goodput model), for
// failures that arrive as a Poisson process of mean time between failures M and a checkpoint that takes delta to
// save (the time the job stops for it).

namespace orrery {

/// Young's first-order optimum (J. W. Young, "A first order approximation to the optimum checkpoint interval",
/// CACM 17(9), 1974): sqrt(2 delta M), seconds of compute between checkpoints.
/// Errors: Error::invalid (models/error.h) naming the input unless delta >= 0 and M > 0, both finite.
double young_checkpoint_interval_s(double checkpoint_s, double mtbf_s);

/// Daly's higher-order optimum (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
/// dumps", Future Generation Computer Systems 22(3), 2006, eq. (37)): for delta < 2 M,
/// sqrt(2 delta M) (1 + sqrt(delta / (2 M)) / 3 + (delta / (2 M)) / 9) - delta, and M beyond (a checkpoint that
/// costs more than two failure intervals is not worth taking more often than failures come). Daly's Figures 3-5:
/// M 24 h, 6 h and 15 min with delta 5 min give 117, 57 and 9.1 minutes.
/// Errors: as young_checkpoint_interval_s.
double daly_checkpoint_interval_s(double checkpoint_s, double mtbf_s);

}  // namespace orrery
