"""What one S3 file operation costs before it reaches the network: a new boto3 Session and its S3 client, as Beam's
S3 filesystem makes for every exists, open, list, rename and delete (apache_beam/io/aws/clients/s3/boto3_client.py),
with botocore's own per-Session loader (the baseline) and with rewardmill's shared loader
(transforms/io/s3_clients.py). No request is sent: the clients point at a closed local port.

Each measurement is the median over --repeats of the mean time to make --clients clients; the baseline is measured
first, in the same process, because the shared loader cannot be taken back out. The last line is
`ratio=` shared / baseline (lower is better).

    python bench/s3_clients.py [--clients 20] [--repeats 5]
"""

import argparse
import statistics
import time

import boto3

from rewardmill.transforms.io.s3_clients import share_loader


def client_seconds(n: int) -> float:
    """Mean seconds to make one Session and its S3 client, over `n`."""
    start = time.perf_counter()
    for _ in range(n):
        boto3.session.Session().client(
            "s3",
            region_name="us-east-1",
            endpoint_url="http://127.0.0.1:9",
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
    return (time.perf_counter() - start) / n


def median_of(repeats: int, n: int) -> float:
    client_seconds(1)  # the process's first client: imports and first reads, in neither figure
    return statistics.median(client_seconds(n) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    baseline = median_of(args.repeats, args.clients)
    print(f"baseline: {baseline * 1000:.1f} ms per Session and client (botocore's loader per Session)")
    share_loader()
    shared = median_of(args.repeats, args.clients)
    print(f"shared:   {shared * 1000:.1f} ms per Session and client (one loader per process)")
    print(f"ratio={shared / baseline:.3f}")


if __name__ == "__main__":
    main()
