"""Reading back the CSV files ``attnviz export`` writes, for the tests that compare them."""

from __future__ import annotations

import csv

import numpy as np


def read_csv(path):
    """(metadata lines, [query, key] matrix, query labels, key labels) of a head-detail CSV."""
    lines = path.read_text(encoding="utf-8").splitlines()
    meta = [line[2:] for line in lines if line.startswith("# ")]
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    nq = 1 + max(int(r["query_index"]) for r in rows)
    nk = 1 + max(int(r["key_index"]) for r in rows)
    m = np.zeros((nq, nk))
    queries, keys = [""] * nq, [""] * nk
    for r in rows:
        q, k = int(r["query_index"]), int(r["key_index"])
        m[q, k] = float(r["weight"])
        queries[q], keys[k] = r["query"], r["key"]
    return meta, m, queries, keys
