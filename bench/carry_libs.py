"""A toolbox for bench/carry_time.py: loads numpy, pandas and matplotlib, so
that the warm server's zygote has them imported before any call."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot  # noqa: E402,F401
import numpy  # noqa: E402,F401
import pandas  # noqa: E402,F401
