"""Writes WebDataset tar sets with Python's tarfile, for tests/test_webdataset.cpp and
tests/test_dataset_packer.cpp: the tars as WebDataset users make them, and what a reader must
find in them.

    /usr/bin/python3 make_webdataset.py clean|damaged OUT_DIR
    /usr/bin/python3 make_webdataset.py pack OUT.tar MEMBER_NAME FILE [MEMBER_NAME FILE ...]
    /usr/bin/python3 make_webdataset.py cut TAR MEMBER_NAME SIZE

OUT_DIR/expected.txt lists the samples in dataset order (tars by name, then tar order), one
line each, tab-separated:
    ok <tar> <key> <label> <part>=<hex of its bytes> ...   (parts in tar order)
    refused <tar> <key> <words the error must contain>
"""
import io
import os
import random
import re
import sys
import tarfile

INT32 = (-(2**31), 2**31 - 1)


def label_of(parts):
    """WebDataset's label: the integer of the cls part, else 0 (record_parts.hpp)."""
    text = dict(parts).get("cls")
    if text is None:
        return 0
    match = re.fullmatch(rb"\s*([+-]?\d{1,10})\s*", text)
    value = int(match.group(1)) if match else 0
    return value if INT32[0] <= value <= INT32[1] else 0


class tar_set:
    """Tars in one directory, and the expected lines of their samples."""

    def __init__(self, out, seed):
        self.out = out
        self.rng = random.Random(seed)
        self.lines = []
        os.makedirs(out, exist_ok=True)

    def bytes(self, n):
        return self.rng.randbytes(n)

    def tar(self, name, fmt=tarfile.PAX_FORMAT):
        return tarfile.open(os.path.join(self.out, name), "w", format=fmt)

    @staticmethod
    def add(tar, name, data, kind=tarfile.REGTYPE):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        info.mtime = 1700000000
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
        return info

    def sample(self, tar, tar_name, key, parts, expect=True):
        """Adds the members key.<ext> of `parts` [(ext, bytes)]; expects the sample to read
        with them (the part names lowercased, as WebDataset names them)."""
        for ext, data in parts:
            self.add(tar, f"{key}.{ext}", data)
        if expect:
            self.ok(tar_name, key, [(ext.lower(), data) for ext, data in parts])

    def ok(self, tar_name, key, parts):
        fields = [f"{name}={data.hex()}" for name, data in parts]
        self.lines.append("\t".join(["ok", tar_name, key, str(label_of(parts))] + fields))

    def refused(self, tar_name, key, words):
        self.lines.append("\t".join(["refused", tar_name, key, words]))

    def finish(self):
        with open(os.path.join(self.out, "expected.txt"), "w") as f:
            f.write("".join(line + "\n" for line in self.lines))


def clean(out):
    s = tar_set(out, 1)
    # PAX (tarfile's default): a directory, long names as pax path=, empty and 512-byte parts,
    # several .npy parts, a member without an extension (no sample: skipped).
    with s.tar("shard-000.tar") as t:
        s.add(t, "train", b"", tarfile.DIRTYPE)
        s.add(t, "train/README", b"not a sample")
        for i in range(4):
            s.sample(t, "shard-000.tar", f"train/{i:06d}",
                     [("jpg", s.bytes(100 + 900 * i)), ("cls", str(i % 3).encode())])
        s.sample(t, "shard-000.tar", "train/000004",
                 [("x.npy", s.bytes(512)), ("y.npy", s.bytes(0)), ("cls", b"2\n")])
        long_key = "train/" + "long-directory-name-" * 8 + "000005"
        s.sample(t, "shard-000.tar", long_key, [("jpg", s.bytes(777)), ("cls", b" 1 ")])
    # GNU: long names as 'L' members, an upper-case extension, a sample without its cls part.
    with s.tar("shard-001.tar", tarfile.GNU_FORMAT) as t:
        s.sample(t, "shard-001.tar", "000010", [("jpg", s.bytes(3000)), ("cls", b"-7")])
        long_key = "gnu/" + "a-very-long-path-component/" * 6 + "000011"
        s.sample(t, "shard-001.tar", long_key, [("seg.png", s.bytes(1024)), ("cls", b"1")])
        s.sample(t, "shard-001.tar", "000012", [("JPG", s.bytes(64)), ("cls", b"not a number")])
        s.sample(t, "shard-001.tar", "000013", [("jpg", s.bytes(2048))])
    # ustar: names of 100..255 bytes split into prefix and name.
    with s.tar("shard-002.tar", tarfile.USTAR_FORMAT) as t:
        key = "d" * 90 + "/000020"
        s.sample(t, "shard-002.tar", key, [("jpg", s.bytes(5000)), ("cls", b"4")])
        s.sample(t, "shard-002.tar", "000021", [("txt", b"a caption"), ("json", b"{}")])
    with open(os.path.join(out, "notes.txt"), "w") as f:
        f.write("not a tar: ignored\n")
    s.finish()


