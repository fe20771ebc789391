"""10,000 results in one database (issue 26): one measured result, copied with new uids and
50 batch sizes, imported.

    accelbench run seed-cnn --devices cpu --blocks 3 --no-verdict --db base.db
    accelbench results export --out one.json --db base.db
    python3 benchmarks/ten_thousand.py one.json big.json
    accelbench results import big.json --db big.db
"""

from __future__ import annotations

import copy
import json
import sys
import uuid


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as f:
        payload = json.load(f)
    (one,) = payload["results"]
    many = []
    for i in range(10_000):
        result = copy.deepcopy(one)
        result["uid"] = uuid.uuid4().hex
        result["spec"]["batch_size"] = 64 + i % 50
        many.append(result)
    payload["results"] = many
    with open(target, "w") as f:
        json.dump(payload, f)


if __name__ == "__main__":
    main()
