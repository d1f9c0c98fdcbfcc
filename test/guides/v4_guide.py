"""A v4 client written the way the service's guides teach, step by step, with the standard
library only: run against the emulator by guides.test.ts to show that such a client completes,
saves every record and buys exactly one download.

The steps: authenticate with the account's API token as a bearer token (or, with --login, with
email and password through POST /auth); search with download true and no num_records (every
match); read id and status from that answer; poll GET /downloads/{id}, reading status and
num_downloaded, until the status is completed; fetch each entry of results as a plain URL.

Usage: v4_guide.py BASE_URL QUERY OUT_DIR (--token TOKEN | --login EMAIL PASSWORD)
           [--format CSV|JSON] [--interval SECONDS]
Prints one JSON line: the download id, the polls, the files saved and the records in them.
"""

import argparse
import csv
import json
import os
import sys
import time
import urllib.request


def call(method, url, token=None, body=None):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request) as response:
        return response.status, json.loads(response.read().decode("utf-8"))


def count_records(path, file_format):
    with open(path, newline="", encoding="utf-8") as handle:
        if file_format == "CSV":
            rows = list(csv.reader(handle))
            return max(0, len(rows) - 1)
        return sum(1 for line in handle if line.strip())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("query")
    parser.add_argument("out_dir")
    parser.add_argument("--token")
    parser.add_argument("--login", nargs=2, metavar=("EMAIL", "PASSWORD"))
    parser.add_argument("--format", default="CSV")
    parser.add_argument("--interval", type=float, default=5.0)
    args = parser.parse_args()

    token = args.token
    if args.login:
        status, answer = call(
            "POST", args.base_url + "/auth", body={"email": args.login[0], "password": args.login[1]}
        )
        token = answer["token"]

    # Start the download: without num_records the service takes every matching record.
    status, started = call(
        "POST",
        args.base_url + "/properties/search",
        token,
        {"query": args.query, "format": args.format, "download": True},
    )
    if status != 200:
        sys.exit("the download did not start: HTTP %d" % status)
    download_id = started["id"]
    download_status = started["status"]

    polls = 0
    progress = []
    answer = started
    while download_status != "completed":
        time.sleep(args.interval)
        status, answer = call("GET", args.base_url + "/downloads/" + str(download_id), token)
        download_status = answer["status"]
        progress.append(answer["num_downloaded"])
        polls += 1
        if polls > 1000:
            sys.exit("the download never completed")

    saved = []
    records = 0
    extension = "csv" if args.format == "CSV" else "txt"
    for number, url in enumerate(answer["results"]):
        path = os.path.join(args.out_dir, "%s_%d.%s" % (download_id, number, extension))
        urllib.request.urlretrieve(url, path)
        saved.append(path)
        records += count_records(path, args.format)

    print(
        json.dumps(
            {
                "download_id": download_id,
                "polls": polls,
                "num_downloaded": progress,
                "files": saved,
                "records": records,
            }
        )
    )


if __name__ == "__main__":
    main()
