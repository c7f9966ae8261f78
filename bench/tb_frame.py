"""Benchmark toolbox (scenario S2): a module with heavy imports.

Loaded with `dolsot --toolbox tb_frame:tb`; the cell calls tb.frame(10).
"""

import numpy as np
import pandas as pd


def frame(n):
    """A DataFrame of n rows: an int column and a float column."""
    i = np.arange(n)
    return pd.DataFrame({"i": i, "sq": i.astype(float) ** 2})
