// Debian's data-science stack, unmodified and with no extra flag: numpy,
// pandas, scipy, scikit-learn and matplotlib (Agg) in a typical analysis (CSV
// in, model fit, plot out) with a ProcessPoolExecutor, under sentry and
// natively: the same printed numbers, and a PNG that decodes to the same
// image. scripts/test.sh installs the packages.
#include <gtest/gtest.h>

#include <string>

#include "tests/e2e/e2e_util.h"

namespace sentry::testing {
namespace {

constexpr const char* kAnalysis = R"py(import hashlib, os, sys
from concurrent.futures import ProcessPoolExecutor
import numpy as np
import pandas as pd
import scipy.stats
from sklearn.linear_model import LinearRegression
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.image

base = sys.argv[1]

def summarize(group):
    name, values = group
    return name, round(float(np.mean(values)), 6), len(values)

if __name__ == "__main__":
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 10, 400)
    df = pd.DataFrame({"x": x, "y": 3.0 * x + 1.0 + rng.normal(0, 0.5, x.size),
                       "g": np.where(x > 5, "high", "low")})
    csv = os.path.join(base, "data.csv")
    df.to_csv(csv, index=False)

    data = pd.read_csv(csv)
    model = LinearRegression().fit(data[["x"]], data["y"])
    fit = scipy.stats.linregress(data["x"], data["y"])
    print(f"rows={len(data)}")
    print(f"coef={model.coef_[0]:.6f} intercept={model.intercept_:.6f}")
    print(f"slope={fit.slope:.6f} r={fit.rvalue:.6f}")
    print(f"describe={data['y'].describe().round(4).to_dict()}")
    with ProcessPoolExecutor(max_workers=2) as pool:
        groups = [(name, g["y"].to_numpy()) for name, g in data.groupby("g")]
        print(f"groups={sorted(pool.map(summarize, groups))}")

    fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
    ax.scatter(data["x"], data["y"], s=2)
    xs = np.linspace(0, 10, 2)
    ax.plot(xs, model.predict(pd.DataFrame({"x": xs})), color="red")
    png = os.path.join(base, "fit.png")
    fig.savefig(png)
    image = matplotlib.image.imread(png)
    print(f"png={image.shape} {os.path.getsize(png) > 1000}")
    # The decoded pixels themselves (compared with the native run's), and
    # that they hold the plot: the fit's red line is there.
    print(f"pixels={hashlib.sha256(image.tobytes()).hexdigest()}")
    red = (image[..., 0] > 0.9) & (image[..., 1] < 0.2) & (image[..., 2] < 0.2)
    print(f"red line={int(red.sum()) > 50}")
)py";

TEST(DataStack, AnalysisRunsAsNatively) {
  ProcessResult native = NativeScript(kAnalysis);
  ASSERT_EQ(native.exit_code, 0) << Describe(native);
  ProcessResult r = SandboxScript(kAnalysis);
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(r.out, native.out);
  EXPECT_NE(r.out.find("rows=400\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("png=(150, 200, 4) True\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("groups=[('high', "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pixels="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("red line=True\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sentry::testing
