"""Floor for scenario S3: the least a fresh interpreter does per call.

Run as `python3.11 -S floor_roundtrip.py FILE`, where FILE is a plain
pickle of {"blob": 50 MB bytes, "nums": 200k ints}: read it, unpickle,
evaluate the cell's expression, pickle again, write a temp file, fsync,
rename.  No dill, no worker process, no exchange files.
"""

import os
import pickle
import sys

path = sys.argv[1]
with open(path, "rb") as f:
    ns = pickle.loads(f.read())
print(len(ns["blob"]) + len(ns["nums"]))
data = pickle.dumps(ns, protocol=5)
tmp = path + ".tmp"
with open(tmp, "wb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, path)
