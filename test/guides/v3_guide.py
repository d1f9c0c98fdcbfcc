"""A v3 client written the way the service's guides teach, step by step, with the standard
library only: run against the emulator by guides.test.ts to show that such a client completes,
saves every record and buys exactly one download.

The steps: HTTP basic authentication with the API token as user name and an empty password;
GET /data/properties with download=true (and no records: every match); follow the 303 to the
download request and poll the URL it lands on until its status is COMPLETED; list the result
files at /results/{id}; fetch each url.

Usage: v3_guide.py BASE_URL TOKEN QUERY OUT_DIR [--format CSV|JSON] [--interval SECONDS]
Prints one JSON line: the request id, where the start landed, the polls, the files saved and
the records in them.
"""

import argparse
import base64
import csv
import json
import os
import sys
import time
import urllib.parse
import urllib.request


def get(url, token):
    credentials = base64.b64encode((token + ":").encode("utf-8")).decode("ascii")
    request = urllib.request.Request(url, headers={"Authorization": "Basic " + credentials})
    # urllib follows a 303 with a GET to its Location, keeping these headers.
    with urllib.request.urlopen(request) as response:
        return response.geturl(), json.loads(response.read().decode("utf-8"))


def count_records(path, file_format):
    with open(path, newline="", encoding="utf-8") as handle:
        if file_format == "CSV":
            rows = list(csv.reader(handle))
            return max(0, len(rows) - 1)
        return sum(1 for line in handle if line.strip())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base_url")
    parser.add_argument("token")
    parser.add_argument("query")
    parser.add_argument("out_dir")
    parser.add_argument("--format", default="CSV")
    parser.add_argument("--interval", type=float, default=5.0)
    args = parser.parse_args()

    params = urllib.parse.urlencode({"q": args.query, "format": args.format, "download": "true"})
    landed, requests = get(args.base_url + "/data/properties?" + params, args.token)
    request = requests[0]

    # Poll the page the start landed on: the download request, not the start URL.
    polls = 0
    while request["status"] != "COMPLETED":
        time.sleep(args.interval)
        _, requests = get(landed, args.token)
        request = requests[0]
        polls += 1
        if polls > 1000:
            sys.exit("the download never completed")

    _, results = get(args.base_url + "/results/" + str(request["id"]), args.token)
    saved = []
    records = 0
    extension = "csv" if args.format == "CSV" else "txt"
    for number, result in enumerate(results):
        path = os.path.join(args.out_dir, "%s_%d.%s" % (request["id"], number, extension))
        urllib.request.urlretrieve(result["url"], path)
        saved.append(path)
        records += count_records(path, args.format)

    print(
        json.dumps(
            {
                "request_id": request["id"],
                "landed": landed,
                "polls": polls,
                "num_requested": request["numRequested"],
                "files": saved,
                "records": records,
            }
        )
    )


if __name__ == "__main__":
    main()
