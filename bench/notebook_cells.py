"""The notebook of bench/notebook.py: a small sales analysis in pandas,
numpy and matplotlib, cell by cell, each cell using what earlier ones made.

cells(work) returns the cells as source strings; work is a directory of the
system's own (the generated CSV and the figures go there; no cell prints a
path, so every system prints the same text).  The values the cells show are
short on purpose: IPython's pretty printer and repr() agree on them, so the
outputs of dolsot, a Jupyter kernel and a plain interpreter can be compared.
"""

_CELLS = [
    # 0: imports and the global RNG, whose state later cells depend on
    """import os
import numpy as np
import pandas as pd
np.random.seed(7)
WORK = {work!r}""",
    # 1: generate the raw data with the seeded global RNG
    """n = 600
regions = np.array(["north", "south", "east", "west"])
raw = pd.DataFrame({
    "date": pd.date_range("2024-01-01", periods=n, freq="6h"),
    "region": regions[np.random.randint(0, 4, n)],
    "product": np.random.choice(["p1", "p2", "p3", "p4", "p5"], n),
    "amount": np.random.randint(1, 40, n),
})
raw.shape""",
    # 2: write it as a CSV
    """csv_path = os.path.join(WORK, "sales.csv")
raw.to_csv(csv_path, index=False)
os.path.getsize(csv_path) > 0""",
    # 3: load it back
    """sales = pd.read_csv(csv_path, parse_dates=["date"])
sales.shape""",
    """sales.head()""",
    """print(sales.dtypes.to_string())""",
    """sales.describe().round(2)""",
    # 7: groupby
    """by_region = sales.groupby("region")["amount"].agg(["count", "mean", "sum"]).round(2)
by_region""",
    # 8: a second table, merged in
    """products = pd.DataFrame({
    "product": ["p1", "p2", "p3", "p4", "p5"],
    "category": ["tools", "tools", "food", "food", "toys"],
    "price": [2.5, 4.0, 1.25, 3.75, 9.99],
})
merged = sales.merge(products, on="product", how="left")
merged.shape""",
    """merged["revenue"] = merged.amount * merged.price
round(float(merged.revenue.sum()), 2)""",
    # 10: pivot
    """pivot = merged.pivot_table(index="region", columns="category",
                           values="revenue", aggfunc="sum").round(1)
pivot""",
    # 11: time series, resample and rolling
    """daily = merged.set_index("date").resample("D")["revenue"].sum()
len(daily)""",
    """roll = daily.rolling(7).mean()
roll.dropna().tail().round(2)""",
    # 13: numpy printing options, carried to later cells
    """np.set_printoptions(precision=3, suppress=True)
arr = merged[["amount", "price"]].to_numpy()[:4] / 3
print(arr)""",
    """print(np.linspace(0, 1, 4) / 7)""",
    """corr = merged[["amount", "price", "revenue"]].corr().round(3)
corr""",
    # 16: outliers by z-score
    """z = (merged.revenue - merged.revenue.mean()) / merged.revenue.std()
outliers = merged[z.abs() > 2]
len(outliers)""",
    """sample = merged.sample(5, random_state=1)
sample[["region", "product", "amount"]]""",
    # 18: the global RNG again: its state came from cells 0 and 1
    """noise = np.random.normal(size=4)
noise""",
    """rng = np.random.default_rng(42)
weights = rng.random(5)
weights.round(4)""",
    # 20: matplotlib, figures saved under WORK
    """import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
matplotlib.get_backend()""",
    """fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(daily.index, daily.values)
ax.plot(roll.index, roll.values)
ax.set_title("daily revenue")
fig_path = os.path.join(WORK, "daily.png")
fig.savefig(fig_path, dpi=60)
plt.close(fig)
del fig, ax
os.path.getsize(fig_path) > 0""",
    """monthly = merged.groupby([merged.date.dt.month, "region"]).revenue.sum().unstack().round(1)
monthly""",
    """ranks = monthly.rank(axis=1, ascending=False).astype(int)
ranks""",
    """top = merged.groupby("product").revenue.sum().nlargest(3).round(2)
top""",
    """crosstab = pd.crosstab(merged.region, merged.category)
crosstab""",
    """counts, edges = np.histogram(merged.amount, bins=5)
counts.tolist()""",
    """fig, ax = plt.subplots(figsize=(4, 3))
by_region["sum"].plot.bar(ax=ax)
bar_path = os.path.join(WORK, "regions.png")
fig.savefig(bar_path, dpi=60)
plt.close(fig)
del fig, ax
os.path.getsize(bar_path) > 0""",
    """q = merged.revenue.quantile([0.1, 0.5, 0.9]).round(2)
q""",
    """merged["bucket"] = pd.cut(merged.amount, bins=[0, 5, 10, 20, 100])
merged.bucket.value_counts().sort_index()""",
    """matrix = np.linalg.inv(np.array([[2.0, 1.0], [1.0, 3.0]]))
matrix""",
    """cum = merged.sort_values("date").groupby("region").revenue.cumsum()
round(float(cum.max()), 2)""",
    # 32: pandas options, carried to later cells
    """pd.set_option("display.precision", 2)
merged.groupby("category")[["amount", "revenue"]].mean()""",
    """weekly = merged.set_index("date").revenue.resample("W").agg(["sum", "max"])
weekly.head(3)""",
    """report = os.path.join(WORK, "report.csv")
pivot.to_csv(report)
pd.read_csv(report).shape""",
    """summary = {"rows": len(merged), "regions": int(merged.region.nunique()),
           "outliers": len(outliers), "top": top.index[0]}
summary""",
]


def cells(work):
    """The notebook's cells, the first naming work as WORK."""
    return [_CELLS[0].format(work=work)] + _CELLS[1:]