def flip_header_byte(path, member):
    """Changes a byte of the mtime field of `member`'s header: its checksum fails."""
    with tarfile.open(path) as t:
        offset = t.getmember(member).offset
    with open(path, "r+b") as f:
        f.seek(offset + 136)
        byte = f.read(1)
        f.seek(offset + 136)
        f.write(bytes([byte[0] ^ 0x01]))


def truncate_at(path, member, into_data):
    """Cuts the tar `into_data` bytes into `member`'s data (negative: into its header)."""
    with tarfile.open(path) as t:
        info = t.getmember(member)
    cut = info.offset_data + into_data if into_data >= 0 else info.offset - into_data
    with open(path, "r+b") as f:
        f.truncate(cut)


def jpg_and_cls(s, i):
    return [("jpg", s.bytes(300 + 10 * i)), ("cls", str(i).encode())]


def damaged(out):
    s = tar_set(out, 2)
    # a.tar: the header of k3.cls fails its checksum: k3 is refused, k4 cannot be found.
    with s.tar("a.tar", tarfile.USTAR_FORMAT) as t:
        for i in range(5):
            s.sample(t, "a.tar", f"k{i}", jpg_and_cls(s, i), expect=i < 3)
    s.refused("a.tar", "k3", "checksum")
    flip_header_byte(os.path.join(out, "a.tar"), "k3.cls")
    # b.tar: cut inside the last member's data.
    with s.tar("b.tar") as t:
        for i in range(3):
            parts = list(reversed(jpg_and_cls(s, i)))  # cls, then jpg: the jpg is cut
            s.sample(t, "b.tar", f"m{i}", parts, expect=i < 2)
    s.refused("b.tar", "m2", "truncated")
    truncate_at(os.path.join(out, "b.tar"), "m2.jpg", 100)
    # c.tar: cut inside a member header.
    with s.tar("c.tar") as t:
        for i in range(2):
            s.sample(t, "c.tar", f"n{i}", jpg_and_cls(s, i), expect=i < 1)
    s.refused("c.tar", "n1", "inside the member header")
    truncate_at(os.path.join(out, "c.tar"), "n1.jpg", -300)
    # d.tar: a key again later (both refused), a part twice, a lone part, the key "shared"
    # again in e.tar; a directory and a symlink (skipped).
    with s.tar("d.tar") as t:
        s.sample(t, "d.tar", "d0", jpg_and_cls(s, 0), expect=False)
        s.refused("d.tar", "d0", "duplicate key")
        s.add(t, "sub", b"", tarfile.DIRTYPE)
        s.sample(t, "d.tar", "d1", jpg_and_cls(s, 1))
        info = tarfile.TarInfo("d1.link")
        info.type = tarfile.SYMTYPE
        info.linkname = "d1.jpg"
        t.addfile(info)
        s.sample(t, "d.tar", "d0", jpg_and_cls(s, 2), expect=False)
        s.refused("d.tar", "d0", "duplicate key")
        s.sample(t, "d.tar", "d2", [("jpg", s.bytes(10)), ("jpg", s.bytes(20))], expect=False)
        s.refused("d.tar", "d2", "twice")
        s.sample(t, "d.tar", "d3", [("jpg", s.bytes(30))])
        s.sample(t, "d.tar", "shared", jpg_and_cls(s, 3), expect=False)
        s.refused("d.tar", "shared", "duplicate key")
    with s.tar("e.tar") as t:
        s.sample(t, "e.tar", "shared", jpg_and_cls(s, 4), expect=False)
        s.refused("e.tar", "shared", "duplicate key")
        s.sample(t, "e.tar", "e0", jpg_and_cls(s, 5))
    s.finish()


def pack(out, members):
    """Writes the tar `out` of the files given as MEMBER_NAME FILE pairs, in that order (a set
    as users make theirs: tarfile's defaults)."""
    with tarfile.open(out, "w") as tar:
        for name, path in zip(members[0::2], members[1::2]):
            tar.add(path, arcname=name)


def cut(path, name, size):
    """Drops the end-of-archive blocks of the tar at `path` and appends the header of a member
    `name` of `size` bytes, with none of its data: a tar cut right after that header."""
    with tarfile.open(path) as tar:
        end = max((m.offset_data + -(-m.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
                   for m in tar.getmembers()), default=0)
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 1700000000
    with open(path, "r+b") as f:
        f.truncate(end)
        f.seek(end)
        f.write(info.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape"))


if __name__ == "__main__":
    if sys.argv[1] == "pack":
        pack(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "cut":
        cut(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        scenario, out = sys.argv[1], sys.argv[2]
        {"clean": clean, "damaged": damaged}[scenario](out)
