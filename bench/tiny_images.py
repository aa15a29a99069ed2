"""An image folder of tiny JPEGs for bench/scaling_model.sh: COUNT images in ImageFolder layout
(class_XX/img_NNNNNN.jpg, class i % 10), a LARGE_FRACTION of them 64x64 and the others 32x32,
noise seeded by the index. Decoding them costs next to nothing; the modelled_work step
(bench/plugins/modelled_work.cpp) tells the two sizes apart and waits the modelled cost.

    /usr/bin/python3 bench/tiny_images.py COUNT LARGE_FRACTION OUT_DIR
"""
import os
import random
import sys

import numpy as np
from PIL import Image


def main(count, large_fraction, out):
    large = set(random.Random(1).sample(range(count), round(count * large_fraction)))
    for i in range(count):
        folder = os.path.join(out, "class_%02d" % (i % 10))
        os.makedirs(folder, exist_ok=True)
        side = 64 if i in large else 32
        pixels = np.random.RandomState(i).randint(0, 256, (side, side, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, "img_%06d.jpg" % i), quality=90)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]), sys.argv[3])
