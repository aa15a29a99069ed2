"""A small 3D U-Net for bench/gpu_train.py's UNet3D task: the MLPerf reference's architecture
(image_segmentation/pytorch/model/unet3d.py: an input block, strided-convolution downsampling,
transposed-convolution upsampling with the skip concatenated, every convolution 3x3x3 followed by
InstanceNorm3d(affine) and ReLU, a 1x1x1 output layer to 3 classes) with fewer and narrower
levels: filters (16, 32, 64, 128) in place of (32, 64, 128, 256, 320). Its input is a batch of
1 x 128^3 patches (the reference's PytTrain's), its output the 3 classes' logits per voxel.
"""
import torch
from torch import nn

FILTERS = (16, 32, 64, 128)
CLASSES = 3


def conv_block(in_channels, out_channels, stride=1):
    """The reference's conv_block_factory: 3x3x3 convolution, instance norm, ReLU."""
    return nn.Sequential(
        nn.Conv3d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False),
        nn.InstanceNorm3d(out_channels, affine=True), nn.ReLU(inplace=True))


class Up(nn.Module):
    """The reference's UpsampleBlock: transposed convolution, the skip concatenated, two
    conv blocks."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose3d(in_channels, out_channels, 2, stride=2)
        self.convs = nn.Sequential(conv_block(2 * out_channels, out_channels),
                                   conv_block(out_channels, out_channels))

    def forward(self, x, skip):
        return self.convs(torch.cat((self.up(x), skip), dim=1))


class SmallUNet3D(nn.Module):
    def __init__(self, filters=FILTERS, classes=CLASSES):
        super().__init__()
        self.inp = nn.Sequential(conv_block(1, filters[0]), conv_block(filters[0], filters[0]))
        self.downs = nn.ModuleList(
            nn.Sequential(conv_block(a, b, stride=2), conv_block(b, b))
            for a, b in zip(filters, filters[1:]))
        self.ups = nn.ModuleList(Up(b, a) for a, b in reversed(list(zip(filters, filters[1:]))))
        self.out = nn.Conv3d(filters[0], classes, 1)

    def forward(self, x):
        skips = [self.inp(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.out(x)
