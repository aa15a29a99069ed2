"""Parses a Prometheus text exposition with Prometheus' own Python client (Debian's
python3-prometheus-client), as a scraper would: exit 1 with the parser's complaint when the
text is not valid; otherwise one line per sample: "type name label=value,... value"."""
import sys

from prometheus_client.parser import text_string_to_metric_families


def main(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            print(family.type, sample.name, labels, sample.value)


if __name__ == "__main__":
    main(sys.argv[1])
