"""What bench/gpu_train.py trains: a task is a user's Dataset, a model, its loss, and the
synthetic batch of the same shapes (the ceiling). gpu_train.py's feeds, timing and table are
the same for every task.

  ImageTask(model)   ImageNet classification: torchvision's ImageFolder with PIL decode and
                     the training recipe (RandomResizedCrop(224), RandomHorizontalFlip,
                     ToTensor, Normalize) over an image folder; a torchvision.models
                     constructor (resnet50, ...); cross-entropy over 1000 classes;
                     channels_last; SGD at lr 0.1 x batch / 256, momentum 0.9, wd 1e-4
  Unet3dTask()       3D segmentation: the MLPerf UNet3D reference's own PytTrain (random
                     balanced crop to 1 x 128^3, flips, cast, brightness, noise;
                     bench/unet3d_user_dataset.py) over an MLPerf-layout case directory;
                     bench/unet3d_model.py's small 3D U-Net; cross-entropy per voxel over its
                     3 classes (the reference trains with Dice + cross-entropy: the loss is not
                     what is measured); channels_last_3d; SGD at lr 0.01, momentum 0.9

Each task's `dataset(data)` is what a user would hand to torch's DataLoader; `on_device(x, y)`
takes a collated batch already on the device to the model's layout and the loss's targets.
"""
import tempfile

import torch
import torch.nn.functional as F

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


class ImageTask:
    unit = "images"
    layout = torch.channels_last

    def __init__(self, model):
        self.model_name = model

    def dataset(self, data):
        import torchvision
        import torchvision.transforms as T
        recipe = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                            T.Normalize(MEAN, STD)])
        return torchvision.datasets.ImageFolder(data, recipe)

    def synthetic(self, batch, device):
        return (torch.randn(batch, 3, 224, 224, device=device),
                torch.randint(0, 1000, (batch,), device=device))

    def on_device(self, x, y):
        return x.contiguous(memory_format=self.layout), y.long()

    def model(self, device):
        import torchvision
        return getattr(torchvision.models, self.model_name)(weights=None).to(device)

    def optimizer(self, model, batch):
        return torch.optim.SGD(model.parameters(), lr=0.1 * batch / 256, momentum=0.9,
                               weight_decay=1e-4)

    def loss(self, out, y):
        return F.cross_entropy(out, y)

    def close(self):
        pass


class Unet3dTask:
    unit = "samples"
    layout = torch.channels_last_3d

    def __init__(self):
        # Where the reference's module is written for the workers to import; removed by close().
        self.work = None

    def dataset(self, data):
        from unet3d_user_dataset import pyt_train
        self.work = tempfile.TemporaryDirectory(prefix="gpu-train-unet3d.")
        return pyt_train(data, self.work.name)

    def synthetic(self, batch, device):
        shape = (batch, 1, 128, 128, 128)
        return (torch.randn(shape, device=device),
                torch.randint(0, 3, shape, dtype=torch.uint8, device=device))

    def on_device(self, x, y):
        """x: float32 N x 1 x 128^3; y: uint8 N x 1 x 128^3, the class of each voxel."""
        return x.contiguous(memory_format=self.layout), y.squeeze(1).long()

    def model(self, device):
        from unet3d_model import SmallUNet3D
        return SmallUNet3D().to(device)

    def optimizer(self, model, batch):
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def loss(self, out, y):
        return F.cross_entropy(out, y)

    def close(self):
        if self.work is not None:
            self.work.cleanup()


def make_task(model):
    """The task of gpu_train.py's --model: unet3d, else a torchvision classifier."""
    return Unet3dTask() if model == "unet3d" else ImageTask(model)
