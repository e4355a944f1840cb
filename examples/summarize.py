"""Reads data.csv (handed in with --file) and writes summary.txt to $GOVEX_OUTPUT_DIR."""
import csv
import os

with open("data.csv", newline="") as f:
    rows = list(csv.DictReader(f))
units = sum(int(r["units"]) for r in rows)
with open(os.path.join(os.environ["GOVEX_OUTPUT_DIR"], "summary.txt"), "w") as out:
    out.write("%d rows, %d units\n" % (len(rows), units))
