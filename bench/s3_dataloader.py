"""PyTorch's DataLoader reading a dataset's images from an S3 store one object per sample
(boto3), with the ImageNet training recipe of config/default.toml: the anchor of bench/s3.sh.

    /usr/bin/python3 bench/s3_dataloader.py ENDPOINT s3://BUCKET/PREFIX --images IMAGE_FOLDER
        [--epochs 1] [--workers 2] [--batch-size 64] [--step-ms 0] [--upload]

Set up as a careful user would: the object keys known in the main process (an index: here the
files of the image folder they were uploaded from, <prefix>/<class>/<image>.jpg, the class
their folder; s3rver's listing of a prefix of 2000 keys fails with InternalError); each worker makes its own boto3 client (boto3
clients are not fork-safe), reads an object with one get_object, and prepares it with
torchvision's ImageNet training recipe, the one config/default.toml is held to (PIL decode,
RandomResizedCrop(224) bilinear, RandomHorizontalFlip, ToTensor, Normalize), one thread per
worker. boto3's own retries ("standard" mode) and connection pool (10 connections a client). Credentials and region from the
environment (AWS_ACCESS_KEY_ID, ...). --upload puts every file of IMAGE_FOLDER under the prefix
instead. Prints one JSON line (dataloader_timing.loader_figures).
"""
import json
import os
import random
import sys

import io

import boto3
import botocore.config
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataloader_timing import loader_arguments, loader_figures, run_ranks, time_rank  # noqa: E402

RECIPE = transforms.Compose([
    transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def single_threaded(_worker_id=None):
    torch.set_num_threads(1)


def split_url(url):
    """s3://bucket/prefix -> (bucket, prefix without a trailing '/')."""
    if not url.startswith("s3://"):
        sys.exit(f"{url}: not an s3:// address")
    bucket, _, prefix = url[len("s3://"):].partition("/")
    return bucket, prefix.rstrip("/")


def client(endpoint):
    return boto3.client("s3", endpoint_url=endpoint,
                        config=botocore.config.Config(retries={"mode": "standard"}))


def upload(endpoint, bucket, prefix, folder):
    s3 = client(endpoint)
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            path = os.path.join(root, name)
            key = f"{prefix}/{os.path.relpath(path, folder)}"
            s3.upload_file(path, bucket, key)


def object_keys(prefix, folder):
    """[(key, label)] of the images of `folder` under `prefix`, in key order; a key's label is
    its class folder's index."""
    classes = sorted(d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d)))
    return [(f"{prefix}/{c}/{name}", label) for label, c in enumerate(classes)
            for name in sorted(os.listdir(os.path.join(folder, c)))]


class ObjectDataset(Dataset):
    """Sample i = object i: one get_object, then torchvision's recipe; (tensor, label, i)."""

    def __init__(self, endpoint, bucket, objects):
        self.endpoint, self.bucket, self.objects = endpoint, bucket, objects
        self.s3, self.pid = None, None

    def __len__(self):
        return len(self.objects)

    def __getitem__(self, i):
        if self.pid != os.getpid():  # a worker's own client, made in the worker
            self.s3, self.pid = client(self.endpoint), os.getpid()
        key, label = self.objects[i]
        body = self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return RECIPE(Image.open(io.BytesIO(body)).convert("RGB")), label, i


def main():
    parser = loader_arguments(__doc__.split("\n\n")[0], "image", 64, "the store's endpoint URL")
    parser.add_argument("url", help="s3://bucket/prefix of the images")
    parser.add_argument("--images", required=True,
                        help="the image folder (class sub-directories) whose files the objects are")
    parser.add_argument("--upload", action="store_true", help="put the images under the prefix")
    args = parser.parse_args()
    bucket, prefix = split_url(args.url)
    if args.upload:
        upload(args.dir, bucket, prefix, args.images)
        print(json.dumps({"uploaded": args.url}))
        return 0
    objects = object_keys(prefix, args.images)
    single_threaded()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    dataset = ObjectDataset(args.dir, bucket, objects)
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, worker_init_fn=single_threaded,
                        persistent_workers=args.workers > 0 and args.persistent_workers,
                        prefetch_factor=2 if args.workers > 0 else None)
    ranks = run_ranks(lambda rank, barrier: time_rank(loader, args.epochs, args.step_ms / 1e3,
                                                      rank, barrier), 1)
    out = {"loader": "torch.utils.data.DataLoader + boto3", "objects": len(objects),
           "workers": args.workers, "batch_size": args.batch_size, "epochs": args.epochs,
           "torch": torch.__version__, "boto3": boto3.__version__}
    out.update(loader_figures(ranks, args.step_ms))
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
