"""Parses a Prometheus text exposition with Prometheus' own Python client (Debian's
python3-prometheus-client), as a scraper would: exit 1 with the parser's complaint when the
text is not valid; otherwise one line per sample: "type name label=value,... value"."""
import sys

from prometheus_client.parser import text_string_to_metric_families


def samples(text):
    """Every sample of `text` as (family type, name, sorted (label, value) pairs, value); the
    parser's ValueError when the text is not valid."""
    return [(family.type, s.name, tuple(sorted(s.labels.items())), s.value)
            for family in text_string_to_metric_families(text) for s in family.samples]


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for kind, name, labels, value in samples(text):
        print(kind, name, ",".join(f"{k}={v}" for k, v in labels), value)


if __name__ == "__main__":
    main(sys.argv[1])
